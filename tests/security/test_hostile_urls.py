"""Hostile URLs (#17.8): a malformed URL is invalid input that names it, never an internal error.

`{"url": "http://[::1"}` reached `urlsplit`, which raises ValueError on unbalanced or non-IPv6
brackets (and `.port` on a bad port); the fetch tool answered "internal error". Every URL parse of
outside input now goes through `udm.net.guard.split_url` (or `join_url` for a redirect or a link
resolved against a base).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from flows.research_report import canonical_url
from tasks.base import ToolContext, call_tool
from tasks.browser.session import ActionError, normalize_url
from tasks.documents import DocumentFetchingParsingTool
from tests.fakes.loopback import loopback_server
from udm.config import Settings, load_settings
from udm.errors import InvalidURLError
from udm.index.links import check_external
from udm.net import join_url, split_url
from udm.verify import resolve_url

MALFORMED = [
    "http://[::1",
    "http://[::1/x",
    "https://[abc]/",
    "http://[::1]x/",
    "http://[v1.fe]/",
    "http://]::1[/",
    "http://host:port/",
    "http://host:99999/",
    "https://host:-1/",
    "http://[::1]:65536/",
    "http://ex\x00ample.com/",
    "http://example.com/\r\nX-Injected: 1",
    "http://exa mple.com/",
    "http://",
    "ftp://example.com/",
]


@pytest.mark.parametrize("url", MALFORMED)
def test_split_url_names_the_url(url: str) -> None:
    with pytest.raises(InvalidURLError) as err:
        split_url(url)
    assert repr(url)[:40] in str(err.value) or url[:20] in str(err.value)


@pytest.mark.parametrize(
    "url",
    [
        "http://[::1]:8080/x?q=[1]#frag",
        "https://user:pw@[2001:db8::1]/",
        "https://example.com/a b",
        "https://bücher.de/",
        "http://127.0.0.1:0/",
        "https://example.com:443",
    ],
)
def test_split_url_accepts_good_urls(url: str) -> None:
    assert split_url(url).hostname


@pytest.fixture
def fctx(workspace: Path) -> ToolContext:
    """A fetch context that may reach 127.0.0.1 only."""
    from udm.net import clear_fetch_state

    clear_fetch_state()
    settings = load_settings(
        cwd=workspace, fetch_allow=["127.0.0.1"], fetch_timeout_s=2.0, fetch_host_delay_s=0.0
    )
    return ToolContext(settings=settings, log=False)


@pytest.mark.parametrize("url", [u for u in MALFORMED if not u.startswith(("ftp", "http://exa"))])
def test_the_fetch_tool_answers_invalid_input_naming_the_url(fctx: ToolContext, url: str) -> None:
    env = call_tool(DocumentFetchingParsingTool(), {"url": url}, fctx).envelope
    assert env.data is not None, env.error
    assert env.data["status"] == "ERROR_INVALID_INPUT", env.data
    assert "internal error" not in (env.error or "")
    shown = url.strip()
    assert repr(shown)[1:20] in env.data["errorDetails"] or shown[:15] in env.data["errorDetails"]


def test_the_reported_case(fctx: ToolContext) -> None:
    env = call_tool(DocumentFetchingParsingTool(), {"url": "http://[::1"}, fctx).envelope
    assert env.data is not None
    assert env.data["status"] == "ERROR_INVALID_INPUT"
    assert env.data["errorDetails"] == "invalid URL 'http://[::1': Invalid IPv6 URL"


@pytest.fixture
def redirecting() -> Iterator[str]:
    """A loopback server whose every page redirects to a malformed Location."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.path == "/robots.txt":
                self.send_response(404)
                self.end_headers()
                return
            self.send_response(302)
            self.send_header("Location", "http://[::1")
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_HEAD = do_GET

    with loopback_server(Handler) as base:
        yield base


def test_a_redirect_to_a_malformed_url_is_a_fetch_failure(fctx: ToolContext, redirecting: str) -> None:
    env = call_tool(DocumentFetchingParsingTool(), {"url": redirecting + "/page"}, fctx).envelope
    assert env.data is not None, env.error
    assert env.data["status"] == "ERROR_FETCH_FAILED", env.data
    # httpx itself refuses the Location before our own join_url sees it; either way it is named.
    assert "location" in env.data["errorDetails"].lower(), env.data


def test_links_with_malformed_urls_are_broken_not_a_crash(settings: Settings, redirecting: str) -> None:
    settings = load_settings(settings.project_root, fetch_allow=["127.0.0.1"])
    verdicts = asyncio.run(
        check_external(
            ["http://[::1", "https://[zz]/", redirecting + "/x"], settings, use_cache=False, retries=0
        )
    )
    assert verdicts["http://[::1"].status == "broken"
    assert "invalid link 'http://[::1'" in (verdicts["http://[::1"].reason or "")
    assert verdicts["https://[zz]/"].status == "broken"
    assert verdicts[redirecting + "/x"].status in ("broken", "error")
    assert "location" in (verdicts[redirecting + "/x"].reason or "").lower()


