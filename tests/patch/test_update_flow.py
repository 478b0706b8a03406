"""udm_update_flow under a real Prefect server: auto-commit, pause + resume, reject, timeout, rollback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from udm.config import Settings
from udm.patch import parse_patch

from .conftest import snapshot

pytestmark = pytest.mark.prefect

OPS = [
    {"op": "set_yaml_key", "file": "config.md", "section": "HTTP", "key": "http.timeout", "value": 20},
    {"op": "append_to_section", "file": "roadmap.md", "section": "Phase 2", "content": "Reviewed."},
]


def _patch(pid: str) -> Any:
    return parse_patch({"id": pid, "description": "flow test", "author": "test", "operations": OPS})


def test_full_auto_commits_and_publishes_artifacts(prefect_server: None, small: Settings) -> None:

    from flows.udm_update import artifact_key, run_update

    result = run_update(_patch("flow-auto"), small, policy="full_auto")
    assert result.status == "committed", result
    assert result.reindexed
    assert "timeout: 20" in (small.udm_root / "config.md").read_text(encoding="utf-8")
    assert result.patch is not None and {f.path for f in result.patch.files} == {"config.md", "roadmap.md"}

    from prefect import get_client

    assert len(result.artifacts) == 2
    with get_client(sync_client=True) as client:
        arts = [client._client.get(f"/artifacts/{aid}").json() for aid in result.artifacts]
    assert all(a["flow_run_id"] == result.flow_run_id for a in arts)
    assert {a["type"] for a in arts} == {"markdown", "table"}
    md = next(a for a in arts if a["type"] == "markdown")
    assert md["key"] == artifact_key("flow-auto") + "-diff"
    assert "-  timeout: 10" in md["data"] and "+  timeout: 20" in md["data"]


def test_paused_run_resumed_by_reviewer(prefect_server: None, small: Settings, reviewer: Any) -> None:
    from flows.udm_update import run_update

    thread, seen = reviewer({"approve": True, "reviewer": "ann", "comment": "fine"})
    result = run_update(
        _patch("flow-review"), small, policy="ask_always", poll_interval_s=1, approval_timeout_s=60
    )
    thread.join(5)
    assert result.status == "committed", result
    assert result.approval == {"approve": True, "reviewer": "ann", "comment": "fine"}
    assert str(seen["run_id"]) == result.flow_run_id


def test_rejected_and_timed_out_runs_change_nothing(
    prefect_server: None, small: Settings, tmp_path: Path, reviewer: Any
) -> None:
    from flows.udm_update import run_update

    before = snapshot(tmp_path)
    thread, _seen = reviewer({"approve": False, "reviewer": "bob", "comment": "not now"})
    rejected = run_update(
        _patch("flow-reject"), small, policy="ask_always", poll_interval_s=1, approval_timeout_s=60
    )
    thread.join(5)
    assert rejected.status == "rejected" and rejected.message == "not now"
    timed_out = run_update(
        _patch("flow-timeout"), small, policy="smart_auto", poll_interval_s=1, approval_timeout_s=2
    )
    assert timed_out.status == "expired"
    # The plans are udmUpdaterTool calls, so the call log gains their lines; nothing else changed.
    log = small.logs_path / "tool-calls.jsonl"
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [(r["tool"], r["input_fields"], r["permission"], r["status"]) for r in lines] == [
        ("udmUpdaterTool", ["dry_run", "patch"], "safe", "SUCCESS")
    ] * 2
    assert {k: v for k, v in snapshot(tmp_path).items() if k != str(log)} == before


def test_failure_after_commit_rolls_back(
    prefect_server: None, small: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import flows.udm_update as mod

    before = snapshot(small.udm_root)

    def broken_reindex(settings: Settings, paths: list[str]) -> bool:
        assert "timeout: 20" in (settings.udm_root / "config.md").read_text(encoding="utf-8")
        raise RuntimeError("index exploded")

    monkeypatch.setattr(mod, "_reindex", broken_reindex)
    result = mod.run_update(_patch("flow-rollback"), small, policy="full_auto")
    assert result.status == "rolled_back" and "index exploded" in result.message
    assert snapshot(small.udm_root) == before
    record = small.state_path / "patches" / "flow-rollback.json"
    assert '"reverted_by": "revert-flow-rollback' in record.read_text(encoding="utf-8")


def test_cli_run_update_goes_through_the_flow(
    prefect_server: None,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from flows.cli import run

    monkeypatch.setenv("UDM_APPROVAL_POLICY", "full_auto")
    sample = Path(__file__).resolve().parents[2] / "examples" / "patches" / "mark-t001-done.yaml"
    code = run(
        [
            "--root",
            str(settings.udm_root),
            "--state-dir",
            str(settings.state_path),
            "run",
            "update",
            str(sample),
            "--json",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    result = json.loads(out[out.index("{") :])
    assert result["status"] == "committed" and result["patch_id"] == "mark-t001-done"
    assert "timeout: 20" in (settings.udm_root / "06-config.md").read_text(encoding="utf-8")
