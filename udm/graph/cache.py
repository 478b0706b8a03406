"""The knowledge graph's on-disk cache: plain JSON, written atomically, read back as untrusted data.

The cache lives in `<state>/graph/<fingerprint>/graph.json`. Nothing in it is ever executed or
imported: it is parsed by orjson (a JSON parser with its own depth limit) and then checked field by
field before a single node is built: the header (format, version, schema, fingerprint), the node
kinds and property types against `udm.graph.model`, the edge types, every edge's node references,
no duplicates, and bounds on the file size and the counts. A cache that fails any check is reported
as `CacheInvalid` with the reason, and the caller rebuilds the graph from the index. Only regular
files are read (`O_NOFOLLOW`, `O_NONBLOCK`), so a symlink or a FIFO planted there is refused too.
"""

from __future__ import annotations

import gc
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import orjson

from udm.errors import GraphError
from udm.graph.model import EDGE_TYPES, GRAPH_SCHEMA_VERSION, NODE_KINDS, NODE_PROPERTIES, KnowledgeGraph

__all__ = [
    "CACHE_FORMAT",
    "CACHE_NAME",
    "CACHE_VERSION",
    "MAX_CACHE_BYTES",
    "MAX_EDGES",
    "MAX_NODES",
    "MAX_STRING_CHARS",
    "CacheInvalid",
    "dump_graph",
    "graph_from_data",
    "graph_to_data",
    "read_graph",
    "write_graph",
]

CACHE_NAME = "graph.json"
CACHE_FORMAT = "udm-knowledge-graph"
CACHE_VERSION = 1
# Bounds on what is read back: a cache beyond them is refused (and rebuilt), and a graph whose cache
# would exceed them is not cached at all (it is rebuilt in each process instead).
MAX_CACHE_BYTES = 256 * 1024 * 1024
MAX_NODES = 5_000_000
MAX_EDGES = 20_000_000
MAX_STRING_CHARS = 1_000_000

_KINDS = frozenset(NODE_KINDS)
_EDGE_TYPES = frozenset(EDGE_TYPES)
# The one Python type each Cypher column type accepts (exact: a bool is not an int here).
_PROPERTY_TYPE: dict[str, type] = {
    name: {"STRING": str, "INT64": int, "BOOLEAN": bool}[typ] for name, typ in NODE_PROPERTIES
}
_PROPERTY_NAMES = frozenset(_PROPERTY_TYPE)
_INT64 = range(-(2**63), 2**63)
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


class CacheInvalid(GraphError, ValueError):
    """A graph cache that cannot be used; the message says why (the graph is rebuilt)."""


def graph_to_data(kg: KnowledgeGraph) -> dict[str, Any]:
    """The graph as JSON-able data: a header, the nodes' properties, and per edge type a flat list of
    node indexes [source, target, source, target, ...] (compact, and checked in bulk when read)."""
    index: dict[str, int] = {}
    nodes: list[dict[str, Any]] = []
    for node_id, attrs in kg.g.nodes(data=True):
        index[node_id] = len(nodes)
        nodes.append(dict(attrs))
    edges: dict[str, list[int]] = {}
    for src, dst, key in kg.g.edges(keys=True):
        edges.setdefault(key, []).extend((index[src], index[dst]))
    return {
        "format": CACHE_FORMAT,
        "version": CACHE_VERSION,
        "schema": GRAPH_SCHEMA_VERSION,
        "fingerprint": kg.fingerprint,
        "nodes": nodes,
        "edges": edges,
    }


def _bad_node(i: int, node: Any) -> CacheInvalid:
    """Why node `i` failed the fast check (the slow path, taken only for a bad cache)."""
    if not isinstance(node, dict):
        return CacheInvalid(f"node {i} is a {type(node).__name__}, not an object")
    if not isinstance(node.get("id"), str) or not node["id"]:
        return CacheInvalid(f"node {i} has no id (or not a text one)")
    if not isinstance(node.get("kind"), str) or node["kind"] not in _KINDS:
        return CacheInvalid(f"node {i} has the unknown kind {str(node.get('kind'))[:40]!r}")
    for key, value in node.items():
        wanted = _PROPERTY_TYPE.get(key)
        if wanted is None:
            return CacheInvalid(f"node {i} has the unknown property {str(key)[:40]!r}")
        if value is not None and type(value) is not wanted:
            return CacheInvalid(f"node {i}'s {key} is a {type(value).__name__}, not a {wanted.__name__}")
        if type(value) is str and len(value) > MAX_STRING_CHARS:
            return CacheInvalid(f"node {i}'s {key} is longer than {MAX_STRING_CHARS} characters")
        if type(value) is int and value not in _INT64:
            return CacheInvalid(f"node {i}'s {key} does not fit in 64 bits")
    return CacheInvalid(f"node {i} is not valid")


def _node_ok(node: Any) -> bool:
    if type(node) is not dict or not node.keys() <= _PROPERTY_NAMES:
        return False
    node_id, kind = node.get("id"), node.get("kind")
    if type(node_id) is not str or not node_id or type(kind) is not str or kind not in _KINDS:
        return False
    for key, value in node.items():
        if value is None:
            continue
        kind_of_value = type(value)
        if kind_of_value is not _PROPERTY_TYPE[key]:
            return False
        if kind_of_value is str:
            if len(value) > MAX_STRING_CHARS:
                return False
        elif kind_of_value is int and value not in _INT64:
            return False
    return True


