"""yamlJsonParserEditorTool: get, set, add and delete values by key path in YAML/JSON/JSON5 text.

YAML goes through ruamel.yaml's round trip with the text's own indentation, so comments, key order
and quoting survive and only the edited lines change. JSON keeps its indentation and separators.
JSON5 is read with `json5`; a write re-serialises with `json5.dumps` in the text's own habits (bare or
quoted keys, trailing commas) and is merged into the original line by line, so comments and layout
away from the edited lines survive, while a comment on an edited line is lost.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar

from pydantic import BaseModel, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from tasks.base import ErrorTable, Permission, Tool, ToolContext, ToolInput
from udm.errors import DocumentError, PatchError, TargetError, UdmError
from udm.patch import SerializationError, edit_text, get_value

__all__ = [
    "YamlEditorInput",
    "YamlEditorOutput",
    "YamlEditorStatus",
    "YamlJsonAction",
    "YamlJsonParserEditorTool",
]


class YamlJsonAction(StrEnum):
    """What to do at the key path (`modifyKeyValue` is the earlier spelling of set_value)."""

    GET_VALUE = "get_value"
    SET_VALUE = "set_value"
    MODIFY_KEY_VALUE = "modifyKeyValue"
    ADD_ITEM = "add_item"
    DELETE_KEY = "delete_key"


class TextFormat(StrEnum):
    """The text's format."""

    YAML = "yaml"
    JSON = "json"
    JSON5 = "json5"


class YamlEditorStatus(StrEnum):
    """Outcome of the call."""

    SUCCESS = "SUCCESS"
    ERROR_KEY_NOT_FOUND = "ERROR_KEY_NOT_FOUND"
    ERROR_PARSING = "ERROR_PARSING"
    ERROR_SERIALIZING = "ERROR_SERIALIZING"


class YamlEditorInput(ToolInput):
    """The text, its format, the action, the key path and the new value."""

    textContent: str = Field(description="The YAML, JSON or JSON5 text.")
    format: TextFormat = Field(description="yaml, json or json5.")
    action: YamlJsonAction = Field(
        description="get_value, set_value (or modifyKeyValue), add_item (append to a list) or delete_key."
    )
    keyPath: str = Field(
        default="",
        description="Dotted path with [index] or [\"quoted.key\"] parts, e.g. 'server.port' or 'tasks[0].status'; empty = the whole document.",
    )
    newValue: Any = Field(default=None, description="set_value/add_item: the value (any JSON value).")

    @field_validator("format", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _needs_new_value(self) -> YamlEditorInput:
        # null is a value one may set, so only an absent newValue is missing; the check lives here,
        # with the other input rules, so it is reported as invalid input rather than as a tool status.
        writes = self.action not in (YamlJsonAction.GET_VALUE, YamlJsonAction.DELETE_KEY)
        if writes and "newValue" not in self.model_fields_set:
            raise PydanticCustomError(
                "missing", "{action} needs newValue (the value to write)", {"action": self.action.value}
            )
        return self


class YamlEditorOutput(BaseModel):
    """The edited text or the extracted value, with a status."""

    status: YamlEditorStatus = Field(description="SUCCESS or what went wrong.")
    modifiedTextContent: str | None = Field(
        default=None, description="The whole text after the edit; null for get_value or on error."
    )
    extractedValue: Any = Field(
        default=None,
        description=(
            "get_value: the value at the key path, as JSON data. Infinities and NaN, which JSON lacks, are "
            "strings: '.inf', '-.inf', '.nan' from YAML, 'Infinity', '-Infinity', 'NaN' from JSON/JSON5; "
            "YAML !!binary is its base64 text."
        ),
    )
    errorDetails: str | None = Field(default=None, description="What went wrong; null on success.")


_ACTIONS = {
    YamlJsonAction.SET_VALUE: "set",
    YamlJsonAction.MODIFY_KEY_VALUE: "set",
    YamlJsonAction.ADD_ITEM: "append",
    YamlJsonAction.DELETE_KEY: "delete",
}


def edit_structured(data: YamlEditorInput) -> YamlEditorOutput:
    """Do what the input asks, purely on the string (engine errors raise; the tool's table maps them)."""
    fmt = data.format.value
    if data.action is YamlJsonAction.GET_VALUE:
        value = get_value(data.textContent, fmt, data.keyPath)  # type: ignore[arg-type]
        return YamlEditorOutput(status=YamlEditorStatus.SUCCESS, extractedValue=value)
    text = edit_text(data.textContent, fmt, _ACTIONS[data.action], data.keyPath, data.newValue)  # type: ignore[arg-type]
    return YamlEditorOutput(status=YamlEditorStatus.SUCCESS, modifiedTextContent=text)


class YamlJsonParserEditorTool(Tool[YamlEditorInput, YamlEditorOutput]):
    """Key-path reads and edits of YAML/JSON/JSON5 text that keep comments and layout."""

    name: ClassVar[str] = "yamlJsonParserEditorTool"
    description: ClassVar[str] = (
        "Reads or edits YAML, JSON or JSON5 text by key path ('server.port', 'tasks[0].status'): get_value, "
        "set_value, add_item (append to a list), delete_key. YAML comments, key order, quotes and indentation "
        "survive and only the edited lines change; JSON keeps its indentation; JSON5 is rewritten only on the "
        "edited lines (a comment on such a line is lost). get_value returns JSON data: infinities and NaN come "
        "back as strings ('.inf', '-.inf', '.nan' for YAML; 'Infinity', '-Infinity', 'NaN' for JSON/JSON5) and "
        "YAML !!binary as base64 text. YAML whose aliases expand past 1,000,000 values (or its length in "
        "characters, if larger) and text nested deeper than the parser's recursion limit are refused as "
        "ERROR_PARSING."
    )
    Input: ClassVar[type[BaseModel]] = YamlEditorInput
    Output: ClassVar[type[BaseModel]] = YamlEditorOutput
    permission: ClassVar[Permission] = Permission.SAFE
    errors: ClassVar[ErrorTable] = {
        DocumentError: YamlEditorStatus.ERROR_PARSING,
        SerializationError: YamlEditorStatus.ERROR_SERIALIZING,
        TargetError: YamlEditorStatus.ERROR_KEY_NOT_FOUND,
        PatchError: YamlEditorStatus.ERROR_KEY_NOT_FOUND,
        UdmError: YamlEditorStatus.ERROR_SERIALIZING,
    }

    def execute(self, data: YamlEditorInput, ctx: ToolContext) -> YamlEditorOutput:
        """Parse, edit and serialise the string; nothing on disk is touched."""
        return edit_structured(data)
