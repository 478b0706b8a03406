"""The index's tables: their DDL, the SQL that loads rows into them, and what a refresh reports."""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

import duckdb
import orjson

from udm.index.extract import TABLE_COLUMNS

__all__ = [
    "DEFS_SQL",
    "FILE_COLUMNS",
    "INSERT_JSON",
    "SCHEMA_VERSION",
    "Indexed",
    "RefreshStats",
    "columns_sql",
    "create_tables",
    "json_bytes",
    "new_epoch",
]

# 7: links.form (how a link is written); 8: files.site (route front matter); 9: blocks.role;
# 10: problems.rule (parser fallbacks are reported apart from bad blocks); 11: section anchors from
# the rendered heading text and a heading's own `{#id}` (rows of unchanged files differ: rebuilt);
# 12: no link from a <style src> (Vue blocks in VitePress pages); 13: no link from a bound attribute
# (Vue's :href) or from the code of a <script>/<style> element; 14: Hugo ref/relref shortcodes are
# links; 15: a dated page's title and date kept (Hugo permalinks); 16: a link in the `em`/`strong`
# that opens a quoted paragraph of several lines is found; 17: an href/src of HTML written in a
# JavaScript string is the string's value, and entity-escaped text (`src=&quot;x&quot;`) is no link;
# 18: a `&lt;` inside a quoted value of a real tag hides none of its links, every spelling of an
# escaped `<` or quote is one, and a JavaScript string's `\u`/`\x` escapes are undone; 19: a page's
# route front matter holds Jekyll's permalink, redirect_from and categories; 20: and the MyST targets
# a page names before its first heading; 21: a MyST site's roles ({ref}`x`, {doc}`x`) are links;
# 22: a Jekyll page's destinations written in Liquid ({% link x.md %}, {{ '/x/' | relative_url }})
# are links, and kramdown's footnote anchors (fn:x, fnref:x) are a Jekyll page's; 23: MyST's
# `project:` and `path:` links are internal (the project's files and targets); 24: a link whose
# title holds Docsify's `:include` or `:ignore` has the form `embed` or `ignore`; 25: TOML front
# matter (`+++`) is the page's front matter, and a page's route meta holds Zola's `path` and a
# draft's `draft`
SCHEMA_VERSION = 25
# ID definitions with their section's line range: the rows of the SQLite lookup mirror.
DEFS_SQL = (
    "SELECT i.id, i.file, i.line, i.how, i.section, i.section_path, s.start_line, s.end_line "
    "FROM ids i LEFT JOIN sections s ON s.file = i.file AND s.idx = i.section WHERE i.kind = 'def'"
)
# An indexed file as the files table holds it: size, mtime_ns, content hash, tables with its rows.
Indexed = tuple[int, int, str, tuple[str, ...]]

FILE_COLUMNS: list[tuple[str, str]] = [
    ("path", "VARCHAR"),
    ("content_hash", "VARCHAR"),
    ("size", "BIGINT"),
    ("mtime_ns", "BIGINT"),
    ("indexed_at", "TIMESTAMP"),
    ("parser", "VARCHAR"),
    ("error", "VARCHAR"),
    # The tables holding rows of this file: a small refresh deletes from just those.
    ("tables", "VARCHAR[]"),
    # JSON of the front matter keys that move the page's route (udm.site.routes.route_meta), or NULL.
    ("site", "VARCHAR"),
]


@dataclass
class RefreshStats:
    """What one refresh did."""

    files: int = 0
    parsed: int = 0
    unchanged: int = 0
    removed: int = 0
    touched: int = 0
    sections: int = 0
    ids: int = 0
    tasks: int = 0
    errors: list[str] = field(default_factory=list)
    full: bool = False
    workers: int = 1
    seconds: float = 0.0
    stages: dict[str, float] = field(default_factory=dict)
    generation: int = 0
    # The files whose rows a small refresh replaced or removed, taking the index from generation - 1
    # to generation; None when unknown (a bulk or full refresh, or nothing was written).
    changed_files: list[str] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The stats as JSON-able data."""
        return asdict(self)

    def count(self, errors: list[str], counts: dict[str, int]) -> None:
        """Record a parse's errors and row counts."""
        self.errors = errors
        self.sections = counts.get("sections", 0)
        self.ids = counts.get("ids", 0)
        self.tasks = counts.get("tasks", 0)


def columns_sql(table: str) -> str:
    """A table's columns as read_json's `columns=` struct."""
    return "{" + ", ".join(f"'{name}': '{kind}'" for name, kind in TABLE_COLUMNS[table]) + "}"


def create_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create the meta table and every row table (each only if missing)."""
    con.execute("CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    for table, cols in {**TABLE_COLUMNS, "files": FILE_COLUMNS}.items():
        body = ", ".join(f"{name} {kind}" for name, kind in cols)
        con.execute(f"CREATE TABLE IF NOT EXISTS {table} ({body})")


def new_epoch(con: duckdb.DuckDBPyConnection) -> None:
    """Mark a new database: generations start again, so caches keyed by generation also need this token."""
    con.execute("INSERT OR REPLACE INTO meta VALUES ('epoch', ?)", [uuid.uuid4().hex])


def json_bytes(rows: list[dict[str, Any]]) -> bytes:
    """Rows as a UTF-8 JSON array: orjson (~30x json.dump); the json module for what it refuses."""
    try:
        return orjson.dumps(rows)
    except (orjson.JSONEncodeError, TypeError):
        # Integers past 64 bits from YAML, lone surrogates from escapes: the json module, ASCII-escaped.
        return json.dumps(rows).encode("ascii")


def _insert_from_json_sql(table: str, cols: list[tuple[str, str]]) -> str:
    # One JSON text parameter carries every row: binding values one by one costs DuckDB ~0.3 ms a row.
    shape = "{" + ", ".join(f'"{name}": "{kind}"' for name, kind in cols) + "}"
    names = ", ".join(name for name, _ in cols)
    return (
        f"INSERT INTO {table} SELECT {names} FROM "
        f"(SELECT unnest(from_json(?::JSON, '[{shape}]'), recursive := true))"
    )


# Per table: the INSERT that takes all its rows as one JSON array parameter.
INSERT_JSON = {table: _insert_from_json_sql(table, cols) for table, cols in TABLE_COLUMNS.items()} | {
    "files": _insert_from_json_sql("files", FILE_COLUMNS)
}
