"""Browser test fixtures: a loopback site with forms, tables, delays, tabs, downloads, images and a hanging page."""

from __future__ import annotations

import io
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from PIL import Image

from tasks.base import ToolContext, always_approve, call_tool, run_coroutine
from tasks.browser.catalog import browser_tool
from udm.config import load_settings
from udm.index.links import LinkSource


def _png(color: tuple[int, int, int], size: tuple[int, int] = (40, 30)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


PNG = _png((200, 40, 40))

PAGES: dict[str, str] = {
    "/": "<title>Home</title><h1>Test site</h1><p>Hello from the loopback site.</p>",
    "/form": """<title>Sign in</title><h1>Sign in</h1>
<form id="login" action="/home" method="get">
  <label for="user">User</label><input id="user" name="user" required>
  <input id="pw" name="pw" type="password" value="secret">
  <select id="country" name="country"><option value="DE">Germany</option><option value="US">United States</option></select>
  <input type="checkbox" name="remember" value="yes" checked>
  <textarea name="note">hi</textarea>
  <button type="submit">Sign in</button>
</form>""",
    "/table": """<title>Table</title><table class="data"><thead><tr><th>Name</th><th>Count</th></tr></thead>
<tbody><tr><td>alpha</td><td>1</td></tr><tr><td>beta</td><td>2</td></tr></tbody></table>
<table id="nohead"><tr><td>x</td><td>y</td></tr></table>""",
    "/delayed": """<title>Delayed</title><div id="box"></div>
<script>setTimeout(() => { document.getElementById('box').innerHTML = '<p class="late">arrived</p>'; }, 1500);</script>""",
    "/late": """<title>Loading</title><p id="status">loading</p><ul id="items"></ul>
<script>setTimeout(() => {
  const p = document.getElementById('status');
  p.textContent = 'ready'; p.dataset.state = 'done'; document.title = 'Ready';
  document.getElementById('items').innerHTML = '<li>a</li><li>b</li><li>c</li>';
  history.pushState({}, '', '/late?done=1');
}, 500);</script>""",
    "/state": """<title>State</title><p id="prev"></p><script>
document.getElementById('prev').textContent = 'prev:' + (localStorage.getItem('k') || '') + '|' + document.cookie;
localStorage.setItem('k', 'v'); document.cookie = 'c=1; path=/';
setTimeout(() => localStorage.setItem('k', 'late'), 50);
addEventListener('pagehide', () => { localStorage.setItem('k', 'unload'); document.cookie = 'u=1; path=/'; });
</script>""",
    "/a": "<title>Page A</title><h1>A</h1><a id='to-b' href='/b'>to b</a>",
    "/b": "<title>Page B</title><h1>B</h1><a href='/a'>back to a</a>",
    "/tabs": "<title>Tabs</title><a id='newtab' href='/b' target='_blank'>open b in a new tab</a>",
    "/download": "<title>Download</title><a id='dl' href='/files/report.csv' download>report</a>",
    "/images": "<title>Images</title><img id='logo' src='/logo.png' alt='Logo'><img class='thumb' src='/logo.png' alt='Thumb'>",
    "/never": "<title>Never</title><p>waiting forever</p><img src='/hang.png'>",
    "/article": """<html><head><title>Article</title></head><body><nav><a href="/">Home</a> <a href="https://example.invalid/x">Ext</a></nav>
<main><article><h1 id="top">Cache policy</h1><h2>Why</h2>
<p>The gateway caches results for five minutes so that repeated questions answer instantly.</p>
<p>Stale answers are avoided because every source change invalidates the cache entry at once.</p>
<h2 id="how">How</h2><p>Entries are keyed by the normalised question and the index generation.</p>
<p>When the index generation changes, the old entries simply stop matching and expire later.</p>
</article></main><footer>footer text</footer></body></html>""",
    "/cookie": "<title>Cookie</title><script>document.cookie = 'session=abc123; path=/';</script><p>set</p>",
    "/tall": "<title>Tall</title><div style='height:5000px'>top</div><p id='bottom'>bottom</p><button id='hov' onmouseover=\"this.textContent='hovered'\">hover me</button>",
    "/status404": "",
}


class SiteHandler(BaseHTTPRequestHandler):
    """Serves PAGES plus a few special routes; /visual?color=... draws a coloured box."""

    stop: threading.Event

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the access log."""

    def _send(
        self,
        code: int,
        body: bytes,
        ctype: str = "text/html; charset=utf-8",
        extra: dict[str, str] | None = None,
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self) -> None:
        """Same as GET without a body."""
        self.do_GET()

    def do_GET(self) -> None:
        """Route the request."""
        parts = urlsplit(self.path)
        path, query = parts.path, parse_qs(parts.query)
        if path == "/hang.png":
            self.stop.wait(60)  # never answers while the test runs
            return
        if path == "/logo.png":
            return self._send(200, PNG, "image/png")
        if path == "/files/report.csv":
            return self._send(
                200, b"a,b\n1,2\n", "text/csv", {"Content-Disposition": 'attachment; filename="report.csv"'}
            )
        if path == "/home":
            user = query.get("user", [""])[0]
            body = f"<title>Home</title><h1>Welcome {user}</h1><p id='welcome'>signed in</p>"
            return self._send(200, body.encode())
        if path == "/visual":
            color = re.sub(r"[^a-z#0-9]", "", query.get("color", ["navy"])[0])
            body = (
                "<title>Visual</title><style>body{margin:0;background:#fff}"
                f"#box{{width:300px;height:200px;background:{color}}}</style><div id='box'></div>"
            )
            return self._send(200, body.encode())
        if path == "/status404" or path not in PAGES:
            return self._send(404, b"<title>Not found</title><h1>404</h1>")
        return self._send(200, PAGES[path].encode())


@contextmanager
def loopback_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve `handler` on 127.0.0.1 (a thread per request); yields the base URL, shut down on exit."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def external_link(url: str, line: int = 1) -> LinkSource:
    """An external link of a.md, as the link extractor reports one."""
    return LinkSource(file="a.md", line=line, text="t", target=url, kind="external")


@pytest.fixture(scope="session")
def site() -> Iterator[str]:
    """Base URL of the loopback test site (one server for the session)."""
    stop = threading.Event()
    with loopback_server(type("Handler", (SiteHandler,), {"stop": stop})) as base:
        try:
            yield base
        finally:
            stop.set()  # release handlers still waiting (the never-loading page) before shutting down


@pytest.fixture(scope="session")
def shared_browser() -> Iterator[None]:
    """One Chromium for every browser test; closed once at the end of the session."""
    from tasks.browser.session import MANAGER

    yield
    run_coroutine(MANAGER.shutdown(), timeout=30)


@pytest.fixture
def bctx(tmp_path: Path, shared_browser: None) -> ToolContext:
    """A tool context whose state folder is this test's tmp dir; the loopback test site is allow-listed."""
    (tmp_path / "docs" / "udm").mkdir(parents=True, exist_ok=True)
    # The SSRF guard refuses loopback by default: the tests allow the test site's address explicitly.
    settings = load_settings(cwd=tmp_path, fetch_allow=["127.0.0.1"])
    return ToolContext(settings=settings, approver=always_approve)


@pytest.fixture
def sid(request: pytest.FixtureRequest, bctx: ToolContext) -> Iterator[str]:
    """A session ID unique to the test; the session is closed afterwards."""
    from tasks.browser.session import MANAGER

    name = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name)[:80] + f"-{time.monotonic_ns() % 100000}"
    yield name
    run_coroutine(MANAGER.close_session(name), timeout=30)


def _call(name: str, data: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    tool = browser_tool(name)
    assert tool is not None, name
    return call_tool(tool, data, ctx).envelope.model_dump()


@pytest.fixture
def call(bctx: ToolContext, sid: str) -> Any:
    """call(name, input) -> envelope dict, in this test's session and context."""

    def run(name: str, data: dict[str, Any] | None = None, ctx: ToolContext | None = None) -> dict[str, Any]:
        payload = dict(data or {})
        tool = browser_tool(name)
        assert tool is not None, name
        if "session_id" in tool.Input.model_fields:
            payload.setdefault("session_id", sid)
        return _call(name, payload, ctx or bctx)

    return run
