"""The update flow's final states, read back from a real Prefect server, and a policy no run lowers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from udm.config import Settings
from udm.patch import parse_patch

from .conftest import snapshot

pytestmark = pytest.mark.prefect

EDIT = {"op": "set_yaml_key", "file": "config.md", "section": "HTTP", "key": "http.timeout", "value": 20}


def _patch(pid: str, *ops: dict[str, Any]) -> Any:
    return parse_patch({"id": pid, "description": f"state test {pid}", "operations": list(ops or [EDIT])})


def _server_state(run_id: str | None) -> Any:
    from prefect import get_client

    assert run_id is not None
    with get_client(sync_client=True) as client:
        return client.read_flow_run(run_id).state


def test_each_outcome_ends_in_its_own_state(
    prefect_server: None, small: Settings, reviewer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows.udm_update import run_update

    done = run_update(_patch("st-commit"), small, policy="full_auto")
    state = _server_state(done.flow_run_id)
    assert (done.status, state.type.value, state.name) == ("committed", "COMPLETED", "Completed")

    same = run_update(_patch("st-same"), small, policy="full_auto")
    state = _server_state(same.flow_run_id)
    assert (same.status, state.type.value, state.name) == ("unchanged", "COMPLETED", "Unchanged")

    thread, _seen = reviewer({"approve": False, "reviewer": "bob", "comment": "not now"})
    edit = {**EDIT, "value": 30}
    rejected = run_update(_patch("st-reject", edit), small, policy="ask_always", poll_interval_s=1)
    thread.join(5)
    state = _server_state(rejected.flow_run_id)
    assert (rejected.status, state.type.value, state.name) == ("rejected", "COMPLETED", "Rejected")

    expired = run_update(
        _patch("st-expire", edit), small, policy="ask_always", poll_interval_s=1, approval_timeout_s=2
    )
    state = _server_state(expired.flow_run_id)
    assert (expired.status, state.type.value, state.name) == ("expired", "FAILED", "Expired")
    assert "nobody decided within 2 s" in (state.message or "")

    missing = {"op": "replace_text", "file": "config.md", "old": "no such text", "new": "x"}
    invalid = run_update(_patch("st-invalid", missing), small, policy="full_auto")
    state = _server_state(invalid.flow_run_id)
    assert (invalid.status, state.type.value, state.name) == ("invalid", "FAILED", "Invalid")

    stale = {**edit, "expect": "0" * 64}
    conflict = run_update(_patch("st-conflict", stale), small, policy="full_auto")
    state = _server_state(conflict.flow_run_id)
    assert (conflict.status, state.type.value, state.name) == ("conflict", "FAILED", "Conflict")
    assert "conflict" in (state.message or "")


def test_a_parameter_cannot_lower_the_policy(
    prefect_server: None, small: Settings, tmp_path: Path, reviewer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect import get_client

    from flows.udm_update import UpdateOptions, state_result, udm_update_flow

    monkeypatch.setenv("UDM_APPROVAL_POLICY", "smart_auto")
    overrides = {"project_root": str(small.project_root)}
    before = snapshot(tmp_path)
    # Through settings_overrides: refused, naming the setting and where the policy lives.
    state = udm_update_flow(
        patch=_patch("low-1"),
        settings_overrides={**overrides, "approval_policy": "full_auto"},
        return_state=True,
    )
    assert (state.type.value, state.name) == ("FAILED", "Invalid")
    assert "approval_policy" in state_result(state).message and "UDM_APPROVAL_POLICY" in state.message
    # Through the options: the run still pauses for a reviewer, who rejects it.
    thread, seen = reviewer({"approve": False, "reviewer": "eve", "comment": "no"})
    state = udm_update_flow(
        patch=_patch("low-2"),
        options=UpdateOptions(approval_policy="full_auto", poll_interval_s=1),
        settings_overrides=overrides,
        return_state=True,
    )
    thread.join(5)
    assert "run_id" in seen, "the run never paused"
    assert (state.type.value, state.name) == ("COMPLETED", "Rejected")
    # The plan is a udmUpdaterTool call, so the call log gains its line; nothing else changed.
    log = small.logs_path / "tool-calls.jsonl"
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [(r["input_fields"], r["permission"], r["decision"]) for r in lines] == [
        (["dry_run", "patch"], "safe", "auto")
    ]
    assert {k: v for k, v in snapshot(tmp_path).items() if k != str(log)} == before
    # A parameter may make it stricter: full_auto in the process, ask_always asked for: it pauses.
    monkeypatch.setenv("UDM_APPROVAL_POLICY", "full_auto")
    thread, seen = reviewer({"approve": True, "reviewer": "ann", "comment": "ok"})
    state = udm_update_flow(
        patch=_patch("strict-1"),
        options=UpdateOptions(approval_policy="ask_always", poll_interval_s=1),
        settings_overrides=overrides,
        return_state=True,
    )
    thread.join(5)
    assert "run_id" in seen and (state.type.value, state.name) == ("COMPLETED", "Completed")
    with get_client(sync_client=True) as client:
        assert client.read_flow_run(seen["run_id"]).state.is_completed()


def test_review_is_stored_with_the_patch_and_shown(
    prefect_server: None,
    small: Settings,
    reviewer: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from flows.cli import run
    from flows.udm_update import run_update

    thread, seen = reviewer({"approve": True, "reviewer": "ann", "comment": "checked the diff"})
    result = run_update(_patch("st-reviewed"), small, policy="ask_always", poll_interval_s=1)
    thread.join(5)
    assert result.status == "committed", result
    record = json.loads((small.state_path / "patches" / "st-reviewed.json").read_text(encoding="utf-8"))
    review = record["review"]
    assert review["decision"] == "approved" and review["reviewer"] == "ann"
    assert review["comment"] == "checked the diff" and review["decided_at"]
    assert review["flow_run_id"] == result.flow_run_id == str(seen["run_id"])
    assert review["flow_run_url"] and result.flow_run_id in review["flow_run_url"]
    assert review["policy"] == "ask_always"
    code = run(
        ["--root", str(small.udm_root), "--state-dir", str(small.state_path), "patch", "show", "st-reviewed"]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "review:      approved by ann at " in out and "comment:     checked the diff" in out
    assert f"flow run:    {review['flow_run_url']}" in out


def test_cli_says_expired(
    prefect_server: None, small: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from flows.cli import run

    monkeypatch.setenv("UDM_APPROVAL_POLICY", "ask_always")
    patch_file = small.project_root / "p.json"
    patch_file.write_text(json.dumps({"id": "st-cli-expire", "description": "d", "operations": [EDIT]}))
    args = ["--root", str(small.udm_root), "--state-dir", str(small.state_path), "run", "update"]
    code = run([*args, str(patch_file), "--timeout", "1"])
    out = capsys.readouterr().out
    assert code == 1
    assert "update flow: expired (Expired)  nobody decided within 1 s" in out
    assert "planned" not in out
