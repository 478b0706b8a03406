"""`udm patch ...`, `udm recover`, `udm fmt` and `udm run update`: patches from the command line.

Every command that changes the manual (`patch apply`, `patch revert`, `fmt`) and the plans they show
(`patch check`, `fmt --check`) are calls of udmUpdaterTool through `call_tool`, as MCP and the flows
make them: the tool's input model, the approval policy, the call log and the envelope are theirs, and
the exit code follows the envelope. This module only reads the patch file, shows the plan's diff in
the approval prompt and renders the engine's report. `udm run update` sends the same patch through
the Prefect flow (diff artifact, approval, re-index); none of the others imports Prefect.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from flows.cli import emit_json, fail, settings
from flows.say import say
from tasks.base import (
    ApprovalRequest,
    Approver,
    ToolContext,
    always_approve,
    call_tool,
    cli_approver,
    plans_only,
)
from udm.errors import UdmError
from udm.patch import (
    Override,
    Patch,
    PatchResult,
    list_records,
    load_patch,
    load_record,
    patch_json_schema,
    recover_root,
)

__all__ = ["SAMPLE_PATCH", "register", "step_patch_check_apply"]

patch_app = typer.Typer(help="Check, apply, list, show and revert patches.", no_args_is_help=True)


def _print_result(result: PatchResult, as_json: bool, show_diff: bool = True) -> None:
    if as_json:
        emit_json(result)
        return
    for line in result.recovered:
        say(f"recovered: {line}")
    head = f"patch {result.patch_id}: {result.status}"
    if result.txid:
        head += f" (transaction {result.txid})"
    say(head)
    for op in result.operations:
        mark = {"applied": "ok", "unchanged": "==", "error": "!!", "not_run": ".."}[op.status]
        detail = op.target or op.message
        counts = f" +{op.added} -{op.removed}" if op.status == "applied" else ""
        say(f"  [{mark}] {op.index}: {op.op} {op.file}{counts}  {detail}")
    for f in result.files:
        say(f"  {f.action:<8} {f.path} (+{f.added} -{f.removed})")
    _print_git(result.git)
    if result.error:
        say(f"error: {result.error}", err=True)
    for problem in result.problems:
        say(f"  - {problem}", err=True)
    if show_diff and result.diff:
        say("")
        say(result.diff, nl=False)


def _print_git(git: dict[str, Any] | None) -> None:
    if not git:
        return
    if git.get("commit"):
        say(f"git commit {git['commit'][:12]} on {git.get('branch') or '(detached)'}")
    else:
        say(f"warning: committed to disk, but not to git: {git.get('error')}", err=True)


def _load(file: Path) -> Patch:
    try:
        return load_patch(file)
    except UdmError as exc:
        raise fail(str(exc)) from None


@dataclass
class _Outcome:
    """What one udmUpdaterTool call gave back: the engine's report, or why there is none."""

    report: PatchResult | None
    success: bool
    error: str | None
    denied: bool


def _update(raw: dict[str, Any], ctx: ToolContext) -> _Outcome:
    """Call udmUpdaterTool with `raw` through the tool contract (approval, call log, envelope)."""
    # Imported here: every `udm` command loads this module, few of them update the manual.
    from tasks.udm_updater import UdmUpdaterOutput, UdmUpdaterTool

    result = call_tool(UdmUpdaterTool(), raw, ctx)
    out = result.output
    report = out.report if isinstance(out, UdmUpdaterOutput) else None
    error = out.errorDetails if isinstance(out, UdmUpdaterOutput) and report is None else None
    return _Outcome(
        report=report,
        success=result.envelope.success,
        error=error or result.envelope.error,
        denied=result.decision == "denied",
    )


def _showing(yes: bool, shown: str) -> Approver:
    """The terminal's approver, with what the call would change (the plan's diff) under the request."""
    ask = cli_approver(yes)

    def approve(request: ApprovalRequest) -> bool:
        return ask(request.model_copy(update={"summary": f"{request.summary}\n\n{shown}".rstrip()}))

    return approve


def _call(raw: dict[str, Any], approver: Approver) -> tuple[PatchResult, bool]:
    """The report and success of one updater call from the CLI; a refused call exits with its reason."""
    done = _update(raw, ToolContext(settings=settings(), approver=approver))
    if done.report is None:
        raise fail("not approved; nothing changed" if done.denied else done.error or "the update failed")
    return done.report, done.success


def _document(patch: Patch) -> dict[str, Any]:
    """A patch as the updater's `patch` input: the file's fields, as they were given."""
    return patch.model_dump(mode="json", exclude_unset=True)


def _with_override(patch: Patch, by: str | None, reason: str | None) -> Patch:
    if (by is None) != (reason is None):
        raise fail("--override-by and --override-reason go together (who forces the patch, and why)")
    if by is None or reason is None:
        return patch
    if not by.strip() or not reason.strip():
        raise fail("--override-by and --override-reason must not be empty")
    return patch.model_copy(update={"override": Override(by=by, reason=reason)})


