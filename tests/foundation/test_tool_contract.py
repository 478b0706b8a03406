"""The tool contract through call_tool: approval matrix, envelope, input validation, call log."""

from __future__ import annotations

import asyncio
import io
import json
import threading
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, Field, ValidationError

from tasks.base import (
    ApprovalRequest,
    Envelope,
    Permission,
    Tool,
    ToolContext,
    ToolInput,
    TransientToolError,
    always_approve,
    call_tool,
    cli_approver,
    deny_all,
    input_digest,
    needs_approval,
)
from udm.config import ApprovalPolicy, Settings, load_settings

SECRET = "hunter2-do-not-log-me"


class LevelInput(ToolInput):
    """Input of the probe tool: the permission the call claims, and some text."""

    level: Permission = Field(default=Permission.SAFE, description="Permission of this call.")
    text: str = Field(min_length=1, description="Any non-empty text.")
    count: int = Field(default=1, ge=1, le=10, description="A bounded number.")
    mode: str = Field(default="ok", description="ok | fail | partial | crash | transient.")


class LevelOutput(BaseModel):
    """Output of the probe tool."""

    status: str = Field(description="SUCCESS, PARTIAL_SUCCESS_SOME or ERROR_PROBE.")
    echoed: str = Field(description="The text, repeated count times.")
    errorDetails: str | None = Field(default=None, description="Why it failed.")


class ProbeTool(Tool[LevelInput, LevelOutput]):
    """A tool whose permission and outcome the input chooses, to exercise call_tool."""

    name: ClassVar[str] = "probeTool"
    description: ClassVar[str] = "Echoes text; the input picks its permission and outcome."
    Input: ClassVar[type[BaseModel]] = LevelInput
    Output: ClassVar[type[BaseModel]] = LevelOutput
    permission: ClassVar[Permission] = Permission.SAFE

    def __init__(self) -> None:
        self.executed = 0

    def permission_for(self, data: LevelInput) -> Permission:
        """The level the input claims."""
        return data.level

    def execute(self, data: LevelInput, ctx: ToolContext) -> LevelOutput:
        """Echo, or fail the way the input asks."""
        self.executed += 1
        if data.mode == "fail":
            return LevelOutput(status="ERROR_PROBE", echoed="", errorDetails="asked to fail")
        if data.mode == "partial":
            return LevelOutput(status="PARTIAL_SUCCESS_SOME", echoed=data.text)
        if data.mode == "crash":
            raise KeyError("boom")
        if data.mode == "transient":
            err = LevelOutput(status="ERROR_PROBE", echoed="", errorDetails="timed out")
            raise TransientToolError("timed out", result=err, retry_after=1.5)
        return LevelOutput(status="SUCCESS", echoed=data.text * data.count)


class AsyncOutput(BaseModel):
    """Output of the async tool."""

    loop_id: int = Field(description="id() of the loop the call ran on.")
    thread: str = Field(description="Name of the thread the call ran on.")


class EmptyInput(ToolInput):
    """No fields."""


class AsyncTool(Tool[EmptyInput, AsyncOutput]):
    """An async tool without a status field: reports which loop ran it."""

    name: ClassVar[str] = "asyncProbeTool"
    description: ClassVar[str] = "Reports the event loop it ran on."
    Input: ClassVar[type[BaseModel]] = EmptyInput
    Output: ClassVar[type[BaseModel]] = AsyncOutput

    async def execute(self, data: EmptyInput, ctx: ToolContext) -> AsyncOutput:
        """Await once, then report the running loop."""
        await asyncio.sleep(0)
        return AsyncOutput(loop_id=id(asyncio.get_running_loop()), thread=threading.current_thread().name)


