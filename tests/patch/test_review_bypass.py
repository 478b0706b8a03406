"""Ways around the review a triggered run could take, read back from a real Prefect server: settings
a run parameter points at (another folder's udm.toml) never lower the process's approval policy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from udm.config import Settings
from udm.patch import parse_patch

from .conftest import snapshot

pytestmark = pytest.mark.prefect

EDIT = {"op": "set_yaml_key", "file": "config.md", "section": "HTTP", "key": "http.timeout", "value": 25}


def test_a_project_root_parameter_cannot_bring_its_own_policy(
    prefect_server: None, small: Settings, tmp_path: Path, reviewer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect import get_client

    from flows.udm_update import udm_update_flow

    # The process's policy is its own settings' (default smart_auto: a write asks); a triggered run
    # names a folder whose udm.toml says full_auto.
    monkeypatch.delenv("UDM_APPROVAL_POLICY", raising=False)
    monkeypatch.chdir(tmp_path)
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "udm.toml").write_text(
        f'approval_policy = "full_auto"\nroot = "{small.udm_root}"\nstate_dir = "{small.state_path}"\n'
        f'logs_dir = "{small.logs_path}"\n',
        encoding="utf-8",
    )
    before = snapshot(small.udm_root)
    thread, seen = reviewer({"approve": False, "reviewer": "eve", "comment": "no"})
    state = udm_update_flow(
        patch=parse_patch({"id": "foreign-toml", "description": "bypass", "operations": [EDIT]}),
        settings_overrides={"project_root": str(other)},
        options={"poll_interval_s": 1},
        return_state=True,
    )
    thread.join(5)
    assert "run_id" in seen, f"the run never paused: {state.name} {state.message}"
    assert (state.type.value, state.name) == ("COMPLETED", "Rejected")
    assert snapshot(small.udm_root) == before
    with get_client(sync_client=True) as client:
        assert client.read_flow_run(seen["run_id"]).state.name == "Rejected"
