"""Errors become statuses at one boundary: call_tool applies each tool's `errors` table (tasks/failures.py)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from tasks.base import (
    ErrorTable,
    Failure,
    Tool,
    ToolContext,
    ToolInput,
    TransientToolError,
    call_tool,
)
from tasks.registry import all_tools
from udm.config import Settings as UdmSettings
from udm.errors import (
    AmbiguousTargetError,
    DocumentError,
    IndexBusyError,
    PatchError,
    TargetError,
    TargetNotFoundError,
    ToolStatusError,
    UdmError,
)


class ProbeStatus(StrEnum):
    """Statuses of the probe tool."""

    SUCCESS = "SUCCESS"
    ERROR_TARGET = "ERROR_TARGET"
    ERROR_AMBIGUOUS = "ERROR_AMBIGUOUS"
    ERROR_PARSE = "ERROR_PARSE"
    ERROR_ENGINE = "ERROR_ENGINE"
    ERROR_BUSY = "ERROR_BUSY"
    ERROR_OWN = "ERROR_OWN"


class RaiseInput(ToolInput):
    """Which error the probe raises."""

    raise_: str = Field(alias="raise", description="The name of the error to raise, or 'none'.")


class RaiseOutput(BaseModel):
    """The probe's output: a status, the echoed input, details, candidates."""

    status: ProbeStatus = Field(description="What happened.")
    asked: str | None = Field(default=None, description="The input's `raise`, echoed on failure.")
    errorDetails: str | None = Field(default=None, description="Why it failed.")
    candidates: list[str] = Field(default_factory=list, description="Ambiguous matches.")


_ERRORS: dict[str, BaseException] = {
    "not_found": TargetNotFoundError("no section 'X'"),
    "ambiguous": AmbiguousTargetError("two sections 'X'", ["a.md#x", "b.md#x"]),
    "document": DocumentError("bad YAML at line 3"),
    "patch": PatchError("operation 1 cannot apply"),
    "busy": IndexBusyError("the index is locked"),
    "own": ToolStatusError("ERROR_OWN", "the tool said so"),
    "own_transient": ToolStatusError("ERROR_OWN", "try later", transient=True, retry_after=7.0),
    "unknown_status": ToolStatusError("ERROR_NOT_IN_THE_ENUM", "a typo in a tool"),
    "bug": KeyError("oops"),
}


class RaisingTool(Tool[RaiseInput, RaiseOutput]):
    """A tool that raises the error its input names; its table maps them."""

    name: ClassVar[str] = "raisingProbeTool"
    description: ClassVar[str] = "Raises the named error."
    Input: ClassVar[type[BaseModel]] = RaiseInput
    Output: ClassVar[type[BaseModel]] = RaiseOutput
    errors: ClassVar[ErrorTable] = {
        # Listed general-first on purpose: the most specific class of the error wins, not the order.
        UdmError: ProbeStatus.ERROR_ENGINE,
        TargetError: ProbeStatus.ERROR_TARGET,
        AmbiguousTargetError: Failure(
            ProbeStatus.ERROR_AMBIGUOUS,
            details=lambda exc: f"{exc}; candidates: {', '.join(exc.candidates)}",
            fields=lambda exc: {"candidates": exc.candidates},
        ),
        DocumentError: ProbeStatus.ERROR_PARSE,
        IndexBusyError: Failure(ProbeStatus.ERROR_BUSY, transient=True, retry_after=1.0),
    }

    def failed(
        self, data: RaiseInput, ctx: ToolContext, status: str, details: str, **fields: Any
    ) -> RaiseOutput:
        """Echo the input in the failed Output."""
        return RaiseOutput(status=ProbeStatus(status), asked=data.raise_, errorDetails=details, **fields)

    def execute(self, data: RaiseInput, ctx: ToolContext) -> RaiseOutput:
        """Raise the named error (or succeed)."""
        if data.raise_ == "none":
            return RaiseOutput(status=ProbeStatus.SUCCESS)
        raise _ERRORS[data.raise_]


@pytest.fixture()
def ctx(tmp_path: Any) -> ToolContext:
    """A context whose call log lands in a temporary folder."""
    return ToolContext(settings=UdmSettings(project_root=tmp_path), log=False)


@pytest.mark.parametrize(
    ("raised", "status", "details"),
    [
        ("not_found", "ERROR_TARGET", "no section 'X'"),
        ("ambiguous", "ERROR_AMBIGUOUS", "two sections 'X'; candidates: a.md#x, b.md#x"),
        ("document", "ERROR_PARSE", "bad YAML at line 3"),
        ("patch", "ERROR_ENGINE", "operation 1 cannot apply"),
        ("own", "ERROR_OWN", "the tool said so"),
    ],
)
def test_the_most_specific_entry_maps_the_error(
    ctx: ToolContext, raised: str, status: str, details: str
) -> None:
    """Each error becomes the status of its most specific class in the table, echoing the input."""
    result = call_tool(RaisingTool(), {"raise": raised}, ctx)
    assert result.envelope.success is False
    assert result.envelope.error == f"{status}: {details}"
    assert result.envelope.data is not None
    assert result.envelope.data["status"] == status
    assert result.envelope.data["asked"] == raised
    assert result.envelope.data["errorDetails"] == details
    if raised == "ambiguous":
        assert result.envelope.data["candidates"] == ["a.md#x", "b.md#x"]


