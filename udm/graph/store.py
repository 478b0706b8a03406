"""The knowledge graph of the manual: built from its current facts, cached per fingerprint, queried bounded.

`open_graph(settings)` returns a `GraphHandle` for the manual as it is on disk now: the graph is rebuilt
only when the files' content hashes changed (kept in memory per process and cached as JSON under
`<state>/graph/<fingerprint>/`, next to the Cypher database and the RDF store built from it on first
use). The JSON cache is read back as untrusted data (`udm.graph.cache`): one that fails validation is
rebuilt from the index, never executed and never a crash. Every query runs with a time limit and a row
cap.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock

from udm.config import Settings, ensure_folder
from udm.errors import GraphQueryError, GraphTimeoutError, GraphUnavailableError
from udm.graph import ops as ops
from udm.graph.cache import CACHE_NAME, CacheInvalid, read_graph, write_graph
from udm.graph.cypher import CypherStore, QueryResult, build_cypher_store
from udm.graph.model import GraphRows, KnowledgeGraph, build_graph
from udm.graph.nl import Translation, translate
from udm.graph.sparql import build_rdf_store, shared_runner, with_prefixes

__all__ = [
    "GraphHandle",
    "GraphSource",
    "KnowledgeGraph",
    "QueryResult",
    "clear_cache",
    "graph_from_rows",
    "open_graph",
    "run_operation",
]

# How many fingerprint folders to keep under <state>/graph (older ones are removed after a build).
KEEP_BUILDS = 3
DEFAULT_ROW_CAP = 1000
_OPERATIONS = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="udm-graph-op")


@dataclass
class GraphSource:
    """Where a graph comes from: a cheap fingerprint of the current facts, and the rows themselves."""

    fingerprint: Callable[[], str]
    rows: Callable[[], GraphRows]


@dataclass
class GraphHandle:
    """One built graph plus its lazily built query stores under `folder`."""

    kg: KnowledgeGraph
    folder: Path
    timeout_s: float = 2.0
    row_cap: int = DEFAULT_ROW_CAP
    build_ms: float = 0.0
    # Where the graph came from: "built", "loaded" (the JSON cache), or "rebuilt: <why the cache was refused>".
    cache: str = "built"
    _cypher: CypherStore | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # ----------------------------------------------------------------- stores

    def _build_once(self, target: Path, builder: Callable[[KnowledgeGraph, Path], Any]) -> None:
        if target.exists():
            return
        ensure_folder(self.folder)
        # Several processes may want the same store at once: one builds, the others wait and reuse it.
        with FileLock(str(self.folder / ".build.lock"), timeout=120):
            if not target.exists():
                builder(self.kg, target)

    def cypher_store(self) -> CypherStore:
        """The read-only Cypher database of this graph (built on first use)."""
        with self._lock:
            if self._cypher is None:
                target = self.folder / "cypher.lbug"
                self._build_once(target, build_cypher_store)
                self._cypher = CypherStore(target)
            return self._cypher

    def rdf_store(self) -> Path:
        """The folder of this graph's RDF store (built on first use)."""
        target = self.folder / "rdf"
        with self._lock:
            self._build_once(target, build_rdf_store)
        return target

    # ---------------------------------------------------------------- queries

    def _limits(self, timeout_s: float | None, row_cap: int | None) -> tuple[float, int]:
        return (timeout_s or self.timeout_s, row_cap or self.row_cap)

    def cypher(
        self,
        query: str,
        params: dict[str, Any] | None = None,
        *,
        timeout_s: float | None = None,
        row_cap: int | None = None,
    ) -> QueryResult:
        """Run a read-only Cypher query, bounded in time and rows."""
        timeout, cap = self._limits(timeout_s, row_cap)
        return self.cypher_store().run(query, params, timeout_s=timeout, row_cap=cap, label_of=self._kind_of)

    def _kind_of(self, node_id: str) -> str | None:
        attrs = self.kg.g.nodes.get(node_id)
        return str(attrs["kind"]) if attrs else None

    def sparql(
        self,
        query: str,
        bindings: dict[str, dict[str, str]] | None = None,
        *,
        timeout_s: float | None = None,
        row_cap: int | None = None,
    ) -> QueryResult:
        """Run a SPARQL query over the RDF view in the worker process, bounded in time and rows."""
        timeout, cap = self._limits(timeout_s, row_cap)
        return shared_runner().query(
            self.rdf_store(), with_prefixes(query), bindings, timeout_s=timeout, row_cap=cap
        )

    def natural_language(
        self, question: str, *, timeout_s: float | None = None, row_cap: int | None = None
    ) -> tuple[Translation, QueryResult]:
        """Translate a supported question and run the structured query it became."""
        plan = translate(question)
        if plan.language == "cypher":
            return plan, self.cypher(plan.text, timeout_s=timeout_s, row_cap=row_cap)
        assert plan.operation is not None
        timeout, cap = self._limits(timeout_s, row_cap)
        operation, args = plan.operation, plan.args
        # Operations are linear-time networkx walks: one that overruns is abandoned (it finishes on its
        # own in the background thread) and the caller gets the timeout at the limit.
        future = _OPERATIONS.submit(run_operation, self.kg, operation, args, row_cap=cap)
        try:
            return plan, future.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            raise GraphTimeoutError(
                f"the {operation} operation did not finish within the {timeout:g} s time limit; its result "
                "is discarded"
            ) from None

    def close(self) -> None:
        """Close the Cypher connection (the RDF worker is shared by the process)."""
        with self._lock:
            if self._cypher is not None:
                self._cypher.close()
                self._cypher = None


