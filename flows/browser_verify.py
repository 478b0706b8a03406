"""browser_verification_flow: gather checks -> run them in parallel browser contexts -> artifacts -> index.

Each check is one Prefect task run (named after the check) on a thread pool; a semaphore keeps at
most `concurrency` browser contexts open at once. Every task hands its check to the process's tool
loop, where the one shared Chromium lives. The flow publishes a results table, an image artifact
per failing check (its diff or final screenshot), and a Markdown summary naming each failing claim
with its UDM section, then records every result in the index's `verifications` table.
"""

from __future__ import annotations

import base64
import io
import os
import queue
import threading
from pathlib import Path
from typing import Any

from PIL import Image
from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.states import Completed, Failed, State
from prefect.task_runners import ThreadPoolTaskRunner

from flows.run_settings import check_destructive, check_run_folders, flow_settings
from flows.runners import on_dask_workers
from tasks.base import run_coroutine
from tasks.browser.session import MANAGER
from tasks.browser.verify import CheckResult, new_run_id, problem_result, run_check
from udm.config import Settings
from udm.verify import Check, gather_checks, record_verifications

__all__ = [
    "browser_verification_flow",
    "check_links_task",
    "link_check_flow",
    "publish_link_report",
    "summary_markdown",
    "verification_state",
    "verify_check",
]

# Threads of the flow's pool; the real bound on open browser contexts is the per-run worker queue.
POOL_SIZE = 32
# Per run: a queue of worker slots (a reusable session name, or None for a fresh context per check).
_SLOTS: dict[str, queue.Queue[str | None]] = {}


def _flow_settings(
    root: str | None, state_dir: str | None, specs: list[str] | None = None, **extra: Any
) -> Settings:
    """Settings for a flow run: the given root, state dir and other overrides win where set (truthy);
    in a triggered run, folders and spec files only inside the process's own (`check_run_folders`)."""
    overrides = {"root": root, "state_dir": state_dir, **extra}
    settings = flow_settings(None, {key: value for key, value in overrides.items() if value})
    check_run_folders(settings, {"root": root, "state_dir": state_dir, "specs": specs}, "specs")
    return settings


def _slot_table() -> dict[str, queue.Queue[str | None]]:
    """The runs' worker slots in this process. Flow and task reach the table through this function,
    so that they pickle for Dask by reference to it rather than with the queues and their locks."""
    return _SLOTS


_SLOTS_LOCK = threading.Lock()


def _worker_slots(run_id: str, count: int) -> queue.Queue[str | None]:
    """A run's slots in a Dask worker process (its own `count` reusable contexts), made on first use
    and closed by `_release_run` when the run ends."""
    with _SLOTS_LOCK:
        slots = _SLOTS.get(run_id)
        if slots is None:
            slots = _SLOTS[run_id] = queue.Queue()
            for k in range(count):
                slots.put(f"verify-{run_id}-p{os.getpid()}-w{k}")
        return slots


def _release_run(run_id: str) -> None:
    """In a Dask worker process: close the run's contexts there (called on every worker at run end)."""
    with _SLOTS_LOCK:
        slots = _SLOTS.pop(run_id, None)
    names: list[str] = []
    while slots is not None and not slots.empty():
        name = slots.get_nowait()
        if name:
            names.append(name)
    if names:
        run_coroutine(_close_sessions(names))


@task(name="verify-check", cache_policy=NO_CACHE, task_run_name="check {check.id}")
def verify_check(
    check: Check,
    settings: Settings,
    run_id: str,
    base_url: str | None = None,
    variables: dict[str, str] | None = None,
    allow_destructive: bool = False,
    isolation: str = "run",
) -> dict[str, Any]:
    """Run one check in a browser context (waiting for a free worker slot) and return its result."""
    slots = _slot_table().get(run_id)
    if slots is None and isolation == "run":
        # Not the flow's process (a Dask worker): this process's own reusable contexts for the run.
        slots = _worker_slots(run_id, settings.browser_concurrency)
    worker = slots.get() if slots is not None else None
    try:
        result: CheckResult = run_coroutine(
            run_check(
                check,
                settings,
                run_id=run_id,
                base_url=base_url,
                variables=variables,
                allow_destructive=allow_destructive,
                worker_session=worker,
            )
        )
    finally:
        if slots is not None:
            slots.put(worker)
    return result.model_dump(mode="json")


async def _close_sessions(names: list[str]) -> None:
    for name in names:
        await MANAGER.close_session(name)


