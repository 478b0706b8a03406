"""webSearchTool: one query to the configured search provider, results as (title, link, snippet).

Providers (`settings.search_provider`), each called exactly as its public API documents:
- `searxng`: `GET {searxng_url}/search?q=&format=json[&pageno=]` -> `results[].title/url/content`;
- `brave`:   `GET {brave_api_url}/res/v1/web/search?q=&count=[&offset=]`, header `X-Subscription-Token`
             -> `web.results[].title/url/description`;
- `google`:  `GET {google_api_url}/customsearch/v1?key=&cx=&q=&num=&start=` (num at most 10, paginated
             with start) -> `items[].title/link/snippet`;
- `udm`:     the manual's own ranked index (no key, no network): links are `udm://<file>#L<line>`.
`site` becomes `site:<domain>` in the query for web providers; for `udm` it limits hits to files
whose path starts with it. Keys never appear in results, errors or logs (see tasks/secrets.py).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Iterator
from enum import StrEnum
from typing import Any, ClassVar

import httpx
from pydantic import BaseModel, Field

from tasks.base import Permission, Tool, ToolContext, ToolInput, ToolStatusError
from tasks.secrets import api_key, redact
from udm.config import Settings
from udm.net import api_client

__all__ = ["PROVIDERS", "SearchInput", "SearchOutput", "SearchResult", "SearchStatus", "WebSearchTool"]

PROVIDERS = ("udm", "searxng", "brave", "google")
_DOMAIN = r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(/[A-Za-z0-9._~/-]*)?$"


class SearchStatus(StrEnum):
    """Outcome of one search."""

    SUCCESS = "SUCCESS"
    ERROR_API_FAILURE = "ERROR_API_FAILURE"
    ERROR_RATE_LIMIT = "ERROR_RATE_LIMIT"
    ERROR_UNKNOWN = "ERROR_UNKNOWN"


class SearchInput(ToolInput):
    """A search query."""

    query: str = Field(min_length=1, max_length=2000, description="The search query.")
    numResults: int = Field(default=5, ge=1, le=50, description="Most results to return.")
    site: str | None = Field(
        default=None,
        min_length=1,
        max_length=253,
        pattern=_DOMAIN,
        description="Restrict to one domain (e.g. docs.duckdb.org); for the udm provider, a file path prefix.",
    )


class SearchResult(BaseModel):
    """One search result."""

    title: str = Field(description="The result's title.")
    link: str = Field(description="Its URL (udm://file#Lline for the manual's own index).")
    snippet: str = Field(description="A short excerpt, plain text.")


class SearchOutput(BaseModel):
    """The results of one search."""

    searchQueryExecuted: str = Field(description="The query string actually sent to the provider.")
    status: SearchStatus = Field(description="Outcome of the search.")
    results: list[SearchResult] = Field(default_factory=list, description="Results, best first.")
    errorDetails: str | None = Field(default=None, description="What went wrong; null on success.")
    provider: str = Field(default="", description="The provider that answered.")


def _plain(text: Any) -> str:
    """Provider snippets carry <strong> highlights and entities: plain text only."""
    return html.unescape(re.sub(r"<[^>]+>", "", str(text or ""))).strip()


def _failure(
    status: SearchStatus, message: str, transient: bool, retry_after: float | None = None
) -> ToolStatusError:
    """A failed provider call: its status, and whether retrying may help."""
    return ToolStatusError(status, message, transient=transient, retry_after=retry_after)


def _get(settings: Settings, url: str, params: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    from udm.net import parse_retry_after

    try:
        resp = api_client(settings, {"Accept": "application/json"}).get(url, params=params, headers=headers)
    except httpx.TimeoutException as exc:
        raise _failure(
            SearchStatus.ERROR_API_FAILURE, f"search API timed out: {type(exc).__name__}", True
        ) from exc
    except httpx.HTTPError as exc:
        # The exception text may hold the URL and so a key: keep only its type and a redacted message.
        raise _failure(
            SearchStatus.ERROR_API_FAILURE,
            redact(f"search API unreachable: {type(exc).__name__}: {exc}"),
            True,
        ) from exc
    if resp.status_code == 429:
        raise _failure(
            SearchStatus.ERROR_RATE_LIMIT,
            "search API rate limit reached (HTTP 429)",
            True,
            parse_retry_after(resp.headers.get("retry-after")),
        )
    if resp.status_code >= 500:
        raise _failure(
            SearchStatus.ERROR_API_FAILURE, f"search API failed with HTTP {resp.status_code}", True
        )
    if resp.status_code >= 400:
        detail = redact(resp.text[:300].replace("\n", " "))
        raise _failure(
            SearchStatus.ERROR_API_FAILURE,
            f"search API refused the request: HTTP {resp.status_code}: {detail}",
            False,
        )
    try:
        return resp.json()
    except ValueError as exc:
        raise _failure(
            SearchStatus.ERROR_API_FAILURE, "search API answered with something that is not JSON", False
        ) from exc


def _results(items: Iterable[Any], link_key: str, snippet_key: str) -> Iterator[SearchResult]:
    """Results from an engine's items, which differ only in the names of the link and snippet fields."""
    for r in items:
        if isinstance(r, dict) and r.get(link_key):
            yield SearchResult(
                title=_plain(r.get("title")), link=str(r[link_key]), snippet=_plain(r.get(snippet_key))
            )


def _add_new(out: list[SearchResult], seen: set[str], found: Iterable[SearchResult]) -> int:
    """Append the results whose link is new; how many were. Engines repeat links across pages."""
    added = 0
    for result in found:
        key = result.link.split("#", 1)[0].rstrip("/")
        if key not in seen:
            seen.add(key)
            out.append(result)
            added += 1
    return added


