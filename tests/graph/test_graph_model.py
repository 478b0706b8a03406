"""The graph model and its operations over hand-made rows (no files, no engines)."""

from __future__ import annotations

import io
import json

import networkx as nx
import pytest

from udm.errors import GraphCycleError, TargetNotFoundError, UdmError
from udm.graph import ops as ops
from udm.graph.model import build_graph, kind_of_id

from .conftest import small_rows


def ids(rows: list[dict]) -> list[str]:
    return [r["id"] for r in rows]


def test_kinds_and_edges_from_rows() -> None:
    kg = build_graph(small_rows())
    assert kg.node("TASK-P0-M0.1-T002")["kind"] == "task"
    assert kg.node("TASK-P0-M0.1-T002")["status"] == "todo"
    assert kg.node("COMP-001")["kind"] == "component"
    assert kg.node("ROO-MODE-BUILD")["kind"] == "mode"
    assert kg.node("fileSystemAccessTool")["kind"] == "tool"
    assert kg.node("CHK-CORE")["kind"] == "check"
    assert kg.node("https://example.org/doc")["kind"] == "url"
    assert kg.node("plan.md")["kind"] == "file"
    assert kg.node("plan.md#tasks")["level"] == 2
    assert kg.node("RM-009")["kind"] == "item" and kg.node("RM-009")["family"] == "RM"
    edges = set(kg.edges())
    assert ("TASK-P0-M0.1-T002", "depends_on", "TASK-P0-M0.1-T001") in edges
    assert ("COMP-001", "defined_in", "plan.md#arch") in edges
    assert ("plan.md#tasks", "references", "COMP-001") in edges
    assert ("COMP-001", "owned_by", "ROO-MODE-BUILD") in edges
    assert ("TASK-P0-M0.1-T001", "owned_by", "ROO-MODE-BUILD") in edges
    assert ("ROO-MODE-BUILD", "uses_tool", "fileSystemAccessTool") in edges
    assert ("plan.md#tasks", "links_to", "https://example.org/doc") in edges
    assert ("plan.md#tasks", "links_to", "plan.md#arch") in edges
    assert ("plan.md#tasks", "part_of", "plan.md#plan") in edges
    assert ("plan.md#plan", "part_of", "plan.md") in edges
    assert ("COMP-001", "verified_by", "CHK-CORE") in edges
    # Every node has an id and a kind.
    assert all(attrs["id"] == n and attrs["kind"] for n, attrs in kg.g.nodes(data=True))


def test_kind_of_id_families() -> None:
    assert kind_of_id("TASK-P0-M0.1-T001") == "task"
    assert kind_of_id("COMP-002") == "component"
    assert kind_of_id("ROO-MODE-RESEARCH") == "mode"
    assert kind_of_id("APP-NODEJS-FS-RESEARCH-V1") == "appendix"
    assert kind_of_id("CHK-SIGNIN") == "check"
    assert kind_of_id("API-COMP-001-v1") == "item"


def test_dependencies_and_dependents_are_transitive_nearest_first() -> None:
    kg = build_graph(small_rows())
    deps = ops.dependencies(kg, "TASK-P0-M0.1-T005")
    assert ids(deps) == ["TASK-P0-M0.1-T004", "TASK-P0-M0.1-T002", "TASK-P0-M0.1-T003", "TASK-P0-M0.1-T001"]
    assert [d["hops"] for d in deps] == [1, 2, 2, 3]
    impact = ops.dependents(kg, "TASK-P0-M0.1-T001")
    assert sorted(ids(impact)) == [
        "TASK-P0-M0.1-T002",
        "TASK-P0-M0.1-T003",
        "TASK-P0-M0.1-T004",
        "TASK-P0-M0.1-T005",
    ]
    # Following more edge types widens the impact: the mode is used by tasks and the component.
    owned = ops.dependents(kg, "ROO-MODE-BUILD", via=["owned_by"])
    assert sorted(ids(owned)) == ["COMP-001", "TASK-P0-M0.1-T001", "TASK-P0-M0.1-T002"]


