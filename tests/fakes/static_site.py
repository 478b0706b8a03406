"""A loopback web site for the browser tools: forms, tables, late content, tabs, downloads, images, a hanging image.

Plain HTTP/1.0 pages (PAGES) plus /logo.png, /files/report.csv (an attachment), /home?user= (the
form's target), /visual?color= (a coloured box for screenshot comparisons), /hang.png (answers only
when the test ends) and 404 for anything else; HEAD is answered like GET without a body.
"""

from __future__ import annotations

import io
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import parse_qs, urlsplit

from PIL import Image

from tests.fakes.loopback import Responder, loopback_server

__all__ = ["PAGES", "PNG", "SiteHandler", "running_static_site"]


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


class SiteHandler(Responder):
    """Serves PAGES plus a few special routes; /visual?color=... draws a coloured box."""

    stop: threading.Event

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
            return self.send(200, PNG, "image/png")
        if path == "/files/report.csv":
            return self.send(
                200, b"a,b\n1,2\n", "text/csv", **{"Content-Disposition": 'attachment; filename="report.csv"'}
            )
        if path == "/home":
            user = query.get("user", [""])[0]
            body = f"<title>Home</title><h1>Welcome {user}</h1><p id='welcome'>signed in</p>"
            return self.send(200, body.encode())
        if path == "/visual":
            color = re.sub(r"[^a-z#0-9]", "", query.get("color", ["navy"])[0])
            body = (
                "<title>Visual</title><style>body{margin:0;background:#fff}"
                f"#box{{width:300px;height:200px;background:{color}}}</style><div id='box'></div>"
            )
            return self.send(200, body.encode())
        if path == "/status404" or path not in PAGES:
            return self.send(404, b"<title>Not found</title><h1>404</h1>")
        return self.send(200, PAGES[path].encode())


@contextmanager
def running_static_site() -> Iterator[str]:
    """The site's base URL on 127.0.0.1; the hanging image is released before the server stops."""
    stop = threading.Event()
    with loopback_server(type("Handler", (SiteHandler,), {"stop": stop})) as base:
        try:
            yield base
        finally:
            stop.set()  # release handlers still waiting (the never-loading page) before shutting down
