"""The DuckDB index of the UDM: schema, incremental refresh by content hash, never-stale checks.

The index is a cache, never the truth. `UdmIndex.ensure_fresh()` compares the size and mtime of
every file under the UDM root with the `files` table and re-indexes what changed; inside one
process an inotify watch (Linux) makes that check a single non-blocking read while nothing moves.

DuckDB locks its file per process, so writers keep their read-write connection only for the short
load step of a large refresh; the process's shared connection (read-only, or read-write after a
small refresh) is let go when idle for `IDLE_RELEASE_S` or as soon as another process raises the
waiting flag (a failed open does), and every open is retried until `settings.index_busy_timeout_s`,
after which `IndexBusyError` says the index is busy. Writers are serialised across processes by a
file lock next to the database.
"""

from __future__ import annotations

import atexit
import ctypes
import gc
import hashlib
import json
import os
import shutil
import stat
import struct
import tempfile
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import orjson
from filelock import FileLock, Timeout

from udm.config import Settings, ensure_folder
from udm.errors import ConfigError, IndexBusyError
from udm.index.extract import TABLE_COLUMNS, ParseOptions, document_rows, parse_options
from udm.index.lookup import MARKDOWN_SUFFIXES, scan_markdown, write_lookup
from udm.markdown import parse_document
from udm.site import LinkResolver, Routes, resolve_links, route_meta, settings_site

__all__ = ["IDLE_RELEASE_S", "RELEASE_POLL_S", "SCHEMA_VERSION", "RefreshStats", "UdmIndex", "scan_root"]

SCHEMA_VERSION = (
    9  # 7: links.form (how a link is written); 8: files.site (route front matter); 9: blocks.role
)
# ID definitions with their section's line range: the rows of the SQLite lookup mirror.
_DEFS_SQL = (
    "SELECT i.id, i.file, i.line, i.how, i.section, i.section_path, s.start_line, s.end_line "
    "FROM ids i LEFT JOIN sections s ON s.file = i.file AND s.idx = i.section WHERE i.kind = 'def'"
)
# An idle shared connection is kept this long (reopening costs DuckDB ~25 ms plus cold caches) ...
IDLE_RELEASE_S = 30.0
# ... unless another process waits for the index: idle holders look for its flag this often.
RELEASE_POLL_S = 0.1
# Below this much text, forking workers costs more than it saves.
PARALLEL_MIN_BYTES = 2_000_000
# An indexed file as the files table holds it: size, mtime_ns, content hash, tables with its rows.
Indexed = tuple[int, int, str, tuple[str, ...]]
# The name the shared connection attaches the index file under (its tables are then unqualified).
_ATTACHED = "udm_index"
# Every connection: no progress bar, and no scanning a Python variable named like a missing table.
_SESSION_SQL = "SET enable_progress_bar = false; SET python_enable_replacements = false"
# Files parsed ahead (paths, then `_parse_in_memory`'s file rows, errors, counts and rows by table).
_Prefetched = tuple[
    list[str], tuple[list[dict[str, Any]], list[str], dict[str, int], dict[str, list[dict[str, Any]]]]
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


def scan_root(
    root: Path, exclude: list[Path] | None = None, suffixes: tuple[str, ...] = MARKDOWN_SUFFIXES
) -> dict[str, tuple[int, int]]:
    """Every Markdown file under `root` (relative posix path -> (size, mtime_ns)), hidden dirs skipped."""
    return scan_markdown(root, exclude or [], suffixes=suffixes)


# struct inotify_event (wd, mask, cookie, len) then `len` bytes of NUL-padded name.
_EVENT = struct.Struct("iIII")
# Overflow, watch removed, an event about a directory, the watched directory deleted or moved.
_RESCAN = 0x4000 | 0x8000 | 0x40000000 | 0x400 | 0x800
# The watched directory itself was deleted or moved, or its watch removed.
_GONE = 0x400 | 0x800 | 0x8000


class _Inotify:
    """A non-blocking inotify watch over directories: `changed()` is one read() while nothing moves."""

    _MASK = 0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800

    def __init__(self) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        self._watched: set[str] = set()
        self._paths: dict[int, str] = {}

    def watch_tree(self, root: Path, exclude: list[Path]) -> None:
        """Watch `root` and every (non-hidden) directory below it."""
        skip = {str(p) for p in exclude}
        for current, dirs, _files in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".") and os.path.join(current, d) not in skip]
            if current not in self._watched:
                self._add(current)

    def watch_new(self, dirs: list[str]) -> bool:
        """Watch those of `dirs` not watched yet; whether there were any."""
        added = False
        for current in dirs:
            if current not in self._watched and self._add(current):
                added = True
        return added

    def _add(self, directory: str) -> bool:
        """Watch one directory (remembering its path by watch descriptor); whether it worked."""
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(directory), self._MASK)
        if wd < 0:
            return False
        old = self._paths.get(wd)
        if old is not None and old != directory:
            self._watched.discard(old)  # the same directory under a new name (its parent was moved)
        self._watched.add(directory)
        self._paths[wd] = directory
        return True

    def changed(self) -> bool:
        """Whether any event arrived since the last call (drains the queue)."""
        return self.changes() is not None

    def changes(self) -> tuple[bool, set[str]] | None:
        """Events since the last call (drains the queue): None when there were none.

        Otherwise whether a full rescan is needed (an event about a directory, a dropped watch, an
        overflow) and the paths of the files the events named.
        """
        seen = rescan = False
        paths: set[str] = set()
        while True:
            try:
                buf = os.read(self.fd, 65536)
            except BlockingIOError:
                break
            if not buf:
                break
            seen = True
            off = 0
            while off + _EVENT.size <= len(buf):
                wd, mask, _cookie, length = _EVENT.unpack_from(buf, off)
                name = buf[off + _EVENT.size : off + _EVENT.size + length].split(b"\0", 1)[0]
                off += _EVENT.size + length
                base = self._paths.get(wd)
                if mask & _GONE and base is not None:
                    # Deleted or moved away: a directory made later under that name needs a new watch.
                    self._watched.discard(base)
                    if mask & 0x8000:
                        del self._paths[wd]
                if mask & _RESCAN or not name or base is None:
                    rescan = True
                else:
                    paths.add(os.path.join(base, os.fsdecode(name)))
        return (rescan, paths) if seen else None

    def close(self) -> None:
        """Stop watching."""
        with suppress(OSError):
            os.close(self.fd)


def _make_watcher() -> _Inotify | None:
    try:
        return _Inotify()
    except (OSError, AttributeError):
        return None


def _columns_sql(table: str) -> str:
    return "{" + ", ".join(f"'{name}': '{kind}'" for name, kind in TABLE_COLUMNS[table]) + "}"


def _ddl() -> list[str]:
    stmts = [
        "CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
    ]
    for table, cols in {**TABLE_COLUMNS, "files": FILE_COLUMNS}.items():
        body = ", ".join(f"{name} {kind}" for name, kind in cols)
        stmts.append(f"CREATE TABLE IF NOT EXISTS {table} ({body})")
    return stmts


