"""Approval: permission levels, the policy matrix, whose policy a run applies, and the approvers.

A call needs approval when the policy's row says so for its permission level (APPROVAL_MATRIX); who
answers is the context's approver (a terminal prompt, the Prefect UI through a flow, a test). A Review
is an approval the side running the call obtained first, carried in-process only.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from udm.config import ApprovalPolicy, ConfigError, Settings
from udm.errors import ToolError
from udm.shown import shown

__all__ = [
    "APPROVAL_MATRIX",
    "POLICY_ORDER",
    "ApprovalRequest",
    "ApprovalUnavailableError",
    "Approver",
    "Permission",
    "Review",
    "always_approve",
    "caller_holds_settings",
    "cli_approver",
    "deny_all",
    "effective_policy",
    "needs_approval",
    "own_policy",
    "own_settings",
    "plans_only",
    "process_policy",
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
        print(f"\n{shown(request.summary)}\n[{request.tool}: {request.permission.value}]", file=sys.stderr)
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


def plans_only(request: ApprovalRequest) -> bool:
    """The approver of a plan that the next question shows: a safe call (a dry run, which changes
    nothing) goes ahead under ask_always too; anything else is denied (it waits for its own question)."""
    return request.permission == Permission.SAFE
