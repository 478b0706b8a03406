"""research_flow: search -> dedupe -> fetch and parse (batched fan-out, cached, retried) -> dedupe
documents -> synthesise a cited answer (extractive or LLM) -> check citations and Markdown -> a
research appendix written into the manual through the UDM-update flow's steps (diff artifact,
approval pause, transactional commit, re-index), run inside this flow run.

Sources: seed URLs, local files and search hits, canonical URLs de-duplicated; the manual's own
search hits (`udm://`) are context, not sources, unless the request sets `include_manual`. After the
fetch, a source whose final URL or content hash repeats an earlier one is DUPLICATE of it.

Fan-out: one task run per batch of `research_batch_size` sources (each fetching its sources in
`research_batch_threads` threads, transient failures retried with exponential backoff and jitter,
Retry-After honoured), cached with INPUTS + TASK_SOURCE (+ the tool's name) for `max_cache_age_s` in
`<state>/prefect-results`; the fan-out as a whole is one more cached task run ("fetch N sources"), so
the same request again costs one cache hit. A batch with a source that failed after its retries is
not cached; a cached batch holding a document older than `max_cache_age_s` is refreshed. A failed
source never fails the flow: it is listed with its reason in the sources table artifact (one row per
source) and in the appendix. A run whose synthesizer fails, whose appendix fails its checks, or whose
write is refused ends Failed with the reason in an artifact.
"""

from __future__ import annotations

import random
import re
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, cast

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.context import FlowRunContext
from prefect.runtime import flow_run as runtime_flow_run
from prefect.states import Completed, Failed, State
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.transactions import CommitMode, transaction
from pydantic import BaseModel, Field, field_validator

from flows import engine_patch
from flows.research_report import (
    AppendixCheckError,
    Source,
    appendix_id,
    canonical_url,
    check_quotes,
    heading_safe,
    index_link_operation,
    latest_fingerprint,
    next_version,
    render_appendix,
    research_fingerprint,
    topic_of,
)
from flows.run_settings import PROCESS_ONLY, SettingsParameter
from flows.runners import on_runner
from flows.states import state_result
from tasks.base import (
    Envelope,
    ToolContext,
    TransientToolError,
    always_approve,
    call_tool,
    process_policy,
)
from tasks.context7 import Context7DocumentationTool
from tasks.documents import DocumentFetchingParsingTool, FetchOutput
from tasks.prefect_task import envelope_of, tool_cache_policy, tool_task
from tasks.web_search import WebSearchTool
from udm.config import ApprovalPolicy, Settings
from udm.errors import InvalidURLError
from udm.markdown import slugify
from udm.net import parse_pool, split_url, workers_for
from udm.research import (
    Evidence,
    ExtractiveSynthesizer,
    Synthesis,
    Synthesizer,
    split_sub_questions,
    verify_claims,
)

engine_patch.apply()

__all__ = ["SETTINGS", "ResearchRequest", "ResearchResult", "research_flow", "research_state", "run_research"]

# The settings a caller's Settings hands to the flow; a triggered run may set others but only narrowing.
SETTINGS = SettingsParameter(
    passed=(
        "root",
        "state_dir",
        "logs_dir",
        "fetch_allow",
        "fetch_respect_robots",
        "fetch_timeout_s",
        "fetch_host_delay_s",
        "fetch_host_concurrency",
        "fetch_retries",
        "retry_max_wait_s",
        "research_max_workers",
        "research_parse_processes",
        "research_batch_size",
        "research_batch_threads",
        "research_synthesizer",
        "llm_max_output_tokens",
        "llm_token_budget",
        "llm_timeout_s",
        "llm_retries",
        # The endpoints: a caller's own, which a triggered run may not change.
        *PROCESS_ONLY,
    ),
    only_passed=False,
)
# Sources from which the fetch fan-out parses in worker processes (see udm/net/parsing_pool.py).
_POOL_FROM = 8


