"""A deployment run cannot lower the approval policy with a parameter: triggered with full_auto, it pauses."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from udm.config import Settings

pytestmark = pytest.mark.prefect

REPO = Path(__file__).resolve().parents[2]


def _state(client: Any, run_id: Any) -> Any:
    return client.read_flow_run(run_id).state


def test_deployment_run_with_a_lower_policy_parameter_still_pauses(
    prefect_server: None, settings: Settings
) -> None:
    from prefect import get_client
    from prefect.deployments import run_deployment
    from prefect.flow_runs import resume_flow_run
    from prefect.settings import PREFECT_API_URL

    from flows.udm_update import udm_update_flow

    udm_update_flow.to_deployment(name="policy-test").apply()
    patch = {
        "id": "deploy-low-policy",
        "description": "a triggered run asking for full_auto",
        "operations": [
            {"op": "replace_text", "file": "06-config.md", "old": "timeout: 10", "new": "timeout: 20"}
        ],
    }
    before = (settings.udm_root / "06-config.md").read_bytes()
    flow_run = run_deployment(
        "udm-update/policy-test",
        parameters={
            "patch": patch,
            "options": {"approval_policy": "full_auto", "poll_interval_s": 1, "approval_timeout_s": 120},
            "settings_overrides": {"project_root": str(settings.project_root)},
        },
        timeout=0,
    )
    # What a worker does with the deployment's job variables: the flow run's own process, whose
    # environment holds the policy (UDM_APPROVAL_POLICY from the deployment's `env` job variable).
    env = {
        **os.environ,
        "PREFECT_API_URL": str(PREFECT_API_URL.value()),
        "PREFECT__FLOW_RUN_ID": str(flow_run.id),
        "UDM_APPROVAL_POLICY": "smart_auto",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "prefect.engine"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        with get_client(sync_client=True) as client:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and proc.poll() is None:
                if _state(client, flow_run.id).is_paused():
                    break
                time.sleep(0.5)
            state = _state(client, flow_run.id)
            assert state.is_paused(), (state, proc.stdout.read().decode() if proc.poll() is not None else "")
            assert (settings.udm_root / "06-config.md").read_bytes() == before
            resume_flow_run(flow_run.id, run_input={"approve": False, "reviewer": "rev", "comment": "no"})
            proc.wait(60)
            final = _state(client, flow_run.id)
        assert (final.type.value, final.name) == ("COMPLETED", "Rejected")
        assert (settings.udm_root / "06-config.md").read_bytes() == before
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
