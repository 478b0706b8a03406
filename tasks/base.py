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
import contextlib
import contextvars
import inspect
import re
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tasks.calllog import call_record, input_digest, write_call_record
from tasks.failures import ErrorTable, Failure, TransientToolError, failure_for
from tasks.schemas import SCHEMA_FORMATS, export_schema
from udm.config import ApprovalPolicy, ConfigError, Settings, load_settings
from udm.errors import ToolError, ToolStatusError

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
    "needs_approval",
    "own_policy",
    "own_settings",
    "process_policy",
    "run_coroutine",
    "stricter",
]


class Permission(StrEnum):
    """How much harm a call can do; decides approval together with the policy."""

    SAFE = "safe"
    MODERATE = "moderate"
    DESTRUCTIVE = "destructive"
    CRITICAL = "critical"


# True means "ask": the permission matrix of the tool-interface specification.
APPROVAL_MATRIX: dict[ApprovalPolicy, dict[Permission, bool]] = {
    ApprovalPolicy.ASK_ALWAYS: dict.fromkeys(Permission, True),
    ApprovalPolicy.SMART_AUTO: {
        Permission.SAFE: False,
        Permission.MODERATE: True,
        Permission.DESTRUCTIVE: True,
        Permission.CRITICAL: True,
    },
    ApprovalPolicy.FULL_AUTO: {
        Permission.SAFE: False,
        Permission.MODERATE: False,
        Permission.DESTRUCTIVE: False,
        Permission.CRITICAL: True,
    },
}


# Strictest last: a run parameter may move the policy to the right of this list, never to the left.
POLICY_ORDER: tuple[ApprovalPolicy, ...] = (
    ApprovalPolicy.FULL_AUTO,
    ApprovalPolicy.SMART_AUTO,
    ApprovalPolicy.ASK_ALWAYS,
)

# The policy the process itself chose (the CLI after its own prompt or --yes, a caller holding the
# Settings): set by in-process code only, never by a flow parameter, so a triggered run cannot lower it.
_PROCESS_POLICY: contextvars.ContextVar[ApprovalPolicy | None] = contextvars.ContextVar(
    "udm_process_policy", default=None
)


def stricter(*policies: ApprovalPolicy | str | None) -> ApprovalPolicy:
    """The strictest of the given policies (None entries are ignored; none at all is smart_auto)."""
    given = [ApprovalPolicy(p) for p in policies if p is not None]
    return max(given, key=POLICY_ORDER.index) if given else ApprovalPolicy.SMART_AUTO


@contextlib.contextmanager
def process_policy(policy: ApprovalPolicy | str | None) -> Iterator[None]:
    """Within this block, flows run by this process use `policy` as the side that runs them."""
    token = _PROCESS_POLICY.set(ApprovalPolicy(policy) if policy is not None else None)
    try:
        yield
    finally:
        _PROCESS_POLICY.reset(token)


def own_settings() -> Settings:
    """This process's own settings: its environment and the udm.toml/pyproject.toml of its working
    directory, never a folder a run parameter named (ConfigError when they are invalid)."""
    try:
        # Settings() directly: load_settings would also make these the parsers' current settings.
        return Settings(project_root=Path.cwd())
    except (ValidationError, ValueError) as exc:
        raise ConfigError(f"this process's own settings are invalid: {exc}") from exc


def own_policy() -> ApprovalPolicy:
    """This process's own approval policy (ask_always when its settings cannot be read)."""
    try:
        return own_settings().approval_policy
    except ConfigError:
        return ApprovalPolicy.ASK_ALWAYS


def caller_holds_settings() -> bool:
    """Whether in-process code that holds the Settings started this run (process_policy is set)."""
    return _PROCESS_POLICY.get() is not None


def effective_policy(settings: Settings, requested: ApprovalPolicy | str | None = None) -> ApprovalPolicy:
    """The policy a flow run applies: the process's (else its settings'), made stricter by `requested`."""
    base = _PROCESS_POLICY.get()
    if base is None:
        # A triggered run's settings may come from a folder its parameters named (project_root), whose
        # udm.toml must not lower the policy of the process running it.
        base = stricter(settings.approval_policy, own_policy())
    return stricter(base, requested)


