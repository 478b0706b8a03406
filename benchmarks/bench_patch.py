"""Benchmark of patches: a one-key YAML edit in a 50 KB file, a 100-operation commit over 50 files, vs whole-file mdformat.

Run: ./run bench patch. The corpus is generated in benchmarks/.corpus/patch (git-ignored).
"""

from __future__ import annotations

import shutil
import statistics
import time
from pathlib import Path

from udm.config import load_settings
from udm.markdown import parse_document
from udm.patch import Workspace, apply_operations, apply_patch, parse_patch
from udm.patch.splice import changed_line_count
from udm.patch.workspace import _CACHE

CORPUS = Path(__file__).resolve().parent / ".corpus" / "patch"


def _task(n: int) -> str:
    return (
        f"### TASK-P1-M1.1-T{n:03}: Task number {n}\n\n"
        f"Do the work of task {n}; see [the config](#config) and keep *notes* short.\n\n"
        "1. first step\n2. second step\n\n"
        f'```yaml\nid: TASK-P1-M1.1-T{n:03}\ntitle: "Task number {n}"\nstatus: todo   # updated by the update flow\n'
        "depends_on:\n  - TASK-P1-M1.1-T001\n```\n\n"
    )


def big_doc(target: int = 50_000) -> str:
    """A hand-written-looking roadmap of about `target` bytes."""
    parts = ["# Roadmap\n\n## Config\n\nSettings live in 06-config.md.\n\n## Tasks\n\n"]
    n = 1
    while sum(map(len, parts)) < target:
        parts.append(_task(n))
        n += 1
    return "".join(parts)


def _ms(samples: list[float]) -> str:
    return f"median {statistics.median(samples) * 1000:.2f} ms (min {min(samples) * 1000:.2f})"


def bench_one_key() -> tuple[float, float]:
    text = big_doc()
    target = "TASK-P1-M1.1-T040"
    patch = parse_patch(
        {
            "operations": [
                {"op": "set_yaml_key", "file": "r.md", "section": target, "key": "status", "value": "done"}
            ]
        }
    )
    raw = text.encode()
    times: list[float] = []
    warm: list[float] = []
    after = ""
    for _ in range(30):
        _CACHE.clear()  # cold: the file's text was never parsed in this process
        ws = Workspace(Path("/"), reader=lambda rel: raw)
        t = time.perf_counter()
        apply_operations(patch, ws)
        times.append(time.perf_counter() - t)
        after = ws.read("r.md") or ""
        # warm: the same text parsed moments ago (a commit right after its plan)
        ws = Workspace(Path("/"), reader=lambda rel: raw)
        t = time.perf_counter()
        apply_operations(patch, ws)
        warm.append(time.perf_counter() - t)
    parse = []
    for _ in range(10):
        t = time.perf_counter()
        parse_document(text, "r.md")
        parse.append(time.perf_counter() - t)
    added, removed = changed_line_count(text, after)
    print(
        f"one-key YAML edit in a {len(raw) / 1000:.0f} KB file (in-process), cold: {_ms(times)}; diff +{added} -{removed} lines"
    )
    print(f"  of which parsing the document (udm.markdown.document.parse_document): {_ms(parse)}")
    print(f"  warm (the document parsed moments before, as a commit after its plan): {_ms(warm)}")

    import mdformat

    whole = []
    formatted = ""
    for _ in range(5):
        _CACHE.clear()
        t = time.perf_counter()
        ws = Workspace(Path("/"), reader=lambda rel: raw)
        apply_operations(patch, ws)
        formatted = mdformat.text(ws.read("r.md") or "", extensions={"gfm", "frontmatter"})
        whole.append(time.perf_counter() - t)
    fa, fr = changed_line_count(text, formatted)
    print(f"same edit, then mdformat of the whole file: {_ms(whole)}; diff +{fa} -{fr} lines")
    print(
        f"  ratio: splicing is {statistics.median(whole) / statistics.median(times):.0f}x faster and changes "
        f"{(fa + fr) / max(added + removed, 1):.0f}x fewer lines"
    )
    return statistics.median(times), statistics.median(warm)


def bench_commit() -> float:
    project = CORPUS / "project"
    shutil.rmtree(project, ignore_errors=True)
    root = project / "docs" / "udm"
    root.mkdir(parents=True)
    (project / "state").mkdir()
    for f in range(50):
        body = "".join(
            f"## Item {f}-{k}\n\nText {k}.\n\n```yaml\nid: CFG-{f * 10 + k}\nvalue: {k}\n```\n\n"
            for k in range(4)
        )
        (root / f"doc{f:02}.md").write_text(f"# Doc {f}\n\n{body}", encoding="utf-8")
    ops = []
    for f in range(50):
        ops.append(
            {
                "op": "set_yaml_key",
                "file": f"doc{f:02}.md",
                "section": f"Item {f}-1",
                "key": "value",
                "value": 100,
            }
        )
        ops.append({"op": "replace_text", "file": f"doc{f:02}.md", "old": "Text 3.", "new": "Text three."})
    settings = load_settings(cwd=project)
    t = time.perf_counter()
    result = apply_patch(parse_patch({"id": "bench-100", "operations": ops}), settings)
    elapsed = time.perf_counter() - t
    assert result.status == "committed", result.error
    print(
        f"100-operation patch over 50 files, committed with fsync: {elapsed * 1000:.0f} ms ({len(result.files)} files)"
    )
    return elapsed


def main() -> None:
    """Run both measurements and print them with their targets."""
    CORPUS.mkdir(parents=True, exist_ok=True)
    cold, warm = bench_one_key()
    commit = bench_commit()
    print(
        f"targets: one-key edit <= 5 ms: cold {'met' if cold <= 0.005 else 'NOT met'}, warm "
        f"{'met' if warm <= 0.005 else 'NOT met'}; 100-op commit <= 1 s: {'met' if commit <= 1 else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
