"""The knowledge graph's model: node kinds, edge types, and the builder from plain rows to networkx."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

__all__ = [
    "EDGE_TYPES",
    "ENTITY_KINDS",
    "GRAPH_SCHEMA_VERSION",
    "NODE_KINDS",
    "NODE_PROPERTIES",
    "GraphRows",
    "KnowledgeGraph",
    "build_graph",
    "kind_of_id",
    "section_node_id",
]

# Bumped whenever the mapping from rows to nodes/edges changes, so cached builds are not reused.
GRAPH_SCHEMA_VERSION = "kg-5"

NODE_KINDS: tuple[str, ...] = (
    "task",
    "component",
    "mode",
    "tool",
    "section",
    "file",
    "appendix",
    "check",
    "url",
    # Any other defined ID family of the manual (RM-, REQ-, ADR-, API- ...); `family` says which.
    "item",
)
# Kinds that stand for an ID of the manual (as opposed to its structure: sections, files, URLs).
ENTITY_KINDS: tuple[str, ...] = ("task", "component", "mode", "tool", "appendix", "check", "item")

EDGE_TYPES: tuple[str, ...] = (
    "depends_on",  # task -> task it depends on (and component -> component it needs)
    "defined_in",  # ID node -> section that defines it
    "references",  # section -> ID node it mentions
    "owned_by",  # component -> its owner mode; task -> the mode that carries it out
    "uses_tool",  # mode -> tool it may call
    "links_to",  # section -> url (external) or section (internal anchor)
    "part_of",  # section -> parent section, top-level section -> file
    "verified_by",  # ID node or section -> check that tests its claim
)

# Every node carries these properties (None where they do not apply); order is the Cypher column order.
NODE_PROPERTIES: tuple[tuple[str, str], ...] = (
    ("id", "STRING"),
    ("kind", "STRING"),
    ("title", "STRING"),
    ("status", "STRING"),
    ("level", "INT64"),
    ("file", "STRING"),
    ("line", "INT64"),
    ("path", "STRING"),
    ("anchor", "STRING"),
    ("phase", "STRING"),
    ("milestone", "STRING"),
    ("mode", "STRING"),
    ("owner", "STRING"),
    ("family", "STRING"),
    ("description", "STRING"),
    ("url", "STRING"),
    ("defined", "BOOLEAN"),
)
_PROPERTY_NAMES = frozenset(name for name, _ in NODE_PROPERTIES)

_KIND_BY_PREFIX: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^TASK-"), "task"),
    (re.compile(r"^COMP-\d"), "component"),
    (re.compile(r"^ROO-MODE-"), "mode"),
    (re.compile(r"^TOOL-\d"), "tool"),
    (re.compile(r"^APP-.*-RESEARCH-V\d+$"), "appendix"),
    (re.compile(r"^CHK-"), "check"),
)


def kind_of_id(identifier: str) -> str:
    """The node kind an ID of the manual stands for, from its family prefix (`item` if none matches)."""
    for pattern, kind in _KIND_BY_PREFIX:
        if pattern.search(identifier):
            return kind
    return "item"


def _family(identifier: str) -> str:
    match = re.match(r"^([A-Z]+(?:-MODE)?)-", identifier)
    return match.group(1) if match else identifier


def section_node_id(file: str, anchor: str) -> str:
    """The node ID of a section: its file and GitHub anchor, as a link to it would be written."""
    return f"{file}#{anchor}"


@dataclass
class GraphRows:
    """Plain rows the graph is built from (the index's tables, or hand-made ones in tests).

    Section references (`section` keys) are section node IDs as made by `section_node_id`.
    """

    # {path, hash?, size?}
    files: list[dict[str, Any]] = field(default_factory=list)
    # {file, anchor, title, level, line, path?, parent? (a section node id or None)}
    sections: list[dict[str, Any]] = field(default_factory=list)
    # {id, file, line, section?, role: 'definition'|'reference'}
    ids: list[dict[str, Any]] = field(default_factory=list)
    # {id, title?, status?, phase?, milestone?, mode?, depends_on: [ids]}
    tasks: list[dict[str, Any]] = field(default_factory=list)
    # {id, title?, tools: [tool names or IDs]}
    modes: list[dict[str, Any]] = field(default_factory=list)
    # {id (name or TOOL- ID), title?, description?}
    tools: list[dict[str, Any]] = field(default_factory=list)
    # {id, title?, owner? (mode IDs), status?, depends_on? (component IDs)}
    components: list[dict[str, Any]] = field(default_factory=list)
    # {section, target, kind: 'external'|'internal'|'anchor', line?, target_section? (node id)}
    links: list[dict[str, Any]] = field(default_factory=list)
    # {id, section?, file?, line?, url?, title?, refs: [IDs or section node ids]}
    checks: list[dict[str, Any]] = field(default_factory=list)

    def fingerprint(self) -> str:
        """A digest of the files these rows came from (their paths and content hashes)."""
        h = hashlib.sha256(GRAPH_SCHEMA_VERSION.encode())
        for f in sorted(self.files, key=lambda r: str(r["path"])):
            h.update(f"{f['path']}\0{f.get('hash', '')}\n".encode())
        return h.hexdigest()[:20]


class KnowledgeGraph:
    """The UDM as a directed multigraph: nodes keyed by ID with a `kind`, edges keyed by their type."""

    def __init__(self, fingerprint: str = "") -> None:
        self.g: nx.MultiDiGraph = nx.MultiDiGraph()
        self.fingerprint = fingerprint
        # Derived views (typed subgraphs) computed once; the graph is not changed after it is built.
        self.derived: dict[Any, Any] = {}

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.g

    def __len__(self) -> int:
        return int(self.g.number_of_nodes())

    def node(self, node_id: str) -> dict[str, Any]:
        """A node's properties (KeyError if absent)."""
        return dict(self.g.nodes[node_id])

    def nodes_of(self, kind: str) -> list[str]:
        """IDs of every node of one kind, sorted."""
        return sorted(n for n, k in self.g.nodes(data="kind") if k == kind)

    def edges(self) -> Iterable[tuple[str, str, str]]:
        """Every edge as (source, type, target)."""
        for src, dst, key in self.g.edges(keys=True):
            yield src, key, dst

    def stats(self) -> dict[str, Any]:
        """Counts of nodes per kind and edges per type."""
        kinds: dict[str, int] = {}
        for _, node_kind in self.g.nodes(data="kind"):
            kinds[str(node_kind)] = kinds.get(str(node_kind), 0) + 1
        types: dict[str, int] = {}
        for _, _, key in self.g.edges(keys=True):
            types[key] = types.get(key, 0) + 1
        return {
            "fingerprint": self.fingerprint,
            "nodes": self.g.number_of_nodes(),
            "edges": self.g.number_of_edges(),
            "kinds": dict(sorted(kinds.items())),
            "edge_types": dict(sorted(types.items())),
        }


def _clean_value(value: Any) -> Any:
    # Node properties are scalars (Cypher columns, RDF literals, GraphML attributes): lists become text.
    if isinstance(value, str):
        # Most values are one clean line already; only multi-line text is folded.
        return " ".join(value.split()) if "\n" in value or "\t" in value or "\r" in value else value
    if isinstance(value, bool | int | float):
        return value
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return " ".join(str(value).split())


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in re.split(r"[,\s]+", value) if v.strip()]
    if isinstance(value, Mapping):
        return [str(k) for k in value]
    return [str(v).strip() for v in value if v is not None and str(v).strip()]


