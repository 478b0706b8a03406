"""The browser tools by name: the registry's tools under tasks.browser (only their modules load)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tasks.registry import tools_in

if TYPE_CHECKING:
    from tasks.base import Tool

__all__ = ["browser_tool", "browser_tool_names"]


def browser_tool(name: str) -> Tool[Any, Any] | None:
    """The browser tool with this name (exact, else case-insensitive), or None."""
    tools = tools_in("tasks.browser")
    for tool in tools:
        if tool.name == name:
            return tool
    for tool in tools:
        if tool.name.lower() == name.lower():
            return tool
    return None


def browser_tool_names() -> list[str]:
    """Names of every browser tool, in registry order."""
    return [tool.name for tool in tools_in("tasks.browser")]
