"""The path guard and the sandboxed file operations built on it.

The names in `__all__` are the package's public surface: code outside the package imports them from
here. They load on first use, so importing the package stays cheap for the CLI's fast paths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from udm._lazy import load_surface_name

if TYPE_CHECKING:
    from udm.guard.paths import MAX_NAME_BYTES as MAX_NAME_BYTES
    from udm.guard.paths import HeldWalk as HeldWalk
    from udm.guard.paths import PathGuard as PathGuard
    from udm.guard.paths import PathMissing as PathMissing
    from udm.guard.paths import escape_name as escape_name
    from udm.guard.paths import resolve_inside as resolve_inside
    from udm.guard.protected import in_git_folder as in_git_folder
    from udm.guard.sandbox import Sandbox as Sandbox
    from udm.guard.sandbox import tool_sandbox as tool_sandbox

_SURFACE = {
    "HeldWalk": "paths",
    "MAX_NAME_BYTES": "paths",
    "PathGuard": "paths",
    "PathMissing": "paths",
    "Sandbox": "sandbox",
    "escape_name": "paths",
    "in_git_folder": "protected",
    "resolve_inside": "paths",
    "tool_sandbox": "sandbox",
}

__all__ = [
    "MAX_NAME_BYTES",
    "HeldWalk",
    "PathGuard",
    "PathMissing",
    "Sandbox",
    "escape_name",
    "in_git_folder",
    "resolve_inside",
    "tool_sandbox",
]


def __getattr__(name: str) -> object:
    """A surface name, imported from its module on first use."""
    return load_surface_name(__name__, _SURFACE, name)