def _parse_chunk(
    root: str, relpaths: list[str], patterns: ParseOptions, outdir: str, chunk: int
) -> tuple[list[dict[str, Any]], list[str], dict[str, int]]:
    """Parse files and write their rows as NDJSON files; return file rows, errors and counts."""
    files: list[dict[str, Any]] = []
    errors: list[str] = []
    counts = dict.fromkeys(TABLE_COLUMNS, 0)
    now = datetime.now(UTC).replace(tzinfo=None).isoformat()

    def exists(rel: str) -> bool:
        return os.path.exists(os.path.join(root, rel))

    buffers: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLE_COLUMNS}
    parts = dict.fromkeys(TABLE_COLUMNS, 0)
    # Parsing allocates many small acyclic objects: the cyclic collector only costs time here (~15%).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        _parse_into(
            root, relpaths, patterns, now, exists, files, errors, counts, buffers, parts, outdir, chunk
        )
    finally:
        if was_enabled:
            gc.enable()
    return files, errors, counts


def _parse_into(
    root: str,
    relpaths: list[str],
    patterns: ParseOptions,
    now: str,
    exists: Any,
    files: list[dict[str, Any]],
    errors: list[str],
    counts: dict[str, int],
    buffers: dict[str, list[dict[str, Any]]],
    parts: dict[str, int],
    outdir: str | None,
    chunk: int,
) -> None:
    """Parse each file and buffer its rows per table, flushing large buffers as JSON arrays.

    Without `outdir` every row stays in `buffers` (a small refresh loads them straight from memory).
    """

    def flush(table: str) -> None:
        # One dump of a whole array costs far less than a dumps() per row.
        rows = buffers[table]
        if rows and outdir is not None:
            name = os.path.join(outdir, f"{table}.{chunk}.{parts[table]}.json")
            with open(name, "wb") as fh:
                fh.write(_json_bytes(rows))
            parts[table] += 1
            buffers[table] = []

    for rel in relpaths:
        full = os.path.join(root, rel)
        try:
            st = os.stat(full)
            if st.st_size > patterns.max_file_bytes:
                # Parsing holds a tree of the whole file: past the limit the file is listed, not parsed.
                msg = f"{rel}:1: skipped: too large ({st.st_size} bytes > max_file_bytes {patterns.max_file_bytes})"
                errors.append(msg)
                files.append(_file_row(rel, "", st, now, "none", msg, []))
                continue
            raw = Path(full).read_bytes()
        except OSError as exc:
            errors.append(f"{rel}:1: cannot read: {exc.strerror or exc}")
            continue
        digest = hashlib.sha256(raw).hexdigest()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            msg = f"{rel}:{line}: not valid UTF-8 (byte {exc.start})"
            errors.append(msg)
            files.append(_file_row(rel, digest, st, now, "none", msg, []))
            continue
        doc = parse_document(text, rel, patterns.id_patterns, data_sections=patterns.data_sections)
        errors.extend(doc.errors)
        rows_by_table = document_rows(doc, exists=exists)
        holds = [table for table, rows in rows_by_table.items() if rows]
        files.append(_file_row(rel, digest, st, now, doc.parser, "; ".join(doc.errors[:3]) or None, holds))
        # The front matter keys that move the page's route (Docusaurus slug/id, Hugo url/aliases).
        meta = route_meta(doc.front_matter)
        if meta:
            files[-1]["site"] = json.dumps(meta, ensure_ascii=False)
        for table, rows in rows_by_table.items():
            if rows:
                counts[table] += len(rows)
                buffers[table].extend(rows)
                if len(buffers[table]) >= 50_000:
                    flush(table)
    for table in TABLE_COLUMNS:
        flush(table)


def _json_bytes(rows: list[dict[str, Any]]) -> bytes:
    """Rows as a UTF-8 JSON array: orjson (~30x json.dump); the json module for what it refuses."""
    try:
        return orjson.dumps(rows)
    except (orjson.JSONEncodeError, TypeError):
        # Integers past 64 bits from YAML, lone surrogates from escapes: the json module, ASCII-escaped.
        return json.dumps(rows).encode("ascii")


def _parse_in_memory(
    root: str, relpaths: list[str], patterns: ParseOptions
) -> tuple[list[dict[str, Any]], list[str], dict[str, int], dict[str, list[dict[str, Any]]]]:
    """Parse a few files in this process: file rows, errors, counts and every row by table."""
    files: list[dict[str, Any]] = []
    errors: list[str] = []
    counts = dict.fromkeys(TABLE_COLUMNS, 0)
    buffers: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLE_COLUMNS}
    now = datetime.now(UTC).replace(tzinfo=None).isoformat()

    def exists(rel: str) -> bool:
        return os.path.exists(os.path.join(root, rel))

    _parse_into(root, relpaths, patterns, now, exists, files, errors, counts, buffers, {}, None, 0)
    return files, errors, counts, buffers


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


def _insert_from_json_sql(table: str, cols: list[tuple[str, str]]) -> str:
    # One JSON text parameter carries every row: binding values one by one costs DuckDB ~0.3 ms a row.
    shape = "{" + ", ".join(f'"{name}": "{kind}"' for name, kind in cols) + "}"
    names = ", ".join(name for name, _ in cols)
    return (
        f"INSERT INTO {table} SELECT {names} FROM "
        f"(SELECT unnest(from_json(?::JSON, '[{shape}]'), recursive := true))"
    )


_INSERT_JSON = {table: _insert_from_json_sql(table, cols) for table, cols in TABLE_COLUMNS.items()} | {
    "files": _insert_from_json_sql("files", FILE_COLUMNS)
}


class _Background(threading.Thread):
    """Run one call on a thread (tantivy and DuckDB release the GIL); `result()` returns or re-raises."""

    def __init__(self, fn: Any, **kwargs: Any) -> None:
        super().__init__(daemon=True)
        self._fn = fn
        self._kwargs = kwargs
        self._value: Any = None
        self._error: BaseException | None = None
        self.start()

    def run(self) -> None:
        """Call the function, keeping its value or exception for `result()`."""
        try:
            self._value = self._fn(**self._kwargs)
        except BaseException as exc:  # re-raised in the caller's thread
            self._error = exc

    def result(self) -> Any:
        """Wait for the call; return its value or raise what it raised."""
        self.join()
        if self._error is not None:
            raise self._error
        return self._value


def _definitions_of(tables: dict[str, list[dict[str, Any]]]) -> list[tuple[Any, ...]]:
    """The lookup mirror's definition rows (ID joined with its section's line range), from parsed rows."""
    ranges = {(r["file"], r["idx"]): (r["start_line"], r["end_line"]) for r in tables["sections"]}
    out: list[tuple[Any, ...]] = []
    for r in tables["ids"]:
        if r["kind"] == "def":
            start, end = ranges.get((r["file"], r["section"]), (None, None))
            out.append((r["id"], r["file"], r["line"], r["how"], r["section"], r["section_path"], start, end))
    return out


def _new_epoch(con: duckdb.DuckDBPyConnection) -> None:
    # A new database: generations start again, so caches keyed by generation also need this token.
    con.execute("INSERT OR REPLACE INTO meta VALUES ('epoch', ?)", [uuid.uuid4().hex])


