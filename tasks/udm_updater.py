"""udmUpdaterTool: a list of UDM update instructions -> one patch -> one all-or-nothing transaction -> report."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar

from pydantic import AliasChoices, BaseModel, Field, PrivateAttr, model_validator

from tasks.base import Permission, Tool, ToolContext, ToolInput, log_call
from udm.config import Settings
from udm.errors import UdmError
from udm.patch import (
    DESTRUCTIVE_OPS,
    FileResult,
    OperationResult,
    OperationType,
    Override,
    Patch,
    PatchResult,
    apply_patch,
    format_files,
    parse_patch,
    revert_patch,
)

__all__ = [
    "UdmUpdateInstruction",
    "UdmUpdaterInput",
    "UdmUpdaterOutput",
    "UdmUpdaterStatus",
    "UdmUpdaterTool",
    "log_revert",
]


class UdmUpdateInstruction(ToolInput):
    """One update: which file and section, which operation, with what content or key/value, and why."""

    target_file: str = Field(
        min_length=1,
        validation_alias=AliasChoices("target_file", "file", "udm_filepath"),
        description="File relative to the UDM root, e.g. '05-roadmap.md'.",
    )
    operation: OperationType = Field(
        validation_alias=AliasChoices("operation", "op", "action"),
        description="The operation to apply.",
    )
    section: str | None = Field(
        default=None,
        validation_alias=AliasChoices("section", "section_identifier"),
        description="Heading text, heading path 'A > B', anchor or an ID the section defines.",
    )
    content: str | None = Field(
        default=None, description="Markdown (section operations), block or file content."
    )
    key: str | None = Field(default=None, description="Key path for YAML/JSON/front-matter operations.")
    value: Any = Field(
        default=None, description="The value for set_*_key / append_*_item / set_front_matter."
    )
    block: int | str | None = Field(
        default=None, description="Which fenced block of the section: index or its id."
    )
    old: str | None = Field(default=None, description="replace_text: the exact text to find.")
    new: str | None = Field(default=None, description="replace_text: its replacement.")
    count: int | None = Field(
        default=None, ge=1, description="replace_text: expected occurrences (default 1)."
    )
    position: str | None = Field(default=None, description="insert_section/move_section: before or after.")
    level: int | None = Field(default=None, ge=1, le=6, description="Heading level for insert/move.")
    heading: str | None = Field(default=None, description="insert_section: the new heading's text.")
    to: str | None = Field(
        default=None, description="rename_heading/rename_file/move_section: new name or destination."
    )
    rationale: str | None = Field(
        default=None, description="Why this change is made (kept in the patch record)."
    )


class UdmUpdaterInput(ToolInput):
    """The update list and who/why; `dry_run` only plans and shows the diff."""

    # Not required since `patch`, `revert_patch_id` and `format_paths` may replace it (exactly one is
    # given); a default_factory keeps its published schema what it was.
    udm_updates_list: list[UdmUpdateInstruction] = Field(
        default_factory=list, min_length=1, description="The updates, applied in order as one transaction."
    )
    description: str = Field(default="", description="What the whole update does.")
    author: str | None = Field(default=None, description="Who asks for it (a mode or a person).")
    source: str | None = Field(default=None, description="Where it comes from, e.g. a task ID.")
    patch_id: str | None = Field(default=None, description="An id for the patch (generated when absent).")
    dry_run: bool = Field(default=False, description="Plan and diff only; change nothing.")
    override: Override | None = Field(
        default=None,
        description="Apply even though links, anchors or IDs that resolved would break: who forces it and "
        "why (kept in the patch record). Needs the destructive level's approval.",
    )
    patch: dict[str, Any] | None = Field(
        default=None,
        description="Instead of udm_updates_list: a whole patch in the patch file format (`udm patch schema`), "
        "e.g. a plan's patch whose operations carry the precondition hash `expect` they were planned against.",
    )
    revert_patch_id: str | None = Field(
        default=None,
        min_length=1,
        description="Instead of udm_updates_list: undo this applied patch as a new transaction (a conflict, and "
        "no change, when its lines changed since). Not with dry_run. Needs the destructive level's approval.",
    )
    format_paths: list[str] | None = Field(
        default=None,
        description="Instead of udm_updates_list: reformat these Markdown files or folders of the UDM with "
        "mdformat (GFM) as one revertible transaction; an empty list formats every Markdown file.",
    )

    @model_validator(mode="after")
    def _one_request(self) -> UdmUpdaterInput:
        given = [
            name for name in _REQUESTS if name in self.model_fields_set and getattr(self, name) is not None
        ]
        if len(given) != 1:
            also = f" (got {', '.join(given)})" if given else ""
            raise ValueError(f"give exactly one of {', '.join(_REQUESTS[:-1])} or {_REQUESTS[-1]}{also}")
        extra = [name for name in _PATCH_FIELDS if name in self.model_fields_set]
        if given[0] == "patch" and extra:
            raise ValueError(f"{', '.join(extra)} go inside `patch`, not beside it")
        not_here = [*extra, *(["override"] if self.override is not None else [])]
        if given[0] in ("revert_patch_id", "format_paths") and not_here:
            raise ValueError(f"{given[0]} takes no {', '.join(not_here)}")
        if given[0] == "revert_patch_id" and self.dry_run:
            raise ValueError("a revert cannot be a dry run: `udm patch show ID` shows what it would undo")
        return self


_REQUESTS = ("udm_updates_list", "patch", "revert_patch_id", "format_paths")
# What describes a patch built from udm_updates_list; a `patch` document carries its own.
_PATCH_FIELDS = ("description", "author", "source", "patch_id")


class UdmUpdaterStatus(StrEnum):
    """Outcome of the transaction."""

    SUCCESS = "SUCCESS"
    NO_CHANGES = "NO_CHANGES"
    ERROR_INVALID_UPDATE = "ERROR_INVALID_UPDATE"
    ERROR_CONFLICT = "ERROR_CONFLICT"
    ERROR_LOCK_TIMEOUT = "ERROR_LOCK_TIMEOUT"
    ERROR_TRANSACTION = "ERROR_TRANSACTION"


class UdmUpdaterOutput(BaseModel):
    """The transaction report."""

    status: UdmUpdaterStatus = Field(
        description="SUCCESS, NO_CHANGES or what went wrong (then nothing changed)."
    )
    patch_id: str | None = Field(default=None, description="The patch's id; `udm patch show/revert ID`.")
    committed: bool = Field(default=False, description="Whether files on disk changed.")
    dry_run: bool = Field(default=False, description="Whether this was only a plan.")
    operations: list[OperationResult] = Field(default_factory=list, description="Per-operation status.")
    files_changed: list[FileResult] = Field(
        default_factory=list, description="Files changed (or that would change)."
    )
    unified_diff: str = Field(default="", description="The unified diff of the transaction.")
    problems: list[str] = Field(
        default_factory=list, description="Validation findings or candidate sections."
    )
    errorDetails: str | None = Field(default=None, description="What went wrong; null on success.")

    # The engine's whole report (transaction id, git commit, recovered journals, the planned patch):
    # for callers in this process, such as the CLI; not part of the published output.
    _report: PatchResult | None = PrivateAttr(default=None)

    @property
    def report(self) -> PatchResult | None:
        """The engine's transaction report behind this output (None when the input was refused first)."""
        return self._report


