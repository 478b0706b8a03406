"""The patch format: pydantic models of a patch and its operations, loading from YAML/JSON, JSON Schema."""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    field_validator,
    model_validator,
)

from udm.datalimits import lone_surrogate

__all__ = [
    "DESTRUCTIVE_OPS",
    "OPERATION_TYPES",
    "AppendJsonItem",
    "AppendToSection",
    "AppendYamlItem",
    "CreateFile",
    "DeleteFile",
    "DeleteJsonKey",
    "DeleteSection",
    "DeleteYamlKey",
    "InsertSection",
    "MoveSection",
    "Operation",
    "OperationType",
    "Override",
    "Patch",
    "PrependToSection",
    "RenameFile",
    "RenameHeading",
    "ReplaceCodeBlock",
    "ReplaceSection",
    "ReplaceText",
    "SetFrontMatter",
    "SetJsonKey",
    "SetYamlKey",
    "patch_json_schema",
]

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def _lone_surrogate(data: Any) -> str | None:
    """Where the first lone surrogate in a patch's data sits (e.g. `operations[0].new`), or None."""
    return lone_surrogate(data, "the patch")


def _surrogate_message(where: str) -> str:
    return f"{where} holds a lone surrogate, which is not a character and cannot be stored as UTF-8"


class _Op(BaseModel):
    """Fields every operation has."""

    model_config = ConfigDict(extra="forbid")

    file: str = Field(min_length=1, description="The file, relative to the UDM root (posix slashes).")
    expect: str | None = Field(
        default=None,
        description="Precondition: sha256 of the target (section, block, matched lines or file) as it was "
        "when the patch was planned (for move_section and rename_file, of the target and its destination "
        "together); filled in by planning, checked again at commit.",
    )
    rationale: str | None = Field(default=None, description="Why this change is made (kept in the record).")


class _SectionOp(_Op):
    section: str = Field(
        min_length=1,
        description="The section: heading text (with or without '#'s), heading path 'A > B', anchor, "
        "'#anchor', or an ID the section defines.",
    )


class _MarkdownContent(BaseModel):
    content: str = Field(description="Markdown to insert.")
    format: bool = Field(
        default=True, description="Normalise the inserted Markdown with mdformat (only the inserted lines)."
    )


class ReplaceSection(_SectionOp, _MarkdownContent):
    """Replace a section's body (keeping its heading), or the whole section with its heading."""

    op: Literal["replace_section"]
    with_heading: bool = Field(
        default=False, description="Replace the heading too; `content` then starts with a heading."
    )
    own_only: bool = Field(
        default=False, description="Replace only the section's own body, keeping its subsections."
    )


class AppendToSection(_SectionOp, _MarkdownContent):
    """Add Markdown at the end of a section's own body (before its first subsection)."""

    op: Literal["append_to_section"]


class PrependToSection(_SectionOp, _MarkdownContent):
    """Add Markdown right after a section's heading."""

    op: Literal["prepend_to_section"]


class InsertSection(_SectionOp, _MarkdownContent):
    """Insert a new section before or after a target section."""

    op: Literal["insert_section"]
    position: Literal["before", "after"] = Field(
        default="after", description="Where, relative to the target."
    )
    heading: str | None = Field(
        default=None, description="The new heading's text; if absent, `content` starts with a heading line."
    )
    level: int | None = Field(
        default=None,
        ge=1,
        le=6,
        description="Heading level (default: the target's level); sub-headings shift.",
    )


class DeleteSection(_SectionOp):
    """Remove a section with its subsections."""

    op: Literal["delete_section"]


class RenameHeading(_SectionOp):
    """Change a section's heading text (its level and style stay)."""

    op: Literal["rename_heading"]
    to: str = Field(min_length=1, description="The new heading text.")


class MoveSection(_SectionOp):
    """Move a section (with its subsections) before or after another section of the same file."""

    op: Literal["move_section"]
    to: str = Field(min_length=1, description="The destination section (same identifier forms as `section`).")
    position: Literal["before", "after"] = Field(default="after", description="Where, relative to `to`.")
    level: int | None = Field(default=None, ge=1, le=6, description="New heading level; sub-headings shift.")


class ReplaceText(_Op):
    """Replace exact text, which must occur exactly `count` times (in the file, or in one section)."""

    op: Literal["replace_text"]
    old: str = Field(min_length=1, description="The exact text to find.")
    new: str = Field(description="Its replacement.")
    count: int = Field(default=1, ge=1, description="How many occurrences are expected (and replaced).")
    section: str | None = Field(default=None, description="Limit the search to this section.")


class _KeyOp(_Op):
    key: str = Field(description='Key path: dotted, with [index] or ["quoted.key"] parts.')
    section: str | None = Field(
        default=None, description="For a Markdown file: the section holding the fenced block."
    )
    block: int | str | None = Field(
        default=None,
        description="For a Markdown file: which fenced block (index among the section's blocks, or the "
        "value of its id key); default the section's only YAML/JSON block.",
    )


class SetYamlKey(_KeyOp):
    """Set a key in a YAML file or a fenced YAML block (created if its parent exists)."""

    op: Literal["set_yaml_key"]
    value: Any = Field(description="The new value (any JSON/YAML value).")


class DeleteYamlKey(_KeyOp):
    """Remove a key (or list item) from a YAML file or block."""

    op: Literal["delete_yaml_key"]


class AppendYamlItem(_KeyOp):
    """Append an item to a list in a YAML file or block."""

    op: Literal["append_yaml_item"]
    value: Any = Field(description="The item to append.")


