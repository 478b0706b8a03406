"""Step states reach their task runs and the pipeline's run; a review inside a step pauses the pipeline."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from udm.config import Settings

from .test_pipeline_flow import run, task_runs_of

pytestmark = pytest.mark.prefect


def _flow_state(run_id: Any) -> Any:
    from prefect import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(run_id).state


def test_a_denied_step_is_a_failed_task_run(
    prefect_server: None, test_tools: Any, settings: Settings
) -> None:
    from flows.pipeline import PipelineRunError

    spec = "name: denied\nsteps:\n  n: {tool: noteTool, input: {name: pipe, text: hi}}\n"
    with pytest.raises(PipelineRunError, match="approval denied") as info:
        run(spec, settings)
    run_id = info.value.summary["flow_run_id"]
    # The server records task runs from events in the background: right after the flow it may still
    # hold the run's first name (noteTool-xxx) and state. Wait until it has recorded the last ones.
    deadline = time.monotonic() + 15
    while True:
        [task_run] = task_runs_of(run_id)
        settled = task_run.name == "n" and task_run.state is not None and task_run.state.is_final()
        if settled or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert task_run.name == "n" and task_run.state.type.value == "FAILED"
    assert "approval denied" in (task_run.state.message or "")
    assert _flow_state(run_id).type.value == "FAILED"


def test_a_rejected_update_step_pauses_the_pipeline_and_ends_rejected(
    prefect_server: None, settings: Settings, reviewer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect.input.actions import read_flow_run_input

    monkeypatch.setenv("UDM_APPROVAL_POLICY", "ask_always")
    spec = """
name: review-in-a-step
parameters: {project: ""}
steps:
  apply:
    flow: update
    input:
      patch:
        id: pipe-review-1
        description: Mark T001 blocked
        operations:
          - {op: set_yaml_key, file: 05-roadmap.md, section: TASK-P0-M0.1-T001, key: status, value: blocked}
      options: {poll_interval_s: 1, approval_timeout_s: 60}
      settings_overrides: {project_root: "${{ params.project }}"}
"""
    before = (settings.udm_root / "05-roadmap.md").read_bytes()
    while_paused: list[tuple[str, ...]] = []

    def look() -> None:
        if while_paused:
            return
        states = tuple(_flow_state(r).type.value for r in seen["runs"])
        inner = seen["paused"][0]
        described = read_flow_run_input(inner.keyset["description"], flow_run_id=inner.flow_run_id)
        while_paused.append((*states, str(described)))

    thread, seen = reviewer({"approve": False, "reviewer": "bob", "comment": "not this one"}, on_paused=look)
    summary = run(spec, settings, params={"project": str(settings.project_root)})
    thread.join(5)
    # The update subflow and the pipeline above it were both Paused while the review waited.
    assert len(seen["runs"]) == 2 and while_paused[0][:2] == ("PAUSED", "PAUSED")
    # The form's description links the diff artifact by its stable key.
    assert "udm-patch-pipe-review-1-diff" in while_paused[0][2]
    assert seen["run_id"] == seen["runs"][-1] and str(seen["run_id"]) == summary["flow_run_id"]
    step = summary["steps"]["apply"]
    assert step["status"] == "completed" and step["state"] == "Rejected"
    assert step["output"]["status"] == "rejected"
    [task_run] = [t for t in task_runs_of(summary["flow_run_id"]) if t.name == "apply"]
    assert (task_run.state.type.value, task_run.state.name) == ("COMPLETED", "Rejected")
    pipeline = _flow_state(summary["flow_run_id"])
    assert (pipeline.type.value, pipeline.name) == ("COMPLETED", "Rejected")
    update = _flow_state(seen["runs"][0])
    assert (update.type.value, update.name) == ("COMPLETED", "Rejected")
    assert (settings.udm_root / "05-roadmap.md").read_bytes() == before


def test_verification_state_fails_on_a_failed_check_only() -> None:
    from flows.browser_verify import verification_state

    def summary(*statuses: str) -> dict[str, Any]:
        results = [{"id": f"CHK-{i}", "status": s} for i, s in enumerate(statuses)]
        counts = {s: statuses.count(s) for s in ("PASS", "FAIL", "WARNING", "SKIPPED")}
        return {"results": results, "counts": counts}

    assert verification_state(summary("PASS", "WARNING", "SKIPPED")).is_completed()
    failed = verification_state(summary("PASS", "FAIL"))
    assert failed.is_failed() and failed.message == "1 check(s) failed: CHK-1 (1 PASS, 1 FAIL)"


def test_research_state_names_a_refused_write(prefect_server: None, tmp_path: Path) -> None:
    from prefect import flow, get_client

    from flows.research import ResearchResult, research_state

    refused = ResearchResult(
        status="failed",
        message="the update flow ended invalid: appendices/APP-X-RESEARCH-V1.md: unclosed code fence",
        appendix_id="APP-X-RESEARCH-V1",
        appendix_path="appendices/APP-X-RESEARCH-V1.md",
        update={"status": "invalid"},
    )

    @flow(name="research-state-probe")
    def probe() -> Any:
        return research_state(refused)

    state = probe(return_state=True)
    assert state.is_failed() and "unclosed code fence" in (state.message or "")
    with get_client(sync_client=True) as client:
        art = client._client.get("/artifacts/app-x-research-v1-write-refused/latest").json()
    assert art["flow_run_id"] == str(state.state_details.flow_run_id)
    assert "unclosed code fence" in art["data"]