_FIELDS = (
    "section",
    "content",
    "key",
    "value",
    "block",
    "old",
    "new",
    "count",
    "position",
    "level",
    "heading",
    "to",
    "rationale",
)


def _to_operation(item: UdmUpdateInstruction) -> dict[str, Any]:
    op: dict[str, Any] = {"op": item.operation, "file": item.target_file}
    for name in _FIELDS:
        value = getattr(item, name)
        if value is not None or (name == "value" and "value" in item.model_fields_set):
            op[name] = value
    return op


_STATUS = {
    "committed": UdmUpdaterStatus.SUCCESS,
    "planned": UdmUpdaterStatus.SUCCESS,
    "unchanged": UdmUpdaterStatus.NO_CHANGES,
    "conflict": UdmUpdaterStatus.ERROR_CONFLICT,
    "invalid": UdmUpdaterStatus.ERROR_INVALID_UPDATE,
    "lock_timeout": UdmUpdaterStatus.ERROR_LOCK_TIMEOUT,
    "error": UdmUpdaterStatus.ERROR_TRANSACTION,
}


class UdmUpdaterTool(Tool[UdmUpdaterInput, UdmUpdaterOutput]):
    """Applies a list of UDM updates as one transaction and reports per operation."""

    name: ClassVar[str] = "udmUpdaterTool"
    description: ClassVar[str] = (
        "Applies a list of UDM update instructions (file, section, operation, content or key/value, rationale) "
        "as one all-or-nothing transaction: sections, fenced YAML/JSON blocks, front matter, text and files. "
        "Returns per-operation status, files changed, the unified diff and the patch id (revertible). A missing "
        "or ambiguous section is an error naming candidates; nothing changes unless everything applies."
    )
    Input: ClassVar[type[BaseModel]] = UdmUpdaterInput
    Output: ClassVar[type[BaseModel]] = UdmUpdaterOutput
    permission: ClassVar[Permission] = Permission.MODERATE
    ok_statuses: ClassVar[frozenset[str]] = frozenset({"SUCCESS", "NO_CHANGES"})

    def permission_for(self, data: UdmUpdaterInput) -> Permission:
        """Deleting sections or files, an override, or a revert is destructive; other updates moderate;
        a dry run safe."""
        if data.dry_run:
            return Permission.SAFE
        if data.revert_patch_id is not None:
            # A revert throws away what the patch wrote (deleting the files it created) and is never
            # refused for the links it breaks: a delete and an override, whatever the patch was.
            return Permission.DESTRUCTIVE
        if data.format_paths is not None:
            return Permission.MODERATE
        if data.patch is None:
            destructive = any(item.operation in DESTRUCTIVE_OPS for item in data.udm_updates_list)
        else:
            patch = _patch_or_error(data)
            # An invalid patch is refused before anything is touched: the tool's own level will do.
            destructive = not isinstance(patch, str) and (patch.destructive or patch.override is not None)
        return Permission.DESTRUCTIVE if destructive or data.override is not None else Permission.MODERATE

    def summarize(self, data: UdmUpdaterInput) -> str:
        """One line for the request, then one per update, for the approval prompt."""
        if data.revert_patch_id is not None:
            return f"{self.name}: revert patch {data.revert_patch_id}"
        if data.format_paths is not None:
            what = ", ".join(data.format_paths) or "every Markdown file"
            return f"{self.name}: reformat {what} with mdformat"
        if data.patch is not None:
            patch = _patch_or_error(data)
            if isinstance(patch, str):
                return f"{self.name}: an invalid patch ({patch})"
            lines = [f"{self.name}: apply patch {patch.id}: {patch.description or 'update the UDM'}"]
            for op in patch.operations:
                target = getattr(op, "section", None) or getattr(op, "key", None) or getattr(op, "to", None)
                lines.append(f"  - {op.op} {op.file} {target or ''}".rstrip())
            return "\n".join(lines)
        lines = [f"{self.name}: {data.description or 'update the UDM'}"]
        for item in data.udm_updates_list:
            lines.append(
                f"  - {item.operation} {item.target_file} {item.section or item.key or item.to or ''}".rstrip()
            )
        return "\n".join(lines)

    def execute(self, data: UdmUpdaterInput, ctx: ToolContext) -> UdmUpdaterOutput:
        """Build the patch (or take the one given), then apply, plan, revert or reformat as one transaction."""
        if data.revert_patch_id is not None:
            return _output(revert_patch(data.revert_patch_id, ctx.settings), dry_run=False)
        if data.format_paths is not None:
            return _output(
                format_files(ctx.settings, data.format_paths or None, dry_run=data.dry_run), data.dry_run
            )
        patch = _patch_or_error(data)
        if isinstance(patch, str):
            return UdmUpdaterOutput(status=UdmUpdaterStatus.ERROR_INVALID_UPDATE, errorDetails=patch)
        # A review obtained before the call (a flow's pause) is stored in the patch record: who, when, what.
        review = None if ctx.review is None or data.dry_run else ctx.review.model_dump(mode="json")
        return _output(apply_patch(patch, ctx.settings, dry_run=data.dry_run, review=review), data.dry_run)


