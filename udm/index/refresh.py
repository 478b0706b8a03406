"""Refreshing the index under the write lock: read its state, plan, then a small refresh or a bulk load.

A bulk load (`refresh_bulk`: the full build, or many changed files) parses into row files under a
temporary folder (in worker processes once there is enough text, `udm.index.parse.parse_all`), loads
them with DuckDB's JSON reader in one transaction, resolves links, then updates the lookup mirror
and the search index (built on a thread as the parse goes, on a full build).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import duckdb

from udm.errors import ConfigError
from udm.index.extract import TABLE_COLUMNS, parse_options
from udm.index.lookup import write_lookup
from udm.index.parse import chunk_sections, in_process, parse_all
from udm.index.resolve import resolve_index_links, routes_from
from udm.index.schema import (
    DEFS_SQL,
    FILE_COLUMNS,
    SCHEMA_VERSION,
    Indexed,
    RefreshStats,
    columns_sql,
    create_tables,
    new_epoch,
)
from udm.index.small_refresh import prefetch, refresh_small
from udm.index.state import Plan, plan_refresh
from udm.index.watch import scan_root

if TYPE_CHECKING:
    from udm.index.core import UdmIndex
    from udm.index.search import SearchBuilder

__all__ = ["refresh_bulk", "refresh_locked"]


def refresh_locked(index: UdmIndex, full: bool, disk: dict[str, tuple[int, int]] | None) -> RefreshStats:
    """One refresh, with the write lock and the index's mutex held."""
    if not index.root.is_dir():
        raise ConfigError(f"UDM root {index.root} is not a directory (set UDM_ROOT or --root)")
    disk = scan_root(index.root, index.exclude(), index.suffixes) if disk is None else disk
    stats = RefreshStats(full=full, files=len(disk))
    conns = index.conns
    stack = ExitStack()
    # A full build takes its own connection (checkpointed when closed); small refreshes reuse the
    # process's shared read-write connection, or open it on a thread while the files parse here.
    opening = None if full else conns.start_writer_open()
    prefetched = None
    if opening is not None:
        try:
            prefetched = prefetch(index, disk)
        except BaseException:
            conns.abandon_open(opening)
            raise
    con = stack.enter_context(conns.writer() if full else conns.shared_writer(opening))
    try:
        stored, full = _prepare_tables(index, con, full)
        indexed = {} if full else _indexed_files(index, con, stored)
        plan = plan_refresh(index.root, disk, indexed)
        plan.count_into(stats)
        if not full and not plan.removed and not plan.to_parse and not plan.touched:
            row = con.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
            stats.generation = int(row[0]) if row else 0
            index.settle(disk, stats.generation)
            return stats
        if not full and indexed and in_process(plan.parse_bytes()):
            return refresh_small(index, con, plan, stats, prefetched)
        return refresh_bulk(index, con, stack, full, plan, stats)
    finally:
        stack.close()


def _prepare_tables(
    index: UdmIndex, con: duckdb.DuckDBPyConnection, full: bool
) -> tuple[dict[str, str], bool]:
    """The meta values both paths need, with the tables made (or remade for a new schema); whether
    the refresh has to be full (a new schema, or other site conventions)."""
    # One query for what both paths need (every DuckDB statement costs this machine ~0.5 ms+).
    stored: dict[str, str] = {}
    try:
        stored = dict(
            con.execute(
                "SELECT key, value FROM meta WHERE key IN ('schema_version', 'generation', 'epoch', 'site')"
            ).fetchall()
        )
    except duckdb.CatalogException:
        create_tables(con)
        new_epoch(con)
    version = stored.get("schema_version")
    if version is not None and int(version) != SCHEMA_VERSION:
        for table in [*TABLE_COLUMNS, "files", "meta"]:
            con.execute(f"DROP TABLE IF EXISTS {table}")
        create_tables(con)
        new_epoch(con)
        full = True
    elif version is not None and stored.get("site") != index.site().fingerprint():
        # The site's conventions changed (its config, or the settings): every link resolves anew.
        full = True
    return stored, full


