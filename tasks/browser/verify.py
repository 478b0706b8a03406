"""Running verification checks: each in its own browser context, steps as tool calls, then expectations.

A check opens its URL, runs its steps (browser tools, in-process on the tool loop), evaluates every
expectation, and keeps a final screenshot as evidence. Visual expectations compare against a
baseline PNG with Pillow and write a diff image on failure. Many checks run at once, each in a
fresh context of the one shared browser, bounded by a semaphore.
"""

from __future__ import annotations

import asyncio
import base64
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page
from playwright.async_api import TimeoutError as PlaywrightTimeoutError
from pydantic import BaseModel, Field, ValidationError

from tasks.base import Permission, ToolContext, TransientToolError, deny_all, run_coroutine
from tasks.browser.actions import ActionError
from tasks.browser.catalog import browser_tool
from tasks.browser.common import write_atomic
from tasks.browser.expectations import Attempt, compare_images, safe_name
from tasks.browser.guard import ResourcePolicy
from tasks.browser.session import MANAGER, Session
from udm.config import Settings
from udm.verify import Check, CheckProblem, resolve_url, substitute

__all__ = [
    "CheckResult",
    "Isolation",
    "Status",
    "compare_images",
    "new_run_id",
    "problem_result",
    "reset_session",
    "run_check",
    "run_checks",
    "run_checks_sync",
]

Status = Literal["PASS", "FAIL", "WARNING", "SKIPPED"]
Isolation = Literal["run", "check"]


class CheckResult(BaseModel):
    """The outcome of one check."""

    id: str = Field(description="Check ID.")
    status: Status = Field(description="PASS, FAIL, WARNING or SKIPPED.")
    duration_ms: float = Field(default=0.0, description="Wall time of the check, all attempts.")
    reason: str | None = Field(default=None, description="Why it failed, warned or was skipped.")
    screenshot: str | None = Field(default=None, description="Final screenshot of the check's page.")
    diff_image: str | None = Field(
        default=None, description="Visual diff against the baseline, when it differed."
    )
    udm_refs: list[str] = Field(default_factory=list, description="UDM IDs/sections the check tests.")
    section: str | None = Field(default=None, description="file#anchor of the UDM section (inline checks).")
    source: str | None = Field(default=None, description="Where the check is defined.")
    url: str | None = Field(default=None, description="The URL opened.")
    attempts: int = Field(default=0, description="How many attempts ran.")
    failures: list[str] = Field(default_factory=list, description="Every failed expectation or step.")
    warnings: list[str] = Field(default_factory=list, description="Every warning.")
    started_at: str | None = Field(default=None, description="When the check started (UTC, ISO 8601).")


def new_run_id() -> str:
    """A sortable run ID: UTC time plus a short random suffix."""
    import secrets

    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)


def problem_result(problem: CheckProblem) -> CheckResult:
    """A check that could not be read, as a FAIL row."""
    ident = "INVALID:" + problem.source
    return CheckResult(
        id=ident,
        status="FAIL",
        reason=f"invalid check: {problem.message}",
        source=problem.source,
        udm_refs=list(problem.udm_refs),
    )


# What a check loads without unless it says otherwise (its claims are about text and structure).
DEFAULT_BLOCK = ("font", "media")


async def _call_step(
    n: int,
    step: Any,
    sid: str,
    ctx: ToolContext,
    timeout_ms: float | None,
    variables: dict[str, str],
    allow_destructive: bool,
) -> str | None:
    """Run one step; the failure text, or None when it succeeded."""
    label = f"step[{n}] {step.tool}"
    tool = browser_tool(step.tool)
    if tool is None:
        return f"{label}: unknown browser tool '{step.tool}'"
    raw = substitute(dict(step.input), variables)
    fields = tool.Input.model_fields
    if "session_id" in fields:
        raw["session_id"] = sid
    if timeout_ms is not None and "timeout_ms" in fields:
        raw.setdefault("timeout_ms", int(timeout_ms))
    try:
        data = tool.Input.model_validate(raw)
    except ValidationError as exc:
        where = "; ".join(
            f"field '{'.'.join(str(x) for x in e['loc']) or '(input)'}': {e['msg']}" for e in exc.errors()
        )
        return f"{label}: invalid input: {where}"
    permission = tool.permission_for(data)
    if permission in (Permission.DESTRUCTIVE, Permission.CRITICAL) and not allow_destructive:
        return (
            f"{label}: the tool is {permission.value}; verification runs only safe and moderate steps "
            "unless destructive steps are allowed (--allow-destructive)"
        )
    try:
        out = await tool.execute(data, ctx)
    except TransientToolError as exc:
        out = exc.result
    ok, error = tool.outcome(out)
    return None if ok else f"{label}: {error}"


