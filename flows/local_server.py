"""The local Prefect server: `prefect server start` on 127.0.0.1 in the background, its data under state/.

The server keeps run history (a temporary per-process server loses most of it and costs 10-17 s per
flow run; against a running server a flow run takes about 3 s). Its database and home live in
`<state>/prefect`, analytics are off, the port is set with PREFECT_SERVER_API_PORT (with `--port`
the UI would call the default port), and `start` returns only once `/api/health` answers.
This module never imports Prefect: it manages a subprocess.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from udm.config import Settings

__all__ = [
    "DEFAULT_PORT",
    "ServerInfo",
    "api_url_if_running",
    "prefect_env",
    "server_status",
    "start_server",
    "stop_server",
    "use_running_server",
]

DEFAULT_PORT = 4200
HOST = "127.0.0.1"


@dataclass(frozen=True)
class ServerInfo:
    """A running (or last started) server."""

    pid: int
    port: int
    home: Path
    log: Path

    @property
    def api_url(self) -> str:
        """The API URL clients use (PREFECT_API_URL)."""
        return f"http://{HOST}:{self.port}/api"

    @property
    def ui_url(self) -> str:
        """The UI's address."""
        return f"http://{HOST}:{self.port}"


def _home(settings: Settings) -> Path:
    return settings.state_path / "prefect"


def _info_file(settings: Settings) -> Path:
    return _home(settings) / "server.json"


def prefect_env(home: Path, port: int | None = None) -> dict[str, str]:
    """Environment for a Prefect process whose home (and database) is `home`, analytics off."""
    env = dict(os.environ)
    env.update(
        PREFECT_HOME=str(home),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        DO_NOT_TRACK="1",
        PREFECT_SERVER_API_HOST=HOST,
        PREFECT_SERVER_DATABASE_CONNECTION_URL=f"sqlite+aiosqlite:///{home / 'prefect.db'}",
        # SQLite answers "busy" under load; wait for the lock longer than the defaults (10 s / 5 s)
        # instead of failing requests with 503.
        PREFECT_SERVER_DATABASE_TIMEOUT="60",
        PREFECT_SERVER_DATABASE_CONNECTION_TIMEOUT="30",
        PREFECT_API_LOG_RETRYABLE_ERRORS="true",
    )
    if port is not None:
        env["PREFECT_SERVER_API_PORT"] = str(port)
    env.pop("PREFECT_API_URL", None)
    return env


def _healthy(port: int, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"http://{HOST}:{port}/api/health", timeout=timeout) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still answers kill(0); reap it if it is ours.
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return True


def _is_prefect_server(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return True  # no /proc (not Linux): trust the pid file
    return b"prefect" in cmdline and b"server" in cmdline


def _read_info(settings: Settings) -> ServerInfo | None:
    try:
        data: dict[str, Any] = json.loads(_info_file(settings).read_text())
        return ServerInfo(
            pid=int(data["pid"]), port=int(data["port"]), home=Path(data["home"]), log=Path(data["log"])
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def server_status(settings: Settings) -> tuple[str, ServerInfo | None]:
    """('running' | 'starting' | 'stopped', info)."""
    info = _read_info(settings)
    if info is None or not _alive(info.pid):
        return "stopped", info
    return ("running" if _healthy(info.port) else "starting"), info


def api_url_if_running(settings: Settings) -> str | None:
    """The API URL of this project's server when it runs and answers, else None."""
    state, info = server_status(settings)
    return info.api_url if state == "running" and info else None


def use_running_server(settings: Settings) -> str | None:
    """Point Prefect (imported later in this process) at the project's server when it runs."""
    if os.environ.get("PREFECT_API_URL"):
        return os.environ["PREFECT_API_URL"]
    url = api_url_if_running(settings)
    if url:
        os.environ["PREFECT_API_URL"] = url
    return url


def start_server(settings: Settings, port: int = DEFAULT_PORT, timeout: float = 90.0) -> ServerInfo:
    """Start the server in the background (or return the running one); waits for /api/health."""
    state, info = server_status(settings)
    if state == "running" and info:
        return info
    if state == "starting" and info:
        _wait_healthy(info, timeout)
        return info
    if _healthy(port):
        raise RuntimeError(
            f"port {port} already serves a Prefect API that is not this project's; choose --port"
        )
    home = _home(settings)
    home.mkdir(parents=True, exist_ok=True)
    log = home / "server.log"
    prefect = Path(sys.executable).with_name("prefect")
    command = [str(prefect)] if prefect.exists() else [sys.executable, "-m", "prefect"]
    with open(log, "ab") as log_fh:
        # A session of its own: `stop` signals exactly this process group, nothing else.
        proc = subprocess.Popen(
            [*command, "server", "start", "--host", HOST],
            env=prefect_env(home, port),
            stdin=subprocess.DEVNULL,
            stdout=log_fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=str(home),
        )
    info = ServerInfo(pid=proc.pid, port=port, home=home, log=log)
    tmp = _info_file(settings).with_suffix(".tmp")
    tmp.write_text(json.dumps({"pid": info.pid, "port": port, "home": str(home), "log": str(log)}))
    tmp.replace(_info_file(settings))
    try:
        _wait_healthy(info, timeout, proc)
    except RuntimeError:
        stop_server(settings)
        raise
    return info


def _wait_healthy(info: ServerInfo, timeout: float, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _healthy(info.port, timeout=1.0):
            return
        if proc is not None and proc.poll() is not None:
            tail = info.log.read_text(errors="replace")[-1500:] if info.log.exists() else ""
            raise RuntimeError(f"prefect server exited with code {proc.returncode}:\n{tail}")
        time.sleep(0.3)
    raise RuntimeError(
        f"prefect server did not answer {info.api_url}/health within {timeout:.0f} s (log: {info.log})"
    )


def stop_server(settings: Settings, timeout: float = 20.0) -> bool:
    """Stop the project's server; True when one was running."""
    info = _read_info(settings)
    if info is None or not _alive(info.pid):
        _info_file(settings).unlink(missing_ok=True)
        return False
    if not _is_prefect_server(info.pid):
        # The pid was reused by an unrelated process: never signal it.
        _info_file(settings).unlink(missing_ok=True)
        return False
    with contextlib.suppress(ProcessLookupError):
        os.killpg(info.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _alive(info.pid):
        time.sleep(0.2)
    if _alive(info.pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(info.pid, signal.SIGKILL)
    _info_file(settings).unlink(missing_ok=True)
    return True
