"""`udm graph ...`: query the knowledge graph, run its operations, export it and draw neighbourhoods."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from flows.say import json_text, say
from tasks.base import ToolContext, call_tool
from udm.errors import GraphCycleError, TargetNotFoundError, UdmError

__all__ = ["graph_app", "register", "step_graph_impact"]

graph_app = typer.Typer(
    help="The manual's knowledge graph: queries, dependencies, impact, exports.", no_args_is_help=True
)

_LANGS = {
    "cypher": "cypher",
    "sparql": "sparql",
    "nl": "natural_language",
    "natural_language": "natural_language",
    "gremlin": "gremlin",
}
_VIA_HELP = "Edge types to follow (repeatable; default depends_on)."


def _tool() -> Any:
    # The tool object itself, so a call does not depend on every other registered tool importing.
    from tasks.knowledge_graph import KnowledgeGraphQueryTool

    return KnowledgeGraphQueryTool()


def _handle() -> Any:
    from flows.cli import settings
    from udm.graph import open_graph

    return open_graph(settings())


def _print_rows(rows: list[dict[str, Any]], columns: list[str] | None = None) -> None:
    if not rows:
        say("(none)")
        return
    cols = columns or list(dict.fromkeys(k for r in rows for k in r))
    text_rows = [["" if r.get(c) is None else str(r.get(c)) for c in cols] for r in rows]
    widths = [min(60, max(len(c), *(len(t[i]) for t in text_rows))) for i, c in enumerate(cols)]
    say("  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=False)).rstrip())
    for t in text_rows:
        say("  ".join(v[:60].ljust(w) for v, w in zip(t, widths, strict=False)).rstrip())


def _emit(rows: list[dict[str, Any]], as_json: bool) -> None:
    from flows.cli import emit_json

    if as_json:
        emit_json(rows)
    else:
        _print_rows(rows)


@graph_app.command("query")
def graph_query(
    query: str = typer.Argument(..., help="The query (or question, with --lang nl)."),
    lang: str = typer.Option("cypher", "--lang", "-l", help="cypher | sparql | nl | gremlin."),
    fmt: str = typer.Option("table", "--format", "-f", help="json | table | text_summary."),
    timeout: float | None = typer.Option(None, "--timeout", help="Time limit, seconds (default 2)."),
    max_rows: int | None = typer.Option(None, "--max-rows", help="Row cap."),
    as_json: bool = typer.Option(False, "--json", help="Print the tool's whole output as JSON."),
) -> None:
    """Run a query through knowledgeGraphQueryTool; exit 1 on an error or no results."""
    from flows.cli import emit_json, fail, settings

    language = _LANGS.get(lang.lower())
    if language is None:
        raise typer.BadParameter(f"'{lang}' is not one of cypher, sparql, nl, gremlin", param_hint="--lang")
    raw: dict[str, Any] = {
        "queryLanguage": language,
        "query": query,
        "resultFormat": "json" if as_json else fmt,
    }
    if timeout is not None:
        raw["timeoutSeconds"] = timeout
    if max_rows is not None:
        raw["maxRows"] = max_rows
    result = call_tool(_tool(), raw, ToolContext(settings=settings()))
    data = result.envelope.data
    if as_json:
        emit_json(data if data is not None else result.envelope.model_dump())
    elif data is None:
        raise fail(result.envelope.error or "the query could not run")
    else:
        say(f"# {data['queryExecuted']}", err=True)
        results: Any = data.get("results")
        if data["status"] == "SUCCESS" and data["resultFormatUsed"] == "table":
            cols = results["columns"]
            _print_rows([dict(zip(cols, row, strict=False)) for row in results["rows"]], cols)
        elif data["status"] == "SUCCESS" and data["resultFormatUsed"] == "json":
            say(json_text(results))
        elif data["status"] == "SUCCESS":
            say(results)
        if data.get("truncated"):
            say(f"(truncated at {data['rowCount']} rows)", err=True)
    if not result.envelope.success:
        raise fail(result.envelope.error or "query failed")


def _run_op(operation: str, args: dict[str, Any], as_json: bool) -> None:
    from flows.cli import fail
    from udm.graph import run_operation

    handle = _handle()
    try:
        result = run_operation(handle.kg, operation, args, row_cap=1_000_000)
    except GraphCycleError as exc:
        raise fail(str(exc)) from None
    except TargetNotFoundError as exc:
        raise fail(str(exc)) from None
    _emit(result.records(), as_json)


@graph_app.command("deps")
def graph_deps(
    node_id: str = typer.Argument(..., help="A node ID, e.g. TASK-P0-M0.1-T002."),
    via: list[str] | None = typer.Option(None, "--via", help=_VIA_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Everything ID depends on, transitively (nearest first, with hops)."""
    _run_op("dependencies", {"id": node_id, "via": via}, as_json)