def _records(rows: list[dict[str, Any]], row_cap: int, extra: dict[str, Any] | None = None) -> QueryResult:
    columns: list[str] = []
    for row in rows:
        for key in row:
            if key not in columns:
                columns.append(key)
    body = [[row.get(c) for c in columns] for row in rows[:row_cap]]
    return QueryResult(columns, body, truncated=len(rows) > row_cap, extra=extra or {})


def run_operation(
    kg: KnowledgeGraph, operation: str, args: dict[str, Any], *, row_cap: int = DEFAULT_ROW_CAP
) -> QueryResult:
    """Run a named graph operation (dependencies, dependents, order, cycles, path, orphans) as rows."""
    via = tuple(args.get("via") or ops.DEFAULT_VIA)
    if operation == "dependencies":
        return _records(ops.dependencies(kg, args["id"], via), row_cap)
    if operation == "dependents":
        return _records(ops.dependents(kg, args["id"], via), row_cap)
    if operation == "order":
        return _records(ops.topological_order(kg, via), row_cap)
    if operation == "cycles":
        return _records(ops.cycles(kg, via), row_cap)
    if operation == "path":
        steps = ops.shortest_path(
            kg,
            args["source"],
            args["target"],
            directed=bool(args.get("directed", False)),
            via=tuple(args.get("via") or ()),
        )
        return _records(steps, row_cap)
    if operation == "orphans":
        kinds = tuple(args.get("kinds") or ops.ENTITY_KINDS)
        return _records(ops.orphans(kg, kinds), row_cap)
    raise GraphQueryError(
        f"unknown graph operation '{operation}' (dependencies, dependents, order, cycles, path, orphans)"
    )


# ---------------------------------------------------------------------- building and caching

_CACHE: dict[Path, GraphHandle] = {}
_CACHE_LOCK = threading.Lock()


def clear_cache() -> None:
    """Forget every graph held in memory (tests; the on-disk builds stay)."""
    with _CACHE_LOCK:
        for handle in _CACHE.values():
            handle.close()
        _CACHE.clear()


def _prune(base: Path, keep: Path) -> None:
    try:
        builds = sorted(
            (p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")),
            key=lambda p: p.stat().st_mtime,
            reverse=True,
        )
    except OSError:
        return
    for old in builds[KEEP_BUILDS:]:
        if old != keep:
            shutil.rmtree(old, ignore_errors=True)


def _load_or_build(
    folder: Path, rows: Callable[[], GraphRows], fingerprint: str
) -> tuple[KnowledgeGraph, float, str]:
    started = time.perf_counter()
    cached = folder / CACHE_NAME
    status = "built"
    if os.path.lexists(cached):
        try:
            return read_graph(cached, fingerprint), (time.perf_counter() - started) * 1000, "loaded"
        except CacheInvalid as exc:
            status = f"rebuilt: {exc}"
            # The stores beside a refused cache were built from who knows what: build them again too.
            with FileLock(str(folder / ".build.lock"), timeout=120):
                for store in ("cypher.lbug", "rdf"):
                    shutil.rmtree(folder / store, ignore_errors=True)
                    with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                        (folder / store).unlink()
    kg = build_graph(rows())
    kg.fingerprint = fingerprint
    ensure_folder(folder)
    write_graph(kg, cached)
    return kg, (time.perf_counter() - started) * 1000, status


def graph_from_rows(rows: GraphRows, state_dir: Path, *, timeout_s: float = 2.0) -> GraphHandle:
    """A handle over a graph built from plain rows, its stores under `state_dir`/graph (tests, benchmarks)."""
    source = GraphSource(fingerprint=rows.fingerprint, rows=lambda: rows)
    return _handle(source, state_dir, timeout_s=timeout_s, row_cap=DEFAULT_ROW_CAP)


def _handle(source: GraphSource, state_dir: Path, *, timeout_s: float, row_cap: int) -> GraphHandle:
    base = state_dir / "graph"
    try:
        fingerprint = source.fingerprint()
    except GraphUnavailableError:
        raise
    except Exception as exc:
        raise GraphUnavailableError(f"cannot read the manual's facts for the graph: {exc}") from exc
    folder = base / fingerprint
    with _CACHE_LOCK:
        current = _CACHE.get(base)
        if current is not None and current.folder == folder:
            current.timeout_s, current.row_cap = timeout_s, row_cap
            return current
        kg, build_ms, status = _load_or_build(folder, source.rows, fingerprint)
        handle = GraphHandle(
            kg=kg, folder=folder, timeout_s=timeout_s, row_cap=row_cap, build_ms=build_ms, cache=status
        )
        if current is not None:
            current.close()
        _CACHE[base] = handle
    _prune(base, folder)
    return handle


def open_graph(settings: Settings, source: GraphSource | None = None) -> GraphHandle:
    """The graph of the manual as it is on disk now (rebuilt only when its files changed)."""
    if source is None:
        from udm.graph.facts import index_source

        source = index_source(settings)
    return _handle(source, settings.state_path, timeout_s=settings.kg_timeout_s, row_cap=settings.kg_row_cap)