def summary_markdown(run_id: str, results: list[dict[str, Any]]) -> str:
    """The run's Markdown summary: counts, then every failing or warning claim with its UDM section."""
    counts = {s: sum(1 for r in results if r["status"] == s) for s in ("PASS", "FAIL", "WARNING", "SKIPPED")}
    lines = [
        f"# Browser verification {run_id}",
        "",
        " · ".join(f"**{k}** {v}" for k, v in counts.items()),
        "",
    ]
    bad = [r for r in results if r["status"] in ("FAIL", "WARNING")]
    if not bad:
        lines.append(
            "Every check passed (or was skipped): the claims below hold." if results else "No checks found."
        )
    else:
        lines += ["## Claims that need review", ""]
        for r in bad:
            refs = ", ".join(f"`{x}`" for x in r.get("udm_refs") or []) or "(no UDM reference)"
            where = f" in `{r['section']}`" if r.get("section") else ""
            lines.append(f"- **{r['status']}** `{r['id']}` — claim {refs}{where}: {r.get('reason') or ''}")
    skipped = [r for r in results if r["status"] == "SKIPPED"]
    if skipped:
        lines += ["", "## Skipped", ""]
        lines += [f"- `{r['id']}`: {r.get('reason') or ''}" for r in skipped]
    return "\n".join(lines) + "\n"


