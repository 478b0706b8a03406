"""The warm per-manual daemon: its server, and the standard-library client the CLI's thin path uses.

The names in `__all__` are the package's public surface: code outside the package imports them from
here. They load on first use, so importing the package stays cheap for the CLI's fast paths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from udm._lazy import load_surface_name

if TYPE_CHECKING:
    from udm.daemon.server import DAEMON_TOOLS as DAEMON_TOOLS
    from udm.daemon.server import AlreadyRunning as AlreadyRunning
    from udm.daemon.server import DaemonServer as DaemonServer
    from udm.daemon.server import settings_digest as settings_digest

_SURFACE = {
    "AlreadyRunning": "server",
    "DAEMON_TOOLS": "server",
    "DaemonServer": "server",
    "settings_digest": "server",
}

__all__ = [
    "DAEMON_TOOLS",
    "AlreadyRunning",
    "DaemonServer",
    "settings_digest",
]


def __getattr__(name: str) -> object:
    """A surface name, imported from its module on first use."""
    return load_surface_name(__name__, _SURFACE, name)