class _Builder:
    """Collects nodes and edges in plain dicts, then makes the networkx graph in two bulk calls."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        # (source, type, target) in insertion order; a repeated edge is kept once.
        self.edges: dict[tuple[str, str, str], None] = {}

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.nodes

    def add_node(self, node_id: str, kind: str, **props: Any) -> None:
        """Add a node, or merge properties into an existing one (a definition upgrades a placeholder)."""
        clean = {k: _clean_value(v) for k, v in props.items() if v is not None and k in _PROPERTY_NAMES}
        attrs = self.nodes.get(node_id)
        if attrs is None:
            self.nodes[node_id] = {"id": node_id, "kind": kind, **clean}
            return
        if attrs.get("kind") == "item" and kind != "item":
            attrs["kind"] = kind
        for key, value in clean.items():
            if attrs.get(key) is None or key == "defined":
                attrs[key] = value

    def add_entity(
        self, node_id: str, kind: str, family: str, row: Mapping[str, Any], keys: Iterable[str]
    ) -> None:
        """A defined node of the manual's entities, with the named properties copied from its row."""
        self.add_node(node_id, kind, **{key: row.get(key) for key in keys}, family=family, defined=True)

    def ensure_id_node(self, identifier: str, **props: Any) -> None:
        """Make sure an ID of the manual has a node (kind from its family), without marking it defined."""
        if identifier not in self.nodes:
            kind = kind_of_id(identifier)
            self.add_node(identifier, kind, defined=False, family=_family(identifier), **props)

    def add_edge(self, src: str, edge_type: str, dst: str) -> None:
        """Add one edge of a type; an edge of the same type between the same nodes is kept once."""
        if src == dst and edge_type in ("part_of", "defined_in"):
            return
        self.edges[(src, edge_type, dst)] = None

    def finish(self, fingerprint: str) -> KnowledgeGraph:
        """The graph: the edge type is the edge's key (one edge per type between two nodes)."""
        for src, _, dst in self.edges:
            self.ensure_id_node(src)
            self.ensure_id_node(dst)
        kg = KnowledgeGraph(fingerprint)
        g: Any = kg.g
        # networkx's add_edges_from costs about 40% of a build here; filling a fresh MultiDiGraph's own
        # dicts the way MultiDiGraph.add_edge does (one key dict shared by _succ and _pred) is 3x faster.
        succ, pred = g._succ, g._pred
        for node_id, attrs in self.nodes.items():
            g._node[node_id] = attrs
            succ[node_id] = {}
            pred[node_id] = {}
        for src, key, dst in self.edges:
            keydict = succ[src].get(dst)
            if keydict is None:
                keydict = succ[src][dst] = pred[dst][src] = {}
            keydict[key] = {}
        return kg


