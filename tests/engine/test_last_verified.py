"""udmQueryTool's last_verified query: the index's verification results per UDM ID, check or section."""

from __future__ import annotations

from typing import Any

from tasks.base import ToolContext, call_tool
from udm.config import Settings
from udm.verify import record_verifications


def _result(check: str, status: str, started: str, **extra: Any) -> dict[str, Any]:
    return {"id": check, "status": status, "started_at": started, "udm_refs": ["COMP-001"], **extra}


def _ask(ctx: ToolContext, target: str) -> dict[str, Any]:
    result = call_tool("udmQueryTool", {"query_type": "last_verified", "udm_path_or_id": target}, ctx)
    assert result.envelope.data is not None
    return result.envelope.data


def test_latest_run_wins_and_fail_is_not_passed(settings: Settings, ctx: ToolContext) -> None:
    """An older PASS is superseded by a later FAIL of the same check; the summary says not passed."""
    record_verifications(settings, "run-1", [_result("CHK-COMP-001-UI", "PASS", "2026-11-20T10:00:00+00:00")])
    record_verifications(
        settings,
        "run-2",
        [
            _result(
                "CHK-COMP-001-UI",
                "FAIL",
                "2026-11-21T09:30:00+00:00",
                reason="heading missing",
                screenshot="state/verify/run-2/ui.png",
                diff_image="state/verify/run-2/ui.diff.png",
            )
        ],
    )
    data = _ask(ctx, "COMP-001")
    assert data["status"] == "SUCCESS"
    content = data["retrievedContent"]
    assert content["verified"] is True
    assert content["passed"] is False
    assert content["last_verified_at"] == "2026-11-21T09:30:00+00:00"
    assert "NOT passed" in content["summary"]
    [check] = content["checks"]
    assert (check["check_id"], check["run_id"], check["status"]) == ("CHK-COMP-001-UI", "run-2", "FAIL")
    assert check["reason"] == "heading missing"
    assert check["evidence"] == ["state/verify/run-2/ui.png", "state/verify/run-2/ui.diff.png"]

    # A later PASS flips it back; the check ID itself is also a valid target.
    record_verifications(settings, "run-3", [_result("CHK-COMP-001-UI", "PASS", "2026-11-22T08:00:00+00:00")])
    content = _ask(ctx, "chk-comp-001-ui")["retrievedContent"]
    assert content["passed"] is True
    assert content["checks"][0]["run_id"] == "run-3"
    assert content["summary"].endswith("passed")


def test_known_but_never_verified_is_an_explicit_no(settings: Settings, ctx: ToolContext) -> None:
    """A UDM ID with no verification: SUCCESS with verified false, not an error."""
    record_verifications(settings, "run-1", [_result("CHK-COMP-001-UI", "PASS", "2026-11-20T10:00:00+00:00")])
    data = _ask(ctx, "TASK-P0-M0.1-T002")
    assert data["status"] == "SUCCESS"
    content = data["retrievedContent"]
    assert content == {
        "target": "TASK-P0-M0.1-T002",
        "verified": False,
        "passed": None,
        "last_verified_at": None,
        "summary": "TASK-P0-M0.1-T002: never verified",
        "checks": [],
    }


def test_never_verified_section(settings: Settings, ctx: ToolContext) -> None:
    """A section given as file#anchor that exists is known, even with no verifications table at all."""
    data = _ask(ctx, "02-system-architecture.md#COMP-001")
    assert data["status"] == "SUCCESS"
    assert data["retrievedContent"]["verified"] is False


def test_unknown_id_is_not_found(ctx: ToolContext) -> None:
    """An ID the UDM neither defines nor mentions, with no check of that name: ERROR_ID_NOT_FOUND."""
    data = _ask(ctx, "COMP-999")
    assert data["status"] == "ERROR_ID_NOT_FOUND"
    assert "COMP-999" in data["errorDetails"]
    assert data["retrievedContent"] is None
