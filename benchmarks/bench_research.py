"""Benchmark of the research pipeline: 200 article pages served on loopback, fetched and parsed.

Pages (14-24 KB of realistic HTML: navigation, cookie banner, article, footer) are served by 8 local
servers on 127.0.0.1-127.0.0.8 (8 "sites", 25 pages each; in a process of their own) that answer after a simulated network
latency (`--latency`, default 0.1 s; a real web fetch takes longer). Measured in one run:

1. baseline: a naive sequential loop, httpx.get + trafilatura.extract per page;
2. research_flow end to end over the same 200 URLs (search, fetch fan-out in batches of
   `research_batch_size` sources per task run, extractive synthesis, citation and Markdown checks,
   and the write through the UDM-update flow), with the product's defaults for politeness (4 requests
   per host at a time, 0.1 s between request starts to one host) and `research_max_workers` threads;
   the appendix is then checked: its first paragraph, every quote against the naive loop's own
   extraction of the cited page, and no manual file among the sources;
3. the same request again: every fetch is a Prefect cache hit, and the appendix is reported unchanged
   (same sources, same contents). It starts once the server has recorded the first run's task runs.

Targets: flow >= 4x the naive loop and >= 30 pages/s; cached re-run <= 10% of the first run.
Run: ./run bench research [--pages N] [--latency S] [--workers N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import calibration  # noqa: E402

sys.path.insert(0, str(REPO))
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ["DO_NOT_TRACK"] = "1"

WORDS = [
    "index",
    "section",
    "manual",
    "research",
    "source",
    "fetch",
    "parse",
    "cache",
    "flow",
    "task",
    "retry",
    "backoff",
    "latency",
    "throughput",
    "passage",
    "ranking",
    "query",
    "document",
    "markdown",
    "heading",
    "table",
    "block",
    "patch",
    "transaction",
    "journal",
    "commit",
    "lock",
    "duckdb",
    "prefect",
    "server",
    "worker",
    "pool",
    "thread",
    "process",
    "memory",
    "disk",
    "network",
    "request",
    "response",
    "header",
    "body",
    "robots",
    "sitemap",
    "crawler",
    "politeness",
    "delay",
    "host",
    "concurrency",
    "limit",
    "timeout",
    "redirect",
    "status",
    "error",
]


def make_page(site: int, n: int, rng: random.Random) -> bytes:
    """A 14-24 KB article page with the usual boilerplate around it."""
    nav = " | ".join(f'<a href="/section-{i}">Section {i}</a>' for i in range(30))
    paras = []
    for _ in range(rng.randint(14, 24)):
        sentence_count = rng.randint(5, 8)
        sentences = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 18))).capitalize() + "."
            for _ in range(sentence_count)
        ]
        paras.append("<p>" + " ".join(sentences) + "</p>")
    body = "\n".join(paras)
    html = f"""<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<title>Article {n} on site {site} | Bench Notes</title>
