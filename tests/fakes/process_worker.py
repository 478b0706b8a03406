"""A Prefect process worker, played in the test: a process work pool, and one flow run executed the way
a process worker starts it (`python -m prefect.engine` with PREFECT__FLOW_RUN_ID, in its working folder,
with the env job variables it merged), then read back from the server once it is final."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from uuid import UUID

REPO = Path(__file__).resolve().parents[2]

__all__ = ["process_pool", "run_as_worker", "trigger_as_worker"]


def process_pool(name: str = "env-pool") -> None:
    """Create (or replace) a process work pool with Prefect's default base job template."""
    from prefect import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.workers.process import ProcessWorker

    with get_client(sync_client=True) as client:
        client.create_work_pool(
            WorkPoolCreate(
                name=name, type="process", base_job_template=ProcessWorker.get_default_base_job_template()
            ),
            overwrite=True,
        )


def run_as_worker(
    flow_run_id: UUID, cwd: Path = REPO, env: dict[str, str] | None = None, timeout: float = 180
) -> tuple[Any, bytes]:
    """Execute the flow run as a process worker would, in `cwd` (the worker's project: its own settings
    are read there) with `env` on top of this process's; (its final state, the engine's output)."""
    from prefect import get_client
    from prefect.settings import PREFECT_API_URL

    full_env = {
        **os.environ,
        **(env or {}),
        "PREFECT_API_URL": str(PREFECT_API_URL.value()),
        "PREFECT__FLOW_RUN_ID": str(flow_run_id),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "prefect.engine"], cwd=cwd, env=full_env, capture_output=True, timeout=timeout
    )
    with get_client(sync_client=True) as client:
        # The server records the final state from the engine's events; give it a moment to land.
        deadline = time.monotonic() + 30
        state = client.read_flow_run(flow_run_id).state
        while not state.is_final() and time.monotonic() < deadline:
            time.sleep(0.5)
            state = client.read_flow_run(flow_run_id).state
    return state, proc.stdout + proc.stderr


def trigger_as_worker(deployment: str, parameters: dict[str, Any], cwd: Path = REPO) -> tuple[Any, bytes]:
    """Trigger one run of `deployment` with `parameters` and execute it as a process worker in `cwd`."""
    from prefect.deployments import run_deployment

    flow_run = run_deployment(deployment, parameters=parameters, timeout=0)
    return run_as_worker(flow_run.id, cwd)
