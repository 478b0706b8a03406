"""`udm patch ...`, `udm recover`, `udm fmt` and `udm run update`: patches from the command line.

Everything but `udm run update` works without Prefect: the engine applies the patch as one
transaction directly. `udm run update` sends the same patch through the Prefect flow (diff artifact,
approval, re-index).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from flows.cli import emit_json, fail, settings
from tasks.base import ApprovalRequest, ApprovalUnavailableError, Permission, cli_approver, needs_approval
from udm.errors import UdmError
from udm.patch import (
    Override,
    PatchResult,
    apply_patch,
    format_files,
    list_records,
    load_patch,
    load_record,
    patch_json_schema,
    recover_root,
    revert_patch,
)

__all__ = ["SAMPLE_PATCH", "register", "step_patch_check_apply"]

patch_app = typer.Typer(help="Check, apply, list, show and revert patches.", no_args_is_help=True)


def _print_result(result: PatchResult, as_json: bool, show_diff: bool = True) -> None:
    if as_json:
        emit_json(result)
        return
    for line in result.recovered:
        typer.echo(f"recovered: {line}")
    head = f"patch {result.patch_id}: {result.status}"
    if result.txid:
        head += f" (transaction {result.txid})"
    typer.echo(head)
    for op in result.operations:
        mark = {"applied": "ok", "unchanged": "==", "error": "!!", "not_run": ".."}[op.status]
        detail = op.target or op.message
        counts = f" +{op.added} -{op.removed}" if op.status == "applied" else ""
        typer.echo(f"  [{mark}] {op.index}: {op.op} {op.file}{counts}  {detail}")
    for f in result.files:
        typer.echo(f"  {f.action:<8} {f.path} (+{f.added} -{f.removed})")
    if result.git:
        if result.git.get("commit"):
            typer.echo(
                f"git commit {result.git['commit'][:12]} on {result.git.get('branch') or '(detached)'}"
            )
        else:
            typer.echo(f"warning: committed to disk, but not to git: {result.git.get('error')}", err=True)
    if result.error:
        typer.echo(f"error: {result.error}", err=True)
    for problem in result.problems:
        typer.echo(f"  - {problem}", err=True)
    if show_diff and result.diff:
        typer.echo("")
        typer.echo(result.diff, nl=False)


def _load(file: Path) -> Any:
    try:
        return load_patch(file)
    except UdmError as exc:
        raise fail(str(exc)) from None


def _approve(summary: str, destructive: bool, yes: bool) -> None:
    s = settings()
    permission = Permission.DESTRUCTIVE if destructive else Permission.MODERATE
    if not needs_approval(s.approval_policy, permission):
        return
    request = ApprovalRequest(tool="udm patch", permission=permission, summary=summary, input_digest="-")
    try:
        approved = cli_approver(yes)(request)
    except ApprovalUnavailableError as exc:
        raise fail(str(exc)) from None
    if not approved:
        raise fail("not approved; nothing changed")


@patch_app.command("check")
def check(
    file: Path = typer.Argument(..., help="The patch file (YAML or JSON)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Validate a patch and show its diff without changing anything (exit 1 on any error or conflict)."""
    result = apply_patch(_load(file), settings(), dry_run=True)
    _print_result(result, as_json)
    if not result.ok:
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
    patch = _load(file)
    if (override_by is None) != (override_reason is None):
        raise fail("--override-by and --override-reason go together (who forces the patch, and why)")
    if override_by is not None and override_reason is not None:
        if not override_by.strip() or not override_reason.strip():
            raise fail("--override-by and --override-reason must not be empty")
        patch = patch.model_copy(update={"override": Override(by=override_by, reason=override_reason)})
    s = settings()
    plan = apply_patch(patch, s, dry_run=True)
    if not plan.ok:
        _print_result(plan, as_json)
        raise typer.Exit(1)
    if plan.files:
        # An override is asked for as a destructive change is: it lets something that resolved break.
        _approve(
            f"apply patch {patch.id}: {patch.description}\n\n{plan.diff}",
            patch.destructive or patch.override is not None,
            yes,
        )
    # Commit exactly what was reviewed: the planned preconditions make any change since a conflict.
    planned = type(patch).model_validate(plan.planned_patch)
    result = apply_patch(planned, s)
    _print_result(result, as_json)
    if not result.ok:
        raise typer.Exit(1)


