"""knowledgeGraphQueryTool on the sample UDM: every language, format and status (golden answers)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tasks.base import ToolContext, call_tool
from tasks.knowledge_graph import KnowledgeGraphQueryTool

TOOL = KnowledgeGraphQueryTool()
T001, T002 = "TASK-P0-M0.1-T001", "TASK-P0-M0.1-T002"
DEPENDENTS_OF_T001 = {
    "TASK-P0-M0.1-T002",
    "TASK-P0-M0.1-T004",
    "TASK-P0-M0.1-T005",
    "TASK-P0-M0.1-T006",
    "TASK-P0-M0.1-T007",
}


def ask(ctx: ToolContext, lang: str, query: str, **extra: Any) -> dict[str, Any]:
    result = call_tool(TOOL, {"queryLanguage": lang, "query": query, **extra}, ctx)
    assert result.envelope.data is not None, result.envelope.error
    return result.envelope.data


def test_cypher_anchored_dependency(kg_ctx: ToolContext) -> None:
    out = ask(kg_ctx, "cypher", f"MATCH (a {{id: '{T002}'}})-[:depends_on]->(b) RETURN b.id")
    assert out["status"] == "SUCCESS"
    assert out["results"] == [{"b.id": T001}]
    assert out["queryExecuted"].startswith("MATCH") and out["resultFormatUsed"] == "json"
    assert out["errorDetails"] is None


def test_cypher_nodes_have_id_kind_and_properties(kg_ctx: ToolContext) -> None:
    out = ask(kg_ctx, "cypher", f"MATCH (t:task {{id: '{T002}'}}) RETURN t")
    node = out["results"][0]["t"]
    assert node["id"] == T002 and node["kind"] == "task" and node["status"] == "done"
    assert node["mode"] == "ROO-MODE-UPDATE-UDM-TECHNICAL" and node["file"] == "05-roadmap.md"
    owners = ask(
        kg_ctx, "cypher", "MATCH (c:component {id: 'COMP-006'})-[:owned_by]->(m) RETURN m.id AS mode"
    )
    assert owners["results"] == [{"mode": "ROO-MODE-UPDATE-UDM-TECHNICAL"}]
    tools = ask(
        kg_ctx,
        "cypher",
        "MATCH (m {id: 'ROO-MODE-RESEARCH'})-[:uses_tool]->(t) RETURN t.id AS tool ORDER BY tool",
    )
    assert [r["tool"] for r in tools["results"]] == [
        "documentFetchingParsingTool",
        "fileSystemAccessTool",
        "udmQueryTool",
        "webSearchTool",
    ]


def test_table_and_text_summary_formats(kg_ctx: ToolContext) -> None:
    q = f"MATCH (a)-[:depends_on]->(b {{id: '{T001}'}}) RETURN a.id AS id ORDER BY id"
    table = ask(kg_ctx, "cypher", q, resultFormat="table")
    assert table["resultFormatUsed"] == "table"
    assert table["results"] == {"columns": ["id"], "rows": [["TASK-P0-M0.1-T002"], ["TASK-P0-M0.1-T007"]]}
    summary = ask(kg_ctx, "cypher", q, resultFormat="text_summary")
    assert summary["results"].startswith("2 results:") and "TASK-P0-M0.1-T007" in summary["results"]


def test_sparql_over_the_rdf_view(kg_ctx: ToolContext) -> None:
    out = ask(kg_ctx, "sparql", f"SELECT ?dep WHERE {{ ?t udm:id '{T002}' ; udm:depends_on/udm:id ?dep }}")
    assert out["status"] == "SUCCESS" and out["results"] == [{"dep": T001}]
    counted = ask(
        kg_ctx,
        "sparql",
        f"SELECT (COUNT(DISTINCT ?d) AS ?n) WHERE {{ ?d udm:depends_on+ ?t . ?t udm:id '{T001}' }}",
    )
    assert counted["results"] == [{"n": len(DEPENDENTS_OF_T001)}]
    typed = ask(
        kg_ctx,
        "sparql",
        "ASK { node:COMP-006 a udm:Component ; udm:owned_by node:ROO-MODE-UPDATE-UDM-TECHNICAL }",
    )
    assert typed["results"] == [{"result": True}]


def test_natural_language_forms_show_the_structured_query(kg_ctx: ToolContext) -> None:
    out = ask(kg_ctx, "natural_language", f"What depends on {T001}?")
    assert out["queryExecuted"] == f"operation: dependents(id='{T001}')"
    assert {r["id"] for r in out["results"]} == DEPENDENTS_OF_T001
    deps = ask(kg_ctx, "natural_language", "what does TASK-P0-M0.2-T007 depend on")
    assert deps["results"][0]["id"] == "TASK-P0-M0.2-T006"
    assert len(deps["results"]) == 6
    mentions = ask(kg_ctx, "natural_language", "which sections mention COMP-006")
    assert mentions["queryExecuted"].startswith(
        "cypher: MATCH (s:section)-[:references]->(x {id: 'COMP-006'})"
    )
    assert [r["section"] for r in mentions["results"]] == [
        "00-index.md#contents",
        "00-index.md#architecture-at-a-glance",
        "04-modes.md#52-mode-roo-mode-update-udm-technical",
        "05-roadmap.md#task-p0-m01-t001-set-up-the-manual-repository-and-index",
        "05-roadmap.md#task-p0-m01-t002-define-the-core-tool-schemas",
        "05-roadmap.md#task-p0-m01-t004-implement-the-sandboxed-file-system-tool",
        "05-roadmap.md#task-p2-m22-t003-update-the-architecture-for-release",
        "06-config.md#section-07-operational-configuration",
        "06-config.md#75-index-settings",
    ]
    tasks = ask(kg_ctx, "natural_language", "tasks of mode ROO-MODE-QA-VERIFY with status todo")
    assert "t.mode = 'ROO-MODE-QA-VERIFY'" in tasks["queryExecuted"]
    assert {"TASK-P1-M1.1-T006", "TASK-P1-M1.2-T005"} <= {r["id"] for r in tasks["results"]}
    assert all(r["status"] == "todo" and r["mode"] == "ROO-MODE-QA-VERIFY" for r in tasks["results"])
    path = ask(kg_ctx, "natural_language", "path from TASK-P0-M0.2-T007 to COMP-006")
    steps = path["results"]
    assert steps[0]["id"] == "TASK-P0-M0.2-T007" and steps[-1]["id"] == "COMP-006"
    for question, operation in (
        ("topological order of tasks", "order()"),
        ("dependency cycles", "cycles()"),
        ("orphans", "orphans()"),
    ):
        got = ask(kg_ctx, "natural_language", question)
        assert got["queryExecuted"] == f"operation: {operation}", question


def test_order_and_orphans_on_the_sample(kg_ctx: ToolContext) -> None:
    order = ask(kg_ctx, "natural_language", "task order", maxRows=1000)
    position = {r["id"]: r["position"] for r in order["results"]}
    assert len(position) == 46
    assert position[T001] < position[T002] < position["TASK-P0-M0.1-T004"]
    orphans = ask(kg_ctx, "natural_language", "orphans")
    assert "TASK-P2-M2.2-T006" in {r["id"] for r in orphans["results"]}
    cycles = ask(kg_ctx, "natural_language", "cycles")
    assert cycles["status"] == "ERROR_NO_RESULTS"


def test_unsupported_and_invalid_queries(kg_ctx: ToolContext) -> None:
    gremlin = ask(kg_ctx, "gremlin", "g.V().has('id','X').out('depends_on')")
    assert gremlin["status"] == "ERROR_INVALID_QUERY" and "not supported" in gremlin["errorDetails"]
    assert "MATCH (a {id: 'X'})-[:depends_on]->(b)" in gremlin["errorDetails"]
    nl = ask(kg_ctx, "natural_language", "tell me a story")
    assert nl["status"] == "ERROR_INVALID_QUERY" and '"what depends on X"' in nl["errorDetails"]
    bad = ask(kg_ctx, "cypher", "MATC (n) RETURN n")
    assert bad["status"] == "ERROR_INVALID_QUERY" and "Parser exception" in bad["errorDetails"]
    write = ask(kg_ctx, "cypher", "CREATE (t:task {id: 'X'})")
    assert write["status"] == "ERROR_INVALID_QUERY" and "reading queries only" in write["errorDetails"]
    files = ask(kg_ctx, "cypher", "LOAD FROM '/etc/passwd' RETURN *")
    assert files["status"] == "ERROR_INVALID_QUERY" and "'LOAD' is not allowed" in files["errorDetails"]
    sparql = ask(kg_ctx, "sparql", "SELEC ?x")
    assert sparql["status"] == "ERROR_INVALID_QUERY"
    service = ask(kg_ctx, "sparql", "SELECT * WHERE { SERVICE <http://127.0.0.1:9/> { ?s ?p ?o } }")
    assert service["status"] == "ERROR_INVALID_QUERY" and "SERVICE" in service["errorDetails"]
    unknown = ask(kg_ctx, "natural_language", "what depends on TASK-NOPE-1")
    assert unknown["status"] == "ERROR_INVALID_QUERY" and "no node 'TASK-NOPE-1'" in unknown["errorDetails"]


def test_no_results_and_row_cap(kg_ctx: ToolContext) -> None:
    none = ask(kg_ctx, "cypher", "MATCH (t:task {status: 'cancelled'}) RETURN t.id")
    assert none["status"] == "ERROR_NO_RESULTS" and none["results"] == []
    capped = ask(kg_ctx, "cypher", "MATCH (t:task) RETURN t.id", maxRows=5)
    assert capped["status"] == "SUCCESS" and capped["rowCount"] == 5 and capped["truncated"] is True
    capped_sparql = ask(kg_ctx, "sparql", "SELECT ?s WHERE { ?s a udm:Section }", maxRows=3)
    assert capped_sparql["rowCount"] == 3 and capped_sparql["truncated"] is True


def test_bad_input_is_named(kg_ctx: ToolContext) -> None:
    result = call_tool(TOOL, {"queryLanguage": "sql", "query": "x"}, kg_ctx)
    assert not result.envelope.success and "queryLanguage" in (result.envelope.error or "")
    result = call_tool(TOOL, {"queryLanguage": "cypher", "query": ""}, kg_ctx)
    assert not result.envelope.success and "query" in (result.envelope.error or "")


@pytest.mark.parametrize(
    ("lang", "query"),
    [
        ("cypher", "MATCH (a)-[*1..8]-(b)-[*1..8]-(c) RETURN count(*)"),
        ("sparql", "SELECT (COUNT(*) AS ?n) WHERE { ?a ?p ?b . ?c ?q ?d . ?e ?r ?f }"),
    ],
)
def test_runaway_query_stops_at_the_limit_and_the_process_stays_healthy(
    kg_ctx: ToolContext, lang: str, query: str
) -> None:
    ask(kg_ctx, lang, "MATCH (n {id: 'COMP-001'}) RETURN n.id" if lang == "cypher" else "ASK { ?s ?p ?o }")
    started = time.perf_counter()
    out = ask(kg_ctx, lang, query, timeoutSeconds=0.5)
    elapsed = time.perf_counter() - started
    assert out["status"] == "ERROR_INVALID_QUERY" and out["timedOut"] is True
    assert out["errorDetails"].startswith("TIMEOUT:") and "0.5 s time limit" in out["errorDetails"]
    assert elapsed < 1.5, elapsed
    # The same process answers the next query at once.
    started = time.perf_counter()
    again = ask(kg_ctx, "cypher", f"MATCH (a {{id: '{T002}'}})-[:depends_on]->(b) RETURN b.id")
    assert again["status"] == "SUCCESS" and time.perf_counter() - started < 0.5
    if lang == "sparql":
        after = ask(kg_ctx, "sparql", f"ASK {{ ?t udm:id '{T002}' }}")
        assert after["results"] == [{"result": True}]
