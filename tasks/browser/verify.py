"""Running verification checks: each in its own browser context, steps as tool calls, then expectations.

A check opens its URL, runs its steps (browser tools, in-process on the tool loop), evaluates every
expectation, and keeps a final screenshot as evidence. Visual expectations compare against a
baseline PNG with Pillow and write a diff image on failure. Many checks run at once, each in a
fresh context of the one shared browser, bounded by a semaphore.
"""

from __future__ import annotations

import asyncio
import base64
import io
import re
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from PIL import Image, ImageChops
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Locator, Page
from playwright.async_api import TimeoutError as PlaywrightTimeoutError
from pydantic import BaseModel, Field, ValidationError

from tasks.base import Permission, ToolContext, TransientToolError, deny_all, run_coroutine
from tasks.browser.catalog import browser_tool
from tasks.browser.common import write_atomic
from tasks.browser.guard import ResourcePolicy
from tasks.browser.session import MANAGER, ActionError, Session, pw_selector, timeout_message
from udm.config import Settings
from udm.errors import UdmError
from udm.verify import Check, CheckProblem, Expectation, resolve_url, substitute

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


# A baseline larger than this is not an image a check compares with.
_MAX_BASELINE_BYTES = 64 * 1024 * 1024


def _manual_baseline(settings: Settings, baseline: Path, shot: bytes) -> bytes | None:
    """The bytes of a manual check's baseline, through the tools' sandbox; None after saving `shot` there."""
    box = settings.tool_sandbox()
    try:
        read = box.read(baseline, max_bytes=_MAX_BASELINE_BYTES)
    except FileNotFoundError:
        box.mkdir(baseline.parent, parents=True)
        box.write(baseline, shot)
        return None
    if read.truncated:
        raise ValueError(f"larger than {_MAX_BASELINE_BYTES} bytes")
    return read.data


def compare_images(actual: bytes, baseline: Path | bytes, threshold: int) -> tuple[float, Image.Image | None]:
    """Share of differing pixels (0..1) and a diff image (changed pixels red over a dimmed copy)."""
    source = io.BytesIO(baseline) if isinstance(baseline, bytes) else baseline
    with Image.open(io.BytesIO(actual)) as a_raw, Image.open(source) as b_raw:
        a, b = a_raw.convert("RGB"), b_raw.convert("RGB")
    width, height = max(a.width, b.width), max(a.height, b.height)
    if a.size != b.size:
        # Missing area counts as different: pad both to the same canvas with a colour nothing uses.
        pad_a, pad_b = (
            Image.new("RGB", (width, height), (255, 0, 255)),
            Image.new("RGB", (width, height), (0, 255, 0)),
        )
        pad_a.paste(a)
        pad_b.paste(b)
        a, b = pad_a, pad_b
    r, g, bl = ImageChops.difference(a, b).split()
    strongest = ImageChops.lighter(ImageChops.lighter(r, g), bl)
    mask = strongest.point(lambda v: 255 if v > threshold else 0)
    changed = mask.histogram()[255]
    variation = changed / float(width * height)
    if changed == 0:
        return 0.0, None
    diff = Image.blend(a.convert("L").convert("RGB"), Image.new("RGB", a.size, (255, 255, 255)), 0.6)
    diff.paste((255, 0, 0), mask=mask)
    return variation, diff