def test_browser_report_and_verify_spec_urls(settings: Settings) -> None:
    for url in ("http://[::1", "https://[abc]/", "http://h:99999/", "[::1", "file://[::1/x"):
        with pytest.raises(ActionError) as err:
            normalize_url(url, settings)
        assert err.value.status == "ERROR_INVALID_INPUT", url
    assert normalize_url("http://[::1]:8080/", settings) == "http://[::1]:8080/"
    assert canonical_url("http://[::1") == "http://[::1"
    assert resolve_url("x]/y", "http://[::1")[0] is None
    assert "invalid url" in (resolve_url("/a", "http://[::1")[1] or "")


# ------------------------------------------------------------------------------ property tests

_URLISH = st.builds(
    lambda scheme, sep, body: scheme + sep + body,
    st.sampled_from(["http", "https", "HTTP", "ftp", "file", "", "h"]),
    st.sampled_from(["://", ":", ":/", "", "//"]),
    st.text(alphabet="[]:@/?#%.-_0123456789abcdefABCDEF vx\x00\t\n\u2028é", max_size=40),
)


@hsettings(max_examples=400, deadline=None)
@given(url=_URLISH)
def test_split_url_raises_only_invalid_url_error(url: str) -> None:
    try:
        parts = split_url(url, schemes=None)
    except InvalidURLError as exc:
        assert str(exc)
        return
    # What it accepts, every later step reads without an error of its own.
    _ = (parts.hostname, parts.port, parts.netloc)
    join_url(url, "../x") if "://" in url else None


@hsettings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(url=_URLISH)
def test_the_fetch_tool_never_answers_internal_error(
    url: str, fctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Whatever passes validation would be fetched; here it stops at the fetch, so no test leaves
    # 127.0.0.1 (the tool's own validation is what is under test).
    import udm.net.fetching as fetching

    passed: list[str] = []

    def no_network(target: str, settings: Settings, max_bytes: int) -> Any:
        passed.append(target)
        raise fetching.FetchError("not fetched in this test", url=target)

    monkeypatch.setattr(fetching, "fetch_url", no_network)
    env = call_tool(DocumentFetchingParsingTool(), {"url": url}, fctx).envelope
    assert "internal error" not in (env.error or "")
    if env.data is None:  # refused by the input model (an empty URL)
        assert (env.error or "").startswith("invalid input"), env.error
        return
    assert env.data["status"] in ("ERROR_INVALID_INPUT", "ERROR_FETCH_FAILED"), env.data
    for target in passed:
        assert split_url(target).hostname  # only well-formed http(s) URLs reach the fetch


def test_a_page_with_malformed_links_and_images_still_answers(tmp_path: Path) -> None:
    # A page's href and src may be any text; Chromium hands back what it cannot parse as written.
    from tasks.base import always_approve, run_coroutine
    from tasks.browser.catalog import browser_tool
    from tasks.browser.session import MANAGER

    (tmp_path / "docs" / "udm").mkdir(parents=True)
    ctx = ToolContext(settings=load_settings(cwd=tmp_path), approver=always_approve, log=False)
    page = (
        "data:text/html,<a href='http://[::1'>a</a><a href='https://[zz]/'>b</a>"
        "<a href='https://example.invalid/ok'>c</a><img id='i' src='http://[::1'>"
    )
    session = "hostile-urls"

    def run(name: str, data: dict[str, Any]) -> dict[str, Any]:
        tool = browser_tool(name)
        assert tool is not None
        return call_tool(tool, {"session_id": session, **data}, ctx).envelope.model_dump()

    try:
        assert run("navigate_to_url", {"url": page})["success"]
        for scope in ("all", "internal", "external"):
            env = run("getLinks", {"scope": scope})
            assert env["success"], env
        external = run("getLinks", {"scope": "external"})["data"]["links"]
        assert "https://example.invalid/ok" in [lk["href"] for lk in external]
        bad = run("navigate_to_url", {"url": "http://[::1"})
        assert not bad["success"] and "ERROR_INVALID_INPUT" in (bad["error"] or ""), bad
        assert "http://[::1" in bad["error"]
        cookies = run("browser_cookies", {"domain": "http://[::1"})
        assert not cookies["success"] and "invalid domain 'http://[::1'" in (cookies["error"] or ""), cookies
    finally:
        run_coroutine(MANAGER.close_session(session), timeout=30)
