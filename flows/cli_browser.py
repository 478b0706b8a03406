"""`udm verify`, `udm verified`, `udm links`, `udm browser run`: browser checks, link checks and one-shot sessions."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import typer

from flows.say import json_text, say
from udm.shown import shown_line

__all__ = ["register", "serve_site", "step_verify_inline"]

browser_app = typer.Typer(help="Drive the browser tools from the command line.", no_args_is_help=True)

_MARK = {"PASS": "ok  ", "FAIL": "FAIL", "WARNING": "WARN", "SKIPPED": "skip"}


def _print_results(rows: list[dict[str, Any]]) -> None:
    width = max((len(r["id"]) for r in rows), default=10)
    for r in rows:
        reason = f"  {r['reason']}" if r.get("reason") else ""
        say(f"{_MARK.get(r['status'], r['status'])}  {r['id']:<{width}}  {r['duration_ms']:>7.0f} ms{reason}")
    counts = {s: sum(1 for r in rows if r["status"] == s) for s in ("PASS", "FAIL", "WARNING", "SKIPPED")}
    say(", ".join(f"{v} {k.lower()}" for k, v in counts.items()))


def verify(
    specs: list[Path] | None = typer.Argument(
        None, help="Spec files (YAML/JSON); the UDM's ```verify blocks are added."
    ),
    only: list[str] | None = typer.Option(None, "--only", help="Run only this check ID (repeatable)."),
    ref: list[str] | None = typer.Option(
        None, "--ref", help="Run only checks of this UDM ID or section (repeatable)."
    ),
    base_url: str | None = typer.Option(None, "--base-url", help="For ${BASE_URL} and relative check URLs."),
    inline: bool = typer.Option(True, "--inline/--no-inline", help="Include the UDM's ```verify blocks."),
    concurrency: int | None = typer.Option(
        None, "--concurrency", min=1, max=32, help="Parallel browser contexts."
    ),
    allow_destructive: bool = typer.Option(
        False, "--allow-destructive", help="Allow destructive/critical steps."
    ),
    isolation: str = typer.Option(
        "run",
        "--isolation",
        help="run: one context per worker, reset between checks; check: fresh per check.",
    ),
    record: bool = typer.Option(True, "--record/--no-record", help="Store results in the index."),
    use_flow: bool = typer.Option(False, "--flow", help="Run as the Prefect flow (artifacts in the UI)."),
    propose_review: bool = typer.Option(
        False,
        "--propose-review",
        help="With --flow: mark the sections of failed claims needs-review, after approval in the Prefect UI.",
    ),
    review_patch: Path | None = typer.Option(
        None,
        "--review-patch",
        help="Write the needs-review patch for the failed claims to this file (apply it with `udm patch apply`).",
    ),
    schema: bool = typer.Option(False, "--schema", help="Print the spec JSON Schema and exit."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per check."),
) -> None:
    """Run browser verification checks; exit 1 when any check fails.

    Long only for its typer options (why: one per flow parameter); the work is in _check_arguments,
    _verify_in_flow and _verify_here."""
    from flows.cli import emit_json, settings
    from udm.verify import spec_json_schema

    if schema:
        emit_json(spec_json_schema())
        return
    _check_arguments(specs or [], isolation, propose_review=propose_review, use_flow=use_flow)
    overrides: dict[str, Any] = {"browser_concurrency": concurrency} if concurrency else {}
    cfg = settings(**overrides)
    common: dict[str, Any] = {
        "inline": inline,
        "only": only or [],
        "refs": ref or [],
        "allow_destructive": allow_destructive,
        "isolation": isolation,
        "record": record,
    }
    if use_flow:
        flow_specs = [str(s) for s in specs or []]
        rows, run_id = _verify_in_flow(
            cfg,
            flow_specs,
            base_url=base_url,
            concurrency=concurrency,
            propose_review=propose_review,
            **common,
        )
    else:
        rows, run_id = _verify_here(cfg, specs or [], base_url, **common)
    if review_patch is not None:
        _write_review_patch(cfg, review_patch, rows, run_id)
    if as_json:
        emit_json([{k: r.get(k) for k in _JSON_KEYS} for r in rows])
    else:
        _print_results(rows)
    if any(r["status"] == "FAIL" for r in rows):
        raise typer.Exit(1)


# What `udm verify --json` prints of each result.
_JSON_KEYS = (
    "id",
    "status",
    "duration_ms",
    "reason",
    "screenshot",
    "diff_image",
    "udm_refs",
    "section",
    "url",
)


def _check_arguments(specs: list[Path], isolation: str, *, propose_review: bool, use_flow: bool) -> None:
    """A clear error for an --isolation, spec file or --propose-review that cannot work."""
    from flows.cli import fail

    if isolation not in ("run", "check"):
        raise typer.BadParameter("must be 'run' or 'check'", param_hint="--isolation")
    for spec in specs:
        if not spec.is_file():
            raise fail(f"spec file {spec} does not exist", 2)
    if propose_review and not use_flow:
        raise fail(
            "--propose-review waits for approval in the Prefect UI: add --flow, or use --review-patch FILE", 2
        )


def _verify_in_flow(cfg: Any, specs: list[str], **parameters: Any) -> tuple[list[dict[str, Any]], str]:
    """(every result, the run's ID) of a browser_verification_flow run; says how a proposed review went."""
    from flows.browser_verify import POOL_SIZE, browser_verification_flow
    from flows.runners import on_runner
    from flows.states import state_result

    state = on_runner(browser_verification_flow, cfg, POOL_SIZE)(
        specs=specs, root=str(cfg.udm_root), state_dir=str(cfg.state_path), return_state=True, **parameters
    )
    summary = state_result(state)
    if summary.get("review"):
        update = summary["review"].get("update") or {}
        say(
            f"needs-review patch: {update.get('status', 'nothing new to mark')} {update.get('message', '')}".rstrip(),
            err=True,
        )
    return summary["results"], summary["run_id"]


def _verify_here(
    cfg: Any,
    specs: list[Path],
    base_url: str | None,
    *,
    inline: bool,
    only: list[str],
    refs: list[str],
    allow_destructive: bool,
    isolation: str,
    record: bool,
) -> tuple[list[dict[str, Any]], str]:
    """(every result, the run's ID) of the checks run in this process, without Prefect; recorded in
    the index when `record`."""
    from flows.cli import fail
    from tasks.browser.verify import new_run_id, problem_result, run_checks_sync
    from udm.errors import UdmError
    from udm.verify import gather_checks, record_verifications

    try:
        checks, problems = gather_checks(cfg, specs, inline=inline, only=only or (), refs=refs or ())
    except UdmError as exc:
        raise fail(str(exc), 2) from exc
    run_id = new_run_id()
    results = run_checks_sync(
        checks,
        cfg,
        run_id=run_id,
        base_url=base_url,
        allow_destructive=allow_destructive,
        isolation="check" if isolation == "check" else "run",
    )
    rows = [r.model_dump(mode="json") for r in results] + [
        problem_result(p).model_dump(mode="json") for p in problems
    ]
    if record:
        record_verifications(cfg, run_id, rows)
    return rows, run_id


def _write_review_patch(cfg: Any, path: Path, rows: list[dict[str, Any]], run_id: str) -> None:
    """Write the needs-review patch for the failed claims (nothing when none needs a new note)."""
    import yaml

    from tasks.browser.common import write_atomic
    from udm.index import get_query
    from udm.verify import needs_review_patch

    proposal = needs_review_patch(get_query(cfg), rows, run_id)
    for problem in proposal.unresolved:
        say(f"needs-review: cannot place a note: {problem}", err=True)
    if proposal.patch is None:
        say(f"needs-review: nothing new to mark; {path} not written", err=True)
        return
    data = proposal.patch.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    write_atomic(path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=4096).encode("utf-8"))
    say(
        f"needs-review: {len(proposal.targets)} note(s) proposed in {path}; "
        f"review with `udm patch check {path}`, apply with `udm patch apply {path}`",
        err=True,
    )


