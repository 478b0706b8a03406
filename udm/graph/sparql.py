"""SPARQL over an RDF view of the knowledge graph (pyoxigraph), run in a worker process that can be killed.

The RDF view: every node is the IRI `NODE_NS + percent-encoded id`, typed `udm:Task`, `udm:Section` ...;
its properties are literals `udm:id`, `udm:kind`, `udm:title`, `udm:status` ...; every edge is a triple
whose predicate is the edge name in the vocabulary, e.g. `udm:depends_on`. Prefixes `udm:` (VOCAB_NS)
and `node:` (NODE_NS) are predeclared: a query that does not declare them gets them prepended.
"""

from __future__ import annotations

import atexit
import itertools
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from udm.errors import GraphQueryError, GraphTimeoutError, GraphUnavailableError
from udm.graph.cypher import QueryResult
from udm.graph.model import KnowledgeGraph
from udm.workerproc import LineWorker

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


class SparqlRunner(LineWorker):
    """A SPARQL worker process: one query at a time, killed and restarted when a query overruns."""

    label = "SPARQL"
    module = "udm.graph.sparql_worker"

    def _busy_error(self, timeout_s: float) -> Exception:
        return GraphTimeoutError(f"the SPARQL engine stayed busy past the {timeout_s:g} s time limit")

    def _timeout_error(self, timeout_s: float) -> Exception:
        # The only way to stop a pyoxigraph query is to end its process.
        return GraphTimeoutError(
            f"the query was stopped at the {timeout_s:g} s time limit; bind a subject "
            "(node:... or ?x udm:id 'ID') or narrow the pattern"
        )

    def _failure(self, reason: str) -> Exception:
        return GraphUnavailableError(reason)

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
        request = {"store": str(store), "query": query, "bindings": bindings or {}, "row_cap": row_cap}
        response = self.exchange(request, timeout_s)
        if not response.get("ok"):
            error = str(response.get("error"))
            if "cannot open the RDF store" in error:
                raise GraphUnavailableError(error)
            raise GraphQueryError(error)
        return QueryResult(list(response["vars"]), response["rows"], bool(response.get("truncated")))


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