def _chunk_sections(tmp: str, chunk: int) -> list[str]:
    """The sections row files one parse chunk wrote, in write order."""
    prefix = f"sections.{chunk}."
    names = [n for n in os.listdir(tmp) if n.startswith(prefix) and n.endswith(".json")]
    return [os.path.join(tmp, n) for n in sorted(names, key=lambda n: int(n[len(prefix) : -5]))]


def _file_row(
    rel: str, digest: str, st: os.stat_result, now: str, parser: str, error: str | None, tables: list[str]
) -> dict[str, Any]:
    return {
        "path": rel,
        "content_hash": digest,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "indexed_at": now,
        "parser": parser,
        "error": error,
        "tables": tables,
        "site": None,
    }


class _NeedFlag(Exception):
    """Internal: the first write attempt met a lock; raise the writer-waiting flag and retry."""


def _is_lock_error(exc: BaseException) -> bool:
    text = str(exc)
    # "Unique file handle conflict": another index object of this process has the file attached;
    # it lets go when idle and it sees the waiting flag, as another process would.
    return (
        "lock" in text.lower()
        or "different configuration" in text
        or isinstance(exc, duckdb.ResourceInUseException)
    )


_LIVE: weakref.WeakSet[UdmIndex] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    # Close shared connections before interpreter teardown (DuckDB's bindings complain otherwise).
    for index in list(_LIVE):
        index.close()


