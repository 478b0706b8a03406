"""research_flow: search -> dedupe -> fetch and parse (batched fan-out, cached, retried) -> dedupe
documents -> synthesise a cited answer (extractive or LLM) -> check citations and Markdown -> a
research appendix written into the manual through the UDM-update flow's steps (diff artifact,
approval pause, transactional commit, re-index), run inside this flow run.

Sources: seed URLs, local files and search hits, canonical URLs de-duplicated; the manual's own
search hits (`udm://`) are context, not sources, unless the request sets `include_manual`. After the
fetch, a source whose final URL or content hash repeats an earlier one is DUPLICATE of it.

The phases live beside this module: research_sources (search, the source plan, Context7,
de-duplication), research_fetch (the batched, cached, retried fetch fan-out), research_appendix
(synthesis, the appendix and its checks, artifacts, the write); research_report holds the pure parts.
A failed source never fails the flow: it is listed with its reason in the sources table artifact (one
row per source) and in the appendix. A run whose synthesizer fails, whose appendix fails its checks,
or whose write is refused ends Failed with the reason in an artifact.
"""

from __future__ import annotations

import re
import time
from typing import Any, Literal

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.runtime import flow_run as runtime_flow_run
from prefect.states import Completed, Failed, State
from prefect.task_runners import ThreadPoolTaskRunner
from pydantic import BaseModel, Field, field_validator

from flows.research_appendix import Draft, draft_appendix, write_appendix
from flows.research_fetch import fetch_all
from flows.research_report import Source
from flows.research_sources import context7_sources, dedupe_fetched, plan_sources, search_links
from flows.run_settings import PROCESS_ONLY, SettingsParameter
from flows.runners import on_runner
from flows.states import state_result
from tasks.base import ToolContext, always_approve, process_policy
from tasks.document_parsers import PARSER_MODULES
from udm.config import ApprovalPolicy, Settings
from udm.errors import InvalidURLError
from udm.net import parse_pool, split_url, workers_for

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


class _Laps:
    """Seconds per phase of the run: each call names the phase that just ended."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self._mark = time.perf_counter()

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.timings[name] = round(now - self._mark, 3)
        self._mark = now


def _gather(settings: Settings, request: ResearchRequest, lap: _Laps) -> list[Source]:
    """Search, plan, fetch and de-duplicate the sources, then add Context7's; each phase timed."""
    logger = get_run_logger()
    ctx = _ctx(settings)
    links: list[tuple[str, str]] = []
    if settings.search_provider == "udm" and not request.include_manual:
        # The udm provider searches the manual itself, whose hits are context, not sources.
        logger.info("no search: the udm provider finds only the manual (include_manual is off)")
    else:
        links, problems = search_links(settings, request, ctx)
        for p in problems:
            logger.warning(p)
    lap("search")
    sources = plan_sources(settings, request, links)
    fetched = sum(1 for s in sources if s.kind in ("url", "file"))
    # A pool pays off from a handful of documents; one or two parse faster than a process starts.
    workers = workers_for(settings.research_parse_processes) if fetched >= _POOL_FROM else 0
    with parse_pool(min(workers, fetched), PARSER_MODULES):
        fetch_all(settings, request, sources, ctx)
    dedupe_fetched(sources)
    lap("fetch")
    context7_sources(settings, request, sources, ctx)
    lap("context7")
    return sources


def _result(draft: Draft, sources: list[Source], run_id: str | None) -> ResearchResult:
    """The run's result before its outcome is known (status "reported")."""
    ok = sum(1 for s in sources if s.ok)
    result = ResearchResult(
        status="reported",
        appendix_id=draft.app_id,
        appendix_path=f"appendices/{draft.app_id}.md",
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
        findings=draft.findings,
        markdown=draft.markdown,
        flow_run_id=run_id,
    )
    if draft.synthesis is not None:
        result.unsupported = [
            {"text": c.text, "cites": c.cites, "reason": c.reason} for c in draft.synthesis.unsupported
        ]
        result.synthesizer = draft.synthesis.synthesizer
    return result


def _outcome(result: ResearchResult, update: dict[str, Any]) -> None:
    """The result's status and message from the update flow's result."""
    status = update.get("status")
    if status == "committed":
        result.status = "written"
        result.message = f"wrote {result.appendix_path} and linked it from the appendix index"
    elif status in ("rejected", "expired"):
        result.status, result.message = "rejected", f"the update was {status}: {update.get('message')}"
    else:
        result.status, result.message = "failed", f"the update flow ended {status}: {update.get('message')}"


def _research(
    request: ResearchRequest,
    settings: Settings,
    approval_policy: ApprovalPolicy | None,
    approval_timeout_s: int,
) -> ResearchResult:
    """The research flow's steps inside its run; the result."""
    run_id = str(runtime_flow_run.id) if runtime_flow_run.id else None
    lap = _Laps()
    sources = _gather(settings, request, lap)
    draft = draft_appendix(settings, request, sources, run_id, lap)
    result = _result(draft, sources, run_id)
    get_run_logger().info(
        "%s: %d sources (%d ok), %d findings", draft.app_id, len(sources), result.sources_ok, draft.findings
    )
    if draft.failure:
        # Nothing is written: the reason reaches the run's artifacts through research_state.
        result.status, result.message = "failed", draft.failure
    elif not request.write:
        result.message = "not written (write=false)"
    elif draft.unchanged:
        result.status = "unchanged"
        result.message = f"{draft.app_id} already holds these findings (same question, sources and contents)"
    else:
        result.update = write_appendix(
            settings, draft.app_id, draft.title, draft.markdown, approval_policy, approval_timeout_s
        )
        lap("write")
        _outcome(result, result.update)
    result.timings_s = dict(lap.timings)
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
