"""`udm daemon`: same answers as the CLI without it, owner-only socket, clean life cycle, hostile input."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from udm.daemon import DaemonServer
from udm.daemon import client as dc
from udm.daemon import server as daemon_mod

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "examples" / "udm"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UDM_")}
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


def udm(cwd: Path, *args: str, **env: str) -> tuple[int, str, str]:
    """Run the `udm` console script's entry point as a process."""
    proc = subprocess.run(
        [sys.executable, "-c", "from flows.entry import main; main()", *args],
        cwd=cwd,
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode, proc.stdout, proc.stderr


def _project(base: Path) -> Path:
    shutil.copytree(SAMPLE, base / "docs" / "udm")
    for sub in ("state", "logs"):
        (base / sub).mkdir()
    return base


def _served(state: Path) -> int:
    return int(dc.request(str(state), {"op": "ping"})["served"])


COMMANDS: list[tuple[str, ...]] = [
    ("query", "id", "COMP-002"),
    ("query", "id", "NOPE-404"),
    ("query", "section", "COMP-002"),
    ("search", "sandbox", "symlink", "--limit", "3"),
    ("query", "config", "http.timeout", "--json"),
    ("graph", "stats"),
]


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[tuple[str, ...], Any]]]:
    """A project with the CLI's answers taken before a daemon was started, then the daemon running."""
    project = _project(tmp_path_factory.mktemp("daemon"))
    before = {cmd: udm(project, *cmd) for cmd in COMMANDS}
    code, out, err = udm(project, "daemon", "start")
    assert code == 0, err
    assert out.startswith("udm daemon started (pid ")
    yield project, before
    udm(project, "daemon", "stop")


def test_same_output_and_exit_codes_through_the_daemon(running: tuple[Path, dict[Any, Any]]) -> None:
    project, before = running
    state = project / "state"
    assert before[("query", "id", "NOPE-404")][0] == 1  # an error result keeps its exit code
    for cmd, expected in before.items():
        served = _served(state)
        assert udm(project, *cmd) == expected, cmd
        assert _served(state) == served + 1, f"{cmd} was not answered by the daemon"


def test_socket_is_owner_only_and_a_second_start_finds_the_first(running: tuple[Path, Any]) -> None:
    project, _ = running
    folder = project / "state" / "daemon"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    sock = folder / "udm.sock"
    assert stat.S_ISSOCK(sock.lstat().st_mode) and stat.S_IMODE(sock.lstat().st_mode) == 0o600
    pid = dc.read_pid(str(project / "state"))
    code, out, _ = udm(project, "daemon", "start")
    assert code == 0 and out == f"udm daemon already running (pid {pid}) on {sock}\n"
    code, out, _ = udm(project, "daemon", "status", "--json")
    assert code == 0 and json.loads(out)["pid"] == pid


def test_fresh_after_an_edit_and_other_settings_fall_back(running: tuple[Path, Any]) -> None:
    project, _ = running
    state = project / "state"
    page = project / "docs" / "udm" / "01-introduction.md"
    original = page.read_text(encoding="utf-8")
    try:
        page.write_text(original + "\n## DEC-9911: Daemon freshness\n\nAnswered warm.\n", encoding="utf-8")
        code, out, _ = udm(project, "query", "id", "DEC-9911")
        assert code == 0 and out.startswith("DEC-9911\t01-introduction.md:")
        # Another UDM_* variable: the daemon's answers might differ, so the client answers itself.
        served = _served(state)
        assert udm(project, "query", "id", "DEC-9911", UDM_LINT_FAIL_ON="never")[1] == out
        assert _served(state) == served
    finally:
        page.write_text(original, encoding="utf-8")


def test_the_thin_client_imports_nothing_heavy(running: tuple[Path, Any]) -> None:
    project, _ = running
    probe = (
        "import sys; from flows.entry import via_daemon; "
        "code = via_daemon(['search', 'sandbox']); "
        "heavy = [m for m in ('duckdb', 'prefect', 'pydantic', 'tantivy', 'typer', 'networkx') "
        "if m in sys.modules]; print(code, heavy, file=sys.stderr)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=project, env=_env(), capture_output=True, text=True, timeout=60
    )
    assert proc.stderr.strip() == "0 []", proc.stderr