def _indexed_files(
    index: UdmIndex, con: duckdb.DuckDBPyConnection, stored: dict[str, str]
) -> dict[str, Indexed]:
    """The files table: from this process's memo while nobody has written since, else read."""
    memo = index.memo
    memo.key = (stored.get("generation"), stored.get("epoch"))
    cached = memo.files
    if cached is not None and memo.key[0] is not None and memo.key == cached[0]:
        # The index as this process's last refresh left it (nobody has written since; the
        # epoch tells a rebuilt database whose generations started again).
        return dict(cached[1])
    memo.anchors = {}
    indexed: dict[str, Indexed] = {}
    for path, size, mtime, digest, holds in con.execute(
        "SELECT path, size, mtime_ns, content_hash, tables FROM files"
    ).fetchall():
        indexed[path] = (
            int(size),
            int(mtime),
            digest,
            (tuple(TABLE_COLUMNS) if holds is None else tuple(holds)),
        )
    if memo.key[0] is not None:
        memo.files = (memo.key, dict(indexed))
    return indexed


def refresh_bulk(
    index: UdmIndex,
    con: duckdb.DuckDBPyConnection,
    stack: ExitStack,
    full: bool,
    plan: Plan,
    stats: RefreshStats,
) -> RefreshStats:
    """The full build, or a load of many changed files: parse into row files, then load them in bulk.

    `stack` holds `con`; it is closed during a long parse so readers get in, and a new writer is
    opened for the load step.
    """
    index.memo.files = None  # re-read after a bulk load
    index.memo.anchors = {}
    rebuild = full or not plan.indexed
    tmp = tempfile.mkdtemp(prefix="udm-index-", dir=index.state)
    stream: SearchBuilder | None = None
    try:
        writer: duckdb.DuckDBPyConnection | None = con
        if full or not in_process(plan.parse_bytes()):
            # A long parse: let readers in meanwhile, and reconnect for the short load step.
            stack.close()
            writer = None
        mark = time.perf_counter()
        if rebuild:
            # The search index is rebuilt on a thread, fed each chunk's sections as its worker
            # finishes: tantivy's indexing overlaps the rest of the parse and DuckDB's load.
            from udm.index.search import SearchBuilder, SearchIndex

            stream = SearchBuilder(SearchIndex(index.search_path, list(index.settings.id_patterns)))
        file_rows, errors, counts, stats.workers = parse_all(
            str(index.root),
            parse_options(index.settings),
            plan.to_parse,
            plan.disk,
            tmp,
            None if stream is None else _feeder(stream, tmp),
        )
        if stream is not None:
            stream.end_input()  # every chunk is fed: tantivy commits while DuckDB loads
        stats.stages["parse"] = round(time.perf_counter() - mark, 3)
        mark = time.perf_counter()
        stats.count(errors, counts)
        con = writer if writer is not None else stack.enter_context(index.conns.writer())
        generation = _load_bulk(index, con, tmp, full, plan, file_rows, own=writer is None)
        where = "" if rebuild else " AND i.file IN (SELECT unnest(?::VARCHAR[]))"
        defs = con.execute(DEFS_SQL + where, [] if rebuild else [plan.gone]).fetchall()
        stack.close()  # release the write connection before the side indexes
        stats.stages["load"] = round(time.perf_counter() - mark, 3)
        _update_side_indexes(index, plan, rebuild, defs, stream, tmp, generation, stats)
    finally:
        if stream is not None:
            stream.close()  # a failure elsewhere: stop the thread before its files go
        shutil.rmtree(tmp, ignore_errors=True)
    stats.generation = generation
    index.settle(plan.disk, generation)
    return stats


def _update_side_indexes(
    index: UdmIndex,
    plan: Plan,
    rebuild: bool,
    defs: list[tuple[Any, ...]],
    stream: SearchBuilder | None,
    tmp: str,
    generation: int,
    stats: RefreshStats,
) -> None:
    """After a bulk load: the SQLite lookup mirror, then the search index (the builder's, or updated)."""
    mark = time.perf_counter()
    write_lookup(
        index.state,
        index.root,
        full=rebuild,
        changed=plan.gone,
        disk=plan.disk,
        defs=defs,
        generation=generation,
        suffixes=index.suffixes,
    )
    stats.stages["lookup"] = round(time.perf_counter() - mark, 3)
    mark = time.perf_counter()
    if stream is not None:
        stream.finish()  # waits for the last documents and the commit; raises what failed there
        stream.index.set_generation(generation)
    else:
        _update_search(index, rebuild, plan.gone, tmp, generation)
    stats.stages["search"] = round(time.perf_counter() - mark, 3)


def _feeder(stream: SearchBuilder, tmp: str) -> Callable[[int], None]:
    """`on_chunk` for `parse_all`: feed a finished chunk's sections to the search builder."""

    def on_chunk(k: int) -> None:
        stream.feed(chunk_sections(tmp, k))

    return on_chunk


