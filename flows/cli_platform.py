"""`udm pipeline|server|serve|mcp`: declarative pipelines, the local Prefect server, serving deployments, MCP.

Prefect is imported only by the commands that run flows (`pipeline run`, `serve`); those first
point Prefect at the project's local server when it runs (`udm server start`), since a temporary
per-process server costs 10-17 s per run and forgets most of the run's history.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from flows.say import say
from udm.datalimits import DataLimitError, check_json

__all__ = ["register"]

pipeline_app = typer.Typer(
    help="Declarative pipelines: check, graph and run YAML specs.", no_args_is_help=True
)
server_app = typer.Typer(help="The local Prefect server (UI and run history).", no_args_is_help=True)


def _compile(path: Path, params: dict[str, Any] | None = None) -> Any:
    from tasks.pipeline_spec import BUILTIN_FLOWS, FlowInfo, compile_pipeline, load_spec

    spec = load_spec(path)
    if any(s.flow for s in spec.steps.values()):
        # Only specs with flow steps pay for importing the flows (and Prefect) to check parameters.
        from flows.pipeline import flow_catalog

        flows = flow_catalog()
    else:
        flows = {name: FlowInfo(parameters={}) for name in BUILTIN_FLOWS}
    return compile_pipeline(spec, flows, params)


def _params(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"'{pair}' is not KEY=VALUE", param_hint="--param")
        try:
            # Measured before json.loads recurses into it: a deep value is a clear error, not a traceback.
            check_json(value, what=f"--param {key}")
            out[key] = json.loads(value)
        except DataLimitError as exc:
            raise typer.BadParameter(f"'{key}' is refused: {exc}", param_hint="--param") from exc
        except json.JSONDecodeError:
            out[key] = value
    return out


@pipeline_app.command("check")
def pipeline_check(
    file: Path = typer.Argument(..., help="The pipeline spec (YAML or JSON)."),
    param: list[str] = typer.Option([], "--param", "-p", help="KEY=VALUE parameter (JSON values allowed)."),
) -> None:
    """Check a spec without running it; exit 1 naming every problem."""
    from tasks.pipeline_spec import PipelineCheckError

    try:
        compiled = _compile(file, _params(param))
    except PipelineCheckError as exc:
        for problem in exc.problems:
            say(f"error: {problem}", err=True)
        say(f"{file}: {len(exc.problems)} problem(s)", err=True)
        raise typer.Exit(1) from None
    say(f"{file}: ok, {len(compiled.order)} steps, {compiled.graph.number_of_edges()} edges")
    say("order: " + " -> ".join(compiled.order))


@pipeline_app.command("graph")
def pipeline_graph(
    file: Path = typer.Argument(..., help="The pipeline spec."),
    fmt: str = typer.Option("mermaid", "--format", "-f", help="mermaid | dot | json."),
) -> None:
    """Print a checked spec's DAG (Mermaid, Graphviz dot or JSON)."""
    from tasks.pipeline_spec import PipelineCheckError

    if fmt not in ("mermaid", "dot", "json"):
        raise typer.BadParameter(f"'{fmt}' is not mermaid, dot or json", param_hint="--format")
    try:
        compiled = _compile(file)
    except PipelineCheckError as exc:
        for problem in exc.problems:
            say(f"error: {problem}", err=True)
        raise typer.Exit(1) from None
    steps = compiled.spec.steps

    def label(name: str) -> str:
        s = steps[name]
        what = s.tool or f"flow {s.flow}"
        return f"{name}: {what}" + (" (for each)" if s.for_each is not None else "")

    if fmt == "json":
        say(
            json.dumps(
                {
                    "nodes": [{"id": n, "label": label(n)} for n in compiled.order],
                    "edges": list(compiled.graph.edges),
                },
                indent=2,
            )
        )
    elif fmt == "dot":
        say(f'digraph "{compiled.spec.name}" {{')
        for n in compiled.order:
            say(f'  "{n}" [label="{label(n)}"];')
        for u, v in compiled.graph.edges:
            say(f'  "{u}" -> "{v}";')
        say("}")
    else:
        say("flowchart TD")
        for n in compiled.order:
            say(f'  {n.replace("-", "_")}["{label(n)}"]')
        for u, v in compiled.graph.edges:
            say(f"  {u.replace('-', '_')} --> {v.replace('-', '_')}")


