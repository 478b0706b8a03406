"""Benchmark: 100 browser checks in parallel contexts vs one at a time, and link checking of 2,000 links.

Run with `./run bench browser [--checks N] [--concurrency N] [--links N]`. Everything is served on
127.0.0.1 by a threaded http.server; the browser is the shared Chromium of the tool loop.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tasks.base import run_coroutine
from tasks.browser.session import MANAGER
from tasks.browser.verify import run_checks_sync
from udm.config import load_settings
from udm.links import LinkSource, check_links
from udm.verify_spec import Check


class Handler(BaseHTTPRequestHandler):
    """/p/N: a small page; /l/N: an empty 200 (HEAD or GET)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the access log."""

    def _route(self) -> None:
        if self.path.startswith("/p/"):
            n = self.path.rsplit("/", 1)[-1]
            body = (
                f"<title>Page {n}</title><h1>Page {n}</h1><p class='claim'>Claim number {n} holds.</p>"
                "<ul>" + "".join(f"<li>item {i}</li>" for i in range(20)) + "</ul>"
            ).encode()
        else:
            body = b""
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(body)

    do_GET = _route
    do_HEAD = _route


def serve() -> tuple[ThreadingHTTPServer, str]:
    """Start the loopback server."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.request_queue_size = 512
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def make_checks(n: int) -> list[Check]:
    """n checks: open a page, two assertions (the final screenshot is taken as evidence)."""
    return [
        Check(
            id=f"CHK-BENCH-{i}",
            url=f"/p/{i}",
            expect=[{"exists": "h1"}, {"text": {"selector": ".claim", "contains": f"number {i} "}}],  # type: ignore[list-item]
        )
        for i in range(n)
    ]


def bench_checks(n: int, concurrency: int, base: str, state: Path) -> None:
    """Sequential vs parallel, same run."""
    settings = load_settings(cwd=state)
    checks = make_checks(n)
    run_checks_sync(make_checks(3), settings, base_url=base, concurrency=3)  # warm the browser
    figures = {}
    modes = (
        ("one at a time", 1, "run"),
        (f"{concurrency} parallel contexts", concurrency, "run"),
        (f"{concurrency} parallel, fresh ctx", concurrency, "check"),
    )
    for label, conc, isolation in modes:
        started = time.perf_counter()
        results = run_checks_sync(checks, settings, base_url=base, concurrency=conc, isolation=isolation)
        wall = time.perf_counter() - started
        bad = [r for r in results if r.status != "PASS"]
        if bad:
            raise SystemExit(f"{len(bad)} checks did not pass: {bad[0].reason}")
        median = statistics.median(r.duration_ms for r in results)
        figures[label] = wall
        print(
            f"{label:>26}: {n} checks in {wall:6.2f} s = {wall / n * 1000:6.1f} ms/check wall; "
            f"median check duration {median:6.1f} ms"
        )
    seq, par = figures["one at a time"], figures[f"{concurrency} parallel contexts"]
    print(
        f"speed-up: {seq / par:.2f}x (target >= 3x); parallel wall per check {par / n * 1000:.0f} ms (target <= 150 ms)"
    )


def bench_links(n: int, base: str, state: Path) -> None:
    """Distinct loopback links: sequential baseline on a slice, then all concurrently."""
    settings = load_settings(cwd=state, fetch_allow=["127.0.0.1"])
    links = [LinkSource("bench.md", i + 1, "", f"{base}/l/{i}", "external") for i in range(n)]
    sample = links[:200]
    started = time.perf_counter()
    report = check_links(settings, links=sample, use_cache=False, per_host=1, concurrency=1)
    seq_rate = len(sample) / (time.perf_counter() - started)
    assert report.counts == {"ok": len(sample)}, report.counts
    started = time.perf_counter()
    report = check_links(settings, links=links, use_cache=False, per_host=16, concurrency=64)
    elapsed = time.perf_counter() - started
    assert report.counts == {"ok": n}, report.counts
    print(f"link check, sequential baseline: {seq_rate:7.0f} links/s ({len(sample)} links)")
    print(
        f"link check, concurrent (16/host): {n / elapsed:7.0f} links/s ({n} links in {elapsed:.2f} s; "
        f"{n / elapsed / seq_rate:.1f}x the baseline; target >= 300 links/s)"
    )


def main() -> None:
    """Run both benchmarks."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--checks", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--links", type=int, default=2000)
    args = parser.parse_args()
    server, base = serve()
    with tempfile.TemporaryDirectory(prefix="udm-bench-browser-") as tmp:
        state = Path(tmp)
        (state / "docs" / "udm").mkdir(parents=True)
        try:
            bench_checks(args.checks, args.concurrency, base, state)
            bench_links(args.links, base, state)
        finally:
            run_coroutine(MANAGER.shutdown(), timeout=30)
            server.shutdown()


if __name__ == "__main__":
    main()