class ResearchRequest(BaseModel):
    """What to research and where to look."""

    question: str = Field(min_length=3, max_length=500, description="The research question.")
    queries: list[str] = Field(
        default_factory=list, description="Search queries (default: the question itself)."
    )
    urls: list[str] = Field(default_factory=list, description="Seed URLs fetched in any case.")
    files: list[str] = Field(
        default_factory=list, description="Local files (inside the allowed directories)."
    )
    libraries: list[str] = Field(default_factory=list, description="Library names looked up in Context7.")
    sub_questions: list[str] = Field(
        default_factory=list,
        max_length=10,
        description="Parts of the question the findings are grouped by (default: the question's own sentences).",
    )
    include_manual: bool = Field(
        default=False,
        description="Cite the manual's own files and appendices found by search (default: they are "
        "context, not sources; files named in `files` are always read).",
    )
    topic: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$",
        description="Appendix topic (default: from the question).",
    )
    max_sources: int = Field(
        default=10, ge=1, le=500, description="Most sources fetched (seeds and files first)."
    )
    results_per_query: int = Field(default=5, ge=1, le=50, description="Search results asked per query.")
    max_cache_age_s: int = Field(
        default=24 * 3600,
        ge=0,
        le=90 * 24 * 3600,
        description="Reuse a cached fetch younger than this (0: never).",
    )
    max_length_bytes: int = Field(default=500_000, ge=1000, le=50_000_000, description="Cap per document.")
    write: bool = Field(
        default=True, description="Write the appendix into the manual (false: only report it)."
    )
    new_version_if_unchanged: bool = Field(
        default=False,
        description="Write a new version even when the newest one was made of the same question, "
        "sources and contents (default: report it unchanged).",
    )

    @field_validator("urls")
    @classmethod
    def _http_only(cls, value: list[str]) -> list[str]:
        for url in value:
            if not re.match(r"^https?://[^\s/]+", url.strip()):
                raise ValueError(f"not an http(s) URL: {url!r}")
            try:
                split_url(url.strip())
            except InvalidURLError as exc:
                raise ValueError(str(exc)) from exc
        return value


class ResearchResult(BaseModel):
    """What one research run produced."""

    status: Literal["written", "unchanged", "reported", "rejected", "failed"] = Field(description="Outcome.")
    message: str = Field(default="", description="A line saying what happened.")
    appendix_id: str = Field(description="The appendix ID (APP-<TOPIC>-RESEARCH-V<n>).")
    appendix_path: str = Field(description="Its path relative to the UDM root.")
    sources: list[dict[str, Any]] = Field(default_factory=list, description="Every source with its status.")
    sources_ok: int = Field(default=0, description="Sources that gave usable text.")
    sources_failed: int = Field(
        default=0, description="Sources that failed (see their reasons); duplicates are not failures."
    )
    findings: int = Field(default=0, description="Claims published (answer and findings).")
    unsupported: list[dict[str, Any]] = Field(
        default_factory=list, description="Claims dropped because no cited source supports them."
    )
    synthesizer: str = Field(default="", description="Who wrote the answer (extractive or the LLM).")
    markdown: str = Field(default="", description="The appendix text.")
    update: dict[str, Any] | None = Field(default=None, description="The UDM-update flow's result.")
    flow_run_id: str | None = Field(default=None, description="This flow run.")
    timings_s: dict[str, float] = Field(default_factory=dict, description="Seconds per phase of the run.")


def _ctx(settings: Settings) -> ToolContext:
    # The flow's tools are all SAFE (read-only); writing goes through the update flow's own approval.
    return ToolContext(settings=settings, approver=always_approve)