@pipeline_app.command("run")
def pipeline_run(
    file: Path = typer.Argument(..., help="The pipeline spec."),
    param: list[str] = typer.Option([], "--param", "-p", help="KEY=VALUE parameter (JSON values allowed)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Approve the tool calls the policy would ask about."),
) -> None:
    """Check, then run a spec as a Prefect flow; prints every step's outcome, exit 1 if one failed."""
    from flows.cli import emit_json, settings
    from flows.local_server import use_running_server
    from tasks.pipeline_spec import PipelineCheckError

    params = _params(param)
    try:
        _compile(file, params)
    except PipelineCheckError as exc:
        for problem in exc.problems:
            say(f"error: {problem}", err=True)
        raise typer.Exit(1) from None
    cfg = settings()
    if not use_running_server(cfg):
        say("note: no local server (udm server start): using a temporary one (slower)", err=True)
    from flows.pipeline import POOL_SIZE, PipelineRunError, pipeline_flow
    from flows.runners import on_runner
    from flows.states import state_result
    from tasks.base import process_policy

    # --yes is this process's decision (the person at the terminal): it covers the flow steps'
    # reviews (an update step) as well as the tool calls, without any run parameter lowering a policy.
    try:
        with process_policy("full_auto" if yes else None):
            summary = state_result(
                on_runner(pipeline_flow, cfg, POOL_SIZE)(
                    spec=str(file.resolve()),
                    params=params,
                    project=str(cfg.project_root),
                    root=str(cfg.udm_root),
                    state_dir=str(cfg.state_path),
                    approve=yes,
                    return_state=True,
                )
            )
    except PipelineRunError as exc:
        emit_json(exc.summary)
        say(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    emit_json(summary)


@pipeline_app.command("schema")
def pipeline_schema() -> None:
    """Print the JSON Schema of pipeline specs."""
    from tasks.pipeline_spec import pipeline_json_schema

    say(json.dumps(pipeline_json_schema(), indent=2))


@server_app.command("start")
def server_start(
    port: int = typer.Option(4200, "--port", help="Port of the API and UI on 127.0.0.1.", min=1, max=65535),
    timeout: float = typer.Option(90.0, "--timeout", help="Seconds to wait for /api/health."),
) -> None:
    """Start `prefect server start` in the background (data in <state>/prefect) and wait until healthy."""
    from flows.cli import fail, settings
    from flows.local_server import start_server

    try:
        info = start_server(settings(), port=port, timeout=timeout)
    except RuntimeError as exc:
        raise fail(str(exc)) from None
    say(f"running: pid {info.pid}, UI {info.ui_url}, API {info.api_url}")
    say(f"use it from other shells: export PREFECT_API_URL={info.api_url}")


@server_app.command("stop")
def server_stop() -> None:
    """Stop the local server."""
    from flows.cli import settings
    from flows.local_server import stop_server

    say("stopped" if stop_server(settings()) else "not running")


@server_app.command("status")
def server_status_cmd() -> None:
    """Say whether the local server runs (exit 1 when it does not)."""
    from flows.cli import settings
    from flows.local_server import server_status

    state, info = server_status(settings())
    if state == "stopped" or info is None:
        say("stopped")
        raise typer.Exit(1)
    say(f"{state}: pid {info.pid}, UI {info.ui_url}, API {info.api_url}, log {info.log}")


def serve(
    only: list[str] = typer.Option([], "--only", help="Serve only these deployments (repeatable)."),
    limit: int | None = typer.Option(None, "--limit", help="Most flow runs at once.", min=1),
) -> None:
    """Serve every deployment (schedules included) from this process, using the local server if it runs."""
    from flows.cli import fail, settings
    from flows.local_server import use_running_server

    url = use_running_server(settings())
    if not url:
        raise fail("serve needs a Prefect API: run `udm server start` first (or set PREFECT_API_URL)")
    say(f"serving against {url} (Ctrl-C stops and pauses the schedules)")
    from flows.deployments import serve_all

    try:
        serve_all(only or None, limit)
    except RuntimeError as exc:
        raise fail(str(exc)) from None


def mcp(
    http: bool = typer.Option(False, "--http", help="Streamable HTTP on 127.0.0.1 instead of stdio."),
    port: int = typer.Option(8765, "--port", help="Port for --http.", min=1, max=65535),
    tools: str = typer.Option("", "--tools", help="Comma-separated tool names to offer (default: all)."),
) -> None:
    """Serve the tools over MCP (stdio by default); approval is enforced by the server."""
    from flows.cli import fail, settings
    from tasks.base import ToolContext
    from tasks.mcp_server import build_server, run_http, run_stdio
    from tasks.registry import all_tools, get_tool

    chosen = None
    if tools:
        chosen = []
        for name in (n.strip() for n in tools.split(",") if n.strip()):
            tool = get_tool(name)
            if tool is None:
                raise fail(f"unknown tool '{name}' (see 'udm tools list')", 2)
            chosen.append(tool)
    server = build_server(ToolContext(settings=settings()), chosen if chosen is not None else all_tools())
    if http:
        say(f"MCP over streamable HTTP at http://127.0.0.1:{port}/mcp", err=True)
        run_http(server, port)
    else:
        run_stdio(server)


def register(app: typer.Typer) -> None:
    """Add pipeline, server, serve and mcp."""
    app.add_typer(pipeline_app, name="pipeline")
    app.add_typer(server_app, name="server")
    app.command("serve")(serve)
    app.command("mcp")(mcp)


DEMO_SPEC = """\
name: demo-open-tasks
description: The roadmap's open tasks, each looked up in parallel, plus a spec check.
max_workers: 2
steps:
  open_tasks:
    tool: udmSqlQueryTool
    input: {sql: "SELECT id FROM tasks WHERE status <> 'done' ORDER BY id LIMIT 4"}
  definition:
    tool: udmQueryTool
    for_each: ${{ steps.open_tasks.output.rows }}
    input: {query_type: get_task_definition, udm_path_or_id: "${{ item[0] }}"}
    retries: 1
  check_a_bad_spec:
    tool: pipelineCheckTool
    input: {spec: "name: inner\\nsteps:\\n  a: {tool: noSuchTool}\\n"}
"""


def step_pipelines(ws: Any) -> None:
    """Demo: check and graph the built-in specs, then run a small spec as a Prefect flow."""
    from tasks.pipeline_spec import PipelineCheckError

    examples = Path(__file__).resolve().parent.parent / "examples" / "pipelines"
    for path in sorted(examples.glob("*.yaml")):
        compiled = _compile(path)
        ws.say(f"{path.name}: ok, steps {' -> '.join(compiled.order)}")
    broken = ws.path / "broken.yaml"
    broken.write_text(
        "name: broken\nsteps:\n  a: {tool: webSearchTool, input: {numResults: 99}}\n  b: {tool: nope}\n"
    )
    try:
        _compile(broken)
    except PipelineCheckError as exc:
        ws.say(f"broken.yaml: {len(exc.problems)} problems, e.g. {exc.problems[0]}")
    spec = ws.path / "demo-open-tasks.yaml"
    spec.write_text(DEMO_SPEC)
    from flows.pipeline import pipeline_flow
    from flows.states import state_result

    cfg = ws.settings
    summary = state_result(
        pipeline_flow(
            spec=str(spec),
            project=str(cfg.project_root),
            root=str(cfg.udm_root),
            state_dir=str(cfg.state_path),
            return_state=True,
        )
    )
    steps = summary["steps"]
    ids = [row[0] for row in steps["open_tasks"]["output"]["rows"]]
    ws.say(
        f"run {summary['status']}: open tasks {', '.join(ids)}; {steps['definition']['items']} looked up in parallel"
    )
    ws.say(f"check_a_bad_spec found: {steps['check_a_bad_spec']['output']['problems'][0]}")


def step_mcp_llm(ws: Any) -> None:
    """Demo: the tools over MCP (in process) and an LLM's tool_use blocks executed."""
    import anyio
    from mcp import Client

    from tasks.llm_tools import ToolUseExecutor
    from tasks.mcp_server import build_server

    server = build_server(ws.ctx())

    async def talk() -> tuple[int, int, str]:
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
            read_only = sum(1 for t in tools if t.annotations and t.annotations.read_only_hint)
            result = await client.call_tool(
                "udmQueryTool", {"query_type": "find_by_id", "udm_path_or_id": "COMP-002"}
            )
            return (
                len(tools),
                read_only,
                str(
                    result.structured_content.get("status")
                    if result.structured_content
                    else result.content[0]
                ),
            )

    count, read_only, status = anyio.run(talk)
    ws.say(f"MCP: {count} tools listed ({read_only} read-only); udmQueryTool find_by_id COMP-002 -> {status}")
    # The shape of a Claude response that asks for two tools (one with a bad input).
    response = {
        "role": "assistant",
        "content": [
            {
                "type": "tool_use",
                "id": "toolu_demo_1",
                "name": "udmQueryTool",
                "input": {"query_type": "get_task_definition", "udm_path_or_id": "TASK-P0-M0.1-T001"},
            },
            {"type": "tool_use", "id": "toolu_demo_2", "name": "udmSqlQueryTool", "input": {"sql": ""}},
        ],
    }
    reply = ToolUseExecutor(ws.ctx()).anthropic(response)
    for block in reply["content"]:
        state = "error" if block.get("is_error") else "ok"
        ws.say(f"tool_result {block['tool_use_id']}: {state}, {len(block['content'][0]['text'])} characters")
