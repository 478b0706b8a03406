"""A triggered research run's settings may only narrow the process's: its fetch allow-list above all
(a run parameter widening it would be an SSRF past the guard). States read back from the server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fakes.process_worker import REPO, process_pool, run_as_worker

pytestmark = pytest.mark.prefect


def _server_state(state: Any) -> Any:
    from prefect import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(state.state_details.flow_run_id).state


def test_settings_overrides_cannot_widen_the_fetch_allow_list(
    prefect_server: None, site: Any, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows.research import ResearchRequest, research_flow

    # The process running the flow allows 127.0.0.1 only; 127.0.0.2 is the trap nobody may reach.
    monkeypatch.setenv("UDM_FETCH_ALLOW", "127.0.0.1")
    monkeypatch.chdir(workspace)
    request = ResearchRequest(
        question="What is behind the trap?", urls=[site.trap_url], write=False, max_cache_age_s=0
    )
    base = {"project_root": str(workspace), "fetch_host_delay_s": 0.0}
    for widened in ({"fetch_allow": ["127.0.0.0/8"]}, {"fetch_allow": ["127.0.0.1", "127.0.0.2"]}):
        state = research_flow(request=request, settings_overrides={**base, **widened}, return_state=True)
        server = _server_state(state)
        assert server.type.value == "FAILED", server
        assert "fetch_allow may only narrow" in (server.message or ""), server.message
    # Pointing the search or LLM endpoint elsewhere is refused too, naming the setting.
    state = research_flow(
        request=request, settings_overrides={**base, "llm_url": site.trap_url}, return_state=True
    )
    assert "llm_url is the process's setting" in (_server_state(state).message or "")
    assert site.trap_hits == [] and site.trap_connections == []
    # Narrowing (the process's own list, or less) is fine: the run reads the loopback page.
    ok = ResearchRequest(
        question="What is in the notes?", urls=[site.base + "/notes.txt"], write=False, max_cache_age_s=0
    )
    state = research_flow(
        request=ok, settings_overrides={**base, "fetch_allow": ["127.0.0.1"]}, return_state=True
    )
    server = _server_state(state)
    assert server.type.value == "COMPLETED", server.message


# What a trigger asks the research run to read: a file of the worker outside every folder it allows.
_QUESTION = "Where does the worker keep its secret token?"


def _secret(tmp_path: Path, token: str) -> Path:
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text(f"The worker keeps its secret token {token} in this file.\n", encoding="utf-8")
    return secret


def _run_as_worker(flow: Any, deployment: str, own: dict[str, Any], parameters: dict[str, Any]) -> Any:
    """Deploy `flow` (with `own` parameters) to a process pool, trigger it with `parameters`, run it as
    the process worker would (`prefect.engine` in the repository, PREFECT__FLOW_RUN_ID set); (final
    state, every artifact of the run and of its subflows, the engine's output)."""
    from prefect import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, FlowRunFilter
    from prefect.client.schemas.filters import FlowRunFilterParentFlowRunId as Parent
    from prefect.deployments import run_deployment

    process_pool()
    flow.to_deployment(name=deployment, parameters=own).apply(work_pool_name="env-pool")
    flow_run = run_deployment(f"{flow.name}/{deployment}", parameters=parameters, timeout=0)
    state, output = run_as_worker(flow_run.id, REPO, timeout=120)
    with get_client(sync_client=True) as client:
        children = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(parent_flow_run_id=Parent(any_=[flow_run.id]))
        )
        runs = [flow_run.id, *(c.id for c in children)]
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=runs))
        )
    return state, artifacts, output[-2000:]


@pytest.mark.timeout(300)
def test_a_triggered_research_run_cannot_move_its_folders(prefect_server: None, tmp_path: Path) -> None:
    """A research deployment's trigger pointing `root` at `/` would read any file of the worker into
    the run's appendix artifact (an unreviewed read: write=false); a `settings_overrides` the trigger
    changed may only narrow the folders of the process running it, as the pipeline's `root` does."""
    from flows.research import research_flow

    request = {
        "question": _QUESTION,
        "files": [str(_secret(tmp_path, "7f3a"))],
        "write": False,
        "max_cache_age_s": 0,
    }
    own = {"project_root": str(REPO)}
    state, artifacts, output = _run_as_worker(
        research_flow,
        "scope-test",
        {"settings_overrides": own},
        {"request": request, "settings_overrides": {**own, "root": "/"}},
    )
    assert state.type.value == "FAILED", (state, output)
    assert "a run may not set settings_overrides" in (state.message or ""), state.message
    assert not any("7f3a" in str(a.data) for a in artifacts)


@pytest.mark.timeout(300)
def test_a_research_step_of_a_triggered_pipeline_cannot_move_its_folders(
    prefect_server: None, tmp_path: Path
) -> None:
    """Whoever triggers a pipeline deployment sends its spec: a research step of it pointing `root` at
    `/` would read any file of the worker into the appendix artifact. The step's research run (a
    subflow of the worker's run) may only narrow the worker's folders; the pipeline ends Failed."""
    from flows.pipeline import pipeline_flow

    request = {
        "question": _QUESTION,
        "files": [str(_secret(tmp_path, "9c1e"))],
        "write": False,
        "max_cache_age_s": 0,
    }
    spec = {
        "name": "read-outside",
        "steps": {
            "ask": {"flow": "research", "input": {"request": request, "settings_overrides": {"root": "/"}}}
        },
    }
    state, artifacts, output = _run_as_worker(
        pipeline_flow, "research-step-test", {}, {"spec": spec, "artifact": False}
    )
    assert state.type.value == "FAILED", (state, output)
    assert "a run may not set settings_overrides" in (state.message or ""), state.message
    assert not any("9c1e" in str(a.data) for a in artifacts)
