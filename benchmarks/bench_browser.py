"""Benchmark: 100 browser checks in parallel contexts vs one at a time, and link checking of 2,000 links.

Run with `./run bench browser [--checks N] [--concurrency N] [--links N] [--repeat N] [--only checks|links]`.
Everything is served on 127.0.0.1 by a threaded http.server; the browser is the shared Chromium of
the tool loop. The browser checks use a server thread in this process (Chromium is its own process).
The link checker is measured against a server in a separate process, as in real use (a checked
site never runs inside the checker's interpreter); the figure against an in-process server, whose
threads compete with the checker's event loop for the GIL, is printed too, as is the concurrent
figure with httpx's default connection pool (what the checker used before `udm.httppool`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from tasks.base import run_coroutine
from tasks.browser.session import MANAGER, find_browser
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


def _busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy (all processes: Chromium, its driver, the server)."""
    with open("/proc/stat", encoding="ascii") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def bench_checks(n: int, concurrency: int, base: str, state: Path, browser: str | None = None) -> None:
    """Sequential vs parallel, same run."""
    settings = load_settings(cwd=state, browser=browser)
    print(f"browser: {find_browser(settings) or 'Playwright Chromium'}; pages served by a child process")
    checks = make_checks(n)
    run_checks_sync(make_checks(3), settings, base_url=base, concurrency=3)  # warm the browser
    figures = {}
    modes = (
        ("one at a time", 1, "run"),
        (f"{concurrency} parallel contexts", concurrency, "run"),
        (f"{concurrency} parallel, fresh ctx", concurrency, "check"),
    )
    for label, conc, isolation in modes:
        busy_before, started = _busy_seconds(), time.perf_counter()
        results = run_checks_sync(checks, settings, base_url=base, concurrency=conc, isolation=isolation)
        wall = time.perf_counter() - started
        busy = (_busy_seconds() - busy_before) / wall
        bad = [r for r in results if r.status != "PASS"]
        if bad:
            raise SystemExit(f"{len(bad)} checks did not pass: {bad[0].reason}")
        median = statistics.median(r.duration_ms for r in results)
        figures[label] = wall
        print(
            f"{label:>26}: {n} checks in {wall:6.2f} s = {wall / n * 1000:6.1f} ms/check wall; "
            f"median check duration {median:6.1f} ms; cores busy {busy:.2f} of {os.cpu_count()}, "
            f"{busy * wall / n * 1000:.0f} ms CPU a check (browser, driver, server, this process)"
        )
    seq, par = figures["one at a time"], figures[f"{concurrency} parallel contexts"]
    print(
        f"speed-up: {seq / par:.2f}x (target >= 3x); parallel wall per check {par / n * 1000:.0f} ms (target <= 150 ms)"
    )


def serve_elsewhere() -> tuple[subprocess.Popen[str], str]:
    """Start the loopback server in a child process (this script with --serve); returns it and its URL."""
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    base = proc.stdout.readline().strip()
    if not base.startswith("http://"):
        proc.kill()
        raise SystemExit(f"the link server did not start: {base!r}")
    return proc, base


def _default_pool() -> httpx.AsyncHTTPTransport:
    """The pool httpx builds by default, with the limits the checker gave it before udm.httppool."""
    return httpx.AsyncHTTPTransport(limits=httpx.Limits(max_connections=64, max_keepalive_connections=64))


def _one_run(settings: Any, links: list[LinkSource], old_pool: bool = False, **options: Any) -> float:
    """Links/s of one uncached run (which must find every link ok)."""
    if old_pool:
        options["transport"] = _default_pool()  # the checker closes it with its client
    started = time.perf_counter()
    report = check_links(settings, links=links, use_cache=False, **options)
    rate = len(links) / (time.perf_counter() - started)
    assert report.counts == {"ok": len(links)}, report.counts
    return rate


def bench_links(n: int, base: str, state: Path, repeat: int = 3, in_process_base: str | None = None) -> None:
    """Distinct loopback links: a sequential baseline on a slice, then all of them concurrently.

    The variants take turns within each repetition, so a burst of load from elsewhere on the
    machine hits them alike; the median and the best of the repetitions are printed.
    """
    settings = load_settings(cwd=state, fetch_allow=["127.0.0.1"])

    def links_at(url: str) -> list[LinkSource]:
        return [LinkSource("bench.md", i + 1, "", f"{url}/l/{i}", "external") for i in range(n)]

    links = links_at(base)
    sample = links[: min(n, 200)]
    concurrent: dict[str, Any] = {"per_host": 16, "concurrency": 64}
    variants: dict[str, tuple[list[LinkSource], dict[str, Any]]] = {
        "seq": (sample, {"per_host": 1, "concurrency": 1}),
        "par": (links, concurrent),
        "old": (links, {**concurrent, "old_pool": True}),
    }
    if in_process_base:
        variants["inproc"] = (links_at(in_process_base), concurrent)
    rates: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeat):
        for name, (these, options) in variants.items():
            rates[name].append(_one_run(settings, these, **options))
    med = {name: statistics.median(r) for name, r in rates.items()}
    best = {name: max(r) for name, r in rates.items()}

    def line(label: str, name: str, note: str) -> None:
        print(f"  {label:<44} {med[name]:6.0f} links/s (best {best[name]:4.0f}){note}")

    print(f"link check, median and best of {repeat} interleaved runs:")
    line(f"sequential baseline (1/host, {len(sample)} links)", "seq", "")
    line(
        f"concurrent (16/host, 64 total, {n} links)",
        "par",
        f"; {med['par'] / med['seq']:.1f}x the baseline; target >= 300 links/s",
    )
    line("same, httpx's default pool (before)", "old", f"; the pool is {med['par'] / med['old']:.1f}x faster")
    if in_process_base:
        line("same, server threads in this process", "inproc", "; they share the GIL with the checker")


def main() -> None:
    """Run the benchmarks (or, with --serve, just the link server for a parent benchmark)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--checks", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--links", type=int, default=2000)
    parser.add_argument(
        "--repeat", type=int, default=3, help="link-check runs per figure (median and best printed)"
    )
    parser.add_argument("--only", choices=("checks", "links"), help="run one of the two benchmarks")
    parser.add_argument("--browser", help="Chromium executable for the checks (default: found as in use)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        server, base = serve()
        print(base, flush=True)
        sys.stdin.read()  # serve until the parent closes our stdin (or dies)
        server.shutdown()
        return
    server, base = serve()
    with tempfile.TemporaryDirectory(prefix="udm-bench-browser-") as tmp:
        state = Path(tmp)
        (state / "docs" / "udm").mkdir(parents=True)
        try:
            if args.only in (None, "checks"):
                # The site under test never lives in the checker's process (nor shares its GIL).
                pages, pages_base = serve_elsewhere()
                try:
                    bench_checks(args.checks, args.concurrency, pages_base, state, args.browser)
                finally:
                    assert pages.stdin is not None
                    pages.stdin.close()
                    pages.wait(timeout=10)
            if args.only in (None, "links"):
                child, child_base = serve_elsewhere()
                try:
                    bench_links(args.links, child_base, state, args.repeat, in_process_base=base)
                finally:
                    assert child.stdin is not None
                    child.stdin.close()
                    child.wait(timeout=10)
        finally:
            if args.only in (None, "checks"):
                run_coroutine(MANAGER.shutdown(), timeout=30)
            server.shutdown()


if __name__ == "__main__":
    main()
