"""A deployment run cannot lower the approval policy: neither a parameter nor a run-level job variable."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from udm.config import Settings

pytestmark = [pytest.mark.prefect, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]


def _state(client: Any, run_id: Any) -> Any:
    return client.read_flow_run(run_id).state


def _run_as_a_worker_would(
    settings: Settings, patch_id: str, options: dict[str, Any], job_variables: dict[str, Any], env_policy: str
) -> tuple[str, str]:
    """Trigger the deployment, execute the run in its own process with the environment a process worker
    builds (the deployment's and the run's `env` job variables merged), reject the review once the run is
    Paused; (state type, state name) at the end. AssertionError when it never pauses."""
    from prefect import get_client
    from prefect.deployments import run_deployment
    from prefect.flow_runs import resume_flow_run
    from prefect.settings import PREFECT_API_URL

    patch = {
        "id": patch_id,
        "description": "a triggered run asking for less review",
        "operations": [
            {"op": "replace_text", "file": "06-config.md", "old": "timeout: 10", "new": "timeout: 20"}
        ],
    }
    before = (settings.udm_root / "06-config.md").read_bytes()
    flow_run = run_deployment(
        "udm-update/policy-test",
        parameters={
            "patch": patch,
            "options": {"poll_interval_s": 1, "approval_timeout_s": 120, **options},
            "settings_overrides": {"project_root": str(settings.project_root)},
        },
        job_variables=job_variables,
        timeout=0,
    )
    env = {
        **os.environ,
        "PREFECT_API_URL": str(PREFECT_API_URL.value()),
        "PREFECT__FLOW_RUN_ID": str(flow_run.id),
        "UDM_APPROVAL_POLICY": env_policy,
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
        assert (settings.udm_root / "06-config.md").read_bytes() == before
        return final.type.value, final.name
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _deploy() -> None:
    """The update flow as a deployment in a process work pool, smart_auto in its job variables."""
    from prefect import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.workers.process import ProcessWorker

    from flows.udm_update import udm_update_flow

    template = ProcessWorker.get_default_base_job_template()
    with get_client(sync_client=True) as client:
        client.create_work_pool(
            WorkPoolCreate(name="policy-pool", type="process", base_job_template=template), overwrite=True
        )
    udm_update_flow.to_deployment(
        name="policy-test", job_variables={"env": {"UDM_APPROVAL_POLICY": "smart_auto"}}
    ).apply(work_pool_name="policy-pool")


def test_a_lower_policy_parameter_still_pauses(prefect_server: None, settings: Settings) -> None:
    _deploy()
    # A parameter asking for full_auto, under a smart_auto process.
    outcome = _run_as_a_worker_would(
        settings, "deploy-param", {"approval_policy": "full_auto"}, {}, "smart_auto"
    )
    assert outcome == ("COMPLETED", "Rejected")


@pytest.mark.slow
def test_a_lower_run_level_job_variable_still_pauses(prefect_server: None, settings: Settings) -> None:
    _deploy()
    # The worker puts the run's full_auto into the flow run's process; the deployment said smart_auto.
    lowered = {"env": {"UDM_APPROVAL_POLICY": "full_auto"}}
    outcome = _run_as_a_worker_would(settings, "deploy-jobvar", {}, lowered, "full_auto")
    assert outcome == ("COMPLETED", "Rejected")
