"""Per-host concurrency, politeness delay, bounded gzip inflation and API keys from Prefect Secret blocks."""

from __future__ import annotations

import gzip
import json
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from tasks.base import ToolContext, call_tool
from tasks.documents import DocumentFetchingParsingTool
from tasks.web_search import WebSearchTool
from tests.fakes.loopback import QuietServer, start
from udm.config import Settings, load_settings
from udm.net import fetch_url


@dataclass
class Counting:
    """A loopback host that counts requests in flight and records when each one arrived."""

    base: str
    hold_s: float = 0.0
    in_flight: int = 0
    max_in_flight: int = 0
    arrivals: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _counting_handler(host: Counting) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            with host.lock:
                host.arrivals.append(time.monotonic())
                host.in_flight += 1
                host.max_in_flight = max(host.max_in_flight, host.in_flight)
            try:
                time.sleep(host.hold_s)
                body = b"plain text body"
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            finally:
                with host.lock:
                    host.in_flight -= 1

    return Handler


@pytest.fixture
def hosts() -> Iterator[Callable[[str], Counting]]:
    """A factory of counting loopback hosts on distinct loopback addresses (distinct gate keys)."""
    servers: list[QuietServer] = []

    def make(ip: str) -> Counting:
        host = Counting(base="")
        server = QuietServer((ip, 0), _counting_handler(host))
        host.base = f"http://{ip}:{server.server_address[1]}"
        start(server)
        servers.append(server)
        return host

    yield make
    for server in servers:
        server.shutdown()
        server.server_close()


def _settings(workspace: Path, **overrides: Any) -> Settings:
    return load_settings(
        cwd=workspace,
        fetch_allow=["127.0.0.1", "127.0.0.3"],
        fetch_timeout_s=5.0,
        fetch_respect_robots=False,
        fetch_cache=False,
        **overrides,
    )


def _fetch_all(settings: Settings, urls: list[str]) -> list[float]:
    """Fetch `urls` all at once; return each fetch's finishing time."""

    def one(url: str) -> float:
        body = fetch_url(url, settings, 10_000)
        assert body.content == b"plain text body"
        return time.monotonic()

    with ThreadPoolExecutor(max_workers=len(urls)) as pool:
        return list(pool.map(one, urls))


def test_host_concurrency_is_capped_and_other_hosts_are_not_held_back(hosts, workspace: Path) -> None:
    a = hosts("127.0.0.1")
    a.hold_s = 0.3
    settings = _settings(workspace, fetch_host_concurrency=3, fetch_host_delay_s=0.0)
    _fetch_all(settings, [f"{a.base}/p{i}" for i in range(9)])
    assert len(a.arrivals) == 9
    assert 1 < a.max_in_flight <= 3

    # One request at a time to A, each held 0.4 s: B's single fetch must not wait behind A's queue.
    a.hold_s = 0.4
    b = hosts("127.0.0.3")
    serial = _settings(workspace, fetch_host_concurrency=1, fetch_host_delay_s=0.0)
    a.max_in_flight = 0
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=5) as pool:
        a_done = [pool.submit(_fetch_all, serial, [f"{a.base}/q{i}"]) for i in range(4)]
        time.sleep(0.05)
        b_done = _fetch_all(serial, [f"{b.base}/only"])[0]
        a_last = max(f.result()[0] for f in a_done)
    assert a.max_in_flight == 1
    assert a_last - start >= 1.5  # four 0.4 s requests one after another
    assert b_done - start < 0.7  # B went straight through while A's queue was still draining


