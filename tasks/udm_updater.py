"""udmUpdaterTool: a list of UDM update instructions -> one patch -> one all-or-nothing transaction -> report."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar

from pydantic import AliasChoices, BaseModel, Field

from tasks.base import Permission, Tool, ToolContext, ToolInput
from udm.errors import UdmError
from udm.patch import (
    DESTRUCTIVE_OPS,
    FileResult,
    OperationResult,
    OperationType,
    Override,
    apply_patch,
    parse_patch,
)

__all__ = [
    "UdmUpdateInstruction",
    "UdmUpdaterInput",
    "UdmUpdaterOutput",
    "UdmUpdaterStatus",
    "UdmUpdaterTool",
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

    udm_updates_list: list[UdmUpdateInstruction] = Field(
        min_length=1, description="The updates, applied in order as one transaction."
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
        """Deleting sections or files, or an override, is destructive; other updates moderate; a dry run safe."""
        if data.dry_run:
            return Permission.SAFE
        if data.override is not None or any(
            item.operation in DESTRUCTIVE_OPS for item in data.udm_updates_list
        ):
            return Permission.DESTRUCTIVE
        return Permission.MODERATE

    def summarize(self, data: UdmUpdaterInput) -> str:
        """One line per update, for the approval prompt."""
        lines = [f"{self.name}: {data.description or 'update the UDM'}"]
        for item in data.udm_updates_list:
            lines.append(
                f"  - {item.operation} {item.target_file} {item.section or item.key or item.to or ''}".rstrip()
            )
        return "\n".join(lines)

    def execute(self, data: UdmUpdaterInput, ctx: ToolContext) -> UdmUpdaterOutput:
        """Build the patch, then apply (or plan) it as one transaction."""
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
            patch = parse_patch(raw, "udm_updates_list")
        except UdmError as exc:
            return UdmUpdaterOutput(
                status=UdmUpdaterStatus.ERROR_INVALID_UPDATE,
                errorDetails=str(exc).replace("operations[", "udm_updates_list["),
            )
        result = apply_patch(patch, ctx.settings, dry_run=data.dry_run)
        return UdmUpdaterOutput(
            status=_STATUS[result.status],
            patch_id=result.patch_id,
            committed=result.committed,
            dry_run=data.dry_run,
            operations=result.operations,
            files_changed=result.files,
            unified_diff=result.diff,
            problems=result.problems,
            errorDetails=result.error,
        )
