"""A small refresh: a few files changed. They are parsed in this process, their rows loaded from
memory in one transaction (links resolved from the parsed rows first), and the side indexes patched:
the SQLite lookup mirror, and the search index on a thread meanwhile.
"""

from __future__ import annotations

import json
import time
from contextlib import suppress
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import duckdb

from udm.index.connections import Background
from udm.index.extract import TABLE_COLUMNS, ParseOptions, parse_options
from udm.index.lookup import write_lookup
from udm.index.parse import ParsedRows, in_process, parse_rows
from udm.index.resolve import FreshRows, resolve_index_links, routes_from
from udm.index.schema import DEFS_SQL, INSERT_JSON, RefreshStats, json_bytes
from udm.index.state import Plan

if TYPE_CHECKING:
    from udm.index.core import UdmIndex
    from udm.index.search import SearchIndex

__all__ = ["Prefetched", "prefetch", "refresh_small"]

# Files parsed ahead (their paths, then what parsing them gave).
Prefetched = tuple[list[str], ParsedRows]


def _parse_in_memory(root: str, relpaths: list[str], patterns: ParseOptions) -> ParsedRows:
    """Parse a few files in this process: file rows, errors, counts and every row by table."""
    return parse_rows(root, relpaths, patterns, ParsedRows())


def prefetch(index: UdmIndex, disk: dict[str, tuple[int, int]]) -> Prefetched | None:
    """Parse the files that differ from this process's last refresh, if they are few.

    A guess made before the index is read: `refresh_small` uses it only when the files it has
    to parse turn out to be exactly these.
    """
    cached = index.memo.files
    if cached is None:
        return None
    known = cached[1]
    guess = sorted(p for p, st in disk.items() if p not in known or known[p][:2] != st)
    if not guess or not in_process(sum(disk[p][0] for p in guess)):
        return None
    return guess, _parse_in_memory(str(index.root), guess, parse_options(index.settings))


def refresh_small(
    index: UdmIndex,
    con: duckdb.DuckDBPyConnection,
    plan: Plan,
    stats: RefreshStats,
    prefetched: Prefetched | None = None,
) -> RefreshStats:
    """A few files changed: parse here, load from memory, update tantivy on a thread meanwhile."""
    from udm.index.search import SearchIndex

    mark = time.perf_counter()
    index.memo.pending_routes = None
    patterns = parse_options(index.settings)
    if prefetched is not None and prefetched[0] == plan.to_parse:
        parsed = prefetched[1]  # parsed while the connection opened
    else:
        parsed = _parse_in_memory(str(index.root), plan.to_parse, patterns)
    stats.stages["parse"] = round(time.perf_counter() - mark, 4)
    mark = time.perf_counter()
    stats.count(parsed.errors, parsed.counts)
    gone = plan.gone
    # The generation `refresh_locked` read under the write lock, in this transaction's view.
    generation = int(index.memo.key[0] or 0) + 1
    search = SearchIndex(index.search_path, list(patterns.id_patterns))
    in_step = search.generation() == generation - 1
    # tantivy's commit (~25 ms, mostly fsync) overlaps DuckDB's statements on the other core.
    worker = (
        Background(search.update, full=False, removed=gone, rows=parsed.tables["sections"], generation=None)
        if in_step and gone
        else None
    )
    try:
        _load_small(index, con, plan, parsed, generation)
    except BaseException:
        index.memo.anchors = {}  # it already holds the changed files' new anchors
        if worker is not None:
            with suppress(BaseException):
                worker.result()
            search.set_generation(-1)  # it may hold rows DuckDB rolled back: rebuild on next use
        raise
    stats.stages["load"] = round(time.perf_counter() - mark, 4)
    mark = time.perf_counter()
    _patch_lookup(index, con, plan, parsed.tables, generation)
    stats.stages["lookup"] = round(time.perf_counter() - mark, 4)
    mark = time.perf_counter()
    _finish_search(index, search, worker, in_step, generation)
    stats.stages["search"] = round(time.perf_counter() - mark, 4)
    stats.generation = generation
    stats.changed_files = gone
    index.settle(plan.disk, generation)
    _remember(index, plan, parsed.files, generation)
    return stats


def _load_small(
    index: UdmIndex,
    con: duckdb.DuckDBPyConnection,
    plan: Plan,
    parsed: ParsedRows,
    generation: int,
) -> None:
    """Delete the rows of the changed files and insert the new ones, in one transaction."""
    gone, indexed = plan.gone, plan.indexed
    # Each DELETE costs DuckDB a millisecond or more even with nothing to delete: skip the tables
    # the files table says hold no rows of these files.
    holding = {t for p in gone if p in indexed for t in indexed[p][3]}
    # `= ?` is pushed into the scan; a list needs a join.
    where, param = ("= ?", gone[0]) if len(gone) == 1 else ("IN (SELECT unnest(?::VARCHAR[]))", gone)
    con.execute("BEGIN TRANSACTION")
    try:
        if gone:
            # Links are resolved here, from the parsed rows and a few point reads: the set-based
            # UPDATE the bulk path runs costs ~70 ms over a large index.
            _resolve_small_links(index, con, plan, parsed)
            for table in TABLE_COLUMNS:
                if table in holding:
                    con.execute(f"DELETE FROM {table} WHERE file {where}", [param])
            con.execute(f"DELETE FROM files WHERE path {where}", [param])
        _insert_rows(con, parsed.files, parsed.tables)
        for rel, size, mtime in plan.touched:
            con.execute("UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?", [size, mtime, rel])
        # schema_version and root are as the last refresh wrote them (an UPDATE is ~3x cheaper).
        con.execute(
            "UPDATE meta SET value = CASE key WHEN 'generation' THEN ? ELSE ? END "
            "WHERE key IN ('generation', 'refreshed_at')",
            [str(generation), datetime.now(UTC).isoformat()],
        )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def _insert_rows(
    con: duckdb.DuckDBPyConnection, file_rows: list[dict[str, Any]], tables: dict[str, list[dict[str, Any]]]
) -> None:
    """Insert parsed rows from memory, one JSON parameter per table."""
    # Planning a JSON insert costs more than running it, and its optimizer passes alone ~2 ms
    # each here: there is nothing in `INSERT ... SELECT unnest(from_json(?))` to optimize.
    con.execute("PRAGMA disable_optimizer")
    try:
        for table, rows in tables.items():
            if rows:
                con.execute(INSERT_JSON[table], [json_bytes(rows).decode("utf-8")])
        if file_rows:
            con.execute(INSERT_JSON["files"], [json_bytes(file_rows).decode("utf-8")])
    finally:
        con.execute("PRAGMA enable_optimizer")  # the connection serves this process's queries


