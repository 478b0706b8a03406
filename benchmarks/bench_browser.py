"""Benchmark: browser verification against a site whose responses take 150 ms, and link checking.

Run with `./run bench browser [--checks N] [--contexts 1,4,8] [--runners thread,dask] [--delay S]
[--cpu-checks N] [--links N] [--repeat N] [--only checks|cpu|links]`.

1. checks/s with 1, 4 and 8 browser contexts for each runner, as a ratio to one context (goal >= 3x
   at 8). A runner is an entry of RUNNERS: how the verification flow runs its checks (`thread`, its Prefect
   thread pool; `dask`, a LocalCluster of 2 worker processes with ceil(contexts/2) threads each, so
   "1 context" is 2 checks in flight there); every page and subresource answers after `--delay`
   (150 ms). Each figure is also a ratio to serial: the first runner's first width.
2. CPU per check before and after, in the same run: "before" is the first round's behaviour per
   check (`lean=False`: everything loaded, a screenshot of every check), "after" today's default;
   both in today's browser, SSRF guard included (it has no switch).
   Split by process from /proc/<pid>/stat of this process's tree before and after a batch: this
   Python process (our code and the Playwright client), the Playwright driver (node), Chromium's
   browser process, its renderers (with the zygote that reaps them), its GPU/utility processes.
3. link checking: 2,000 loopback links, sequential baseline vs concurrent.

Pages are served by child processes (a checked site never shares the checker's interpreter); the
page links a stylesheet, a web font, an image, a video and a script from a second host (127.0.0.2),
as documentation sites do. The browser is the shared Chromium of the tool loop.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx

from tasks.base import run_coroutine
from tasks.browser.session import MANAGER, find_browser
from tasks.browser.verify import run_checks_sync
from udm.config import Settings, load_settings
from udm.index import check_links
from udm.index.links import LinkSource
from udm.verify import Check

REPO = Path(__file__).resolve().parent.parent
# Hosts the benchmark's pages live on: the site itself and a "third-party" host for its widget script.
SITE_HOSTS = ("127.0.0.1", "127.0.0.2")


def _png() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (200, 60), (30, 90, 160)).save(buf, format="PNG")
    return buf.getvalue()


class Handler(BaseHTTPRequestHandler):
    """/p/N: a documentation-like page with its subresources; /l/N: an empty 200 (HEAD or GET).

    Every answer waits `delay` seconds first, as a real site's round trip does.
    """

    protocol_version = "HTTP/1.1"
    delay = 0.0
    third_party = ""
    assets: ClassVar[dict[str, tuple[str, bytes]]] = {}

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the access log."""

    def _route(self) -> None:
        if self.delay:
            time.sleep(self.delay)
        ctype = "text/html; charset=utf-8"
        if self.path.startswith("/p/"):
            n = self.path.rsplit("/", 1)[-1]
            body = (
                f"<!doctype html><title>Page {n}</title><link rel=stylesheet href=/site.css>"
                "<style>@font-face{font-family:Body;src:url(/body.woff2) format('woff2')}"
                "body{font-family:Body,sans-serif}</style>"
                f"<h1>Page {n}</h1><p class='claim'>Claim number {n} holds.</p>"
                "<ul>" + "".join(f"<li>item {i}</li>" for i in range(20)) + "</ul>"
                "<img src=/logo.png alt=logo><video src=/intro.webm preload=auto muted></video>"
                f"<script src='{self.third_party}/widget.js'></script>"
            ).encode()
        elif self.path in self.assets:
            ctype, body = self.assets[self.path]
        else:
            body = b""
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(body)

    do_GET = _route
    do_HEAD = _route


def serve(host: str = "127.0.0.1", port: int = 0) -> tuple[ThreadingHTTPServer, str]:
    """Start a server on host:port in a thread; the server and its base URL."""
    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    server.request_queue_size = 512
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://{host}:{server.server_address[1]}"


