"""The one module that turns a tool into a Prefect task (the only place in tasks/ importing Prefect).

Transient failures raise inside the task so Prefect's retries apply (with exponential backoff and
jitter, plus the server's Retry-After when it sent one, capped); on the last try the task returns
the tool's error result instead of failing, so the flow sees a status, not an exception.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from prefect import Task, task
from prefect.cache_policies import NO_CACHE, CachePolicy
from prefect.runtime import task_run as runtime_task_run
from prefect.tasks import exponential_backoff

from tasks.base import Tool, ToolContext, TransientToolError, call_tool
from tasks.registry import get_tool

__all__ = ["MAX_RETRY_AFTER_S", "tool_task"]

# A server asking for a longer pause than this gets this; the run must not stall for minutes.
MAX_RETRY_AFTER_S = 30.0


def tool_task(
    tool: Tool[Any, Any] | str,
    *,
    retries: int = 0,
    backoff_s: float = 0.5,
    jitter: float = 0.5,
    cache_policy: CachePolicy | None = None,
    task_name: str | None = None,
    retry_delay: float | list[float] | None = None,
    **task_options: Any,
) -> Task[..., dict[str, Any]]:
    """A Prefect task `(raw_input, ctx, run_label="") -> envelope dict` calling `tool` through `call_tool`.

    `retry_delay` (seconds, one or one per retry) replaces the exponential backoff; `run_label` lets
    callers name each run (`task_run_name="{run_label}"`), as pipelines name runs after their steps.
    """
    resolved = get_tool(tool) if isinstance(tool, str) else tool
    if resolved is None:
        raise ValueError(f"unknown tool '{tool}'")
    the_tool: Tool[Any, Any] = resolved

    def _run(raw_input: dict[str, Any], ctx: ToolContext, run_label: str = "") -> dict[str, Any]:
        attempt = int(runtime_task_run.run_count or 1)
        last_try = attempt > retries
        try:
            result = call_tool(the_tool, raw_input, ctx, raise_transient=not last_try)
        except TransientToolError as exc:
            if exc.retry_after:
                # Prefect's own delay still follows; this adds what the server asked for.
                time.sleep(min(exc.retry_after, MAX_RETRY_AFTER_S))
            raise
        return result.envelope.model_dump(mode="json")

    _run.__name__ = the_tool.name
    _run.__doc__ = f"Call {the_tool.name} as a Prefect task."
    delays: list[float] | Callable[[int], list[float]] | float = (
        exponential_backoff(backoff_factor=backoff_s)(retries) if retries else 0
    )
    if retries and retry_delay is not None:
        delays = retry_delay
    decorate = task(
        name=task_name or the_tool.name,
        retries=retries,
        retry_delay_seconds=delays,
        retry_jitter_factor=jitter if retries else None,
        cache_policy=cache_policy if cache_policy is not None else NO_CACHE,
        **task_options,
    )
    return decorate(_run)
