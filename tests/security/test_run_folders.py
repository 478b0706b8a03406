"""What a deployment trigger may choose for a run's folders (`flows/run_settings.py`).

Attacks whoever can trigger a deployment could make: point the run's root at a folder of the manual
that is a symlink to elsewhere (inside the process's root by its spelling, so `check_scope` let it
through, and the run's sandbox then trusted everything behind it); give the browser verification
deployment (and the index flow, and either as a step of a pipeline spec the trigger sends) a `root`
or `state_dir` of its choice, which no check looked at: the run indexed and recorded another folder,
writing the index and records wherever it said; name spec files anywhere on the worker (a YAML error
quotes the line). Each case asserts the run is refused naming the parameter, and nothing was written.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from flows.run_settings import check_scope
from udm.config import Settings, load_settings
from udm.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def test_a_root_through_a_symlink_in_the_manual_is_wider(tmp_path: Path) -> None:
    (tmp_path / "docs" / "udm").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "docs" / "udm" / "shared").symlink_to(elsewhere, target_is_directory=True)
    own = load_settings(tmp_path)
    inside = load_settings(tmp_path, root="docs/udm/sub")
    check_scope(inside, own, ["settings_overrides"])  # a real folder inside: narrowing, allowed
    # Before: lexically inside docs/udm, so allowed, and the run's sandbox read elsewhere/ freely.
    linked = load_settings(tmp_path, root="docs/udm/shared")
    with pytest.raises(ConfigError, match="docs/udm/shared"):
        check_scope(linked, own, ["settings_overrides"])
    allowed = load_settings(tmp_path, allowed_dirs=["docs/udm/shared"])
    with pytest.raises(ConfigError, match="a run may not set settings_overrides"):
        check_scope(allowed, own, ["settings_overrides"])


def _worker_run(deployment: str, parameters: dict[str, Any], cwd: Path = REPO) -> tuple[Any, bytes]:
    """Run one flow run of `deployment` as a process worker would (`python -m prefect.engine`), in the
    worker's working directory `cwd` (its project: its own settings are read there)."""
    from prefect import get_client
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL

    flow_run = run_deployment(deployment, parameters=parameters, timeout=0)
    env = {
        **os.environ,
        "PREFECT_API_URL": str(PREFECT_API_URL.value()),
        "PREFECT__FLOW_RUN_ID": str(flow_run.id),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "prefect.engine"], cwd=cwd, env=env, capture_output=True, timeout=180
    )
    with get_client(sync_client=True) as client:
        deadline = time.monotonic() + 30
        state = client.read_flow_run(flow_run.id).state
        while not state.is_final() and time.monotonic() < deadline:
            time.sleep(0.5)
            state = client.read_flow_run(flow_run.id).state
    return state, proc.stdout + proc.stderr


def _pool() -> None:
    from prefect import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.workers.process import ProcessWorker

    with get_client(sync_client=True) as client:
        client.create_work_pool(
            WorkPoolCreate(
                name="env-pool",
                type="process",
                base_job_template=ProcessWorker.get_default_base_job_template(),
            ),
            overwrite=True,
        )


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder of the worker outside the process's folders, with a page holding a verify block."""
    folder = tmp_path / "other-project"
    folder.mkdir()
    (folder / "page.md").write_text("# Other\n\nNot this manual's.\n", encoding="utf-8")
    (folder / "creds.yaml").write_text("token: SECRET-7f3a\nbroken: [1,\n", encoding="utf-8")
    return folder


@pytest.mark.prefect
@pytest.mark.timeout(400)
def test_a_triggered_verification_run_cannot_choose_its_folders_or_specs(
    prefect_server: None, settings: Settings, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows.browser_verify import browser_verification_flow

    monkeypatch.chdir(settings.project_root)  # the worker's own settings are this project's
    _pool()
    browser_verification_flow.to_deployment(
        name="folders-test",
        parameters={
            "root": str(settings.udm_root),
            "state_dir": str(settings.state_path),
            "artifacts": False,
        },
    ).apply(work_pool_name="env-pool")
    elsewhere_state = outside / "state"
    # Before: Completed, having indexed other-project/ into other-project/state/ (index, lookup).
    state, out = _worker_run(
        "browser-verification/folders-test",
        {"root": str(outside), "state_dir": str(elsewhere_state), "artifacts": False},
    )
    assert state.type.value == "FAILED", (state, out[-2000:])
    assert "a run may not set root, state_dir" in (state.message or ""), state.message
    assert not elsewhere_state.exists()
    # Spec files a trigger names must lie in the process's folders: a YAML error quotes the file.
    state, out = _worker_run(
        "browser-verification/folders-test", {"specs": [str(outside / "creds.yaml")], "artifacts": False}
    )
    assert state.type.value == "FAILED", (state, out[-2000:])
    assert "a run may not set specs" in (state.message or ""), state.message
    assert b"SECRET-7f3a" not in out and "SECRET-7f3a" not in (state.message or "")


@pytest.mark.prefect
@pytest.mark.timeout(400)
def test_a_pipeline_step_cannot_index_another_folder(
    prefect_server: None, settings: Settings, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows.pipeline import pipeline_flow

    monkeypatch.chdir(settings.project_root)
    _pool()
    pipeline_flow.to_deployment(
        name="index-step-test",
        parameters={"root": str(settings.udm_root), "state_dir": str(settings.state_path)},
    ).apply(work_pool_name="env-pool")
    spec = {
        "name": "index-elsewhere",
        "steps": {"idx": {"flow": "index", "input": {"root": str(outside), "full": True}}},
    }
    # Before: the step indexed other-project/ into the manual's own state (what the tools query).
    state, out = _worker_run("udm-pipeline/index-step-test", {"spec": spec, "artifact": False})
    assert state.type.value == "FAILED", (state, out[-2000:])
    assert "a run may not set root" in str(state.message) + out.decode(errors="replace"), state.message
    # Nothing indexed at all: the manual's state holds no index (the step was its only indexer).
    assert not (settings.state_path / "index.duckdb").exists()