def _load_bulk(
    index: UdmIndex,
    con: duckdb.DuckDBPyConnection,
    tmp: str,
    full: bool,
    plan: Plan,
    file_rows: list[dict[str, Any]],
    *,
    own: bool = False,
) -> int:
    """Replace the changed files' rows with the row files under `tmp` and resolve links, in one
    transaction; the new generation. `own`: `con` is this load's own connection (its own DuckDB
    instance, closed after it), not the process's shared one."""
    rebuild = full or not plan.indexed
    gone = plan.gone
    if not rebuild:
        # A small change stays in the WAL (readers replay it) instead of a checkpoint that
        # rewrites whole row groups of section text; DuckDB checkpoints once the WAL is large.
        con.execute("PRAGMA disable_checkpoint_on_shutdown")
        con.execute("SET checkpoint_threshold = '64MB'")
    elif own:
        # DuckDB's own choice per column analyses every compression (FSST for the text) as it writes:
        # ZSTD alone writes the section text 2.5x faster into a 17% smaller file. The setting is
        # global to a DuckDB instance, so only a connection of its own, closed after the load, takes
        # it: the process's shared instance keeps DuckDB's choice for later refreshes.
        con.execute("SET force_compression = 'zstd'")
    con.execute("BEGIN TRANSACTION")
    try:
        if full:
            for table in [*TABLE_COLUMNS, "files"]:
                con.execute(f"DELETE FROM {table}")
        elif gone:
            con.execute("CREATE TEMP TABLE gone (path VARCHAR)")
            _load_list(con, "gone", [{"path": p} for p in gone], tmp, {"path": "VARCHAR"})
            for table in TABLE_COLUMNS:
                con.execute(f"DELETE FROM {table} WHERE file IN (SELECT path FROM gone)")
            con.execute("DELETE FROM files WHERE path IN (SELECT path FROM gone)")
        _read_row_files(con, tmp)
        _load_list(con, "files", file_rows, tmp, dict(FILE_COLUMNS))
        for rel, size, mtime in plan.touched:
            con.execute("UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?", [size, mtime, rel])
        index.memo.routes = None
        resolve_index_links(
            con,
            routes_from(con, index.site()),
            index.root,
            None if rebuild else gone,
            page_bytes=int(index.settings.max_file_bytes),
        )
        gen_row = con.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        generation = (int(gen_row[0]) if gen_row else 0) + 1
        con.execute(
            "INSERT OR REPLACE INTO meta VALUES ('generation', ?), ('schema_version', ?), "
            "('root', ?), ('refreshed_at', ?), ('site', ?)",
            [
                str(generation),
                str(SCHEMA_VERSION),
                str(index.root),
                datetime.now(UTC).isoformat(),
                index.site().fingerprint(),
            ],
        )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return generation


def _read_row_files(con: duckdb.DuckDBPyConnection, tmp: str) -> None:
    """Insert every table's row files (JSON arrays) the parse wrote under `tmp`."""
    names = os.listdir(tmp)
    for table in TABLE_COLUMNS:
        if any(n.startswith(f"{table}.") and n.endswith(".json") for n in names):
            cols = ", ".join(name for name, _ in TABLE_COLUMNS[table])
            con.execute(
                f"INSERT INTO {table} SELECT {cols} FROM read_json(?, format='array', "
                f"columns={columns_sql(table)}, maximum_object_size=1073741824)",
                [os.path.join(tmp, f"{table}.*.json")],
            )


def _load_list(
    con: duckdb.DuckDBPyConnection, table: str, rows: list[dict[str, Any]], tmp: str, cols: dict[str, str]
) -> None:
    """Insert rows through a newline-delimited JSON file."""
    if not rows:
        return
    path = os.path.join(tmp, f"_list.{table}.jsonl")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n")
    spec = "{" + ", ".join(f"'{k}': '{v}'" for k, v in cols.items()) + "}"
    names = ", ".join(cols)
    con.execute(
        f"INSERT INTO {table} SELECT {names} FROM read_json(?, format='newline_delimited', columns={spec})",
        [path],
    )


def _update_search(index: UdmIndex, full: bool, gone: list[str], tmp: str, generation: int) -> None:
    """Update the search index from the sections row files (rebuild it if it missed a refresh)."""
    from udm.index.search import SearchIndex

    search = SearchIndex(index.search_path, list(index.settings.id_patterns))
    if not full and search.generation() != generation - 1:
        # The search index missed a refresh (crash, older build): rebuild it from the tables.
        index.rebuild_search(generation, search)
        return
    search.update(
        full=full,
        removed=gone,
        sections_glob=os.path.join(tmp, "sections.*.json"),
        generation=generation,
    )
