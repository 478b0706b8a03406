"""One way in: `udm patch apply|revert|check` and `udm fmt` are udmUpdaterTool calls through `call_tool`.

The CLI gets the tool's approval policy, call-log line and envelope, exactly as `udm tools call` and MCP
do; the tool's input takes a whole patch, a revert and a reformat besides its update list.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flows.cli import run
from tasks.base import Permission, ToolContext, always_approve, call_tool, deny_all
from tasks.udm_updater import UdmUpdaterInput, UdmUpdaterTool
from udm.config import ApprovalPolicy, Settings
from udm.patch import load_record

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "patches" / "mark-t001-done.yaml"


def _log(workspace: Path) -> list[dict[str, Any]]:
    path = workspace / "logs" / "tool-calls.jsonl"
    return (
        [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []
    )


def _updater_lines(workspace: Path) -> list[dict[str, Any]]:
    return [r for r in _log(workspace) if r["tool"] == "udmUpdaterTool"]


@pytest.fixture
def here(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The sample workspace as the working directory (its logs/ receives the call log)."""
    monkeypatch.chdir(workspace)
    return workspace


def test_every_write_command_is_a_logged_tool_call(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["patch", "check", str(SAMPLE)]) == 0
    assert run(["patch", "apply", str(SAMPLE), "--yes"]) == 0
    assert run(["patch", "revert", "mark-t001-done", "--yes"]) == 0
    messy = here / "docs" / "udm" / "messy.md"
    messy.write_text("# Messy\n\n* a\n* b\n", encoding="utf-8")
    assert run(["fmt", "messy.md", "--yes"]) == 0
    capsys.readouterr()
    lines = _updater_lines(here)
    seen = [(r["input_fields"], r["permission"], r["decision"], r["status"]) for r in lines]
    assert seen == [
        (["dry_run", "patch"], "safe", "auto", "SUCCESS"),  # check
        (["dry_run", "patch"], "safe", "auto", "SUCCESS"),  # apply: the plan
        (["patch"], "moderate", "approved", "SUCCESS"),  # apply: the commit, --yes
        (["revert_patch_id"], "destructive", "approved", "SUCCESS"),
        (["dry_run", "format_paths"], "safe", "auto", "SUCCESS"),
        (["format_paths"], "moderate", "approved", "SUCCESS"),
    ]


def test_the_cli_and_tools_call_are_the_same_call(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["patch", "apply", str(SAMPLE), "--yes"]) == 0
    assert run(["patch", "revert", "mark-t001-done", "--yes"]) == 0
    assert run(["patch", "revert", "mark-t001-done", "--yes"]) == 1  # twice: already reverted
    cli_err = capsys.readouterr().err
    raw = json.dumps({"revert_patch_id": "mark-t001-done"})
    assert run(["tools", "call", "udmUpdaterTool", "--json", raw, "--yes"]) == 1
    envelope = json.loads(capsys.readouterr().out)
    cli_line, tool_line = _updater_lines(here)[-2:]
    for key in ("input_digest", "input_fields", "permission", "decision", "status"):
        assert cli_line[key] == tool_line[key], key
    assert tool_line["status"] == "ERROR_INVALID_UPDATE"
    assert envelope["data"]["errorDetails"] in cli_err and "already reverted" in cli_err


