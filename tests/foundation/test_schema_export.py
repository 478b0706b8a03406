"""Schema export: every registered tool in all four formats, plus permission-derived MCP hints."""

from __future__ import annotations

import importlib.util
import re
from typing import Any, ClassVar

import jsonschema
import pytest
from pydantic import BaseModel, Field

from tasks.base import SCHEMA_FORMATS, Permission, Tool, ToolContext, ToolInput, export_schema
from tasks.registry import TOOL_PATHS, load_tool

# Anthropic and OpenAI both restrict tool names to this.
NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def written_tool_paths() -> list[str]:
    """Registry entries whose module exists in the tree (a tool being written may not yet)."""
    return [p for p in TOOL_PATHS if importlib.util.find_spec(p.partition(":")[0]) is not None]


class HintInput(ToolInput):
    """A single required field."""

    target: str = Field(min_length=1, description="What to act on.")


class HintOutput(BaseModel):
    """A single field."""

    done: bool = Field(description="Whether it happened.")


def make_tool(level: Permission) -> Tool[HintInput, HintOutput]:
    """A tool class with a fixed permission level."""

    class LevelTool(Tool[HintInput, HintOutput]):
        name: ClassVar[str] = f"{level.value}LevelTool"
        description: ClassVar[str] = f"Acts at the {level.value} level."
        Input: ClassVar[type[BaseModel]] = HintInput
        Output: ClassVar[type[BaseModel]] = HintOutput
        permission: ClassVar[Permission] = level

        def execute(self, data: HintInput, ctx: ToolContext) -> HintOutput:
            return HintOutput(done=True)

    return LevelTool()


def all_test_tools() -> list[Tool[Any, Any]]:
    """The registered tools that exist, plus one fake per permission level."""
    return [load_tool(p) for p in written_tool_paths()] + [make_tool(level) for level in Permission]


def check_object_schema(schema: dict[str, Any], *, meta: bool = True) -> None:
    """A JSON Schema describing an object (checked against the metaschema when `meta`)."""
    if meta:
        jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    assert isinstance(schema.get("properties", {}), dict)
    for name in schema.get("required", []):
        assert name in schema["properties"]


@pytest.mark.parametrize("tool", all_test_tools(), ids=lambda t: t.name)
def test_every_format(tool: Tool[Any, Any]) -> None:
    assert NAME_RE.match(tool.name)
    assert tool.description.strip()

    js = export_schema(tool, "jsonschema")
    assert js["name"] == tool.name
    assert js["permission"] == tool.permission.value
    check_object_schema(js["input_schema"])
    check_object_schema(js["output_schema"])

    anthropic = export_schema(tool, "anthropic")
    assert set(anthropic) == {"name", "description", "input_schema"}
    assert anthropic["name"] == tool.name
    assert anthropic["description"] == tool.description
    check_object_schema(anthropic["input_schema"], meta=False)

    openai = export_schema(tool, "openai")
    assert openai["type"] == "function"
    assert set(openai["function"]) == {"name", "description", "parameters"}
    assert openai["function"]["name"] == tool.name
    check_object_schema(openai["function"]["parameters"], meta=False)

    mcp = export_schema(tool, "mcp")
    assert mcp["name"] == tool.name
    check_object_schema(mcp["inputSchema"], meta=False)
    check_object_schema(mcp["outputSchema"], meta=False)
    notes = mcp["annotations"]
    assert notes["readOnlyHint"] is (tool.permission is Permission.SAFE)
    assert notes["destructiveHint"] is (tool.permission in (Permission.DESTRUCTIVE, Permission.CRITICAL))

    # All formats publish the same schemas, so the metaschema check above covers them all.
    assert (
        js["input_schema"]
        == anthropic["input_schema"]
        == openai["function"]["parameters"]
        == mcp["inputSchema"]
    )


def test_schema_validates_what_the_input_model_accepts() -> None:
    schema = export_schema(make_tool(Permission.SAFE), "jsonschema")["input_schema"]
    jsonschema.validate({"target": "x"}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"target": ""}, schema)
    # Extra fields are rejected by the model, and the published schema says so.
    assert schema.get("additionalProperties") is False


@pytest.mark.parametrize(
    ("level", "read_only", "destructive"),
    [
        (Permission.SAFE, True, False),
        (Permission.MODERATE, False, False),
        (Permission.DESTRUCTIVE, False, True),
        (Permission.CRITICAL, False, True),
    ],
)
def test_mcp_hints_follow_permission(level: Permission, read_only: bool, destructive: bool) -> None:
    notes = export_schema(make_tool(level), "mcp")["annotations"]
    assert (notes["readOnlyHint"], notes["destructiveHint"]) == (read_only, destructive)


def test_unknown_format_is_named() -> None:
    assert SCHEMA_FORMATS == ("jsonschema", "mcp", "anthropic", "openai")
    with pytest.raises(ValueError, match="unknown schema format 'yaml'"):
        export_schema(make_tool(Permission.SAFE), "yaml")


def test_registered_names_are_unique() -> None:
    names = [load_tool(p).name for p in written_tool_paths()]
    assert len(names) == len(set(names))
    assert len({n.lower() for n in names}) == len(names)


def test_exported_schemas_are_independent_copies() -> None:
    tool = make_tool(Permission.MODERATE)
    first = export_schema(tool, "anthropic")
    first["input_schema"]["properties"].clear()
    assert "target" in export_schema(tool, "anthropic")["input_schema"]["properties"]
