"""The deployments of every flow (mirrored in prefect.yaml) and `udm serve`, which serves them from one process.

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
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DEPLOYMENTS", "SERVED_SUFFIX", "DeploymentDef", "build_deployments", "load_flow", "serve_all"]

# Appended to a deployment's name when `udm serve` registers it (see the module docstring).
SERVED_SUFFIX = "-served"


@dataclass(frozen=True)
class DeploymentDef:
    """One deployment: which flow, its name, schedule and default parameters."""

    name: str
    entrypoint: str  # "flows/module.py:function", as prefect.yaml writes it
    description: str
    cron: str | None = None
    interval_seconds: int | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    tags: tuple[str, ...] = ("udm",)

    @property
    def served_name(self) -> str:
        """The name `udm serve` registers it under."""
        return self.name + SERVED_SUFFIX

    @property
    def import_path(self) -> tuple[str, str]:
        """(module, attribute) of the flow."""
        path, _, attr = self.entrypoint.partition(":")
        return path.removesuffix(".py").replace("/", "."), attr


DEPLOYMENTS: list[DeploymentDef] = [
    DeploymentDef(
        name="reindex",
        entrypoint="flows/index.py:index_flow",
        description="Frequent re-index: keep the DuckDB index in step with the manual's files.",
        interval_seconds=900,
    ),
    DeploymentDef(
        name="nightly-verification",
        entrypoint="flows/browser_verify.py:browser_verification_flow",
        description="Nightly browser verification of the manual's checks, with screenshots.",
        cron="0 2 * * *",
    ),
    DeploymentDef(
        name="weekly-research-refresh",
        entrypoint="flows/research.py:research_flow",
        description="Weekly research refresh of the manual's main research topic; the appendix waits for approval.",
        cron="0 3 * * 1",
        parameters={
            "request": {
                "question": "What changed in DuckDB full-text search and its Python API?",
                "libraries": ["duckdb"],
            }
        },
    ),
    DeploymentDef(
        name="on-demand-research",
        entrypoint="flows/research.py:research_flow",
        description='Research one question into a cited appendix (--param request=\'{"question": "..."}\').',
    ),
    DeploymentDef(
        name="apply-update",
        entrypoint="flows/udm_update.py:udm_update_flow",
        description="Apply edit instructions as one transaction; pauses for approval after the diff.",
    ),
    DeploymentDef(
        name="run-pipeline",
        entrypoint="flows/pipeline.py:pipeline_flow",
        description="Run any pipeline spec (--param spec=path/to/spec.yaml).",
        parameters={"spec": "examples/pipelines/verify.yaml"},
    ),
]


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
