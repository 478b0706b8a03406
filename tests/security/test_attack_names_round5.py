"""Round 5 against 04fd8ed (names that are not valid UTF-8, usage errors on a terminal, entries that are
not regular files). Tests marked `# FINDING` failed on 04fd8ed (each comment says how) and pass since
the fixes; guards passed there and must keep passing.

Every CLI call runs as a process (a pipe, or a pty as a terminal), as test_attack_names_and_usage.py does.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .cli_process import ESC, REPO, run_udm, run_udm_streams
from .cli_process import acted_on as _acted_on
from .cli_process import hostile_manual as _manual
from .cli_process import utf8_text as _text


def _run(
    cwd: Path | bytes, *args: str, terminal: bool = False, env: dict[str, str] | None = None
) -> tuple[int, bytes]:
    """`udm ARGS` as a process in `cwd`: its exit code and its stdout+stderr bytes."""
    return run_udm(cwd, *args, terminal=terminal, env=env)


# ----- `udm index` lists each page-named entry that is no regular file, with its true reason -------------


def test_index_lists_a_symlink_loop_named_like_a_page(tmp_path: Path) -> None:
    # FINDING. `loop.md -> loop.md` (or a -> b -> a) has a page suffix and is no regular file: the change
    # says such an entry is listed with its reason. Instead entry.is_file() raises ELOOP, the scan's
    # `except OSError: continue` drops it, and `udm index` says nothing about it (only dangling links,
    # links to folders and FIFOs reach `_not_a_file`); `udm lint` then calls a link to it "does not exist".
    manual = Path(os.fsdecode(_manual(tmp_path)))
    (manual / "loop.md").symlink_to("loop.md")
    (manual / "ping.md").symlink_to("pong.md")
    (manual / "pong.md").symlink_to("ping.md")
    code, out = _run(tmp_path, "index")
    text = _text(out)
    assert code == 0, text
    for name in ("loop.md", "ping.md", "pong.md"):
        assert f"{name}: skipped:" in text, (name, text)


# ----- A manual whose real path is not UTF-8 (reached through a symlink) -----------------------------------


def _symlinked_manual(base: Path) -> None:
    """docs/udm -> ../real\\xff/udm: the configured root's path is UTF-8, its real path is not."""
    real = os.path.join(os.fsencode(base), b"real\xff", b"udm")
    os.makedirs(real)
    with open(os.path.join(real, b"a.md"), "wb") as fh:
        fh.write(b"# Intro\n\n## 1.1 Component COMP-001: Thing\n\nsandbox words\n")
    os.makedirs(os.path.join(os.fsencode(base), b"docs"))
    os.symlink(b"../real\xff/udm", os.path.join(os.fsencode(base), b"docs", b"udm"))
    (base / "ok.json").write_text(
        json.dumps(
            {
                "id": "ok1",
                "description": "d",
                "author": "a",
                "operations": [{"op": "replace_text", "file": "a.md", "old": "sandbox", "new": "sandbax"}],
            }
        )
    )


def test_patch_apply_on_a_manual_whose_real_path_is_not_utf8_is_no_invalid_patch(tmp_path: Path) -> None:
    # FINDING. `docs/udm` is a symlink to `real\xff/udm`. `_utf8_folders` checks str(udm_root) only (the
    # link's path, UTF-8), so settings load; index, lint, search, the file tool's writeFile all work
    # through the link. But `udm patch apply --yes` reports a valid patch as "patch ok1: invalid" (exit 1)
    # after its only step said [ok], because the journal's guard realpaths the file. Expected: the
    # patch commits as every other writer does, or settings refuse the root up front with the change's
    # own "root: the path ... is not valid UTF-8" error; never a valid patch called invalid.
    _symlinked_manual(tmp_path)
    code, out = _run(tmp_path, "index")
    assert code == 0 or "root: the path" in _text(out), _text(out)  # indexed, or refused up front
    code, out = _run(tmp_path, "patch", "apply", "--yes", "ok.json")
    text = _text(out)
    assert "Traceback" not in text, text
    settings_error = code == 1 and "root: the path" in text and "is not valid UTF-8" in text
    assert (code == 0 and "committed" in text) or settings_error, text
    assert "invalid" not in text, text


