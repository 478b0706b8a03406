"""The registry of tools: the tool lines of `wiring.TOOLS`, each imported on first use, so listing a
tool costs only its own module."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import wiring

if TYPE_CHECKING:
    from tasks.base import Tool

__all__ = ["TOOL_PATHS", "all_tools", "get_tool", "load_tool", "tool_names", "tools_in"]

# "module:ClassName", one per tool (from wiring.TOOLS). A list, read at every call: tests and
# benchmarks put their own tools in its place.
TOOL_PATHS: list[str] = list(wiring.TOOLS)

_CACHE: dict[str, Tool[Any, Any]] = {}


def load_tool(path: str) -> Tool[Any, Any]:
    """The tool at a "module:ClassName" path, created once per process."""
    if path not in _CACHE:
        module_name, _, class_name = path.partition(":")
        cls = getattr(importlib.import_module(module_name), class_name)
        _CACHE[path] = cls()
    return _CACHE[path]


def all_tools() -> list[Tool[Any, Any]]:
    """Every registered tool, in registry order."""
    return [load_tool(p) for p in TOOL_PATHS]


def tools_in(package: str) -> list[Tool[Any, Any]]:
    """The registered tools whose module lies in this package, in registry order (only their modules load)."""
    return [load_tool(p) for p in TOOL_PATHS if p.partition(":")[0].startswith(package + ".")]


def tool_names() -> list[str]:
    """The names of every registered tool."""
    return [t.name for t in all_tools()]


def get_tool(name: str) -> Tool[Any, Any] | None:
    """The tool with this name (case-insensitive on the first letter, as specs spell both), or None."""
    for tool in all_tools():
        if tool.name == name or tool.name.lower() == name.lower():
            return tool
    return None
