"""Patches end to end: plan (dry run) or apply one as a single transaction, with its record and inverse.

The other ends live beside it: `revert` (undo an applied patch), `reformat` (whole-file mdformat),
`store` (records), `writer` (lock, recovery, commit), `results` (the report).
"""

from __future__ import annotations

from typing import Any

from udm.config import Settings
from udm.errors import PatchError, UdmError
from udm.patch.apply import OpReport, apply_operations
from udm.patch.format import Patch
from udm.patch.results import PatchResult, file_results, operation_results, result_for_error
from udm.patch.store import new_record, record_path
from udm.patch.validate import validate_workspace
from udm.patch.workspace import Workspace
from udm.patch.writer import (
    commit_changes,
    git_target,
    interrupted,
    manual_workspace,
    recover_interrupted,
    writer_or_reader,
)
from udm.site import settings_site as _site

__all__ = ["apply_patch"]


def apply_patch(
    patch: Patch,
    settings: Settings,
    *,
    dry_run: bool = False,
    check_expect: bool = True,
    review: dict[str, Any] | None = None,
) -> PatchResult:
    """Plan (dry run) or apply a patch as one transaction; never raises for expected failures.

    `review` (who approved, when, their comment, the flow run) is stored in the patch record."""
    reports: list[OpReport] = []
    recovered: list[str] = []
    _warm_up(patch)
    try:
        with writer_or_reader(settings, dry_run):
            recovered = recover_interrupted(settings) if not dry_run or interrupted(settings) else []
            ws = manual_workspace(settings)
            if record_path(settings, patch.id).exists():
                raise PatchError(f"patch {patch.id} was already applied (see `udm patch show {patch.id}`)")
            reports, hashes = apply_operations(patch, ws, check_expect=check_expect, reports=reports)
            overridden = validate_workspace(ws, site=_site(settings), override=patch.override is not None)
            result = _planned_result(patch, ws, reports, hashes, recovered, overridden, dry_run)
            changed = ws.changed()
            if dry_run:
                # The plan names a dirty work tree too, before anyone reviews it.
                git_target(settings, ws, changed)
            if dry_run or not changed:
                return result
            record = new_record(
                "patch",
                patch.id,
                patch.description,
                changed,
                result.files,
                result.diff,
                author=patch.author,
                source=patch.source,
                patch=result.planned_patch,
                operations=[o.model_dump() for o in result.operations],
            )
            record["review"] = review
            if patch.override is not None:
                # Who forced it and why, with what the validator would have refused.
                record["override"] = {**patch.override.model_dump(), "problems": overridden}
            txid, git = commit_changes(
                settings, ws, changed, {record_path(settings, patch.id): record}, f"patch {patch.id}"
            )
            return result.model_copy(
                update={"status": "committed", "committed": True, "txid": txid, "git": git}
            )
    except (UdmError, OSError) as exc:
        reports = reports or [
            OpReport(index=i, op=op.op, file=op.file) for i, op in enumerate(patch.operations)
        ]
        return result_for_error(patch.id, patch.description, patch.destructive, exc, reports, recovered)


def _planned_result(
    patch: Patch,
    ws: Workspace,
    reports: list[OpReport],
    hashes: list[str | None],
    recovered: list[str],
    overridden: list[str],
    dry_run: bool,
) -> PatchResult:
    """The report of the applied operations, with the patch as planned (each `expect` filled in)."""
    planned = patch.model_copy(deep=True)
    for op, h in zip(planned.operations, hashes, strict=True):
        if op.expect is None:
            op.expect = h
    files, diff = file_results(ws.changed())
    return PatchResult(
        patch_id=patch.id,
        status="planned" if dry_run else "unchanged",
        description=patch.description,
        destructive=patch.destructive,
        operations=operation_results(reports),
        files=files,
        diff=diff,
        recovered=recovered,
        problems=overridden,
        planned_patch=planned.model_dump(mode="json", exclude_unset=True),
    )


def _warm_up(patch: Patch) -> None:
    # Import mdformat and its plugins before taking the lock: the first import costs ~0.3 s.
    if any(getattr(op, "format", False) for op in patch.operations):
        from udm.patch.splice import format_markdown_fragment

        format_markdown_fragment("x")