def test_undecodable_byte_is_written_one_way_in_the_patch_commit_error(tmp_path: Path) -> None:
    # FINDING. Claim 4: an undecodable byte of a name is written `\xff`, the same in every line. The
    # commit error above names the same path twice in one line, once as `real\xff` and twice as
    # `real\\xff` (escape_name's text passed through `!r`, which doubles the backslash), and its
    # wording is broken: "cannot commit P: it path 'P' is not valid UTF-8 ('P' holds undecodable
    # bytes)". The `--json` error holds `real\\\\xff`, i.e. the text `real\\xff`, once more.
    _symlinked_manual(tmp_path)
    code, out = _run(tmp_path, "patch", "apply", "--yes", "ok.json")
    text = _text(out)
    if code == 0:
        return  # the patch committed: nothing names the byte
    assert "real\\xff" in text or "real\\udcff" in text, text
    assert "real\\\\xff" not in text, text  # the same byte written a second way
    assert "it path" not in text, text


# ----- Settings files whose bytes are not UTF-8 ----------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("udm.toml", b'root = "docs/udm\xff"\n'),
        ("pyproject.toml", b'[project]\nname = "x"\nauthors = [{name = "Jos\xe9"}]\n'),
    ],
    ids=["udm-toml", "pyproject-latin1"],
)
@pytest.mark.parametrize("command", [["index"], ["query", "id", "COMP-001"]], ids=["index", "query-id"])
def test_settings_file_that_is_not_utf8_is_a_config_error_not_a_traceback(
    tmp_path: Path, name: str, content: bytes, command: list[str]
) -> None:
    # FINDING. A udm.toml holding a byte that is not UTF-8, or a project's pyproject.toml saved as
    # Latin-1 (an author "Jos\xe9"; udm reads [tool.udm] from it even when there is none), ends every
    # command in a traceback: tomllib.load() decodes the bytes strictly and the UnicodeDecodeError escapes
    # read_config_files -> Settings (config_error only wraps ValidationError/SettingsError/TOMLDecodeError).
    # Expected: one line `error: udm.toml: ... not valid UTF-8 ...` (exit 1), as for bad TOML.
    _manual(tmp_path)
    (tmp_path / name).write_bytes(content)
    code, out = _run(tmp_path, *command)
    text = _text(out)
    assert "Traceback" not in text and "UnicodeDecodeError" not in text, text[-1500:]
    assert code == 1 and text.startswith("error: ") and name in text, text


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("spec.yaml", ["pipeline", "check", "spec.yaml"]),
        ("spec.yaml", ["pipeline", "graph", "spec.yaml"]),
        ("vspec.yaml", ["verify", "vspec.yaml"]),
        ("steps.yaml", ["browser", "run", "steps.yaml"]),
        ("prefect.yaml", ["prefect-yaml", "--check"]),
    ],
    ids=["pipeline-check", "pipeline-graph", "verify-spec", "browser-steps", "prefect-yaml-check"],
)
def test_input_file_that_is_not_utf8_is_one_error_not_a_traceback(
    tmp_path: Path, name: str, args: list[str]
) -> None:
    # FINDING. A file the caller names (a pipeline spec, a verify spec, a browser steps file, the
    # prefect.yaml that --check compares) saved in Latin-1 (a byte 0xff) ends the command in a
    # UnicodeDecodeError traceback: each is read with read_text(encoding="utf-8") and only OSError /
    # YAML / JSON errors are caught (tasks/pipeline_spec.py load_spec, udm/verify/spec.py load_spec_file,
    # flows/cli_browser.py _load_steps, flows/prefect_yaml.py). A patch file in the same state gets
    # "patch file P is not UTF-8 text (byte N)". Expected: one error line (exit 1 or 2), no traceback.
    # Nothing is launched: each fails while reading its file.
    _manual(tmp_path)
    (tmp_path / name).write_bytes(b"name: p\xff\nsteps: {}\n")
    code, out = _run(tmp_path, *args)
    text = _text(out)
    assert "Traceback" not in text and "UnicodeDecodeError" not in text, text[-1500:]
    assert code in (1, 2) and "error" in text.lower(), text


