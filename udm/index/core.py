"""The DuckDB index of the UDM: `UdmIndex`, incremental refresh by content hash, never-stale checks.

The index is a cache, never the truth. `UdmIndex.ensure_fresh()` compares the size and mtime of
every file under the UDM root with the `files` table and re-indexes what changed; inside one
process an inotify watch (Linux) makes that check a single non-blocking read while nothing moves.

The parts: connections (udm.index.connections: one shared per process, let go when idle or when
another process waits), the watch (udm.index.watch), the refresh (udm.index.refresh: plan, bulk
load and full build; udm.index.small_refresh), parsing into rows (udm.index.parse), the tables
(udm.index.schema) and link resolution (udm.index.resolve). Writers are serialised across processes
by a file lock next to the database.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
from filelock import FileLock, Timeout

from udm.config import Settings, ensure_folder
from udm.errors import IndexBusyError
from udm.index.connections import IDLE_RELEASE_S, RELEASE_POLL_S, Connections
from udm.index.lookup import excluded_folders, scan_markdown
from udm.index.parse import skip_reason
from udm.index.refresh import refresh_locked
from udm.index.resolve import NESTED_IGNORES
from udm.index.schema import SCHEMA_VERSION, RefreshStats
from udm.index.state import Memo
from udm.index.watch import Inotify, make_watcher, restat, scan_root
from udm.site import Site, ignore_states, settings_site

__all__ = [
    "IDLE_RELEASE_S",
    "RELEASE_POLL_S",
    "SCHEMA_VERSION",
    "RefreshStats",
    "UdmIndex",
    "read_fresh",
    "scan_root",
]


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
        self.conns = Connections(settings, self.db_path, self._writer_flag, self._mutex)
        self._watcher: Inotify | None = None
        # The files (path -> size, mtime_ns) as the index holds them, once this process has checked.
        self._known: dict[str, tuple[int, int]] | None = None
        # The `.gitignore` files of the manual's folders its verdicts read, as they were then
        # (`udm.index.resolve.NESTED_IGNORES`); None until read after a refresh.
        self._ignores: dict[str, list[int] | None] | None = None
        self.memo = Memo()
        self.generation = -1
        self.last_refresh: RefreshStats | None = None

    # ----- connections -------------------------------------------------------------------------

    @property
    def _ro(self) -> duckdb.DuckDBPyConnection | None:
        """The shared connection, when one is open."""
        return self.conns.ro

    @property
    def _ro_writable(self) -> bool:
        """Whether the shared connection is the read-write one of the last small refresh."""
        return self.conns.ro_writable

    def _drop_ro(self) -> None:
        """Let go of the shared connection (as when another process needs the file)."""
        self.conns.drop_shared()

    def exclude(self) -> list[Path]:
        """The folders under the root that are never indexed (the state folder)."""
        return excluded_folders(self.settings)

    def site(self) -> Site:
        """The site conventions the links resolve by."""
        return settings_site(self.settings)

    @contextmanager
    def connect(self, read_only: bool = True, *, strict: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection: reading ones are shared in the process and closed after idling.

        The shared one may be the read-write connection of the last small refresh (for this package's
        own queries); `strict` asks for a genuinely read-only connection that cannot read other files,
        as untrusted SQL needs.
        """
        if not read_only:
            with self.conns.writer() as con:
                yield con
            return
        if not self.db_path.exists():
            self.refresh()
        with self.conns.reader(strict=strict) as con:
            yield con

    def close(self) -> None:
        """Close the shared connection and stop watching files."""
        with self._mutex:
            self.conns.close()
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
                    if disk != self._known:
                        return self.refresh(disk=disk)
                    return self._after_ignores(disk)
            disk = self._scan_watched()
            if self._known is not None and self.generation >= 0:
                if disk == self._known:
                    return self._after_ignores(disk)
                # We knew the indexed state: go straight to the refresh (it re-reads the table).
                return self.refresh(disk=disk)
            indexed = self._indexed_stats() if self.db_path.exists() else None
            if indexed is not None and indexed == disk:
                self._known = disk
                if self.generation < 0 or self._known is None:
                    self.generation = self._read_generation()
                return self._after_ignores(disk)
            return self.refresh(disk=disk)

    def _after_ignores(self, disk: dict[str, tuple[int, int]]) -> RefreshStats | None:
        """No page changed: a full build when a `.gitignore` of a folder of the manual that a link's
        verdict read has changed since (a page a build writes may be broken now, or known), else
        None."""
        if self._ignores is None:
            try:
                with self.connect(read_only=True) as con:
                    row = con.execute("SELECT value FROM meta WHERE key = ?", [NESTED_IGNORES]).fetchone()
            except duckdb.Error:
                row = None
            self._ignores = json.loads(row[0]) if row else {}
        if not self._ignores or ignore_states(self.root, list(self._ignores)) == self._ignores:
            return None
        return self.refresh(full=True, disk=disk)

    def _scan_watched(self) -> dict[str, tuple[int, int]]:
        """Scan the root, watching every folder first (a change during the scan is still seen next time)."""
        if self._watcher is None:
            self._watcher = make_watcher()
            if self._watcher is not None:
                self._watcher.watch_tree(self.root, self.exclude())
        dirs: list[str] = []
        disk = scan_markdown(self.root, self.exclude(), dirs, self.suffixes)
        if self._watcher is not None and self._watcher.watch_new(dirs):
            # A directory appeared: watched now, scanned again so nothing made in it before is missed.
            disk = scan_root(self.root, self.exclude(), self.suffixes)
        return disk

    def settle(self, disk: dict[str, tuple[int, int]], generation: int) -> None:
        """Record that the index holds `disk` at `generation` (a refresh's end)."""
        self._known = disk
        self.generation = generation
        self._ignores = None  # read again from the new index when next needed

    def _restat(self, known: dict[str, tuple[int, int]], paths: set[str]) -> dict[str, tuple[int, int]]:
        """`known` with the stat of `paths` (absolute, under the root) updated as `scan_root` sees them."""
        return restat(self.root, self.suffixes, known, paths)

    def skipped_files(self) -> list[tuple[str, str]]:
        """(path, reason) of every Markdown-like file the index leaves out, and of those it could not parse."""
        found: list[tuple[str, str]] = []
        scan_markdown(self.root, self.exclude(), None, self.suffixes, found)
        if self.db_path.exists():
            with self.connect(read_only=True) as con:
                rows = con.execute(
                    "SELECT path, error FROM files WHERE parser = 'none' ORDER BY path"
                ).fetchall()
            found += [(path, skip_reason(path, error)[1]) for path, error in rows]
        return sorted(found)

    def _indexed_stats(self) -> dict[str, tuple[int, int]] | None:
        try:
            with self.connect(read_only=True) as con:
                rows = con.execute("SELECT path, size, mtime_ns FROM files").fetchall()
                meta = dict(
                    con.execute(
                        "SELECT key, value FROM meta WHERE key IN ('generation', 'site', 'schema_version')"
                    ).fetchall()
                )
        except duckdb.CatalogException:
            return None
        self.generation = int(meta.get("generation") or 0)
        if meta.get("site") != self.site().fingerprint():
            return None  # built under other site conventions (settings or config file): refresh
        if meta.get("schema_version") != str(SCHEMA_VERSION):
            # Built by another version of udm, whose rows (anchors, columns) may differ: the refresh
            # rebuilds it, so no answer comes from an index this code would not have written.
            return None
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
                    self.conns.drop_shared()
                lock.acquire(timeout=self.settings.index_busy_timeout_s)
        except Timeout as exc:
            raise IndexBusyError(
                f"index busy: another process kept refreshing {self.db_path} for "
                f"{self.settings.index_busy_timeout_s:g} s"
            ) from exc
        try:
            with self._mutex:
                stats = refresh_locked(self, full, disk)
        finally:
            lock.release()
        stats.seconds = round(time.perf_counter() - started, 4)
        self.last_refresh = stats
        return stats

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


def read_fresh(settings: Settings, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    """The rows of one query over the index of `settings`, refreshed from the files first (never stale)."""
    index = UdmIndex(settings)
    try:
        index.ensure_fresh()
        with index.connect(read_only=True) as con:
            return con.execute(sql, params or []).fetchall()
    finally:
        index.close()
