"""The one module that turns a tool into a Prefect task (the only place in tasks/ importing Prefect).

Transient failures raise inside the task so Prefect's retries apply (with exponential backoff and
jitter, plus the server's Retry-After when it sent one, capped); on the last try the task returns
the tool's error result instead of failing, so the flow sees a status, not an exception — or, with
`fail_on_final=True`, fails with `ToolFailedError` carrying that result. Cached tasks want the latter:
Prefect stores whatever a task returns under its cache key (a returned Failed state included), so a
returned transient failure would be served from the cache until it expires. `envelope_of` reads the
envelope back from a future either way. `fail_on_error=True` fails the task run on any failed call
(approval denied included), so a pipeline step's task run never reads Completed when its call failed.

Attempts: `prefect.runtime.task_run.run_count` is 1 on the first try and `retries + 1` on the last
(measured on Prefect 3.8); outside a task run (`task.fn(...)`) every call is treated as the last try.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prefect import Task, task
from prefect.cache_policies import INPUTS, NO_CACHE, TASK_SOURCE, CacheKeyFnPolicy, CachePolicy
from prefect.context import TaskRunContext
from prefect.runtime import task_run as runtime_task_run
from prefect.tasks import exponential_backoff

from tasks.base import Envelope, Tool, ToolContext, TransientToolError, call_tool
from tasks.registry import get_tool
from udm.errors import ToolError

__all__ = [
    "MAX_RETRY_AFTER_S",
    "MAX_TOTAL_WAIT_S",
    "ToolFailedError",
    "envelope_of",
    "local_file_stamps",
    "tool_cache_policy",
    "tool_task",
]

# A server asking for a longer pause than this gets this; the run must not stall for minutes.
MAX_RETRY_AFTER_S = 30.0
# All waits of one task run together (Prefect's delays plus Retry-After) stay under this.
MAX_TOTAL_WAIT_S = 120.0

# Seconds already waited per task run (its retries run in this process, one after another).
_WAITED: dict[str, float] = {}
_WAITED_LOCK = threading.Lock()


class ToolFailedError(ToolError):
    """A tool's transient failure outlived its retries; `envelope` is the error result."""

    def __init__(self, message: str, envelope: dict[str, Any]) -> None:
        super().__init__(message)
        self.envelope = envelope

    def __reduce__(self) -> tuple[type[ToolFailedError], tuple[str, dict[str, Any]]]:
        """Pickle by the constructor's arguments: a task run on a Dask worker sends it back."""
        return (type(self), (str(self), self.envelope))


def envelope_of(future: Any) -> dict[str, Any]:
    """The envelope dict a tool task produced, whether it returned it or failed with ToolFailedError."""
    value = future.result(raise_on_failure=False)
    if isinstance(value, ToolFailedError):
        return value.envelope
    if isinstance(value, BaseException):
        return {"success": False, "data": None, "error": f"{type(value).__name__}: {value}"}
    return dict(value)


def tool_cache_policy(tool: Tool[Any, Any] | str) -> CachePolicy:
    """INPUTS (minus the context and run label) + TASK_SOURCE + the tool's name and code.

    Every tool task shares one body (`_run`), so TASK_SOURCE alone would not see a tool's code change:
    the key also holds a hash of the tool's module source, computed once here.
    """
    if isinstance(tool, str):
        tag = tool
    else:
        module = sys.modules.get(type(tool).__module__)
        try:
            source = inspect.getsource(module) if module else ""
        except (OSError, TypeError):
            source = ""
        tag = f"{tool.name}:{hashlib.sha256(source.encode()).hexdigest()[:16]}"
    return (
        (INPUTS - "ctx" - "run_label")
        + TASK_SOURCE
        + CacheKeyFnPolicy(cache_key_fn=lambda _ctx, _params: tag)
        + CacheKeyFnPolicy(cache_key_fn=lambda _ctx, params: local_file_stamps(params))
    )


def local_file_stamps(params: dict[str, Any]) -> str:
    """Size and mtime of each local file a call reads (`filePath` in its input or a list of inputs).

    Part of the cache key: the same path read again after the file changed is a miss, where the
    inputs alone (the path) would serve the old text until the entry expired. "" when no file is read.
    """
    from udm.errors import UdmError
    from udm.guard import resolve_inside

    settings = getattr(params.get("ctx"), "settings", None)
    stamps: list[str] = []
    for value in params.values():
        for item in value if isinstance(value, list) else [value]:
            name = item.get("filePath") if isinstance(item, dict) else None
            if not isinstance(name, str) or not name:
                continue
            try:
                # The file the tool's sandbox would read (symlinks followed), not a path joined here.
                path = (
                    resolve_inside(name, settings.allowed_roots(), settings.project_root)
                    if settings is not None
                    else Path(name)
                )
                st = os.stat(path)
                stamps.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
            except (OSError, UdmError):
                stamps.append(f"{name}:absent")
    return "|".join(stamps)


def _retry_unless_final(task: Any, task_run: Any, state: Any) -> bool:
    """Prefect's retry condition: retry anything but a ToolFailedError (a call that failed for good)."""
    return not isinstance(state.result(raise_on_failure=False), ToolFailedError)