def make_checks(n: int) -> list[Check]:
    """n checks: open a page, two assertions."""
    return [
        Check(
            id=f"CHK-BENCH-{i}",
            url=f"/p/{i}",
            expect=[{"exists": "h1"}, {"text": {"selector": ".claim", "contains": f"number {i} "}}],
        )
        for i in range(n)
    ]


# -- CPU of the process tree -----------------------------------------------------------------------


def _processes() -> dict[int, tuple[int, float, str]]:
    """pid -> (parent, CPU seconds incl. reaped children, kind) for every process we can read."""
    tick = os.sysconf("SC_CLK_TCK")
    found: dict[int, tuple[int, float, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = (
                Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            )
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        # utime, stime, and (for everything but us) cutime, cstime: a renderer that exits is reaped by
        # Chromium's zygote, and its CPU then lives on in the zygote's cutime.
        own = int(fields[11]) + int(fields[12])
        reaped = int(fields[13]) + int(fields[14])
        found[int(entry)] = (int(fields[1]), (own + reaped) / tick, _kind(stat, cmdline))
    return found


def _kind(stat: str, cmdline: str) -> str:
    comm = stat[stat.index("(") + 1 : stat.rindex(")")]
    if "--type=renderer" in cmdline or "--type=zygote" in cmdline:
        return "renderers"
    if "--type=" in cmdline:
        return "gpu/utility"
    if "chrom" in comm or "headless" in comm or "chrom" in cmdline.split(" ", 1)[0]:
        return "browser process"
    if comm == "node" or ("playwright" in cmdline and "driver" in cmdline):
        return "driver"
    return "other"


CPU_KINDS = ("this process", "driver", "browser process", "renderers", "gpu/utility")


def tree_cpu(exclude: set[int]) -> dict[str, float]:
    """CPU seconds so far of this process (own only) and its descendants, by kind; `exclude` trees out."""
    procs = _processes()
    me = os.getpid()

    def under(pid: int, root: int) -> bool:
        while pid > 1:
            if pid == root:
                return True
            pid = procs.get(pid, (0, 0.0, ""))[0]
        return False

    totals = dict.fromkeys(CPU_KINDS, 0.0)
    tick = os.sysconf("SC_CLK_TCK")
    fields = Path(f"/proc/{me}/stat").read_text().rsplit(")", 1)[1].split()
    totals["this process"] = (int(fields[11]) + int(fields[12])) / tick
    for pid, (_parent, cpu, kind) in procs.items():
        if pid == me or not under(pid, me) or any(under(pid, x) for x in exclude):
            continue
        totals[kind if kind in totals else "driver"] += cpu
    return totals


def _busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy (every process, ours or not)."""
    with open("/proc/stat", encoding="ascii") as fh:
        values = [int(x) for x in fh.readline().split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return (sum(values[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def bench_cpu(n: int, contexts: int, base: str, settings: Settings, exclude: set[int], repeat: int) -> None:
    """CPU per check, before (lean=False) and after, alternating batches; medians printed by process."""
    checks = make_checks(n)
    per: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    walls: dict[str, list[float]] = {"before": [], "after": []}
    for _ in range(repeat):
        for label, lean in (("before", False), ("after", True)):
            cpu0, started = tree_cpu(exclude), time.perf_counter()
            results = run_checks_sync(checks, settings, base_url=base, concurrency=contexts, lean=lean)
            wall = time.perf_counter() - started
            cpu1 = tree_cpu(exclude)
            _all_pass(results)
            per[label].append({k: (cpu1[k] - cpu0[k]) / n * 1000 for k in CPU_KINDS})
            walls[label].append(wall)
    print(f"CPU per check, {n} checks with {contexts} contexts, median of {repeat} alternating batches (ms):")
    print(f"  {'process':<18}{'before':>9}{'after':>9}")
    med = {
        label: {k: statistics.median(r[k] for r in rows) for k in CPU_KINDS} for label, rows in per.items()
    }
    for k in CPU_KINDS:
        print(f"  {k:<18}{med['before'][k]:9.1f}{med['after'][k]:9.1f}")
    total = {label: sum(m.values()) for label, m in med.items()}
    print(f"  {'total':<18}{total['before']:9.1f}{total['after']:9.1f}")
    batch = {label: statistics.median(w) for label, w in walls.items()}
    print(
        f"  after/before: CPU {total['after'] / total['before']:.2f}x "
        f"({total['before'] / total['after']:.2f}x less); wall per batch {batch['before']:.2f} s -> {batch['after']:.2f} s"
    )


def _all_pass(results: list[Any]) -> None:
    bad = [r for r in results if (r["status"] if isinstance(r, dict) else r.status) != "PASS"]
    if bad:
        first = bad[0]
        reason = first["reason"] if isinstance(first, dict) else first.reason
        raise SystemExit(f"{len(bad)} checks did not pass: {reason}")


# -- runners -----------------------------------------------------------------------------------------

# How the verification flow runs its checks: name -> run(spec file, base URL, contexts, settings) ->
# result rows. Each runs the flow as users do; a new task runner is one more entry.
Runner = Callable[[Path, str, int, Settings], list[dict[str, Any]]]


def run_with_threads(spec: Path, base: str, contexts: int, settings: Settings) -> list[dict[str, Any]]:
    """The verification flow on its default Prefect thread pool."""
    from flows.browser_verify import browser_verification_flow

    state = browser_verification_flow(
        specs=[str(spec)],
        inline=False,
        base_url=base,
        concurrency=contexts,
        record=False,
        artifacts=False,
        root=str(settings.udm_root),
        state_dir=str(settings.state_path),
        return_state=True,
    )
    # A failing check fails the run; the rows are its data either way (the caller checks them).
    summary: Any = state.result(raise_on_failure=False)
    rows: list[dict[str, Any]] = summary["results"]
    return rows


# Dask: one LocalCluster of 2 worker processes per number of contexts, started (and warmed: each
# worker launches its browser) outside the timed runs by `prepare_dask`, closed at the end.
DASK_WORKERS = 2
_CLUSTERS: dict[int, Any] = {}


def _dask_threads(contexts: int) -> int:
    """Threads per worker for `contexts` checks in flight (at least one per worker)."""
    return max(1, -(-contexts // DASK_WORKERS))


def _dask_settings(contexts: int, settings: Settings) -> Settings:
    cluster = _CLUSTERS[contexts]
    return settings.model_copy(update={"task_runner": "dask", "dask_address": cluster.scheduler_address})


def prepare_dask(spec: Path, base: str, contexts: int, settings: Settings) -> None:
    """Start the cluster for `contexts` and run the flow on it once, untimed."""
    if contexts not in _CLUSTERS:
        from distributed import LocalCluster

        _CLUSTERS[contexts] = LocalCluster(
            n_workers=DASK_WORKERS,
            threads_per_worker=_dask_threads(contexts),
            processes=True,
            dashboard_address=":0",
            silence_logs=40,
        )
    _all_pass(run_with_dask(spec, base, contexts, settings))


def run_with_dask(spec: Path, base: str, contexts: int, settings: Settings) -> list[dict[str, Any]]:
    """The verification flow on Dask (prefect-dask): 2 worker processes, each with its own browser."""
    from flows.browser_verify import POOL_SIZE, browser_verification_flow
    from flows.runners import on_runner

    state = on_runner(browser_verification_flow, _dask_settings(contexts, settings), POOL_SIZE)(
        specs=[str(spec)],
        inline=False,
        base_url=base,
        concurrency=contexts,
        record=False,
        artifacts=False,
        root=str(settings.udm_root),
        state_dir=str(settings.state_path),
        return_state=True,
    )
    summary: Any = state.result(raise_on_failure=False)
    rows: list[dict[str, Any]] = summary["results"]
    return rows


def close_clusters() -> None:
    """Close the Dask clusters the benchmark started."""
    for cluster in _CLUSTERS.values():
        cluster.close()
    _CLUSTERS.clear()


RUNNERS: dict[str, Runner] = {"thread": run_with_threads, "dask": run_with_dask}
# Untimed set-up of a runner for a number of contexts (before its timed run).
PREPARE: dict[str, Callable[[Path, str, int, Settings], None]] = {"dask": prepare_dask}


def _write_spec(folder: Path, checks: list[Check]) -> Path:
    import yaml

    spec = folder / "bench-checks.yaml"
    data = {"checks": [c.model_dump(mode="json", exclude_none=True, exclude_defaults=True) for c in checks]}
    spec.write_text(yaml.safe_dump(data), encoding="utf-8")
    return spec


def bench_runners(
    n: int, contexts: list[int], runners: list[str], base: str, settings: Settings, exclude: set[int]
) -> None:
    """checks/s per runner and number of contexts, with the ratio to one context."""
    spec = _write_spec(settings.project_root, make_checks(n))
    RUNNERS[runners[0]](spec, base, max(contexts), settings)  # warm: imports, browser, Prefect client
    print(f"verification flow, {n} checks, every response after the site's delay:")
    serial: float | None = None
    for name in runners:
        rates: dict[int, float] = {}
        for width in contexts:
            if name in PREPARE:
                PREPARE[name](spec, base, width, settings)
            cpu0, busy0, started = tree_cpu(exclude), _busy_seconds(), time.perf_counter()
            rows = RUNNERS[name](spec, base, width, settings)
            wall = time.perf_counter() - started
            cpu = sum(tree_cpu(exclude).values()) - sum(cpu0.values())
            busy = (_busy_seconds() - busy0) / wall
            _all_pass(rows)
            rates[width] = n / wall
            serial = serial or rates[width]  # the first runner's first width: one check at a time
            ratio = rates[width] / rates[contexts[0]]
            goal = " (goal >= 3x at 8)" if width == 8 else ""
            shape = f" [{DASK_WORKERS} workers x {_dask_threads(width)} threads]" if name == "dask" else ""
            print(
                f"  {name:<8} {width:>2} contexts{shape}: {rates[width]:6.2f} checks/s, {ratio:4.2f}x {contexts[0]} context, "
                f"{rates[width] / serial:4.2f}x serial{goal}; "
                f"{cpu / n * 1000:5.0f} ms CPU a check (without the Prefect server); machine busy {busy:.2f} of {os.cpu_count()} cores"
            )


def serve_elsewhere(delay: float = 0.0) -> tuple[subprocess.Popen[str], str, int]:
    """Start the site in a child process (this script with --serve); it, its base URL and its pid."""
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--delay", str(delay)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    base = proc.stdout.readline().strip()
    if not base.startswith("http://"):
        proc.kill()
        raise SystemExit(f"the site server did not start: {base!r}")
    return proc, base, proc.pid


def _stop(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=10)


def _default_pool() -> httpx.AsyncHTTPTransport:
    """The pool httpx builds by default, with the limits the checker gave it before udm.net.httppool."""
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


def _serve_child(delay: float) -> None:
    """The child: the site on 127.0.0.1 and its third-party host on 127.0.0.2, same port and pages."""
    Handler.delay = delay
    Handler.assets = {
        "/site.css": ("text/css", b"h1{color:#135}ul{columns:2}" * 20),
        "/body.woff2": ("font/woff2", os.urandom(40_000)),
        "/logo.png": ("image/png", _png()),
        "/intro.webm": ("video/webm", os.urandom(300_000)),
        "/widget.js": ("text/javascript", b"document.body.dataset.widget = 'loaded';"),
    }
    server, base = serve(SITE_HOSTS[0])
    other, third = serve(SITE_HOSTS[1], server.server_address[1])
    Handler.third_party = third
    print(base, flush=True)
    sys.stdin.read()  # serve until the parent closes our stdin (or dies)
    server.shutdown()
    other.shutdown()


def _prefect_server(settings: Settings) -> tuple[int | None, Callable[[], None]]:
    """A Prefect API for the flow runs: PREFECT_API_URL if set, else a local server started here."""
    if os.environ.get("PREFECT_API_URL"):
        print(f"using the Prefect server at {os.environ['PREFECT_API_URL']}")
        return None, lambda: None
    from flows.local_server import start_server, stop_server

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    print("starting a local Prefect server for the flow runs ...", flush=True)
    info = start_server(settings, port=port, timeout=180)
    os.environ["PREFECT_API_URL"] = info.api_url

    def stop() -> None:
        stop_server(settings)

    return info.pid, stop


def main() -> None:
    """Run the benchmarks (or, with --serve, just the site for a parent benchmark)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=48, help="checks per runner and context count")
    parser.add_argument("--contexts", default="1,4,8", help="browser contexts to compare, comma-separated")
    parser.add_argument("--runners", default=",".join(RUNNERS), help=f"runners: {', '.join(RUNNERS)}")
    parser.add_argument("--delay", type=float, default=0.15, help="seconds before every response")
    parser.add_argument("--cpu-checks", type=int, default=48, help="checks per CPU batch")
    parser.add_argument("--links", type=int, default=2000)
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per figure of the CPU and link benchmarks"
    )
    parser.add_argument("--only", choices=("checks", "cpu", "links"), help="run one of the benchmarks")
    parser.add_argument("--browser", help="Chromium executable (default: found as in use)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve_child(args.delay)
        return
    contexts = [int(x) for x in args.contexts.split(",") if x.strip()]
    runners = [r.strip() for r in args.runners.split(",") if r.strip()]
    unknown = [r for r in runners if r not in RUNNERS]
    if unknown:
        raise SystemExit(f"unknown runner(s) {', '.join(unknown)}; known: {', '.join(RUNNERS)}")
    # A log line per task run would bury the figures (and cost CPU of its own): warnings only.
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    tmp = Path(tempfile.mkdtemp(prefix="udm-bench-browser-"))
    (tmp / "docs" / "udm").mkdir(parents=True)
    # The site is on loopback: the SSRF guard refuses it unless allow-listed, here and in the flow runs.
    os.environ["UDM_FETCH_ALLOW"] = ",".join(SITE_HOSTS)
    settings = load_settings(cwd=tmp, browser=args.browser, fetch_allow=list(SITE_HOSTS))
    stop_prefect: Callable[[], None] = lambda: None  # noqa: E731
    try:
        if args.only in (None, "checks", "cpu"):
            site, base, site_pid = serve_elsewhere(args.delay)
            exclude = {site_pid}
            print(
                f"browser: {find_browser(settings) or 'Playwright Chromium'}; site in a child process, "
                f"{args.delay * 1000:.0f} ms per response; {os.cpu_count()} cores, shared with whatever else runs"
            )
            try:
                if args.only in (None, "cpu"):
                    run_checks_sync(
                        make_checks(4), settings, base_url=base, concurrency=4
                    )  # warm the browser
                    bench_cpu(args.cpu_checks, max(contexts), base, settings, exclude, args.repeat)
                if args.only in (None, "checks"):
                    prefect_pid, stop_prefect = _prefect_server(settings)
                    if prefect_pid:
                        exclude.add(prefect_pid)
                    bench_runners(args.checks, contexts, runners, base, settings, exclude)
            finally:
                _stop(site)
        if args.only in (None, "links"):
            server, in_process = serve()
            child, child_base, _pid = serve_elsewhere()
            try:
                bench_links(args.links, child_base, tmp, args.repeat, in_process_base=in_process)
            finally:
                _stop(child)
                server.shutdown()
    finally:
        close_clusters()
        run_coroutine(MANAGER.shutdown(), timeout=30)
        stop_prefect()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
