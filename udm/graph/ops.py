"""Graph operations over the knowledge graph: dependencies, impact, order, cycles, paths, orphans, exports."""

from __future__ import annotations

import difflib
import io
import itertools
import json
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

import networkx as nx

from udm.errors import GraphCycleError, TargetNotFoundError, UdmError
from udm.graph.model import EDGE_TYPES, ENTITY_KINDS, KnowledgeGraph

__all__ = [
    "cycles",
    "dependencies",
    "dependents",
    "export_graph",
    "neighbourhood",
    "orphans",
    "require_node",
    "shortest_path",
    "to_mermaid",
    "topological_order",
]

DEFAULT_VIA: tuple[str, ...] = ("depends_on",)


def require_node(kg: KnowledgeGraph, node_id: str) -> str:
    """The node ID as stored; TargetNotFoundError naming close matches when there is none."""
    if node_id in kg:
        return node_id
    upper = node_id.upper()
    if upper in kg:
        return upper
    close = difflib.get_close_matches(node_id, [str(n) for n in kg.g.nodes], n=5, cutoff=0.75)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise TargetNotFoundError(f"no node '{node_id}' in the knowledge graph{hint}")


def _check_via(via: Sequence[str]) -> tuple[str, ...]:
    unknown = [v for v in via if v not in EDGE_TYPES]
    if unknown:
        raise UdmError(f"unknown edge type(s) {', '.join(unknown)}; known: {', '.join(EDGE_TYPES)}")
    return tuple(sorted(set(via))) or DEFAULT_VIA


def _walk(kg: KnowledgeGraph, start: str, via: tuple[str, ...], forward: bool) -> list[dict[str, Any]]:
    # Breadth-first over the cached subgraph of just these edge types: no per-edge type checks, and the
    # adjacency dicts read directly (several times faster than networkx's edge views).
    sub = _typed_subgraph(kg, via)
    if start not in sub:
        return []
    raw: Any = sub
    # The graph's own dicts: networkx's adjacency views wrap every lookup in a new view object.
    adjacency: dict[str, dict[str, Any]] = raw._succ if forward else raw._pred
    seen = {start: 0}
    order: list[str] = []
    queue = deque([start])
    while queue:
        node = queue.popleft()
        hops = seen[node] + 1
        for nxt in adjacency[node]:
            if nxt not in seen:
                seen[nxt] = hops
                order.append(nxt)
                queue.append(nxt)
    return [_row(kg, n, hops=seen[n]) for n in order]


def _row(kg: KnowledgeGraph, node_id: str, **extra: Any) -> dict[str, Any]:
    attrs = kg.g._node[node_id]  # type: ignore[attr-defined]  # the raw dict, not a NodeView lookup
    row = {"id": node_id, "kind": attrs.get("kind"), "title": attrs.get("title")}
    if attrs.get("status") is not None:
        row["status"] = attrs["status"]
    row.update(extra)
    return row


def dependencies(kg: KnowledgeGraph, node_id: str, via: Sequence[str] = DEFAULT_VIA) -> list[dict[str, Any]]:
    """Everything `node_id` depends on, transitively, nearest first, with the number of hops."""
    return _walk(kg, require_node(kg, node_id), _check_via(via), forward=True)


def dependents(kg: KnowledgeGraph, node_id: str, via: Sequence[str] = DEFAULT_VIA) -> list[dict[str, Any]]:
    """Everything that depends on `node_id`, transitively (the impact of changing it), nearest first."""
    return _walk(kg, require_node(kg, node_id), _check_via(via), forward=False)


def _typed_subgraph(
    kg: KnowledgeGraph, via: tuple[str, ...], kinds: Iterable[str] | None = None
) -> nx.DiGraph:
    key = ("typed", via, tuple(kinds) if kinds else None)
    if key not in kg.derived:
        kg.derived[key] = _make_typed_subgraph(kg, via, kinds)
    cached: nx.DiGraph = kg.derived[key]
    return cached