# ----- Claim 1: "refused ... before anything runs" -------------------------------------------------------


def test_refused_argument_starts_no_daemon(tmp_path: Path) -> None:
    # FINDING (minor). With `daemon_autostart = true`, `udm search $'x\xff'` is refused (exit 2, one line)
    # as the change says, but flows/entry.py's via_daemon runs first: daemon_eligible only checks the
    # settings' paths, finds no socket and spawns `udm daemon run` in the background (state/daemon/ with
    # its pid, lock and socket) for a command line that is then refused "before anything runs".
    # Expected: an argument that is not UTF-8 starts nothing (the check before the daemon/fast paths too).
    _manual(tmp_path)
    (tmp_path / "udm.toml").write_text("daemon_autostart = true\n")
    try:
        code, out = _run(tmp_path, "search", os.fsdecode(b"x\xff"))
        text = _text(out)
        assert code == 2 and text.startswith("error: the argument x\\xff is not valid UTF-8"), text
        time.sleep(1.5)
        started = sorted(p.name for p in (tmp_path / "state" / "daemon").glob("*"))
        assert "udm.pid" not in started and "udm.sock" not in started, started
    finally:
        _stop_spawned_daemon(tmp_path / "state" / "daemon")


def _stop_spawned_daemon(folder: Path) -> None:
    """Stop a daemon the test made start (by its own pid file): wait for its socket, ask, then signal."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and folder.exists() and not (folder / "udm.sock").exists():
        time.sleep(0.2)
    if not (folder / "udm.pid").exists():
        return
    _run(folder.parent.parent, "daemon", "stop")
    try:
        pid = int((folder / "udm.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    cmdline = Path(f"/proc/{pid}/cmdline")
    if cmdline.exists() and str(folder.parent).encode() in cmdline.read_bytes():
        os.kill(pid, signal.SIGTERM)


# ----- The MCP server over stdio: a lone surrogate in a request ------------------------------------------


def _mcp_exchange(cwd: Path, lines: list[bytes]) -> list[dict]:
    """Initialize `udm mcp` over stdio, send `lines`, return one reply per line (None when none came)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("UDM_")}
    environ["PYTHONPATH"] = str(REPO)
    proc = subprocess.Popen(
        [sys.executable, "-c", "from flows.entry import main; main()", "mcp"],
        cwd=cwd,
        env=environ,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(line: bytes) -> None:
        proc.stdin.write(line + b"\n")
        proc.stdin.flush()

    def recv() -> dict | None:
        ready, _, _ = select.select([proc.stdout], [], [], 20)
        return json.loads(proc.stdout.readline()) if ready else None

    try:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        send(json.dumps(init).encode())
        assert recv() is not None
        send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())
        replies = []
        for line in lines:
            send(line)
            replies.append(recv())
        return replies
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_mcp_request_with_a_lone_surrogate_escape_is_answered_for_its_id(tmp_path: Path) -> None:
    # FINDING. A tools/call whose argument holds the JSON escape "\udcff" (what json.dumps writes for an
    # undecodable byte of a name) is well-formed JSON (RFC 8259's grammar allows it; `udm tools call
    # --json` parses the same text and answers "invalid input: field 'udm_path_or_id': ..."). `udm mcp`
    # answers it with id null and -32700 "Parse error: the line is not valid JSON", which is false and
    # leaves the client's request 2 without any answer (it waits until its own timeout). Expected: a reply
    # for id 2, an error result or -32602 naming the field, as the CLI does.
    _manual(tmp_path)
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {
            "name": "udmQueryTool",
            "arguments": {"query_type": "find_by_id", "udm_path_or_id": "COMP\udcff"},
        },
    }
    ok = dict(
        call,
        id=3,
        params={**call["params"], "arguments": {"query_type": "find_by_id", "udm_path_or_id": "COMP-001"}},
    )
    replies = _mcp_exchange(tmp_path, [json.dumps(call).encode(), json.dumps(ok).encode()])
    assert replies[1] is not None and replies[1].get("id") == 3, replies  # the server lives on
    assert replies[0] is not None and replies[0].get("id") == 2, replies
    assert "not valid JSON" not in json.dumps(replies[0]), replies


