"""Knowledge-graph benchmark: build, anchored Cypher, prepared SPARQL, impact, and a runaway pattern.

Run: ./run bench graph [--source corpus|rows] [--files 2000] [--repeat 200]

`--source corpus` (the default when benchmarks/corpus.py is present): the generated 2,000-file corpus
(about 100 MB, 60k tasks) is indexed into DuckDB and the graph is built from the index, exactly as
`udm graph` does. `--source rows`: a seeded generator makes graph rows of the same shape directly
(each task in its own section, dependencies on earlier tasks, an owner mode, component references,
links), so the figures do not depend on parsing. Baselines measured in the same run: grand-cypher over
the same networkx graph (the engine the issue measured first) and rdflib prepared SPARQL over the
task subgraph.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from udm.errors import GraphTimeoutError
from udm.graph import ops as graph_ops
from udm.graph.model import GraphRows, build_graph, section_node_id
from udm.graph.sparql import node_iri
from udm.graph.store import GraphHandle, graph_from_rows

MODES = [
    f"ROO-MODE-{n}" for n in ("RESEARCH", "PLAN", "BUILD-BACKEND", "BUILD-FRONTEND", "QA-VERIFY", "DOCS")
]
STATUSES = ["todo", "in_progress", "done", "blocked"]


def make_rows(files: int, tasks_per_file: int, seed: int = 7) -> GraphRows:
    """A seeded manual: files of milestones, each task a section with a YAML block and cross-references."""
    rng = random.Random(seed)
    rows = GraphRows()
    components = [f"COMP-{i:03d}" for i in range(1, 201)]
    all_tasks: list[str] = []
    for f in range(files):
        path = f"roadmap/phase-{f // 100:02d}/milestone-{f:04d}.md"
        rows.files.append({"path": path, "hash": f"h{f}"})
        top = section_node_id(path, f"milestone-{f}")
        rows.sections.append(
            {
                "file": path,
                "anchor": f"milestone-{f}",
                "title": f"Milestone {f}",
                "level": 2,
                "line": 1,
                "parent": None,
            }
        )
        for t in range(tasks_per_file):
            tid = f"TASK-P{f // 100}-M{f}.{t // 10}-T{t:03d}"
            anchor = f"task-{t}"
            sid = section_node_id(path, anchor)
            rows.sections.append(
                {
                    "file": path,
                    "anchor": anchor,
                    "title": f"{tid}: work item {t}",
                    "level": 4,
                    "line": 10 + t * 20,
                    "parent": top,
                }
            )
            # Dependencies on earlier tasks (a DAG): mostly in the same milestone, sometimes a few files back.
            deps: list[str] = []
            here = len(all_tasks)
            for _ in range(rng.choice((0, 1, 1, 2, 2, 3))):
                if t > 0 and rng.random() < 0.85:
                    deps.append(all_tasks[here - rng.randint(1, t)])
                elif f > 0:
                    back_file = max(0, f - rng.randint(1, 5))
                    deps.append(all_tasks[back_file * tasks_per_file + rng.randrange(tasks_per_file)])
            deps = sorted(set(deps))
            rows.tasks.append(
                {
                    "id": tid,
                    "title": f"work item {t}",
                    "status": rng.choice(STATUSES),
                    "phase": f"P{f // 100}",
                    "milestone": f"M{f}",
                    "mode": rng.choice(MODES),
                    "depends_on": deps,
                    "file": path,
                    "line": 12 + t * 20,
                    "section": sid,
                }
            )
            rows.ids.append(
                {"id": tid, "file": path, "line": 10 + t * 20, "section": sid, "role": "definition"}
            )
            for dep in deps:
                rows.ids.append(
                    {"id": dep, "file": path, "line": 15 + t * 20, "section": sid, "role": "reference"}
                )
            comp = rng.choice(components)
            rows.ids.append(
                {"id": comp, "file": path, "line": 16 + t * 20, "section": sid, "role": "reference"}
            )
            if rng.random() < 0.1:
                rows.links.append(
                    {"section": sid, "target": f"https://docs.example.org/{f}/{t}", "kind": "external"}
                )
            all_tasks.append(tid)
    arch = "02-architecture.md"
    rows.files.append({"path": arch, "hash": "arch"})
    for comp in components:
        sid = section_node_id(arch, comp.lower())
        rows.sections.append(
            {"file": arch, "anchor": comp.lower(), "title": comp, "level": 3, "line": 1, "parent": None}
        )
        rows.ids.append({"id": comp, "file": arch, "line": 2, "section": sid, "role": "definition"})
        rows.components.append(
            {"id": comp, "title": comp, "owner": [rng.choice(MODES)], "depends_on": rng.sample(components, 2)}
        )
    for mode in MODES:
        rows.modes.append({"id": mode, "title": mode, "tools": ["udmQueryTool", "fileSystemAccessTool"]})
    return rows


def corpus_rows(files: int, state: Path) -> tuple[GraphRows, dict[str, float]]:
    """Rows of the generated corpus, read from a freshly built DuckDB index (as `udm graph` reads them)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from corpus import CorpusSpec, ensure_corpus

    from udm.config import load_settings
    from udm.graph.facts import index_source

    notes: dict[str, float] = {}
    started = time.perf_counter()
    spec = CorpusSpec(files=files, target_mb=100.0 * files / 2000, tasks=30 * files)
    info = ensure_corpus(spec)
    notes["corpus ready (generated once, then reused)"] = time.perf_counter() - started
    print(f"knowledge-graph benchmark: corpus {info.root} ({info.files} files, {info.bytes / 1e6:.0f} MB)")
    settings = load_settings(cwd=state, root=Path(info.root), state_dir=state / "state")
    source = index_source(settings)
    started = time.perf_counter()
    source.fingerprint()  # refreshes the index: a full build in this fresh state folder
    notes["DuckDB index built (udm index)"] = time.perf_counter() - started
    return source.rows(), notes