def _data_uri(path: str, width: int = 640) -> str | None:
    """A small JPEG data: URI of an image (artifacts hold URLs, not files)."""
    try:
        with Image.open(path) as img:
            rgb = img.convert("RGB")
            if rgb.width > width:
                rgb = rgb.resize((width, max(1, rgb.height * width // rgb.width)))
            buf = io.BytesIO()
            rgb.save(buf, format="JPEG", quality=70)
    except OSError:
        return None
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _artifact_key(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")[:100]


def _publish(run_id: str, results: list[dict[str, Any]]) -> None:
    from prefect.artifacts import create_image_artifact, create_markdown_artifact, create_table_artifact

    table = [
        {
            "check": r["id"],
            "status": r["status"],
            "duration_ms": r.get("duration_ms"),
            "udm_refs": ", ".join(r.get("udm_refs") or []),
            "section": r.get("section") or "",
            "reason": r.get("reason") or "",
            "screenshot": r.get("screenshot") or "",
        }
        for r in results
    ]
    create_table_artifact(
        table=table, key="browser-verification-results", description=f"Checks of run {run_id}"
    )
    for r in results:
        if r["status"] not in ("FAIL", "WARNING"):
            continue
        image = r.get("diff_image") or r.get("screenshot")
        uri = _data_uri(image) if image else None
        if uri:
            create_image_artifact(
                image_url=uri,
                key=_artifact_key(f"verify-{r['id']}"),
                description=f"{r['status']} {r['id']}: {r.get('reason') or ''}"[:500],
            )
    create_markdown_artifact(
        markdown=summary_markdown(run_id, results),
        key="browser-verification-summary",
        description=f"Browser verification {run_id}",
    )


@flow(
    name="browser-verification",
    description="Run the manual's browser checks in parallel contexts; publish results and record them in the index.",
    task_runner=ThreadPoolTaskRunner(max_workers=POOL_SIZE),  # type: ignore[arg-type]
    validate_parameters=True,
)
def browser_verification_flow(
    specs: list[str] | None = None,
    inline: bool = True,
    only: list[str] | None = None,
    refs: list[str] | None = None,
    base_url: str | None = None,
    variables: dict[str, str] | None = None,
    concurrency: int | None = None,
    allow_destructive: bool = False,
    isolation: str = "run",
    record: bool = True,
    artifacts: bool = True,
    links: bool = False,
    propose_review: bool = False,
    review_timeout_s: int = 3600,
    review_poll_interval_s: int = 10,
    root: str | None = None,
    state_dir: str | None = None,
) -> State[Any]:
    """Verify checks from spec files and the UDM's ```verify blocks; counts and every result, as the data
    of the final state (Failed when a check failed, see `verification_state`).

    With `propose_review`, the sections whose claims failed get a needs-review note through the
    UDM-update steps, always waiting for a reviewer's approval (at most `review_timeout_s`).
    """
    settings = _flow_settings(root, state_dir, specs, browser_concurrency=concurrency)
    check_destructive(settings, allow_destructive)
    checks, problems = gather_checks(
        settings, [Path(s) for s in specs or []], inline=inline, only=only or (), refs=refs or ()
    )
    if isolation not in ("run", "check"):
        raise ValueError(f"isolation must be 'run' or 'check', not {isolation!r}")
    run_id = new_run_id()
    results = _run_checks(
        settings,
        run_id,
        checks,
        base_url=base_url,
        variables=variables,
        allow_destructive=allow_destructive,
        isolation=isolation,
    )
    results += [problem_result(p).model_dump(mode="json") for p in problems]
    if artifacts:
        _publish(run_id, results)
    recorded = record_verifications(settings, run_id, results) if record else 0
    counts = {s: sum(1 for r in results if r["status"] == s) for s in ("PASS", "FAIL", "WARNING", "SKIPPED")}
    summary: dict[str, Any] = {"run_id": run_id, "counts": counts, "recorded": recorded, "results": results}
    if links:
        # The link-check step: the same settings, its own table artifact.
        report = check_links_task(settings)
        if artifacts:
            publish_link_report(report)
        summary["links"] = {"counts": report["counts"], "seconds": report["seconds"]}
    if propose_review:
        summary["review"] = _propose_review(
            settings, run_id, results, review_timeout_s, review_poll_interval_s
        )
    return verification_state(summary)


def _run_checks(
    settings: Settings, run_id: str, checks: list[Check], *, isolation: str, **options: Any
) -> list[dict[str, Any]]:
    """Every check's result, each a `verify-check` task run; at most `browser_concurrency` browser
    contexts open at once (reused per worker slot when `isolation` is "run"), closed at the end."""
    workers = [f"verify-{run_id}-w{k}" for k in range(settings.browser_concurrency)]
    slots: queue.Queue[str | None] = queue.Queue()
    for name in workers:
        slots.put(name if isolation == "run" else None)
    _slot_table()[run_id] = slots
    try:
        futures = [
            verify_check.submit(check, settings, run_id, isolation=isolation, **options) for check in checks
        ]
        return [f.result() for f in futures]
    finally:
        _slot_table().pop(run_id, None)
        run_coroutine(_close_sessions(workers))
        on_dask_workers(_release_run, run_id)


def verification_state(summary: dict[str, Any]) -> State[Any]:
    """Failed when a check failed or could not run (FAIL), else Completed (warnings included); the
    summary is the state's data (`flows.states.state_result`)."""
    failed = [r["id"] for r in summary["results"] if r["status"] == "FAIL"]
    counts = ", ".join(f"{v} {k}" for k, v in summary["counts"].items() if v)
    if failed:
        shown = ", ".join(failed[:10]) + (f" and {len(failed) - 10} more" if len(failed) > 10 else "")
        return Failed(data=summary, message=f"{len(failed)} check(s) failed: {shown} ({counts})")
    return Completed(data=summary, message=counts or "no checks")


def _propose_review(
    settings: Settings, run_id: str, results: list[dict[str, Any]], timeout_s: int, poll_s: int
) -> dict[str, Any]:
    """Build the needs-review patch and send it through the update steps with approval required."""
    from flows.udm_update import UpdateOptions, update_steps
    from udm.config import ApprovalPolicy
    from udm.index import get_query
    from udm.verify import needs_review_patch

    proposal = needs_review_patch(get_query(settings), results, run_id)
    out: dict[str, Any] = {
        "targets": proposal.targets,
        "unresolved": proposal.unresolved,
        "already_marked": proposal.already_marked,
        "update": None,
    }
    if proposal.patch is not None:
        # Only a person may mark the manual: approval is asked whatever the settings' policy says.
        options = UpdateOptions(
            approval_policy=ApprovalPolicy.ASK_ALWAYS, approval_timeout_s=timeout_s, poll_interval_s=poll_s
        )
        out["update"] = update_steps(proposal.patch, options, settings).model_dump(mode="json")
    return out


@task(name="check-links", cache_policy=NO_CACHE)
def check_links_task(
    settings: Settings,
    external: bool = True,
    internal: bool = True,
    max_age_s: float = 86_400,
    per_host: int = 8,
) -> dict[str, Any]:
    """Check every link of the UDM (internal against the index, external over HTTP); the report as data."""
    from udm.index import check_links

    report = check_links(
        settings, external=external, internal=internal, max_age_s=max_age_s, per_host=per_host
    )
    return report.model_dump(mode="json")


def publish_link_report(report: dict[str, Any]) -> None:
    """A table artifact of every link that is not ok (all links when every one is)."""
    from prefect.artifacts import create_table_artifact

    rows = [r for r in report["results"] if r["status"] not in ("ok", "skipped")] or report["results"]
    table = [
        {
            "status": r["status"],
            "where": f"{r['file']}:{r['line']}",
            "target": r["target"],
            "http_status": r.get("http_status"),
            "reason": r.get("reason") or "",
        }
        for r in rows
    ]
    counts = ", ".join(f"{v} {k}" for k, v in sorted(report["counts"].items()))
    create_table_artifact(table=table, key="udm-link-check", description=f"Link check: {counts}")


@flow(name="link-check", description="Check every internal and external link of the UDM; table artifact.")
def link_check_flow(
    external: bool = True,
    internal: bool = True,
    max_age_s: float = 86_400,
    per_host: int = 8,
    root: str | None = None,
    state_dir: str | None = None,
) -> dict[str, Any]:
    """Check the UDM's links and publish the broken ones as a table artifact; returns the report."""
    settings = _flow_settings(root, state_dir)
    report = check_links_task(
        settings, external=external, internal=internal, max_age_s=max_age_s, per_host=per_host
    )
    publish_link_report(report)
    return report
