"""`udm serve`: the deployments of every flow (wiring.DEPLOYMENTS, as in prefect.yaml), served from one process.

`serve` needs no work pool: one long-running process polls the API for its deployments' scheduled
and triggered runs and runs them. For several machines, `prefect deploy --all` registers the
prefect.yaml deployments in a work pool and `prefect worker start --pool ...` runs them.

The two mechanisms register distinct names: served deployments carry the suffix `-served`
(`udm-pipeline/run-pipeline-served`), pool deployments the plain name (`udm-pipeline/run-pipeline`).
Under one name, `prefect deploy --all` would move a served deployment to the pool (dropping a
schedule set on it), and stopping `udm serve` would pause the pool's deployments.
"""

from __future__ import annotations

import importlib
from typing import Any

from wiring import DEPLOYMENTS, SERVED_SUFFIX, DeploymentDef

__all__ = ["DEPLOYMENTS", "SERVED_SUFFIX", "DeploymentDef", "build_deployments", "load_flow", "serve_all"]


def load_flow(definition: DeploymentDef) -> Any | None:
    """The flow object of a deployment, or None when its module is not installed."""
    module, attr = definition.import_path
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError):
        return None


def build_deployments(only: list[str] | None = None) -> tuple[list[Any], list[str]]:
    """(RunnerDeployments for `serve`, names skipped because their flow is missing)."""
    built, skipped = [], []
    for d in DEPLOYMENTS:
        if only and d.name not in only and d.served_name not in only:
            continue
        fl = load_flow(d)
        if fl is None:
            skipped.append(d.name)
            continue
        kwargs: dict[str, Any] = {
            "name": d.served_name,
            "description": d.description,
            "parameters": d.parameters,
            "tags": [*d.tags, "served"],
        }
        if d.cron:
            kwargs["cron"] = d.cron
        if d.interval_seconds:
            kwargs["interval"] = d.interval_seconds
        built.append(fl.to_deployment(**kwargs))
    return built, skipped


def serve_all(only: list[str] | None = None, limit: int | None = None) -> None:
    """Serve every deployment from this process until interrupted (stopping pauses their schedules)."""
    from prefect import serve

    deployments, skipped = build_deployments(only)
    if skipped:
        print(f"not served (flow not installed): {', '.join(skipped)}")
    if not deployments:
        raise RuntimeError("no deployment to serve")
    serve(*deployments, limit=limit)
