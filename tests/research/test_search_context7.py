"""webSearchTool and context7DocumentationTool against loopback servers speaking the real API formats."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tasks.base import ToolContext, TransientToolError, call_tool
from tasks.context7 import CHARS_PER_TOKEN, Context7DocumentationTool, cap_tokens
from tasks.web_search import WebSearchTool
from udm.config import load_settings

SEARCH = WebSearchTool()
C7 = Context7DocumentationTool()


def ctx_for(workspace: Path, **overrides: Any) -> ToolContext:
    return ToolContext(settings=load_settings(cwd=workspace, fetch_timeout_s=2.0, **overrides))


def data(result: Any) -> dict[str, Any]:
    assert result.envelope.data is not None, result.envelope.error
    return dict(result.envelope.data)


def test_searxng_format_and_site_filter(api, workspace: Path) -> None:
    ctx = ctx_for(workspace, search_provider="searxng", searxng_url=api.base)
    out = data(call_tool(SEARCH, {"query": "duckdb fts", "numResults": 3, "site": "duckdb.org"}, ctx))
    assert out["status"] == "SUCCESS" and out["provider"] == "searxng"
    assert out["searchQueryExecuted"] == "duckdb fts site:duckdb.org"
    assert [r["title"] for r in out["results"]] == ["SearX result 0", "SearX result 1", "SearX result 2"]
    assert out["results"][0] == {
        "title": "SearX result 0",
        "link": "https://searx0.example/page",
        "snippet": "snippet 0",
    }
    req = api.requests[-1]
    assert req["path"] == "/search" and req["params"] == {"q": "duckdb fts site:duckdb.org", "format": "json"}


def test_searxng_pages_are_merged_without_repeated_links(api, workspace: Path) -> None:
    ctx = ctx_for(workspace, search_provider="searxng", searxng_url=api.base)
    out = data(call_tool(SEARCH, {"query": "duckdb fts", "numResults": 30}, ctx))
    links = [r["link"] for r in out["results"]]
    # Three pages of 8 overlapping by 2 hold 20 distinct results, in rank order.
    assert links == [f"https://searx{i}.example/page" for i in range(20)]
    pages = [r["params"].get("pageno", "1") for r in api.requests if r["path"] == "/search"]
    assert pages == ["1", "2", "3", "4"]


def test_brave_header_key_and_plain_snippets(api, workspace: Path) -> None:
    ctx = ctx_for(
        workspace, search_provider="brave", brave_api_url=api.base, brave_api_key="brave-secret-key"
    )
    out = data(call_tool(SEARCH, {"query": "bm25", "numResults": 4}, ctx))
    assert out["status"] == "SUCCESS" and len(out["results"]) == 4
    assert out["results"][1] == {"title": "Brave 1", "link": "https://brave1.example/", "snippet": "desc 1"}
    req = api.requests[-1]
    assert req["path"] == "/res/v1/web/search" and req["params"] == {"q": "bm25", "count": "4"}
    assert req["headers"]["X-Subscription-Token"] == "brave-secret-key"


def test_google_paginates_with_start(api, workspace: Path) -> None:
    ctx = ctx_for(
        workspace,
        search_provider="google",
        google_api_url=api.base,
        google_api_key="google-secret-key",
        google_cx="cx123",
    )
    out = data(call_tool(SEARCH, {"query": "pypdf", "numResults": 23}, ctx))
    assert out["status"] == "SUCCESS" and len(out["results"]) == 23
    assert out["results"][0]["link"] == "https://g1.example/" and out["results"][0]["snippet"] == "gsnippet 1"
    pages = [r["params"] for r in api.requests if r["path"] == "/customsearch/v1"]
    assert [(p["start"], p["num"]) for p in pages] == [("1", "10"), ("11", "10"), ("21", "3")]


def test_keys_never_leak_into_errors_or_logs(api, workspace: Path) -> None:
    ctx = ctx_for(
        workspace,
        search_provider="google",
        google_api_url=api.base,
        google_api_key="google-wrong-key-123",
        google_cx="cx123",
    )
    out = data(call_tool(SEARCH, {"query": "x"}, ctx))
    assert out["status"] == "ERROR_API_FAILURE" and "400" in out["errorDetails"]
    assert "google-wrong-key-123" not in out["errorDetails"]
    # A connection failure: httpx's message would carry the URL with the key in its query string.
    dead = ctx_for(
        workspace,
        search_provider="google",
        google_api_url="http://127.0.0.1:9",
        google_api_key="google-wrong-key-123",
        google_cx="cx123",
    )
    with pytest.raises(TransientToolError) as exc:
        call_tool(SEARCH, {"query": "x"}, dead, raise_transient=True)
    assert "google-wrong-key-123" not in str(exc.value)
    logs = (workspace / "logs" / "tool-calls.jsonl").read_text()
    assert "google-wrong-key-123" not in logs and "webSearchTool" in logs


def test_missing_key_is_a_clear_permanent_error(workspace: Path) -> None:
    out = data(call_tool(SEARCH, {"query": "x"}, ctx_for(workspace, search_provider="brave")))
    assert out["status"] == "ERROR_API_FAILURE" and "UDM_BRAVE_API_KEY" in out["errorDetails"]
    unknown = data(call_tool(SEARCH, {"query": "x"}, ctx_for(workspace, search_provider="bing")))
    assert unknown["status"] == "ERROR_UNKNOWN"


def test_rate_limit_and_server_errors_are_transient(api, workspace: Path) -> None:
    ctx = ctx_for(workspace, search_provider="searxng", searxng_url=api.base)
    api.mode["/search"] = "429"
    with pytest.raises(TransientToolError) as exc:
        call_tool(SEARCH, {"query": "x"}, ctx, raise_transient=True)
    assert exc.value.retry_after == 1.0
    assert exc.value.result.status == "ERROR_RATE_LIMIT"  # type: ignore[attr-defined]
    assert data(call_tool(SEARCH, {"query": "x"}, ctx))["status"] == "SUCCESS"
    api.mode["/search"] = "500"
    final = data(call_tool(SEARCH, {"query": "x"}, ctx))
    assert final["status"] == "ERROR_API_FAILURE" and "500" in final["errorDetails"]


def test_udm_provider_searches_the_manual(workspace: Path) -> None:
    ctx = ctx_for(workspace)
    out = data(call_tool(SEARCH, {"query": "full-text search DuckDB", "numResults": 3}, ctx))
    assert out["status"] == "SUCCESS" and out["provider"] == "udm" and out["results"]
    assert out["results"][0]["link"].startswith("udm://")
    only = data(call_tool(SEARCH, {"query": "DuckDB", "site": "appendices"}, ctx))
    assert only["results"] and all(r["link"].startswith("udm://appendices/") for r in only["results"])


def test_search_input_validation(workspace: Path) -> None:
    bad = call_tool(SEARCH, {"query": "", "numResults": 0}, ctx_for(workspace))
    assert not bad.envelope.success and "query" in (bad.envelope.error or "")
    site = call_tool(SEARCH, {"query": "x", "site": "bad domain!"}, ctx_for(workspace))
    assert "site" in (site.envelope.error or "")


def test_context7_resolve_prefers_exact_name_and_sends_bearer(api, workspace: Path) -> None:
    ctx = ctx_for(workspace, context7_url=api.base, context7_api_key="ctx7sk-secret")
    out = data(
        call_tool(C7, {"action": "resolve_library_id", "libraryName": "Prefect", "topic": "retries"}, ctx)
    )
    assert out["status"] == "SUCCESS" and out["resolvedLibraryID"] == "/acme/prefect"
    assert len(out["candidates"]) == 2
    req = api.requests[-1]
    assert req["params"] == {"libraryName": "Prefect", "query": "retries"}
    assert req["headers"]["Authorization"] == "Bearer ctx7sk-secret"
    missing = data(call_tool(C7, {"action": "resolve_library_id", "libraryName": "nosuchlib"}, ctx))
    assert missing["status"] == "ERROR_LIBRARY_NOT_FOUND"


def test_context7_docs_capped_by_token_estimate(api, workspace: Path) -> None:
    ctx = ctx_for(workspace, context7_url=api.base)
    args = {
        "action": "get_library_docs",
        "context7CompatibleLibraryID": "/acme/prefect",
        "topic": "caching",
        "maxTokens": 500,
    }
    out = data(call_tool(C7, args, ctx))
    assert out["status"] == "SUCCESS" and "Snippet 0 about caching" in out["retrievedDocumentation"]
    assert len(out["retrievedDocumentation"]) <= 500 * CHARS_PER_TOKEN
    assert out["metadata"]["truncation_applied"] is True and out["metadata"]["endpoint"] == "v2/context"
    req = api.requests[-1]
    assert req["path"] == "/api/v2/context"
    assert req["params"] == {"libraryId": "/acme/prefect", "query": "caching", "type": "txt"}
    assert "Authorization" not in req["headers"]


def test_context7_v1_fallback_202_429_and_not_found(api, workspace: Path) -> None:
    ctx = ctx_for(workspace, context7_url=api.base)
    args = {
        "action": "get_library_docs",
        "context7CompatibleLibraryID": "/acme/prefect",
        "topic": "flows",
        "maxTokens": 2000,
    }
    api.mode["/api/v2/context"] = "404"
    v1 = data(call_tool(C7, args, ctx))
    assert v1["status"] == "SUCCESS" and v1["metadata"]["endpoint"] == "v1"
    assert v1["retrievedDocumentation"] == "v1 docs for /acme/prefect topic=flows tokens=2000"
    api.mode["/api/v2/context"] = "202"
    with pytest.raises(TransientToolError, match="not processed"):
        call_tool(C7, args, ctx, raise_transient=True)
    last = data(call_tool(C7, args, ctx))
    assert last["status"] == "ERROR_DOCS_NOT_FOUND"
    api.mode["/api/v2/context"] = "429"
    with pytest.raises(TransientToolError) as limited:
        call_tool(C7, args, ctx, raise_transient=True)
    assert limited.value.retry_after == 1.0
    api.mode["/api/v2/context"] = "ok"
    gone = data(call_tool(C7, {**args, "context7CompatibleLibraryID": "/acme/missing"}, ctx))
    assert gone["status"] == "ERROR_LIBRARY_NOT_FOUND"


def test_context7_connection_error_and_validation(workspace: Path) -> None:
    ctx = ctx_for(workspace, context7_url="http://127.0.0.1:9")
    out = data(call_tool(C7, {"action": "resolve_library_id", "libraryName": "x"}, ctx))
    assert out["status"] == "ERROR_MCP_CONNECTION"
    bad = call_tool(C7, {"action": "get_library_docs"}, ctx)
    assert "context7CompatibleLibraryID" in (bad.envelope.error or "")
    bad_id = call_tool(C7, {"action": "get_library_docs", "context7CompatibleLibraryID": "react"}, ctx)
    assert not bad_id.envelope.success


def test_cap_tokens_cuts_at_boundaries() -> None:
    text = "\n\n".join(f"para {i} " + "x" * 50 for i in range(100))
    cut, truncated = cap_tokens(text, 100)
    assert truncated and len(cut) <= 400 and cut.endswith("x")
    assert cap_tokens("short", 100) == ("short", False)
