"""The tool contract: a tool is data (name, description, Input/Output models, permission) plus execute().

Everything that calls a tool — the CLI, the MCP server, LLM tool-use, Prefect tasks — goes through
`call_tool`, the one place where input is validated, approval is decided, the call is logged and
the result is wrapped in the standard `{success, data, error}` envelope. Tool bodies therefore never
check permissions or catch validation errors themselves.

Expected failures are statuses in the Output model (`ERROR_PATH_NOT_FOUND` ...) with `errorDetails`.
A tool raises them (an engine error from udm/errors.py, a `ToolStatusError`) and `call_tool` maps
them through the tool's `errors` table (tasks/failures.py), the one place errors become statuses.
Transient failures (timeouts, 5xx, 429, refused connections) raise `TransientToolError` carrying the
error Output to return once no retry is left; inside Prefect that raise is what triggers retries.
No module here imports Prefect.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tasks.approval import (
    APPROVAL_MATRIX,
    POLICY_ORDER,
    ApprovalRequest,
    ApprovalUnavailableError,
    Approver,
    Permission,
    Review,
    always_approve,
    caller_holds_settings,
    cli_approver,
    deny_all,
    effective_policy,
    needs_approval,
    own_policy,
    own_settings,
    plans_only,
    process_policy,
    stricter,
)
from tasks.calllog import call_record, input_digest, write_call_record
from tasks.failures import ErrorTable, Failure, TransientToolError, failure_for
from tasks.schemas import SCHEMA_FORMATS, export_schema
from udm.config import Settings, load_settings
from udm.errors import ToolStatusError

__all__ = [
    "APPROVAL_MATRIX",
    "POLICY_ORDER",
    "SCHEMA_FORMATS",
    "ApprovalRequest",
    "ApprovalUnavailableError",
    "Approver",
    "Envelope",
    "ErrorTable",
    "Failure",
    "Permission",
    "Review",
    "Tool",
    "ToolCallResult",
    "ToolContext",
    "ToolInput",
    "ToolStatusError",
    "TransientToolError",
    "always_approve",
    "approval_request",
    "call_tool",
    "caller_holds_settings",
    "cli_approver",
    "deny_all",
    "effective_policy",
    "export_schema",
    "input_digest",
    "log_call",
    "needs_approval",
    "own_policy",
    "own_settings",
    "plans_only",
    "process_policy",
    "run_coroutine",
    "stricter",
]


class ToolInput(BaseModel):
    """Base of every tool's Input: unknown fields are rejected so a typo is named, not ignored."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Envelope(BaseModel):
    """The standard result of every tool call."""

    success: bool = Field(description="True when the tool did what was asked.")
    data: dict[str, Any] | None = Field(
        default=None, description="The tool's output; null when the input was rejected."
    )
    error: str | None = Field(default=None, description="What went wrong; null on success.")

    @model_validator(mode="after")
    def _error_iff_failure(self) -> Envelope:
        if self.success and self.error is not None:
            raise ValueError("a successful envelope carries no error")
        if not self.success and not self.error:
            raise ValueError("a failed envelope must say what went wrong")
        return self


@dataclass
class ToolContext:
    """What a tool may use besides its input: settings, the approver and per-session resources."""

    settings: Settings = field(default_factory=load_settings)
    approver: Approver = field(default=deny_all)
    log: bool = True
    # An approval already obtained for this call's input by the code running it (see Review).
    review: Review | None = None
    # Per-session resources a tool keeps between calls (a browser session, an HTTP client ...).
    resources: dict[str, Any] = field(default_factory=dict)


InT = TypeVar("InT", bound=BaseModel)
OutT = TypeVar("OutT", bound=BaseModel)