def _searxng(settings: Settings, query: str, n: int) -> list[SearchResult]:
    if not settings.searxng_url:
        raise _failure(SearchStatus.ERROR_API_FAILURE, "the searxng provider needs UDM_SEARXNG_URL", False)
    base = settings.searxng_url.rstrip("/")
    out: list[SearchResult] = []
    seen: set[str] = set()
    for page in range(1, 6):  # SearXNG pages hold about 20 results and take no count parameter
        params: dict[str, Any] = {"q": query, "format": "json"}
        if page > 1:
            params["pageno"] = page
        data = _get(settings, f"{base}/search", params)
        items = data.get("results") if isinstance(data, dict) else None
        if not items:
            break
        added = _add_new(out, seen, _results(items, "url", "content"))
        if len(out) >= n or not added:
            break
    return out[:n]


def _brave(settings: Settings, query: str, n: int) -> list[SearchResult]:
    key = api_key(settings, "brave")
    if not key:
        raise _failure(
            SearchStatus.ERROR_API_FAILURE,
            "the brave provider needs UDM_BRAVE_API_KEY (or BRAVE_API_KEY)",
            False,
        )
    url = settings.brave_api_url.rstrip("/") + "/res/v1/web/search"
    headers = {"X-Subscription-Token": key, "Accept": "application/json"}
    out: list[SearchResult] = []
    seen: set[str] = set()
    offset = 0
    count = min(20, n)  # Brave: count at most 20 per page; offset counts pages of `count` (at most 9)
    while len(out) < n and offset <= 9:
        params: dict[str, Any] = {"q": query, "count": count}
        if offset:
            params["offset"] = offset
        data = _get(settings, url, params, headers)
        items = ((data.get("web") or {}).get("results") if isinstance(data, dict) else None) or []
        if not items:
            break
        added = _add_new(out, seen, _results(items, "url", "description"))
        if not added:
            break
        offset += 1
    return out[:n]


def _google(settings: Settings, query: str, n: int) -> list[SearchResult]:
    key = api_key(settings, "google")
    if not key or not settings.google_cx:
        raise _failure(
            SearchStatus.ERROR_API_FAILURE,
            "the google provider needs UDM_GOOGLE_API_KEY and UDM_GOOGLE_CX",
            False,
        )
    url = settings.google_api_url.rstrip("/") + "/customsearch/v1"
    out: list[SearchResult] = []
    seen: set[str] = set()
    start = 1
    while len(out) < n and start <= 91:  # the API serves at most 100 results
        num = min(10, n - len(out))
        data = _get(
            settings, url, {"key": key, "cx": settings.google_cx, "q": query, "num": num, "start": start}
        )
        items = (data.get("items") if isinstance(data, dict) else None) or []
        added = _add_new(out, seen, _results(items, "link", "snippet"))
        if len(items) < num or not added:
            break
        start += num
    return out[:n]


def _udm(settings: Settings, query: str, n: int, prefix: str | None) -> list[SearchResult]:
    from udm.index import get_query

    hits = get_query(settings).search(query, limit=n * 4 if prefix else n)
    out = [
        SearchResult(title=h.path or h.title, link=f"udm://{h.file}#L{h.line}", snippet=h.snippet)
        for h in hits
        if not prefix or h.file.startswith(prefix.strip("/"))
    ]
    return out[:n]


def _executed(data: SearchInput, provider: str) -> str:
    """The query as sent: a site restriction joins it for the web providers."""
    query = data.query.strip()
    return f"{query} site:{data.site}" if data.site and provider != "udm" else query


class WebSearchTool(Tool[SearchInput, SearchOutput]):
    """Search the web (SearXNG, Brave, Google) or the manual's own index."""

    name: ClassVar[str] = "webSearchTool"
    description: ClassVar[str] = (
        "Searches the web through the configured provider (SearXNG, Brave Search or Google "
        "Programmable Search), or the manual's own index with the udm provider, and returns titles, "
        "links and snippets, best first. Can restrict the search to one site."
    )
    Input: ClassVar[type[BaseModel]] = SearchInput
    Output: ClassVar[type[BaseModel]] = SearchOutput
    permission: ClassVar[Permission] = Permission.SAFE

    def execute(self, data: SearchInput, ctx: ToolContext) -> SearchOutput:
        """Run the query on the configured provider."""
        settings = ctx.settings
        provider = settings.search_provider.strip().lower()
        executed = _executed(data, provider)
        out = SearchOutput(searchQueryExecuted=executed, status=SearchStatus.SUCCESS, provider=provider)
        # A provider's failure raises a ToolStatusError; call_tool makes it this tool's `failed` Output.
        if provider == "searxng":
            out.results = _searxng(settings, executed, data.numResults)
        elif provider == "brave":
            out.results = _brave(settings, executed, data.numResults)
        elif provider == "google":
            out.results = _google(settings, executed, data.numResults)
        elif provider == "udm":
            out.results = _udm(settings, executed, data.numResults, data.site)
        else:
            out.status = SearchStatus.ERROR_UNKNOWN
            out.errorDetails = (
                f"unknown search provider '{provider}' (expected one of {', '.join(PROVIDERS)})"
            )
        return out

    def error_details(self, exc: BaseException) -> str:
        """The provider's message without any key it may hold."""
        return redact(str(exc))

    def failed(
        self, data: SearchInput, ctx: ToolContext, status: str, details: str, **fields: Any
    ) -> SearchOutput:
        """A failed search still names the query it ran and the provider."""
        provider = ctx.settings.search_provider.strip().lower()
        return SearchOutput(
            searchQueryExecuted=_executed(data, provider),
            status=SearchStatus(status),
            provider=provider,
            errorDetails=details,
            **fields,
        )