# ----- Settings other than the four folders, set from the environment with an undecodable byte -----------


@pytest.mark.parametrize("command", [["index"], ["lint"]])
def test_markdown_suffix_setting_that_is_not_utf8_is_a_config_error(
    tmp_path: Path, command: list[str]
) -> None:
    # FINDING. `UDM_MARKDOWN_SUFFIXES=$'.m\xff'` passes Settings (only root/state/logs/scratch are checked by
    # `_utf8_folders`) and `udm index` ends in a traceback: udm/index/lookup.py write_lookup stores the
    # suffixes in SQLite -> UnicodeEncodeError: surrogates not allowed. Other string settings holding the
    # same byte are refused by pydantic ("invalid setting 'approval_policy': ... unicode string") or
    # harmless. Expected: `error: invalid setting 'markdown_suffixes': ...` (exit 1), no traceback.
    _manual(tmp_path)
    code, out = _run(tmp_path, *command, env={"UDM_MARKDOWN_SUFFIXES": ".md," + os.fsdecode(b".m\xff")})
    text = _text(out)
    assert "Traceback" not in text and "UnicodeEncodeError" not in text, text[-1500:]
    assert code == 1 and "markdown_suffixes" in text, text


# ----- GUARDS (pass on 04fd8ed) ----------------------------------------------------------------------------


def test_guard_refused_argument_through_a_running_daemon(tmp_path: Path) -> None:
    # GUARD. With `udm daemon` serving the manual, an argument that is not UTF-8 is still refused in one
    # line (exit 2; the daemon's usage error falls back to the client), and the daemon keeps answering.
    _manual(tmp_path)
    assert _run(tmp_path, "index")[0] == 0
    assert _run(tmp_path, "daemon", "start")[0] == 0
    try:
        for args in (["search", os.fsdecode(b"x\xff")], ["query", "id", os.fsdecode(b"COMP\xff")]):
            code, out = _run(tmp_path, *args)
            text = _text(out)
            assert code == 2 and text.count("\n") == 1 and "\\xff is not valid UTF-8" in text, text
        code, out = _run(tmp_path, "query", "id", "COMP-001")
        assert code == 0 and "a.md:3" in _text(out)
    finally:
        _stop_spawned_daemon(tmp_path / "state" / "daemon")


def test_guard_no_such_command_on_a_terminal_is_shown(tmp_path: Path) -> None:
    # GUARD. click's "No such command" quoting ESC/BEL/U+202E/C1 reaches a terminal escaped (exit 2).
    _manual(tmp_path)
    code, out = _run(tmp_path, f"ind{ESC}", terminal=True)
    text = _text(out)
    assert code == 2 and "No such command" in text, text
    assert not _acted_on(text), text