def _search_links(
    settings: Settings, request: ResearchRequest, ctx: ToolContext
) -> tuple[list[tuple[str, str]], list[str]]:
    search = tool_task(
        WebSearchTool(),
        retries=settings.fetch_retries,
        task_name="search",
        task_run_name="search: {run_label}",
    )
    queries = request.queries or [request.question]
    futures = [
        search.submit({"query": q, "numResults": request.results_per_query}, ctx, run_label=q[:60])
        for q in queries
    ]
    links: list[tuple[str, str]] = []
    problems: list[str] = []
    for q, fut in zip(queries, futures, strict=True):
        env = envelope_of(fut)
        if not env.get("success"):
            problems.append(f"search '{q}': {env.get('error')}")
        links += [(r["link"], f"search: {q}") for r in (env.get("data") or {}).get("results") or []]
    return links, problems


def _plan_sources(settings: Settings, request: ResearchRequest, links: list[tuple[str, str]]) -> list[Source]:
    seen: set[str] = set()
    sources: list[Source] = []

    def add(kind: str, target: str, origin: str) -> None:
        key = canonical_url(target) if kind == "url" else f"{kind}:{target}"
        if key in seen or len(sources) >= request.max_sources:
            return
        seen.add(key)
        sources.append(
            Source(n=len(sources) + 1, url=key if kind == "url" else target, kind=kind, origin=origin)
        )

    for url in request.urls:
        add("url", url, "seed")
    for path in request.files:
        add("file", path, "file")
    for link, origin in links:
        if link.startswith("udm://"):
            # A hit in the manual itself is context, not evidence: citing the manual's roadmap or an
            # earlier appendix would only repeat the manual back to itself, unless the request asks.
            if request.include_manual:
                add("file", str(settings.udm_root / link[len("udm://") :].split("#", 1)[0]), origin)
        elif link.startswith(("http://", "https://")):
            add("url", link, origin)
    return sources


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


def _fetch_all(settings: Settings, request: ResearchRequest, sources: list[Source], ctx: ToolContext) -> None:
    tool = DocumentFetchingParsingTool()
    options: dict[str, Any] = {}
    if request.max_cache_age_s > 0:
        options = {
            "cache_policy": tool_cache_policy(tool),
            "cache_expiration": timedelta(seconds=request.max_cache_age_s),
            "persist_result": True,
            "result_storage": settings.state_path / "prefect-results",
            "result_serializer": "json",
        }
    raws: list[dict[str, Any]] = []
    for src in sources:
        raw: dict[str, Any] = {"maxLengthBytes": request.max_length_bytes}
        raw["url" if src.kind == "url" else "filePath"] = src.url
        raws.append(raw)
    retries, max_wait = settings.fetch_retries, settings.retry_max_wait_s
    inner = max(1, min(settings.research_batch_threads, settings.research_max_workers))

    def fetch_batch(
        raws: list[dict[str, Any]], ctx: ToolContext, run_label: str = ""
    ) -> list[dict[str, Any]]:
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

    batch_task: Any = task(name="fetch batch", task_run_name="fetch {run_label}", retries=0, **options)(
        fetch_batch
    )

    def batch_envelopes(state_or_future: Any) -> tuple[list[dict[str, Any]], int]:
        """A batch's envelopes and how many of its sources failed after their retries."""
        value = state_or_future.result(raise_on_failure=False)
        if isinstance(value, _BatchIncomplete):
            return value.envelopes, value.failed
        if isinstance(value, BaseException):
            raise value
        return list(value), 0

    def fan_out(raws: list[dict[str, Any]], ctx: ToolContext, run_label: str = "") -> list[dict[str, Any]]:
        # Inside the outer task run each batch's run would join its transaction and commit only with
        # it: a failed batch would lose the others' cached results. An eager transaction lets each
        # commit as it ends.
        groups = _batches(list(range(len(raws))), settings.research_batch_size)
        envelopes: list[dict[str, Any]] = [{} for _ in raws]
        failed = 0
        with transaction(commit_mode=CommitMode.EAGER):
            futures = []
            for k, group in enumerate(groups, 1):
                first, last = sources[group[0]].n, sources[group[-1]].n
                label = f"batch {k}/{len(groups)}: sources {first}-{last}"
                futures.append(batch_task.submit([raws[i] for i in group], ctx, run_label=label))
            for group, fut in zip(groups, futures, strict=True):
                got, bad = batch_envelopes(fut)
                if fut.state.name == "Cached" and not _fresh(got, request.max_cache_age_s):
                    # A batch cached longer ago than this request allows: fetch it again.
                    again = batch_task.with_options(refresh_cache=True)
                    label = f"{len(group)} stale sources"
                    got, bad = batch_envelopes(
                        again([raws[i] for i in group], ctx, run_label=label, return_state=True)
                    )
                failed += bad
                for i, env in zip(group, got, strict=True):
                    envelopes[i] = env
        if failed:
            raise _BatchIncomplete(envelopes, failed)
        return envelopes

    # On a thread pool an uncached fetch is one batch fetching in threads of its own; on another
    # runner (Dask) the batches always fan out as task runs, to the workers.
    run_ctx = FlowRunContext.get()
    one_batch = not options and (run_ctx is None or isinstance(run_ctx.task_runner, ThreadPoolTaskRunner))
    if one_batch or len(raws) <= settings.research_batch_size:
        label = f"{len(raws)} sources"
        state: Any = batch_task(raws, ctx, run_label=label, return_state=True)
        envelopes, _ = batch_envelopes(state)
        if state.name == "Cached" and not _fresh(envelopes, request.max_cache_age_s):
            state = batch_task.with_options(refresh_cache=True)(raws, ctx, run_label=label, return_state=True)
            envelopes, _ = batch_envelopes(state)
    else:
        # Several batches, and the whole fan-out cached too under the same key rules and expiration:
        # the same request again is one cache hit; a request sharing a batch reuses it.
        outer: Any = task(name="fetch sources", task_run_name="fetch {run_label}", retries=0, **options)(
            fan_out
        )
        label = f"{len(raws)} sources"
        state = outer(raws, ctx, run_label=label, return_state=True)
        value = state.result(raise_on_failure=False)
        if state.name == "Cached" and isinstance(value, list) and not _fresh(value, request.max_cache_age_s):
            state = outer.with_options(refresh_cache=True)(raws, ctx, run_label=label, return_state=True)
        envelopes, _ = batch_envelopes(state)
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