def _make_typed_subgraph(kg: KnowledgeGraph, via: tuple[str, ...], kinds: Iterable[str] | None) -> nx.DiGraph:
    sub: nx.DiGraph = nx.DiGraph()
    wanted = set(kinds) if kinds else None
    if wanted is not None:
        sub.add_nodes_from(n for n, k in kg.g.nodes(data="kind") if k in wanted)
    types = frozenset(via)
    # Without a kind filter only nodes that have such edges matter (a lone node is in no cycle or path).
    edges = [
        (src, dst)
        for src, nbrs in kg.g.succ.items()
        for dst, keys in nbrs.items()
        if not types.isdisjoint(keys) and (wanted is None or (src in sub and dst in sub))
    ]
    sub.add_edges_from(edges)
    return sub


def topological_order(kg: KnowledgeGraph, via: Sequence[str] = DEFAULT_VIA) -> list[dict[str, Any]]:
    """Tasks in an order where every task comes after what it depends on (ties broken by ID)."""
    sub = _typed_subgraph(kg, _check_via(via), kinds=("task",))
    # Edges point from a task to its dependency; reversed, a topological sort puts dependencies first.
    try:
        # Generation by generation (each after everything before it), IDs sorted within one: stable output.
        order = [
            n
            for generation in nx.topological_generations(sub.reverse(copy=False))
            for n in sorted(generation)
        ]
    except nx.NetworkXUnfeasible:
        cycle = _one_cycle(sub, next(c for c in nx.strongly_connected_components(sub) if _is_cyclic(sub, c)))
        raise GraphCycleError(
            "the tasks' dependencies contain a cycle, so there is no order: " + " -> ".join(cycle), cycle
        ) from None
    return [_row(kg, n, position=i + 1) for i, n in enumerate(order)]


def _is_cyclic(sub: nx.DiGraph, component: set[str]) -> bool:
    if len(component) > 1:
        return True
    (node,) = component
    return bool(sub.has_edge(node, node))


def _one_cycle(sub: nx.DiGraph, component: set[str]) -> list[str]:
    edges = nx.find_cycle(sub.subgraph(component))
    cycle = [str(e[0]) for e in edges]
    return [*cycle, cycle[0]]


def cycles(kg: KnowledgeGraph, via: Sequence[str] = DEFAULT_VIA, limit: int = 100) -> list[dict[str, Any]]:
    """One cycle per strongly connected group of nodes (linear time, unlike listing every cycle)."""
    sub = _typed_subgraph(kg, _check_via(via))
    found: list[dict[str, Any]] = []
    if nx.is_directed_acyclic_graph(sub):
        # The usual case, and a cheaper test than listing strongly connected components.
        return found
    for component in nx.strongly_connected_components(sub):
        if _is_cyclic(sub, component):
            cycle = _one_cycle(sub, component)
            found.append({"cycle": cycle, "length": len(cycle) - 1, "members": sorted(component)})
            if len(found) >= limit:
                break
    found.sort(key=lambda c: c["cycle"][0])
    return found


