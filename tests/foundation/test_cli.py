"""The `udm` CLI through run(argv): tools list/schema/call, exit codes, stdin input, approval."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, Field

import tasks.registry as registry
from flows.cli import run
from tasks.base import Permission, Tool, ToolContext, ToolInput


class NoteInput(ToolInput):
    """Input of the fake note tool."""

    note: str = Field(min_length=1, description="The note's text.")
    repeat: int = Field(default=1, ge=1, le=3, description="How often to repeat it.")


class NoteOutput(BaseModel):
    """Output of the fake note tool."""

    status: str = Field(description="SUCCESS or ERROR_REFUSED.")
    text: str = Field(description="The note, repeated.")
    errorDetails: str | None = Field(default=None, description="Why it was refused.")


class NoteTool(Tool[NoteInput, NoteOutput]):
    """Repeats a note; refuses the note 'no'."""

    name: ClassVar[str] = "noteTool"
    description: ClassVar[str] = "Repeats a note. Refuses the note 'no'."
    Input: ClassVar[type[BaseModel]] = NoteInput
    Output: ClassVar[type[BaseModel]] = NoteOutput
    permission: ClassVar[Permission] = Permission.SAFE

    def execute(self, data: NoteInput, ctx: ToolContext) -> NoteOutput:
        """Repeat or refuse."""
        if data.note == "no":
            return NoteOutput(status="ERROR_REFUSED", text="", errorDetails="the note was 'no'")
        return NoteOutput(status="SUCCESS", text=data.note * data.repeat)


class GuardedNoteTool(NoteTool):
    """The same, at the moderate level, so smart_auto asks."""

    name: ClassVar[str] = "guardedNoteTool"
    description: ClassVar[str] = "Repeats a note after approval."
    permission: ClassVar[Permission] = Permission.MODERATE


@pytest.fixture
def fake_tools(monkeypatch: pytest.MonkeyPatch, workspace: Path) -> Path:
    """Only the two fake tools are registered; the CLI runs inside the workspace."""
    paths = ["tests.foundation.fake:NoteTool", "tests.foundation.fake:GuardedNoteTool"]
    monkeypatch.setattr(registry, "TOOL_PATHS", paths)
    monkeypatch.setitem(registry._CACHE, paths[0], NoteTool())
    monkeypatch.setitem(registry._CACHE, paths[1], GuardedNoteTool())
    monkeypatch.chdir(workspace)
    # Not a terminal: "ask" must be refused, never prompt.
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    return workspace


def call(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    """Run the CLI; return the exit code, stdout parsed as JSON (or None) and stderr."""
    code = run(list(argv))
    captured = capsys.readouterr()
    try:
        out = json.loads(captured.out) if captured.out.strip() else None
    except json.JSONDecodeError:
        out = captured.out
    return code, out, captured.err


def test_tools_list(fake_tools: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = call(capsys, "tools", "list")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 2
    assert lines[0].split()[:2] == ["noteTool", "safe"]
    assert lines[1].split()[:2] == ["guardedNoteTool", "moderate"]
    code, rows, _ = call(capsys, "tools", "list", "--json")
    assert code == 0
    assert [(r["name"], r["permission"]) for r in rows] == [
        ("noteTool", "safe"),
        ("guardedNoteTool", "moderate"),
    ]


@pytest.mark.parametrize("fmt", ["jsonschema", "mcp", "anthropic", "openai"])
def test_tools_schema_formats(fake_tools: Path, capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    code, out, _ = call(capsys, "tools", "schema", "noteTool", "--format", fmt)
    assert code == 0
    schema = {
        "jsonschema": lambda o: o["input_schema"],
        "mcp": lambda o: o["inputSchema"],
        "anthropic": lambda o: o["input_schema"],
        "openai": lambda o: o["function"]["parameters"],
    }[fmt](out)
    assert schema["required"] == ["note"]
    code, many, _ = call(capsys, "tools", "schema", "all", "-f", fmt)
    assert code == 0
    assert len(many) == 2


def test_tools_schema_usage_errors(fake_tools: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = call(capsys, "tools", "schema", "noteTool", "--format", "xml")
    assert code == 2
    assert "'xml' is not one of jsonschema, mcp, anthropic, openai" in err
    code, _, err = call(capsys, "tools", "schema", "noSuchTool")
    assert code == 2
    assert "unknown tool 'noSuchTool'" in err


def test_tools_call_success_and_error_result(fake_tools: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, env, _ = call(capsys, "tools", "call", "noteTool", "--json", '{"note": "hi", "repeat": 2}')
    assert code == 0
    assert env == {
        "success": True,
        "data": {"status": "SUCCESS", "text": "hihi", "errorDetails": None},
        "error": None,
    }
    code, env, _ = call(capsys, "tools", "call", "noteTool", "--json", '{"note": "no"}')
    assert code == 1
    assert env["success"] is False
    assert env["data"]["status"] == "ERROR_REFUSED"
    assert env["error"] == "ERROR_REFUSED: the note was 'no'"
    code, env, _ = call(capsys, "tools", "call", "noteTool", "--json", '{"note": "hi", "repeat": 7}')
    assert code == 1
    assert env["data"] is None
    assert "field 'repeat'" in env["error"]
    # One log line per call, in the workspace's logs folder.
    log = (fake_tools / "logs" / "tool-calls.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(x)["status"] for x in log] == ["SUCCESS", "ERROR_REFUSED", "INVALID_INPUT"]


def test_tools_call_usage_errors(fake_tools: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = call(capsys, "tools", "call", "noSuchTool", "--json", "{}")
    assert code == 2
    assert "unknown tool 'noSuchTool'" in err
    code, _, err = call(capsys, "tools", "call", "noteTool", "--json", '{"note": ')
    assert code == 2
    assert "--json is not valid JSON" in err
    code, _, err = call(capsys, "tools", "call", "noteTool")
    assert code == 2
    assert "--json" in err
    code, _, err = call(capsys, "no-such-command")
    assert code == 2
    assert not (fake_tools / "logs" / "tool-calls.jsonl").exists()


def test_tools_call_reads_stdin(
    fake_tools: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO('{"note": "from stdin"}\n'))
    code, env, _ = call(capsys, "tools", "call", "noteTool", "--json", "-")
    assert code == 0
    assert env["data"]["text"] == "from stdin"
    monkeypatch.setattr("sys.stdin", io.StringIO("not json"))
    code, _, err = call(capsys, "tools", "call", "noteTool", "--json", "-")
    assert code == 2
    assert "not valid JSON" in err


def test_tools_call_approval(
    fake_tools: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, env, _ = call(capsys, "tools", "call", "guardedNoteTool", "--json", '{"note": "x"}')
    assert code == 1
    assert env["success"] is False
    assert env["error"].startswith("approval required")
    code, env, _ = call(capsys, "tools", "call", "guardedNoteTool", "--json", '{"note": "x"}', "--yes")
    assert code == 0
    assert env["data"]["text"] == "x"
    monkeypatch.setenv("UDM_APPROVAL_POLICY", "full_auto")
    code, env, _ = call(capsys, "tools", "call", "guardedNoteTool", "--json", '{"note": "y"}')
    assert code == 0
    decisions = [
        json.loads(x)["decision"]
        for x in (fake_tools / "logs" / "tool-calls.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert decisions == ["unavailable", "approved", "auto"]


def test_global_options_reach_settings(
    fake_tools: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    code, data, _ = call(capsys, "--state-dir", str(elsewhere), "--root", "manual", "config")
    assert code == 0
    assert data["state_path"] == str(elsewhere)
    assert data["udm_root"] == str(fake_tools.resolve() / "manual")


def test_real_registry_lists_every_written_tool(capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    written = [p for p in registry.TOOL_PATHS if importlib.util.find_spec(p.partition(":")[0]) is not None]
    if len(written) < len(registry.TOOL_PATHS):
        pytest.skip("a registered tool module is not written yet")
    code, rows, _ = call(capsys, "tools", "list", "--json")
    assert code == 0
    assert len(rows) == len(registry.TOOL_PATHS)
    assert all(r["permission"] in {p.value for p in Permission} for r in rows)


class FakeTty(io.StringIO):
    """A stdin that claims to be a terminal."""

    def isatty(self) -> bool:
        return True


def test_tools_call_prompts_on_a_terminal(
    fake_tools: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", FakeTty("y\n"))
    code, env, err = call(capsys, "tools", "call", "guardedNoteTool", "--json", '{"note": "ok"}')
    # The prompt went to stderr, so stdout is exactly the envelope.
    assert code == 0
    assert env["data"]["text"] == "ok"
    assert "Approve? [y/N]" in err
    monkeypatch.setattr("sys.stdin", FakeTty("n\n"))
    code, env, _ = call(capsys, "tools", "call", "guardedNoteTool", "--json", '{"note": "ok"}')
    assert code == 1
    assert env["error"].startswith("approval denied")


def test_tools_list_with_no_tools(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(registry, "TOOL_PATHS", [])
    code, out, _ = call(capsys, "tools", "list")
    assert code == 0
    assert out is None


def test_python_dash_m_flows_cli_runs(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, "-m", "flows.cli", "--help"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr and "query" in done.stdout
