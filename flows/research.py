"""research_flow: search -> dedupe -> fetch and parse (fan-out, cached, retried) -> rank -> Context7 ->
a cited research appendix written into the manual through the UDM-update flow's steps (diff artifact,
approval pause, transactional commit, re-index), run inside this flow run.

Each source is one task run of documentFetchingParsingTool, cached with INPUTS + TASK_SOURCE (+ the
tool's name) for `max_cache_age_s` in `<state>/prefect-results` and retried on transient failures
(exponential backoff with jitter, Retry-After honoured). The fan-out as a whole is one more cached
task run ("fetch N sources", the per-source runs nested in it), so the same request again costs one
cache hit; a batch with a failed source is not cached, and a cached batch holding a document older
than `max_cache_age_s` is refreshed. A failed source never fails the flow: it is listed with its
reason in the sources table artifact and in the appendix.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.runtime import flow_run as runtime_flow_run
from prefect.states import Completed, Failed, State
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.transactions import CommitMode, transaction
from pydantic import BaseModel, Field, field_validator

from flows import engine_patch
from flows.research_report import (
    Finding,
    Source,
    appendix_id,
    canonical_url,
    heading_safe,
    index_link_operation,
    latest_fingerprint,
    next_version,
    rank_findings,
    render_appendix,
    research_fingerprint,
    topic_of,
)
from flows.runners import on_runner
from flows.states import state_result
from tasks.base import ToolContext, always_approve, process_policy
from tasks.context7 import Context7DocumentationTool
from tasks.documents import DocumentFetchingParsingTool
from tasks.parse_pool import parse_pool, workers_for
from tasks.prefect_task import envelope_of, tool_cache_policy, tool_task
from tasks.web_search import WebSearchTool
from udm.config import ApprovalPolicy, Settings, load_settings
from udm.document import slugify
from udm.errors import ConfigError, InvalidURLError
from udm.netguard import split_url

engine_patch.apply()

__all__ = ["ResearchRequest", "ResearchResult", "research_flow", "research_state", "run_research"]

_PASSED_SETTINGS = (
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
    "search_provider",
    "searxng_url",
    "brave_api_url",
    "google_api_url",
    "google_cx",
    "context7_url",
    "research_max_workers",
    "research_parse_processes",
)
# Sources from which the fetch fan-out parses in worker processes (see tasks/parse_pool.py).
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
    sources_failed: int = Field(default=0, description="Sources that failed (see their reasons).")
    findings: int = Field(default=0, description="Passages cited.")
    markdown: str = Field(default="", description="The appendix text.")
    update: dict[str, Any] | None = Field(default=None, description="The UDM-update flow's result.")
    flow_run_id: str | None = Field(default=None, description="This flow run.")
    timings_s: dict[str, float] = Field(default_factory=dict, description="Seconds per phase of the run.")


def _settings(overrides: dict[str, Any] | None) -> Settings:
    data = dict(overrides or {})
    if "approval_policy" in data:
        # The side running the flow decides it (UDM_APPROVAL_POLICY, a deployment's job variable).
        raise ConfigError(
            "settings_overrides may not set approval_policy: it is the process's setting "
            "(UDM_APPROVAL_POLICY) or a deployment's job variable; the approval_policy parameter "
            "may only make it stricter"
        )
    cwd = data.pop("project_root", None)
    return load_settings(cwd, **data)


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
            # A hit in the manual itself: its file is the source (the ranking finds the passage).
            add("file", str(settings.udm_root / link[len("udm://") :].split("#", 1)[0]), origin)
        elif link.startswith(("http://", "https://")):
            add("url", link, origin)
    return sources


class _BatchIncomplete(Exception):
    """A source of the batch failed after its retries: the batch's envelopes, kept out of the cache."""

    def __init__(self, envelopes: list[dict[str, Any]], failed: int) -> None:
        super().__init__(
            f"{failed} of {len(envelopes)} sources failed after their retries; the batch is not cached, "
            "so the next run fetches them again (the others stay cached)"
        )
        self.envelopes = envelopes


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
    fetch = tool_task(
        tool,
        retries=settings.fetch_retries,
        backoff_s=0.5,
        max_retry_after_s=settings.retry_max_wait_s,
        fail_on_final=True,
        task_name="fetch",
        task_run_name="fetch: {run_label}",
        **options,
    )
    raws: list[dict[str, Any]] = []
    for src in sources:
        raw: dict[str, Any] = {"maxLengthBytes": request.max_length_bytes}
        raw["url" if src.kind == "url" else "filePath"] = src.url
        raws.append(raw)

    def fan_out(raws: list[dict[str, Any]], ctx: ToolContext, run_label: str = "") -> list[dict[str, Any]]:
        # Inside the batch's task run each source's run would join the batch's transaction and commit
        # only with it: a failed source would lose the others' cached results, and every result would
        # be written at the end, one after another. An eager transaction lets each commit as it ends.
        with transaction(commit_mode=CommitMode.EAGER):
            # The run name comes from run_label (not with_options, which copies the task: ~7 ms each).
            futures = [
                fetch.submit(raw, ctx, run_label=src.url[-70:])
                for raw, src in zip(raws, sources, strict=True)
            ]
            envelopes = [envelope_of(fut) for fut in futures]
        failed = sum(1 for fut in futures if not fut.state.is_completed())
        if failed:
            raise _BatchIncomplete(envelopes, failed)
        return envelopes

    if not options or len(raws) < 2:
        envelopes = fan_out(raws, ctx)
    else:
        # The whole fan-out is cached too, under the same key rules and expiration: the same request
        # again is one cache hit instead of a cache-hit task run per source. Each source keeps its own
        # cached run (another request sharing some sources reuses those); a batch with a failed source
        # raises, so Prefect does not cache it and the next run retries that source.
        batch: Any = task(name="fetch sources", task_run_name="fetch {run_label}", retries=0, **options)(
            fan_out
        )
        label = f"{len(raws)} sources"
        state = batch(raws, ctx, run_label=label, return_state=True)
        value = state.result(raise_on_failure=False)
        if state.name == "Cached" and isinstance(value, list) and not _fresh(value, request.max_cache_age_s):
            # A source's own cached run was older than this batch: take the stale ones again.
            state = batch.with_options(refresh_cache=True)(raws, ctx, run_label=label, return_state=True)
            value = state.result(raise_on_failure=False)
        if isinstance(value, _BatchIncomplete):
            envelopes = value.envelopes
        elif isinstance(value, BaseException):
            raise value
        else:
            envelopes = value
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
    failed = [r for r in rows if r["status"] != "ok"]
    if failed:
        create_table_artifact(
            table=failed, key=f"{slug}-failed-sources", description=f"Sources of {app_id} that failed"
        )
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
    result = _research(request, _settings(settings_overrides), approval_policy, approval_timeout_s)
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
    findings: list[Finding] = []
    if unchanged_id and latest and latest.findings is not None:
        # The same texts rank the same: that appendix already holds these findings.
        findings_count = latest.findings
    else:
        findings = rank_findings(request.question, sources)
        findings_count = len(findings)
    lap("rank")

    if unchanged_id:
        app_id = unchanged_id
        markdown = (appendices / f"{app_id}.md").read_text(encoding="utf-8")
    else:
        app_id = appendix_id(topic, next_version(appendices, topic))
        markdown = render_appendix(
            app_id, request.question, sources, findings, title=title, run_id=run_id, fingerprint=fingerprint
        )
    _artifacts(app_id, sources, markdown)
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
        sources_failed=len(sources) - ok,
        findings=findings_count,
        markdown=markdown,
        flow_run_id=run_id,
        timings_s=timings,
    )
    logger.info("%s: %d sources (%d ok), %d findings", app_id, len(sources), ok, findings_count)
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
    overrides: dict[str, Any] = settings.model_dump(mode="json", include=set(_PASSED_SETTINGS))
    overrides["project_root"] = str(Path(settings.project_root))
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