class Tool(ABC, Generic[InT, OutT]):
    """A tool: class attributes describe it, `execute` does the work (sync or async)."""

    name: ClassVar[str]
    description: ClassVar[str]
    Input: ClassVar[type[BaseModel]]
    Output: ClassVar[type[BaseModel]]
    permission: ClassVar[Permission] = Permission.SAFE
    # Statuses (besides SUCCESS) that still count as success in the envelope.
    ok_statuses: ClassVar[frozenset[str]] = frozenset({"SUCCESS"})
    # The errors this tool expects and the status each becomes; call_tool applies it (tasks/failures.py).
    errors: ClassVar[ErrorTable] = {}

    def permission_for(self, data: InT) -> Permission:
        """The permission of this particular call; override when it depends on the input."""
        return self.permission

    def summarize(self, data: InT) -> str:
        """A human-readable line for approval prompts; override for a better one."""
        text = data.model_dump_json(exclude_none=True)
        return f"{self.name} {text[:500]}"

    @abstractmethod
    def execute(self, data: InT, ctx: ToolContext) -> OutT | Coroutine[Any, Any, OutT]:
        """Do the work; an expected failure is a status in the Output, or an error in `errors` raised."""

    def error_details(self, exc: BaseException) -> str:
        """The errorDetails of an expected error; override to reword the engine's message."""
        return str(exc)

    def failed(self, data: InT, ctx: ToolContext, status: str, details: str, **fields: Any) -> OutT:
        """The Output of a call that failed with `status`; override to echo input fields in it."""
        return self.Output(status=status, errorDetails=details, **fields)  # type: ignore[return-value]

    def outcome(self, out: OutT) -> tuple[bool, str | None]:
        """Success and error text of an Output, read from its `status`/`errorDetails` when present."""
        status = getattr(out, "status", None)
        if status is None:
            return True, None
        # Any Enum (StrEnum or a `str, Enum` mix-in, whose str() is 'Cls.MEMBER') reports its value.
        value = str(status.value if isinstance(status, Enum) else status)
        if value in self.ok_statuses or value.startswith("PARTIAL_SUCCESS"):
            return True, None
        details = getattr(out, "errorDetails", None)
        return False, f"{value}: {details}" if details else value


class ToolCallResult(BaseModel):
    """One call's envelope plus the typed output, for callers inside the process."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    envelope: Envelope
    output: BaseModel | None = None
    decision: str = "auto"
    duration_ms: float = 0.0


def _describe_validation(error: ValidationError) -> str:
    parts = []
    for err in error.errors():
        loc = ".".join(str(x) for x in err.get("loc", ())) or "(input)"
        parts.append(f"field '{loc}': {err.get('msg', 'invalid')}")
    return "invalid input: " + "; ".join(parts)


class _LoopThread:
    """One event loop per process on its own thread, so async tools keep state across calls."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="udm-tool-loop", daemon=True)
                thread.start()
                self._loop = loop
            return self._loop


_LOOP = _LoopThread()


def run_coroutine(coro: Coroutine[Any, Any, Any], timeout: float | None = None) -> Any:
    """Run a coroutine on the process's tool loop and wait for its result (from any other thread)."""
    loop = _LOOP.loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        coro.close()
        raise RuntimeError("run_coroutine called from the tool loop itself; await the coroutine instead")
    return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)


def _log_call(ctx: ToolContext, record: dict[str, Any]) -> None:
    if ctx.log:
        write_call_record(ctx.settings.logs_path, record)


def log_call(
    tool: Tool[Any, Any],
    raw: dict[str, Any],
    ctx: ToolContext,
    *,
    decision: str,
    status: str,
    duration_ms: float,
    **extra: Any,
) -> None:
    """Log, in call_tool's line format, an engine call made for `tool` without call_tool.

    The update flow's rollback hook reverts a commit this way (inside Prefect's rollback it may neither
    ask nor raise): its line names the input the tool would have taken (digest and field names), the
    tool's permission for it, the `decision` that made the call, and its `status` as the tool reports it.
    """
    record = call_record(tool.name, raw)
    record.update(extra)
    try:
        permission: str | None = tool.permission_for(tool.Input.model_validate(raw)).value
    except ValidationError:
        permission = None  # the line is still written: losing it would hide the call
    record.update(permission=permission, decision=decision, status=status, duration_ms=duration_ms)
    _log_call(ctx, record)