@patch_app.command("check")
def check(
    file: Path = typer.Argument(..., help="The patch file (YAML or JSON)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Approve the dry run without asking (ask_always)."),
) -> None:
    """Validate a patch and show its diff without changing anything (exit 1 on any error or conflict)."""
    plan, ok = _call({"patch": _document(_load(file)), "dry_run": True}, cli_approver(yes))
    _print_result(plan, as_json)
    if not ok:
        raise typer.Exit(1)


@patch_app.command("apply")
def apply(
    file: Path = typer.Argument(..., help="The patch file (YAML or JSON)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Approve without asking."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    override_by: str | None = typer.Option(
        None, "--override-by", help="Apply although links/anchors/IDs would break: who forces it."
    ),
    override_reason: str | None = typer.Option(
        None, "--override-reason", help="Why (with --override-by; both go into the patch record)."
    ),
) -> None:
    """Apply a patch as one transaction (all files or none), directly, without Prefect."""
    patch = _with_override(_load(file), override_by, override_reason)
    # The plan is shown under the commit's question, so it is not asked about on its own (ask_always).
    plan, ok = _call({"patch": _document(patch), "dry_run": True}, plans_only)
    if not ok:
        _print_result(plan, as_json)
        raise typer.Exit(1)
    # Commit exactly what was reviewed: the planned preconditions make any change since a conflict.
    # A plan that changes nothing has nothing to review (the tool's own policy still decides the rest).
    approver = _showing(yes, plan.diff) if plan.files else always_approve
    result, ok = _call({"patch": plan.planned_patch}, approver)
    _print_result(result, as_json)
    if not ok:
        raise typer.Exit(1)


@patch_app.command("list")
def list_cmd(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List applied patches, oldest first."""
    skipped: list[str] = []
    records = list_records(settings(), skipped)
    for why in skipped:
        # On stderr: stdout stays the list (or the JSON) that scripts read.
        say(f"warning: skipped {why}", err=True)
    if as_json:
        emit_json(records)
        return
    if not records:
        say("no patches applied yet")
    for r in records:
        reverted = f"  (reverted by {r['reverted_by']})" if r["reverted_by"] else ""
        say(
            f"{r['applied_at']}  {r['id']}  [{r['kind']}] {r['description']}  {', '.join(r['files'])}{reverted}"
        )


@patch_app.command("show")
def show(
    patch_id: str = typer.Argument(..., help="The patch id."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole record as JSON."),
) -> None:
    """Show an applied patch: what, who, files, diff."""
    try:
        record = load_record(settings(), patch_id)
    except UdmError as exc:
        raise fail(str(exc)) from None
    if as_json:
        emit_json(record)
        return
    say(f"id:          {record['id']} [{record.get('kind', 'patch')}]")
    say(f"description: {record.get('description', '')}")
    say(f"author:      {record.get('author') or '-'}   source: {record.get('source') or '-'}")
    say(f"applied at:  {record.get('applied_at')}")
    review = record.get("review") or {}
    if review:
        who = review.get("reviewer") or "-"
        when = review.get("decided_at") or "-"
        say(f"review:      {review.get('decision')} by {who} at {when} (policy {review.get('policy')})")
        if review.get("comment"):
            say(f"comment:     {review['comment']}")
        if review.get("flow_run_url") or review.get("flow_run_id"):
            say(f"flow run:    {review.get('flow_run_url') or review.get('flow_run_id')}")
    if record.get("reverted_by"):
        say(f"reverted by: {record['reverted_by']}")
    for f in record.get("files", []):
        say(f"  {f['action']:<8} {f['path']} (+{f['added']} -{f['removed']})")
    say("")
    say(record.get("diff", ""), nl=False)


def _undoes(patch_id: str) -> str:
    """What reverting the patch undoes (its recorded diff), for the approval request; '' when unknown."""
    try:
        record: Any = load_record(settings(), patch_id)
    except UdmError:
        return ""  # the tool words an unknown or unreadable record
    diff = record.get("diff") if isinstance(record, dict) else None
    return f"it undoes:\n{diff}" if isinstance(diff, str) and diff else ""


@patch_app.command("revert")
def revert(
    patch_id: str = typer.Argument(..., help="The patch id."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Approve without asking."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Undo an applied patch (a new transaction; refused with a conflict if its lines changed since)."""
    result, ok = _call({"revert_patch_id": patch_id}, _showing(yes, _undoes(patch_id)))
    _print_result(result, as_json)
    if not ok:
        raise typer.Exit(1)


@patch_app.command("schema")
def schema() -> None:
    """Print the JSON Schema of patch files."""
    say(json.dumps(patch_json_schema(), indent=2))


def recover_cmd() -> None:
    """Finish or undo any interrupted patch transaction."""
    try:
        done = recover_root(settings())
    except UdmError as exc:
        raise fail(str(exc)) from None
    say("\n".join(done) if done else "nothing to recover")
    if any(line.startswith("refused ") for line in done):
        # A refused journal is a transaction nobody finished: a script or CI must not read "ok".
        raise typer.Exit(1)


def fmt_cmd(
    paths: list[str] | None = typer.Argument(None, help="Files or folders inside the UDM (default: all)."),
    check_only: bool = typer.Option(False, "--check", help="Only show what would change (exit 1 if any)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Approve without asking."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Reformat whole Markdown files with mdformat (GFM), as one revertible transaction."""
    raw: dict[str, Any] = {"format_paths": list(paths or [])}
    # `fmt` shows its plan under the commit's question; `fmt --check` is a dry run asked on its own.
    plan, ok = _call({**raw, "dry_run": True}, cli_approver(yes) if check_only else plans_only)
    if check_only or not ok:
        _print_result(plan, as_json)
        raise typer.Exit(1 if (plan.files or not ok) else 0)
    shown = f"reformat {len(plan.files)} file(s): " + ", ".join(f.path for f in plan.files)
    result, ok = _call(raw, _showing(yes, shown) if plan.files else always_approve)
    _print_result(result, as_json, show_diff=False)
    if not ok:
        raise typer.Exit(1)


def run_update_cmd(
    file: Path = typer.Argument(..., help="The patch file (YAML or JSON)."),
    timeout_s: int = typer.Option(3600, "--timeout", help="How long to wait for a reviewer, seconds."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Apply a patch through the Prefect flow: diff artifact, approval per policy, commit, re-index."""
    patch = _load(file)
    from flows.udm_update import SETTINGS, UpdateOptions, state_result, udm_update_flow

    s = settings()
    state = udm_update_flow(
        patch=patch,
        options=UpdateOptions(approval_timeout_s=timeout_s),
        settings_overrides=SETTINGS.dump(s),
        return_state=True,
    )
    result = state_result(state)
    if as_json:
        emit_json(result)
    else:
        say(f"update flow: {result.status} ({state.name})  {result.message}")
        if result.patch:
            # The plan's own status ("planned") would read as the outcome: show only what it touched.
            _print_result(result.patch.model_copy(update={"status": result.status}), False, show_diff=False)
    if result.status != "committed" and result.status != "unchanged":
        raise typer.Exit(1)


def _run_group(app: typer.Typer) -> typer.Typer:
    # Several areas add `udm run <flow>` commands; share one group.
    for group in app.registered_groups:
        if group.name == "run" and group.typer_instance is not None:
            return group.typer_instance
    run_app = typer.Typer(help="Run a pipeline through Prefect.", no_args_is_help=True)
    app.add_typer(run_app, name="run")
    return run_app


def register(app: typer.Typer) -> None:
    """Add `patch`, `recover`, `fmt` and `run update`."""
    app.add_typer(patch_app, name="patch")
    app.command("recover")(recover_cmd)
    app.command("fmt")(fmt_cmd)
    _run_group(app).command("update")(run_update_cmd)


SAMPLE_PATCH = Path(__file__).resolve().parent.parent / "examples" / "patches" / "mark-t001-done.yaml"


def step_patch_check_apply(ws: Any) -> None:
    """Demo: check the sample patch (diff), apply it as one transaction, show its record, then revert it.

    Each step is a udmUpdaterTool call, as `udm patch check|apply|revert` make them."""
    ctx = ToolContext(settings=ws.settings, approver=always_approve)

    def update(raw: dict[str, Any]) -> PatchResult:
        done = _update(raw, ctx)
        if done.report is None:
            raise RuntimeError(f"udmUpdaterTool refused the demo's call: {done.error}")
        return done.report

    document = _document(load_patch(SAMPLE_PATCH))
    plan = update({"patch": document, "dry_run": True})
    ws.say(f"   udm patch check {SAMPLE_PATCH.name} -> {plan.status}, {len(plan.files)} files")
    for line in plan.diff.splitlines():
        ws.say(f"     {line}")
    if not plan.ok:
        raise RuntimeError(f"the sample patch does not check: {plan.error}")
    result = update({"patch": plan.planned_patch})
    ops = ", ".join(f"{o.op}={o.status}" for o in result.operations)
    ws.say(f"   udm patch apply -> {result.status} (transaction {result.txid}); {ops}")
    if not result.committed:
        raise RuntimeError(f"the sample patch did not commit: {result.error}")
    ws.shared["patch_id"] = result.patch_id
    again = update({"patch": document})
    ws.say(f"   apply again -> {again.status}: {again.error}")
    undo = update({"revert_patch_id": result.patch_id})
    ws.say(f"   udm patch revert {result.patch_id} -> {undo.status} ({len(undo.files)} files restored)")
    redo = update({"patch": {**(plan.planned_patch or {}), "id": "mark-t001-done-again"}})
    ws.say(f"   apply once more as mark-t001-done-again -> {redo.status} (left applied for the next steps)")