def _peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB (Linux reports kilobytes)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _worker_peak_mb() -> float | None:
    """The SPARQL worker process's peak resident memory in MB (from /proc; None where there is none)."""
    from udm.graph.sparql import shared_runner

    proc = shared_runner()._proc
    if proc is None:
        return None
    try:
        with open(f"/proc/{proc.pid}/status", encoding="ascii") as fh:
            return next(int(ln.split()[1]) for ln in fh if ln.startswith("VmHWM")) / 1024
    except (OSError, StopIteration):
        return None


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """p50 and p99 in milliseconds."""
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.99))]


def line(label: str, value: str, note: str = "") -> None:
    print(f"  {label:<52} {value:>14}  {note}")


def _grand_graph(handle: GraphHandle) -> Any:
    import networkx as nx

    # grand-cypher's conventions: labels in `__labels__` on nodes and edges.
    g = nx.MultiDiGraph()
    for node, attrs in handle.kg.g.nodes(data=True):
        g.add_node(node, __labels__={attrs["kind"]}, id=node, kind=attrs["kind"])
    for src, key, dst in handle.kg.edges():
        g.add_edge(src, dst, key=key, __labels__={key})
    return g


def grand_cypher_baseline(g: Any, task: str, repeat: int) -> float:
    from grandcypher import GrandCypher

    query = f'MATCH (a {{id: "{task}"}})-[r:depends_on]->(b) RETURN b.id'
    GrandCypher(g).run(query)
    p50, _ = timed(lambda: GrandCypher(g).run(query), max(3, repeat // 20))
    return p50


def grand_cypher_unanchored(g: Any, keep: list[str], limit_s: float, folder: Path) -> str:
    """grand-cypher cannot be interrupted: run an unanchored pattern in a child process and kill it."""
    import pickle

    path = folder / "grand-sub.pickle"
    path.write_bytes(pickle.dumps(g.subgraph(keep).copy()))
    code = (
        "import pickle, sys, time\n"
        "from grandcypher import GrandCypher\n"
        "g = pickle.loads(open(sys.argv[1], 'rb').read())\n"
        "t = time.perf_counter()\n"
        "GrandCypher(g).run('MATCH (a)-[]->(b)-[]->(c) RETURN a.id, c.id')\n"
        "print(time.perf_counter() - t)\n"
    )
    started = time.perf_counter()
    try:
        out = subprocess.run(
            [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=limit_s
        )
        if out.returncode != 0:
            return "failed: " + out.stderr.strip().splitlines()[-1][:60]
        return f"finished in {float(out.stdout.strip()):.2f} s"
    except subprocess.TimeoutExpired:
        return f"not finished after {time.perf_counter() - started:.1f} s (killed)"


def rdflib_baseline(handle: GraphHandle, task: str, repeat: int) -> tuple[float, float] | None:
    try:
        import rdflib
        from rdflib.plugins.sparql import prepareQuery
    except ImportError:
        return None
    ns = rdflib.Namespace("https://udm-pipelines.dev/ns/kg#")
    g = rdflib.Graph()
    started = time.perf_counter()
    for src, key, dst in handle.kg.edges():
        if key == "depends_on":
            g.add((rdflib.URIRef(node_iri(src)), ns.depends_on, rdflib.URIRef(node_iri(dst))))
    for node in handle.kg.nodes_of("task"):
        g.add((rdflib.URIRef(node_iri(node)), ns.id, rdflib.Literal(node)))
    load_s = time.perf_counter() - started
    q = prepareQuery("SELECT ?b WHERE { ?a udm:id ?x ; udm:depends_on ?b }", initNs={"udm": ns})
    lit = rdflib.Literal(task)
    list(g.query(q, initBindings={"x": lit}))
    p50, _ = timed(lambda: list(g.query(q, initBindings={"x": lit})), repeat)
    return p50, load_s


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    have_corpus = (Path(__file__).resolve().parent / "corpus.py").exists()
    parser.add_argument("--source", choices=("corpus", "rows"), default="corpus" if have_corpus else "rows")
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--tasks-per-file", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--limit", type=float, default=2.0, help="Time limit of the runaway queries, s.")
    args = parser.parse_args(argv)

    load = os.getloadavg()[0]
    print(f"machine: {os.cpu_count()} cores, load average {load:.1f} at the start (figures scale with it)")
    with tempfile.TemporaryDirectory(prefix="bench-graph-") as tmp:
        state = Path(tmp)
        started = time.perf_counter()
        if args.source == "corpus":
            rows, notes = corpus_rows(args.files, state)
        else:
            print(
                f"knowledge-graph benchmark: generated rows, {args.files} files x {args.tasks_per_file} tasks"
            )
            rows, notes = make_rows(args.files, args.tasks_per_file), {}
        gen_s = time.perf_counter() - started
        started = time.perf_counter()
        kg = build_graph(rows)
        build_s = time.perf_counter() - started
        started = time.perf_counter()
        handle = graph_from_rows(rows, state, timeout_s=args.limit)
        handle_s = time.perf_counter() - started  # includes the JSON cache written for the next process
        started = time.perf_counter()
        handle.cypher_store()
        cypher_build_s = time.perf_counter() - started
        # The RDF build is the memory peak of a first SPARQL query: its growth of this process's peak
        # RSS is the loader's own cost (the graph and the rows are already in memory).
        peak_before = _peak_rss_mb()
        started = time.perf_counter()
        handle.rdf_store()
        rdf_build_s = time.perf_counter() - started
        rdf_peak_growth = _peak_rss_mb() - peak_before
        stats = kg.stats()
        print(f"graph: {stats['nodes']:,} nodes, {stats['edges']:,} edges; kinds {stats['kinds']}")
        print("\nbuild")
        for label, seconds in notes.items():
            line(label, f"{seconds:.2f} s")
        line("rows read" if notes else "rows generated", f"{gen_s - sum(notes.values()):.2f} s")
        line("networkx graph from rows", f"{build_s:.2f} s")
        line("graph + JSON cache written", f"{handle_s:.2f} s")
        line("Cypher store (ladybug, CSV + COPY)", f"{cypher_build_s:.2f} s")
        line("RDF store (pyoxigraph bulk load)", f"{rdf_build_s:.2f} s")
        line(
            "peak RSS growth while the RDF store loads",
            f"{rdf_peak_growth:.0f} MB",
            f"(process peak {_peak_rss_mb():.0f} MB)",
        )
        from udm.graph.store import _load_or_build

        started = time.perf_counter()
        _load_or_build(handle.folder, lambda: rows, handle.kg.fingerprint)
        line("graph loaded from the JSON cache (next process)", f"{time.perf_counter() - started:.2f} s")

        tasks = handle.kg.nodes_of("task")
        rng = random.Random(3)
        picks = [rng.choice(tasks) for _ in range(args.repeat)]
        it = iter(picks * 10)

        print("\nqueries (p50 / p99, ms)")
        p50, p99 = timed(
            lambda: handle.cypher(f"MATCH (a {{id: '{next(it)}'}})-[:depends_on]->(b) RETURN b.id"),
            args.repeat,
        )
        line("anchored Cypher, literal id (target <= 10 ms)", f"{p50:.2f} / {p99:.2f}")
        anchored_cypher = p50
        p50, p99 = timed(
            lambda: handle.cypher("MATCH (a {id: $id})-[:depends_on]->(b) RETURN b.id", {"id": next(it)}),
            args.repeat,
        )
        line("anchored Cypher, parameter", f"{p50:.2f} / {p99:.2f}")
        sparql_q = "SELECT ?x ?b WHERE { ?a udm:id ?x ; udm:depends_on ?b }"
        p50, p99 = timed(
            lambda: handle.sparql(sparql_q, {"x": {"type": "literal", "value": next(it)}}), args.repeat
        )
        line("prepared SPARQL, bound id via worker (target <= 1 ms)", f"{p50:.2f} / {p99:.2f}")
        worker_mb = _worker_peak_mb()
        if worker_mb is not None:
            line("SPARQL worker peak RSS", f"{worker_mb:.0f} MB")
        sparql_p50 = p50
        rit = iter(picks * 10)
        p50, p99 = timed(lambda: graph_ops.dependents(handle.kg, next(rit)), args.repeat)
        sizes = sorted(len(graph_ops.dependents(handle.kg, r)) for r in picks[:50])
        line(
            "transitive dependents of a task (target <= 20 ms)",
            f"{p50:.2f} / {p99:.2f}",
            f"(impact: median {sizes[len(sizes) // 2]}, max {sizes[-1]} nodes)",
        )
        early = [t["id"] for t in rows.tasks[: len(rows.tasks) // 20]]
        eit = iter(early * 10)
        p50, p99 = timed(lambda: graph_ops.dependents(handle.kg, next(eit)), min(args.repeat, 100))
        line("transitive dependents of an early task (worst case)", f"{p50:.2f} / {p99:.2f}")
        p50, p99 = timed(lambda: graph_ops.dependencies(handle.kg, next(it)), min(args.repeat, 200))
        line("transitive dependencies of a late task", f"{p50:.2f} / {p99:.2f}")
        p50, _ = timed(lambda: graph_ops.topological_order(handle.kg), 3)
        line("topological order of all tasks", f"{p50:.0f} ms")
        p50, _ = timed(lambda: graph_ops.cycles(handle.kg), 3)
        line("cycle check (strongly connected components)", f"{p50:.0f} ms")
        a, b = tasks[-1], tasks[len(tasks) // 2]
        p50, _ = timed(lambda: graph_ops.shortest_path(handle.kg, a, b, directed=False), 5)
        line("shortest path between two tasks (all edges, undirected)", f"{p50:.0f} ms")

        print(f"\nunanchored patterns (limit {args.limit:g} s)")
        for query in (
            "MATCH (a:task)-[:depends_on]->(b)-[:depends_on]->(c) RETURN count(*)",
            "MATCH (a)-[:depends_on*1..6]->(b) RETURN count(*)",
            "MATCH (a)-[*1..4]-(b)-[*1..4]-(c) RETURN count(*)",
        ):
            started = time.perf_counter()
            try:
                got = handle.cypher(query)
                outcome = f"finished: {got.rows[0][0]:,} rows counted"
            except GraphTimeoutError:
                outcome = "stopped at the limit"
            line(query[:52], f"{time.perf_counter() - started:.2f} s", outcome)
        started = time.perf_counter()
        try:
            handle.sparql("SELECT (COUNT(*) AS ?n) WHERE { ?a ?p ?b . ?c ?q ?d }")
            outcome = "finished"
        except GraphTimeoutError:
            outcome = "stopped at the limit (worker killed)"
        line("SPARQL cross product", f"{time.perf_counter() - started:.2f} s", outcome)
        started = time.perf_counter()
        handle.sparql(sparql_q, {"x": {"type": "literal", "value": tasks[5]}})
        line("next SPARQL query (worker restarted)", f"{(time.perf_counter() - started) * 1000:.0f} ms")

        print("\nbaselines measured in this run")
        g = _grand_graph(handle)
        gc = grand_cypher_baseline(g, picks[0], args.repeat)
        line(
            "grand-cypher anchored, same graph",
            f"{gc:.1f} ms",
            f"ladybug is {gc / anchored_cypher:.1f}x faster",
        )
        order = [t["id"] for t in rows.tasks]
        for n in (1000, 10000, len(order)):
            outcome = grand_cypher_unanchored(g, order[:n], args.limit * 5, state)
            line(f"grand-cypher unanchored 2-hop, {n} tasks", outcome)
        rd = rdflib_baseline(handle, picks[0], args.repeat)
        if rd is not None:
            line(
                "rdflib prepared SPARQL, task subgraph",
                f"{rd[0]:.2f} ms",
                f"(load {rd[1]:.1f} s; pyoxigraph+worker {rd[0] / sparql_p50:.1f}x)",
            )
        handle.close()
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
