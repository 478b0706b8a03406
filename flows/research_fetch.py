"""The research flow's fetch fan-out: one task run per batch of `research_batch_size` sources, each
fetching its sources in `research_batch_threads` threads (transient failures retried with exponential
backoff and jitter, Retry-After honoured), cached with INPUTS + TASK_SOURCE (+ the tool's name) for
`max_cache_age_s` in `<state>/prefect-results`; the fan-out as a whole is one more cached task run
("fetch N sources"), so the same request again costs one cache hit. A batch with a source that failed
after its retries is not cached; a cached batch holding a document older than `max_cache_age_s` is
fetched again.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from prefect import task
from prefect.context import FlowRunContext
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.transactions import CommitMode, transaction

from flows.research_report import Source
from tasks.base import Envelope, ToolContext, TransientToolError, call_tool
from tasks.documents import DocumentFetchingParsingTool, FetchOutput
from tasks.prefect_task import tool_cache_policy
from udm.config import Settings

if TYPE_CHECKING:
    from flows.research import ResearchRequest

__all__ = ["fetch_all"]

Envelopes = list[dict[str, Any]]


class _BatchIncomplete(Exception):
    """A source of the batch failed after its retries: the batch's envelopes, kept out of the cache."""

    def __init__(self, envelopes: list[dict[str, Any]], failed: int) -> None:
        super().__init__(
            f"{failed} of {len(envelopes)} sources failed after their retries; the batch is not cached, "
            "so the next run fetches it again (the other batches stay cached)"
        )
        self.envelopes = envelopes
        self.failed = failed

    def __reduce__(self) -> tuple[type[_BatchIncomplete], tuple[list[dict[str, Any]], int]]:
        """Pickle by the constructor's arguments: a batch run on a Dask worker sends it back."""
        return (type(self), (self.envelopes, self.failed))


def _fresh(envelopes: list[dict[str, Any]], max_age_s: int) -> bool:
    """Whether every fetched document in a cached batch is still younger than `max_age_s`."""
    now = datetime.now(UTC)
    for env in envelopes:
        stamp = ((env.get("data") or {}).get("metadata") or {}).get("fetched_at")
        if not stamp:
            continue
        try:
            when = datetime.fromisoformat(str(stamp))
        except ValueError:
            return False
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        if (now - when).total_seconds() > max_age_s:
            return False
    return True


def _fetch_one(
    tool: DocumentFetchingParsingTool, raw: dict[str, Any], ctx: ToolContext, retries: int, max_wait_s: float
) -> tuple[dict[str, Any], bool]:
    """One source's envelope, transient failures retried with exponential backoff and jitter (a
    Retry-After honoured, capped at `max_wait_s`); True when it still failed transiently."""
    for attempt in range(retries + 1):
        try:
            return call_tool(tool, raw, ctx, raise_transient=True).envelope.model_dump(mode="json"), False
        except TransientToolError as exc:
            if attempt == retries:
                ok, error = tool.outcome(cast(FetchOutput, exc.result))
                data = exc.result.model_dump(mode="json", by_alias=True)
                return Envelope(success=ok, data=data, error=error or str(exc)).model_dump(mode="json"), True
            backoff = 0.5 * 2**attempt * (1 + 0.5 * random.random())
            time.sleep(min(max_wait_s, max(backoff, exc.retry_after or 0.0)))
    raise AssertionError("unreachable: the last attempt returns")