@patch_app.command("list")
def list_cmd(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List applied patches, oldest first."""
    records = list_records(settings())
    if as_json:
        emit_json(records)
        return
    if not records:
        typer.echo("no patches applied yet")
    for r in records:
        reverted = f"  (reverted by {r['reverted_by']})" if r["reverted_by"] else ""
        typer.echo(
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
    typer.echo(f"id:          {record['id']} [{record.get('kind', 'patch')}]")
    typer.echo(f"description: {record.get('description', '')}")
    typer.echo(f"author:      {record.get('author') or '-'}   source: {record.get('source') or '-'}")
    typer.echo(f"applied at:  {record.get('applied_at')}")
    review = record.get("review") or {}
    if review:
        who = review.get("reviewer") or "-"
        when = review.get("decided_at") or "-"
        typer.echo(
            f"review:      {review.get('decision')} by {who} at {when} (policy {review.get('policy')})"
        )
        if review.get("comment"):
            typer.echo(f"comment:     {review['comment']}")
        if review.get("flow_run_url") or review.get("flow_run_id"):
            typer.echo(f"flow run:    {review.get('flow_run_url') or review.get('flow_run_id')}")
    if record.get("reverted_by"):
        typer.echo(f"reverted by: {record['reverted_by']}")
    for f in record.get("files", []):
        typer.echo(f"  {f['action']:<8} {f['path']} (+{f['added']} -{f['removed']})")
    typer.echo("")
    typer.echo(record.get("diff", ""), nl=False)


@patch_app.command("revert")
def revert(
    patch_id: str = typer.Argument(..., help="The patch id."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Approve without asking."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Undo an applied patch (a new transaction; refused with a conflict if its lines changed since)."""
    _approve(f"revert patch {patch_id}", False, yes)
    result = revert_patch(patch_id, settings())
    _print_result(result, as_json)
    if not result.ok:
        raise typer.Exit(1)


@patch_app.command("schema")
def schema() -> None:
    """Print the JSON Schema of patch files."""
    typer.echo(json.dumps(patch_json_schema(), indent=2))


def recover_cmd() -> None:
    """Finish or undo any interrupted patch transaction."""
    try:
        done = recover_root(settings())
    except UdmError as exc:
        raise fail(str(exc)) from None
    typer.echo("\n".join(done) if done else "nothing to recover")
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
    s = settings()
    plan = format_files(s, paths, dry_run=True)
    if check_only or not plan.ok:
        _print_result(plan, as_json)
        raise typer.Exit(1 if (plan.files or not plan.ok) else 0)
    if plan.files:
        _approve(f"reformat {len(plan.files)} file(s) with mdformat", False, yes)
    result = format_files(s, paths)
    _print_result(result, as_json, show_diff=False)
    if not result.ok:
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
        typer.echo(f"update flow: {result.status} ({state.name})  {result.message}")
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
    """Demo: check the sample patch (diff), apply it as one transaction, show its record, then revert it."""
    patch = load_patch(SAMPLE_PATCH)
    plan = apply_patch(patch, ws.settings, dry_run=True)
    ws.say(f"   udm patch check {SAMPLE_PATCH.name} -> {plan.status}, {len(plan.files)} files")
    for line in plan.diff.splitlines():
        ws.say(f"     {line}")
    if not plan.ok:
        raise RuntimeError(f"the sample patch does not check: {plan.error}")
    result = apply_patch(type(patch).model_validate(plan.planned_patch), ws.settings)
    ops = ", ".join(f"{o.op}={o.status}" for o in result.operations)
    ws.say(f"   udm patch apply -> {result.status} (transaction {result.txid}); {ops}")
    if not result.committed:
        raise RuntimeError(f"the sample patch did not commit: {result.error}")
    ws.shared["patch_id"] = result.patch_id
    again = apply_patch(patch, ws.settings)
    ws.say(f"   apply again -> {again.status}: {again.error}")
    undo = revert_patch(result.patch_id, ws.settings)
    ws.say(f"   udm patch revert {result.patch_id} -> {undo.status} ({len(undo.files)} files restored)")
    redo = apply_patch(
        type(patch).model_validate({**(plan.planned_patch or {}), "id": "mark-t001-done-again"}), ws.settings
    )
    ws.say(f"   apply once more as mark-t001-done-again -> {redo.status} (left applied for the next steps)")
