"""`./run bench query`: `udm query id`, `udm search` and `udm query section` as processes, with and
without `udm daemon`, each as a ratio to `rg -F` over the same files in the same run.

Two corpora: the 100 MB benchmark corpus (2,000 files) and one of 40,000 small files. Each pair of
runs times the `udm` process then the `rg -F` process back to back (after one unmeasured warm-up
pair), so a machine whose speed drifts moves both; the figures are medians of the per-pair walls and
of the per-pair ratios. Goal: with the daemon, <= 3x rg's wall on both corpora. The output of every
command is checked to be the same with and without the daemon.

Usage: `./run bench query [--runs N] [--small-files N] [--quick]` (`--quick`: two small corpora, for a
smoke run).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import CORPUS_DIR, CorpusInfo, CorpusSpec, ensure_corpus  # noqa: E402
from machine import calibration  # noqa: E402

GOAL = 3.0


def _udm() -> list[str]:
    script = Path(sys.executable).parent / "udm"
    return (
        [str(script)] if script.exists() else [sys.executable, "-c", "from flows.entry import main; main()"]
    )


def _env() -> dict[str, str]:
    # The user's UDM_* settings would change the answers (and the daemon's fingerprint).
    env = {k: v for k, v in os.environ.items() if not k.startswith("UDM_")}
    env["PYTHONPATH"] = str(ROOT)
    return env


def _timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str, int]:
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    return (time.perf_counter() - t) * 1000, proc.stdout + proc.stderr, proc.returncode


def paired(a: list[str], b: list[str], cwd: Path, env: dict[str, str], runs: int) -> dict[str, float | str]:
    """Median wall (ms) of A and B, and the median of the per-pair ratios A/B; A's last output."""
    _timed(a, cwd, env)
    _timed(b, cwd, env)
    walls_a: list[float] = []
    walls_b: list[float] = []
    ratios: list[float] = []
    out = ""
    for _ in range(runs):
        ta, out, _code = _timed(a, cwd, env)
        tb, _, _ = _timed(b, cwd, env)
        walls_a.append(ta)
        walls_b.append(tb)
        ratios.append(ta / tb)
    return {
        "a_ms": statistics.median(walls_a),
        "b_ms": statistics.median(walls_b),
        "ratio": statistics.median(ratios),
        "spread": f"{min(ratios):.2f}-{max(ratios):.2f}",
        "out": out,
    }


def bench_corpus(label: str, info: CorpusInfo, runs: int) -> list[tuple[str, ...]]:
    """Every command with and without the daemon on one corpus; the table rows."""
    project = CORPUS_DIR / f"query-{Path(info.root).name}"
    shutil.rmtree(project, ignore_errors=True)
    (project / "logs").mkdir(parents=True)
    env = _env()
    base = [*_udm(), "--root", info.root, "--state-dir", str(project / "state")]
    t = time.perf_counter()
    code = subprocess.run([*base, "index"], cwd=project, env=env, capture_output=True, check=False).returncode
    print(
        f"{label}: {info.files} files, {info.bytes / 1e6:.1f} MB; indexed in {time.perf_counter() - t:.1f} s (exit {code})"
    )
    rg = shutil.which("rg")
    if rg is None:
        raise SystemExit("rg (ripgrep) is not installed: the baseline is missing")
    ident, word = info.sample_ids[0], info.sample_words[0]
    cases = [
        ("query id", [*base, "query", "id", ident], [rg, "-F", ident, info.root]),
        ("search", [*base, "search", word], [rg, "-F", word, info.root]),
        ("query section", [*base, "query", "section", ident], [rg, "-F", ident, info.root]),
    ]
    rows: list[tuple[str, ...]] = []
    outputs: dict[str, str] = {}
    for mode in ("no daemon", "daemon"):
        if mode == "daemon":
            t = time.perf_counter()
            started = subprocess.run(
                [*base, "daemon", "start"], cwd=project, env=env, capture_output=True, text=True
            )
            print(
                f"  daemon start: {time.perf_counter() - t:.1f} s: {started.stdout.strip() or started.stderr.strip()}"
            )
        try:
            for name, udm_cmd, rg_cmd in cases:
                r = paired(udm_cmd, rg_cmd, project, env, runs)
                same = ""
                if mode == "no daemon":
                    outputs[name] = str(r["out"])
                else:
                    same = "same" if outputs[name] == r["out"] else "DIFFERENT"
                goal = f"<= {GOAL:g}x" if mode == "daemon" else ""
                met = ("yes" if float(r["ratio"]) <= GOAL else "NO") if mode == "daemon" else ""
                rows.append(
                    (
                        label,
                        name,
                        mode,
                        f"{float(r['a_ms']):.0f}",
                        f"{float(r['b_ms']):.0f}",
                        f"{float(r['ratio']):.2f}",
                        str(r["spread"]),
                        goal,
                        met,
                        same,
                    )
                )
                print("  " + "  ".join(rows[-1][1:]), flush=True)
        finally:
            if mode == "daemon":
                subprocess.run(
                    [*base, "daemon", "stop"], cwd=project, env=env, capture_output=True, check=False
                )
    return rows


def main() -> None:
    """Generate (or reuse) the corpora, run every pair and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="measured pairs per command (median)")
    parser.add_argument("--small-files", type=int, default=40_000, help="files of the small-file corpus")
    parser.add_argument("--quick", action="store_true", help="two small corpora, for a smoke run")
    args = parser.parse_args()
    print(calibration(), flush=True)
    if args.quick:
        specs = [
            ("mid corpus", CorpusSpec(files=60, target_mb=3, tasks=600)),
            ("small files", CorpusSpec(files=600, target_mb=1.2, tasks=1000)),
        ]
    else:
        n = args.small_files
        specs = [
            ("100 MB corpus", CorpusSpec()),
            (f"{n:,} small files", CorpusSpec(files=n, target_mb=round(n / 1000, 1), tasks=n // 2)),
        ]
    rows: list[tuple[str, ...]] = []
    for label, spec in specs:
        t = time.perf_counter()
        info = ensure_corpus(spec)
        print(f"{label}: corpus ready in {time.perf_counter() - t:.1f} s", flush=True)
        rows += bench_corpus(label, info, args.runs)
    head = ("corpus", "command", "mode", "udm ms", "rg ms", "udm/rg", "range", "goal", "met", "output")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    print()
    for r in [head, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    print(f"\nmedians of {args.runs} paired runs (udm then rg -F, back to back); {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