def test_a_destructive_patch_is_asked_as_destructive_with_its_diff(
    here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = here / "docs" / "udm" / "99-notes.md"
    notes.write_text("# Notes\n\n## Old\n\nNobody links here.\n", encoding="utf-8")
    patch = here / "drop.yaml"
    patch.write_text(
        "id: drop-old\noperations:\n  - {op: delete_section, file: 99-notes.md, section: Old}\n",
        encoding="utf-8",
    )
    before = notes.read_bytes()
    monkeypatch.setattr(sys, "stdin", io.StringIO("n\n"))
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    assert run(["patch", "apply", str(patch)]) == 1
    err = capsys.readouterr().err
    assert "[udmUpdaterTool: destructive]" in err
    assert "apply patch drop-old" in err and "-## Old" in err  # the plan's diff
    assert "error: not approved; nothing changed" in err
    assert notes.read_bytes() == before
    assert _updater_lines(here)[-1]["decision"] == "denied"
    assert _updater_lines(here)[-1]["permission"] == "destructive"


def test_ask_always_asks_for_the_plan_too(
    here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # As `udm query` does under ask_always: every call is asked, reads included.
    monkeypatch.setenv("UDM_APPROVAL_POLICY", "ask_always")
    monkeypatch.setattr(sys.stdin, "isatty", lambda: False)
    assert run(["patch", "check", str(SAMPLE)]) == 1
    assert "udmUpdaterTool (safe) needs approval" in capsys.readouterr().err
    assert _updater_lines(here)[-1]["decision"] == "unavailable"
    assert run(["patch", "check", str(SAMPLE), "--yes"]) == 0
    assert _updater_lines(here)[-1]["decision"] == "approved"


def test_ask_always_asks_apply_once_with_the_plan_under_the_question(
    here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`patch apply` shows its plan under the commit's question: one prompt, not one per call."""
    monkeypatch.setenv("UDM_APPROVAL_POLICY", "ask_always")
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    assert run(["patch", "apply", str(SAMPLE)]) == 0
    err = capsys.readouterr().err
    assert err.count("Approve? [y/N]") == 1
    assert "[udmUpdaterTool: moderate]" in err
    plan, commit = _updater_lines(here)[-2:]
    assert (plan["permission"], plan["decision"]) == ("safe", "approved")
    assert (commit["permission"], commit["decision"]) == ("moderate", "approved")


def test_a_revert_is_asked_with_what_it_undoes(
    here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(["patch", "apply", str(SAMPLE), "--yes"]) == 0
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    assert run(["patch", "revert", "mark-t001-done"]) == 0
    err = capsys.readouterr().err
    assert "udmUpdaterTool: revert patch mark-t001-done" in err
    assert "it undoes:" in err and "+  timeout: 20" in err
    assert _updater_lines(here)[-1]["decision"] == "approved"


def test_full_auto_applies_without_asking(
    here: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UDM_APPROVAL_POLICY", "full_auto")
    monkeypatch.setattr(sys.stdin, "isatty", lambda: False)
    assert run(["patch", "apply", str(SAMPLE), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "committed"
    assert _updater_lines(here)[-1]["decision"] == "auto"


def test_a_conflict_exits_1_as_its_envelope_fails(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["patch", "apply", str(SAMPLE), "--yes"]) == 0
    capsys.readouterr()
    config = here / "docs" / "udm" / "06-config.md"
    config.write_text(
        config.read_text(encoding="utf-8").replace("timeout: 20", "timeout: 25"), encoding="utf-8"
    )
    assert run(["patch", "revert", "mark-t001-done", "--yes", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["status"] == "conflict"
    assert _updater_lines(here)[-1]["status"] == "ERROR_CONFLICT"


# ------------------------------------------------------------------ the tool's added input fields


def _call(settings: Settings, raw: dict[str, Any], approver: Any = always_approve) -> Any:
    return call_tool("udmUpdaterTool", raw, ToolContext(settings=settings, approver=approver, log=False))


def test_patch_revert_and_format_through_the_tool(small: Settings) -> None:
    doc = {
        "id": "t1-done",
        "operations": [
            {
                "op": "set_yaml_key",
                "file": "roadmap.md",
                "section": "TASK-P0-M0.1-T001",
                "key": "status",
                "value": "done",
            }
        ],
    }
    plan = _call(small, {"patch": doc, "dry_run": True})
    assert plan.envelope.success and plan.envelope.data["dry_run"] is True
    assert plan.output.report.planned_patch["operations"][0]["expect"]
    done = _call(small, {"patch": plan.output.report.planned_patch})
    assert done.envelope.data["status"] == "SUCCESS" and done.envelope.data["patch_id"] == "t1-done"
    assert "status: done" in (small.udm_root / "roadmap.md").read_text(encoding="utf-8")
    undo = _call(small, {"revert_patch_id": "t1-done"})
    assert (
        undo.envelope.success
        and load_record(small, "t1-done")["reverted_by"] == undo.envelope.data["patch_id"]
    )
    (small.udm_root / "messy.md").write_text("# Messy\n\n* a\n", encoding="utf-8")
    fmt = _call(small, {"format_paths": ["messy.md"]})
    assert fmt.envelope.success and [f["path"] for f in fmt.envelope.data["files_changed"]] == ["messy.md"]
    assert (small.udm_root / "messy.md").read_text(encoding="utf-8") == "# Messy\n\n- a\n"


def test_a_patch_is_asked_at_its_own_level(small: Settings) -> None:
    strict = small.model_copy(update={"approval_policy": ApprovalPolicy.SMART_AUTO})
    delete = {"operations": [{"op": "delete_section", "file": "roadmap.md", "section": "Phase 2"}]}
    denied = _call(strict, {"patch": delete}, deny_all)
    assert not denied.envelope.success and "destructive" in (denied.envelope.error or "")
    forced = {
        "operations": [
            {"op": "append_to_section", "file": "roadmap.md", "section": "Phase 2", "content": "x"}
        ]
    }
    assert "destructive" in (
        _call(strict, {"patch": forced, "override": {"by": "a", "reason": "b"}}, deny_all).envelope.error
        or ""
    )
    assert "moderate" in (_call(strict, {"patch": forced}, deny_all).envelope.error or "")
    assert "destructive" in (_call(strict, {"revert_patch_id": "x"}, deny_all).envelope.error or "")
    assert _call(strict, {"patch": delete, "dry_run": True}, deny_all).envelope.success  # a plan is safe
    assert "## Phase 2" in (small.udm_root / "roadmap.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({}, "give exactly one of udm_updates_list, patch, revert_patch_id or format_paths"),
        ({"revert_patch_id": "a", "format_paths": []}, "(got revert_patch_id, format_paths)"),
        ({"revert_patch_id": "a", "dry_run": True}, "a revert cannot be a dry run"),
        ({"patch": {"operations": []}, "description": "x"}, "description go inside `patch`"),
        ({"format_paths": [], "override": {"by": "a", "reason": "b"}}, "format_paths takes no override"),
    ],
)
def test_requests_that_do_not_fit_are_named(small: Settings, raw: dict[str, Any], message: str) -> None:
    res = _call(small, raw)
    assert not res.envelope.success and message in (res.envelope.error or ""), res.envelope.error


def test_an_invalid_patch_document_is_an_invalid_update(small: Settings) -> None:
    res = _call(small, {"patch": {"operations": [{"op": "frobnicate", "file": "roadmap.md"}]}})
    assert res.envelope.data is not None and res.envelope.data["status"] == "ERROR_INVALID_UPDATE"
    assert res.envelope.data["errorDetails"].startswith("patch: invalid patch")
    assert res.output.report is None


REQUESTS = {
    "udm_updates_list": [{"target_file": "roadmap.md", "operation": "delete_file"}],
    "patch": {"operations": [{"op": "delete_file", "file": "roadmap.md"}]},
    "revert_patch_id": "p1",
    "format_paths": [],
}


@given(st.sets(st.sampled_from(sorted(REQUESTS))))
def test_exactly_one_request_is_accepted(chosen: set[str]) -> None:
    raw = {name: REQUESTS[name] for name in chosen}
    try:
        data = UdmUpdaterInput.model_validate(raw)
    except ValueError:
        assert len(chosen) != 1
        return
    assert len(chosen) == 1
    level = UdmUpdaterTool().permission_for(data)
    assert level == (Permission.MODERATE if chosen == {"format_paths"} else Permission.DESTRUCTIVE)


def _nested(levels: int, leaf: Any) -> Any:
    value: Any = leaf
    for _ in range(levels):
        value = {"a": [value]}
    return value


def test_input_deeper_than_the_recursion_limit_is_a_status_not_a_crash(small: Settings) -> None:
    deep = _nested(3000, 1)
    doc = {"operations": [{"op": "set_front_matter", "file": "roadmap.md", "key": "x", "value": deep}]}
    res = call_tool("udmUpdaterTool", {"patch": doc}, ToolContext(settings=small, approver=always_approve))
    assert res.envelope.data is not None and res.envelope.data["status"] == "ERROR_INVALID_UPDATE"
    assert "nested too deeply" in res.envelope.data["errorDetails"]
    line = json.loads((small.logs_path / "tool-calls.jsonl").read_text(encoding="utf-8").splitlines()[-1])
    assert line["status"] == "ERROR_INVALID_UPDATE" and line["input_digest"].startswith("sha256:")


def test_the_digest_of_deep_input_is_stable_and_tells_inputs_apart() -> None:
    from tasks.calllog import input_digest

    assert input_digest(_nested(3000, 1)) == input_digest(_nested(3000, 1))
    assert input_digest(_nested(3000, 1)) != input_digest(_nested(3000, 2))
    assert input_digest(_nested(3000, 1)) != input_digest(_nested(2999, 1))
    assert input_digest({"b": 1, "a": [2]}) == input_digest({"a": [2], "b": 1})