def verified(
    target: str | None = typer.Argument(None, help="Check ID, UDM ID or section; omit for every check."),
    history: bool = typer.Option(False, "--history", help="Every recorded run of the target, newest first."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """When was a claim last verified, and did it pass (from the index's verifications table)."""
    from flows.cli import emit_json, fail, settings
    from udm.verify import last_verified, verification_history

    cfg = settings()
    if history and not target:
        raise fail("--history needs a target", 2)
    rows = verification_history(cfg, target or "") if history else last_verified(cfg, target)
    if as_json:
        emit_json(rows)
        return
    if not rows:
        say(f"no verification recorded{' for ' + target if target else ''}")
        raise typer.Exit(1)
    for r in rows:
        refs = ",".join(r.get("udm_refs") or [])
        reason = f"  {r['reason']}" if r.get("reason") else ""
        say(f"{r['verified_at']}  {_MARK.get(r['status'], r['status'])}  {r['check_id']}  [{refs}]{reason}")


def links(
    external: bool = typer.Option(True, "--external/--no-external", help="Check http(s) links."),
    internal: bool = typer.Option(True, "--internal/--no-internal", help="Check files and #anchors."),
    max_age: float = typer.Option(
        86_400, "--max-age", min=0, help="Reuse cached verdicts younger than this (s)."
    ),
    per_host: int = typer.Option(8, "--per-host", min=1, max=64, help="Concurrent requests per host."),
    retries: int = typer.Option(
        2, "--retries", min=0, max=10, help="Retries for 5xx, 429 and connection errors."
    ),
    show_all: bool = typer.Option(False, "--all", help="List ok links too."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole report as JSON."),
) -> None:
    """Check every link of the UDM; exit 1 when any is broken or errored."""
    from flows.cli import emit_json, settings
    from flows.cli_index import echo_site_notes
    from udm.index import check_links
    from udm.site import site_notes

    conf = settings()
    report = check_links(
        conf,
        external=external,
        internal=internal,
        max_age_s=max_age,
        per_host=per_host,
        retries=retries,
    )
    if as_json:
        emit_json(report)
    else:
        for r in report.results:
            if show_all or r.status not in ("ok", "skipped"):
                why = f"  {r.reason}" if r.reason else ""
                # A report line quotes the manual (a target, a reason): shown in a CI log too.
                say(shown_line(f"{r.status:<8} {r.file}:{r.line}  {r.target}{why}"))
        counts = ", ".join(f"{v} {k}" for k, v in sorted(report.counts.items()))
        say(f"{len(report.results)} links ({counts}) in {report.seconds:.2f} s")
    if internal:
        # Files and anchors resolve by the site: what could not be read of it explains their verdicts.
        echo_site_notes(site_notes(conf))
    if any(r.status in ("broken", "error") for r in report.results):
        raise typer.Exit(1)


@browser_app.command("run")
def browser_run(
    steps_file: Path = typer.Argument(
        ..., help="YAML/JSON: a list of {tool, input}, or {session, steps: [...]}."
    ),
    session: str | None = typer.Option(
        None, "--session", help="Session ID (default: the file's, else 'cli')."
    ),
    keep_going: bool = typer.Option(False, "--keep-going", help="Go on after a failed step."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Approve steps that need approval."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON envelope per step."),
) -> None:
    """Run a sequence of browser tool calls in one session, printing each result."""
    from flows.cli import fail, settings
    from tasks.base import ToolContext, call_tool, cli_approver
    from tasks.browser.catalog import browser_tool

    raw, steps = _load_steps(steps_file)
    sid = session or (raw.get("session") if isinstance(raw, dict) else None) or "cli"
    ctx = ToolContext(settings=settings(), approver=cli_approver(yes))
    failed = 0
    for n, step in enumerate(steps, 1):
        tool = browser_tool(str(step["tool"]))
        if tool is None:
            raise fail(f"step {n}: unknown browser tool '{step['tool']}'", 2)
        data = dict(step.get("input") or {})
        if "session_id" in tool.Input.model_fields:
            data.setdefault("session_id", sid)
        env = call_tool(tool, data, ctx).envelope
        _print_step(n, tool.name, env, as_json)
        if not env.success:
            failed += 1
            if not keep_going:
                break
    if failed:
        sys.stdout.flush()
        raise typer.Exit(1)


def _load_steps(steps_file: Path) -> tuple[Any, list[Any]]:
    """(the file's data, its steps), every step checked before the first one runs."""
    import yaml

    from flows.cli import fail
    from tasks.browser.catalog import browser_tool
    from udm.datalimits import DataLimitError, check_text, read_utf8

    try:
        text = read_utf8(steps_file)
        check_text(text, "json" if steps_file.suffix == ".json" else "yaml", what=str(steps_file))
        raw = json.loads(text) if steps_file.suffix == ".json" else yaml.safe_load(text)
    except DataLimitError as exc:
        raise fail(f"{steps_file} is refused: {exc}", 2) from exc
    except OSError as exc:
        raise fail(f"cannot read {steps_file}: {exc.strerror or exc}", 2) from exc
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise fail(f"{steps_file} is not valid YAML/JSON: {exc}", 2) from exc
    except ValueError as exc:  # not UTF-8 text
        raise fail(str(exc), 2) from exc
    steps = raw.get("steps") if isinstance(raw, dict) else raw
    if not isinstance(steps, list):
        raise fail(f"{steps_file}: expected a list of {{tool, input}} steps", 2)
    # The whole file is checked before the first step runs, so a typo in step 5 does not leave a
    # half-driven browser session behind.
    for n, step in enumerate(steps, 1):
        problem = _step_problem(step, browser_tool)
        if problem:
            raise fail(f"{steps_file}: step {n}: {problem}", 2)
    return raw, steps


def _print_step(n: int, tool_name: str, env: Any, as_json: bool) -> None:
    """One step's envelope: a JSON line, or its outcome and its non-empty data fields (no images)."""
    if as_json:
        say(json_text({"step": n, "tool": tool_name, **env.model_dump(mode="json")}, indent=None))
        return
    shown = {k: v for k, v in (env.data or {}).items() if v not in (None, [], {}, "") and k != "image_base64"}
    body = json_text(shown, indent=None)
    say(f"[{n}] {tool_name}: {'ok' if env.success else 'FAILED'} {env.error or ''}".rstrip())
    say(f"    {body[:800]}")


def _step_problem(step: Any, find_tool: Any) -> str | None:
    """What is wrong with one step of `udm browser run` (None when it is a runnable {tool, input})."""
    if not isinstance(step, dict):
        return f"expected a mapping with 'tool' and 'input', got {_kind(step)}"
    if not step.get("tool"):
        return "has no 'tool'"
    if find_tool(str(step["tool"])) is None:
        return f"unknown browser tool '{step['tool']}'"
    data = step.get("input")
    if data is not None and not isinstance(data, dict):
        return f"'input' of {step['tool']} must be a mapping of field names to values, got {_kind(data)}"
    return None


def _kind(value: Any) -> str:
    return {list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )


def serve_site(directory: Path | None = None) -> tuple[Any, str]:
    """Serve a folder (default examples/site) on 127.0.0.1 in a thread, as any static server would."""
    import functools
    import http.server
    import threading

    site = directory or Path(__file__).resolve().parent.parent / "examples" / "site"

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            """No access log."""

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def step_verify_inline(ws: Any) -> None:
    """Demo: serve the sample site on 127.0.0.1, run the UDM's inline checks as the Prefect flow."""
    from flows.browser_verify import browser_verification_flow
    from flows.states import state_result
    from udm.verify import last_verified

    server, base = serve_site()
    ws.say(f"   serving examples/site at {base} (allow-listed for the browser's SSRF guard: 127.0.0.1 only)")
    # The flow reads its settings where it runs; the guard refuses loopback unless allow-listed, so
    # the demo allow-lists its own server's address for this run only.
    previous = os.environ.get("UDM_FETCH_ALLOW")
    os.environ["UDM_FETCH_ALLOW"] = ",".join(filter(None, [previous, "127.0.0.1"]))
    try:
        summary = state_result(
            browser_verification_flow(
                base_url=base,
                root=str(ws.settings.udm_root),
                state_dir=str(ws.settings.state_path),
                return_state=True,
            )
        )
    finally:
        if previous is None:
            os.environ.pop("UDM_FETCH_ALLOW", None)
        else:
            os.environ["UDM_FETCH_ALLOW"] = previous
        server.shutdown()
        server.server_close()
    for r in summary["results"]:
        refs = ", ".join(r.get("udm_refs") or [])
        ws.say(
            f"   {r['status']:<7} {r['id']:<24} {r['duration_ms']:>6.0f} ms  claims {refs}  {r.get('reason') or ''}"
        )
    ws.say(
        f"   run {summary['run_id']}: {summary['counts']}; recorded {summary['recorded']} rows in the index"
    )
    latest = last_verified(ws.settings, "COMP-001")
    if latest:
        ws.say(
            f"   COMP-001 last verified {latest[0]['verified_at']} -> {latest[0]['status']} ({latest[0]['check_id']})"
        )
    from udm.index import check_links

    # Internal links only: the demo is offline, and the sample's external hosts are fictional.
    report = check_links(ws.settings, external=False)
    broken = [r for r in report.results if r.status == "broken"]
    ws.say(f"   udm links --no-external: {len(report.results)} internal links and anchors, {report.counts}")
    for r in broken[:5]:
        ws.say(f"     broken {r.file}:{r.line} {r.target}: {r.reason}")
    if not summary["results"]:
        raise RuntimeError("the sample UDM has no ```verify blocks")
    if summary["counts"]["FAIL"]:
        raise RuntimeError(f"{summary['counts']['FAIL']} inline check(s) failed against the sample site")


def register(app: typer.Typer) -> None:
    """Add verify, verified, links and the browser group."""
    # The help is the docstring's first line: the rest of it is for readers of the code.
    app.command("verify", help=(verify.__doc__ or "").split("\n", 1)[0])(verify)
    app.command("verified")(verified)
    app.command("links")(links)
    app.add_typer(browser_app, name="browser")