def call_tool(
    tool: Tool[Any, Any] | str,
    raw_input: dict[str, Any] | BaseModel,
    ctx: ToolContext | None = None,
    *,
    raise_transient: bool = False,
) -> ToolCallResult:
    """Validate, approve, execute, log and wrap one tool call. Never raises for bad input."""
    from tasks.registry import get_tool

    ctx = ctx or ToolContext()
    started = time.perf_counter()
    if isinstance(tool, str):
        found = get_tool(tool)
        if found is None:
            return ToolCallResult(envelope=Envelope(success=False, error=f"unknown tool '{tool}'"))
        tool = found
    raw = raw_input.model_dump(exclude_unset=True) if isinstance(raw_input, BaseModel) else raw_input
    record = call_record(tool.name, raw)
    if ctx.review is not None:
        record["review"] = ctx.review.log_entry()

    def finish(result: ToolCallResult, status: str, permission: str | None) -> ToolCallResult:
        result.duration_ms = round((time.perf_counter() - started) * 1000, 3)
        record.update(
            permission=permission, decision=result.decision, status=status, duration_ms=result.duration_ms
        )
        _log_call(ctx, record)
        return result

    if not isinstance(raw, dict):
        env = Envelope(success=False, error="invalid input: expected a JSON object")
        return finish(ToolCallResult(envelope=env, decision="invalid"), "INVALID_INPUT", None)
    try:
        data = tool.Input.model_validate(raw)
    except ValidationError as exc:
        env = Envelope(success=False, error=_describe_validation(exc))
        return finish(ToolCallResult(envelope=env, decision="invalid"), "INVALID_INPUT", None)

    permission = tool.permission_for(data)
    decision, refusal = _decide_approval(tool, data, permission, ctx, record["input_digest"])
    if refusal is not None:
        env = Envelope(success=False, error=refusal)
        return finish(ToolCallResult(envelope=env, decision=decision), "DENIED", permission.value)

    try:
        out = _execute(tool, data, ctx)
    except TransientToolError as exc:
        if raise_transient:
            record.update(permission=permission.value, decision=decision, status="TRANSIENT_RETRY")
            record["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
            _log_call(ctx, record)
            raise
        out = exc.result
    except Exception as exc:  # the boundary: a bug in a tool becomes an error result, not a traceback
        env = Envelope(success=False, error=f"internal error in {tool.name}: {type(exc).__name__}: {exc}")
        return finish(ToolCallResult(envelope=env, decision=decision), "ERROR_INTERNAL", permission.value)

    env, status_text = _wrap(tool, out)
    return finish(ToolCallResult(envelope=env, output=out, decision=decision), status_text, permission.value)


def approval_request(
    tool: Tool[Any, Any], data: BaseModel, permission: Permission, digest: str
) -> ApprovalRequest:
    """The tool's own approval request for a call: its name, the call's permission, its summary and the
    input's digest (as `input_digest` logs it). call_tool asks with it; so does a flow that asks first."""
    return ApprovalRequest(
        tool=tool.name, permission=permission, summary=tool.summarize(data), input_digest=digest
    )


def _decide_approval(
    tool: Tool[Any, Any], data: BaseModel, permission: Permission, ctx: ToolContext, digest: str
) -> tuple[str, str | None]:
    """The call's approval decision (auto, approved, unavailable, denied) and, when refused, why."""
    if not needs_approval(ctx.settings.approval_policy, permission):
        return "auto", None
    if ctx.review is not None and ctx.review.decision == "approved":
        if ctx.review.input_digest == digest:
            return "approved", None
        return "denied", (
            f"approval denied: the review approved input {ctx.review.input_digest}, not this call's {digest}"
        )
    request = approval_request(tool, data, permission, digest)
    try:
        approved = ctx.approver(request)
    except ApprovalUnavailableError as exc:
        return "unavailable", f"approval required: {exc}"
    if not approved:
        return "denied", (
            f"approval denied: {tool.name} is {permission.value} and the "
            f"{ctx.settings.approval_policy.value} policy requires approval"
        )
    return "approved", None


def _wrap(tool: Tool[Any, Any], out: BaseModel) -> tuple[Envelope, str]:
    """The envelope of a tool's Output and the status text the call log records."""
    ok, error = tool.outcome(out)
    env = Envelope(success=ok, data=out.model_dump(mode="json", by_alias=True), error=error)
    status = getattr(out, "status", None)
    status_text = (
        str(status.value if isinstance(status, Enum) else status)
        if status
        else ("SUCCESS" if ok else "ERROR")
    )
    return env, status_text


def _execute(tool: Tool[Any, Any], data: BaseModel, ctx: ToolContext) -> BaseModel:
    """Run the tool; an error its `errors` table expects becomes its Output (or a TransientToolError)."""
    try:
        out = tool.execute(data, ctx)
        if inspect.isawaitable(out):
            out = run_coroutine(out)  # type: ignore[arg-type]
    except TransientToolError:
        raise
    except Exception as exc:
        mapped = failure_for(tool, exc, data, ctx)
        if mapped is None:
            raise
        return mapped
    return out


ToolFactory = Callable[[], Tool[Any, Any]]