@graph_app.command("dependents")
def graph_dependents(
    node_id: str = typer.Argument(..., help="A node ID."),
    via: list[str] | None = typer.Option(None, "--via", help=_VIA_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Everything that depends on ID, transitively: the impact of changing it."""
    _run_op("dependents", {"id": node_id, "via": via}, as_json)


@graph_app.command("path")
def graph_path(
    source: str = typer.Argument(..., help="From this node ID."),
    target: str = typer.Argument(..., help="To this node ID."),
    directed: bool = typer.Option(False, "--directed", help="Follow edges only in their direction."),
    via: list[str] | None = typer.Option(None, "--via", help="Edge types to follow (default: all)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """The shortest path between two IDs; exit 1 when there is none."""
    from flows.cli import fail
    from udm.graph import run_operation

    handle = _handle()
    try:
        result = run_operation(
            handle.kg, "path", {"source": source, "target": target, "directed": directed, "via": via}
        )
    except TargetNotFoundError as exc:
        raise fail(str(exc)) from None
    if not result.rows:
        raise fail(f"no path from {source} to {target}")
    _emit(result.records(), as_json)


@graph_app.command("cycles")
def graph_cycles(
    via: list[str] | None = typer.Option(None, "--via", help=_VIA_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Dependency cycles (one per group of nodes that depend on each other); exit 1 if any."""
    from udm.graph import run_operation

    result = run_operation(_handle().kg, "cycles", {"via": via}, row_cap=1_000_000)
    rows = [{"length": r["length"], "cycle": " -> ".join(r["cycle"])} for r in result.records()]
    _emit(rows, as_json)
    if rows:
        raise typer.Exit(1)


@graph_app.command("order")
def graph_order(
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Tasks in topological order: each after everything it depends on."""
    _run_op("order", {}, as_json)


@graph_app.command("orphans")
def graph_orphans(
    kind: list[str] | None = typer.Option(None, "--kind", help="Only these kinds (repeatable)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """IDs that are defined but never referenced anywhere."""
    _run_op("orphans", {"kinds": kind}, as_json)


@graph_app.command("export")
def graph_export(
    fmt: str = typer.Option("json", "--format", "-f", help="graphml | json."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write to this file (default stdout)."),
) -> None:
    """Export the whole graph as GraphML or JSON."""
    from flows.cli import fail
    from udm.graph import export_graph

    try:
        text = export_graph(_handle().kg, fmt)
    except UdmError as exc:
        raise fail(str(exc), 2) from None
    if output is None:
        say(text)
        return
    tmp = output.with_name(f".{output.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(output)
    say(f"wrote {output} ({len(text)} characters)", err=True)


@graph_app.command("show")
def graph_show(
    node_id: str = typer.Argument(..., help="A node ID."),
    depth: int = typer.Option(1, "--depth", min=0, max=5, help="Neighbourhood radius in edges."),
    mermaid: bool = typer.Option(False, "--mermaid", help="Print a Mermaid flowchart."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """A node's properties and its neighbourhood (as edges, or as a Mermaid diagram)."""
    from flows.cli import emit_json, fail
    from udm.graph import neighbourhood, require_node, to_mermaid

    handle = _handle()
    try:
        found = require_node(handle.kg, node_id)
    except TargetNotFoundError as exc:
        raise fail(str(exc)) from None
    sub = neighbourhood(handle.kg, found, depth)
    if mermaid:
        say(to_mermaid(sub, highlight=found), nl=False)
        return
    edges = [{"source": s, "type": t, "target": d} for s, t, d in sorted(sub.edges())]
    if as_json:
        emit_json({"node": handle.kg.node(found), "edges": edges})
        return
    for key, value in handle.kg.node(found).items():
        say(f"{key}: {value}")
    say("")
    _print_rows(edges)


@graph_app.command("stats")
def graph_stats(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Node counts per kind and edge counts per type."""
    from flows.cli import emit_json

    stats = _handle().kg.stats()
    if as_json:
        emit_json(stats)
        return
    say(f"{stats['nodes']} nodes, {stats['edges']} edges (fingerprint {stats['fingerprint']})")
    for key, value in stats["kinds"].items():
        say(f"  node {key}: {value}")
    for key, value in stats["edge_types"].items():
        say(f"  edge {key}: {value}")


def step_graph_impact(ws: Any) -> None:
    """Demo: impact of changing the first task, a Cypher query, a SPARQL query and a runaway one stopped."""
    ctx = ws.ctx()
    first = "TASK-P0-M0.1-T001"
    runaway = "MATCH (a)-[*1..6]-(b)-[*1..6]-(c) RETURN count(*)"
    data: dict[str, Any] = {}
    for lang, query in (
        ("natural_language", f"what is affected if {first} changes"),
        ("cypher", f"MATCH (a {{id: '{first}'}})<-[:depends_on]-(b) RETURN b.id AS id, b.title AS title"),
        (
            "sparql",
            "SELECT ?mode (COUNT(?t) AS ?tasks) WHERE { ?t a udm:Task ; udm:owned_by ?m . ?m udm:id ?mode } "
            "GROUP BY ?mode ORDER BY DESC(?tasks)",
        ),
        ("cypher", runaway),
    ):
        raw = {"queryLanguage": lang, "query": query, "timeoutSeconds": 1.0}
        result = call_tool(_tool(), raw, ctx)
        data = result.envelope.data or {}
        ws.say(f"   [{lang}] {str(data.get('queryExecuted', query))[:110]}")
        if data.get("status") == "SUCCESS":
            first_rows = json.dumps(data["results"][:3], ensure_ascii=False)[:200]
            ws.say(f"     -> {data['rowCount']} rows in {data['durationMs']:.1f} ms; first: {first_rows}")
        else:
            details = data.get("errorDetails") or result.envelope.error or ""
            ws.say(f"     -> {data.get('status')} in {data.get('durationMs', 0):.0f} ms: {details[:150]}")
    if not data.get("timedOut"):
        raise RuntimeError("the runaway pattern was not stopped at its time limit")
    after = call_tool(
        _tool(), {"queryLanguage": "natural_language", "query": "what does TASK-P0-M0.1-T004 depend on"}, ctx
    )
    got = after.envelope.data or {}
    ws.say(
        f"   after the stopped query the graph still answers: 'what does TASK-P0-M0.1-T004 depend on' -> "
        f"{got.get('status')}, {got.get('rowCount')} rows in {got.get('durationMs', 0):.1f} ms"
    )
    if got.get("status") != "SUCCESS":
        raise RuntimeError("the graph did not answer after a stopped query")


def register(app: typer.Typer) -> None:
    """Add the `graph` command group."""
    app.add_typer(graph_app, name="graph")
