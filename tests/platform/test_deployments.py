"""prefect.yaml and `udm serve` declare the same deployments; every deployed flow's parameters exist."""

from __future__ import annotations

from pathlib import Path

import yaml

from flows.deployments import DEPLOYMENTS, load_flow

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