def test_a_transient_entry_raises_for_retries_and_returns_the_status_after(ctx: ToolContext) -> None:
    """Inside a Prefect task (raise_transient) the call raises; otherwise its status comes back."""
    with pytest.raises(TransientToolError) as info:
        call_tool(RaisingTool(), {"raise": "busy"}, ctx, raise_transient=True)
    assert info.value.retry_after == 1.0
    assert isinstance(info.value.__cause__, IndexBusyError)
    assert info.value.result.model_dump()["status"] == "ERROR_BUSY"
    result = call_tool(RaisingTool(), {"raise": "busy"}, ctx)
    assert result.envelope.error == "ERROR_BUSY: the index is locked"


def test_a_transient_status_error_keeps_its_own_retry_after(ctx: ToolContext) -> None:
    """A ToolStatusError marked transient retries, waiting what it asked for."""
    with pytest.raises(TransientToolError) as info:
        call_tool(RaisingTool(), {"raise": "own_transient"}, ctx, raise_transient=True)
    assert info.value.retry_after == 7.0
    assert call_tool(RaisingTool(), {"raise": "own_transient"}, ctx).envelope.error == "ERROR_OWN: try later"


@pytest.mark.parametrize("raised", ["bug", "unknown_status"])
def test_an_unexpected_error_is_an_internal_error_not_a_traceback(ctx: ToolContext, raised: str) -> None:
    """An error no entry maps, or one naming a status the Output lacks, is reported as a bug."""
    result = call_tool(RaisingTool(), {"raise": raised}, ctx)
    assert result.envelope.success is False
    assert result.envelope.data is None
    assert (result.envelope.error or "").startswith("internal error in raisingProbeTool: ")


def test_success_is_untouched(ctx: ToolContext) -> None:
    """A call that raises nothing is the tool's own Output."""
    result = call_tool(RaisingTool(), {"raise": "none"}, ctx)
    assert result.envelope.success is True
    assert result.envelope.data == {
        "status": "SUCCESS",
        "asked": None,
        "errorDetails": None,
        "candidates": [],
    }


@pytest.mark.parametrize("tool", all_tools(), ids=lambda t: t.name)
def test_every_tool_table_names_statuses_its_output_knows(tool: Tool[Any, Any]) -> None:
    """A typo in a table entry would otherwise surface only as an internal error at run time."""
    field = tool.Output.model_fields.get("status")
    for klass, entry in tool.errors.items():
        assert issubclass(klass, BaseException)
        status = entry if isinstance(entry, str) else entry.status
        assert field is not None, f"{tool.name} maps {klass.__name__} but its Output has no status"
        allowed = getattr(field.annotation, "__members__", None)
        if allowed is not None:
            assert str(status) in {str(v.value) for v in allowed.values()}, (
                tool.name,
                klass.__name__,
                status,
            )


def _tree_classes() -> list[type[BaseException]]:
    """Every class of the error tree that hangs below UdmError (from the drawing's own module list)."""
    import udm.errors as errors

    return [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, UdmError)]


TREE = _tree_classes()


@settings(max_examples=200, deadline=None)
@given(
    table=st.dictionaries(st.sampled_from(TREE), st.sampled_from(list(ProbeStatus)), max_size=8),
    raised=st.sampled_from(TREE),
)
def test_the_entry_of_the_nearest_ancestor_wins(
    table: dict[type[BaseException], ProbeStatus], raised: type[BaseException]
) -> None:
    """Whatever the table's order: the raised class's nearest ancestor in the table wins, except that a
    ToolStatusError's own status beats the entries of its general bases (ToolError, UdmError)."""
    from tasks.failures import _rule

    mro = raised.__mro__
    exc = raised.__new__(raised)
    if issubclass(raised, ToolStatusError):
        ToolStatusError.__init__(exc, "ERROR_OWN", "its own status")  # type: ignore[arg-type]
        mro = mro[: mro.index(ToolStatusError) + 1]
    rule = _rule(table, exc)
    ancestors = [k for k in mro if k in table]
    if ancestors:
        assert rule is not None and rule.status == table[ancestors[0]]
    elif issubclass(raised, ToolStatusError):
        assert rule is not None and rule.status == "ERROR_OWN"
    else:
        assert rule is None
