"""`udm daemon start|stop|status|run`: the warm query process of one manual (no Prefect import).

The daemon holds the index connection, the search reader and the graph (each cached per process by
`udm.index.query` and `udm.graph.store`), stays fresh through the index's inotify watch (stat scan as the
fallback), and answers the thin client in `flows.entry` and the MCP server over the socket that
`udm.daemon.server` serves. Read-only commands only: `query ...`, `search`, and the reading `graph` commands.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import time
from typing import Any

import typer

from flows.say import say
from udm import daemon as dc  # the package's surface: server and thin client
from udm.config import Settings
from udm.daemon import DAEMON_TOOLS, settings_digest

__all__ = ["register", "serve"]

daemon_app = typer.Typer(
    help="The warm query daemon of this manual (socket in <state>/daemon/).", no_args_is_help=True
)


def _refuse_all(request: Any) -> bool:
    from tasks.base import ApprovalUnavailableError

    raise ApprovalUnavailableError(f"{request.tool} needs approval, which the daemon cannot ask for")


class _Handlers:
    """What the daemon does for `run` (a CLI command line) and `tool` (one MCP tool call)."""

    def __init__(self, s: Settings) -> None:
        self.settings = s
        self.root = str(s.udm_root)
        self.state = str(s.state_path)
        self.fingerprint = dc.fingerprint(os.getcwd())
        self.digest = settings_digest(s)
        self._command: Any = None  # the CLI as a click command, built on first use

    def run(self, req: dict[str, Any]) -> dict[str, Any]:
        """Run an eligible `udm` command line as the client would, capturing its output."""
        from flows import cli
        from flows.entry import daemon_eligible

        argv = req.get("argv")
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv) or len(argv) > 256:
            return {"error": "bad request: argv must be a list of at most 256 strings"}
        if req.get("fingerprint") != self.fingerprint:
            return {"fallback": "the client's working directory, UDM_* variables or config files differ"}
        conf = daemon_eligible(argv)
        if conf is None or conf["root"] != self.root or conf["state"] != self.state:
            return {"fallback": "not a command for this daemon"}
        if self._command is None:
            cli.memoize_settings()
            self._command = typer.main.get_command(cli.app)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.run(argv, command=self._command)
        if code == 2:
            # Usage errors are laid out for the client's terminal: it prints them itself.
            return {"fallback": "usage error"}
        return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}

    def tool(self, req: dict[str, Any]) -> dict[str, Any]:
        """One read-only tool call for the MCP server, with the daemon's warm engine."""
        from tasks.base import ToolContext, call_tool
        from tasks.registry import get_tool

        name, raw = req.get("tool"), req.get("input")
        if name not in DAEMON_TOOLS or not isinstance(raw, dict):
            return {
                "error": f"bad request: tool must be one of {', '.join(DAEMON_TOOLS)} with an object input"
            }
        if req.get("settings") != self.digest:
            return {"fallback": "the caller's settings differ from the daemon's"}
        tool = get_tool(name)
        if tool is None:
            return {"fallback": f"{name} is not registered"}
        result = call_tool(tool, raw, ToolContext(settings=self.settings, approver=_refuse_all, log=True))
        return {
            "envelope": result.envelope.model_dump(mode="json"),
            "decision": result.decision,
            "duration_ms": result.duration_ms,
        }


def _warm(s: Settings) -> None:
    # Load what the first queries would: the index (fresh, watched), definitions and the search reader.
    from udm.index import get_query

    q = get_query(s)
    q.fresh()
    q.find_by_id("UDM-DAEMON-WARMUP-0")
    q.search("warmup", limit=1)


def serve(s: Settings) -> int:
    """Run the daemon in this process until stopped; 3 when another daemon already runs."""
    from udm.daemon import AlreadyRunning, DaemonServer

    handlers = _Handlers(s)
    server = DaemonServer(
        handlers.state,
        {"run": handlers.run, "tool": handlers.tool},
        info={"root": handlers.root, "state": handlers.state, "cwd": os.getcwd()},
    )
    try:
        server.acquire()
    except AlreadyRunning:
        say(f"udm daemon: already running for {handlers.state}", err=True)
        return 3
    try:
        server.install_signals()
        try:
            _warm(s)
        except Exception as exc:  # queries report the same problem to their callers
            say(f"udm daemon: warm-up failed: {type(exc).__name__}: {exc}", err=True)
        server.bind()
        say(f"udm daemon: pid {os.getpid()} listening on {server.sock_path}", err=True)
        server.serve_forever()
    finally:
        server.close()
    return 0