def test_guard_state_logs_scratch_through_symlinks_to_undecodable_folders(tmp_path: Path) -> None:
    # GUARD. state, logs and scratch that are symlinks to `st\xff`, `lg\xff`, `sc\xff`: index, patch apply
    # and revert all work (the paths the engine stores are the links' UTF-8 paths).
    _manual(tmp_path)
    base = os.fsencode(tmp_path)
    for link, target in ((b"state", b"st\xff"), (b"logs", b"lg\xff"), (b"scratch", b"sc\xff")):
        os.rmdir(os.path.join(base, link)) if os.path.isdir(os.path.join(base, link)) else None
        os.mkdir(os.path.join(base, target))
        os.symlink(target, os.path.join(base, link))
    (tmp_path / "ok.json").write_text(
        json.dumps(
            {
                "id": "ok1",
                "description": "d",
                "author": "a",
                "operations": [{"op": "replace_text", "file": "a.md", "old": "sandbox", "new": "sandbax"}],
            }
        )
    )
    assert _run(tmp_path, "index")[0] == 0
    code, out = _run(tmp_path, "patch", "apply", "--yes", "ok.json")
    assert code == 0 and "committed" in _text(out), _text(out)
    code, out = _run(tmp_path, "patch", "revert", "ok1", "--yes")
    assert code == 0 and "committed" in _text(out), _text(out)


def test_guard_project_folder_not_utf8_with_folders_set_elsewhere(tmp_path: Path) -> None:
    # GUARD. Run from `q\xff` with UDM_ROOT/STATE_DIR/LOGS_DIR/SCRATCH_DIR pointing at UTF-8 folders:
    # index, lint and query id (the stdlib fast path) answer normally.
    _manual(tmp_path)
    cwd = os.path.join(os.fsencode(tmp_path), b"q\xff")
    os.mkdir(cwd)
    env = {
        "UDM_ROOT": str(tmp_path / "docs" / "udm"),
        "UDM_STATE_DIR": str(tmp_path / "state"),
        "UDM_LOGS_DIR": str(tmp_path / "logs"),
        "UDM_SCRATCH_DIR": str(tmp_path / "scratch"),
    }
    for command, expect in (
        (["index"], "indexed"),
        (["lint"], "errors"),
        (["query", "id", "COMP-001"], "a.md:3"),
    ):
        code, out = _run(cwd, *command, env=env)
        text = _text(out)
        assert code == 0 and expect in text and "Traceback" not in text, (command, text)


def test_guard_config_with_undecodable_non_folder_settings_is_valid_json(tmp_path: Path) -> None:
    # GUARD. prompts_dir, allowed_dirs, PREFECT_HOME (protected_paths) and llm_model holding `\xff`:
    # `udm config` prints valid UTF-8 JSON (the byte as \udcff), exit 0.
    _manual(tmp_path)
    bad = os.fsdecode(b"\xff")
    env = {
        "UDM_PROMPTS_DIR": f"pr{bad}",
        "UDM_ALLOWED_DIRS": f"al{bad}",
        "PREFECT_HOME": f"/tmp/pf{bad}",
        "UDM_LLM_MODEL": f"m{bad}",
    }
    for terminal in (False, True):
        code, out = _run(tmp_path, "config", env=env, terminal=terminal)
        text = _text(out)
        assert code == 0 and "Traceback" not in text, text
        assert not _acted_on(text), text
    data = json.loads(text)
    assert data["llm_model"] == f"m{bad}"


def test_guard_patch_and_tool_input_with_lone_surrogates_are_refused_in_one_line(tmp_path: Path) -> None:
    # GUARD. A JSON patch whose file/content holds "\udcff" is an invalid patch (one line, exit 1); a tool
    # input read from stdin with a raw 0xff byte gives a JSON envelope naming the field (exit 1).
    _manual(tmp_path)
    (tmp_path / "p.json").write_text(
        '{"id":"p1","description":"d","author":"a","operations":'
        '[{"op":"replace_text","file":"a\\udcff.md","old":"a","new":"b"}]}'
    )
    code, out = _run(tmp_path, "patch", "apply", "--yes", "p.json")
    text = _text(out)
    assert code == 1 and text.count("\n") == 1 and "lone surrogate" in text, text
    proc = run_udm_streams(
        tmp_path,
        "tools",
        "call",
        "udmQueryTool",
        "--json",
        "-",
        stdin=b'{"query_type":"find_by_id","udm_path_or_id":"X\xff"}',
        timeout=120,
    )
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr, proc.stderr
    assert json.loads(proc.stdout.decode("utf-8"))["success"] is False
