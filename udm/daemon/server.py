"""The `udm daemon` server: one warm process per state folder answering framed JSON over a Unix socket.

It holds the lock `<state>/daemon/udm.lock` for its whole life (a second daemon finds the first), the
pid file beside it, and listens on `<state>/daemon/udm.sock` (folder 0700, socket 0600, every peer's
uid checked with SO_PEERCRED). A request is one message (`udm.daemon.client` has the framing and the
limits); a malformed or oversized one gets an error reply, a silent peer is dropped after
`read_timeout`, and nothing a client sends can stop the loop except an `op: stop` from our own uid.
What a request does is up to the handlers the caller passes (`flows.cli_daemon` wires the CLI and the
tools); this module imports neither Prefect nor the engine.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import signal
import socket
import stat
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from udm.daemon.client import (
    MAX_REQUEST,
    PROTOCOL,
    ProtocolError,
    _address,
    daemon_dir,
    lock_path,
    peer_uid,
    pid_path,
    recv_message,
    send_message,
    socket_path,
)
from udm.errors import ConfigError, DaemonError

__all__ = ["DAEMON_TOOLS", "AlreadyRunning", "DaemonServer", "Handler", "prepare_dir", "settings_digest"]

if TYPE_CHECKING:
    from udm.config import Settings

# Tools the MCP server may hand to the daemon: read-only ones, which never ask for approval there.
DAEMON_TOOLS = ("udmQueryTool", "knowledgeGraphQueryTool")

Handler = Callable[[dict[str, Any]], dict[str, Any]]

# At most this many connections are read at once; more wait in the listen backlog.
MAX_CLIENTS = 32


def settings_digest(s: Settings) -> str:
    """A digest of every resolved setting: a caller and the daemon must agree on it."""
    # Root and state as resolved paths: `--root docs/udm` and its absolute form are the same manual.
    data = s.model_dump(mode="json", exclude={"root", "state_dir"})
    data["resolved"] = [str(s.udm_root), str(s.state_path)]
    text = json.dumps(data, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class AlreadyRunning(DaemonError):
    """Another daemon holds this state folder's lock."""


def prepare_dir(state: str) -> str:
    """Create `<state>/daemon` owner-only (0700), refusing a symlink or a folder another uid owns."""
    path = daemon_dir(state)
    try:
        os.makedirs(state, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
        st = os.lstat(path)
    except OSError as exc:
        raise ConfigError(f"cannot use {path} for the daemon: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"{path} is not a folder (a symlink or a file is refused)")
    if st.st_uid != os.getuid():
        raise ConfigError(f"{path} belongs to uid {st.st_uid}, not to us ({os.getuid()})")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700)
    return path


class DaemonServer:
    """The socket, lock and pid file of one daemon, and its accept loop."""

    def __init__(
        self,
        state: str,
        handlers: dict[str, Handler],
        info: dict[str, Any] | None = None,
        read_timeout: float = 5.0,
    ) -> None:
        self.state = state
        self.handlers = handlers
        self.info = dict(info or {})
        self.read_timeout = read_timeout
        self.sock_path = socket_path(state)
        self._lock_fd: int | None = None
        self._listener: socket.socket | None = None
        self._stop = threading.Event()
        self._slots = threading.BoundedSemaphore(MAX_CLIENTS)
        # Handlers run one at a time: the CLI handler redirects the process's stdout and stderr.
        self.exec_lock = threading.Lock()
        self.started = time.time()
        self.served = 0

    # ----- life cycle ---------------------------------------------------------------------------

    def acquire(self) -> None:
        """Take the daemon lock and write the pid file; AlreadyRunning when another daemon holds it."""
        prepare_dir(self.state)
        fd = os.open(lock_path(self.state), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise AlreadyRunning(self.state) from None
        self._lock_fd = fd
        tmp = pid_path(self.state) + ".tmp"
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600), "w") as fh:
            fh.write(f"{os.getpid()}\n")
        os.replace(tmp, pid_path(self.state))

    def bind(self) -> None:
        """Listen on the socket (0600 from the start: bound under umask 0177)."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.sock_path)  # we hold the lock: whatever is there is a dead daemon's
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            with _address(self.sock_path) as addr:
                listener.bind(addr)
        finally:
            os.umask(old)
        os.chmod(self.sock_path, 0o600)
        listener.listen(64)
        listener.settimeout(0.25)
        self._listener = listener

    def stop(self) -> None:
        """Ask the loop to end (safe from a signal handler or another thread)."""
        self._stop.set()

    def close(self) -> None:
        """Stop listening and remove the socket and pid file, then release the lock."""
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        for path in (self.sock_path, pid_path(self.state)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def install_signals(self) -> None:
        """SIGTERM and SIGINT end the loop cleanly."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.stop())

    def serve_forever(self) -> None:
        """Accept connections until stopped; each is answered on a thread of its own."""
        assert self._listener is not None, "bind() first"
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._stop.is_set():
                    break
                raise
            if not self._slots.acquire(timeout=self.read_timeout):
                conn.close()  # every slot busy with a silent peer for a whole timeout: drop this one
                continue
            threading.Thread(target=self._serve_one, args=(conn,), daemon=True).start()

    # ----- one connection -----------------------------------------------------------------------

    def _serve_one(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(self.read_timeout)
            try:
                uid = peer_uid(conn)
            except OSError:
                return
            if uid != os.getuid():
                self._reply(conn, {"error": "permission denied: the daemon answers its owner only"})
                return
            try:
                req = recv_message(conn, MAX_REQUEST)
            except ProtocolError as exc:
                self._reply(conn, {"error": f"bad request: {exc}"})
                return
            except OSError:
                return  # timed out or reset: nobody to answer
            conn.settimeout(None)
            self._reply(conn, self.dispatch(req))
        finally:
            conn.close()
            self._slots.release()

    def _reply(self, conn: socket.socket, body: dict[str, Any]) -> None:
        with contextlib.suppress(OSError):
            send_message(conn, {"v": PROTOCOL, **body})

    def dispatch(self, req: dict[str, Any]) -> dict[str, Any]:
        """The reply to one decoded request (never raises)."""
        if req.get("v") != PROTOCOL:
            return {"error": f"bad request: protocol version {req.get('v')!r}, expected {PROTOCOL}"}
        op = req.get("op")
        if op == "ping":
            return {
                "ok": True,
                "pid": os.getpid(),
                "started": self.started,
                "served": self.served,
                **self.info,
            }
        if op == "stop":
            self.stop()
            return {"ok": True, "pid": os.getpid()}
        handler = self.handlers.get(op) if isinstance(op, str) else None
        if handler is None:
            return {"error": f"bad request: unknown op {op!r}"}
        try:
            with self.exec_lock:
                reply = handler(req)
                if "error" not in reply and "fallback" not in reply:
                    self.served += 1  # requests answered, not those handed back to the client
                return reply
        except Exception as exc:  # the client runs the command itself; the daemon lives on
            print(f"udm daemon: {op} failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            return {"fallback": f"the daemon failed: {type(exc).__name__}: {exc}"}


def describe(reply: dict[str, Any]) -> str:
    """A one-line summary of a ping reply."""
    return json.dumps({k: reply[k] for k in sorted(reply) if k != "v"}, ensure_ascii=False)