class SetJsonKey(_KeyOp):
    """Set a key in a JSON file or a fenced JSON block."""

    op: Literal["set_json_key"]
    value: Any = Field(description="The new value.")


class DeleteJsonKey(_KeyOp):
    """Remove a key (or list item) from a JSON file or block."""

    op: Literal["delete_json_key"]


class AppendJsonItem(_KeyOp):
    """Append an item to a list in a JSON file or block."""

    op: Literal["append_json_item"]
    value: Any = Field(description="The item to append.")


class SetFrontMatter(_Op):
    """Set (or with `value: null` and `delete: true`, remove) a key of a Markdown file's front matter."""

    op: Literal["set_front_matter"]
    key: str = Field(min_length=1, description="Key path inside the front matter.")
    value: Any = Field(default=None, description="The new value.")
    delete: bool = Field(default=False, description="Remove the key instead of setting it.")


class ReplaceCodeBlock(_Op):
    """Replace the content of a fenced code block (its fence and info string stay)."""

    op: Literal["replace_code_block"]
    section: str | None = Field(default=None, description="The section holding the block.")
    block: int | str | None = Field(
        default=None, description="Index among the section's blocks, or the value of its id key."
    )
    content: str = Field(description="The block's new content.")


class CreateFile(_Op):
    """Create a new file (an error if it exists)."""

    op: Literal["create_file"]
    content: str = Field(description="The new file's content.")
    format: bool = Field(default=False, description="Normalise a Markdown file's content with mdformat.")


class RenameFile(_Op):
    """Rename or move a file inside the UDM root."""

    op: Literal["rename_file"]
    to: str = Field(min_length=1, description="The new path, relative to the UDM root.")


class DeleteFile(_Op):
    """Delete a file (destructive: needs approval under smart_auto)."""

    op: Literal["delete_file"]


Operation = Annotated[
    ReplaceSection
    | AppendToSection
    | PrependToSection
    | InsertSection
    | DeleteSection
    | RenameHeading
    | MoveSection
    | ReplaceText
    | SetYamlKey
    | DeleteYamlKey
    | AppendYamlItem
    | SetJsonKey
    | DeleteJsonKey
    | AppendJsonItem
    | SetFrontMatter
    | ReplaceCodeBlock
    | CreateFile
    | RenameFile
    | DeleteFile,
    Field(discriminator="op"),
]

OperationType = Literal[
    "replace_section",
    "append_to_section",
    "prepend_to_section",
    "insert_section",
    "delete_section",
    "rename_heading",
    "move_section",
    "replace_text",
    "set_yaml_key",
    "delete_yaml_key",
    "append_yaml_item",
    "set_json_key",
    "delete_json_key",
    "append_json_item",
    "set_front_matter",
    "replace_code_block",
    "create_file",
    "rename_file",
    "delete_file",
]
# Spelled once as a Literal so tool input schemas can offer the names as an enum.
OPERATION_TYPES: tuple[str, ...] = get_args(OperationType)

# Operations that throw content away wholesale; they need approval under the smart_auto policy.
DESTRUCTIVE_OPS: frozenset[str] = frozenset({"delete_section", "delete_file"})


def _new_id(description: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    slug = re.sub(r"[^a-z0-9]+", "-", description.lower()).strip("-")[:32].strip("-")
    return f"{stamp}-{slug + '-' if slug else ''}{secrets.token_hex(3)}"


class Override(BaseModel):
    """Who forces a patch past the validator's link, anchor and ID findings, and why."""

    model_config = ConfigDict(extra="forbid")

    by: str = Field(min_length=1, max_length=200, description="Who forces it (a person or a mode).")
    reason: str = Field(min_length=1, max_length=2000, description="Why the findings do not matter here.")


class Patch(BaseModel):
    """An ordered list of operations that commit together or not at all."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(
        default="",
        description="Unique id (letters, digits, '.', '_', '-'); generated from time and description if absent.",
    )
    description: str = Field(default="", description="What the patch does, in one line.")
    author: str | None = Field(default=None, description="Who wrote it (a person or a mode).")
    source: str | None = Field(default=None, description="Where it comes from, e.g. a task ID or a run.")
    operations: list[Operation] = Field(min_length=1, description="The operations, applied in order.")
    override: Override | None = Field(
        default=None,
        description="Apply even though links, anchors or IDs that resolved would no longer resolve; "
        "who and why go into the patch record with the findings overridden (parse errors still refuse).",
    )

    @model_validator(mode="before")
    @classmethod
    def _no_lone_surrogates(cls, data: Any) -> Any:
        where = _lone_surrogate(data)
        if where is not None:
            raise ValueError(_surrogate_message(where))
        return data

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        # fullmatch, not `$`: `$` also matches before a final newline, and "abc\n" names a record file.
        if value and not _ID.fullmatch(value):
            raise ValueError("id may only hold letters, digits, '.', '_' and '-' (at most 100 characters)")
        return value

    def model_post_init(self, __context: Any) -> None:
        """Generate the id when the patch came without one."""
        if not self.id:
            self.id = _new_id(self.description)

    @property
    def destructive(self) -> bool:
        """Whether any operation is destructive (deletes a section or a file)."""
        return any(op.op in DESTRUCTIVE_OPS for op in self.operations)


def patch_json_schema() -> dict[str, Any]:
    """The published JSON Schema of a patch file."""
    schema = TypeAdapter(Patch).json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "UDM patch"
    return schema