def _resolve_small_links(
    index: UdmIndex, con: duckdb.DuckDBPyConnection, plan: Plan, parsed: ParsedRows
) -> None:
    """Resolve the new files' links, and re-resolve links of other files into the changed ones.

    The one resolution pass (udm.index.resolve) over the parsed rows in memory, against the route
    table with the changed pages swapped in: when that moved a route, every unresolved link as well.
    """
    memo = index.memo
    gone = plan.gone
    cached = memo.routes
    routes = cached[1] if cached is not None and cached[0] == memo.key else routes_from(con, index.site())
    memo.routes = None  # set again once this refresh commits
    added = {
        r["path"]: (json.loads(r["site"]) if r.get("site") else None)
        for r in parsed.files
        if r["parser"] != "none"
    }
    moved = routes.update([p for p in gone if p not in added], added)
    memo.pending_routes = routes
    anchors: dict[str, set[str]] = {p: set() for p in gone}
    for r in parsed.tables["sections"]:
        anchors[r["file"]].add(r["anchor"])
    resolve_index_links(
        con,
        routes,
        index.root,
        gone,
        moved=moved,
        fresh=FreshRows(parsed.tables["links"], anchors),
        anchor_cache=memo.anchors,
        page_bytes=int(index.settings.max_file_bytes),
    )


def _definitions_of(tables: dict[str, list[dict[str, Any]]]) -> list[tuple[Any, ...]]:
    """The lookup mirror's definition rows (ID joined with its section's line range), from parsed rows."""
    ranges = {(r["file"], r["idx"]): (r["start_line"], r["end_line"]) for r in tables["sections"]}
    out: list[tuple[Any, ...]] = []
    for r in tables["ids"]:
        if r["kind"] == "def":
            start, end = ranges.get((r["file"], r["section"]), (None, None))
            out.append((r["id"], r["file"], r["line"], r["how"], r["section"], r["section_path"], start, end))
    return out


def _patch_lookup(
    index: UdmIndex,
    con: duckdb.DuckDBPyConnection,
    plan: Plan,
    tables: dict[str, list[dict[str, Any]]],
    generation: int,
) -> None:
    """Patch the SQLite lookup mirror with the changed files' definitions (rewrite it if it fell behind)."""
    gone = plan.gone
    restat = [*plan.to_parse, *(rel for rel, _size, _mtime in plan.touched)]
    defs = _definitions_of(tables)
    if not write_lookup(
        index.state,
        index.root,
        full=False,
        changed=gone,
        disk=plan.disk,
        defs=defs,
        generation=generation,
        suffixes=index.suffixes,
        restat=restat,
    ):
        # The mirror missed a refresh (crash, older build): rewrite it from the tables.
        write_lookup(
            index.state,
            index.root,
            full=True,
            changed=gone,
            disk=plan.disk,
            defs=con.execute(DEFS_SQL).fetchall(),
            generation=generation,
            suffixes=index.suffixes,
        )


def _finish_search(
    index: UdmIndex, search: SearchIndex, worker: Background | None, in_step: bool, generation: int
) -> None:
    """Wait for the search index's update and mark its generation (rebuild it if it fell behind)."""
    if worker is not None:
        try:
            worker.result()
        except BaseException:
            search.set_generation(-1)
            raise
        search.set_generation(generation)
    elif in_step:
        search.set_generation(generation)  # only stats changed: the text is the same
    else:
        index.rebuild_search(generation, search)  # it missed a refresh (crash, older build)


def _remember(index: UdmIndex, plan: Plan, file_rows: list[dict[str, Any]], generation: int) -> None:
    """Keep the files table (and the route table) as this refresh left them, for the next one."""
    memo = index.memo
    gone = set(plan.gone)
    files_now = {p: st for p, st in plan.indexed.items() if p not in gone}
    files_now.update(
        (r["path"], (r["size"], r["mtime_ns"], r["content_hash"], tuple(r["tables"]))) for r in file_rows
    )
    files_now.update((rel, (size, mtime, *plan.indexed[rel][2:])) for rel, size, mtime in plan.touched)
    memo.files = ((str(generation), memo.key[1]), files_now)
    if memo.pending_routes is not None:
        memo.routes = (memo.files[0], memo.pending_routes)
        memo.pending_routes = None