def _add_files_and_sections(kg: _Builder, rows: GraphRows) -> None:
    """File and section nodes; each section is part of its parent section, or of its file."""
    for f in rows.files:
        path = str(f["path"])
        kg.add_node(path, "file", title=path, file=path, path=path, defined=True)
    for s in rows.sections:
        sid = section_node_id(s["file"], s["anchor"])
        kg.add_node(
            sid,
            "section",
            title=s.get("title"),
            level=s.get("level"),
            file=s["file"],
            line=s.get("line"),
            path=s.get("path"),
            anchor=s["anchor"],
            defined=True,
        )
    for s in rows.sections:
        sid = section_node_id(s["file"], s["anchor"])
        parent = s.get("parent")
        if parent and parent in kg:
            kg.add_edge(sid, "part_of", parent)
        else:
            if s["file"] not in kg:
                kg.add_node(s["file"], "file", title=s["file"], file=s["file"], path=s["file"], defined=True)
            kg.add_edge(sid, "part_of", s["file"])


def _add_ids(kg: _Builder, rows: GraphRows) -> None:
    """ID nodes from their definitions, and `references` edges from where they are mentioned."""
    # Definitions first, so a reference made before its definition's row does not fix the kind.
    for row in sorted(rows.ids, key=lambda r: r.get("role") != "definition"):
        identifier = str(row["id"])
        section = row.get("section")
        if row.get("role") == "definition":
            kind = kind_of_id(identifier)
            kg.add_node(
                identifier,
                kind,
                file=row.get("file"),
                line=row.get("line"),
                family=_family(identifier),
                defined=True,
            )
            if section and section in kg:
                kg.add_edge(identifier, "defined_in", section)
                if kind == "appendix" and row.get("file"):
                    # An appendix is the whole file that defines it.
                    kg.add_node(identifier, kind, path=row.get("file"))
        else:
            kg.ensure_id_node(identifier)
            if section and section in kg:
                kg.add_edge(section, "references", identifier)
            elif row.get("file") and row["file"] in kg:
                kg.add_edge(row["file"], "references", identifier)