<meta name="author" content="Writer {site}"><meta name="description" content="Benchmark article {n}.">
<link rel="canonical" href="https://site{site}.example/articles/{n}">
<style>body{{font-family:sans-serif}} .cookie{{position:fixed}}</style></head><body>
<div class="cookie">We use cookies. <button>Accept</button></div>
<header><nav>{nav}</nav></header>
<main><article><h1>Article {n}: research pipeline notes</h1>
<p class="byline">By Writer {site}</p>
{body}
</article></main>
<aside><h3>Related</h3><ul>{"".join(f"<li><a href='/a/{i}'>Related {i}</a></li>" for i in range(15))}</ul></aside>
<footer><p>Copyright Bench Notes. All rights reserved.</p>{nav}</footer></body></html>"""
    return html.encode()


class Sites:
    """8 loopback 'sites' serving the pages with a fixed latency, from a process of their own.

    A real site does not share the crawler's interpreter: served from the benchmark's own process,
    the sites' request handling would compete with the flow's threads for the GIL.
    """

    def __init__(self, pages: int, latency: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", "--pages", str(pages), "--latency", str(latency)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the page servers did not start")
        self.urls: list[str] = json.loads(line)

    def close(self) -> None:
        """Stop the servers' process (it exits when its stdin closes)."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def serve(pages: int, latency: float) -> None:
    """Serve the pages from 8 threaded servers on 127.0.0.1-8; print the URLs as JSON; stop on EOF."""
    rng = random.Random(7)
    content: dict[tuple[str, str], bytes] = {}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            time.sleep(latency)
            key = (self.headers.get("Host", ""), self.path)
            if self.path == "/robots.txt":
                body, ctype, code = b"User-agent: *\nAllow: /\n", "text/plain", 200
            elif key in content:
                body, ctype, code = content[key], "text/html; charset=utf-8", 200
            else:
                body, ctype, code = b"not found", "text/plain", 404
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    servers: list[ThreadingHTTPServer] = []
    for s in range(8):
        server = ThreadingHTTPServer((f"127.0.0.{s + 1}", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
        servers.append(server)
    urls = []
    for i in range(pages):
        s = i % len(servers)
        addr, port = servers[s].server_address[:2]
        path = f"/articles/{i}.html"
        content[(f"{addr!s}:{port}", path)] = make_page(s + 1, i, rng)
        urls.append(f"http://{addr!s}:{port}{path}")
    print(json.dumps(urls), flush=True)
    sys.stdin.read()  # until the benchmark closes our stdin
    for server in servers:
        server.shutdown()
        server.server_close()


def naive(urls: list[str]) -> tuple[float, dict[str, str]]:
    """The baseline: one page after the other, httpx + trafilatura, no concurrency, no caching."""
    import httpx
    import trafilatura

    texts: dict[str, str] = {}
    started = time.perf_counter()
    with httpx.Client(trust_env=False, timeout=10) as client:
        for url in urls:
            resp = client.get(url)
            text = trafilatura.extract(resp.text, output_format="markdown", include_comments=False, url=url)
            if text:
                texts[url] = text
    return time.perf_counter() - started, texts


def check_appendix(markdown: str, sources: list[dict[str, Any]], texts: dict[str, str]) -> list[str]:
    """Lines saying whether the appendix answers first, quotes verbatim and cites no manual file."""
    import re

    from udm.research import comparable

    answer = markdown.split("## 1. Answer\n\n", 1)[-1].split("\n\n", 1)[0]
    by_n = {s["n"]: s for s in sources}
    quotes = re.findall(r"“(.+?)” ((?:\[\d+\] ?)+)", markdown)
    found = 0
    for quote, cites in quotes:
        ns = [int(n) for n in re.findall(r"\d+", cites)]
        # Checked against the naive loop's own extraction of each cited page, not the flow's.
        found += all(comparable(quote) in comparable(texts.get(by_n[n]["url"], "")) for n in ns)
    manual = [s["url"] for s in sources if not str(s["url"]).startswith(("http://", "https://"))]
    return [
        f"appendix: first paragraph: {answer[:160]}{'…' if len(answer) > 160 else ''}",
        f"appendix: {found} of {len(quotes)} quotes found verbatim in the cited page's text; "
        f"manual files cited: {len(manual)}",
    ]


def _cpu_of_tree(server_pid: int | None) -> dict[str, float]:
    """CPU seconds so far of this process, its other descendants (the parse pool) and the server."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        parents[int(entry)] = int(fields[1])
        cpu[int(entry)] = (int(fields[11]) + int(fields[12])) / tick

    def descends(pid: int, root: int) -> bool:
        while pid > 1:
            if pid == root:
                return True
            pid = parents.get(pid, 0)
        return False

    me = os.getpid()
    server = sum(v for pid, v in cpu.items() if server_pid and descends(pid, server_pid))
    children = sum(
        v
        for pid, v in cpu.items()
        if pid != me and descends(pid, me) and not (server_pid and descends(pid, server_pid))
    )
    return {"flow process": cpu.get(me, 0.0), "parse processes": children, "Prefect server": server}


def _cpu_delta(before: dict[str, float], after: dict[str, float]) -> str:
    return ", ".join(f"{k} {after[k] - before[k]:.1f}" for k in before)


def _wait_until_recorded(api_url: str, limit_s: float = 120.0) -> float:
    """Wait until the server's task-run count stops growing (it records runs from events, behind them).

    A re-run started at once would measure the server still writing the first run's history: its
    first API call queues behind that. A user re-running research later never sees that wait.
    """
    import httpx

    started = time.perf_counter()
    last, steady = -1, 0
    while time.perf_counter() - started < limit_s:
        count = int(httpx.post(f"{api_url}/task_runs/count", json={}, timeout=30).json())
        steady = steady + 1 if count == last else 0
        if steady >= 2:
            break
        last = count
        time.sleep(0.5)
    return time.perf_counter() - started


def main() -> int:
    """Run the three measurements and print the figures and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument(
        "--latency", type=float, default=0.1, help="Simulated network latency per response, s."
    )
    parser.add_argument("--workers", type=int, default=32, help="research_max_workers for the flow.")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.pages, args.latency)
        return 0

    from udm.config import load_settings

    tmp = Path(tempfile.mkdtemp(prefix="udm-bench-research-"))
    shutil.copytree(REPO / "examples" / "udm", tmp / "docs" / "udm")
    for sub in ("state", "logs", "prompts"):
        (tmp / sub).mkdir()
    settings = load_settings(
        cwd=tmp,
        fetch_allow=["127.0.0.0/24"],
        approval_policy="full_auto",
        research_max_workers=args.workers,
    )
    from flows.local_server import start_server, stop_server

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    own_server = not os.environ.get("PREFECT_API_URL")
    server_pid: int | None = None
    if own_server:
        print(f"starting a local Prefect server (state in {tmp}) ...", flush=True)
        info = start_server(settings, port=port, timeout=180)
        os.environ["PREFECT_API_URL"] = info.api_url
        server_pid = info.pid
    else:
        print(f"using the Prefect server at {os.environ['PREFECT_API_URL']}")
    sites = Sites(args.pages, args.latency)
    try:
        from flows.research import ResearchRequest, run_research

        # Warm up imports and the server connection with a one-page run (not measured).
        warm = ResearchRequest(
            question="warm up", urls=sites.urls[:1], max_sources=1, write=False, max_cache_age_s=0
        )
        run_research(warm, settings)

        print(calibration(), flush=True)
        base_s, texts = naive(sites.urls)
        print(
            f"naive sequential loop: {base_s:6.2f} s  {len(sites.urls) / base_s:6.1f} pages/s  ({len(texts)} parsed)"
        )

        request = ResearchRequest(
            question="How do retries, caching and politeness limits shape research pipeline throughput?",
            urls=sites.urls,
            max_sources=len(sites.urls),
        )
        cpu0 = _cpu_of_tree(server_pid)
        started = time.perf_counter()
        first = run_research(request, settings)
        flow_s = time.perf_counter() - started
        cpu1 = _cpu_of_tree(server_pid)
        write_s = first.timings_s.get("write", 0.0)
        print(
            f"research_flow:         {flow_s:6.2f} s  {len(sites.urls) / flow_s:6.1f} pages/s  "
            f"({first.sources_ok} ok, {first.sources_failed} failed; {first.status}: {first.appendix_id})"
        )
        print(f"   phases (s): {first.timings_s}")
        print(f"   CPU s during the run: {_cpu_delta(cpu0, cpu1)}")
        for line in check_appendix(first.markdown, first.sources, texts):
            print(f"   {line}")
        settled = _wait_until_recorded(os.environ["PREFECT_API_URL"])
        print(
            f"   (the server took {settled:.1f} s more to record the run's task runs; the re-run starts after)"
        )
        cpu2 = _cpu_of_tree(server_pid)
        started = time.perf_counter()
        second = run_research(request, settings)
        cached_s = time.perf_counter() - started
        cpu3 = _cpu_of_tree(server_pid)
        cached_write_s = second.timings_s.get("write", 0.0)
        print(
            f"cached re-run:         {cached_s:6.2f} s  ({second.sources_ok} ok; {second.status}: {second.appendix_id})"
        )
        print(f"   phases (s): {second.timings_s}")
        print(f"   CPU s during the re-run: {_cpu_delta(cpu2, cpu3)}")
        print("")
        load = os.getloadavg()[0]
        print(f"machine load average (1 min): {load:.1f} on {os.cpu_count()} cores")
        print(
            f"speed-up over the naive loop: {base_s / flow_s:.1f}x end to end (target >= 4x); "
            f"{base_s / (flow_s - write_s):.1f}x without the write step ({write_s:.1f} s)"
        )
        print(
            f"throughput: {len(sites.urls) / flow_s:.1f} pages/s end to end (target >= 30); "
            f"{len(sites.urls) / (flow_s - write_s):.1f} pages/s without the write step"
        )
        fetch_s, cached_fetch_s = first.timings_s.get("fetch", 0.0), second.timings_s.get("fetch", 0.0)
        print(
            f"fetch-and-parse fan-out alone: {fetch_s:.1f} s, {len(sites.urls) / fetch_s:.1f} pages/s, "
            f"{base_s / fetch_s:.1f}x the naive loop; cached {cached_fetch_s:.1f} s ({cached_fetch_s / fetch_s:.0%})"
        )
        print(
            f"cached re-run / first run: {cached_s / flow_s:.1%} end to end (target <= 10%); "
            f"{(cached_s - cached_write_s) / (flow_s - write_s):.1%} without the write step"
        )
    finally:
        sites.close()
        if own_server:
            stop_server(settings)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
