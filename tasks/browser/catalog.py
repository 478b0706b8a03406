"""The browser tools by name, loaded from the registry's tasks.browser lines only."""

from __future__ import annotations

from typing import Any

from tasks.base import Tool
from tasks.registry import TOOL_PATHS, _load

__all__ = ["browser_tool", "browser_tool_names"]


def _paths() -> list[str]:
    return [p for p in TOOL_PATHS if p.startswith("tasks.browser.")]


def browser_tool(name: str) -> Tool[Any, Any] | None:
    """The browser tool with this name (exact, else case-insensitive), or None."""
    tools = [_load(p) for p in _paths()]
    for tool in tools:
        if tool.name == name:
            return tool
    for tool in tools:
        if tool.name.lower() == name.lower():
            return tool
    return None


def browser_tool_names() -> list[str]:
    """Names of every browser tool, in registry order."""
    return [_load(p).name for p in _paths()]
