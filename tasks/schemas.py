"""A tool's published schema in each format (JSON Schema, MCP, Anthropic, OpenAI), read from its models."""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

if TYPE_CHECKING:
    from tasks.base import Tool

__all__ = ["SCHEMA_FORMATS", "SchemaFormat", "export_schema"]


def _annotations(tool: Tool[Any, Any]) -> dict[str, Any]:
    # Compared by value: tasks.base (which defines Permission) imports this module.
    perm = str(tool.permission.value)
    return {
        "title": tool.name,
        "readOnlyHint": perm == "safe",
        "destructiveHint": perm in ("destructive", "critical"),
        "idempotentHint": perm == "safe",
        "openWorldHint": False,
    }


SchemaFormat = str  # "jsonschema" | "mcp" | "anthropic" | "openai"
SCHEMA_FORMATS = ("jsonschema", "mcp", "anthropic", "openai")


@functools.cache
def _schema_text(model: type[BaseModel]) -> str:
    # pydantic rebuilds a schema on every call (about 10 ms for a large model); models are static.
    return json.dumps(model.model_json_schema(by_alias=True))


def export_schema(tool: Tool[Any, Any], fmt: SchemaFormat = "jsonschema") -> dict[str, Any]:
    """A tool's schema in one of the published formats: jsonschema, mcp, anthropic, openai."""
    # Parsed afresh each time so a caller may change its copy without touching the cache.
    input_schema = json.loads(_schema_text(tool.Input))
    output_schema = json.loads(_schema_text(tool.Output))
    if fmt == "jsonschema":
        return {
            "name": tool.name,
            "description": tool.description,
            "permission": tool.permission.value,
            "input_schema": input_schema,
            "output_schema": output_schema,
        }
    if fmt == "mcp":
        return {
            "name": tool.name,
            "description": tool.description,
            "inputSchema": input_schema,
            "outputSchema": output_schema,
            "annotations": _annotations(tool),
        }
    if fmt == "anthropic":
        return {"name": tool.name, "description": tool.description, "input_schema": input_schema}
    if fmt == "openai":
        return {
            "type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": input_schema},
        }
    raise ValueError(f"unknown schema format '{fmt}' (expected one of {', '.join(SCHEMA_FORMATS)})")
