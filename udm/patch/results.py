"""The report of a patch, revert or fmt: per-operation and per-file results, diff, and error statuses."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from udm.errors import (
    AmbiguousTargetError,
    ConflictError,
    InvalidPathError,
    LockTimeoutError,
    PatchError,
    PathOutsideError,
    TargetError,
    TransactionError,
    UdmError,
)
from udm.patch.apply import OpReport
from udm.patch.splice import changed_line_count, unified_diff
from udm.patch.validate import ValidationFailedError

__all__ = [
    "FileResult",
    "OperationResult",
    "PatchResult",
    "Status",
    "file_results",
    "operation_results",
    "result_for_error",
]

Status = Literal["committed", "planned", "unchanged", "conflict", "invalid", "error", "lock_timeout"]


class OperationResult(BaseModel):
    """What one operation did."""

    index: int = Field(description="Position in the patch (0-based).")
    op: str = Field(description="The operation's name.")
    file: str = Field(description="The file it edits.")
    status: Literal["applied", "unchanged", "error", "not_run"] = Field(description="Its outcome.")
    target: str = Field(default="", description="The section, block, key or lines it resolved to.")
    message: str = Field(default="", description="Why it failed, or a note.")
    added: int = Field(default=0, description="Lines it added.")
    removed: int = Field(default=0, description="Lines it removed.")


class FileResult(BaseModel):
    """One file the patch changes."""

    path: str = Field(description="Relative to the UDM root.")
    action: Literal["modified", "created", "deleted"] = Field(description="What happens to it.")
    added: int = Field(description="Lines added.")
    removed: int = Field(description="Lines removed.")


class PatchResult(BaseModel):
    """The transaction report of one patch (or revert): per-operation status, files, diff, patch id."""

    patch_id: str = Field(description="The patch's id (its record is <state>/patches/<id>.json).")
    status: Status = Field(
        description="committed, planned (dry run), unchanged, conflict, invalid, error or lock_timeout."
    )
    committed: bool = Field(default=False, description="Whether files on disk changed.")
    description: str = Field(default="", description="The patch's description.")
    txid: str | None = Field(default=None, description="The transaction id of the commit.")
    destructive: bool = Field(default=False, description="Whether the patch deletes sections or files.")
    operations: list[OperationResult] = Field(default_factory=list, description="One entry per operation.")
    files: list[FileResult] = Field(default_factory=list, description="Files changed (or that would change).")
    diff: str = Field(default="", description="Unified diff of every file.")
    error: str | None = Field(default=None, description="What went wrong, when status is not a success.")
    problems: list[str] = Field(default_factory=list, description="Every validation finding or candidate.")
    recovered: list[str] = Field(
        default_factory=list, description="Interrupted transactions recovered first."
    )
    planned_patch: dict[str, Any] | None = Field(
        default=None, description="The patch with each operation's precondition hash (`expect`) filled in."
    )
    git: dict[str, Any] | None = Field(
        default=None,
        description="The git commit made for it (commit, branch, files, or error) when the manual is in a "
        "git work tree.",
    )

    @property
    def ok(self) -> bool:
        """True for committed, planned and unchanged."""
        return self.status in ("committed", "planned", "unchanged")


def operation_results(reports: list[OpReport]) -> list[OperationResult]:
    """The per-operation reports as published results (their precondition hashes left out)."""
    return [OperationResult(**{k: v for k, v in r.as_dict().items() if k != "expect"}) for r in reports]


def file_results(changed: dict[str, tuple[str | None, str | None]]) -> tuple[list[FileResult], str]:
    """Per changed file, what happens to it and its line counts; and the unified diff of them all."""
    files: list[FileResult] = []
    diffs: list[str] = []
    for path, (before, after) in sorted(changed.items()):
        added, removed = changed_line_count(before, after)
        action: Literal["modified", "created", "deleted"] = (
            "created" if before is None else "deleted" if after is None else "modified"
        )
        files.append(FileResult(path=path, action=action, added=added, removed=removed))
        diffs.append(unified_diff(path, before, after))
    return files, "".join(diffs)


def result_for_error(
    patch_id: str,
    description: str,
    destructive: bool,
    exc: UdmError | OSError,
    reports: list[OpReport],
    recovered: list[str],
) -> PatchResult:
    """The report of a patch that failed: the error as a status (conflict, invalid, lock_timeout or error)."""
    if isinstance(exc, OSError):
        # The transaction layer turns its own disk errors into statuses; this is anything else (the
        # state folder unusable, say): nothing was committed, and the person needs the OS's reason.
        where = f" ({exc.filename})" if exc.filename else ""
        exc = TransactionError(f"disk error, nothing changed: {exc.strerror or exc}{where}")
    status: Status = "error"
    problems: list[str] = []
    if isinstance(exc, ConflictError):
        status = "conflict"
    elif isinstance(exc, LockTimeoutError):
        status = "lock_timeout"
    elif isinstance(exc, ValidationFailedError):
        status, problems = "invalid", exc.problems
        if exc.overridable:
            exc = ValidationFailedError(
                [*exc.problems, "only links, anchors or IDs: an override (who and why) may apply it"],
                overridable=True,
            )
    elif isinstance(exc, PatchError | TargetError | PathOutsideError | InvalidPathError):
        # A path that leaves the root (or can never exist) is a bad instruction, not a failed commit.
        status = "invalid"
        if isinstance(exc, AmbiguousTargetError):
            problems = list(exc.candidates)
    return PatchResult(
        patch_id=patch_id,
        status=status,
        description=description,
        destructive=destructive,
        operations=operation_results(reports),
        error=str(exc),
        problems=problems,
        recovered=recovered,
    )