def _dedupe_fetched(sources: list[Source]) -> None:
    """Mark a source DUPLICATE when an earlier one is the same document: the same canonical final URL
    (after redirects) or the same content hash. Each document is cited once, under its first number."""
    first: dict[str, int] = {}
    for src in sources:
        if not src.ok:
            continue
        keys = [f"hash:{src.content_hash}"] if src.content_hash else []
        final = str(src.meta.get("final_url") or "")
        if final.startswith(("http://", "https://")):
            keys.append(f"url:{canonical_url(final)}")
        same = next((first[k] for k in keys if k in first), None)
        if same is not None:
            src.status, src.reason = "DUPLICATE", f"the same document as source {same}"
            continue
        for k in keys:
            first.setdefault(k, src.n)


def _synthesizer(settings: Settings) -> Synthesizer:
    """The synthesizer the settings name (research_synthesizer)."""
    if settings.research_synthesizer == "llm":
        from tasks.llm_synth import LLMSynthesizer

        return LLMSynthesizer(settings)
    return ExtractiveSynthesizer()


def _synthesize(
    settings: Settings, question: str, sub_questions: list[str], sources: list[Source]
) -> Synthesis:
    """The cited answer from the usable sources, every citation verified against its source's text."""
    evidence = [Evidence(s.n, s.title, s.url, s.text) for s in sources if s.ok]
    subs = [q.strip() for q in sub_questions if q.strip()] or split_sub_questions(question)
    synthesis = _synthesizer(settings).synthesize(question, subs, evidence)
    verify_claims(synthesis, evidence)
    return synthesis