def graph_from_data(data: Any, fingerprint: str) -> KnowledgeGraph:
    """The graph described by `data` (as `graph_to_data` makes it), or CacheInvalid saying what is wrong."""
    if not isinstance(data, dict):
        raise CacheInvalid(f"the cache is a {type(data).__name__}, not an object")
    expected = {"format", "version", "schema", "fingerprint", "nodes", "edges"}
    if set(data) != expected:
        raise CacheInvalid(f"the cache's fields are {sorted(map(str, data))[:8]}, not {sorted(expected)}")
    if data["format"] != CACHE_FORMAT or data["version"] != CACHE_VERSION:
        raise CacheInvalid(f"not a {CACHE_FORMAT} cache of version {CACHE_VERSION}")
    if data["schema"] != GRAPH_SCHEMA_VERSION:
        raise CacheInvalid(f"built for graph schema {str(data['schema'])[:40]!r}, not {GRAPH_SCHEMA_VERSION}")
    if data["fingerprint"] != fingerprint:
        raise CacheInvalid("built for other files (its fingerprint differs from its folder's)")
    nodes, edges = data["nodes"], data["edges"]
    if not isinstance(nodes, list) or not isinstance(edges, dict):
        raise CacheInvalid("nodes must be a list and edges an object")
    if len(nodes) > MAX_NODES:
        raise CacheInvalid(f"{len(nodes)} nodes exceed the limit of {MAX_NODES}")
    kg = KnowledgeGraph(fingerprint)
    g: Any = kg.g
    succ, pred, node_attrs = g._succ, g._pred, g._node
    ids: list[str] = []
    for i, node in enumerate(nodes):
        if not _node_ok(node):
            raise _bad_node(i, node)
        node_id = node["id"]
        if node_id in node_attrs:
            raise CacheInvalid(f"node {i} repeats the id {node_id[:80]!r}")
        ids.append(node_id)
        # Filled the way MultiDiGraph.add_node/add_edge fill them (see graph_model._Builder.finish).
        node_attrs[node_id] = node
        succ[node_id] = {}
        pred[node_id] = {}
    count, total = len(ids), 0
    for key, flat in edges.items():
        if key not in _EDGE_TYPES:
            raise CacheInvalid(f"unknown edge type {str(key)[:40]!r}")
        if not isinstance(flat, list) or len(flat) % 2:
            raise CacheInvalid(f"the {key} edges are not a list of source/target pairs")
        total += len(flat) // 2
        if total > MAX_EDGES:
            raise CacheInvalid(f"more than {MAX_EDGES} edges")
        # Checked in bulk (C loops): only integers, all of them indexes of listed nodes.
        if flat and (set(map(type, flat)) != {int} or min(flat) < 0 or max(flat) >= count):
            raise CacheInvalid(f"a {key} edge refers to something other than one of the {count} nodes")
        pairs = iter(flat)
        for s, d in zip(pairs, pairs, strict=True):
            a, b = ids[s], ids[d]
            keydict = succ[a].get(b)
            if keydict is None:
                keydict = succ[a][b] = pred[b][a] = {}
            elif key in keydict:
                raise CacheInvalid(f"the edge {a[:60]!r} -{key}-> {b[:60]!r} is listed twice")
            keydict[key] = {}
    return kg


def dump_graph(kg: KnowledgeGraph) -> bytes:
    """The cache file's bytes for `kg`."""
    return orjson.dumps(graph_to_data(kg))


def read_graph(path: Path, fingerprint: str) -> KnowledgeGraph:
    """Read and validate a cache file; CacheInvalid (never another error) when it cannot be used."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        raise CacheInvalid(f"cannot open {path.name}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as fh:
        try:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise CacheInvalid(f"{path.name} is not a regular file")
            if st.st_size > MAX_CACHE_BYTES:
                raise CacheInvalid(f"{path.name} is {st.st_size} bytes; the limit is {MAX_CACHE_BYTES}")
            raw = fh.read(MAX_CACHE_BYTES + 1)
        except OSError as exc:
            raise CacheInvalid(f"cannot read {path.name}: {exc.strerror or exc}") from None
    if len(raw) > MAX_CACHE_BYTES:
        raise CacheInvalid(f"{path.name} grew past {MAX_CACHE_BYTES} bytes while being read")
    # Millions of fresh dicts and no cycles among them: the cycle collector would only rescan them
    # again and again (it more than doubled the load time of a 130k-node graph).
    collecting = gc.isenabled()
    gc.disable()
    try:
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise CacheInvalid(f"{path.name} is not valid JSON: {exc}") from None
        del raw
        return graph_from_data(data, fingerprint)
    finally:
        if collecting:
            gc.enable()


def write_graph(kg: KnowledgeGraph, path: Path) -> bool:
    """Write the cache atomically (temp file, fsync, rename); False when it is too big or cannot be written."""
    data = dump_graph(kg)
    if len(data) > MAX_CACHE_BYTES:
        return False
    try:
        fd, tmp = tempfile.mkstemp(prefix=".graph-", suffix=".json", dir=path.parent)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)
        return False
    return True
