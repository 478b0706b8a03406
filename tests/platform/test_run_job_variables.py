"""A triggered run cannot widen what the flow may do through its own `env` job variable: a UDM_*
setting the run (not its deployment) sets ends the run Failed "Invalid", naming it, before any review."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.process_worker import REPO, process_pool, run_as_worker
from udm.config import Settings

pytestmark = [pytest.mark.prefect, pytest.mark.timeout(300)]


def test_a_run_level_env_job_variable_cannot_change_the_deployments_settings(
    prefect_server: None, settings: Settings
) -> None:
    from prefect.deployments import run_deployment

    from flows.udm_update import udm_update_flow

    process_pool()
    deployment_env = {"UDM_APPROVAL_POLICY": "smart_auto", "UDM_GIT_COMMIT": "true"}
    udm_update_flow.to_deployment(name="env-test", job_variables={"env": deployment_env}).apply(
        work_pool_name="env-pool"
    )
    run_env = {"UDM_GIT_COMMIT": "false", "UDM_ALLOWED_DIRS": "/"}
    before = (settings.udm_root / "06-config.md").read_bytes()
    flow_run = run_deployment(
        "udm-update/env-test",
        parameters={
            "patch": {
                "id": "env-widen",
                "description": "a run widening the deployment's settings",
                "operations": [
                    {"op": "replace_text", "file": "06-config.md", "old": "timeout: 10", "new": "timeout: 20"}
                ],
            },
            "options": {"poll_interval_s": 1, "approval_timeout_s": 3},
            "settings_overrides": {"project_root": str(settings.project_root)},
        },
        job_variables={"env": run_env},
        timeout=0,
    )
    # The environment a process worker builds: the deployment's and the run's env job variables merged.
    state, out = run_as_worker(flow_run.id, REPO, {**deployment_env, **run_env}, timeout=120)
    assert (state.type.value, state.name) == ("FAILED", "Invalid"), (state, out[-2000:])
    message = state.message or ""
    assert "UDM_ALLOWED_DIRS" in message and "UDM_GIT_COMMIT" in message, message
    assert (settings.udm_root / "06-config.md").read_bytes() == before


def test_a_triggered_pipeline_run_cannot_move_the_manual_root(
    prefect_server: None, settings: Settings, tmp_path: Path
) -> None:
    """`root`/`project`/`state_dir` of a pipeline deployment are its own: a run pointing `root` at `/`
    would let an unreviewed (safe) readFile step read any file of the worker."""
    from prefect.deployments import run_deployment

    from flows.pipeline import pipeline_flow

    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("worker secret", encoding="utf-8")
    spec = {
        "name": "read-outside",
        "steps": {
            "read": {"tool": "fileSystemAccessTool", "input": {"action": "readFile", "filePath": str(secret)}}
        },
    }
    process_pool()
    pipeline_flow.to_deployment(
        name="paths-test", parameters={"root": str(settings.udm_root), "state_dir": str(settings.state_path)}
    ).apply(work_pool_name="env-pool")
    flow_run = run_deployment(
        "udm-pipeline/paths-test",
        parameters={"spec": spec, "root": "/", "artifact": False},
        timeout=0,
    )
    state, out = run_as_worker(flow_run.id, REPO, timeout=120)
    assert state.type.value == "FAILED", (state, out[-2000:])
    assert "a run may not set root" in (state.message or ""), state.message
    assert b"worker secret" not in out
