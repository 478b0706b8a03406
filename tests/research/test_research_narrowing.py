"""A triggered research run's settings may only narrow the process's: its fetch allow-list above all
(a run parameter widening it would be an SSRF past the guard). States read back from the server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

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