async def run_check(
    check: Check,
    settings: Settings,
    *,
    run_id: str,
    base_url: str | None = None,
    variables: dict[str, str] | None = None,
    allow_destructive: bool = False,
    worker_session: str | None = None,
    lean: bool = True,
) -> CheckResult:
    """Run one check (with its retries); never raises for a failing page.

    With `worker_session` the first attempt runs in that (reused) context, reset afterwards;
    otherwise, and for retries, in a fresh context that is closed afterwards. `lean=False` restores
    the first round's cost per check (everything loaded, a screenshot of every check) for the
    benchmark's "before" figure.
    """
    started, stamp = time.perf_counter(), datetime.now(UTC).isoformat(timespec="seconds")
    values = {"BASE_URL": (base_url or "").rstrip("/"), **(variables or {})}
    if not base_url:
        values.pop("BASE_URL")
    result = CheckResult(
        id=check.id,
        status="PASS",
        udm_refs=check.udm_refs,
        section=check.section,
        source=check.source,
        started_at=stamp,
    )
    if check.skip:
        return _done(result, started, "SKIPPED", check.skip if isinstance(check.skip, str) else "marked skip")
    url: str | None = None
    if check.url:
        url, why = resolve_url(substitute(check.url, values), base_url)
        if url is None:
            return _done(result, started, "SKIPPED", why)
        result.url = url
    evidence = settings.state_path / "verify" / run_id
    evidence.mkdir(parents=True, exist_ok=True)
    timeout_s = min(check.timeout or settings.browser_timeout_s, settings.browser_max_timeout_s)
    run = _CheckRun(check, settings, values, url, timeout_s, evidence, allow_destructive, lean, result)
    attempt = None
    for n in range(check.retries + 1):
        result.attempts = n + 1
        # A worker's context is reused for a first attempt; a retry or a custom viewport gets a fresh one.
        reuse = worker_session is not None and n == 0 and check.viewport is None
        sid = worker_session if reuse and worker_session else safe_name(f"verify-{run_id}-{check.id}-{n}")
        try:
            session = await MANAGER.session(sid, settings, viewport=check.viewport, route_websockets=False)
        except ActionError as exc:
            return _done(result, started, "FAIL", exc.message)
        assert session is not None
        attempt = await run.attempt(session, sid, reuse)
        if not attempt.failures:
            break
    assert attempt is not None
    return _verdict(result, started, attempt)


def _verdict(result: CheckResult, started: float, attempt: Attempt) -> CheckResult:
    """The result of the last attempt: FAIL on any failure, WARNING on a warning, else PASS."""
    result.failures, result.warnings, result.diff_image = (
        attempt.failures,
        attempt.warnings,
        attempt.diff_image,
    )
    if attempt.failures:
        extra = f" (+{len(attempt.failures) - 1} more)" if len(attempt.failures) > 1 else ""
        return _done(result, started, "FAIL", attempt.failures[0] + extra)
    if attempt.warnings:
        return _done(result, started, "WARNING", "; ".join(attempt.warnings))
    return _done(result, started, "PASS")


def _done(result: CheckResult, started: float, status: Status, reason: str | None = None) -> CheckResult:
    """The check's result with its final status, reason and duration."""
    result.status, result.reason = status, reason
    result.duration_ms = round((time.perf_counter() - started) * 1000, 1)
    return result


@dataclass
class _CheckRun:
    """What every attempt of one check shares: the check, its resolved URL, variables and limits."""

    check: Check
    settings: Settings
    values: dict[str, str]
    url: str | None
    timeout_s: float
    evidence: Path
    allow_destructive: bool
    lean: bool
    result: CheckResult
    ctx: ToolContext = field(init=False)

    def __post_init__(self) -> None:
        self.ctx = ToolContext(settings=self.settings, approver=deny_all)

    async def attempt(self, session: Session, sid: str, reuse: bool) -> Attempt:
        """One attempt in the session `sid` (reset afterwards when reused, else closed)."""
        check, settings = self.check, self.settings
        if session.guard is not None and self.lean:
            session.guard.policy = resource_policy(check)
        attempt = Attempt(check, session, settings, self.timeout_s, self.evidence)
        try:
            await self._steps(attempt, sid)
            if not attempt.failures:
                for i, exp in enumerate(check.expect, 1):
                    await attempt.expect(i, exp, self.values)
            # A screenshot costs the browser more than the rest of a simple check: taken only when
            # the check asks for one or there is something to look at.
            if check.evidence == "always" or attempt.failures or attempt.warnings or not self.lean:
                try:
                    shot = self.evidence / f"{safe_name(check.id)}.png"
                    write_atomic(shot, await evidence_png(attempt.page(), self.timeout_s))
                    self.result.screenshot = str(shot)
                except (ActionError, PlaywrightTimeoutError, Exception):  # evidence is best effort
                    pass
        finally:
            if session.guard is not None:
                session.guard.policy = None
            if reuse:
                await reset_session(session)
            else:
                await MANAGER.close_session(sid)
        return attempt

    async def _steps(self, attempt: Attempt, sid: str) -> None:
        """Open the check's URL, then run its steps until one fails."""
        timeout_ms = self.timeout_s * 1000
        if self.url:
            problem = await _call_step(
                0, _Nav(self.url), sid, self.ctx, timeout_ms, self.values, self.allow_destructive
            )
            if problem:
                attempt.failures.append(problem.replace("step[0] navigate_to_url", "open url"))
        for i, step in enumerate(self.check.steps, 1):
            if attempt.failures:
                break
            problem = await _call_step(
                i, step, sid, self.ctx, timeout_ms, self.values, self.allow_destructive
            )
            if problem:
                attempt.failures.append(problem)


