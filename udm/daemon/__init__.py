"""The warm per-manual daemon: its server, and the standard-library client the CLI's thin path uses.

The names in `__all__` are the package's public surface: code outside the package imports them from
here. They load on first use, so importing the package stays cheap for the CLI's fast paths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from udm._lazy import load_surface_name

if TYPE_CHECKING:
    from udm.daemon.client import DaemonUnavailable as DaemonUnavailable
    from udm.daemon.client import clean_stale as clean_stale
    from udm.daemon.client import daemon_dir as daemon_dir
    from udm.daemon.client import fingerprint as fingerprint
    from udm.daemon.client import lock_held as lock_held
    from udm.daemon.client import read_pid as read_pid
    from udm.daemon.client import request as request
    from udm.daemon.client import socket_path as socket_path
    from udm.daemon.client import spawn as spawn
    from udm.daemon.server import DAEMON_TOOLS as DAEMON_TOOLS
    from udm.daemon.server import AlreadyRunning as AlreadyRunning
    from udm.daemon.server import DaemonServer as DaemonServer
    from udm.daemon.server import settings_digest as settings_digest

_SURFACE = {
    "AlreadyRunning": "server",
    "DAEMON_TOOLS": "server",
    "DaemonServer": "server",
    "DaemonUnavailable": "client",
    "clean_stale": "client",
    "daemon_dir": "client",
    "fingerprint": "client",
    "lock_held": "client",
    "read_pid": "client",
    "request": "client",
    "settings_digest": "server",
    "socket_path": "client",
    "spawn": "client",
}

__all__ = [
    "DAEMON_TOOLS",
    "AlreadyRunning",
    "DaemonServer",
    "DaemonUnavailable",
    "clean_stale",
    "daemon_dir",
    "fingerprint",
    "lock_held",
    "read_pid",
    "request",
    "settings_digest",
    "socket_path",
    "spawn",
]


def __getattr__(name: str) -> object:
    """A surface name, imported from its module on first use."""
    return load_surface_name(__name__, _SURFACE, name)
