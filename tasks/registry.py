"""The registry of tools: one line per tool, imported lazily so listing a tool costs only its module."""

from __future__ import annotations

import importlib
from typing import Any

from tasks.base import Tool

__all__ = ["TOOL_PATHS", "all_tools", "get_tool", "tool_names"]

# "module:ClassName", one per tool. Each issue's tools add their lines here, grouped by module.
TOOL_PATHS: list[str] = [
    "tasks.filesystem:FileSystemAccessTool",
]

_CACHE: dict[str, Tool[Any, Any]] = {}


def _load(path: str) -> Tool[Any, Any]:
    if path not in _CACHE:
        module_name, _, class_name = path.partition(":")
        cls = getattr(importlib.import_module(module_name), class_name)
        _CACHE[path] = cls()
    return _CACHE[path]


def all_tools() -> list[Tool[Any, Any]]:
    """Every registered tool, in registry order."""
    return [_load(p) for p in TOOL_PATHS]


def tool_names() -> list[str]:
    """The names of every registered tool."""
    return [t.name for t in all_tools()]


def get_tool(name: str) -> Tool[Any, Any] | None:
    """The tool with this name (case-insensitive on the first letter, as specs spell both), or None."""
    for tool in all_tools():
        if tool.name == name or tool.name.lower() == name.lower():
            return tool
    return None