class UdmIndex:
    """The index of one UDM root: refresh it, check it is fresh, and open connections to it."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.suffixes = tuple(settings.markdown_suffixes)
        self.root = settings.udm_root
        self.state = settings.state_path
        self.db_path = self.state / "index.duckdb"
        self.search_path = self.state / "search"
        self._write_lock_path = self.state / "index.write.lock"
        self._writer_flag = self.state / "index.writer-waiting"
        self._mutex = threading.RLock()
        # The connection shared by this process's readers: read-only, or the read-write one the last
        # small refresh used (kept so the next refresh skips DuckDB's ~25 ms open).
        self._ro: duckdb.DuckDBPyConnection | None = None
        self._ro_writable = False
        # The shared connection is the engine with the file attached, or (for untrusted SQL) a
        # read-only connection of its own that cannot reach other files.
        self._ro_strict = False
        self._engine: duckdb.DuckDBPyConnection | None = None
        self._ro_users = 0
        self._release_timer: threading.Timer | None = None
        self._idle_since = 0.0
        self._watcher: _Inotify | None = None
        self._known: dict[str, tuple[int, int]] | None = None
        # ((generation, epoch), the files table then) after this process's refreshes: spares
        # re-reading it while the index is still there.
        self._files_cache: tuple[tuple[str | None, str | None], dict[str, Indexed]] | None = None
        self._cache_key: tuple[str | None, str | None] = (None, None)
        # Section anchors by file, valid at `_files_cache`'s generation (small refreshes resolve links).
        self._anchor_cache: dict[str, set[str]] = {}
        # The route table (udm.site.routes) at `_files_cache`'s key; the one a small refresh is committing.
        self._route_cache: tuple[Any, Routes] | None = None
        self._pending_routes: Routes | None = None
        self.generation = -1
        self.last_refresh: RefreshStats | None = None
        _LIVE.add(self)

    # ----- connections -------------------------------------------------------------------------

    def _exclude(self) -> list[Path]:
        return [self.state]

    def _open(self, read_only: bool, *, attach: bool = False) -> duckdb.DuckDBPyConnection:
        """A connection of its own (read-only: cannot reach other files), or the engine with it attached."""
        flagged = False
        try:
            return self._open_retrying(read_only, attach, lambda: None)
        except _NeedFlag:
            flagged = True
            # Tell other processes to let go of their idle connections (a reader as well: another
            # process may keep a read-write connection between its refreshes).
            with suppress(OSError):
                self._writer_flag.touch()
            return self._open_retrying(read_only, attach, None)
        finally:
            if flagged:
                with suppress(OSError):
                    self._writer_flag.unlink()

    def _engine_connection(self) -> duckdb.DuckDBPyConnection:
        """The in-memory DuckDB instance the shared connection attaches the index file to.

        Creating an instance costs DuckDB ~20 ms here (even in memory); attaching a file to a live
        one ~2 ms. So the process keeps its instance and only attaches and detaches the file, which
        takes and releases the file lock as opening and closing would.
        """
        if self._engine is None:
            engine = duckdb.connect(":memory:")
            try:
                engine.execute(_SESSION_SQL)
                # Small changes stay in the WAL (readers replay it) instead of a checkpoint per
                # refresh; `_drop_ro` checkpoints when the file is let go, DuckDB once the WAL is large.
                engine.execute("PRAGMA disable_checkpoint_on_shutdown; SET checkpoint_threshold = '16MB'")
            except BaseException:
                engine.close()
                raise
            self._engine = engine
        return self._engine

    def _open_retrying(self, read_only: bool, attach: bool, first_failure: Any) -> duckdb.DuckDBPyConnection:
        deadline = time.monotonic() + self.settings.index_busy_timeout_s
        delay = 0.01
        while True:
            try:
                if attach:
                    con = self._engine_connection()
                    path = str(self.db_path).replace("'", "''")  # ATTACH takes no parameters
                    mode = " (READ_ONLY)" if read_only else ""
                    con.execute(f"ATTACH '{path}' AS {_ATTACHED}{mode}; USE {_ATTACHED}")
                    return con
                con = duckdb.connect(str(self.db_path), read_only=read_only)
                con.execute(_SESSION_SQL)
                if read_only:
                    # Readers never touch other files: read-only SQL cannot read_text('/etc/...').
                    con.execute("SET enable_external_access = false")
                return con
            except (duckdb.IOException, duckdb.ConnectionException, duckdb.ResourceInUseException) as exc:
                if first_failure is not None and _is_lock_error(exc):
                    raise _NeedFlag from exc
                if not _is_lock_error(exc) or time.monotonic() >= deadline:
                    if _is_lock_error(exc):
                        raise IndexBusyError(
                            f"index busy: {self.db_path} stayed locked by another process for "
                            f"{self.settings.index_busy_timeout_s:g} s"
                        ) from exc
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.2)

    def _drop_ro(self) -> None:
        if self._release_timer is not None:
            self._release_timer.cancel()
            self._release_timer = None
        if self._ro is not None:
            try:
                if self._ro_writable:
                    # Fold the small refreshes' WAL in as the writer lets go (off the refresh's path),
                    # so other processes open the index without replaying it (~10 ms per MB).
                    with suppress(duckdb.Error):
                        self._ro.execute("CHECKPOINT")
                if self._ro_strict:
                    self._ro.close()
                else:
                    self._detach()
            finally:
                self._ro = None
                self._ro_writable = False
                self._ro_strict = False

    def _detach(self) -> None:
        engine = self._engine
        if engine is None:
            return
        try:
            engine.execute(f"USE memory; DETACH {_ATTACHED}")
        except duckdb.Error:
            # Whatever went wrong, closing the instance releases the file: start a new one next time.
            self._engine = None
            with suppress(duckdb.Error):
                engine.close()

    def _someone_waits(self) -> bool:
        """Whether another process raised the waiting flag lately (a crashed waiter's flag goes stale)."""
        try:
            age = time.time() - self._writer_flag.stat().st_mtime
        except OSError:
            return False
        return age < max(60.0, 2 * self.settings.index_busy_timeout_s)

    def _arm_release(self) -> None:
        timer = threading.Timer(RELEASE_POLL_S, self._release_if_idle)
        timer.daemon = True
        self._release_timer = timer
        timer.start()

    def _release_if_idle(self) -> None:
        # An idle holder keeps its warm connection until another process raises the waiting flag
        # (checked every RELEASE_POLL_S) or IDLE_RELEASE_S pass.
        with self._mutex:
            if self._ro_users or self._ro is None or self._release_timer is not threading.current_thread():
                return
            if self._someone_waits() or time.monotonic() - self._idle_since >= IDLE_RELEASE_S:
                self._drop_ro()
            else:
                self._arm_release()

    @contextmanager
    def connect(self, read_only: bool = True, *, strict: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection: reading ones are shared in the process and closed after idling.

        The shared one may be the read-write connection of the last small refresh (for this package's
        own queries); `strict` asks for a genuinely read-only connection that cannot read other files,
        as untrusted SQL needs.
        """
        if not read_only:
            with self._mutex:
                self._drop_ro()
                con = self._open(read_only=False)
                try:
                    yield con
                finally:
                    con.close()
            return
        if not self.db_path.exists():
            self.refresh()
        with self._mutex:
            if self._ro is not None and self._ro_users == 0 and self._someone_waits():
                self._drop_ro()  # another process is waiting: step aside, reopen after it
            if strict and self._ro is not None and not self._ro_strict:
                if self._ro_users:
                    if self._ro_writable:
                        raise IndexBusyError("index busy: this process is using its read-write connection")
                    # Another thread reads through the engine: a restricted connection just for this.
                    private = self._open(read_only=True)
                    try:
                        yield private
                    finally:
                        private.close()
                    return
                self._drop_ro()
            if self._ro is None:
                self._ro = self._open(read_only=True, attach=not strict)
                self._ro_strict = strict
            if self._release_timer is not None:
                self._release_timer.cancel()
                self._release_timer = None
            self._ro_users += 1
            con = self._ro
            try:
                yield con
            finally:
                self._ro_users -= 1
                if self._ro_users == 0 and self._ro is not None:
                    self._idle_since = time.monotonic()
                    self._arm_release()

    def _start_writer_open(self) -> _Background | None:
        """Begin opening the shared read-write connection on a thread; None when it is open already.

        DuckDB releases the GIL while it opens (~20-30 ms), so the caller can parse meanwhile.
        """
        with self._mutex:
            if self._ro is not None and self._ro_users == 0 and self._someone_waits():
                self._drop_ro()
            if self._ro is not None and not self._ro_writable:
                if self._ro_users:
                    raise IndexBusyError("index busy: this process is reading its read-only connection")
                self._drop_ro()
            # DuckDB releases the GIL while it creates its instance and attaches the file.
            return _Background(self._open, read_only=False, attach=True) if self._ro is None else None

    @contextmanager
    def _shared_writer(self, opening: _Background | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """The shared connection, made read-write, kept open (idle-released) for the next refresh.

        `opening` is the `_start_writer_open()` the caller began (its connection becomes the shared one).
        """
        with self._mutex:
            if opening is None:
                opening = self._start_writer_open()
            if opening is not None:
                self._ro = opening.result()
                self._ro_writable = True
            con = self._ro
            if con is None:  # `_start_writer_open` returns None only with the connection open
                raise RuntimeError("the shared read-write connection is missing")
            if self._release_timer is not None:
                self._release_timer.cancel()
                self._release_timer = None
            self._ro_users += 1
            try:
                yield con
            finally:
                self._ro_users -= 1
                if self._ro_users == 0 and self._ro is not None:
                    self._idle_since = time.monotonic()
                    self._arm_release()

    def close(self) -> None:
        """Close the shared connection and stop watching files."""
        with self._mutex:
            self._drop_ro()
            if self._engine is not None:
                self._engine.close()
                self._engine = None
            if self._watcher is not None:
                self._watcher.close()
                self._watcher = None
            self._known = None

    # ----- freshness ---------------------------------------------------------------------------

    def ensure_fresh(self) -> RefreshStats | None:
        """Re-index whatever changed on disk since the index was built; None when nothing did."""
        with self._mutex:
            if self._known is not None and self._watcher is not None:
                events = self._watcher.changes()
                if events is None:
                    return None
                rescan, paths = events
                if not rescan and self.generation >= 0:
                    # Only files in watched directories moved: stat just those, not the whole tree.
                    disk = self._restat(self._known, paths)
                    return None if disk == self._known else self.refresh(disk=disk)
            if self._watcher is None:
                self._watcher = _make_watcher()
                if self._watcher is not None:
                    # Watch first, then scan: a change during the scan is still seen next time.
                    self._watcher.watch_tree(self.root, self._exclude())
            dirs: list[str] = []
            disk = scan_markdown(self.root, self._exclude(), dirs, self.suffixes)
            if self._watcher is not None and self._watcher.watch_new(dirs):
                # A directory appeared: watched now, scanned again so nothing made in it before is missed.
                disk = scan_root(self.root, self._exclude(), self.suffixes)
            if self._known is not None and self.generation >= 0:
                if disk == self._known:
                    return None
                # We knew the indexed state: go straight to the refresh (it re-reads the table).
                return self.refresh(disk=disk)
            indexed = self._indexed_stats() if self.db_path.exists() else None
            if indexed is not None and indexed == disk:
                self._known = disk
                if self.generation < 0 or self._known is None:
                    self.generation = self._read_generation()
                return None
            stats = self.refresh(disk=disk)
            return stats

    def skipped_files(self) -> list[tuple[str, str]]:
        """(path, reason) of every Markdown-like file the index leaves out, and of those it could not parse."""
        found: list[tuple[str, str]] = []
        scan_markdown(self.root, self._exclude(), None, self.suffixes, found)
        if self.db_path.exists():
            with self.connect(read_only=True) as con:
                rows = con.execute(
                    "SELECT path, error FROM files WHERE parser = 'none' ORDER BY path"
                ).fetchall()
            for path, error in rows:
                reason = str(error or "not parsed")
                reason = (
                    reason.split(": ", 1)[1] if reason.startswith(f"{path}:") and ": " in reason else reason
                )
                found.append((path, reason if reason.startswith("skipped") else f"skipped: {reason}"))
        return sorted(found)

    def _restat(self, known: dict[str, tuple[int, int]], paths: set[str]) -> dict[str, tuple[int, int]]:
        """`known` with the stat of `paths` (absolute, under the root) updated as `scan_root` sees them."""
        disk = dict(known)
        base = len(str(self.root)) + 1
        for full in paths:
            name = os.path.basename(full)
            if name.startswith(".") or not name.endswith(self.suffixes):
                continue
            rel = full[base:].replace(os.sep, "/")
            try:
                st = os.stat(full)
            except OSError:
                disk.pop(rel, None)
                continue
            if stat.S_ISREG(st.st_mode):
                disk[rel] = (st.st_size, st.st_mtime_ns)
            else:
                disk.pop(rel, None)
        return disk

    def _indexed_stats(self) -> dict[str, tuple[int, int]] | None:
        try:
            with self.connect(read_only=True) as con:
                rows = con.execute("SELECT path, size, mtime_ns FROM files").fetchall()
                gen = con.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
                site = con.execute("SELECT value FROM meta WHERE key = 'site'").fetchone()
        except duckdb.CatalogException:
            return None
        self.generation = int(gen[0]) if gen else 0
        if site is None or site[0] != self._site().fingerprint():
            return None  # built under other site conventions (settings or config file): refresh
        return {r[0]: (int(r[1]), int(r[2])) for r in rows}

    def _read_generation(self) -> int:
        with self.connect(read_only=True) as con:
            row = con.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row else 0

    # ----- refresh -----------------------------------------------------------------------------

    def refresh(self, full: bool = False, disk: dict[str, tuple[int, int]] | None = None) -> RefreshStats:
        """Bring the index up to date with the files: only changed files are parsed (all when `full`)."""
        started = time.perf_counter()
        ensure_folder(self.state)
        lock = FileLock(str(self._write_lock_path))
        try:
            try:
                lock.acquire(timeout=0)
            except Timeout:
                with self._mutex:
                    # Another process is refreshing: it needs our connection gone to write.
                    self._drop_ro()
                lock.acquire(timeout=self.settings.index_busy_timeout_s)
        except Timeout as exc:
            raise IndexBusyError(
                f"index busy: another process kept refreshing {self.db_path} for "
                f"{self.settings.index_busy_timeout_s:g} s"
            ) from exc
        try:
            with self._mutex:
                stats = self._refresh_locked(full, disk)
        finally:
            lock.release()
        stats.seconds = round(time.perf_counter() - started, 4)
        self.last_refresh = stats
        return stats

    def _refresh_locked(self, full: bool, disk: dict[str, tuple[int, int]] | None) -> RefreshStats:
        if not self.root.is_dir():
            raise ConfigError(f"UDM root {self.root} is not a directory (set UDM_ROOT or --root)")
        disk = scan_root(self.root, self._exclude(), self.suffixes) if disk is None else disk
        stats = RefreshStats(full=full, files=len(disk))
        indexed: dict[str, Indexed] = {}
        stack = ExitStack()
        # A full build takes its own connection (checkpointed when closed); small refreshes reuse the
        # process's shared read-write connection, or open it on a thread while the files parse here.
        opening = None if full else self._start_writer_open()
        prefetched = None
        if opening is not None:
            try:
                prefetched = self._prefetch(disk)
            except BaseException:
                with suppress(BaseException):
                    self._ro = opening.result()
                    self._ro_writable = True
                    self._drop_ro()
                raise
        con = stack.enter_context(self.connect(read_only=False) if full else self._shared_writer(opening))
        try:
            # One query for what both paths need (every DuckDB statement costs this machine ~0.5 ms+).
            stored: dict[str, str] = {}
            try:
                stored = dict(
                    con.execute(
                        "SELECT key, value FROM meta WHERE key IN ('schema_version', 'generation', 'epoch', 'site')"
                    ).fetchall()
                )
            except duckdb.CatalogException:
                for stmt in _ddl():
                    con.execute(stmt)
                _new_epoch(con)
            version = stored.get("schema_version")
            if version is not None and int(version) != SCHEMA_VERSION:
                for table in [*TABLE_COLUMNS, "files", "meta"]:
                    con.execute(f"DROP TABLE IF EXISTS {table}")
                for stmt in _ddl():
                    con.execute(stmt)
                _new_epoch(con)
                full = True
            elif version is not None and stored.get("site") != self._site().fingerprint():
                # The site's conventions changed (its config, or the settings): every link resolves anew.
                full = True
            if not full:
                self._cache_key = (stored.get("generation"), stored.get("epoch"))
                cached = self._files_cache
                if cached is not None and self._cache_key[0] is not None and self._cache_key == cached[0]:
                    # The index as this process's last refresh left it (nobody has written since; the
                    # epoch tells a rebuilt database whose generations started again).
                    indexed = dict(cached[1])
                else:
                    self._anchor_cache = {}
                    for path, size, mtime, digest, holds in con.execute(
                        "SELECT path, size, mtime_ns, content_hash, tables FROM files"
                    ).fetchall():
                        indexed[path] = (
                            int(size),
                            int(mtime),
                            digest,
                            (tuple(TABLE_COLUMNS) if holds is None else tuple(holds)),
                        )
                    if self._cache_key[0] is not None:
                        self._files_cache = (self._cache_key, dict(indexed))
            return self._refresh_with(con, stack, full, disk, indexed, stats, prefetched)
        finally:
            stack.close()

    def _prefetch(self, disk: dict[str, tuple[int, int]]) -> _Prefetched | None:
        """Parse the files that differ from this process's last refresh, if they are few.

        A guess made before the index is read: `_refresh_small` uses it only when the files it has
        to parse turn out to be exactly these.
        """
        cached = self._files_cache
        if cached is None:
            return None
        known = cached[1]
        guess = sorted(p for p, st in disk.items() if p not in known or known[p][:2] != st)
        if not guess or sum(disk[p][0] for p in guess) >= PARALLEL_MIN_BYTES:
            return None
        return guess, _parse_in_memory(str(self.root), guess, parse_options(self.settings))

    def _refresh_with(
        self,
        con: duckdb.DuckDBPyConnection,
        stack: ExitStack,
        full: bool,
        disk: dict[str, tuple[int, int]],
        indexed: dict[str, Indexed],
        stats: RefreshStats,
        prefetched: _Prefetched | None = None,
    ) -> RefreshStats:
        removed = sorted(set(indexed) - set(disk))
        candidates = sorted(p for p, st in disk.items() if p not in indexed or indexed[p][:2] != st)
        # Same bytes under a new mtime (touch, checkout): update the stat, skip the parse.
        to_parse: list[str] = []
        touched: list[tuple[str, int, int]] = []
        for rel in candidates:
            if rel in indexed:
                try:
                    digest = hashlib.sha256((self.root / rel).read_bytes()).hexdigest()
                except OSError:
                    digest = ""
                if digest == indexed[rel][2]:
                    touched.append((rel, *disk[rel]))
                    continue
            to_parse.append(rel)
        stats.removed = len(removed)
        stats.touched = len(touched)
        stats.parsed = len(to_parse)
        stats.unchanged = len(disk) - len(to_parse) - len(touched)
        if not full and not removed and not to_parse and not touched:
            self._known = disk
            row = con.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
            self.generation = int(row[0]) if row else 0
            stats.generation = self.generation
            return stats
        if not full and indexed and sum(disk[p][0] for p in to_parse) < PARALLEL_MIN_BYTES:
            return self._refresh_small(con, disk, indexed, removed, to_parse, touched, stats, prefetched)

        self._files_cache = None  # re-read after a bulk load
        self._anchor_cache = {}
        tmp = tempfile.mkdtemp(prefix="udm-index-", dir=self.state)
        stream: Any = None
        try:
            writer: duckdb.DuckDBPyConnection | None = con
            if full or sum(disk[p][0] for p in to_parse) >= PARALLEL_MIN_BYTES:
                # A long parse: let readers in meanwhile, and reconnect for the short load step.
                stack.close()
                writer = None
            mark = time.perf_counter()
            if full or not indexed:
                # The search index is rebuilt on a thread, fed each chunk's sections as its worker
                # finishes: tantivy's indexing overlaps the rest of the parse and DuckDB's load.
                from udm.index.search import SearchBuilder, SearchIndex

                stream = SearchBuilder(SearchIndex(self.search_path, list(self.settings.id_patterns)))
            file_rows, errors, counts, workers = self._parse_all(
                to_parse,
                disk,
                tmp,
                None if stream is None else lambda k: stream.feed(_chunk_sections(tmp, k)),
            )
            stats.stages["parse"] = round(time.perf_counter() - mark, 3)
            mark = time.perf_counter()
            stats.errors = errors
            stats.workers = workers
            stats.sections = counts.get("sections", 0)
            stats.ids = counts.get("ids", 0)
            stats.tasks = counts.get("tasks", 0)
            gone = sorted(set(removed) | set(to_parse))
            con = writer if writer is not None else stack.enter_context(self.connect(read_only=False))
            if not (full or not indexed):
                # A small change stays in the WAL (readers replay it) instead of a checkpoint that
                # rewrites whole row groups of section text; DuckDB checkpoints once the WAL is large.
                con.execute("PRAGMA disable_checkpoint_on_shutdown")
                con.execute("SET checkpoint_threshold = '64MB'")
            con.execute("BEGIN TRANSACTION")
            try:
                if full:
                    self._reset(con)
                elif gone:
                    con.execute("CREATE TEMP TABLE gone (path VARCHAR)")
                    self._load_list(con, "gone", [{"path": p} for p in gone], tmp, {"path": "VARCHAR"})
                    for table in TABLE_COLUMNS:
                        con.execute(f"DELETE FROM {table} WHERE file IN (SELECT path FROM gone)")
                    con.execute("DELETE FROM files WHERE path IN (SELECT path FROM gone)")
                for table in TABLE_COLUMNS:
                    pattern = os.path.join(tmp, f"{table}.*.json")
                    if any(n.startswith(f"{table}.") and n.endswith(".json") for n in os.listdir(tmp)):
                        cols = ", ".join(name for name, _ in TABLE_COLUMNS[table])
                        con.execute(
                            f"INSERT INTO {table} SELECT {cols} FROM read_json(?, format='array', "
                            f"columns={_columns_sql(table)}, maximum_object_size=1073741824)",
                            [pattern],
                        )
                self._load_list(con, "files", file_rows, tmp, dict(FILE_COLUMNS))
                for rel, size, mtime in touched:
                    con.execute("UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?", [size, mtime, rel])
                self._resolve_links(con, None if full or not indexed else gone)
                gen_row = con.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
                generation = (int(gen_row[0]) if gen_row else 0) + 1
                con.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('generation', ?), ('schema_version', ?), "
                    "('root', ?), ('refreshed_at', ?), ('site', ?)",
                    [
                        str(generation),
                        str(SCHEMA_VERSION),
                        str(self.root),
                        datetime.now(UTC).isoformat(),
                        self._site().fingerprint(),
                    ],
                )
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
            defs = (
                con.execute(_DEFS_SQL).fetchall()
                if full or not indexed
                else con.execute(
                    _DEFS_SQL + " AND i.file IN (SELECT unnest(?::VARCHAR[]))", [gone]
                ).fetchall()
            )
            stack.close()  # release the write connection before the side indexes
            stats.stages["load"] = round(time.perf_counter() - mark, 3)
            mark = time.perf_counter()
            write_lookup(
                self.state,
                self.root,
                full=full or not indexed,
                changed=gone,
                disk=disk,
                defs=defs,
                generation=generation,
                suffixes=self.suffixes,
            )
            stats.stages["lookup"] = round(time.perf_counter() - mark, 3)
            mark = time.perf_counter()
            if stream is not None:
                stream.finish()  # waits for the last documents and the commit; raises what failed there
                stream.index.set_generation(generation)
            else:
                self._update_search(full or not indexed, gone, tmp, generation)
            stats.stages["search"] = round(time.perf_counter() - mark, 3)
        finally:
            if stream is not None:
                stream.close()  # a failure elsewhere: stop the thread before its files go
            shutil.rmtree(tmp, ignore_errors=True)
        self.generation = generation
        stats.generation = generation
        self._known = disk
        return stats

    def _refresh_small(
        self,
        con: duckdb.DuckDBPyConnection,
        disk: dict[str, tuple[int, int]],
        indexed: dict[str, Indexed],
        removed: list[str],
        to_parse: list[str],
        touched: list[tuple[str, int, int]],
        stats: RefreshStats,
        prefetched: _Prefetched | None = None,
    ) -> RefreshStats:
        """A few files changed: parse here, load from memory, update tantivy on a thread meanwhile."""
        from udm.index.search import SearchIndex

        mark = time.perf_counter()
        self._pending_routes = None
        patterns = parse_options(self.settings)
        if prefetched is not None and prefetched[0] == to_parse:
            file_rows, errors, counts, tables = prefetched[1]  # parsed while the connection opened
        else:
            file_rows, errors, counts, tables = _parse_in_memory(str(self.root), to_parse, patterns)
        stats.stages["parse"] = round(time.perf_counter() - mark, 4)
        mark = time.perf_counter()
        stats.errors = errors
        stats.sections = counts.get("sections", 0)
        stats.ids = counts.get("ids", 0)
        stats.tasks = counts.get("tasks", 0)
        gone = sorted(set(removed) | set(to_parse))
        # The generation `_refresh_locked` read under the write lock, in this transaction's view.
        generation = int(self._cache_key[0] or 0) + 1
        search = SearchIndex(self.search_path, list(patterns.id_patterns))
        in_step = search.generation() == generation - 1
        # tantivy's commit (~25 ms, mostly fsync) overlaps DuckDB's statements on the other core.
        worker = (
            _Background(search.update, full=False, removed=gone, rows=tables["sections"], generation=None)
            if in_step and gone
            else None
        )
        try:
            self._load_small(con, gone, indexed, file_rows, tables, touched, generation)
        except BaseException:
            self._anchor_cache = {}  # it already holds the changed files' new anchors
            if worker is not None:
                with suppress(BaseException):
                    worker.result()
                search.set_generation(-1)  # it may hold rows DuckDB rolled back: rebuild on next use
            raise
        stats.stages["load"] = round(time.perf_counter() - mark, 4)
        mark = time.perf_counter()
        restat = [*to_parse, *(rel for rel, _size, _mtime in touched)]
        defs = _definitions_of(tables)
        if not write_lookup(
            self.state,
            self.root,
            full=False,
            changed=gone,
            disk=disk,
            defs=defs,
            generation=generation,
            suffixes=self.suffixes,
            restat=restat,
        ):
            # The mirror missed a refresh (crash, older build): rewrite it from the tables.
            all_defs = con.execute(_DEFS_SQL).fetchall()
            write_lookup(
                self.state,
                self.root,
                full=True,
                changed=gone,
                disk=disk,
                defs=all_defs,
                generation=generation,
                suffixes=self.suffixes,
            )
        stats.stages["lookup"] = round(time.perf_counter() - mark, 4)
        mark = time.perf_counter()
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
            self.rebuild_search(generation, search)  # it missed a refresh (crash, older build)
        stats.stages["search"] = round(time.perf_counter() - mark, 4)
        self.generation = generation
        stats.generation = generation
        stats.changed_files = gone
        self._known = disk
        gone_set = set(gone)
        files_now = {p: st for p, st in indexed.items() if p not in gone_set}
        files_now.update(
            (r["path"], (r["size"], r["mtime_ns"], r["content_hash"], tuple(r["tables"]))) for r in file_rows
        )
        files_now.update((rel, (size, mtime, *indexed[rel][2:])) for rel, size, mtime in touched)
        self._files_cache = ((str(generation), self._cache_key[1]), files_now)
        if self._pending_routes is not None:
            self._route_cache = (self._files_cache[0], self._pending_routes)
            self._pending_routes = None
        return stats

    def _load_small(
        self,
        con: duckdb.DuckDBPyConnection,
        gone: list[str],
        indexed: dict[str, Indexed],
        file_rows: list[dict[str, Any]],
        tables: dict[str, list[dict[str, Any]]],
        touched: list[tuple[str, int, int]],
        generation: int,
    ) -> None:
        """Delete the rows of `gone` files and insert the new ones, in one transaction."""
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
                self._resolve_small_links(con, gone, set(indexed), file_rows, tables)
                for table in TABLE_COLUMNS:
                    if table in holding:
                        con.execute(f"DELETE FROM {table} WHERE file {where}", [param])
                con.execute(f"DELETE FROM files WHERE path {where}", [param])
            # Planning a JSON insert costs more than running it, and its optimizer passes alone ~2 ms
            # each here: there is nothing in `INSERT ... SELECT unnest(from_json(?))` to optimize.
            con.execute("PRAGMA disable_optimizer")
            try:
                for table, rows in tables.items():
                    if rows:
                        con.execute(_INSERT_JSON[table], [_json_bytes(rows).decode("utf-8")])
                if file_rows:
                    con.execute(_INSERT_JSON["files"], [_json_bytes(file_rows).decode("utf-8")])
            finally:
                con.execute("PRAGMA enable_optimizer")  # the connection serves this process's queries
            for rel, size, mtime in touched:
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

    def _resolve_small_links(
        self,
        con: duckdb.DuckDBPyConnection,
        gone: list[str],
        indexed: set[str],
        file_rows: list[dict[str, Any]],
        tables: dict[str, list[dict[str, Any]]],
    ) -> None:
        """Resolve the new files' links, and re-resolve links of other files into the changed ones.

        The rules are `_resolve_links`' (udm.site.routes); only the rows differ: the parsed rows in memory, the
        links of other files into the changed ones, and, when the set of pages or their routes changed,
        every link that did not resolve.
        """
        changed = set(gone)
        cached = self._route_cache
        routes = cached[1] if cached is not None and cached[0] == self._cache_key else self._routes(con)
        self._route_cache = None  # set again once this refresh commits
        added = {
            r["path"]: (json.loads(r["site"]) if r.get("site") else None)
            for r in file_rows
            if r["parser"] != "none"
        }
        moved = routes.update([p for p in gone if p not in added], added)
        self._pending_routes = routes
        # Unchanged files' anchors: from this process's cache while the index is at the generation it
        # was kept for, else a UNION ALL of point queries (DuckDB pushes each `file = ?` into its
        # scan, not an IN list: measured 2-3x faster than IN and than separate statements).
        cache = self._anchor_cache
        for path in changed:
            cache.pop(path, None)
        fresh: dict[str, set[str]] = {}
        for r in tables["sections"]:
            fresh.setdefault(r["file"], set()).add(r["anchor"])

        def anchors_in(pairs: set[tuple[str, str]]) -> set[tuple[str, str]]:
            targets = sorted({f for f, _ in pairs if f not in cache and f not in changed})
            for k in range(0, len(targets), 64):
                part = targets[k : k + 64]
                sql = " UNION ALL ".join(["SELECT file, anchor FROM sections WHERE file = ?"] * len(part))
                for t in part:
                    cache[t] = set()
                for file, anchor in con.execute(sql, part).fetchall():
                    cache[file].add(anchor)
            return {(f, a) for f, a in pairs if a in (fresh.get(f, ()) if f in changed else cache[f])}

        resolver = LinkResolver(routes, self._exists())
        new_rows = [
            (i, r["file"], r["target"]) for i, r in enumerate(tables["links"]) if r["kind"] != "external"
        ]
        select = "SELECT rowid, file, target, target_file, fragment, resolved FROM links WHERE kind <> 'external' AND "
        if moved:
            incoming = con.execute(
                select + "NOT list_contains(?::VARCHAR[], file) AND "
                "(list_contains(?::VARCHAR[], target_file) OR resolved IS NOT true)",
                [gone, gone],
            ).fetchall()
        elif len(gone) == 1:
            incoming = con.execute(select + "target_file = ? AND file <> ?", [gone[0], gone[0]]).fetchall()
        else:
            incoming = con.execute(
                select + "list_contains(?::VARCHAR[], target_file) AND NOT list_contains(?::VARCHAR[], file)",
                [gone, gone],
            ).fetchall()
        rows = [(("new", i), f, t) for i, f, t in new_rows] + [(("old", r[0]), r[1], r[2]) for r in incoming]
        before = {("old", r[0]): r[3:] for r in incoming}
        updates = []
        for key, target_file, fragment, ok in resolve_links(resolver, rows, anchors_in, self._read_page):
            if key[0] == "new":
                row = tables["links"][key[1]]
                row["target_file"], row["fragment"], row["resolved"] = target_file, fragment, ok
            elif (target_file, fragment, ok) != before[key]:
                updates.append((key[1], target_file, fragment, ok))
        for path, anchors in fresh.items():
            cache[path] = anchors
        self._write_verdicts(con, updates)

    def _reset(self, con: duckdb.DuckDBPyConnection) -> None:
        for table in [*TABLE_COLUMNS, "files"]:
            con.execute(f"DELETE FROM {table}")

    def _load_list(
        self,
        con: duckdb.DuckDBPyConnection,
        table: str,
        rows: list[dict[str, Any]],
        tmp: str,
        cols: dict[str, str],
    ) -> None:
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

    def _site(self) -> Any:
        return settings_site(self.settings)

    def _exists(self) -> Callable[[str], bool]:
        """Whether a file (not a folder) exists under the root, remembered for one resolution pass."""
        seen: dict[str, bool] = {}
        root = str(self.root)

        def exists(rel: str) -> bool:
            hit = seen.get(rel)
            if hit is None:
                hit = seen[rel] = os.path.isfile(os.path.join(root, rel))
            return hit

        return exists

    def _read_page(self, rel: str) -> str | None:
        """A page's text from the disk (links into it named an anchor that is no heading's)."""
        try:
            with open(os.path.join(self.root, rel), "rb") as fh:
                return fh.read(64 << 20).decode("utf-8", errors="replace")
        except OSError:
            return None

    def _routes(self, con: duckdb.DuckDBPyConnection) -> Routes:
        """The route table of the indexed pages (paths plus route front matter), from the files table."""
        pages: set[str] = set()
        meta: dict[str, Any] = {}
        for path, site in con.execute("SELECT path, site FROM files WHERE parser <> 'none'").fetchall():
            pages.add(path)
            if site:
                meta[path] = json.loads(site)
        return Routes(self._site(), pages, meta)

    def _resolve_links(self, con: duckdb.DuckDBPyConnection, changed: list[str] | None = None) -> None:
        """Resolve links with the site's rules (udm.site.routes): all of them, or after an incremental load the
        links from or into the changed files and every link that did not resolve (a new page may be its target).
        """
        routes = self._routes(con)
        self._route_cache = None
        where = "kind <> 'external'"
        params: list[Any] = []
        if changed is not None:
            where += (
                " AND (file IN (SELECT unnest($1::VARCHAR[])) OR target_file IN (SELECT unnest($1::VARCHAR[])) "
                "OR resolved IS NOT true)"
            )
            params = [changed]
        rows = con.execute(
            f"SELECT rowid, file, target, target_file, fragment, resolved FROM links WHERE {where}", params
        ).fetchall()

        def anchors_in(pairs: set[tuple[str, str]]) -> set[tuple[str, str]]:
            # Only the pairs links ask for come back: fetching every anchor costs ~1 s per 100k sections.
            files, anchors = zip(*pairs, strict=True)
            return set(
                con.execute(
                    "SELECT s.file, s.anchor FROM sections s SEMI JOIN (SELECT unnest(?::VARCHAR[]) AS f, "
                    "unnest(?::VARCHAR[]) AS a) w ON s.file = w.f AND s.anchor = w.a",
                    [list(files), list(anchors)],
                ).fetchall()
            )

        before = {r[0]: r[3:] for r in rows}
        verdicts = resolve_links(
            LinkResolver(routes, self._exists()), [r[:3] for r in rows], anchors_in, self._read_page
        )
        self._write_verdicts(con, [v for v in verdicts if tuple(v[1:]) != before[v[0]]])

    @staticmethod
    def _write_verdicts(con: duckdb.DuckDBPyConnection, verdicts: list[tuple[Any, ...]]) -> None:
        if not verdicts:
            return
        con.execute(
            "UPDATE links SET target_file = v.tf, fragment = v.fr, resolved = v.r FROM (SELECT "
            "unnest(?::BIGINT[]) AS rid, unnest(?::VARCHAR[]) AS tf, unnest(?::VARCHAR[]) AS fr, "
            "unnest(?::BOOLEAN[]) AS r) v WHERE links.rowid = v.rid",
            [
                [v[0] for v in verdicts],
                [v[1] for v in verdicts],
                [v[2] for v in verdicts],
                [v[3] for v in verdicts],
            ],
        )

    def _parse_all(
        self,
        relpaths: list[str],
        disk: dict[str, tuple[int, int]],
        tmp: str,
        on_chunk: Callable[[int], None] | None = None,
    ) -> tuple[list[dict[str, Any]], list[str], dict[str, int], int]:
        """Parse files into row files under `tmp`, in worker processes when there is enough text.

        `on_chunk(k)` is called as chunk k's files are written (in completion order).
        """
        patterns = parse_options(self.settings)
        total = sum(disk[p][0] for p in relpaths)
        cpus = os.cpu_count() or 1
        if total < PARALLEL_MIN_BYTES or cpus < 2 or len(relpaths) < 4:
            files, errors, counts = _parse_chunk(str(self.root), relpaths, patterns, tmp, 0)
            if on_chunk is not None:
                on_chunk(0)
            return files, errors, counts, 1
        # Balanced chunks by size, a few per worker so a slow file does not idle the others.
        n_chunks = cpus * 4
        chunks: list[list[str]] = [[] for _ in range(n_chunks)]
        loads = [0] * n_chunks
        for rel in sorted(relpaths, key=lambda p: -disk[p][0]):
            k = loads.index(min(loads))
            chunks[k].append(rel)
            loads[k] += disk[rel][0]
        files_all: list[dict[str, Any]] = []
        errors_all: list[str] = []
        counts_all: dict[str, int] = {}
        with ProcessPoolExecutor(max_workers=cpus) as pool:
            futures = {
                pool.submit(_parse_chunk, str(self.root), chunk, patterns, tmp, k): k
                for k, chunk in enumerate(chunks)
                if chunk
            }
            if on_chunk is not None:
                for fut in as_completed(futures):
                    fut.result()  # a worker's failure surfaces here
                    on_chunk(futures[fut])
            # Results in chunk order, so file rows and errors come out the same every run.
            for fut in futures:
                files, errors, counts = fut.result()
                files_all.extend(files)
                errors_all.extend(errors)
                for key, value in counts.items():
                    counts_all[key] = counts_all.get(key, 0) + value
        return files_all, errors_all, counts_all, cpus

    def _update_search(self, full: bool, gone: list[str], tmp: str, generation: int) -> None:
        from udm.index.search import SearchIndex

        search = SearchIndex(self.search_path, list(self.settings.id_patterns))
        if not full and search.generation() != generation - 1:
            # The search index missed a refresh (crash, older build): rebuild it from the tables.
            self.rebuild_search(generation, search)
            return
        search.update(
            full=full,
            removed=gone,
            sections_glob=os.path.join(tmp, "sections.*.json"),
            generation=generation,
        )

    def rebuild_search(self, generation: int | None = None, search: Any = None) -> None:
        """Rebuild the full-text index from the sections table."""
        from udm.index.search import SearchIndex

        search = search or SearchIndex(self.search_path, list(self.settings.id_patterns))
        with self.connect(read_only=True) as con:
            cur = con.execute(
                "SELECT s.file, s.idx, s.start_line, s.title, s.path, s.content, s.ids, m.mentions, "
                "s.start_byte, s.own_end_byte "
                "FROM sections s LEFT JOIN (SELECT file, section, list(DISTINCT id) AS mentions FROM ids "
                "GROUP BY file, section) m ON m.file = s.file AND m.section = s.idx"
            )
            names = [d[0] for d in cur.description]
            rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
            gen = generation if generation is not None else self._read_generation()
        search.update(full=True, removed=[], rows=rows, generation=gen)
