"""SPARQL over an RDF view of the knowledge graph (pyoxigraph), run in a worker process that can be killed.

The RDF view: every node is the IRI `NODE_NS + percent-encoded id`, typed `udm:Task`, `udm:Section` ...;
its properties are literals `udm:id`, `udm:kind`, `udm:title`, `udm:status` ...; every edge is a triple
whose predicate is the edge name in the vocabulary, e.g. `udm:depends_on`. Prefixes `udm:` (VOCAB_NS)
and `node:` (NODE_NS) are predeclared: a query that does not declare them gets them prepended.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from udm.errors import GraphQueryError, GraphTimeoutError, GraphUnavailableError
from udm.graph.cypher import QueryResult
from udm.graph.model import KnowledgeGraph
from udm.workerproc import kill_worker

__all__ = [
    "NODE_NS",
    "PREFIXES",
    "VOCAB_NS",
    "SparqlRunner",
    "build_rdf_store",
    "node_iri",
    "rdf_lines",
    "shared_runner",
    "with_prefixes",
]

VOCAB_NS = "https://udm-pipelines.dev/ns/kg#"
NODE_NS = "https://udm-pipelines.dev/ns/node/"
PREFIXES = {
    "udm": VOCAB_NS,
    "node": NODE_NS,
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
}
_WORKER = Path(__file__).with_name("sparql_worker.py")


def node_iri(node_id: str) -> str:
    """The IRI of a node in the RDF view."""
    return NODE_NS + quote(node_id, safe="-._~")


def with_prefixes(query: str) -> str:
    """The query with the standard PREFIX lines it uses but does not declare prepended."""
    declared = {m.lower() for m in re.findall(r"(?im)^\s*PREFIX\s+([A-Za-z][\w-]*)?:", query)}
    missing = [
        f"PREFIX {name}: <{iri}>"
        for name, iri in PREFIXES.items()
        if name not in declared and re.search(rf"(?<![\w<]){name}:", query)
    ]
    return "\n".join([*missing, query]) if missing else query


_XSD = "http://www.w3.org/2001/XMLSchema#"
_NT_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r"})


def _nt_literal(value: Any) -> str:
    if isinstance(value, bool):
        return f'"{"true" if value else "false"}"^^<{_XSD}boolean>'
    if isinstance(value, int):
        return f'"{value}"^^<{_XSD}integer>'
    if isinstance(value, float):
        return f'"{value!r}"^^<{_XSD}double>'
    return '"' + str(value).translate(_NT_ESCAPES) + '"'


def rdf_lines(kg: KnowledgeGraph) -> Iterator[str]:
    """The RDF view of the graph as N-Triples lines (typed nodes, literal properties, edge triples), one at a time."""
    rdf_type = f"<{PREFIXES['rdf']}type>"
    # One IRI per node, made once: edges name each node many times, and quoting it is the slow part.
    iris = {node: f"<{node_iri(node)}>" for node in kg.g.nodes}
    preds: dict[str, str] = {}
    for node, attrs in kg.g.nodes(data=True):
        iri = iris[node]
        yield f"{iri} {rdf_type} <{VOCAB_NS}{str(attrs['kind']).capitalize()}> ."
        for key, value in attrs.items():
            if value is None:
                continue
            pred = preds.get(key) or preds.setdefault(key, f"<{VOCAB_NS}{key}>")
            yield f"{iri} {pred} {_nt_literal(value)} ."
    for src, key, dst in kg.edges():
        pred = preds.get(key) or preds.setdefault(key, f"<{VOCAB_NS}{key}>")
        yield f"{iris[src]} {pred} {iris[dst]} ."


# Triples per bulk load. pyoxigraph's bulk loader holds a whole input in memory while it sorts it
# (one 727k-triple load of a 25 MB manual took 450 MB on top of the graph); loads of this size keep
# it near 60 MB each and are no slower in total. The store answers the same either way.
LOAD_CHUNK_TRIPLES = 50_000


def build_rdf_store(kg: KnowledgeGraph, path: Path) -> int:
    """Write the RDF view of the graph into a new pyoxigraph store directory at `path`; returns triples."""
    import pyoxigraph as ox

    path.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".rdf-build-", dir=path.parent))
    count = 0
    try:
        store = ox.Store(str(work / "store"))
        lines = rdf_lines(kg)
        # N-Triples text parsed by oxigraph's bulk loader: far faster than one Python object per triple.
        while chunk := list(itertools.islice(lines, LOAD_CHUNK_TRIPLES)):
            count += len(chunk)
            store.bulk_load(input=("\n".join(chunk) + "\n").encode("utf-8"), format=ox.RdfFormat.N_TRIPLES)
        store.flush()
        del store
        if path.exists():
            shutil.rmtree(path, ignore_errors=True)
        os.replace(work / "store", path)
    except Exception as exc:
        raise GraphUnavailableError(f"could not build the RDF store at {path}: {exc}") from exc
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return count


class SparqlRunner:
    """A SPARQL worker process: one query at a time, killed and restarted when a query overruns."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        self._lock = threading.Lock()
        self.restarts = 0

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        try:
            proc = subprocess.Popen(
                [sys.executable, str(_WORKER)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        except OSError as exc:
            raise GraphUnavailableError(f"could not start the SPARQL worker: {exc}") from exc
        self._proc = proc
        self._buffer = b""
        # Startup (interpreter + pyoxigraph import) is not charged to the first query's limit.
        if self._read_line(proc, time.monotonic() + 30) is None:
            self._kill()
            raise GraphUnavailableError("the SPARQL worker did not start within 30 s")
        return proc

    def _read_line(self, proc: subprocess.Popen[bytes], deadline: float) -> bytes | None:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                return None
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise GraphUnavailableError("the SPARQL worker exited unexpectedly")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        self._buffer = b""
        if proc is None:
            return
        kill_worker(proc)

    def query(
        self,
        store: Path,
        query: str,
        bindings: dict[str, dict[str, str]] | None = None,
        *,
        timeout_s: float = 2.0,
        row_cap: int = 1000,
    ) -> QueryResult:
        """Run one SPARQL query against a store within the time limit."""
        if re.search(r"\bSERVICE\b", re.sub(r"\"[^\"]*\"|'[^']*'|<[^>]*>", "", query), re.IGNORECASE):
            raise GraphQueryError(
                "SERVICE (federated queries) is not allowed: the RDF view answers locally only"
            )
        if not self._lock.acquire(timeout=timeout_s):
            raise GraphTimeoutError(f"the SPARQL engine stayed busy past the {timeout_s:g} s time limit")
        try:
            proc = self._start()
            request = {"store": str(store), "query": query, "bindings": bindings or {}, "row_cap": row_cap}
            deadline = time.monotonic() + timeout_s
            assert proc.stdin is not None
            try:
                proc.stdin.write(json.dumps(request).encode("utf-8") + b"\n")
                proc.stdin.flush()
                line = self._read_line(proc, deadline)
            except (BrokenPipeError, GraphUnavailableError) as exc:
                self._kill()
                raise GraphUnavailableError(f"the SPARQL worker failed: {exc}") from exc
            if line is None:
                # The only way to stop a pyoxigraph query is to end its process.
                self._kill()
                self.restarts += 1
                raise GraphTimeoutError(
                    f"the query was stopped at the {timeout_s:g} s time limit; bind a subject "
                    "(node:... or ?x udm:id 'ID') or narrow the pattern"
                )
            response = json.loads(line)
        finally:
            self._lock.release()
        if not response.get("ok"):
            error = str(response.get("error"))
            if "cannot open the RDF store" in error:
                raise GraphUnavailableError(error)
            raise GraphQueryError(error)
        return QueryResult(list(response["vars"]), response["rows"], bool(response.get("truncated")))

    def close(self) -> None:
        """Stop the worker process."""
        with self._lock:
            self._kill()


_RUNNER: SparqlRunner | None = None
_RUNNER_LOCK = threading.Lock()


def shared_runner() -> SparqlRunner:
    """The process's SPARQL worker (started on first use, stopped at exit)."""
    global _RUNNER
    with _RUNNER_LOCK:
        if _RUNNER is None:
            _RUNNER = SparqlRunner()
            atexit.register(_RUNNER.close)
        return _RUNNER
