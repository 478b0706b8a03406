"""markdownParserEditorTool: section reads and edits of a Markdown string, changing only the edited lines."""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from tasks.base import ErrorTable, Failure, Permission, Tool, ToolContext, ToolInput
from udm.errors import AmbiguousTargetError, DocumentError, TargetError, UdmError
from udm.markdown import find_section, parse_document, section_text
from udm.patch import Workspace, apply_operations, parse_patch

__all__ = [
    "MarkdownAction",
    "MarkdownEditorInput",
    "MarkdownEditorOutput",
    "MarkdownEditorStatus",
    "MarkdownParserEditorTool",
]

_NAME = "content.md"


class MarkdownAction(StrEnum):
    """What to do with the section (`replaceSection` and `REPLACE_SECTION` spellings are accepted too)."""

    GET_SECTION = "get_section"
    REPLACE_SECTION = "replace_section"
    APPEND_TO_SECTION = "append_to_section"
    PREPEND_TO_SECTION = "prepend_to_section"
    INSERT_SECTION = "insert_section"
    DELETE_SECTION = "delete_section"
    RENAME_HEADING = "rename_heading"
    MOVE_SECTION = "move_section"


class MarkdownEditorStatus(StrEnum):
    """Outcome of the call."""

    SUCCESS = "SUCCESS"
    ERROR_SECTION_NOT_FOUND = "ERROR_SECTION_NOT_FOUND"
    ERROR_PARSING = "ERROR_PARSING"
    ERROR_SERIALIZING = "ERROR_SERIALIZING"


class MarkdownEditorInput(ToolInput):
    """The Markdown text, the action, the section it applies to and the new content."""

    markdownContent: str = Field(description="The Markdown text to read or edit.")
    action: MarkdownAction = Field(
        description="get_section, replace_section, append_to_section, prepend_to_section, insert_section, delete_section, rename_heading or move_section."
    )
    sectionHeader: str = Field(
        min_length=1,
        description="The section: its heading text (with or without '#'s), heading path 'A > B', anchor, or an ID it defines.",
    )
    newSectionContent: str | None = Field(
        default=None,
        description="Markdown for replace/append/prepend/insert (insert: it starts with the new heading unless newHeading is given).",
    )
    newHeading: str | None = Field(
        default=None, description="rename_heading: the new text; insert_section: the new heading's text."
    )
    targetSection: str | None = Field(default=None, description="move_section: the section to move next to.")
    position: Literal["before", "after"] = Field(
        default="after", description="insert/move: before or after the target."
    )
    level: int | None = Field(
        default=None, ge=1, le=6, description="insert/move: heading level of the new or moved section."
    )
    withHeading: bool = Field(
        default=False, description="replace_section: newSectionContent replaces the heading too."
    )
    formatContent: bool = Field(
        default=True, description="Normalise the inserted Markdown with mdformat (inserted lines only)."
    )

    @field_validator("action", mode="before")
    @classmethod
    def _snake(cls, value: Any) -> Any:
        # The earlier specification spells actions in camelCase ("replaceSection"); a value without a
        # lower-case letter ("REPLACE_SECTION") is a constant's spelling, whose capitals mark no words.
        if not isinstance(value, str) or not any(c.isupper() for c in value):
            return value
        if not any(c.islower() for c in value):
            return value.lower()
        return "".join("_" + c.lower() if c.isupper() else c for c in value)

    @model_validator(mode="after")
    def _needs_its_fields(self) -> MarkdownEditorInput:
        # A missing field is the caller's mistake: reported as invalid input naming it, not as a status.
        required = {
            MarkdownAction.REPLACE_SECTION: "newSectionContent",
            MarkdownAction.APPEND_TO_SECTION: "newSectionContent",
            MarkdownAction.PREPEND_TO_SECTION: "newSectionContent",
            MarkdownAction.INSERT_SECTION: "newSectionContent",
            MarkdownAction.RENAME_HEADING: "newHeading",
            MarkdownAction.MOVE_SECTION: "targetSection",
        }.get(self.action)
        if required is None:
            return self
        value = getattr(self, required)
        # Empty content is a real edit (it clears a section); an empty heading or target is not.
        if value is None or (required != "newSectionContent" and not str(value).strip()):
            raise PydanticCustomError(
                "missing", "{action} needs {field}", {"action": self.action.value, "field": required}
            )
        return self