def _context7(settings: Settings, request: ResearchRequest, sources: list[Source], ctx: ToolContext) -> None:
    if not request.libraries:
        return
    c7 = tool_task(
        Context7DocumentationTool(),
        retries=settings.fetch_retries,
        max_retry_after_s=settings.retry_max_wait_s,
        task_name="context7",
    )
    for name in request.libraries:
        n = len(sources) + 1
        env = envelope_of(
            c7.submit({"action": "resolve_library_id", "libraryName": name, "topic": request.question}, ctx)
        )
        lib_id = (env.get("data") or {}).get("resolvedLibraryID")
        src = Source(
            n=n,
            url=f"{settings.context7_url.rstrip('/')}{lib_id or '/?q=' + name}",
            kind="context7",
            origin=f"library: {name}",
        )
        sources.append(src)
        if not lib_id:
            src.status = str((env.get("data") or {}).get("status") or "ERROR_UNKNOWN")
            src.reason = str(env.get("error") or "library not found")
            continue
        docs = envelope_of(
            c7.submit(
                {
                    "action": "get_library_docs",
                    "context7CompatibleLibraryID": lib_id,
                    "topic": request.question,
                    "maxTokens": 3000,
                },
                ctx,
            )
        )
        data = docs.get("data") or {}
        src.status = str(data.get("status") or "ERROR_UNKNOWN")
        src.reason = str(docs.get("error") or "") if not docs.get("success") else ""
        src.title = f"Context7: {lib_id}"
        src.text = str(data.get("retrievedDocumentation") or "")
        if src.text:
            import hashlib
            from datetime import UTC, datetime

            src.fetched_at = datetime.now(UTC).isoformat(timespec="seconds")
            src.content_hash = "sha256:" + hashlib.sha256(src.text.encode()).hexdigest()


def _artifacts(app_id: str, sources: list[Source], markdown: str) -> None:
    rows = [
        {
            "n": s.n,
            "status": "ok" if s.ok else s.status,
            "title": s.title[:120],
            "url": s.url,
            "origin": s.origin,
            "cached": bool(s.meta.get("from_cache")),
            "reason": s.reason[:300],
        }
        for s in sources
    ]
    slug = re.sub(r"[^a-z0-9-]+", "-", app_id.lower())
    create_table_artifact(
        table=rows, key=f"{slug}-sources", description=f"Sources of {app_id} (failed ones with their reason)"
    )
    failed = [r for r in rows if r["status"] not in ("ok", "DUPLICATE")]
    if failed:
        create_table_artifact(
            table=failed, key=f"{slug}-failed-sources", description=f"Sources of {app_id} that failed"
        )
    if markdown:
        create_markdown_artifact(
            markdown=markdown[:100_000], key=f"{slug}-appendix", description=f"Research appendix {app_id}"
        )


def _write(
    settings: Settings, app_id: str, title: str, markdown: str, policy: ApprovalPolicy | None, timeout_s: int
) -> dict[str, Any]:
    from flows.udm_update import UpdateOptions, update_steps
    from udm.patch import Patch

    index = settings.udm_root / "appendices" / "00-appendix-index.md"
    anchor = slugify(f"{app_id}: {heading_safe(title)}")
    ops: list[dict[str, Any]] = [
        {
            "op": "create_file",
            "file": f"appendices/{app_id}.md",
            "content": markdown,
            "rationale": "research appendix",
        }
    ]
    if index.is_file():
        ops.append(index_link_operation(index.read_text(encoding="utf-8"), app_id, title, anchor))
    else:
        table = f"# Appendix Index\n\n| ID | Title |\n| --- | --- |\n| [{app_id}]({app_id}.md#{anchor}) | {title} |\n"
        ops.append({"op": "create_file", "file": "appendices/00-appendix-index.md", "content": table})
    patch = Patch.model_validate(
        {
            "description": f"research appendix {app_id}",
            "author": "research_flow",
            "source": app_id,
            "operations": ops,
        }
    )
    result = update_steps(
        patch, UpdateOptions(approval_policy=policy, approval_timeout_s=timeout_s), settings
    )
    return result.model_dump(mode="json")


