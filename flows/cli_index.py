"""`udm index|query|search|sql|lint`: the UDM index from the command line (no Prefect import)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from flows.say import json_text, say
from tasks.base import ToolContext, call_tool, cli_approver
from tasks.udm_query import UdmQueryTool
from tasks.udm_sql import UdmSqlQueryTool
from udm.shown import shown_line

__all__ = ["register", "step_index", "step_lint", "step_queries"]

query_app = typer.Typer(
    help="Look things up in the UDM (IDs, sections, tasks, modes, tools, config).", no_args_is_help=True
)

_JSON = typer.Option(False, "--json", help="Print the tool's output as JSON.")


def _ctx() -> ToolContext:
    from flows.cli import settings

    return ToolContext(settings=settings(), approver=cli_approver(), log=True)


def _call_query(raw: dict[str, Any], as_json: bool, render: Any) -> None:
    from flows.cli import emit_json

    result = call_tool(UdmQueryTool(), raw, _ctx())
    env = result.envelope
    if as_json:
        emit_json(
            env.data if env.data is not None else {"status": "ERROR_INVALID_INPUT", "errorDetails": env.error}
        )
    elif env.success and env.data is not None:
        render(env.data)
    else:
        say(f"error: {env.error}", err=True)
        for cand in (env.data or {}).get("candidates") or []:
            say(f"  candidate: {cand}", err=True)
    if not env.success:
        raise typer.Exit(1)


def _print_value(data: dict[str, Any]) -> None:
    value = data.get("retrievedContent")
    source = data.get("source") or {}
    if isinstance(value, str):
        say(value, nl=not value.endswith("\n"))
    else:
        say(json_text(value))
    if source:
        say(f"# {source['file']}:{source['line']}", err=True)


def _print_id(data: dict[str, Any]) -> None:
    content = data["retrievedContent"]
    for d in content["definitions"]:
        say(f"{content['id']}\t{d['file']}:{d['line']}\t{d['how']}\t{d.get('section_path') or ''}")


@query_app.command("id")
def query_id(
    ident: str = typer.Argument(..., help="An ID, e.g. TASK-P0-M0.1-T001."), as_json: bool = _JSON
) -> None:
    """Where an ID is defined (file:line, how, section)."""
    _call_query({"query_type": "find_by_id", "udm_path_or_id": ident}, as_json, _print_id)


@query_app.command("section")
def query_section(
    target: str = typer.Argument(
        ..., help="'FILE#SECTION' (heading text, path, anchor or ID), 'FILE', or an ID."
    ),
    fmt: str = typer.Option("markdown", "--format", help="markdown | json_parsed_section | raw_text."),
    as_json: bool = _JSON,
) -> None:
    """A section's content."""
    if "#" in target or target.lower().endswith((".md", ".markdown")):
        file, _, ident = target.partition("#")
        raw: dict[str, Any] = {"udm_filepath": file, "return_format": fmt}
        if ident:
            raw["section_identifier"] = ident

        def render(data: dict[str, Any]) -> None:
            value = data.get("content")
            if isinstance(value, str):
                say(value, nl=not value.endswith("\n"))
            else:
                say(json_text(value))

        _call_query(raw, as_json, render)
    else:
        _call_query({"query_type": "get_section_content", "udm_path_or_id": target}, as_json, _print_value)


def _definition_command(kind: str, query_type: str, help_text: str) -> None:
    def command(key: str = typer.Argument(..., help=help_text), as_json: bool = _JSON) -> None:
        _call_query({"query_type": query_type, "udm_path_or_id": key}, as_json, _print_value)

    command.__doc__ = f"The {kind}'s definition, parsed."
    query_app.command(kind)(command)


_definition_command("task", "get_task_definition", "A task ID.")
_definition_command("mode", "get_mode_definition", "A mode ID, e.g. ROO-MODE-RESEARCH.")
_definition_command("tool", "get_tool_definition", "A tool name, e.g. udmQueryTool.")
_definition_command("config", "get_config_value", "A dotted key, e.g. http.timeout.")


@query_app.command("verified")
def query_verified(
    target: str = typer.Argument(..., help="A UDM ID, a check ID (CHK-...) or a section (file.md#anchor)."),
    as_json: bool = _JSON,
) -> None:
    """When the checks covering a target were last verified, and whether they passed."""

    def render(data: dict[str, Any]) -> None:
        content = data["retrievedContent"]
        say(content["summary"])
        for c in content["checks"]:
            reason = f"  {c['reason']}" if c.get("reason") else ""
            say(f"{c['verified_at']}  {c['status']}  {c['check_id']}  run {c['run_id']}{reason}")

    _call_query({"query_type": "last_verified", "udm_path_or_id": target}, as_json, render)