async def evidence_png(page: Page, timeout_s: float) -> bytes:
    """The viewport as PNG for a check's evidence, encoded for speed (a baseline comparison uses its own).

    CDP's `optimizeForSpeed` trades a larger file for about a third less of the browser's time per
    check; a browser without it falls back to Playwright's screenshot.
    """
    from playwright.async_api import Error as PlaywrightError

    try:
        cdp = await page.context.new_cdp_session(page)
        try:
            reply = await asyncio.wait_for(
                cdp.send("Page.captureScreenshot", {"format": "png", "optimizeForSpeed": True}), timeout_s
            )
        finally:
            await cdp.detach()
        return base64.b64decode(reply["data"])
    except (PlaywrightError, KeyError, ValueError):
        return await page.screenshot(timeout=timeout_s * 1000)


async def reset_session(session: Session) -> None:
    """Make a reused worker context clean for the next check: one blank tab, no cookies or storage.

    The tab leaves its page first, so nothing the page still runs (a timer, an unload handler) can
    write after the clearing; then everything the origins it showed stored is cleared through CDP
    (local and session storage, IndexedDB, cache storage, service workers), and every cookie.
    """
    try:
        keep = min(session.tabs) if session.tabs else None
        origins: set[str] = set()
        for tab_id, page in list(session.tabs.items()):
            origins.add(_origin(page.url))
            if tab_id != keep:
                await page.close()
        if keep is not None:
            page = session.tabs[keep]
            await page.goto("about:blank")
            session.active = keep
            origins.discard("")
            if origins:
                cdp = await session.context.new_cdp_session(page)
                try:
                    for origin in sorted(origins):
                        await cdp.send(
                            "Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"}
                        )
                finally:
                    await cdp.detach()
        await session.context.clear_cookies()
        await session.context.clear_permissions()
        session.history.clear()
        session.last_status.clear()
        if session.guard is not None:
            session.guard.refusals.clear()
    except PlaywrightError:
        await MANAGER.close_session(session.id)  # next use starts a fresh context


def _origin(url: str) -> str:
    """scheme://host[:port] of an http(s) URL; '' for anything else (about:, data:, file:)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") and parts.netloc else ""


def resource_policy(check: Check) -> ResourcePolicy:
    """What this check's pages load without: fonts and media (unless it compares screenshots, or says
    otherwise in `block`), and subresources from hosts other than the page's own (unless in `hosts`)."""
    visual = any(exp.screenshot is not None for exp in check.expect)
    block = check.block if check.block is not None else ([] if visual else list(DEFAULT_BLOCK))
    hosts = frozenset(h.lower() for h in check.hosts or [])
    return ResourcePolicy(block_types=frozenset(block), hosts=None if "*" in hosts else hosts)


class _Nav:
    """The implicit first step: open the check's URL."""

    tool = "navigate_to_url"

    def __init__(self, url: str) -> None:
        self.input = {"url": url}


async def run_checks(
    checks: list[Check],
    settings: Settings,
    *,
    run_id: str | None = None,
    concurrency: int | None = None,
    base_url: str | None = None,
    variables: dict[str, str] | None = None,
    allow_destructive: bool = False,
    isolation: Isolation = "run",
    lean: bool = True,
) -> list[CheckResult]:
    """Run checks concurrently (at most `concurrency` browser contexts at once), results in order.

    isolation "run": each of the `concurrency` workers keeps one context for the run and resets
    it (tabs, cookies, storage) between checks; "check": a fresh context for every check.
    """
    run_id = run_id or new_run_id()
    width = concurrency or settings.browser_concurrency
    workers: asyncio.Queue[str | None] = asyncio.Queue()
    names = [safe_name(f"verify-{run_id}-w{k}") for k in range(width)]
    for name in names:
        workers.put_nowait(name if isolation == "run" else None)

    async def one(check: Check) -> CheckResult:
        worker = await workers.get()
        try:
            return await run_check(
                check,
                settings,
                run_id=run_id,
                base_url=base_url,
                variables=variables,
                allow_destructive=allow_destructive,
                worker_session=worker,
                lean=lean,
            )
        finally:
            workers.put_nowait(worker)

    try:
        return list(await asyncio.gather(*(one(c) for c in checks)))
    finally:
        for name in names:
            await MANAGER.close_session(name)


def run_checks_sync(checks: list[Check], settings: Settings, **options: Any) -> list[CheckResult]:
    """run_checks from ordinary (non-async) code, on the process's tool loop."""
    return list(run_coroutine(run_checks(checks, settings, **options)))
