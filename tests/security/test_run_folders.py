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

from pathlib import Path

import pytest

from flows.run_settings import check_scope
from tests.fakes.process_worker import process_pool, trigger_as_worker
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
    process_pool()
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
    state, out = trigger_as_worker(
        "browser-verification/folders-test",
        {"root": str(outside), "state_dir": str(elsewhere_state), "artifacts": False},
        settings.project_root,
    )
    assert state.type.value == "FAILED", (state, out[-2000:])
    assert "a run may not set root, state_dir" in (state.message or ""), state.message
    assert not elsewhere_state.exists()
    # Spec files a trigger names must lie in the process's folders: a YAML error quotes the file.
    state, out = trigger_as_worker(
        "browser-verification/folders-test",
        {"specs": [str(outside / "creds.yaml")], "artifacts": False},
        settings.project_root,
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
    process_pool()
    pipeline_flow.to_deployment(
        name="index-step-test",
        parameters={"root": str(settings.udm_root), "state_dir": str(settings.state_path)},
    ).apply(work_pool_name="env-pool")
    spec = {
        "name": "index-elsewhere",
        "steps": {"idx": {"flow": "index", "input": {"root": str(outside), "full": True}}},
    }
    # Before: the step indexed other-project/ into the manual's own state (what the tools query).
    given = {"spec": spec, "artifact": False}
    state, out = trigger_as_worker("udm-pipeline/index-step-test", given, settings.project_root)
    assert state.type.value == "FAILED", (state, out[-2000:])
    assert "a run may not set root" in str(state.message) + out.decode(errors="replace"), state.message
    # Nothing indexed at all: the manual's state holds no index (the step was its only indexer).
    assert not (settings.state_path / "index.duckdb").exists()
