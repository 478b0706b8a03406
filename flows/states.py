"""Reading a flow's result back from the final state it returned (Completed or Failed, both with data)."""

from __future__ import annotations

from typing import Any

from prefect.states import State

__all__ = ["state_result"]


def state_result(state: State[Any]) -> Any:
    """The data a flow's final state carries (Completed or Failed); a crash's exception is raised."""
    value = state.result(raise_on_failure=False)
    if isinstance(value, BaseException):
        raise value
    return value
