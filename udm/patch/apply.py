"""Pure application of patch operations to an in-memory view of the UDM's files, with preconditions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from udm.errors import AmbiguousTargetError, ConflictError, PatchError, UdmError
from udm.patch import format as P
from udm.patch.ops import OPERATIONS
from udm.patch.splice import changed_line_count
from udm.patch.workspace import Workspace

__all__ = ["OpReport", "apply_operations"]


@dataclass
class OpReport:
    """What one operation did (or why it failed)."""

    index: int
    op: str
    file: str
    status: Literal["applied", "unchanged", "error", "not_run"] = "not_run"
    target: str = ""
    message: str = ""
    expect: str | None = None
    added: int = 0
    removed: int = 0

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _requalify(exc: UdmError, prefix: str) -> UdmError:
    message = f"{prefix}: {exc}"
    if isinstance(exc, AmbiguousTargetError):
        return AmbiguousTargetError(message, exc.candidates)
    try:
        return type(exc)(message)
    except TypeError:
        return PatchError(message)


def apply_operations(
    patch: P.Patch, ws: Workspace, *, check_expect: bool = True, reports: list[OpReport] | None = None
) -> tuple[list[OpReport], list[str | None]]:
    """Apply every operation in order to `ws`; returns the reports and each target's precondition hash.

    With `check_expect`, an operation whose `expect` differs from its target's hash raises ConflictError
    naming the target. Any failure raises (an UdmError prefixed with `operations[i] (op)`), after
    marking that operation's report as the error; the workspace is then partly edited and must be
    thrown away. Pass `reports` to keep the per-operation reports of a failed run.
    """
    if reports is None:
        reports = []
    reports[:] = [OpReport(index=i, op=op.op, file=op.file) for i, op in enumerate(patch.operations)]
    hashes: list[str | None] = [None] * len(patch.operations)
    for i, op in enumerate(patch.operations):
        report = reports[i]

        def expect_check(current: str, target: str, i: int = i, op: Any = op) -> None:
            """Record the target's hash; with check_expect, a different planned hash is a conflict."""
            hashes[i] = current
            reports[i].expect = current
            if check_expect and op.expect is not None and op.expect != current:
                raise ConflictError(
                    f"{target} of {op.file} changed since the patch was planned "
                    f"(expected {op.expect[:19]}, found {current[:19]})"
                )

        rule = OPERATIONS[op.op]
        before = ws.read(op.file) if not rule.new_file else None
        try:
            target = rule.run(ws, op, expect_check)
        except UdmError as exc:
            report.status = "error"
            report.message = str(exc)
            raise _requalify(exc, f"operations[{i}] ({op.op}) on {op.file}") from exc
        after = ws.read(op.file)
        report.target = target
        if before == after and not rule.new_file:
            report.status = "unchanged"
            report.message = "already as asked; nothing to change"
        else:
            report.status = "applied"
            report.added, report.removed = changed_line_count(before, after)
    return reports, hashes
