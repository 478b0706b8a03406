"""One way in for the update flow: its plan and commit are udmUpdaterTool calls through `call_tool`.

The pause's review reaches the commit as `ToolContext.review` (never a tool input): the call log
records it, the patch record stores it, and it approves exactly the input whose digest it names.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tasks.base import Review, ToolContext, call_tool, deny_all, input_digest
from tasks.udm_updater import UdmUpdaterTool
from udm.config import ApprovalPolicy, Settings
from udm.patch import parse_patch

OPS = [{"op": "set_yaml_key", "file": "config.md", "section": "HTTP", "key": "http.timeout", "value": 25}]


def _patch(pid: str) -> Any:
    return parse_patch({"id": pid, "description": "one way", "author": "test", "operations": OPS})


def _lines(settings: Settings) -> list[dict[str, Any]]:
    log = settings.logs_path / "tool-calls.jsonl"
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


@pytest.mark.prefect
def test_the_reviewed_commit_is_a_logged_tool_call(
    prefect_server: None, small: Settings, reviewer: Any
) -> None:
    from flows.udm_update import run_update

    thread, _seen = reviewer({"approve": True, "reviewer": "ann", "comment": "read it"})
    result = run_update(_patch("ow-reviewed"), small, policy="ask_always", poll_interval_s=1)
    thread.join(5)
    assert result.status == "committed", result
    plan, commit = _lines(small)
    # ask_always asks for a plan too: the flow's approver lets a dry run through, since it is the review's diff.
    assert (plan["input_fields"], plan["permission"], plan["decision"]) == (
        ["dry_run", "patch"],
        "safe",
        "approved",
    )
    assert "review" not in plan
    assert (commit["input_fields"], commit["permission"], commit["decision"], commit["status"]) == (
        ["patch"],
        "moderate",
        "approved",
        "SUCCESS",
    )
    review = json.loads((small.state_path / "patches" / "ow-reviewed.json").read_text(encoding="utf-8"))[
        "review"
    ]
    assert review["input_digest"] == commit["input_digest"]
    assert result.patch is not None
    diff_digest = "sha256:" + hashlib.sha256(result.patch.diff.encode()).hexdigest()
    assert commit["review"] == {
        "decision": "approved",
        "reviewer": "ann",
        "decided_at": review["decided_at"],
        "diff_digest": diff_digest,
    }
    assert review["diff_digest"] == diff_digest and review["reviewer"] == "ann"


@pytest.mark.prefect
def test_an_automatic_commit_logs_the_policy_decision(prefect_server: None, small: Settings) -> None:
    from flows.udm_update import run_update

    result = run_update(_patch("ow-auto"), small, policy="full_auto")
    assert result.status == "committed", result
    plan, commit = _lines(small)
    assert (plan["decision"], commit["decision"], commit["status"]) == ("auto", "auto", "SUCCESS")
    assert commit["review"]["decision"] == "auto" and commit["review"]["reviewer"] is None
    assert result.review is not None and result.review["input_digest"] == commit["input_digest"]


def _strict(small: Settings) -> Settings:
    return small.model_copy(update={"approval_policy": ApprovalPolicy.SMART_AUTO})


def test_a_review_approves_only_the_input_it_names(small: Settings) -> None:
    raw = {"patch": {"id": "ow-other", "operations": OPS}}
    other = Review(
        decision="approved", input_digest=input_digest({"patch": {"operations": OPS}}), reviewer="ann"
    )
    refused = call_tool(
        UdmUpdaterTool(), raw, ToolContext(settings=_strict(small), approver=deny_all, review=other)
    )
    assert refused.decision == "denied" and "the review approved input" in (refused.envelope.error or "")
    assert "timeout: 25" not in (small.udm_root / "config.md").read_text(encoding="utf-8")
    this = other.model_copy(update={"input_digest": input_digest(raw)})
    done = call_tool(
        UdmUpdaterTool(), raw, ToolContext(settings=_strict(small), approver=deny_all, review=this)
    )
    assert done.envelope.success and done.decision == "approved", done.envelope
    record = json.loads((small.state_path / "patches" / "ow-other.json").read_text(encoding="utf-8"))
    assert record["review"]["reviewer"] == "ann" and record["review"]["input_digest"] == input_digest(raw)


def test_an_automatic_review_does_not_approve_what_the_policy_asks_for(small: Settings) -> None:
    raw = {"patch": {"id": "ow-auto-only", "operations": OPS}}
    auto = Review(decision="auto", input_digest=input_digest(raw))
    refused = call_tool(
        UdmUpdaterTool(), raw, ToolContext(settings=_strict(small), approver=deny_all, review=auto)
    )
    assert refused.decision == "denied" and not refused.envelope.success


def test_a_caller_cannot_claim_a_review_in_its_input(small: Settings, tmp_path: Path) -> None:
    raw = {"patch": {"operations": OPS}, "review": {"decision": "approved", "reviewer": "mallory"}}
    res = call_tool(UdmUpdaterTool(), raw, ToolContext(settings=_strict(small), approver=deny_all))
    assert res.decision == "invalid" and "field 'review'" in (res.envelope.error or "")
    assert not (small.state_path / "patches").exists() or not any((small.state_path / "patches").iterdir())