def _batches(items: list[Any], size: int) -> list[list[Any]]:
    """`items` in consecutive batches of at most `size`, as even as possible."""
    count = max(1, -(-len(items) // size))
    step = -(-len(items) // count)
    return [items[i : i + step] for i in range(0, len(items), step)]


def _envelopes_of(value: Any) -> tuple[Envelopes, int]:
    """A batch's envelopes and how many of its sources failed after their retries."""
    if isinstance(value, _BatchIncomplete):
        return value.envelopes, value.failed
    if isinstance(value, BaseException):
        raise value
    return list(value), 0


def _refetch_if_stale(
    fetch: Any,
    state_name: str | None,
    value: Any,
    raws: Envelopes,
    ctx: ToolContext,
    label: str,
    max_age_s: int,
) -> Any:
    """`value`, or when it was a cache hit holding a document older than `max_age_s`, the value of the
    same call run again with a refreshed cache."""
    if state_name == "Cached" and isinstance(value, list) and not _fresh(value, max_age_s):
        state = fetch.with_options(refresh_cache=True)(raws, ctx, run_label=label, return_state=True)
        return state.result(raise_on_failure=False)
    return value


def _cache_options(
    settings: Settings, request: ResearchRequest, tool: DocumentFetchingParsingTool
) -> dict[str, Any]:
    """The fetch tasks' cache options for this request (none when it allows no cached fetch)."""
    if request.max_cache_age_s <= 0:
        return {}
    return {
        "cache_policy": tool_cache_policy(tool),
        "cache_expiration": timedelta(seconds=request.max_cache_age_s),
        "persist_result": True,
        "result_storage": settings.state_path / "prefect-results",
        "result_serializer": "json",
    }


def _batch_fetcher(settings: Settings, tool: DocumentFetchingParsingTool) -> Callable[..., Envelopes]:
    """The body of the "fetch batch" task: a batch's envelopes (_BatchIncomplete when a source failed)."""
    retries, max_wait = settings.fetch_retries, settings.retry_max_wait_s
    inner = max(1, min(settings.research_batch_threads, settings.research_max_workers))

    def fetch_batch(raws: Envelopes, ctx: ToolContext, run_label: str = "") -> Envelopes:
        # One task run fetches a batch of sources in threads of its own: the Prefect server records
        # a task run in 25-45 ms of its CPU, more than a page costs to fetch and parse here.
        # The one uncached batch of a whole fan-out gets the flow's thread budget, a batch its own.
        threads = inner if len(raws) <= settings.research_batch_size else settings.research_max_workers
        with ThreadPoolExecutor(max_workers=min(threads, len(raws))) as pool:
            done = list(pool.map(lambda raw: _fetch_one(tool, raw, ctx, retries, max_wait), raws))
        envelopes = [env for env, _ in done]
        failed = sum(1 for _, bad in done if bad)
        if failed:
            raise _BatchIncomplete(envelopes, failed)
        return envelopes

    return fetch_batch


def _fan_out(
    settings: Settings, max_age_s: int, sources: list[Source], batch_task: Any
) -> Callable[..., Envelopes]:
    """The body of the "fetch sources" task: the batches submitted as task runs of `batch_task`."""

    def fan_out(raws: Envelopes, ctx: ToolContext, run_label: str = "") -> Envelopes:
        # Inside the outer task run each batch's run would join its transaction and commit only with
        # it: a failed batch would lose the others' cached results. An eager transaction lets each
        # commit as it ends.
        groups = _batches(list(range(len(raws))), settings.research_batch_size)
        envelopes: Envelopes = [{} for _ in raws]
        failed = 0
        with transaction(commit_mode=CommitMode.EAGER):
            futures = []
            for k, group in enumerate(groups, 1):
                first, last = sources[group[0]].n, sources[group[-1]].n
                label = f"batch {k}/{len(groups)}: sources {first}-{last}"
                futures.append(batch_task.submit([raws[i] for i in group], ctx, run_label=label))
            for group, fut in zip(groups, futures, strict=True):
                # A batch cached longer ago than this request allows is fetched again.
                value = _refetch_if_stale(
                    batch_task,
                    fut.state.name,
                    fut.result(raise_on_failure=False),
                    [raws[i] for i in group],
                    ctx,
                    f"{len(group)} stale sources",
                    max_age_s,
                )
                got, bad = _envelopes_of(value)
                failed += bad
                for i, env in zip(group, got, strict=True):
                    envelopes[i] = env
        if failed:
            raise _BatchIncomplete(envelopes, failed)
        return envelopes

    return fan_out


def _take(sources: list[Source], envelopes: Envelopes) -> None:
    """Fill each source from its fetch's envelope: status, reason, title, text, stamp, hash, metadata."""
    for src, env in zip(sources, envelopes, strict=True):
        data = env.get("data") or {}
        meta = data.get("metadata") or {}
        src.status = str(data.get("status") or "ERROR_UNKNOWN")
        src.reason = str(env.get("error") or "") if not env.get("success") else ""
        src.title = str(data.get("extractedTitle") or "")
        src.text = str(data.get("cleanedTextContent") or "")
        src.fetched_at = str(meta.get("fetched_at") or "")
        src.content_hash = str(meta.get("content_hash") or "")
        src.meta = {k: meta.get(k) for k in ("final_url", "from_cache", "truncation_applied") if k in meta}


def fetch_all(settings: Settings, request: ResearchRequest, sources: list[Source], ctx: ToolContext) -> None:
    """Fetch and parse every source (see the module docstring), filling each with its outcome."""
    tool = DocumentFetchingParsingTool()
    options = _cache_options(settings, request, tool)
    raws: Envelopes = []
    for src in sources:
        raw: dict[str, Any] = {"maxLengthBytes": request.max_length_bytes}
        raw["url" if src.kind == "url" else "filePath"] = src.url
        raws.append(raw)
    batch_task: Any = task(name="fetch batch", task_run_name="fetch {run_label}", retries=0, **options)(
        _batch_fetcher(settings, tool)
    )
    fetch: Any = batch_task
    # On a thread pool an uncached fetch is one batch fetching in threads of its own; on another
    # runner (Dask) the batches always fan out as task runs, to the workers.
    run_ctx = FlowRunContext.get()
    one_batch = not options and (run_ctx is None or isinstance(run_ctx.task_runner, ThreadPoolTaskRunner))
    if not one_batch and len(raws) > settings.research_batch_size:
        # Several batches, and the whole fan-out cached too under the same key rules and expiration:
        # the same request again is one cache hit; a request sharing a batch reuses it.
        fan_out = _fan_out(settings, request.max_cache_age_s, sources, batch_task)
        fetch = task(name="fetch sources", task_run_name="fetch {run_label}", retries=0, **options)(fan_out)
    label = f"{len(raws)} sources"
    state = fetch(raws, ctx, run_label=label, return_state=True)
    value = state.result(raise_on_failure=False)
    value = _refetch_if_stale(fetch, state.name, value, raws, ctx, label, request.max_cache_age_s)
    _take(sources, _envelopes_of(value)[0])
