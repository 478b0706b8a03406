"""The natural-language translator's forms, freshness of the graph, and the `udm graph` commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flows.cli import run
from udm.config import Settings
from udm.errors import GraphQueryError
from udm.graph import open_graph, translate
from udm.graph.nl import supported_forms
from udm.graph.ops import dependencies, dependents


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("what depends on TASK-P0-M0.1-T001?", "dependents(id='TASK-P0-M0.1-T001')"),
        ("Which tasks depend on `COMP-004`", "dependents(id='COMP-004')"),
        ("impact of COMP-004", "dependents(id='COMP-004')"),
        ("what is affected if ROO-MODE-RESEARCH changes", "dependents(id='ROO-MODE-RESEARCH')"),
        ("What does TASK-P0-M0.2-T007 depend on?", "dependencies(id='TASK-P0-M0.2-T007')"),
        ("dependencies of COMP-002", "dependencies(id='COMP-002')"),
        ("shortest path between COMP-001 and COMP-004", "path(source='COMP-001', target='COMP-004')"),
        ("path from A-1 to B-2", "path(source='A-1', target='B-2')"),
        ("topological order of tasks", "order()"),
        ("are there any dependency cycles?", "cycles()"),
        ("list orphaned IDs", "orphans()"),
    ],
)
def test_operation_forms(question: str, expected: str) -> None:
    plan = translate(question)
    assert plan.language == "operation" and plan.text == expected


def test_cypher_forms_escape_their_literals() -> None:
    plan = translate("which sections mention COMP-006")
    assert plan.language == "cypher"
    assert plan.text.startswith("MATCH (s:section)-[:references]->(x {id: 'COMP-006'})")
    both = translate("tasks of mode ROO-MODE-BUILD-BACKEND with status in-progress")
    assert "t.mode = 'ROO-MODE-BUILD-BACKEND' AND lower(t.status) = 'in-progress'" in both.text
    only_status = translate("tasks with status TODO")
    assert "WHERE lower(t.status) = 'todo' RETURN" in only_status.text
    assert (
        translate("where is APP-NODEJS-FS-RESEARCH-V1 mentioned").text
        == translate("which sections reference APP-NODEJS-FS-RESEARCH-V1").text
    )


def test_anything_else_lists_the_supported_forms() -> None:
    with pytest.raises(GraphQueryError) as err:
        translate("DROP everything; what depends on")
    for form in supported_forms():
        assert form in str(err.value)


def test_graph_follows_the_files(sample_settings: Settings) -> None:
    before = open_graph(sample_settings)
    assert open_graph(sample_settings) is before  # unchanged files: the same graph, not rebuilt
    roadmap = sample_settings.udm_root / "05-roadmap.md"
    original = roadmap.read_text(encoding="utf-8")
    try:
        roadmap.write_text(
            original.replace(
                "depends_on:\n  - TASK-P0-M0.1-T001\n", "depends_on:\n  - TASK-P0-M0.1-T003\n", 1
            ),
            encoding="utf-8",
        )
        after = open_graph(sample_settings)
        assert after.kg.fingerprint != before.kg.fingerprint
        assert next(d["id"] for d in dependencies(after.kg, "TASK-P0-M0.1-T002")) == "TASK-P0-M0.1-T003"
        assert "TASK-P0-M0.1-T002" not in {d["id"] for d in dependents(after.kg, "TASK-P0-M0.1-T001")}
    finally:
        roadmap.write_text(original, encoding="utf-8")
    restored = open_graph(sample_settings)
    assert restored.kg.fingerprint == before.kg.fingerprint


def cli(settings: Settings, *args: str) -> int:
    return run(["--root", str(settings.udm_root), "--state-dir", str(settings.state_path), "graph", *args])


def test_cli_commands(sample_settings: Settings, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert (
        cli(sample_settings, "query", "MATCH (a {id: 'TASK-P0-M0.1-T002'})-[:depends_on]->(b) RETURN b.id")
        == 0
    )
    assert "TASK-P0-M0.1-T001" in capsys.readouterr().out
    assert cli(sample_settings, "query", "--lang", "nl", "what depends on TASK-P0-M0.1-T001", "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["status"] == "SUCCESS" and out["queryExecuted"].startswith("operation: dependents")
    assert (
        cli(
            sample_settings,
            "query",
            "--lang",
            "sparql",
            "ASK { node:COMP-001 a udm:Component }",
            "-f",
            "json",
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out) == [{"result": True}]
    assert cli(sample_settings, "query", "--lang", "gremlin", "g.V()") == 1
    assert "not supported" in capsys.readouterr().err
    assert cli(sample_settings, "query", "--lang", "prolog", "x") == 2
    capsys.readouterr()

    assert cli(sample_settings, "deps", "TASK-P0-M0.2-T007", "--json") == 0
    assert json.loads(capsys.readouterr().out)[0]["id"] == "TASK-P0-M0.2-T006"
    assert cli(sample_settings, "dependents", "TASK-P0-M0.1-T001") == 0
    assert "TASK-P0-M0.1-T007" in capsys.readouterr().out
    assert cli(sample_settings, "path", "TASK-P0-M0.2-T007", "COMP-006", "--json") == 0
    assert json.loads(capsys.readouterr().out)[-1]["id"] == "COMP-006"
    assert cli(sample_settings, "path", "COMP-004", "COMP-001", "--directed", "--via", "depends_on") == 1
    assert "no path" in capsys.readouterr().err
    assert cli(sample_settings, "cycles") == 0
    assert capsys.readouterr().out.strip() == "(none)"
    assert cli(sample_settings, "order", "--json") == 0
    assert len(json.loads(capsys.readouterr().out)) == 46
    assert cli(sample_settings, "orphans", "--kind", "task", "--json") == 0
    assert all(r["kind"] == "task" for r in json.loads(capsys.readouterr().out))
    assert cli(sample_settings, "deps", "TASK-NOPE") == 1
    assert "no node 'TASK-NOPE'" in capsys.readouterr().err

    assert cli(sample_settings, "show", "COMP-006", "--depth", "1", "--mermaid") == 0
    diagram = capsys.readouterr().out
    assert diagram.startswith("flowchart LR") and "COMP-006" in diagram and "-->|owned_by|" in diagram
    assert cli(sample_settings, "show", "COMP-006", "--json") == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["node"]["kind"] == "component" and shown["edges"]

    target = tmp_path / "graph.graphml"
    assert cli(sample_settings, "export", "--format", "graphml", "-o", str(target)) == 0
    assert target.read_text(encoding="utf-8").startswith("<?xml")
    assert cli(sample_settings, "export", "--format", "json") == 0
    exported = json.loads(capsys.readouterr().out)
    assert {"nodes", "edges", "fingerprint"} <= exported.keys()
    assert cli(sample_settings, "export", "--format", "dot") == 2