def test_politeness_delay_spaces_one_host_but_not_two(hosts, workspace: Path) -> None:
    a = hosts("127.0.0.1")
    b = hosts("127.0.0.3")
    delay = 0.25
    settings = _settings(workspace, fetch_host_concurrency=4, fetch_host_delay_s=delay)
    _fetch_all(settings, [f"{a.base}/p{i}" for i in range(4)])
    gaps = [y - x for x, y in zip(a.arrivals, a.arrivals[1:], strict=False)]
    assert len(gaps) == 3
    # Small slack: the gate spaces request starts; arrival at the server adds connect jitter.
    assert min(gaps) >= delay - 0.03, gaps

    # A fresh gate per host: one request to each host at once arrives together, not `delay` apart.
    slow = _settings(workspace, fetch_host_concurrency=4, fetch_host_delay_s=1.0)
    a.arrivals.clear()
    _fetch_all(slow, [f"{a.base}/x", f"{b.base}/y"])
    assert abs(a.arrivals[0] - b.arrivals[0]) < 0.5


BOMB_BYTES = 32 * 1024 * 1024


@pytest.fixture(scope="module")
def bomb() -> bytes:
    """32 MiB of text compressed with gzip to about 32 KiB."""
    return gzip.compress(b"a" * BOMB_BYTES, compresslevel=6)


def _bomb_handler(payload: bytes) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler


def test_gzip_expansion_is_bounded_by_the_cap(bomb: bytes, workspace: Path) -> None:
    assert len(bomb) < 200_000
    server = QuietServer(("127.0.0.1", 0), _bomb_handler(bomb))
    start(server)
    url = f"http://127.0.0.1:{server.server_address[1]}/bomb.txt"
    settings = _settings(workspace, fetch_host_delay_s=0.0)
    try:
        cap = 100_000
        tracemalloc.start()
        try:
            body = fetch_url(url, settings, cap)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert body.truncated is True and len(body.content) == cap and set(body.content) == {ord("a")}
        # Inflating everything would need 32 MiB; the bound keeps it to about the cap plus a chunk.
        assert peak < 8 * 1024 * 1024, peak

        ctx = ToolContext(settings=settings)
        out = call_tool(DocumentFetchingParsingTool(), {"url": url, "maxLengthBytes": cap}, ctx).envelope
        assert out.data is not None, out.error
        assert out.data["status"] == "PARTIAL_SUCCESS_TRUNCATED"
        assert out.data["metadata"]["truncation_applied"] is True
        assert out.data["metadata"]["bytes_read"] <= cap
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.prefect
def test_brave_key_from_prefect_secret_block(
    prefect_server: None, api, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prefect.blocks.system import Secret

    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    key = "brave-secret-key"  # the value the loopback Brave API accepts
    Secret(value=key).save("udm-brave-api-key", overwrite=True)
    search = WebSearchTool()

    without = ToolContext(
        settings=load_settings(cwd=workspace, search_provider="brave", brave_api_url=api.base)
    )
    missing = call_tool(search, {"query": "bm25"}, without).envelope
    assert missing.data is not None and missing.data["status"] == "ERROR_API_FAILURE"
    assert not api.requests  # the block is not read unless the setting asks for it

    ctx = ToolContext(
        settings=load_settings(
            cwd=workspace,
            search_provider="brave",
            brave_api_url=api.base,
            secrets_from_prefect=True,
            fetch_timeout_s=2.0,
        )
    )
    ok = call_tool(search, {"query": "bm25", "numResults": 3}, ctx).envelope
    assert ok.data is not None and ok.data["status"] == "SUCCESS", ok
    assert len(ok.data["results"]) == 3
    assert api.requests[-1]["headers"]["X-Subscription-Token"] == key
    assert key not in json.dumps(ok.model_dump(mode="json"))

    api.mode["/res/v1/web/search"] = "401"
    failed = call_tool(search, {"query": "bm25"}, ctx).envelope
    assert failed.data is not None and failed.data["status"] == "ERROR_API_FAILURE"
    assert api.requests[-1]["headers"]["X-Subscription-Token"] == key
    assert key not in json.dumps(failed.model_dump(mode="json"))

    logs = (workspace / "logs" / "tool-calls.jsonl").read_text()
    assert "webSearchTool" in logs and key not in logs