def _wait_for_retry(
    run_id: str,
    attempt: int,
    retry_after: float | None,
    planned: list[float],
    max_retry_after_s: float,
    max_total_wait_s: float,
) -> None:
    """Wait what a Retry-After asks beyond Prefect's own next delay, within the run's total wait budget.

    Module-level (not a closure of the task function) so that a task pickles for a Dask worker without
    the process's lock and wait table."""
    prefect_delay = planned[min(attempt - 1, len(planned) - 1)] if planned else 0.0
    with _WAITED_LOCK:
        waited = _WAITED.get(run_id, 0.0)
    extra = 0.0
    if retry_after:
        # Prefect waits `prefect_delay` next; add only what the server asked for beyond it.
        extra = max(0.0, min(retry_after, max_retry_after_s) - prefect_delay)
    extra = max(0.0, min(extra, max_total_wait_s - waited - prefect_delay))
    with _WAITED_LOCK:
        _WAITED[run_id] = waited + prefect_delay + extra
        if len(_WAITED) > 10_000:  # finished runs are never removed one by one; bound the map
            _WAITED.clear()
    if extra:
        time.sleep(extra)


def _planned_delays(retries: int, retry_delay: float | list[float] | None, backoff_s: float) -> list[float]:
    """Prefect's delay before each retry: the given ones, else exponential backoff; none without retries."""
    if retries and retry_delay is not None:
        return list(retry_delay) if isinstance(retry_delay, list) else [float(retry_delay)] * retries
    if retries:
        return list(exponential_backoff(backoff_factor=backoff_s)(retries))
    return []


def _failed_for_good(tool: Tool[Any, Any], exc: TransientToolError) -> ToolFailedError:
    """The ToolFailedError a last try raises, carrying the envelope the call would have returned."""
    ok, error = tool.outcome(exc.result)
    envelope = Envelope(
        success=ok, data=exc.result.model_dump(mode="json", by_alias=True), error=error or str(exc)
    ).model_dump(mode="json")
    return ToolFailedError(error or str(exc), envelope)


def tool_task(
    tool: Tool[Any, Any] | str,
    *,
    retries: int = 0,
    backoff_s: float = 0.5,
    jitter: float = 0.5,
    cache_policy: CachePolicy | None = None,
    task_name: str | None = None,
    retry_delay: float | list[float] | None = None,
    max_retry_after_s: float = MAX_RETRY_AFTER_S,
    max_total_wait_s: float = MAX_TOTAL_WAIT_S,
    fail_on_final: bool = False,
    fail_on_error: bool = False,
    **task_options: Any,
) -> Task[..., dict[str, Any]]:
    """A Prefect task `(raw_input, ctx, run_label="") -> envelope dict` calling `tool` through `call_tool`.

    `retry_delay` (seconds, one or one per retry) replaces the exponential backoff; `run_label` lets
    callers name each run (`task_run_name="{run_label}"`), as pipelines name runs after their steps.
    A Retry-After from the server is honoured (capped at `max_retry_after_s`) by waiting whatever it
    asks beyond Prefect's own delay; all waits of one run stay under `max_total_wait_s`.
    """
    resolved = get_tool(tool) if isinstance(tool, str) else tool
    if resolved is None:
        raise ValueError(f"unknown tool '{tool}'")
    the_tool: Tool[Any, Any] = resolved

    planned = _planned_delays(retries, retry_delay, backoff_s)

    def _run(raw_input: dict[str, Any], ctx: ToolContext, run_label: str = "") -> dict[str, Any]:
        in_task = TaskRunContext.get() is not None
        attempt = int(runtime_task_run.run_count or 1) if in_task else retries + 1
        last_try = attempt > retries
        try:
            result = call_tool(the_tool, raw_input, ctx, raise_transient=not last_try or fail_on_final)
        except TransientToolError as exc:
            if last_try:
                # fail_on_final: fail (never cached) with the error result the flow would have got.
                raise _failed_for_good(the_tool, exc) from exc
            _wait_for_retry(
                str(runtime_task_run.id),
                attempt,
                exc.retry_after,
                planned,
                max_retry_after_s,
                max_total_wait_s,
            )
            raise
        envelope = result.envelope.model_dump(mode="json")
        if fail_on_error and not result.envelope.success:
            # The task run ends Failed (and is never cached) with the envelope the flow reads back.
            raise ToolFailedError(result.envelope.error or "the tool call failed", envelope)
        return envelope

    _run.__name__ = the_tool.name
    _run.__doc__ = f"Call {the_tool.name} as a Prefect task."
    if fail_on_error:
        # Only transient failures are retried; a failed call (ToolFailedError) is final.
        task_options.setdefault("retry_condition_fn", _retry_unless_final)
    return _as_task(_run, task_name or the_tool.name, retries, planned, jitter, cache_policy, task_options)


def _as_task(
    run: Callable[..., dict[str, Any]],
    name: str,
    retries: int,
    planned: list[float],
    jitter: float,
    cache_policy: CachePolicy | None,
    task_options: dict[str, Any],
) -> Task[..., dict[str, Any]]:
    """`run` as a Prefect task with these retries and delays (jitter only when it retries), uncached
    unless a cache policy is given."""
    delays: list[float] | Callable[[int], list[float]] | float = planned if retries else 0
    decorate = task(
        name=name,
        retries=retries,
        retry_delay_seconds=delays,
        retry_jitter_factor=jitter if retries else None,
        cache_policy=cache_policy if cache_policy is not None else NO_CACHE,
        **task_options,
    )
    return decorate(run)