class Recorder:
    """An approver that records requests and answers with a fixed decision."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.requests: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> bool:
        self.requests.append(request)
        return self.answer


def make_ctx(tmp_path: Path, policy: ApprovalPolicy, approver: Any = always_approve) -> ToolContext:
    """A context whose settings live under tmp_path, with the given policy and approver."""
    settings = load_settings(cwd=tmp_path, approval_policy=policy)
    return ToolContext(settings=settings, approver=approver)


def log_lines(settings: Settings) -> list[dict[str, Any]]:
    """The parsed lines of the tool-call log."""
    path = settings.logs_path / "tool-calls.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# The table, written out independently of tasks.base.APPROVAL_MATRIX.
EXPECTED_ASK = {
    ("ask_always", "safe"): True,
    ("ask_always", "moderate"): True,
    ("ask_always", "destructive"): True,
    ("ask_always", "critical"): True,
    ("smart_auto", "safe"): False,
    ("smart_auto", "moderate"): True,
    ("smart_auto", "destructive"): True,
    ("smart_auto", "critical"): True,
    ("full_auto", "safe"): False,
    ("full_auto", "moderate"): False,
    ("full_auto", "destructive"): False,
    ("full_auto", "critical"): True,
}


@pytest.mark.parametrize(("policy", "level"), sorted(EXPECTED_ASK))
def test_approval_matrix_cell_through_call_tool(tmp_path: Path, policy: str, level: str) -> None:
    ask = EXPECTED_ASK[(policy, level)]
    assert needs_approval(policy, level) is ask
    tool = ProbeTool()

    approving = Recorder(True)
    result = call_tool(
        tool, {"level": level, "text": "x"}, make_ctx(tmp_path, ApprovalPolicy(policy), approving)
    )
    assert result.envelope.success
    assert len(approving.requests) == (1 if ask else 0)
    assert result.decision == ("approved" if ask else "auto")
    if ask:
        request = approving.requests[0]
        assert request.tool == "probeTool"
        assert request.permission == Permission(level)
        assert request.input_digest == input_digest({"level": level, "text": "x"})

    denying = Recorder(False)
    denied = call_tool(
        tool, {"level": level, "text": "x"}, make_ctx(tmp_path, ApprovalPolicy(policy), denying)
    )
    assert denied.envelope.success is not ask
    if ask:
        assert denied.decision == "denied"
        assert denied.envelope.data is None
        assert denied.envelope.error is not None
        assert "approval denied" in denied.envelope.error
        assert level in denied.envelope.error
    # A denied call never reaches execute().
    assert tool.executed == (1 if ask else 2)


def test_cli_approver_yes_tty_and_no_tty(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    request = ApprovalRequest(tool="probeTool", permission=Permission.MODERATE, summary="s", input_digest="d")
    assert cli_approver(yes=True)(request) is True

    class FakeTty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", FakeTty("y\nno\n"))
    assert cli_approver()(request) is True
    assert cli_approver()(request) is False
    # End of input answers no.
    assert cli_approver()(request) is False
    prompts = capsys.readouterr()
    assert prompts.out == ""
    assert prompts.err.count("Approve? [y/N]") == 3

    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    ctx = make_ctx(tmp_path, ApprovalPolicy.SMART_AUTO, cli_approver(yes=False))
    result = call_tool(ProbeTool(), {"level": "moderate", "text": "x"}, ctx)
    assert not result.envelope.success
    assert result.decision == "unavailable"
    assert result.envelope.error is not None
    assert result.envelope.error.startswith("approval required")
    assert "--yes" in result.envelope.error


def test_default_context_denies_what_needs_approval(tmp_path: Path) -> None:
    ctx = ToolContext(settings=load_settings(cwd=tmp_path))
    assert ctx.approver is deny_all
    assert not call_tool(ProbeTool(), {"level": "moderate", "text": "x"}, ctx).envelope.success
    assert call_tool(ProbeTool(), {"level": "safe", "text": "x"}, ctx).envelope.success


def test_envelope_invariants() -> None:
    with pytest.raises(ValidationError):
        Envelope(success=True, error="nope")
    with pytest.raises(ValidationError):
        Envelope(success=False)
    with pytest.raises(ValidationError):
        Envelope(success=False, error="")
    assert Envelope(success=True, data={"a": 1}).model_dump() == {
        "success": True,
        "data": {"a": 1},
        "error": None,
    }


@pytest.mark.parametrize(
    ("mode", "success", "status"),
    [("ok", True, "SUCCESS"), ("partial", True, "PARTIAL_SUCCESS_SOME"), ("fail", False, "ERROR_PROBE")],
)
def test_envelope_from_statuses(ctx: ToolContext, mode: str, success: bool, status: str) -> None:
    result = call_tool(ProbeTool(), {"text": "ab", "count": 2, "mode": mode}, ctx)
    env = result.envelope
    assert env.success is success
    assert env.data is not None
    assert env.data["status"] == status
    assert set(env.model_dump()) == {"success", "data", "error"}
    if success:
        assert env.error is None
    else:
        assert env.error == "ERROR_PROBE: asked to fail"
        assert env.data["errorDetails"] == "asked to fail"
    assert isinstance(result.output, LevelOutput)
    # The envelope's data is plain JSON.
    assert json.loads(json.dumps(env.data)) == env.data


def test_crash_becomes_error_result(ctx: ToolContext) -> None:
    result = call_tool(ProbeTool(), {"text": "x", "mode": "crash"}, ctx)
    assert not result.envelope.success
    assert result.envelope.error is not None
    assert "internal error in probeTool" in result.envelope.error
    assert "KeyError" in result.envelope.error
    assert log_lines(ctx.settings)[-1]["status"] == "ERROR_INTERNAL"


def test_transient_error_returns_its_result_or_raises(ctx: ToolContext) -> None:
    result = call_tool(ProbeTool(), {"text": "x", "mode": "transient"}, ctx)
    assert not result.envelope.success
    assert result.envelope.error == "ERROR_PROBE: timed out"
    with pytest.raises(TransientToolError) as info:
        call_tool(ProbeTool(), {"text": "x", "mode": "transient"}, ctx, raise_transient=True)
    assert info.value.retry_after == 1.5
    assert log_lines(ctx.settings)[-1]["status"] == "TRANSIENT_RETRY"


def test_async_tool_runs_on_one_persistent_loop(ctx: ToolContext) -> None:
    first = call_tool(AsyncTool(), {}, ctx)
    second = call_tool(AsyncTool(), {}, ctx)
    assert first.envelope.success and second.envelope.success
    assert first.envelope.data is not None and second.envelope.data is not None
    assert first.envelope.data["loop_id"] == second.envelope.data["loop_id"]
    assert first.envelope.data["thread"] == "udm-tool-loop"
    # No status field: success, and the log says so.
    assert log_lines(ctx.settings)[-1]["status"] == "SUCCESS"


@pytest.mark.parametrize(
    ("raw", "field", "words"),
    [
        ({"text": "x", "count": "many"}, "count", "integer"),
        ({"count": 2}, "text", "required"),
        ({"text": ""}, "text", "at least 1 character"),
        ({"text": "x", "count": 11}, "count", "less than or equal to 10"),
        ({"text": "x", "count": 0}, "count", "greater than or equal to 1"),
        ({"text": "x", "colour": "red"}, "colour", "Extra inputs are not permitted"),
        ({"text": "x", "level": "godlike"}, "level", "safe"),
    ],
)
def test_invalid_input_names_the_field(ctx: ToolContext, raw: dict[str, Any], field: str, words: str) -> None:
    tool = ProbeTool()
    result = call_tool(tool, raw, ctx)
    env = result.envelope
    assert not env.success
    assert env.data is None
    assert env.error is not None
    assert env.error.startswith("invalid input")
    assert f"field '{field}'" in env.error
    assert words in env.error
    assert tool.executed == 0
    assert result.decision == "invalid"
    assert log_lines(ctx.settings)[-1]["status"] == "INVALID_INPUT"


def test_non_object_input_and_model_input(ctx: ToolContext) -> None:
    bad = call_tool(ProbeTool(), [1, 2], ctx)  # type: ignore[arg-type]
    assert not bad.envelope.success
    assert bad.envelope.error == "invalid input: expected a JSON object"
    good = call_tool(ProbeTool(), LevelInput(text="hi"), ctx)
    assert good.envelope.success
    assert good.envelope.data is not None
    assert good.envelope.data["echoed"] == "hi"


def test_tool_by_name_and_unknown_name(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    import tasks.registry as registry

    monkeypatch.setattr(registry, "TOOL_PATHS", ["tests.fake:ProbeTool"])
    monkeypatch.setitem(registry._CACHE, "tests.fake:ProbeTool", ProbeTool())
    assert call_tool("probeTool", {"text": "x"}, ctx).envelope.success
    # The specifications spell some names with a capital first letter.
    assert call_tool("ProbeTool", {"text": "x"}, ctx).envelope.success
    result = call_tool("noSuchToolAnywhere", {}, ctx)
    assert not result.envelope.success
    assert result.envelope.error == "unknown tool 'noSuchToolAnywhere'"


def test_tool_call_log_one_line_per_call_without_contents(tmp_path: Path) -> None:
    approver = Recorder(False)
    ctx = make_ctx(tmp_path, ApprovalPolicy.SMART_AUTO, approver)
    tool = ProbeTool()
    call_tool(tool, {"text": SECRET, "count": 2}, ctx)
    call_tool(tool, {"text": SECRET, "level": "destructive"}, ctx)
    call_tool(tool, {"text": SECRET, "count": 99}, ctx)
    call_tool(tool, {"text": SECRET, "mode": "fail"}, ctx)
    raw_log = (ctx.settings.logs_path / "tool-calls.jsonl").read_text(encoding="utf-8")
    assert SECRET not in raw_log
    lines = log_lines(ctx.settings)
    assert len(lines) == 4
    for line in lines:
        assert {"time", "tool", "input_digest", "permission", "decision", "status", "duration_ms"} <= set(
            line
        )
        assert line["tool"] == "probeTool"
        assert line["input_digest"].startswith("sha256:")
        assert isinstance(line["duration_ms"], float | int)
        assert line["duration_ms"] >= 0
        assert datetime.fromisoformat(line["time"]).tzinfo is not None
    assert [(x["permission"], x["decision"], x["status"]) for x in lines] == [
        ("safe", "auto", "SUCCESS"),
        ("destructive", "denied", "DENIED"),
        (None, "invalid", "INVALID_INPUT"),
        ("safe", "auto", "ERROR_PROBE"),
    ]
    assert lines[0]["input_digest"] == input_digest({"count": 2, "text": SECRET})


def test_input_digest_is_stable_and_order_free() -> None:
    assert input_digest({"a": 1, "b": [1, 2]}) == input_digest({"b": [1, 2], "a": 1})
    assert input_digest({"a": 1}) != input_digest({"a": 2})
    assert SECRET not in input_digest({"x": SECRET})


def test_logging_can_be_turned_off(tmp_path: Path) -> None:
    ctx = ToolContext(settings=load_settings(cwd=tmp_path), approver=always_approve, log=False)
    assert call_tool(ProbeTool(), {"text": "x"}, ctx).envelope.success
    assert not (ctx.settings.logs_path / "tool-calls.jsonl").exists()


def test_unwritable_log_never_fails_the_call(tmp_path: Path) -> None:
    blocker = tmp_path / "logs-is-a-file"
    blocker.write_text("not a directory")
    ctx = ToolContext(settings=load_settings(cwd=tmp_path, logs_dir=blocker), approver=always_approve)
    assert call_tool(ProbeTool(), {"text": "x"}, ctx).envelope.success


class MixedStatus(str, Enum):  # noqa: UP042  (the older style is the point of this test)
    """A status enum in the older `str, Enum` style, whose str() is not its value."""

    SUCCESS = "SUCCESS"
    ERROR_GONE = "ERROR_GONE"


class MixedOutput(BaseModel):
    """Output with a `str, Enum` status."""

    status: MixedStatus = Field(description="Outcome.")
    errorDetails: str | None = Field(default=None, description="Why it failed.")


class MixedInput(ToolInput):
    """Pick the outcome."""

    gone: bool = Field(default=False, description="Fail with ERROR_GONE.")


class MixedTool(Tool[MixedInput, MixedOutput]):
    """Reports a `str, Enum` status."""

    name: ClassVar[str] = "mixedStatusTool"
    description: ClassVar[str] = "Returns a str-mixin enum status."
    Input: ClassVar[type[BaseModel]] = MixedInput
    Output: ClassVar[type[BaseModel]] = MixedOutput

    def execute(self, data: MixedInput, ctx: ToolContext) -> MixedOutput:
        """SUCCESS, or ERROR_GONE when asked."""
        if data.gone:
            return MixedOutput(status=MixedStatus.ERROR_GONE, errorDetails="it left")
        return MixedOutput(status=MixedStatus.SUCCESS)


def test_str_mixin_enum_status_counts_by_value(ctx: ToolContext) -> None:
    ok = call_tool(MixedTool(), {}, ctx)
    assert ok.envelope.success
    gone = call_tool(MixedTool(), {"gone": True}, ctx)
    assert gone.envelope.error == "ERROR_GONE: it left"
    assert [x["status"] for x in log_lines(ctx.settings)] == ["SUCCESS", "ERROR_GONE"]