@query_app.command("refs")
def query_refs(
    ident: str = typer.Argument(..., help="An ID."),
    limit: int = typer.Option(100, "--limit", min=1, max=500, help="Most references."),
    as_json: bool = _JSON,
) -> None:
    """Every place an ID is mentioned (besides its definitions)."""

    def render(data: dict[str, Any]) -> None:
        content = data["retrievedContent"]
        for d in content["definitions"]:
            say(f"defined  {d['file']}:{d['line']}  {d.get('section_path') or ''}")
        for r in content["references"]:
            say(f"{r['file']}:{r['line']}  {r['text']}")

    _call_query({"query_type": "references", "udm_path_or_id": ident, "limit": limit}, as_json, render)


def cmd_index(
    full: bool = typer.Option(False, "--full", help="Re-parse every file, not only the changed ones."),
    as_json: bool = _JSON,
) -> None:
    """Bring the index up to date with the UDM files."""
    from flows.cli import emit_json, settings
    from udm.index import UdmIndex
    from udm.site import site_notes

    conf = settings()
    index = UdmIndex(conf)
    try:
        stats = index.refresh(full=full)
        # Every Markdown-like file left out is named with its reason, on every run (not only when parsed).
        skipped = index.skipped_files()
        site = index.site()
    finally:
        index.close()
    # What the links resolve by, and what could not be read of it: a wrong config must not pass unseen.
    notes = site_notes(conf, site)
    if as_json:
        emit_json(
            {
                **stats.as_dict(),
                "skipped": [{"path": p, "reason": r} for p, r in skipped],
                "site": {**site.describe(), "notes": [{"path": p, "message": m} for p, m in notes]},
            }
        )
    else:
        say(
            f"indexed {stats.files} files: {stats.parsed} parsed, {stats.unchanged} unchanged, "
            f"{stats.touched} touched, {stats.removed} removed; {stats.sections} sections, {stats.ids} IDs, "
            f"{stats.tasks} tasks in {stats.seconds:.2f} s ({stats.workers} workers)"
        )
        named = {p for p, _ in skipped}
        for err in [e for e in stats.errors if e.split(":", 1)[0] not in named][:20]:
            say(shown_line(f"  {err}"), err=True)
        if skipped:
            say(f"skipped {len(skipped)} files:")
            for path, reason in skipped:
                say(shown_line(f"  {path}: {reason}"))
        if site.generator != "none":
            say(f"site: {site.generator}" + (f" ({site.config_file})" if site.config_file else ""))
        echo_site_notes(notes)


def cmd_search(
    words: list[str] = typer.Argument(..., help="Words and/or IDs."),
    limit: int = typer.Option(10, "--limit", min=1, max=500, help="Most results."),
    as_json: bool = _JSON,
) -> None:
    """Ranked full-text search over sections (file:line, heading path, snippet)."""

    query = " ".join(words)
    if not query.strip():
        raise typer.BadParameter("give at least one word or ID to search for", param_hint="WORDS")

    def render(data: dict[str, Any]) -> None:
        for hit in data["retrievedContent"]:
            say(f"{hit['file']}:{hit['snippet_line']}  {hit['section_path']}  ({hit['score']:.2f})")
            say(f"    {hit['snippet']}")
        if not data["retrievedContent"]:
            say(f"no section matches {query!r}", err=True)

    _call_query({"query_type": "search", "udm_path_or_id": query, "limit": limit}, as_json, render)


def cmd_sql(
    sql: str = typer.Argument(..., help="One SELECT or WITH statement."),
    max_rows: int | None = typer.Option(
        None, "--max-rows", min=1, help="Row cap (at most the configured one)."
    ),
    as_json: bool = _JSON,
) -> None:
    """Read-only SQL over the index tables."""
    from flows.cli import emit_json

    raw: dict[str, Any] = {"sql": sql}
    if max_rows is not None:
        raw["max_rows"] = max_rows
    env = call_tool(UdmSqlQueryTool(), raw, _ctx()).envelope
    if as_json:
        emit_json(
            env.data if env.data is not None else {"status": "ERROR_REFUSED", "errorDetails": env.error}
        )
    elif env.success and env.data is not None:
        data = env.data
        say("\t".join(data["columns"]))
        for row in data["rows"]:
            say(
                "\t".join(
                    "" if v is None else json.dumps(v) if isinstance(v, (dict, list)) else str(v) for v in row
                )
            )
        more = " (truncated at the row cap)" if data["truncated"] else ""
        say(f"# {data['rowCount']} rows in {data['elapsedMs']:.1f} ms{more}", err=True)
    else:
        say(f"error: {env.error}", err=True)
    if not env.success:
        raise typer.Exit(1)


