"""The browser tools under the SSRF guard: every request a page makes is vetted with the fetch allow-list.

Two loopback servers: the "allowed" site on 127.0.0.1 (allow-listed where a test needs a page to
start from) and the "forbidden" one on 127.0.0.2, a loopback address nobody allow-lists. The
forbidden server counts every connection it accepts: each attack must leave that count at zero.
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from tasks.base import ToolContext, always_approve, call_tool, run_coroutine
from tasks.browser.catalog import browser_tool
from tasks.browser.session import MANAGER
from tests.fakes.loopback import QuietServer, start
from udm.config import load_settings

pytestmark = pytest.mark.browser

SECRET = "TOP-SECRET-INTERNAL-PAGE"


class _Counting(QuietServer):
    """A server that counts the connections it accepts (before any request is read)."""

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self.connections = 0

    def verify_request(self, request: Any, client_address: Any) -> bool:
        """Count, then serve."""
        self.connections += 1
        return True


def _handler(pages: Callable[[str], tuple[int, dict[str, str], bytes]]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            """No access log."""

        def do_GET(self) -> None:
            """Answer from `pages`."""
            status, headers, body = pages(self.path)
            self.send_response(status)
            for key, value in {"Content-Type": "text/html", **headers}.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[str, str, _Counting]]:
    """(allowed base URL on 127.0.0.1, forbidden base URL on 127.0.0.2, the forbidden server)."""
    forbidden = _Counting(
        ("127.0.0.2", 0),
        _handler(
            lambda path: (200, {"Content-Disposition": 'attachment; filename="x.csv"'}, SECRET.encode())
        ),
    )
    bad = f"http://127.0.0.2:{forbidden.server_address[1]}"
    pages = {
        "/": "<title>Allowed</title><h1>allowed page</h1>",
        "/sub": f"<title>Sub</title><img src='{bad}/secret.png'><script>fetch('{bad}/secret')"
        ".then(r => r.text()).then(t => document.title = t).catch(e => document.title = 'fetch failed')</script>",
        "/popup": f"<title>Popup</title><button id='open' onclick=\"window.open('{bad}/secret')\">open</button>",
        "/ws": f"<title>ws</title><script>const ws = new WebSocket('{bad.replace('http', 'ws')}/ws');"
        "ws.onopen = () => document.title = 'open'; ws.onclose = e => document.title = 'closed ' + e.code;</script>",
        "/dl": f"<title>Downloads</title><a id='dl' href='{bad}/x.csv' download>file</a>",
    }

    def allowed_pages(path: str) -> tuple[int, dict[str, str], bytes]:
        if path.startswith("/redirect"):
            return 302, {"Location": f"{bad}/secret"}, b""
        return 200, {}, pages.get(path, "").encode()

    allowed = _Counting(("127.0.0.1", 0), _handler(allowed_pages))
    for server in (forbidden, allowed):
        start(server)
    try:
        yield f"http://127.0.0.1:{allowed.server_address[1]}", bad, forbidden
    finally:
        for server in (forbidden, allowed):
            server.shutdown()
            server.server_close()


def _ctx(tmp_path: Path, allow: list[str]) -> ToolContext:
    (tmp_path / "docs" / "udm").mkdir(parents=True, exist_ok=True)
    return ToolContext(settings=load_settings(cwd=tmp_path, fetch_allow=allow), approver=always_approve)


@pytest.fixture
def sid(request: pytest.FixtureRequest) -> Iterator[str]:
    """A session of its own for each test, closed afterwards."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name)[:80]
    yield name
    run_coroutine(MANAGER.close_session(name), timeout=30)