def _add_tasks(kg: _Builder, rows: GraphRows) -> None:
    """Task nodes with their dependencies, the mode that carries each out, and the section defining it."""
    for t in rows.tasks:
        tid = str(t["id"])
        kg.add_entity(
            tid, "task", "TASK", t, ("title", "status", "phase", "milestone", "mode", "file", "line")
        )
        for dep in _as_list(t.get("depends_on")):
            kg.ensure_id_node(dep)
            kg.add_edge(tid, "depends_on", dep)
        if t.get("mode"):
            # The mode that carries the task out owns it, as a component's owner mode owns the component.
            kg.ensure_id_node(str(t["mode"]))
            kg.add_edge(tid, "owned_by", str(t["mode"]))
        if t.get("section") and t["section"] in kg:
            kg.add_edge(tid, "defined_in", t["section"])


def _add_modes_and_tools(kg: _Builder, rows: GraphRows) -> None:
    """Mode nodes with the tools they may call, then the tools' own definitions."""
    for m in rows.modes:
        mid = str(m["id"])
        kg.add_entity(mid, "mode", "ROO-MODE", m, ("title", "status"))
        for tool in _as_list(m.get("tools")):
            if tool not in kg:
                kg.add_node(tool, "tool", title=tool, defined=False, family="tool")
            kg.add_edge(mid, "uses_tool", tool)
    for tool_row in rows.tools:
        name = str(tool_row["id"])
        kg.add_node(
            name,
            "tool",
            title=tool_row.get("title") or name,
            description=tool_row.get("description"),
            file=tool_row.get("file"),
            line=tool_row.get("line"),
            family="tool",
            defined=True,
        )
        if tool_row.get("section") and tool_row["section"] in kg:
            kg.add_edge(name, "defined_in", tool_row["section"])


def _add_components(kg: _Builder, rows: GraphRows) -> None:
    """Component nodes with their owner modes and the components they depend on."""
    for c in rows.components:
        cid = str(c["id"])
        kg.add_entity(cid, "component", "COMP", c, ("title", "status", "owner"))
        for owner in _as_list(c.get("owner")):
            kg.ensure_id_node(owner)
            kg.add_edge(cid, "owned_by", owner)
        for dep in _as_list(c.get("depends_on")):
            kg.ensure_id_node(dep)
            kg.add_edge(cid, "depends_on", dep)


def _add_links(kg: _Builder, rows: GraphRows) -> None:
    """`links_to` edges from a section to an external URL's node or to the section it points at."""
    for link in rows.links:
        section = link.get("section")
        if not section or section not in kg:
            continue
        if link.get("kind") == "external":
            url = str(link["target"])
            kg.add_node(url, "url", title=url, url=url, defined=True)
            kg.add_edge(section, "links_to", url)
        elif link.get("target_section") and link["target_section"] in kg:
            kg.add_edge(section, "links_to", link["target_section"])


def _add_checks(kg: _Builder, rows: GraphRows) -> None:
    """Check nodes, and `verified_by` edges from the IDs or sections whose claim each check tests."""
    for chk in rows.checks:
        cid = str(chk["id"])
        kg.add_entity(cid, "check", "CHK", chk, ("title", "url", "file", "line"))
        section = chk.get("section")
        if section and section in kg:
            kg.add_edge(cid, "defined_in", section)
        refs = _as_list(chk.get("refs")) or ([section] if section else [])
        for ref in refs:
            if ref not in kg and "#" not in ref:
                kg.ensure_id_node(ref)
            if ref in kg:
                kg.add_edge(ref, "verified_by", cid)


# The order matters: structure first, then definitions, so later rows find the nodes they point at.
_STEPS = (
    _add_files_and_sections,
    _add_ids,
    _add_tasks,
    _add_modes_and_tools,
    _add_components,
    _add_links,
    _add_checks,
)


def build_graph(rows: GraphRows) -> KnowledgeGraph:
    """Build the knowledge graph from plain rows; every row kind is optional."""
    kg = _Builder()
    for step in _STEPS:
        step(kg, rows)
    return kg.finish(rows.fingerprint())
