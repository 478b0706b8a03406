"""Approval pauses that a reviewer finds: the waiting run and every flow run above it show Paused.

Prefect's `pause_flow_run` pauses only the run that calls it, so an update step inside a pipeline or
research run would leave the parent Running for the whole wait. `wait_for_approval` pauses the
calling run and each ancestor (a subflow's parent is found through its parent task run), with the
same input form on each; the first answer given on any of them resumes the others. It keeps its own
deadline: when nobody answers in time it puts the runs back to Running itself, so the run ends in a
state of its own (Failed "Expired") rather than the one the server forces on an expired pause.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from uuid import UUID

from prefect import get_client
from prefect.client.schemas.responses import SetStateStatus
from prefect.context import FlowRunContext
from prefect.input import RunInput
from prefect.input.actions import read_flow_run_input
from prefect.input.run_input import keyset_from_paused_state
from prefect.states import Paused, Running, State
from pydantic import Field

from udm.errors import FlowError

__all__ = [
    "Approval",
    "ApprovalExpiredError",
    "PausedRun",
    "flow_run_url",
    "wait_for_approval",
]

# The server's own pause deadline lies this far beyond ours, so our deadline always comes first.
_SERVER_GRACE_S = 120
# The most flow runs paused for one approval (the run and its ancestors).
_MAX_CHAIN = 8

A = TypeVar("A", bound=RunInput)


class Approval(RunInput):
    """What the reviewer answers in the Prefect UI."""

    approve: bool = Field(default=False, description="Approve the patch (false rejects it).")
    reviewer: str = Field(default="", description="Who reviewed it.")
    comment: str = Field(default="", description="Why, in a line.")


class ApprovalExpiredError(FlowError):
    """Nobody answered before the deadline; the runs are Running again."""


@dataclass(frozen=True)
class PausedRun:
    """One flow run paused for the approval, with the keys its input form lives under."""

    flow_run_id: UUID
    keyset: dict[str, str]


def flow_run_url(flow_run_id: UUID | str | None) -> str | None:
    """The UI address of a flow run when a UI address is configured, else its API address, else None."""
    if flow_run_id is None:
        return None
    from prefect.settings import PREFECT_API_URL, PREFECT_UI_URL
    from prefect.utilities.urls import url_for

    url = url_for("flow-run", obj_id=str(flow_run_id))
    if url:
        return url
    api = PREFECT_API_URL.value() or PREFECT_UI_URL.value()
    return f"{api.rstrip('/')}/flow_runs/{flow_run_id}" if api else None


def _chain(client: Any, run_id: UUID) -> list[UUID]:
    """The flow run and its ancestors, innermost first."""
    chain = [run_id]
    run = client.read_flow_run(run_id)
    while run.parent_task_run_id is not None and len(chain) < _MAX_CHAIN:
        parent_task = client.read_task_run(run.parent_task_run_id)
        if parent_task.flow_run_id is None or parent_task.flow_run_id in chain:
            break
        chain.append(parent_task.flow_run_id)
        run = client.read_flow_run(parent_task.flow_run_id)
    return chain


def pause_runs(prompt: type[RunInput], run_id: UUID, timeout_s: int) -> list[PausedRun]:
    """Pause `run_id` and the flow runs above it, each with `prompt`'s form; the runs now paused."""
    paused: list[PausedRun] = []
    with get_client(sync_client=True) as client:
        for i, rid in enumerate(_chain(client, run_id)):
            state: State[Any] = Paused(
                timeout_seconds=timeout_s + _SERVER_GRACE_S, reschedule=False, pause_key=uuid.uuid4().hex
            )
            keyset: dict[str, str] = {str(k): v for k, v in keyset_from_paused_state(state).items()}
            state.state_details.run_input_keyset = keyset
            # The form first: a reviewer quick enough to resume before it is saved would be refused.
            prompt.save(keyset, flow_run_id=rid)  # type: ignore[arg-type]
            result = client.set_flow_run_state(rid, state)
            if result.status == SetStateStatus.ACCEPT:
                paused.append(PausedRun(rid, keyset))
            elif i == 0:
                raise RuntimeError(f"flow run {rid} cannot be paused: {result.details}")
    return paused


def _load(prompt: type[A], run: PausedRun) -> A | None:
    """The answer given on this run, or None (Prefect's own load would make up a default one)."""
    value = read_flow_run_input(run.keyset["response"], flow_run_id=run.flow_run_id)
    return prompt.model_validate(value) if value else None


def _resume_rest(client: Any, runs: list[PausedRun]) -> None:
    """Put every run still Paused back to Running (the answer came on another, or nobody answered)."""
    for run in runs:
        state = client.read_flow_run(run.flow_run_id).state
        if state is not None and state.is_paused():
            client.set_flow_run_state(run.flow_run_id, Running(), force=True)


def _answer(prompt: type[A], runs: list[PausedRun]) -> tuple[bool, A | None]:
    """(whether some run was resumed, the answer given with it or None)."""
    with get_client(sync_client=True) as client:
        for run in runs:
            state = client.read_flow_run(run.flow_run_id).state
            if state is None or state.is_paused():
                continue
            if state.is_final() or state.is_cancelling():
                raise RuntimeError(
                    f"flow run {run.flow_run_id} ended {state.name} while waiting for approval"
                )
            found = _load(prompt, run)
            _resume_rest(client, runs)
            return True, found
    return False, None


def wait_for_approval(
    prompt: type[A],
    *,
    timeout_s: int,
    poll_interval_s: int,
    on_paused: Callable[[list[PausedRun]], None] | None = None,
) -> A | None:
    """Pause this run and its ancestors until a reviewer answers on one of them; the answer (None when
    resumed without one). ApprovalExpiredError after `timeout_s`, with the runs Running again."""
    context = FlowRunContext.get()
    if context is None or context.flow_run is None:
        raise RuntimeError("approval needs a flow run to pause")
    runs = pause_runs(prompt, context.flow_run.id, timeout_s)
    if on_paused is not None:
        on_paused(runs)
    deadline = time.monotonic() + timeout_s
    while True:
        time.sleep(max(0.0, min(poll_interval_s, deadline - time.monotonic())))
        resumed, found = _answer(prompt, runs)
        if resumed:
            return found
        if time.monotonic() >= deadline:
            break
    with get_client(sync_client=True) as client:
        _resume_rest(client, runs)
    # An answer that came in while the runs were being put back still counts.
    for run in runs:
        found = _load(prompt, run)
        if found is not None:
            return found
    raise ApprovalExpiredError(f"nobody decided within {timeout_s} s")