class MarkdownEditorOutput(BaseModel):
    """The edited text, or the extracted section, with a status."""

    status: MarkdownEditorStatus = Field(description="SUCCESS or what went wrong.")
    modifiedMarkdownContent: str | None = Field(
        default=None, description="The whole text after the edit; null for get_section or on error."
    )
    extractedContent: str | None = Field(
        default=None, description="get_section: the section's exact text, heading included."
    )
    candidates: list[str] = Field(
        default_factory=list, description="Sections that matched an ambiguous identifier."
    )
    errorDetails: str | None = Field(default=None, description="What went wrong; null on success.")


def _operation(data: MarkdownEditorInput) -> dict[str, Any]:
    op: dict[str, Any] = {"op": data.action.value, "file": _NAME, "section": data.sectionHeader}
    action = data.action
    needs_content = action in (
        MarkdownAction.REPLACE_SECTION,
        MarkdownAction.APPEND_TO_SECTION,
        MarkdownAction.PREPEND_TO_SECTION,
        MarkdownAction.INSERT_SECTION,
    )
    if needs_content:
        op["content"] = data.newSectionContent
        op["format"] = data.formatContent
    if action is MarkdownAction.REPLACE_SECTION:
        op["with_heading"] = data.withHeading
    if action is MarkdownAction.INSERT_SECTION:
        op.update(position=data.position, level=data.level, heading=data.newHeading)
    if action is MarkdownAction.RENAME_HEADING:
        op["to"] = data.newHeading
    if action is MarkdownAction.MOVE_SECTION:
        op.update(to=data.targetSection, position=data.position, level=data.level)
    return op


def edit_markdown(data: MarkdownEditorInput) -> MarkdownEditorOutput:
    """Do what the input asks, purely on the string."""
    text = data.markdownContent
    if data.action is MarkdownAction.GET_SECTION:
        doc = parse_document(text, _NAME)
        return MarkdownEditorOutput(
            status=MarkdownEditorStatus.SUCCESS,
            extractedContent=section_text(doc, find_section(doc, data.sectionHeader)),
        )
    patch = parse_patch({"id": "markdown-editor", "operations": [_operation(data)]}, "request")
    ws = Workspace(Path("/"), reader=lambda rel: text.encode("utf-8") if rel == _NAME else None)
    apply_operations(patch, ws)
    return MarkdownEditorOutput(status=MarkdownEditorStatus.SUCCESS, modifiedMarkdownContent=ws.read(_NAME))


def _clean(exc: BaseException) -> str:
    # The engine names the operation and the file; here there is one of each, both implied.
    text = re.sub(r"^operations\[0\] \([a-z_]+\) on content\.md: ", "", str(exc))
    return text.replace(f" in {_NAME}", "").replace(f"{_NAME}: ", "")


class MarkdownParserEditorTool(Tool[MarkdownEditorInput, MarkdownEditorOutput]):
    """Section-level reads and edits of Markdown text; only the edited lines change."""

    name: ClassVar[str] = "markdownParserEditorTool"
    description: ClassVar[str] = (
        "Reads or edits one section of a Markdown string: get_section returns its exact text; replace, append, "
        "prepend, insert, delete, rename or move change only the lines they touch and return the whole text. "
        "Sections are named by heading text, heading path 'A > B', anchor or an ID they define; a missing or "
        "ambiguous one is an error listing candidates. Inserted Markdown is normalised with mdformat."
    )
    Input: ClassVar[type[BaseModel]] = MarkdownEditorInput
    Output: ClassVar[type[BaseModel]] = MarkdownEditorOutput
    permission: ClassVar[Permission] = Permission.SAFE
    errors: ClassVar[ErrorTable] = {
        AmbiguousTargetError: Failure(
            MarkdownEditorStatus.ERROR_SECTION_NOT_FOUND, fields=lambda exc: {"candidates": exc.candidates}
        ),
        TargetError: MarkdownEditorStatus.ERROR_SECTION_NOT_FOUND,
        DocumentError: MarkdownEditorStatus.ERROR_PARSING,
        UdmError: MarkdownEditorStatus.ERROR_SERIALIZING,  # PatchError included
    }

    def error_details(self, exc: BaseException) -> str:
        """The engine's message without the operation and file names, which are implied here."""
        return _clean(exc)

    def execute(self, data: MarkdownEditorInput, ctx: ToolContext) -> MarkdownEditorOutput:
        """Parse, edit and serialise the string; nothing on disk is touched."""
        return edit_markdown(data)
