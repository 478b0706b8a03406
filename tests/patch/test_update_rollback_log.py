"""The update flow's rollback is in the tool-call log: after the commit's line, one line of the revert.

Before, a step failing after the commit (the re-index) rolled the transaction back and the hook reverted
the patch, but the log ended at the commit's SUCCESS: an auditor saw a committed patch that was not.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tasks.base import input_digest
from udm.config import Settings
from udm.patch import parse_patch

pytestmark = pytest.mark.prefect

OPS = [{"op": "set_yaml_key", "file": "config.md", "section": "HTTP", "key": "http.timeout", "value": 20}]


def _lines(settings: Settings) -> list[dict[str, Any]]:
    log = settings.logs_path / "tool-calls.jsonl"
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def _run(settings: Settings, pid: str, monkeypatch: pytest.MonkeyPatch, *, edit: bool = False) -> Any:
    """Run the update flow with a re-index that fails after the commit (after editing the file, if `edit`)."""
    import flows.udm_update as mod

    def broken_reindex(settings: Settings, paths: list[str]) -> bool:
        if edit:  # someone edits the patched line meanwhile: the revert must not overwrite their edit
            page = settings.udm_root / "config.md"
            page.write_text(page.read_text(encoding="utf-8").replace("timeout: 20", "timeout: 30"), "utf-8")
        raise RuntimeError("index exploded")

    monkeypatch.setattr(mod, "_reindex", broken_reindex)
    patch = parse_patch({"id": pid, "description": "rollback", "author": "test", "operations": OPS})
    return mod.run_update(patch, settings, policy="full_auto")


def test_a_rolled_back_commit_leaves_the_revert_in_the_call_log(
    prefect_server: None, small: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _run(small, "rb-log", monkeypatch)
    assert result.status == "rolled_back", result
    plan, commit, revert = _lines(small)
    assert (plan["input_fields"], commit["input_fields"], commit["status"]) == (
        ["dry_run", "patch"],
        ["patch"],
        "SUCCESS",
    )
    # The same line format as every call: the input the revert is as a udmUpdaterTool call, never values.
    assert set(revert) == set(commit) - {"review"} | {"rollback"}
    assert revert["tool"] == "udmUpdaterTool"
    assert revert["input_digest"] == input_digest({"revert_patch_id": "rb-log"})
    assert (revert["input_fields"], revert["permission"], revert["decision"], revert["status"]) == (
        ["revert_patch_id"],
        "destructive",
        "rollback",
        "SUCCESS",
    )
    assert revert["duration_ms"] > 0
    record = json.loads((small.state_path / "patches" / "rb-log.json").read_text(encoding="utf-8"))
    assert revert["rollback"] == {
        "patch_id": "rb-log",
        "revert_id": record["reverted_by"],
        "reverts": commit["input_digest"],
        "cause": "RuntimeError after the commit",
        "flow_run_id": result.flow_run_id,
    }
    assert "index exploded" not in json.dumps(revert)  # error texts stay in the run, as for every call


def test_a_revert_that_fails_is_logged_with_its_status(
    prefect_server: None, small: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _run(small, "rb-conflict", monkeypatch, edit=True)
    assert result.status == "error" and "revert failed" in result.message, result
    assert "timeout: 30" in (small.udm_root / "config.md").read_text(encoding="utf-8")
    _plan, commit, revert = _lines(small)
    assert (revert["decision"], revert["status"]) == ("rollback", "ERROR_CONFLICT")
    assert revert["rollback"]["reverts"] == commit["input_digest"]
    assert revert["rollback"]["revert_id"] is not None