class _Attempt:
    """State of one attempt of one check."""

    def __init__(
        self, check: Check, session: Session, settings: Settings, timeout_s: float, evidence: Path
    ) -> None:
        self.check = check
        self.session = session
        self.settings = settings
        self.timeout_s = timeout_s
        self.evidence = evidence
        self.failures: list[str] = []
        self.warnings: list[str] = []
        self.diff_image: str | None = None

    def page(self) -> Page:
        return self.session.page()[1]

    async def expect(self, n: int, exp: Expectation, variables: dict[str, str]) -> None:
        """Evaluate one expectation, adding a failure or warning when it does not hold."""
        label = f"expect[{n}] {exp.kind}"
        page = self.page()
        ms = self.timeout_s * 1000
        try:
            if exp.exists is not None:
                await self._attached(page, label, substitute(exp.exists, variables), ms)
            elif exp.absent is not None:
                sel = substitute(exp.absent, variables)
                try:
                    await page.locator(pw_selector(sel)).first.wait_for(state="detached", timeout=ms)
                except PlaywrightTimeoutError:
                    count = await page.locator(pw_selector(sel)).count()
                    self.failures.append(f"{label}: '{sel}' is still present ({count} matching)")
            elif exp.text is not None:
                sel = substitute(exp.text.selector, variables)
                target = page.locator(pw_selector(sel)).first
                await self._until(label, f"text of '{sel}'", exp.text, _reader(target, _inner_text), sel)
            elif exp.attribute is not None:
                sel, name = substitute(exp.attribute.selector, variables), exp.attribute.name
                target = page.locator(pw_selector(sel)).first
                read = _reader(target, lambda t: t.get_attribute(name, timeout=_READ_MS))
                await self._until(label, f"{name} of '{sel}'", exp.attribute, read, sel)
            elif exp.count is not None:
                sel = substitute(exp.count.selector, variables)
                matches = page.locator(pw_selector(sel))
                await self._until(label, f"count of '{sel}'", exp.count, matches.count)
            elif exp.url is not None:
                matcher = exp.url.model_copy(
                    update=substitute(exp.url.model_dump(exclude_none=True), variables)
                )

                async def url() -> str:
                    return page.url

                await self._until(label, "url", matcher, url)
            elif exp.title is not None:
                await self._until(label, "title", exp.title, page.title)
            elif exp.status is not None:
                status = self.session.last_status.get(self.session.active or 0)
                if status != exp.status:
                    self.failures.append(f"{label}: HTTP status is {status}, expected {exp.status}")
            elif exp.screenshot is not None:
                await self._visual(label, exp)
        except ActionError as exc:
            self.failures.append(f"{label}: {exc.message}")

    async def _until(
        self,
        label: str,
        what: str,
        matcher: Any,
        read: Callable[[], Awaitable[Any]],
        selector: str | None = None,
    ) -> None:
        """Read a value until `matcher.test` passes or the timeout ends; a failure names the last value.

        As Playwright's `expect`: the first read is immediate, then again after 100, 250 and 500 ms
        and every second, so a value a page sets after load passes as soon as it appears.
        """
        deadline = time.monotonic() + self.timeout_s
        pauses = iter(_POLL_PAUSES_S)
        value: Any = _MISSING
        while True:
            try:
                value = await read()
            except PlaywrightError:
                # The element went away between finding and reading it, or the page is navigating.
                value = _MISSING
            if value is not _MISSING and matcher.test(value):
                return
            left = deadline - time.monotonic()
            if left <= 0:
                break
            await asyncio.sleep(min(next(pauses, 1.0), left))
        if value is _MISSING and selector is not None:
            self.failures.append(f"{label}: {timeout_message(self.timeout_s, f'selector {selector!r}')}")
            return
        shown = value if isinstance(value, int) else _quote(value)
        self.failures.append(
            f"{label}: {what} is {shown}, expected it {matcher.describe()} "
            f"(last value seen, after waiting {self.timeout_s:g} s)"
        )

    async def _attached(self, page: Page, label: str, sel: str, ms: float) -> Locator | None:
        """The first match of `sel` once attached; None, with a timeout failure recorded, if it never is."""
        target = page.locator(pw_selector(sel)).first
        try:
            await target.wait_for(state="attached", timeout=ms)
        except PlaywrightTimeoutError:
            self.failures.append(f"{label}: {timeout_message(self.timeout_s, f'selector {sel!r}')}")
            return None
        return target

    async def _visual(self, label: str, exp: Expectation) -> None:
        spec = exp.screenshot
        assert spec is not None
        page = self.page()
        if spec.selector:
            shot = await page.locator(pw_selector(spec.selector)).first.screenshot(
                timeout=self.timeout_s * 1000
            )
        else:
            shot = await page.screenshot(full_page=spec.full_page, timeout=self.timeout_s * 1000)
        baseline = Path(spec.baseline)
        if not baseline.is_absolute():
            baseline = (self.check.base_dir or self.settings.project_root) / baseline
        reference: Path | bytes = baseline
        if self.check.in_manual:
            # The manual is untrusted: its baseline is read and written only where a tool could.
            try:
                stored = _manual_baseline(self.settings, baseline, shot)
            except (UdmError, OSError, ValueError) as exc:
                self.failures.append(f"{label}: baseline {spec.baseline!r} refused: {exc}")
                return
            if stored is None:
                self.warnings.append(f"{label}: no baseline yet; saved this screenshot as {baseline}")
                return
            reference = stored
        elif not baseline.exists():
            baseline.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(baseline, shot)
            self.warnings.append(f"{label}: no baseline yet; saved this screenshot as {baseline}")
            return
        variation, diff = compare_images(shot, reference, spec.pixel_threshold)
        if variation <= spec.max_variation:
            return
        if diff is not None:
            path = self.evidence / f"{_safe(self.check.id)}-diff.png"
            buf = io.BytesIO()
            diff.save(buf, format="PNG")
            write_atomic(path, buf.getvalue())
            self.diff_image = str(path)
        text = f"{label}: {variation:.2%} of pixels differ from {baseline.name} (maxVariation {spec.max_variation:.2%})"
        if spec.fail_variation is not None and variation <= spec.fail_variation:
            self.warnings.append(text + f", under the hard limit {spec.fail_variation:.2%}")
        else:
            self.failures.append(text)


