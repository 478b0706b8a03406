"""pipelineCheckTool: check a pipeline spec (YAML text) before running it, listing every problem."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field

from tasks.base import Permission, Tool, ToolContext, ToolInput
from tasks.pipeline_spec import BUILTIN_FLOWS, FlowInfo, PipelineCheckError, compile_pipeline

__all__ = ["PipelineCheckInput", "PipelineCheckOutput", "PipelineCheckStatus", "PipelineCheckTool"]


class PipelineCheckStatus(StrEnum):
    """Outcome of a check."""

    SUCCESS = "SUCCESS"
    ERROR_INVALID_SPEC = "ERROR_INVALID_SPEC"


class PipelineCheckInput(ToolInput):
    """The spec to check."""

    spec: str = Field(
        min_length=1, max_length=2_000_000, description="The pipeline spec as YAML (or JSON) text."
    )


class PipelineCheckOutput(BaseModel):
    """The check's findings."""

    status: PipelineCheckStatus = Field(description="SUCCESS when the check ran (see `valid`).")
    valid: bool = Field(default=False, description="True when the spec can run.")
    problems: list[str] = Field(default_factory=list, description="Every problem, each naming its step.")
    order: list[str] = Field(default_factory=list, description="A run order of the steps (when valid).")
    edges: list[list[str]] = Field(default_factory=list, description="DAG edges [from, to] (when valid).")


class PipelineCheckTool(Tool[PipelineCheckInput, PipelineCheckOutput]):
    """Checks a pipeline spec: unknown tools/steps, cycles, bad references, invalid literal inputs."""

    name = "pipelineCheckTool"
    description = (
        "Check a declarative pipeline spec (YAML) without running it: unknown tools or steps, dependency "
        "cycles, ${{ }} references to output fields that do not exist, and literal inputs a tool's "
        "schema rejects. Returns every problem, each naming its step, or the DAG when valid."
    )
    Input = PipelineCheckInput
    Output = PipelineCheckOutput
    permission = Permission.SAFE

    def execute(self, data: PipelineCheckInput, ctx: ToolContext) -> PipelineCheckOutput:
        """Compile the spec; problems are data, not errors."""
        # Flow parameters are checked by `udm pipeline check` (which may import the flows); here only names.
        flows = {name: FlowInfo(parameters={}) for name in BUILTIN_FLOWS}
        try:
            compiled = compile_pipeline(data.spec, flows)
        except PipelineCheckError as exc:
            return PipelineCheckOutput(status=PipelineCheckStatus.SUCCESS, valid=False, problems=exc.problems)
        return PipelineCheckOutput(
            status=PipelineCheckStatus.SUCCESS,
            valid=True,
            order=compiled.order,
            edges=[[u, v] for u, v in compiled.graph.edges],
        )