def _patch_or_error(data: UdmUpdaterInput) -> Patch | str:
    """The patch this input asks for, or why it is not one (field names as the caller wrote them)."""
    if data.patch is not None:
        try:
            patch = parse_patch(data.patch, "patch")
        except UdmError as exc:
            return str(exc)
        if data.override is not None:
            if patch.override is not None:
                return "patch: give the override inside `patch` or beside it, not both"
            patch = patch.model_copy(update={"override": data.override})
        return patch
    raw: dict[str, Any] = {
        "description": data.description,
        "author": data.author,
        "source": data.source,
        "operations": [_to_operation(item) for item in data.udm_updates_list],
    }
    if data.patch_id:
        raw["id"] = data.patch_id
    if data.override is not None:
        raw["override"] = data.override.model_dump()
    try:
        return parse_patch(raw, "udm_updates_list")
    except UdmError as exc:
        return str(exc).replace("operations[", "udm_updates_list[")


def _output(result: PatchResult, dry_run: bool) -> UdmUpdaterOutput:
    out = UdmUpdaterOutput(
        status=_STATUS[result.status],
        patch_id=result.patch_id,
        committed=result.committed,
        dry_run=dry_run,
        operations=result.operations,
        files_changed=result.files,
        unified_diff=result.diff,
        problems=result.problems,
        errorDetails=result.error,
    )
    out._report = result
    return out


def log_revert(settings: Settings, patch_id: str, outcome: dict[str, Any] | None, **why: Any) -> None:
    """The call-log line of a revert the engine made outside call_tool: the update flow's rollback.

    It is udmUpdaterTool's line for `{"revert_patch_id": patch_id}` with decision `rollback` and the
    status the tool gives the revert's report (`outcome`: the hook's status, revert_id, duration_ms;
    None when the hook never ran, so nothing was reverted); `why` (the commit line it undoes, the
    failure) goes under `rollback`. Errors' texts stay out, as for every call: they are in the run.
    """
    status = _STATUS.get(outcome["status"] if outcome else "error", UdmUpdaterStatus.ERROR_TRANSACTION)
    log_call(
        UdmUpdaterTool(),
        {"revert_patch_id": patch_id},
        ToolContext(settings=settings),
        decision="rollback",
        status=status.value,
        duration_ms=float(outcome["duration_ms"]) if outcome else 0.0,
        rollback={"patch_id": patch_id, "revert_id": outcome["revert_id"] if outcome else None, **why},
    )
