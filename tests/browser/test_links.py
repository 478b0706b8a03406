"""Link checking against a loopback server: redirects, 404, HEAD refusal, 429 Retry-After, 5xx retries, cache, SSRF guard."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.loopback import loopback_server
from udm.config import load_settings
from udm.index import check_links

from .conftest import external_link

HITS: dict[str, int] = {}
_LOCK = threading.Lock()


class LinkHandler(BaseHTTPRequestHandler):
    """Routes with the behaviours a link checker must handle."""

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the access log."""

    def _reply(self, code: int, headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _route(self) -> None:
        with _LOCK:
            HITS[self.path] = HITS.get(self.path, 0) + 1
            count = HITS[self.path]
        if self.path.startswith("/ok"):
            return self._reply(200)
        if self.path == "/moved":
            return self._reply(301, {"Location": "/ok-target"})
        if self.path == "/nohead":
            return self._reply(405 if self.command == "HEAD" else 200)
        if self.path == "/slowdown":
            return self._reply(429, {"Retry-After": "0"}) if count == 1 else self._reply(200)
        if self.path == "/flaky":
            return self._reply(503) if count == 1 else self._reply(200)
        if self.path == "/down":
            return self._reply(500)
        if self.path == "/sets-cookie":
            return self._reply(200, {"Set-Cookie": "session=abc; Path=/"})
        if self.path == "/cookie-free":
            return self._reply(400 if self.headers.get("Cookie") else 200)
        return self._reply(404)

    do_GET = _route
    do_HEAD = _route


@pytest.fixture(scope="module")
def link_server() -> Iterator[str]:
    """Base URL of the loopback link server."""
    with loopback_server(LinkHandler) as base:
        yield base


def test_external_verdicts_retries_and_cache(link_server: str, tmp_path: Path) -> None:
    HITS.clear()
    settings = load_settings(cwd=tmp_path, fetch_allow=["127.0.0.1"])
    paths = ["/ok", "/moved", "/missing", "/nohead", "/slowdown", "/flaky", "/down"]
    links = [external_link(link_server + p, i) for i, p in enumerate(paths, 1)] + [
        external_link("mailto:someone@example.com", 9)
    ]
    report = check_links(settings, links=links, retries=2)
    verdict = {r.target.removeprefix(link_server): r for r in report.results}
    assert verdict["/ok"].status == "ok" and verdict["/ok"].http_status == 200
    assert verdict["/moved"].status == "ok" and verdict["/moved"].final_url == link_server + "/ok-target"
    assert verdict["/missing"].status == "broken" and verdict["/missing"].http_status == 404
    assert verdict["/nohead"].status == "ok"
    assert verdict["/slowdown"].status == "ok" and HITS["/slowdown"] == 2
    assert verdict["/flaky"].status == "ok" and HITS["/flaky"] == 2
    assert verdict["/down"].status == "error" and HITS["/down"] == 3 and verdict["/down"].http_status == 500
    assert verdict["mailto:someone@example.com"].status == "skipped"
    cache = json.loads((settings.state_path / "link-cache.json").read_text())
    assert link_server + "/ok" in cache and link_server + "/down" not in cache
    again = check_links(settings, links=links[:3])
    assert all(r.cached for r in again.results) and HITS["/ok"] == 1
    fresh = check_links(settings, links=links[:1], max_age_s=0)
    assert not fresh.results[0].cached and HITS["/ok"] == 2


def test_no_cookie_is_carried_from_one_link_to_the_next(link_server: str, tmp_path: Path) -> None:
    # Requests go to vetted IPs, so a kept cookie would be filed under the IP and sent to every site
    # sharing it (a CDN); like lychee, the checker keeps none.
    settings = load_settings(cwd=tmp_path, fetch_allow=["127.0.0.1"])
    links = [external_link(link_server + "/sets-cookie", 1), external_link(link_server + "/cookie-free", 2)]
    report = check_links(settings, links=links, use_cache=False, per_host=1, concurrency=1)
    assert [r.status for r in report.results] == ["ok", "ok"], [r.http_status for r in report.results]


def test_ssrf_guard_blocks_loopback_unless_allowed(link_server: str, tmp_path: Path) -> None:
    settings = load_settings(cwd=tmp_path)
    report = check_links(settings, links=[external_link(link_server + "/ok")], use_cache=False)
    result = report.results[0]
    assert result.status == "blocked" and "loopback" in (result.reason or "")


def test_invalid_port_is_a_broken_link(tmp_path: Path) -> None:
    settings = load_settings(cwd=tmp_path)
    report = check_links(settings, links=[external_link("http://127.0.0.1:99999/x")], use_cache=False)
    result = report.results[0]
    assert result.status == "broken" and "invalid port" in (result.reason or "")


def test_internal_links_and_anchors_from_the_index(tmp_path: Path) -> None:
    root = tmp_path / "docs" / "udm"
    root.mkdir(parents=True)
    (root / "a.md").write_text(
        "# A\n\n## Part one\n\n[good](#part-one) [bad anchor](#nowhere) [other](b.md#b-heading) "
        "[bad file](missing.md) [bad other anchor](b.md#nope) [img](pic.png) [ext](https://example.invalid/)\n",
        encoding="utf-8",
    )
    (root / "b.md").write_text("# B heading\n", encoding="utf-8")
    (root / "pic.png").write_bytes(b"\x89PNG")
    settings = load_settings(cwd=tmp_path)
    report = check_links(settings, external=False)
    verdict = {r.target: r for r in report.results}
    assert set(verdict) == {"#part-one", "#nowhere", "b.md#b-heading", "missing.md", "b.md#nope", "pic.png"}
    assert (
        verdict["#part-one"].status == verdict["b.md#b-heading"].status == verdict["pic.png"].status == "ok"
    )
    assert verdict["#nowhere"].status == "broken" and "#nowhere" in (verdict["#nowhere"].reason or "")
    assert verdict["missing.md"].status == "broken" and "no such file" in (verdict["missing.md"].reason or "")
    assert verdict["b.md#nope"].status == "broken"
    assert verdict["#nowhere"].line == 5


def test_cli_links_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows.cli import run

    root = tmp_path / "docs" / "udm"
    root.mkdir(parents=True)
    (root / "a.md").write_text("# A\n\n[ok](#a) [bad](#b)\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert run(["links", "--json", "--no-external"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["counts"] == {"ok": 1, "broken": 1}