def shortest_path(
    kg: KnowledgeGraph, source: str, target: str, *, directed: bool = True, via: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """The shortest chain of edges from source to target, as steps with the edge taken to reach each.

    `via` limits the edge types (default: all). Undirected paths may walk edges backwards; each step
    says which way. An empty list means no path.
    """
    src, dst = require_node(kg, source), require_node(kg, target)
    types = _check_via(via) if via else EDGE_TYPES
    sub = _typed_subgraph(kg, types)
    graph = sub if directed else sub.to_undirected(as_view=True)
    try:
        nodes = nx.shortest_path(graph, src, dst)
    except (nx.NetworkXNoPath, nx.NodeNotFound):
        # NodeNotFound: an endpoint has no edge of the chosen types at all.
        return []
    steps = [_row(kg, nodes[0], step=0, edge=None, direction=None)]
    for i, (a, b) in enumerate(itertools.pairwise(nodes), start=1):
        forward = kg.g.has_edge(a, b)
        keys = kg.g[a][b] if forward else kg.g[b][a]
        edge = next(k for k in keys if k in types)
        steps.append(_row(kg, b, step=i, edge=edge, direction="out" if forward else "in"))
    return steps


def orphans(kg: KnowledgeGraph, kinds: Sequence[str] = ENTITY_KINDS) -> list[dict[str, Any]]:
    """IDs that are defined but never referenced: no section mentions them and no edge points at them."""
    out = []
    for node, attrs in kg.g.nodes(data=True):
        if attrs.get("kind") in kinds and attrs.get("defined") and kg.g.in_degree(node) == 0:
            out.append(_row(kg, node, file=attrs.get("file"), line=attrs.get("line")))
    return sorted(out, key=lambda r: r["id"])


def neighbourhood(kg: KnowledgeGraph, node_id: str, depth: int = 2, limit: int = 200) -> KnowledgeGraph:
    """The subgraph of nodes within `depth` edges of `node_id` (either direction), at most `limit` nodes."""
    start = require_node(kg, node_id)
    seen = {start: 0}
    queue = deque([start])
    undirected = kg.g.to_undirected(as_view=True)
    while queue and len(seen) < limit:
        node = queue.popleft()
        if seen[node] >= depth:
            continue
        for nxt in sorted(undirected.neighbors(node)):
            if nxt not in seen and len(seen) < limit:
                seen[nxt] = seen[node] + 1
                queue.append(nxt)
    sub = KnowledgeGraph(kg.fingerprint)
    sub.g = kg.g.subgraph(seen).copy()
    return sub


def _mermaid_label(text: str) -> str:
    return text.replace('"', "'").replace("[", "(").replace("]", ")")


def to_mermaid(kg: KnowledgeGraph, highlight: str | None = None) -> str:
    """A Mermaid flowchart of the graph (meant for small neighbourhoods)."""
    names = {node: f"n{i}" for i, node in enumerate(sorted(kg.g.nodes))}
    lines = ["flowchart LR"]
    for node in sorted(kg.g.nodes):
        attrs = kg.g.nodes[node]
        label = str(node)
        title = attrs.get("title")
        if title and title != node and attrs.get("kind") not in ("file", "url"):
            label = f"{node}<br/>{title}"
        lines.append(f'    {names[node]}["{_mermaid_label(label)}<br/><i>{attrs.get("kind")}</i>"]')
    for src, key, dst in sorted(kg.edges()):
        lines.append(f"    {names[src]} -->|{key}| {names[dst]}")
    if highlight and highlight in names:
        lines.append(f"    style {names[highlight]} stroke-width:3px")
    return "\n".join(lines) + "\n"


def export_graph(kg: KnowledgeGraph, fmt: str) -> str:
    """The whole graph as GraphML or as node-link JSON."""
    if fmt == "json":
        data = {
            "fingerprint": kg.fingerprint,
            "nodes": [dict(attrs) for _, attrs in sorted(kg.g.nodes(data=True))],
            "edges": [{"source": s, "type": t, "target": d} for s, t, d in sorted(kg.edges())],
        }
        return json.dumps(data, indent=1, ensure_ascii=False)
    if fmt == "graphml":
        # GraphML edge ids must be unique, and the edge type is the key here: renumber the keys.
        plain: nx.MultiDiGraph = nx.MultiDiGraph()
        plain.add_nodes_from(kg.g.nodes(data=True))
        for i, (src, key, dst) in enumerate(kg.edges()):
            plain.add_edge(src, dst, key=f"e{i}", type=key)
        buf = io.BytesIO()
        nx.write_graphml(plain, buf)
        return buf.getvalue().decode("utf-8")
    raise UdmError(f"unknown export format '{fmt}' (expected graphml or json)")
