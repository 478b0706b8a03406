"""prefect.yaml and `udm serve` declare the same flows under distinct names; settings are job variables."""

from __future__ import annotations

from pathlib import Path

import yaml

from flows.deployments import DEPLOYMENTS, build_deployments, load_flow

REPO = Path(__file__).resolve().parents[2]


def test_prefect_yaml_matches_the_served_deployments() -> None:
    doc = yaml.safe_load((REPO / "prefect.yaml").read_text())
    declared = {d["name"]: d for d in doc["deployments"]}
    assert set(declared) == {d.name for d in DEPLOYMENTS}
    for d in DEPLOYMENTS:
        y = declared[d.name]
        assert y["entrypoint"] == d.entrypoint, d.name
        assert (y.get("parameters") or {}) == d.parameters, d.name
        schedules = y.get("schedules") or []
        if d.cron:
            assert schedules == [{"cron": d.cron, "timezone": "UTC"}], d.name
        elif d.interval_seconds:
            assert schedules == [{"interval": d.interval_seconds}], d.name
        else:
            assert schedules == [], d.name
        assert y["work_pool"]["name"] == "udm-pool"
    # The schedules the issue asks for: nightly verification, weekly research, frequent re-index.
    by_name = {d.name: d for d in DEPLOYMENTS}
    assert by_name["nightly-verification"].cron == "0 2 * * *"
    assert by_name["weekly-research-refresh"].cron == "0 3 * * 1"
    assert by_name["reindex"].interval_seconds and by_name["reindex"].interval_seconds <= 3600


def test_deployment_parameters_are_parameters_of_their_flows() -> None:
    for d in DEPLOYMENTS:
        fl = load_flow(d)
        if fl is None:
            continue  # that area's flow is not installed in this checkout
        props = fl.parameters.model_dump()["properties"]
        assert set(d.parameters) <= set(props), (d.name, set(d.parameters) - set(props))
        assert (REPO / d.entrypoint.partition(":")[0]).exists()


def test_served_and_pool_deployments_never_share_a_name() -> None:
    doc = yaml.safe_load((REPO / "prefect.yaml").read_text())
    pool = {d["name"] for d in doc["deployments"]}
    built, skipped = build_deployments()
    served = {d.name for d in built}
    assert not skipped and len(served) == len(DEPLOYMENTS)
    assert served == {d.name + "-served" for d in DEPLOYMENTS}
    assert not served & pool  # `prefect deploy --all` cannot move a served deployment, nor the reverse
    assert build_deployments(["run-pipeline-served"])[0][0].name == "run-pipeline-served"


def test_the_settings_flows_need_are_job_variables() -> None:
    doc = yaml.safe_load((REPO / "prefect.yaml").read_text())
    for d in doc["deployments"]:
        env = d["job_variables"]["env"]
        assert {"UDM_ROOT", "UDM_STATE_DIR", "UDM_APPROVAL_POLICY", "UDM_FETCH_ALLOW"} <= set(env), d["name"]
        assert env["UDM_APPROVAL_POLICY"] in ("ask_always", "smart_auto", "full_auto")
        assert all(isinstance(v, str) for v in env.values()), d["name"]  # environment values are strings
    by_name = {d["name"]: d for d in doc["deployments"]}
    # The sample verify spec checks the sample site on loopback: that deployment allow-lists it.
    assert by_name["run-pipeline"]["job_variables"]["env"]["UDM_FETCH_ALLOW"] == "127.0.0.1"


def test_every_example_patch_changes_the_sample(tmp_path: Path) -> None:
    import shutil

    from udm.config import load_settings
    from udm.patch import apply_patch, load_patch

    shutil.copytree(REPO / "examples" / "udm", tmp_path / "docs" / "udm")
    settings = load_settings(cwd=tmp_path)
    examples = sorted((REPO / "examples" / "patches").glob("*.yaml"))
    assert len(examples) >= 2
    for path in examples:
        plan = apply_patch(load_patch(path), settings, dry_run=True)
        assert plan.status == "planned" and plan.files, (path.name, plan.error)
        # Every operation changes something: none is a no-op on the sample.
        assert {o.status for o in plan.operations} == {"applied"}, (path.name, plan.operations)
