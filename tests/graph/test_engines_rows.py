"""Both query engines over a graph built from hand-made rows; concurrent callers share them safely."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from udm.config import Settings
from udm.errors import GraphTimeoutError
from udm.graph.sparql import node_iri, with_prefixes
from udm.graph.store import GraphHandle, graph_from_rows

from .conftest import small_rows


def test_engines_agree_on_hand_made_rows(small_graph: GraphHandle) -> None:
    handle = small_graph
    checks = handle.cypher("MATCH (c:component)-[:verified_by]->(k:check) RETURN c.id, k.id, k.url")
    assert checks.rows == [["COMP-001", "CHK-CORE", "http://127.0.0.1/"]]
    urls = handle.cypher("MATCH (:section {id: 'plan.md#tasks'})-[:links_to]->(u:url) RETURN u.id")
    assert urls.rows == [["https://example.org/doc"]]
    parts = handle.cypher("MATCH (s:section)-[:part_of*1..3]->(f:file) RETURN s.id ORDER BY s.id")
    assert [r[0] for r in parts.rows] == ["plan.md#arch", "plan.md#plan", "plan.md#tasks"]
    sparql = handle.sparql("SELECT ?check WHERE { ?c udm:id 'COMP-001' ; udm:verified_by/udm:id ?check }")
    assert sparql.rows == [["CHK-CORE"]]
    bound = handle.sparql(
        "SELECT ?x ?title WHERE { ?x udm:title ?title }",
        {"x": {"type": "iri", "value": node_iri("TASK-P0-M0.1-T004")}},
    )
    assert bound.rows == [[node_iri("TASK-P0-M0.1-T004"), "Join"]]
    assert (handle.folder / "cypher.lbug").exists() and (handle.folder / "rdf").is_dir()


def test_node_iris_and_prefixes() -> None:
    assert node_iri("plan.md#tasks") == "https://udm-pipelines.dev/ns/node/plan.md%23tasks"
    q = with_prefixes("SELECT ?s WHERE { ?s a udm:Task }")
    assert q.startswith("PREFIX udm: <https://udm-pipelines.dev/ns/kg#>")
    assert "PREFIX node:" not in q
    declared = "PREFIX udm: <http://other/>\nSELECT ?s WHERE { ?s a udm:Task }"
    assert with_prefixes(declared) == declared


def test_concurrent_callers_get_their_own_answers(small_graph: GraphHandle) -> None:
    handle = small_graph
    errors: list[str] = []

    def worker(task: str, expected: int) -> None:
        for _ in range(20):
            got = handle.cypher(f"MATCH (a {{id: '{task}'}})-[:depends_on]->(b) RETURN count(b)")
            if got.rows != [[expected]]:
                errors.append(f"{task}: {got.rows}")
            sp = handle.sparql(f"SELECT (COUNT(?b) AS ?n) WHERE {{ ?a udm:id '{task}' ; udm:depends_on ?b }}")
            if sp.rows != [[expected]]:
                errors.append(f"sparql {task}: {sp.rows}")

    threads = [
        threading.Thread(target=worker, args=("TASK-P0-M0.1-T004", 2)),
        threading.Thread(target=worker, args=("TASK-P0-M0.1-T005", 1)),
        threading.Thread(target=worker, args=("TASK-P0-M0.1-T001", 0)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []


def test_index_and_documents_give_the_same_graph(sample_settings: Settings) -> None:
    from udm.graph.facts import documents_source, index_source
    from udm.graph.model import build_graph

    from_index = build_graph(index_source(sample_settings).rows())
    from_files = build_graph(documents_source(sample_settings).rows())
    assert set(from_index.edges()) == set(from_files.edges())
    assert {n: from_index.node(n) for n in from_index.g.nodes} == {
        n: from_files.node(n) for n in from_files.g.nodes
    }
    assert index_source(sample_settings).fingerprint() == documents_source(sample_settings).fingerprint()


def test_inline_checks_verify_the_section_they_sit_in(sample_graph: GraphHandle) -> None:
    got = sample_graph.cypher(
        "MATCH (s:section)-[:verified_by]->(c:check) RETURN c.id AS check, s.id AS section ORDER BY check"
    )
    assert got.rows == [
        ["CHK-CONSOLE-ASK", "02-system-architecture.md#221-component-web-console"],
        ["CHK-CONSOLE-HOME", "02-system-architecture.md#221-component-web-console"],
        ["CHK-CONSOLE-SOURCES", "02-system-architecture.md#221-component-web-console"],
    ]


def test_an_overrunning_operation_is_abandoned_at_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import udm.graph.store as graph_module

    real = graph_module.run_operation

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(1.0)
        return real(*args, **kwargs)

    monkeypatch.setattr(graph_module, "run_operation", slow)
    handle = graph_from_rows(small_rows(), tmp_path)
    started = time.perf_counter()
    with pytest.raises(GraphTimeoutError, match=r"dependents operation did not finish within the 0\.2 s"):
        handle.natural_language("what depends on TASK-P0-M0.1-T001", timeout_s=0.2)
    assert time.perf_counter() - started < 0.6
    monkeypatch.setattr(graph_module, "run_operation", real)
    _, rows = handle.natural_language("what depends on TASK-P0-M0.1-T001", timeout_s=2.0)
    assert len(rows.rows) == 4


def test_pattern_literals_become_parameters_without_changing_answers(small_graph: GraphHandle) -> None:
    from udm.graph.cypher import lift_literals

    query = "MATCH (a {id: 'TASK-P0-M0.1-T004'})-[:depends_on]->(b) WHERE b.status <> 'done' RETURN b.id, 'x' AS tag"
    assert lift_literals(query) == (
        "MATCH (a {id: $__s0})-[:depends_on]->(b) WHERE b.status <> $__s1 RETURN b.id, 'x' AS tag",
        {"__s0": "TASK-P0-M0.1-T004", "__s1": "done"},
    )
    assert lift_literals("MATCH (a) RETURN a.id = 'x'") is None
    got = small_graph.cypher(query + " ORDER BY b.id")
    assert got.columns == ["b.id", "tag"]
    assert got.rows == [["TASK-P0-M0.1-T002", "x"], ["TASK-P0-M0.1-T003", "x"]]
    quoted = small_graph.cypher('MATCH (t:task) WHERE t.title = "Join" RETURN t.id')
    assert quoted.rows == [["TASK-P0-M0.1-T004"]]


def test_anchored_patterns_get_the_label_of_their_node(small_graph: GraphHandle) -> None:
    from udm.graph.cypher import label_anchors

    kinds = {"TASK-P0-M0.1-T004": "task", "plan.md#arch": "section"}.get
    assert label_anchors("MATCH (a {id: $__s0})-->(b) RETURN b", {"__s0": "TASK-P0-M0.1-T004"}, kinds) == (
        "MATCH (a:task {id: $__s0})-->(b) RETURN b"
    )
    assert label_anchors("MATCH (a:task {id: $x}) RETURN a", {"x": "plan.md#arch"}, kinds) == (
        "MATCH (a:task {id: $x}) RETURN a"
    )
    # Same answers with and without the rewrite, for present and absent IDs.
    assert small_graph.cypher("MATCH (s {id: 'plan.md#arch'})<-[:links_to]-(t) RETURN t.id").rows == [
        ["plan.md#tasks"]
    ]
    assert (
        small_graph.cypher("MATCH (a {id: $x})-[:depends_on]->(b) RETURN b.id", {"x": "TASK-NONE"}).rows == []
    )
    optional = small_graph.cypher("OPTIONAL MATCH (a {id: 'TASK-NONE'}) RETURN a.id AS id")
    assert optional.rows == [[None]]
