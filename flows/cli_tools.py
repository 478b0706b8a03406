"""`udm tools list|schema|call` and `udm config`: tools and settings from the command line."""

from __future__ import annotations

import json
import sys

import typer

from flows.say import say
from tasks.base import SCHEMA_FORMATS, ToolContext, call_tool, cli_approver, export_schema
from tasks.registry import all_tools, get_tool
from udm.datalimits import DataLimitError, check_json

__all__ = ["register"]

tools_app = typer.Typer(help="List, describe and call the tools.", no_args_is_help=True)


@tools_app.command("list")
def tools_list(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List every tool with its permission level."""
    from flows.cli import emit_json

    rows = [
        {"name": t.name, "permission": t.permission.value, "description": t.description} for t in all_tools()
    ]
    if as_json:
        emit_json(rows)
        return
    width = max((len(r["name"]) for r in rows), default=0)
    for r in rows:
        first = r["description"].split(". ")[0].rstrip(".")
        say(f"{r['name']:<{width}}  {r['permission']:<11}  {first}")


@tools_app.command("schema")
def tools_schema(
    name: str = typer.Argument(..., help="Tool name, or 'all'."),
    fmt: str = typer.Option("jsonschema", "--format", "-f", help="jsonschema | mcp | anthropic | openai."),
) -> None:
    """Print a tool's schema in the chosen format ('all' prints every tool's)."""
    from flows.cli import emit_json, fail

    if fmt not in SCHEMA_FORMATS:
        raise typer.BadParameter(f"'{fmt}' is not one of {', '.join(SCHEMA_FORMATS)}", param_hint="--format")
    if name == "all":
        emit_json([export_schema(t, fmt) for t in all_tools()])
        return
    tool = get_tool(name)
    if tool is None:
        raise fail(f"unknown tool '{name}' (see 'udm tools list')", 2)
    emit_json(export_schema(tool, fmt))


@tools_app.command("call")
def tools_call(
    name: str = typer.Argument(..., help="Tool name."),
    json_input: str = typer.Option(..., "--json", help="The input as a JSON object, or '-' to read stdin."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Approve calls that need approval."),
) -> None:
    """Call a tool and print its {success, data, error} envelope; exit 1 on an error result."""
    from flows.cli import emit_json, fail, settings

    tool = get_tool(name)
    if tool is None:
        raise fail(f"unknown tool '{name}' (see 'udm tools list')", 2)
    text = sys.stdin.read() if json_input == "-" else json_input
    try:
        check_json(text, what="--json")
        raw = json.loads(text)
    except DataLimitError as exc:
        raise fail(f"--json is refused: {exc}", 2) from exc
    except json.JSONDecodeError as exc:
        raise fail(f"--json is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", 2) from exc
    ctx = ToolContext(settings=settings(), approver=cli_approver(yes))
    result = call_tool(tool, raw, ctx)
    emit_json(result.envelope)
    if not result.envelope.success:
        raise typer.Exit(1)


def config(
    as_json: bool = typer.Option(True, "--json/--text", help="Print JSON (default) or key = value lines."),
) -> None:
    """Print the resolved settings (secrets masked)."""
    from flows.cli import emit_json, settings

    data = settings().public_dict()
    if as_json:
        emit_json(data)
        return
    for key, value in data.items():
        say(f"{key} = {json.dumps(value, default=str)}")


def register(app: typer.Typer) -> None:
    """Add the tools group and the config command."""
    app.add_typer(tools_app, name="tools")
    app.command("config")(config)