def test_unknown_node_and_edge_type_are_named() -> None:
    kg = build_graph(small_rows())
    with pytest.raises(TargetNotFoundError, match=r"did you mean TASK-P0-M0\.1-T001"):
        ops.dependencies(kg, "TASK-P0-M0.1-T0011")
    with pytest.raises(UdmError, match="unknown edge type"):
        ops.dependents(kg, "TASK-P0-M0.1-T001", via=["blocks"])


def test_topological_order_puts_dependencies_first() -> None:
    kg = build_graph(small_rows())
    order = ids(ops.topological_order(kg))
    assert order == [
        "TASK-P0-M0.1-T001",
        "TASK-P0-M0.1-T002",
        "TASK-P0-M0.1-T003",
        "TASK-P0-M0.1-T004",
        "TASK-P0-M0.1-T005",
    ]


def test_cycles_are_found_and_block_the_order() -> None:
    kg = build_graph(small_rows(cyclic=True))
    found = ops.cycles(kg)
    assert len(found) == 1
    assert set(found[0]["members"]) == {
        "TASK-P0-M0.1-T001",
        "TASK-P0-M0.1-T002",
        "TASK-P0-M0.1-T003",
        "TASK-P0-M0.1-T004",
    }
    cycle = found[0]["cycle"]
    assert cycle[0] == cycle[-1] and found[0]["length"] == 3
    with pytest.raises(GraphCycleError) as err:
        ops.topological_order(kg)
    assert err.value.cycle[0] == err.value.cycle[-1]
    assert ops.cycles(build_graph(small_rows())) == []


def test_shortest_path_directed_and_undirected() -> None:
    kg = build_graph(small_rows())
    path = ops.shortest_path(kg, "TASK-P0-M0.1-T004", "TASK-P0-M0.1-T001", directed=True)
    assert len(path) == 3 and path[-1]["id"] == "TASK-P0-M0.1-T001"
    assert all(step["edge"] == "depends_on" for step in path[1:])
    assert (
        ops.shortest_path(kg, "TASK-P0-M0.1-T001", "TASK-P0-M0.1-T004", directed=True, via=["depends_on"])
        == []
    )
    back = ops.shortest_path(kg, "TASK-P0-M0.1-T001", "TASK-P0-M0.1-T004", directed=False, via=["depends_on"])
    assert [s["direction"] for s in back[1:]] == ["in", "in"]
    across = ops.shortest_path(kg, "TASK-P0-M0.1-T001", "fileSystemAccessTool", directed=True)
    assert ids(across) == ["TASK-P0-M0.1-T001", "ROO-MODE-BUILD", "fileSystemAccessTool"]


def test_orphans_are_defined_and_never_pointed_at() -> None:
    kg = build_graph(small_rows())
    # T005 is depended on by nothing and mentioned nowhere; RM-009 is defined and never mentioned.
    assert ids(ops.orphans(kg)) == ["RM-009", "TASK-P0-M0.1-T005"]
    assert ids(ops.orphans(kg, kinds=["task"])) == ["TASK-P0-M0.1-T005"]


def test_neighbourhood_mermaid_and_exports() -> None:
    kg = build_graph(small_rows())
    sub = ops.neighbourhood(kg, "COMP-001", depth=1)
    assert set(sub.g.nodes) == {"COMP-001", "plan.md#arch", "plan.md#tasks", "ROO-MODE-BUILD", "CHK-CORE"}
    diagram = ops.to_mermaid(sub, highlight="COMP-001")
    assert diagram.startswith("flowchart LR\n")
    assert "-->|owned_by|" in diagram and "-->|verified_by|" in diagram and "stroke-width:3px" in diagram
    data = json.loads(ops.export_graph(kg, "json"))
    assert len(data["nodes"]) == len(kg) and len(data["edges"]) == kg.g.number_of_edges()
    back = nx.read_graphml(io.BytesIO(ops.export_graph(kg, "graphml").encode()))
    assert back.number_of_nodes() == len(kg) and back.number_of_edges() == kg.g.number_of_edges()
    assert back.nodes["COMP-001"]["kind"] == "component"
    with pytest.raises(UdmError, match="graphml or json"):
        ops.export_graph(kg, "dot")


def test_fingerprint_follows_file_hashes() -> None:
    a, b = small_rows(), small_rows()
    assert a.fingerprint() == b.fingerprint()
    b.files[0]["hash"] = "h2"
    assert a.fingerprint() != b.fingerprint()
