"""The `udm daemon` wire protocol, paths and client side: standard library only (the CLI's thin path).

A message is a 4-byte big-endian length then that many bytes of UTF-8 JSON (one object). Requests are
at most `MAX_REQUEST` bytes, replies at most `MAX_REPLY`. The socket lives in `<state>/daemon/`
(0700, the socket 0600), and each side checks the other's uid with SO_PEERCRED.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import socket
import struct

from udm.errors import DaemonError

TYPE_CHECKING = False

if TYPE_CHECKING:  # runtime imports stay minimal: the client runs before every eligible `udm` command
    from typing import Any

__all__ = [
    "MAX_REPLY",
    "MAX_REQUEST",
    "PROTOCOL",
    "DaemonUnavailable",
    "ProtocolError",
    "clean_stale",
    "connect",
    "daemon_dir",
    "fingerprint",
    "lock_held",
    "lock_path",
    "peer_uid",
    "pid_path",
    "read_pid",
    "recv_message",
    "request",
    "send_message",
    "socket_path",
    "spawn",
]

PROTOCOL = 1
MAX_REQUEST = 1024 * 1024
MAX_REPLY = 256 * 1024 * 1024
_HEADER = struct.Struct(">I")
# sun_path holds 108 bytes with its NUL; longer paths go through /proc/self/fd (see `_address`).
_SUN_PATH_MAX = 107


class ProtocolError(DaemonError):
    """A message that breaks the framing: too long, truncated, not JSON or not an object."""


class DaemonUnavailable(DaemonError):
    """No daemon answered (none runs, a stale socket, another user's socket, a timeout)."""


def daemon_dir(state: str) -> str:
    """The daemon's folder inside the state folder (owner-only)."""
    return os.path.join(state, "daemon")


def socket_path(state: str) -> str:
    """Where the daemon of this state folder listens."""
    return os.path.join(daemon_dir(state), "udm.sock")


def pid_path(state: str) -> str:
    """The daemon's pid file."""
    return os.path.join(daemon_dir(state), "udm.pid")


def lock_path(state: str) -> str:
    """The file a running daemon holds an exclusive flock on (one daemon per state folder)."""
    return os.path.join(daemon_dir(state), "udm.lock")


def fingerprint(cwd: str, env: dict[str, str] | None = None) -> str:
    """What the settings depend on besides the command line: the working directory, the `UDM_*`
    variables and the bytes of `pyproject.toml` and `udm.toml` there. A daemon answers only a client
    whose fingerprint equals its own, so its answers are the ones the client would compute."""
    from udm.config_sources import CONFIG_FILES, setting_variables

    # The variables `Settings` reads (UDM_* in any case) and its config files, by the same rule.
    variables = setting_variables(env)
    h = hashlib.sha256()
    h.update(os.fsencode(cwd) + b"\0")
    for key in sorted(variables):
        h.update(os.fsencode(key) + b"=" + os.fsencode(variables[key]) + b"\0")
    for name in sorted(CONFIG_FILES):
        try:
            with open(os.path.join(cwd, name), "rb") as fh:
                h.update(name.encode() + b":" + hashlib.sha256(fh.read()).digest())
        except OSError:
            h.update(name.encode() + b":-")
    return h.hexdigest()


def send_message(sock: socket.socket, obj: Any) -> None:
    """Send one framed JSON object."""
    body = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    sock.sendall(_HEADER.pack(len(body)) + body)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks: list[bytes] = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise ProtocolError("connection closed in the middle of a message")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def recv_message(sock: socket.socket, limit: int) -> dict[str, Any]:
    """Receive one framed JSON object of at most `limit` bytes; ProtocolError for anything else."""
    header = _recv_exact(sock, _HEADER.size)
    (size,) = _HEADER.unpack(header)
    if size > limit:
        raise ProtocolError(f"message of {size} bytes; the limit is {limit}")
    body = _recv_exact(sock, size)
    try:
        obj = json.loads(body.decode("utf-8", "surrogatepass"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProtocolError(f"not UTF-8 JSON: {exc}") from None
    except RecursionError:
        # json's decoder stops itself at the interpreter's depth limit: a clear refusal, not a dead thread.
        raise ProtocolError("the message is nested too deeply") from None
    if not isinstance(obj, dict):
        raise ProtocolError("the message is not a JSON object")
    return obj


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket (SO_PEERCRED)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


class _Address:
    """A socket address usable whatever the path's length: long paths go through an O_PATH fd."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd: int | None = None

    def __enter__(self) -> str:
        if len(os.fsencode(self.path)) <= _SUN_PATH_MAX:
            return self.path
        self.fd = os.open(os.path.dirname(self.path) or ".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        return f"/proc/self/fd/{self.fd}/{os.path.basename(self.path)}"

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)


def _address(path: str) -> _Address:
    return _Address(path)


def connect(state: str, timeout: float) -> socket.socket:
    """A connection to this state folder's daemon, checked to run as our uid; DaemonUnavailable if none."""
    path = socket_path(state)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        with _address(path) as addr:
            sock.connect(addr)
        if peer_uid(sock) != os.getuid():
            raise DaemonUnavailable(f"{path} belongs to another user")
    except DaemonUnavailable:
        sock.close()
        raise
    except OSError as exc:
        sock.close()
        if exc.errno in (errno.ECONNREFUSED, errno.ENOENT, errno.ENOTSOCK):
            clean_stale(state)
        raise DaemonUnavailable(f"no daemon on {path}: {exc.strerror or exc}") from None
    return sock


def request(state: str, message: dict[str, Any], timeout: float = 300.0) -> dict[str, Any]:
    """Send one request to the daemon and return its reply; DaemonUnavailable when none answered."""
    sock = connect(state, timeout=min(timeout, 5.0))
    try:
        sock.settimeout(timeout)
        send_message(sock, {"v": PROTOCOL, **message})
        reply = recv_message(sock, MAX_REPLY)
    except (OSError, ProtocolError) as exc:
        raise DaemonUnavailable(f"the daemon did not answer: {exc}") from None
    finally:
        sock.close()
    if reply.get("v") != PROTOCOL:
        raise DaemonUnavailable(f"the daemon speaks protocol {reply.get('v')!r}, not {PROTOCOL}")
    return reply


def spawn(root: str, state: str) -> Any:
    """Start `udm daemon run` for this manual, detached, its output appended to <state>/daemon/daemon.log."""
    import subprocess
    import sys

    folder = daemon_dir(state)
    os.makedirs(state, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    log = os.open(
        os.path.join(folder, "daemon.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600
    )
    try:
        code = "from flows.cli import main; main()"
        argv = [sys.executable, "-c", code, "--root", root, "--state-dir", state, "daemon", "run"]
        return subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True
        )
    finally:
        os.close(log)


def read_pid(state: str) -> int | None:
    """The pid in the daemon's pid file, or None."""
    try:
        with open(pid_path(state), encoding="ascii") as fh:
            return int(fh.read().strip())
    except (OSError, ValueError):
        return None


def _take_lock(state: str) -> int | None:
    """The lock file's fd with the daemon lock held (no daemon runs), or None when one holds it."""
    import fcntl

    try:
        fd = os.open(lock_path(state), os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        fd = -1
    except OSError:
        return None
    if fd >= 0:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return None
    return fd


def lock_held(state: str) -> bool:
    """Whether a daemon (running or still starting) holds this state folder's lock."""
    fd = _take_lock(state)
    if fd is None:
        return True
    if fd >= 0:
        os.close(fd)
    return False


def clean_stale(state: str) -> bool:
    """Remove the socket and pid file a dead daemon left behind; whether there was one to remove."""
    path = socket_path(state)
    if not os.path.lexists(path) and not os.path.lexists(pid_path(state)):
        return False
    fd = _take_lock(state)
    if fd is None:
        return False  # a live daemon (perhaps still starting): its files stay
    removed = False
    try:
        # Removed while holding the lock, so a daemon starting now cannot lose its fresh socket.
        for leftover in (path, pid_path(state)):
            try:
                os.unlink(leftover)
                removed = True
            except OSError:
                pass
    finally:
        if fd >= 0:
            os.close(fd)
    return removed
