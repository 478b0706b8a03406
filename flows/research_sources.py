"""Where the research flow's sources come from: search hits, seed URLs and files (canonical URLs
de-duplicated, the manual's own hits context rather than sources unless asked), Context7 library docs,
and after the fetch, a source whose final URL or content hash repeats an earlier one marked DUPLICATE.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from flows.research_report import Source, canonical_url
from tasks.base import ToolContext
from tasks.context7 import Context7DocumentationTool
from tasks.prefect_task import envelope_of, tool_task
from tasks.web_search import WebSearchTool
from udm.config import Settings

if TYPE_CHECKING:
    from flows.research import ResearchRequest

__all__ = ["context7_sources", "dedupe_fetched", "plan_sources", "search_links"]


def search_links(
    settings: Settings, request: ResearchRequest, ctx: ToolContext
) -> tuple[list[tuple[str, str]], list[str]]:
    """(link, origin) of every hit of the request's queries (default: the question), and a line per
    query whose search failed."""
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


def plan_sources(settings: Settings, request: ResearchRequest, links: list[tuple[str, str]]) -> list[Source]:
    """The sources to fetch, numbered: seed URLs, then files, then search hits; canonical URLs once,
    at most `max_sources`."""
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


def dedupe_fetched(sources: list[Source]) -> None:
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


def context7_sources(
    settings: Settings, request: ResearchRequest, sources: list[Source], ctx: ToolContext
) -> None:
    """Append a source per library the request names: its Context7 docs for the question, or why not."""
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
            src.fetched_at = datetime.now(UTC).isoformat(timespec="seconds")
            src.content_hash = "sha256:" + hashlib.sha256(src.text.encode()).hexdigest()