def _ping(state: str) -> dict[str, Any] | None:
    try:
        reply = dc.request(state, {"op": "ping"}, timeout=5.0)
    except dc.DaemonUnavailable:
        return None
    return reply if reply.get("ok") else None


def _settings() -> Settings:
    from flows.cli import settings

    return settings()


@daemon_app.command("start")
def cmd_start(
    timeout: float = typer.Option(300.0, "--timeout", min=1, help="Seconds to wait for it to answer."),
) -> None:
    """Start the daemon in the background (warming the index first); a running one is left as is."""
    from flows.cli import fail

    s = _settings()
    state, root = str(s.state_path), str(s.udm_root)
    running = _ping(state)
    if running is not None:
        say(f"udm daemon already running (pid {running['pid']}) on {dc.socket_path(state)}")
        return
    dc.clean_stale(state)
    proc = dc.spawn(root, state)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        reply = _ping(state)
        if reply is not None:
            if reply["pid"] == proc.pid:
                say(f"udm daemon started (pid {proc.pid}) on {dc.socket_path(state)}")
            else:
                say(f"udm daemon already running (pid {reply['pid']}) on {dc.socket_path(state)}")
            return
        code = proc.poll()
        if code is not None and code != 3:
            raise fail(f"the daemon exited with status {code}; see {dc.daemon_dir(state)}/daemon.log")
        time.sleep(0.05)
    raise fail(f"the daemon did not answer within {timeout:g} s; see {dc.daemon_dir(state)}/daemon.log")


def _wait_unlocked(state: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not dc.lock_held(state):
            dc.clean_stale(state)
            return True
        time.sleep(0.05)
    return False


@daemon_app.command("stop")
def cmd_stop(
    timeout: float = typer.Option(10.0, "--timeout", min=0.1, help="Seconds to wait before SIGTERM."),
) -> None:
    """Stop the daemon (its socket and pid file are removed)."""
    import signal

    from flows.cli import fail

    state = str(_settings().state_path)
    reply = _ping(state)
    if reply is None and not dc.lock_held(state):
        dc.clean_stale(state)
        say(f"no udm daemon running for {state}")
        return
    pid = reply["pid"] if reply is not None else dc.read_pid(state)
    if reply is not None:
        with contextlib.suppress(dc.DaemonUnavailable):
            dc.request(state, {"op": "stop"}, timeout=5.0)
        if _wait_unlocked(state, timeout):
            say(f"udm daemon stopped (pid {pid})")
            return
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        if _wait_unlocked(state, 5.0):
            say(f"udm daemon stopped (pid {pid}, after SIGTERM)")
            return
    raise fail(f"the daemon (pid {pid}) did not stop")


@daemon_app.command("status")
def cmd_status(as_json: bool = typer.Option(False, "--json", help="Print the status as JSON.")) -> None:
    """Whether the daemon runs (exit 0) or not (exit 1), with its pid, socket and counters."""
    state = str(_settings().state_path)
    reply = _ping(state)
    if reply is None:
        dc.clean_stale(state)
        if as_json:
            say(json.dumps({"running": False, "socket": dc.socket_path(state)}))
        else:
            say(f"no udm daemon running for {state}")
        raise typer.Exit(1)
    info = {
        "running": True,
        "pid": reply["pid"],
        "socket": dc.socket_path(state),
        "root": reply.get("root"),
        "uptime_s": round(time.time() - float(reply.get("started", time.time())), 1),
        "served": reply.get("served"),
    }
    if as_json:
        say(json.dumps(info, indent=2))
    else:
        say(
            f"udm daemon running: pid {info['pid']}, socket {info['socket']}, root {info['root']}, "
            f"up {info['uptime_s']} s, {info['served']} requests served"
        )


@daemon_app.command("run")
def cmd_run() -> None:
    """Run the daemon in the foreground (what `start` runs in the background)."""
    code = serve(_settings())
    if code:
        raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add `udm daemon` to the root app."""
    app.add_typer(daemon_app, name="daemon")