@flow(
    name="research",
    log_prints=False,
    persist_result=False,
    task_runner=ThreadPoolTaskRunner(max_workers=16),  # type: ignore[arg-type]
)
def research_flow(
    request: ResearchRequest,
    settings_overrides: dict[str, Any] | None = None,
    approval_policy: ApprovalPolicy | None = None,
    approval_timeout_s: int = 3600,
) -> State[Any]:
    """Research a question and write the cited appendix into the manual (see the module docstring).

    `approval_policy` may only make the policy of the process running the flow stricter. The final
    state says what happened (`research_state`); the ResearchResult is its data."""
    result = _research(request, SETTINGS.load(settings_overrides), approval_policy, approval_timeout_s)
    return research_state(result)


def research_state(result: ResearchResult) -> State[Any]:
    """Completed (written, reported), Completed "Unchanged" / "Rejected", or Failed ("Expired" when
    nobody reviewed the write in time); a refused write names its reason in an artifact too."""
    update_status = (result.update or {}).get("status")
    message = f"{result.appendix_id}: {result.status}: {result.message}"
    if result.status == "failed" or update_status == "expired":
        slug = re.sub(r"[^a-z0-9-]+", "-", result.appendix_id.lower())
        create_markdown_artifact(
            markdown=f"# {result.appendix_id} was not written\n\n{result.message}\n",
            key=f"{slug}-write-refused",
            description=f"Why {result.appendix_id} was not written",
        )
        return Failed(
            data=result, name="Expired" if update_status == "expired" else "Failed", message=message
        )
    names = {"unchanged": "Unchanged", "rejected": "Rejected"}
    return Completed(data=result, name=names.get(result.status, "Completed"), message=message)