# What a check loads without unless it says otherwise (its claims are about text and structure).
DEFAULT_BLOCK = ("font", "media")
# Pauses between reads of a waiting expectation (then 1 s each), as Playwright's expect polls.
_POLL_PAUSES_S = (0.1, 0.25, 0.5)
# A read of an element that is there answers at once; this only bounds a read of one that vanished.
_READ_MS = 1000
_MISSING: Any = object()


async def _inner_text(target: Locator) -> str:
    return await target.inner_text(timeout=_READ_MS)


def _reader(target: Locator, read: Callable[[Locator], Awaitable[Any]]) -> Callable[[], Awaitable[Any]]:
    """A read of the first match that gives _MISSING, without waiting, while nothing matches."""

    async def once() -> Any:
        if await target.count() == 0:
            return _MISSING
        return await read(target)

    return once


def _quote(value: str | None) -> str:
    if value is None:
        return "missing"
    text = " ".join(value.split())
    return repr(text if len(text) <= 120 else text[:117] + "...")


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:100]


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

    def done(status: Status, reason: str | None = None) -> CheckResult:
        result.status, result.reason = status, reason
        result.duration_ms = round((time.perf_counter() - started) * 1000, 1)
        return result

    if check.skip:
        return done("SKIPPED", check.skip if isinstance(check.skip, str) else "marked skip")
    url: str | None = None
    if check.url:
        url, why = resolve_url(substitute(check.url, values), base_url)
        if url is None:
            return done("SKIPPED", why)
        result.url = url
    evidence = settings.state_path / "verify" / run_id
    evidence.mkdir(parents=True, exist_ok=True)
    timeout_s = min(check.timeout or settings.browser_timeout_s, settings.browser_max_timeout_s)
    ctx = ToolContext(settings=settings, approver=deny_all)
    attempt = None
    for n in range(check.retries + 1):
        result.attempts = n + 1
        # A worker's context is reused for a first attempt; a retry or a custom viewport gets a fresh one.
        reuse = worker_session is not None and n == 0 and check.viewport is None
        sid = worker_session if reuse and worker_session else _safe(f"verify-{run_id}-{check.id}-{n}")
        try:
            session = await MANAGER.session(sid, settings, viewport=check.viewport, route_websockets=False)
        except ActionError as exc:
            return done("FAIL", exc.message)
        assert session is not None
        if session.guard is not None and lean:
            session.guard.policy = resource_policy(check)
        attempt = _Attempt(check, session, settings, timeout_s, evidence)
        try:
            if url:
                problem = await _call_step(
                    0, _Nav(url), sid, ctx, timeout_s * 1000, values, allow_destructive
                )
                if problem:
                    attempt.failures.append(problem.replace("step[0] navigate_to_url", "open url"))

            for i, step in enumerate(check.steps, 1):
                if attempt.failures:
                    break
                problem = await _call_step(i, step, sid, ctx, timeout_s * 1000, values, allow_destructive)
                if problem:
                    attempt.failures.append(problem)
            if not attempt.failures:
                for i, exp in enumerate(check.expect, 1):
                    await attempt.expect(i, exp, values)
            # A screenshot costs the browser more than the rest of a simple check: taken only when
            # the check asks for one or there is something to look at.
            if check.evidence == "always" or attempt.failures or attempt.warnings or not lean:
                try:
                    shot = evidence / f"{_safe(check.id)}.png"
                    write_atomic(shot, await evidence_png(attempt.page(), timeout_s))
                    result.screenshot = str(shot)
                except (ActionError, PlaywrightTimeoutError, Exception):  # evidence is best effort
                    pass
        finally:
            if session.guard is not None:
                session.guard.policy = None
            if reuse:
                await reset_session(session)
            else:
                await MANAGER.close_session(sid)
        if not attempt.failures:
            break
    assert attempt is not None
    result.failures, result.warnings, result.diff_image = (
        attempt.failures,
        attempt.warnings,
        attempt.diff_image,
    )
    if attempt.failures:
        extra = f" (+{len(attempt.failures) - 1} more)" if len(attempt.failures) > 1 else ""
        return done("FAIL", attempt.failures[0] + extra)
    if attempt.warnings:
        return done("WARNING", "; ".join(attempt.warnings))
    return done("PASS")


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
    names = [_safe(f"verify-{run_id}-w{k}") for k in range(width)]
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