def _call(name: str, data: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    tool = browser_tool(name)
    assert tool is not None, name
    out: dict[str, Any] = call_tool(tool, data, ctx).envelope.model_dump()["data"]
    return out


def _eventually(predicate: Callable[[], bool], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _refusals(sid: str) -> list[Any]:
    session = MANAGER.sessions[sid]
    assert session.guard is not None
    return list(session.guard.refusals)


def test_navigation_to_loopback_is_refused_with_an_empty_allow_list(servers, sid, tmp_path) -> None:  # type: ignore[no-untyped-def]
    allowed, _bad, _forbidden = servers
    ctx = _ctx(tmp_path, [])
    for url in (allowed + "/", allowed.replace("127.0.0.1", "localhost") + "/"):
        out = _call("navigate_to_url", {"url": url, "session_id": sid}, ctx)
        assert out["status"] == "ERROR_URL_BLOCKED", out
        assert "loopback" in out["errorDetails"] and "UDM_FETCH_ALLOW" in out["errorDetails"]
    text = _call("browser_read_page", {"session_id": sid}, ctx)
    assert "allowed page" not in str(text)


def test_a_download_is_refused_and_nothing_is_saved(servers, sid, tmp_path) -> None:  # type: ignore[no-untyped-def]
    allowed, bad, forbidden = servers
    before = forbidden.connections
    empty = _ctx(tmp_path, [])
    into = {"session_id": sid, "save_path": str(tmp_path / "docs" / "udm") + "/"}
    out = _call("browser_download", {"url": allowed + "/", **into}, empty)
    assert out["status"] == "ERROR_URL_BLOCKED" and "loopback" in out["errorDetails"], out
    ctx = _ctx(tmp_path, ["127.0.0.1"])
    # Directly, through a redirect from an allowed host, and by clicking a download link.
    for data in (
        {"url": bad + "/x.csv"},
        {"url": allowed + "/redirect-to-file"},
    ):
        out = _call("browser_download", {**data, **into}, ctx)
        assert out["status"] == "ERROR_URL_BLOCKED", out
    assert _call("navigate_to_url", {"url": allowed + "/dl", "session_id": sid}, ctx)["status"] == "SUCCESS"
    out = _call("browser_download", {"selector": "#dl", "timeout_ms": 3000, **into}, ctx)
    assert out["status"] == "ERROR_URL_BLOCKED", out
    assert forbidden.connections == before
    saved = [p for p in tmp_path.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert saved == []


def test_a_subresource_on_a_loopback_host_is_blocked(servers, sid, tmp_path) -> None:  # type: ignore[no-untyped-def]
    allowed, bad, forbidden = servers
    before = forbidden.connections
    ctx = _ctx(tmp_path, ["127.0.0.1"])
    out = _call("navigate_to_url", {"url": allowed + "/sub", "session_id": sid}, ctx)
    assert out["status"] == "SUCCESS", out  # the page itself is allowed
    assert _eventually(lambda: len({r.url for r in _refusals(sid)}) >= 2)
    assert {r.url for r in _refusals(sid)} >= {bad + "/secret.png", bad + "/secret"}
    page_title = _call("browser_read_page", {"session_id": sid}, ctx)
    assert SECRET not in str(page_title)
    assert forbidden.connections == before


def test_a_redirect_from_an_allowed_host_to_loopback_is_blocked(servers, sid, tmp_path) -> None:  # type: ignore[no-untyped-def]
    allowed, bad, forbidden = servers
    before = forbidden.connections
    ctx = _ctx(tmp_path, ["127.0.0.1"])
    # Playwright does not route redirect hops: the context's guard proxy refuses this one.
    out = _call("navigate_to_url", {"url": allowed + "/redirect", "session_id": sid}, ctx)
    assert out["status"] == "ERROR_URL_BLOCKED", out
    assert bad + "/secret" in out["errorDetails"] and "loopback" in out["errorDetails"]
    assert forbidden.connections == before


def test_window_open_to_loopback_is_refused(servers, sid, tmp_path) -> None:  # type: ignore[no-untyped-def]
    allowed, bad, forbidden = servers
    before = forbidden.connections
    ctx = _ctx(tmp_path, ["127.0.0.1"])
    assert (
        _call("navigate_to_url", {"url": allowed + "/popup", "session_id": sid}, ctx)["status"] == "SUCCESS"
    )
    _call("clickElement", {"selector_type": "css", "selector_value": "#open", "session_id": sid}, ctx)
    assert _eventually(lambda: any(r.navigation and r.url == bad + "/secret" for r in _refusals(sid)))
    for page in MANAGER.sessions[sid].context.pages:
        assert SECRET not in run_coroutine(page.content(), timeout=10)
    assert forbidden.connections == before


def test_a_websocket_to_loopback_is_refused(servers, sid, tmp_path) -> None:  # type: ignore[no-untyped-def]
    allowed, bad, forbidden = servers
    before = forbidden.connections
    ctx = _ctx(tmp_path, ["127.0.0.1"])
    assert _call("navigate_to_url", {"url": allowed + "/ws", "session_id": sid}, ctx)["status"] == "SUCCESS"
    page = MANAGER.sessions[sid].page()[1]
    assert _eventually(lambda: run_coroutine(page.title(), timeout=10).startswith("closed"))
    assert run_coroutine(page.title(), timeout=10) == "closed 1008"
    assert any(r.url == bad.replace("http", "ws") + "/ws" for r in _refusals(sid))
    assert forbidden.connections == before


def test_verification_contexts_refuse_the_same_requests(servers, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tasks.browser.verify import run_checks_sync
    from udm.verify import Check

    allowed, _bad, forbidden = servers
    before = forbidden.connections
    settings = _ctx(tmp_path, ["127.0.0.1"]).settings
    checks = [
        # Verification contexts leave WebSockets to the guard proxy: refused at CONNECT (close 1006).
        Check.model_validate({"id": "CHK-WS", "url": "/ws", "timeout": 5, "expect": [{"title": "closed"}]}),
        Check.model_validate(
            {"id": "CHK-REDIRECT", "url": "/redirect", "timeout": 2, "expect": [{"status": 200}]}
        ),
        Check.model_validate({"id": "CHK-SUB", "url": "/sub", "hosts": ["*"], "expect": [{"exists": "img"}]}),
    ]
    results = {r.id: r for r in run_checks_sync(checks, settings, base_url=allowed, concurrency=3)}
    assert results["CHK-WS"].status == "PASS", results["CHK-WS"].reason
    assert results["CHK-REDIRECT"].status == "FAIL" and "ERROR_URL_BLOCKED" in (
        results["CHK-REDIRECT"].reason or ""
    )
    assert results["CHK-SUB"].status == "PASS", results["CHK-SUB"].reason
    assert forbidden.connections == before


def _through_proxy(proxy_url: str, request: bytes) -> bytes:
    host, port = proxy_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        chunks = []
        while data := sock.recv(65536):
            chunks.append(data)
    return b"".join(chunks)


def test_the_guard_proxy_refuses_by_address_whatever_routing_saw(servers, sid, tmp_path) -> None:  # type: ignore[no-untyped-def]
    allowed, bad, forbidden = servers
    before = forbidden.connections
    ctx = _ctx(tmp_path, ["127.0.0.1"])
    assert _call("navigate_to_url", {"url": allowed + "/", "session_id": sid}, ctx)["status"] == "SUCCESS"
    guard = MANAGER.sessions[sid].guard
    assert guard is not None
    host_port = bad.removeprefix("http://")
    # What a worker, a service worker or a redirect hop would send: the proxy is the last word.
    refused = _through_proxy(
        guard.proxy_url, f"GET {bad}/secret HTTP/1.1\r\nHost: {host_port}\r\n\r\n".encode()
    )
    assert refused.startswith(b"HTTP/1.1 403") and b"loopback" in refused and SECRET.encode() not in refused
    tunnel = _through_proxy(
        guard.proxy_url, f"CONNECT {host_port} HTTP/1.1\r\nHost: {host_port}\r\n\r\n".encode()
    )
    assert tunnel.startswith(b"HTTP/1.1 403")
    ok = _through_proxy(guard.proxy_url, f"GET {allowed}/ HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    assert ok.startswith(b"HTTP/1.0 200") and b"allowed page" in ok and b"Connection: close" in ok
    assert forbidden.connections == before


def test_a_local_page_cannot_pull_in_files_outside_the_allowed_directories(sid, tmp_path) -> None:  # type: ignore[no-untyped-def]
    ctx = _ctx(tmp_path, [])
    outside = tmp_path / "outside-secret.txt"
    outside.write_text(SECRET, encoding="utf-8")
    inside = tmp_path / "docs" / "udm" / "page.html"
    inside.write_text(
        f"<title>local</title><iframe id='f' src='{outside.as_uri()}'></iframe><img src='{outside.as_uri()}'>",
        encoding="utf-8",
    )
    out = _call("navigate_to_url", {"url": inside.as_uri(), "session_id": sid}, ctx)
    assert out["status"] == "SUCCESS", out  # the page itself lies in the manual's folder
    assert _eventually(lambda: any(r.url == outside.as_uri() for r in _refusals(sid)))
    assert all("outside the allowed directories" in r.reason for r in _refusals(sid))
    page = MANAGER.sessions[sid].page()[1]
    frames = [run_coroutine(f.content(), timeout=10) for f in page.frames]
    assert not any(SECRET in text for text in frames)