def needs_approval(policy: ApprovalPolicy | str, permission: Permission | str) -> bool:
    """Whether a call of this permission level must be approved under this policy."""
    return APPROVAL_MATRIX[ApprovalPolicy(policy)][Permission(permission)]


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


class ApprovalRequest(BaseModel):
    """What a person (or the Prefect UI) is asked to approve."""

    tool: str = Field(description="The tool's name.")
    permission: Permission = Field(description="The permission level of this call.")
    summary: str = Field(description="A one-paragraph description of what the call will do.")
    input_digest: str = Field(description="Digest of the call's input, as logged.")


class ApprovalUnavailableError(ToolError):
    """Approval was needed but nobody can be asked (no terminal, no UI)."""


class Approver(Protocol):
    """Decides an approval request: True approves, False denies, raising means nobody can answer."""

    def __call__(self, request: ApprovalRequest) -> bool: ...


def always_approve(request: ApprovalRequest) -> bool:
    """Approve everything (`--yes`, tests, or a reviewer who already approved the plan)."""
    return True


def deny_all(request: ApprovalRequest) -> bool:
    """Deny everything that needs approval."""
    return False


# What a terminal acts on rather than shows: C0/C1 controls but newline, tab and a CR ending a line
# (ESC sequences move the cursor and erase lines, a lone CR rewrites one), line separators and bidi
# overrides.
_TERMINAL_CONTROLS = re.compile(
    "\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


def _shown(text: str) -> str:
    """Text for the terminal prompt with its control characters as escapes (`\\x1b`), shown, not acted on."""
    return _TERMINAL_CONTROLS.sub(lambda m: ascii(m.group())[1:-1], text)


def cli_approver(yes: bool = False) -> Approver:
    """An approver for the terminal: `--yes` approves, a TTY prompts, no TTY is a clear error."""

    def approve(request: ApprovalRequest) -> bool:
        if yes:
            return True
        if not sys.stdin.isatty():
            raise ApprovalUnavailableError(
                f"{request.tool} ({request.permission.value}) needs approval and there is no terminal "
                "to ask: pass --yes, or set UDM_APPROVAL_POLICY"
            )
        # The prompt goes to stderr: stdout carries the JSON envelope that scripts parse.
        # The summary (and the diff the CLI adds) holds the caller's text: an escape sequence in a patch's
        # description or content could erase the real operations and draw others over them.
        print(f"\n{_shown(request.summary)}\n[{request.tool}: {request.permission.value}]", file=sys.stderr)
        print("Approve? [y/N] ", end="", file=sys.stderr, flush=True)
        answer = sys.stdin.readline().strip().lower()
        return answer in {"y", "yes"}

    return approve


class Review(BaseModel):
    """An approval the side running a call obtained before it (a person in the Prefect UI, after reading
    the plan's diff), for exactly one input: `call_tool` logs it and does not ask again.

    It lives on ToolContext, which only in-process code builds (a flow), never in a tool's input: an
    MCP or LLM caller cannot claim to be approved. Other fields (policy, comment, flow run) are kept
    as given; a tool may store the whole review with its change (udmUpdaterTool's patch record)."""

    model_config = ConfigDict(extra="allow")

    decision: Literal["approved", "auto"] = Field(
        description="approved: a person approved; auto: the policy needed nobody."
    )
    input_digest: str = Field(description="The digest (as logged) of the one input this review covers.")
    reviewer: str | None = Field(default=None, description="Who approved.")
    decided_at: str | None = Field(default=None, description="When (ISO 8601).")
    diff_digest: str | None = Field(default=None, description="Digest of the diff the reviewer read.")

    def log_entry(self) -> dict[str, Any]:
        """What the call log records of this review: the decision, who, when and what was read."""
        return self.model_dump(include={"decision", "reviewer", "decided_at", "diff_digest"})


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
