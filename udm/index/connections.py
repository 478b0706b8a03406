"""Connections to the index file: one shared per process, let go when idle or when another process waits.

DuckDB locks its file per process, so writers keep their read-write connection only for the short
load step of a large refresh; the process's shared connection (read-only, or read-write after a
small refresh) is let go when idle for `IDLE_RELEASE_S` or as soon as another process raises the
waiting flag (a failed open does), and every open is retried until `settings.index_busy_timeout_s`,
after which `IndexBusyError` says the index is busy.
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import duckdb

from udm.config import Settings
from udm.errors import IndexBusyError

__all__ = ["IDLE_RELEASE_S", "RELEASE_POLL_S", "Background", "Connections"]

# An idle shared connection is kept this long (reopening costs DuckDB ~25 ms plus cold caches) ...
IDLE_RELEASE_S = 30.0
# ... unless another process waits for the index: idle holders look for its flag this often.
RELEASE_POLL_S = 0.1
# The name the shared connection attaches the index file under (its tables are then unqualified).
_ATTACHED = "udm_index"
# Every connection: no progress bar, and no scanning a Python variable named like a missing table.
_SESSION_SQL = "SET enable_progress_bar = false; SET python_enable_replacements = false"


class Background(threading.Thread):
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


_LIVE: weakref.WeakSet[Connections] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    # Close shared connections before interpreter teardown (DuckDB's bindings complain otherwise).
    # Tracked here, not per index: an idle connection's release timer keeps these alive after their
    # index is gone.
    for conns in list(_LIVE):
        conns.close()


class Connections:
    """The connections of one index file: private ones, and the one this process's readers share."""

    def __init__(self, settings: Settings, db_path: Path, writer_flag: Path, mutex: threading.RLock) -> None:
        self.settings = settings
        self.db_path = db_path
        self.writer_flag = writer_flag
        self.mutex = mutex
        # The connection shared by this process's readers: read-only, or the read-write one the last
        # small refresh used (kept so the next refresh skips DuckDB's ~25 ms open).
        self.ro: duckdb.DuckDBPyConnection | None = None
        self.ro_writable = False
        # The shared connection is the engine with the file attached, or (for untrusted SQL) a
        # read-only connection of its own that cannot reach other files.
        self._ro_strict = False
        self._engine: duckdb.DuckDBPyConnection | None = None
        self._ro_users = 0
        self._release_timer: threading.Timer | None = None
        self._idle_since = 0.0
        _LIVE.add(self)

    def open(self, read_only: bool, *, attach: bool = False) -> duckdb.DuckDBPyConnection:
        """A connection of its own (read-only: cannot reach other files), or the engine with it attached."""
        flagged = False
        try:
            return self._open_retrying(read_only, attach, lambda: None)
        except _NeedFlag:
            flagged = True
            # Tell other processes to let go of their idle connections (a reader as well: another
            # process may keep a read-write connection between its refreshes).
            with suppress(OSError):
                self.writer_flag.touch()
            return self._open_retrying(read_only, attach, None)
        finally:
            if flagged:
                with suppress(OSError):
                    self.writer_flag.unlink()

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
                # refresh; `drop_shared` checkpoints when the file is let go, DuckDB once the WAL is large.
                engine.execute("PRAGMA disable_checkpoint_on_shutdown; SET checkpoint_threshold = '16MB'")
            except BaseException:
                engine.close()
                raise
            self._engine = engine
        return self._engine

    def _connect_once(self, read_only: bool, attach: bool) -> duckdb.DuckDBPyConnection:
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

    def _open_retrying(self, read_only: bool, attach: bool, first_failure: Any) -> duckdb.DuckDBPyConnection:
        deadline = time.monotonic() + self.settings.index_busy_timeout_s
        delay = 0.01
        while True:
            try:
                return self._connect_once(read_only, attach)
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

    def drop_shared(self) -> None:
        """Let go of the shared connection (checkpointing what a writer left in the WAL)."""
        if self._release_timer is not None:
            self._release_timer.cancel()
            self._release_timer = None
        if self.ro is not None:
            try:
                if self.ro_writable:
                    # Fold the small refreshes' WAL in as the writer lets go (off the refresh's path),
                    # so other processes open the index without replaying it (~10 ms per MB).
                    with suppress(duckdb.Error):
                        self.ro.execute("CHECKPOINT")
                if self._ro_strict:
                    self.ro.close()
                else:
                    self._detach()
            finally:
                self.ro = None
                self.ro_writable = False
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

    def someone_waits(self) -> bool:
        """Whether another process raised the waiting flag lately (a crashed waiter's flag goes stale)."""
        try:
            age = time.time() - self.writer_flag.stat().st_mtime
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
        with self.mutex:
            if self._ro_users or self.ro is None or self._release_timer is not threading.current_thread():
                return
            if self.someone_waits() or time.monotonic() - self._idle_since >= IDLE_RELEASE_S:
                self.drop_shared()
            else:
                self._arm_release()

    @contextmanager
    def _use_shared(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """The shared connection (open), counted as in use; the idle timer starts when the last user leaves."""
        con = self.ro
        if con is None:
            raise RuntimeError("the shared connection is missing")
        if self._release_timer is not None:
            self._release_timer.cancel()
            self._release_timer = None
        self._ro_users += 1
        try:
            yield con
        finally:
            self._ro_users -= 1
            if self._ro_users == 0 and self.ro is not None:
                self._idle_since = time.monotonic()
                self._arm_release()

    @contextmanager
    def writer(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-write connection of its own (the shared one let go first), closed after use."""
        with self.mutex:
            self.drop_shared()
            con = self.open(read_only=False)
            try:
                yield con
            finally:
                con.close()

    @contextmanager
    def reader(self, *, strict: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """The shared connection for reading; `strict`: one that is genuinely read-only (untrusted SQL)."""
        with self.mutex:
            if self.ro is not None and self._ro_users == 0 and self.someone_waits():
                self.drop_shared()  # another process is waiting: step aside, reopen after it
            if strict and self.ro is not None and not self._ro_strict:
                if self._ro_users:
                    if self.ro_writable:
                        raise IndexBusyError("index busy: this process is using its read-write connection")
                    # Another thread reads through the engine: a restricted connection just for this.
                    private = self.open(read_only=True)
                    try:
                        yield private
                    finally:
                        private.close()
                    return
                self.drop_shared()
            if self.ro is None:
                self.ro = self.open(read_only=True, attach=not strict)
                self._ro_strict = strict
            with self._use_shared() as con:
                yield con

    def start_writer_open(self) -> Background | None:
        """Begin opening the shared read-write connection on a thread; None when it is open already.

        DuckDB releases the GIL while it opens (~20-30 ms), so the caller can parse meanwhile.
        """
        with self.mutex:
            if self.ro is not None and self._ro_users == 0 and self.someone_waits():
                self.drop_shared()
            if self.ro is not None and not self.ro_writable:
                if self._ro_users:
                    raise IndexBusyError("index busy: this process is reading its read-only connection")
                self.drop_shared()
            # DuckDB releases the GIL while it creates its instance and attaches the file.
            return Background(self.open, read_only=False, attach=True) if self.ro is None else None

    def abandon_open(self, opening: Background) -> None:
        """Let go of the connection a `start_writer_open()` made, whatever came of it."""
        with suppress(BaseException):
            self.ro = opening.result()
            self.ro_writable = True
            self.drop_shared()

    @contextmanager
    def shared_writer(self, opening: Background | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """The shared connection, made read-write, kept open (idle-released) for the next refresh.

        `opening` is the `start_writer_open()` the caller began (its connection becomes the shared one).
        """
        with self.mutex:
            if opening is None:
                opening = self.start_writer_open()
            if opening is not None:
                self.ro = opening.result()
                self.ro_writable = True
            with self._use_shared() as con:
                yield con

    def close(self) -> None:
        """Close the shared connection and the in-memory instance."""
        with self.mutex:
            self.drop_shared()
            if self._engine is not None:
                self._engine.close()
                self._engine = None