def cmd_lint(
    as_json: bool = typer.Option(False, "--json", help="Same as --format json."),
    fmt: str = typer.Option(
        "text", "--format", "-f", help="text | json | sarif (2.1.0) | junit (XML) | github (annotations)."
    ),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the report to this file."),
    fail_on: str | None = typer.Option(
        None,
        "--fail-on",
        help="error | warning | never: what makes the exit status 1 (setting lint_fail_on).",
    ),
    max_warnings: int | None = typer.Option(
        None,
        "--max-warnings",
        min=-1,
        help="Exit 1 past this many warnings (-1: no cap; setting lint_max_warnings).",
    ),
) -> None:
    """Check IDs, dependencies, links, blocks and heading levels; exit 1 on errors (see --fail-on)."""
    from flows.cli import fail, settings
    from udm.errors import ConfigError
    from udm.index import FORMATS, LintConfig, exit_code, lint, render

    fmt = "json" if as_json else fmt
    if fmt not in FORMATS:
        raise fail(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}", 2)
    s = settings()
    try:
        config = LintConfig.from_settings(s, fail_on=fail_on, max_warnings=max_warnings)
    except ConfigError as exc:
        raise fail(str(exc), 2) from None
    findings = lint(s, config=config)
    root, project = s.udm_root, s.project_root
    prefix = root.relative_to(project).as_posix() if root.is_relative_to(project) and root != project else ""
    report = render(findings, fmt, prefix=prefix if fmt in ("sarif", "junit", "github") else "")
    if output is not None:
        try:
            output.write_text(report, encoding="utf-8")
        except OSError as exc:
            raise fail(f"cannot write {output}: {exc.strerror or exc}", 2) from None
    else:
        say(report, nl=False)
    errors = sum(1 for f in findings if f.severity == "error")
    say(f"{errors} errors, {len(findings) - errors} warnings", err=True)
    code = exit_code(findings, config)
    if code:
        raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add the index commands to the root app."""
    app.command("index")(cmd_index)
    app.add_typer(query_app, name="query")
    app.command("search")(cmd_search)
    app.command("sql")(cmd_sql)
    app.command("lint")(cmd_lint)


# ----- demo steps ---------------------------------------------------------------------------------


def step_index(ws: Any) -> None:
    """Index the sample UDM and show what it holds."""
    from udm.index import get_query

    q = get_query(ws.settings)
    stats = q.index.refresh(full=True)
    ws.say(
        f"indexed {stats.files} files in {stats.seconds:.2f} s: {stats.sections} sections, {stats.ids} ID "
        f"occurrences, {stats.tasks} tasks"
    )
    again = q.index.refresh()
    ws.say(f"re-index with nothing changed: {again.parsed} files parsed in {again.seconds * 1000:.1f} ms")


def step_queries(ws: Any) -> None:
    """A few udmQueryTool calls: an ID, a task, a config value, a section, a search."""
    ctx = ws.ctx()
    calls: list[dict[str, Any]] = [
        {"query_type": "find_by_id", "udm_path_or_id": "TASK-P0-M0.1-T002"},
        {"query_type": "get_task_definition", "udm_path_or_id": "TASK-P0-M0.1-T002"},
        {"query_type": "get_config_value", "udm_path_or_id": "http.timeout"},
        {
            "udm_filepath": "04-modes.md",
            "section_identifier": "## 5.3 Mode: ROO-MODE-PLAN-STRATEGIC",
            "return_format": "json_parsed_section",
        },
        {"query_type": "search", "udm_path_or_id": "sandbox symlink", "limit": 3},
    ]
    for raw in calls:
        result = call_tool(UdmQueryTool(), raw, ctx)
        data = result.envelope.data or {}
        value = (
            data.get("retrievedContent") if data.get("retrievedContent") is not None else data.get("content")
        )
        text = json.dumps(value, ensure_ascii=False)
        ws.say(
            f"{json.dumps(raw, ensure_ascii=False)}\n  -> {data.get('status')} ({result.duration_ms:.1f} ms): {text[:160]}"
        )
    # Never stale: edit a file and ask again without re-indexing by hand.
    path = ws.settings.udm_root / "06-config.md"
    original = path.read_text(encoding="utf-8")
    path.write_text(original.replace("  timeout: 10\n", "  timeout: 12\n", 1), encoding="utf-8")
    result = call_tool(
        UdmQueryTool(), {"query_type": "get_config_value", "udm_path_or_id": "http.timeout"}, ctx
    )
    ws.say(
        f"after editing 06-config.md, http.timeout = {(result.envelope.data or {}).get('retrievedContent')}"
    )
    # Later steps (the sample patch) were planned against the sample as shipped.
    path.write_text(original, encoding="utf-8")


def step_lint(ws: Any) -> None:
    """Lint the sample UDM, then break a dependency and lint again."""
    from udm.index import lint

    findings = lint(ws.settings)
    ws.say(f"lint: {len(findings)} findings on the sample")
    path = ws.settings.udm_root / "05-roadmap.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("depends_on: []", "depends_on: [TASK-P9-M9.9-T999]", 1), encoding="utf-8")
    for f in lint(ws.settings):
        ws.say(f"  {f}")
    path.write_text(text, encoding="utf-8")


def echo_site_notes(notes: list[tuple[str, str]]) -> None:
    """Each site note (see `udm.site.site_notes`) as a `site config:` line on stderr."""
    from udm.site import note_line

    for path, message in notes:
        say(f"site config: {note_line(path, message)}", err=True)