def _research(
    request: ResearchRequest,
    settings: Settings,
    approval_policy: ApprovalPolicy | None,
    approval_timeout_s: int,
) -> ResearchResult:
    """The research flow's steps inside its run; the result."""
    logger = get_run_logger()
    ctx = _ctx(settings)
    run_id = str(runtime_flow_run.id) if runtime_flow_run.id else None

    timings: dict[str, float] = {}
    mark = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal mark
        now = time.perf_counter()
        timings[name] = round(now - mark, 3)
        mark = now

    links: list[tuple[str, str]] = []
    if settings.search_provider == "udm" and not request.include_manual:
        # The udm provider searches the manual itself, whose hits are context, not sources.
        logger.info("no search: the udm provider finds only the manual (include_manual is off)")
    else:
        links, problems = _search_links(settings, request, ctx)
        for p in problems:
            logger.warning(p)
    lap("search")
    sources = _plan_sources(settings, request, links)
    fetched = sum(1 for s in sources if s.kind in ("url", "file"))
    # A pool pays off from a handful of documents; one or two parse faster than a process starts.
    workers = workers_for(settings.research_parse_processes) if fetched >= _POOL_FROM else 0
    with parse_pool(min(workers, fetched)):
        _fetch_all(settings, request, sources, ctx)
    _dedupe_fetched(sources)
    lap("fetch")
    _context7(settings, request, sources, ctx)
    lap("context7")
    topic = request.topic or topic_of(request.question)
    appendices = settings.udm_root / "appendices"
    title = request.question.rstrip("?").strip()
    fingerprint = research_fingerprint(request.question, request.libraries, sources)
    latest = latest_fingerprint(appendices, topic) if request.write else None
    # Same question, same sources with the same contents: a new version would say nothing new.
    unchanged_id = (
        latest.app_id
        if latest and latest.fingerprint == fingerprint and not request.new_version_if_unchanged
        else None
    )
    synthesis: Synthesis | None = None
    failure = ""
    findings_count = 0
    if unchanged_id and latest and latest.findings is not None:
        # The same texts synthesise the same: that appendix already holds these findings.
        findings_count = latest.findings
    else:
        try:
            synthesis = _synthesize(settings, request.question, request.sub_questions, sources)
        except Exception as exc:  # an LLM endpoint's failure is this run's outcome, not a traceback
            from tasks.llm_synth import LLMError

            if not isinstance(exc, LLMError):
                raise
            failure = f"the synthesizer failed: {exc}"
        else:
            findings_count = len(synthesis.claims())
    lap("synthesize")

    markdown = ""
    if unchanged_id:
        app_id = unchanged_id
        markdown = (appendices / f"{app_id}.md").read_text(encoding="utf-8")
    else:
        app_id = appendix_id(topic, next_version(appendices, topic))
        if synthesis is not None:
            problems = check_quotes(synthesis, sources)
            try:
                markdown = render_appendix(
                    app_id,
                    request.question,
                    sources,
                    synthesis,
                    title=title,
                    run_id=run_id,
                    fingerprint=fingerprint,
                )
            except AppendixCheckError as exc:
                problems.append(str(exc))
            if problems:
                failure = "the appendix failed its checks: " + "; ".join(problems[:5])
    # An unchanged run's appendix is the artifact of the run that wrote it; its sources are listed anew.
    _artifacts(app_id, sources, "" if unchanged_id else markdown)
    lap("render")
    ok = sum(1 for s in sources if s.ok)
    result = ResearchResult(
        status="reported",
        appendix_id=app_id,
        appendix_path=f"appendices/{app_id}.md",
        sources=[
            {
                "n": s.n,
                "url": s.url,
                "origin": s.origin,
                "status": "ok" if s.ok else s.status,
                "title": s.title,
                "fetched_at": s.fetched_at,
                "content_hash": s.content_hash,
                "reason": s.reason,
                **s.meta,
            }
            for s in sources
        ],
        sources_ok=ok,
        sources_failed=sum(1 for s in sources if not s.ok and s.status != "DUPLICATE"),
        findings=findings_count,
        markdown=markdown,
        flow_run_id=run_id,
        timings_s=timings,
    )
    if synthesis is not None:
        result.unsupported = [
            {"text": c.text, "cites": c.cites, "reason": c.reason} for c in synthesis.unsupported
        ]
        result.synthesizer = synthesis.synthesizer
    logger.info("%s: %d sources (%d ok), %d findings", app_id, len(sources), ok, findings_count)
    if failure:
        # Nothing is written: the reason reaches the run's artifacts through research_state.
        result.status, result.message = "failed", failure
        result.timings_s = dict(timings)
        return result
    if not request.write:
        result.timings_s = dict(timings)
        result.message = "not written (write=false)"
        return result
    if unchanged_id:
        result.status = "unchanged"
        result.message = f"{app_id} already holds these findings (same question, sources and contents)"
        result.timings_s = dict(timings)
        return result
    update = _write(settings, app_id, title, markdown, approval_policy, approval_timeout_s)
    result.update = update
    lap("write")
    result.timings_s = dict(timings)
    status = update.get("status")
    if status == "committed":
        result.status, result.message = (
            "written",
            f"wrote {result.appendix_path} and linked it from the appendix index",
        )
    elif status in ("rejected", "expired"):
        result.status, result.message = "rejected", f"the update was {status}: {update.get('message')}"
    else:
        result.status, result.message = "failed", f"the update flow ended {status}: {update.get('message')}"
    return result


def run_research(
    request: ResearchRequest,
    settings: Settings,
    *,
    policy: ApprovalPolicy | str | None = None,
    approval_timeout_s: int = 3600,
) -> ResearchResult:
    """Run research_flow for these settings on their task runner (threads: `research_max_workers` of them)."""
    overrides = SETTINGS.dump(settings)
    flow_fn: Any = on_runner(research_flow, settings, settings.research_max_workers)
    # The caller holds the settings: it is the side running the flow, so its policy is the process's.
    with process_policy(policy or settings.approval_policy):
        state = flow_fn(
            request=request,
            settings_overrides=overrides,
            approval_timeout_s=approval_timeout_s,
            return_state=True,
        )
    result: ResearchResult = state_result(state)
    return result