def test_mcp_server_uses_the_warm_engine(running: tuple[Path, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    from tasks.base import ToolContext, call_tool
    from tasks.mcp_server import call_via_daemon
    from tasks.udm_query import UdmQueryTool
    from udm.config import load_settings

    project, _ = running
    monkeypatch.chdir(project)
    s = load_settings(project)
    args = {"query_type": "find_by_id", "udm_path_or_id": "COMP-002"}
    served = _served(project / "state")
    warm = call_via_daemon(UdmQueryTool(), args, ToolContext(settings=s))
    assert warm is not None and _served(project / "state") == served + 1
    local = call_tool(UdmQueryTool(), args, ToolContext(settings=s))
    assert warm.envelope == local.envelope
    # Other settings: the daemon declines and the server runs the call itself.
    other = s.model_copy(update={"allow_delete": not s.allow_delete})
    assert call_via_daemon(UdmQueryTool(), args, ToolContext(settings=other)) is None


def test_stop_is_clean_and_a_dead_daemon_falls_back_silently(tmp_path: Path) -> None:
    project = _project(tmp_path)
    state = project / "state"
    expected = udm(project, "query", "id", "COMP-002")
    assert udm(project, "daemon", "stop") == (0, f"no udm daemon running for {state}\n", "")
    assert udm(project, "daemon", "start")[0] == 0
    pid = dc.read_pid(str(state))
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while dc.lock_held(str(state)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (state / "daemon" / "udm.sock").exists()  # SIGKILL left it behind
    assert udm(project, "query", "id", "COMP-002") == expected
    assert not (state / "daemon" / "udm.sock").exists() and not (state / "daemon" / "udm.pid").exists()
    assert udm(project, "daemon", "status")[0] == 1
    # A clean stop removes socket and pid file.
    assert udm(project, "daemon", "start")[0] == 0
    code, out, _ = udm(project, "daemon", "stop")
    assert code == 0 and out.startswith("udm daemon stopped (pid ")
    assert sorted(p.name for p in (state / "daemon").iterdir()) == ["daemon.log", "udm.lock"]


def test_autostart_setting_starts_the_daemon_on_first_use(tmp_path: Path) -> None:
    project = _project(tmp_path)
    state = project / "state"
    expected = udm(project, "search", "sandbox")
    try:
        assert udm(project, "search", "sandbox", UDM_DAEMON_AUTOSTART="true") == expected
        deadline = time.monotonic() + 120
        while not (state / "daemon" / "udm.sock").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        served = _served(state)
        assert udm(project, "search", "sandbox", UDM_DAEMON_AUTOSTART="true") == expected
        assert _served(state) == served + 1
    finally:
        udm(project, "daemon", "stop", UDM_DAEMON_AUTOSTART="true")


# ----- the socket protocol against hostile clients (an in-process server with a trivial handler) -----


@pytest.fixture
def server(tmp_path: Path) -> Iterator[DaemonServer]:
    """A DaemonServer on a long path (past sun_path's 107 bytes) echoing `run` requests."""
    state = tmp_path / ("x" * 60) / ("y" * 60) / "state"
    srv = DaemonServer(
        str(state), {"run": lambda req: {"code": 0, "echo": req.get("argv")}}, read_timeout=0.5
    )
    srv.acquire()
    srv.bind()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.stop()
    thread.join(5)
    srv.close()


def _raw(srv: DaemonServer, payload: bytes) -> dict[str, Any] | None:
    """Send raw bytes, half-close, and return the reply (None when the daemon just closed)."""
    with dc._address(srv.sock_path) as addr:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(addr)
    try:
        # The daemon may answer (a refusal) and close before reading everything.
        with contextlib.suppress(OSError):
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
        try:
            return dc.recv_message(s, dc.MAX_REPLY)
        except (dc.ProtocolError, OSError):
            return None
    finally:
        s.close()


def _frame(obj: Any) -> bytes:
    body = json.dumps(obj).encode()
    return struct.pack(">I", len(body)) + body


def test_protocol_answers_and_bounds(server: DaemonServer) -> None:
    state = server.state
    assert dc.request(state, {"op": "run", "argv": ["a"]}) == {"v": 1, "code": 0, "echo": ["a"]}
    assert "unknown op" in _raw(server, _frame({"v": 1, "op": "nope"}))["error"]  # type: ignore[index]
    assert "protocol version" in _raw(server, _frame({"op": "ping"}))["error"]  # type: ignore[index]
    too_big = struct.pack(">I", dc.MAX_REQUEST + 1)
    assert "limit" in _raw(server, too_big)["error"]  # type: ignore[index]
    assert "not a JSON object" in _raw(server, _frame([1, 2]))["error"]  # type: ignore[index]
    # A silent client is dropped after read_timeout, and the daemon still answers others.
    with dc._address(server.sock_path) as addr:
        idle = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        idle.connect(addr)
    idle.settimeout(5)
    started = time.monotonic()
    assert idle.recv(10) == b""
    assert time.monotonic() - started < 3
    idle.close()
    assert dc.request(state, {"op": "ping"})["ok"] is True


def test_a_deeply_nested_request_is_answered_as_a_bad_request(server: DaemonServer) -> None:
    # 200,000 nested lists fit the 1 MiB frame; json.loads raised RecursionError in the connection's
    # thread, which died with a traceback on the daemon's stderr and left the client without an answer.
    body = b"[" * 200_000 + b"]" * 200_000
    reply = _raw(server, struct.pack(">I", len(body)) + body)
    assert reply is not None and "nested too deeply" in reply["error"], reply
    assert dc.request(server.state, {"op": "ping"})["ok"] is True


def test_peer_of_another_uid_is_refused(server: DaemonServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(daemon_mod, "peer_uid", lambda conn: os.getuid() + 1)
    reply = _raw(server, _frame({"v": 1, "op": "run", "argv": []}))
    assert reply is not None and "permission denied" in reply["error"]


def test_a_foreign_socket_is_not_trusted_by_the_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    srv = DaemonServer(str(tmp_path / "state"), {})
    srv.acquire()
    srv.bind()
    try:
        monkeypatch.setattr(dc, "peer_uid", lambda sock: os.getuid() + 1)
        with pytest.raises(dc.DaemonUnavailable, match="another user"):
            dc.connect(str(tmp_path / "state"), timeout=1)
    finally:
        srv.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    payload=st.one_of(
        st.binary(max_size=300),
        st.builds(lambda b: struct.pack(">I", len(b)) + b, st.binary(max_size=200)),
        st.builds(
            _frame,
            st.recursive(
                st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                lambda inner: (
                    st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
                ),
                max_leaves=12,
            ),
        ),
        st.builds(
            _frame,
            st.fixed_dictionaries(
                {
                    "v": st.sampled_from([1, 2, "1", None]),
                    "op": st.sampled_from(["run", "stop?", "", 3, None]),
                }
            ),
        ),
    )
)
def test_hostile_bytes_never_crash_the_daemon(server: DaemonServer, payload: bytes) -> None:
    reply = _raw(server, payload)
    if reply is not None:
        assert reply["v"] == 1 and set(reply) <= {"v", "error", "code", "echo"}
    assert dc.request(server.state, {"op": "ping"})["ok"] is True


@pytest.mark.parametrize(
    ("reply", "handled"),
    [
        ({"code": 0, "stdout": "out\n", "stderr": "err\n"}, True),
        ({"code": 1, "stdout": "", "stderr": "error: x\n"}, True),
        ({"code": "0", "stdout": "out\n"}, False),
        ({"code": True, "stdout": "out\n"}, False),
        ({"fallback": "usage error"}, False),
        ({"error": "bad request"}, False),
    ],
)
def test_client_reproduces_a_reply_or_steps_aside(
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    reply: dict[str, Any],
    handled: bool,
) -> None:
    from flows.entry import via_daemon

    monkeypatch.chdir(workspace)
    seen: list[dict[str, Any]] = []
    srv = DaemonServer(str(workspace / "state"), {"run": lambda req: seen.append(req) or dict(reply)})
    srv.acquire()
    srv.bind()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        code = via_daemon(["query", "id", "COMP-002"])
    finally:
        srv.stop()
        thread.join(5)
        srv.close()
    assert seen and seen[0]["argv"] == ["query", "id", "COMP-002"]
    assert seen[0]["fingerprint"] == dc.fingerprint(str(workspace))
    out, err = capsys.readouterr()
    if handled:
        assert code == reply["code"] and out == reply["stdout"] and err == reply["stderr"]
    else:
        assert code is None and out == "" and err == ""
