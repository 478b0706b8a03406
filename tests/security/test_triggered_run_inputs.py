"""What a deployment trigger may hand a run besides its folders (`flows/run_settings.py`).

Attacks whoever can trigger a deployment could make: give the pipeline flow a `spec` naming any file of
the worker (directly, or through a symlink inside the project), whose YAML error quotes its lines;
turn on `allow_destructive` for browser verification, which then runs destructive and critical browser
steps (downloads, cookies, arbitrary JavaScript) without asking, where the worker's policy would ask.
Each case is a real deployment run through prefect.engine (tests/fakes/process_worker.py): refused
naming the parameter, with nothing of the file in the run's state or output; the deployment's own
choice still runs.
"""

from __future__ import annotations

import pytest

from tests.fakes.process_worker import process_pool, trigger_as_worker
from udm.config import Settings


@pytest.mark.prefect
@pytest.mark.timeout(400)
def test_a_triggered_pipeline_reads_spec_files_only_inside_the_project(
    prefect_server: None,
    settings: Settings,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from flows.pipeline import pipeline_flow

    monkeypatch.chdir(settings.project_root)
    project = settings.project_root  # the worker's working directory: its own project
    process_pool()
    pipeline_flow.to_deployment(
        name="spec-file-test",
        parameters={"root": str(settings.udm_root), "state_dir": str(settings.state_path)},
    ).apply(work_pool_name="env-pool")
    creds = tmp_path_factory.mktemp("elsewhere") / "creds.yaml"  # outside the worker's project
    creds.write_text("user: me\ntoken: SECRET-7f3a: x\n", encoding="utf-8")
    link = settings.project_root / "pipelines" / "linked.yaml"
    link.parent.mkdir(exist_ok=True)
    link.symlink_to(creds)
    # The trigger may not widen what it may read by naming the file's folder as the run's project too.
    widened = {"project": str(creds.parent)}
    for spec, extra in ((str(creds), {}), (str(link), {}), (str(creds), widened)):
        # Before: Failed with "not valid YAML: ... token: SECRET-7f3a ..." quoting the worker's file.
        given = {"spec": spec, "artifact": False, **extra}
        state, out = trigger_as_worker("udm-pipeline/spec-file-test", given, project)
        assert state.type.value == "FAILED", (state, out[-2000:])
        assert "a run may not set spec" in (state.message or ""), state.message
        assert b"SECRET-7f3a" not in out and "SECRET-7f3a" not in (state.message or "")
    # A spec file of the project is read (here a broken one, so its own YAML error ends the run).
    (settings.project_root / "pipelines" / "broken.yaml").write_text("name: [1,\n", encoding="utf-8")
    broken = {"spec": "pipelines/broken.yaml", "artifact": False}
    state, out = trigger_as_worker("udm-pipeline/spec-file-test", broken, project)
    assert state.type.value == "FAILED", (state, out[-2000:])
    assert "not valid YAML" in (state.message or ""), state.message


@pytest.mark.prefect
@pytest.mark.timeout(400)
def test_a_trigger_cannot_allow_destructive_verification_steps(
    prefect_server: None, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows.browser_verify import browser_verification_flow

    monkeypatch.chdir(settings.project_root)  # the worker's policy: the default smart_auto asks
    monkeypatch.delenv("UDM_APPROVAL_POLICY", raising=False)
    process_pool()
    own = {"root": str(settings.udm_root), "state_dir": str(settings.state_path), "artifacts": False}
    quiet = {"only": ["no-such-check"], "record": False, "artifacts": False}
    browser_verification_flow.to_deployment(name="destructive-test", parameters=own).apply(
        work_pool_name="env-pool"
    )
    # Before: the run went ahead with destructive steps allowed, unasked.
    state, out = trigger_as_worker(
        "browser-verification/destructive-test", {**quiet, "allow_destructive": True}, settings.project_root
    )
    assert state.type.value == "FAILED", (state, out[-2000:])
    assert "a run may not set allow_destructive" in (state.message or ""), state.message
    # The deployment's own choice is trusted configuration.
    browser_verification_flow.to_deployment(
        name="destructive-own", parameters={**own, "allow_destructive": True}
    ).apply(work_pool_name="env-pool")
    state, out = trigger_as_worker("browser-verification/destructive-own", quiet, settings.project_root)
    assert "allow_destructive" not in (state.message or ""), (state, out[-2000:])
