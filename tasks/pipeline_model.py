"""The pipeline spec's model: steps, their cache and the spec itself (the published JSON Schema), the
durations they are written in, and what compiling gives (FlowInfo, CompiledPipeline)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
from pydantic import BaseModel, ConfigDict, Field, field_validator

import wiring

__all__ = [
    "BUILTIN_FLOWS",
    "CacheSpec",
    "CompiledPipeline",
    "FlowInfo",
    "PipelineSpec",
    "StepSpec",
    "parse_duration",
    "pipeline_json_schema",
]

# The flows a step may run (wiring.PIPELINE_FLOWS; flows/pipeline.py loads them and their schemas).
BUILTIN_FLOWS = tuple(wiring.PIPELINE_FLOWS)
_STEP_NAME = r"^[A-Za-z_][A-Za-z0-9_-]*$"
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*$")
_UNITS = {"ms": 0.001, "s": 1, None: 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(value: float | int | str) -> float:
    """Seconds from a number or a string such as '90', '30s', '15m', '6h', '7d'."""
    if isinstance(value, int | float):
        return float(value)
    match = _DURATION.match(value)
    if not match:
        raise ValueError(f"'{value}' is not a duration (e.g. 30s, 15m, 6h, 7d)")
    return float(match.group(1)) * _UNITS[match.group(2)]


class CacheSpec(BaseModel):
    """Reuse a step's result while the listed input fields are unchanged, until it expires."""

    model_config = ConfigDict(extra="forbid")

    key: list[str] = Field(
        default_factory=list,
        description="Input fields whose values form the cache key (empty: the whole resolved input).",
    )
    expiration: str | float = Field(default="1d", description="How long a cached result is reused.")

    @field_validator("expiration")
    @classmethod
    def _duration(cls, value: str | float) -> str | float:
        parse_duration(value)
        return value


class StepSpec(BaseModel):
    """One step: a tool (or flow) call with its input and how it runs."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    tool: str | None = Field(default=None, description="The tool to call (see `udm tools list`).")
    flow: str | None = Field(default=None, description="Or a flow to run: research, update, verify, index.")
    input: dict[str, Any] = Field(
        default_factory=dict, description="The input; strings may hold ${{ }} expressions."
    )
    needs: list[str] = Field(
        default_factory=list,
        description="Steps that must finish first (steps referenced in expressions are added automatically).",
    )
    retries: int = Field(default=0, ge=0, le=10, description="Retries of transient failures.")
    retry_delay: float | list[float] | None = Field(
        default=None, description="Seconds between retries (one number or one per retry); default backoff."
    )
    cache: CacheSpec | None = Field(default=None, description="Reuse results across runs.")
    timeout: float | None = Field(default=None, gt=0, description="Seconds before the step fails.")
    when: str | None = Field(default=None, description="Run only when this condition holds.")
    for_each: str | list[Any] | None = Field(
        default=None, description="Run once per item of this list (an expression or a literal list)."
    )


class PipelineSpec(BaseModel):
    """A pipeline: named steps forming a DAG."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$", description="The pipeline's name.")
    description: str = Field(default="", description="What the pipeline does.")
    parameters: dict[str, Any] = Field(
        default_factory=dict, description="Parameters with defaults, referenced as ${{ params.NAME }}."
    )
    max_workers: int = Field(default=8, ge=1, le=256, description="Most steps running at once.")
    steps: dict[str, StepSpec] = Field(min_length=1, description="The steps, by name.")

    @field_validator("steps")
    @classmethod
    def _names(cls, steps: dict[str, StepSpec]) -> dict[str, StepSpec]:
        for name in steps:
            if not re.match(_STEP_NAME, name):
                raise ValueError(f"step name '{name}' must be letters, digits, '_' or '-'")
        return steps


def pipeline_json_schema() -> dict[str, Any]:
    """The published JSON Schema of pipeline specs."""
    schema = PipelineSpec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "UDM Pipelines pipeline spec"
    return schema


@dataclass(frozen=True)
class FlowInfo:
    """What the compiler knows of a flow a step may run: its parameter schema and output schema."""

    parameters: dict[str, Any]
    output_schema: dict[str, Any] | None = None


@dataclass
class CompiledPipeline:
    """A checked spec: the DAG, a topological order, and each step's upstream steps."""

    spec: PipelineSpec
    graph: nx.DiGraph
    order: list[str]
    upstream: dict[str, list[str]] = field(default_factory=dict)
