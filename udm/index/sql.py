"""Read-only SQL over the index: one SELECT/WITH statement, a row cap, time/memory/thread/temp limits, no file access.

The query runs in `udm.index.sql_worker`, a process of its own: DuckDB's interrupt is not prompt inside one
long operator and some of its allocations escape `memory_limit`, while a process can be capped
(address space) and killed on time. The index's own connections never see these settings.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from udm.errors import (
    IndexBusyError,
    SqlMemoryError,
    SqlQueryFailedError,
    SqlRefusedError,
    SqlTimeoutError,
)
from udm.index.core import UdmIndex
from udm.workerproc import LineWorker

__all__ = [
    "SqlLimits",
    "SqlMemoryError",
    "SqlRefusedError",
    "SqlResult",
    "SqlRunner",
    "SqlTimeoutError",
    "check_readonly_sql",
    "run_readonly_sql",
    "shared_runner",
]

_LEADING = re.compile(r"^(?:\s+|--[^\n]*\n?|/\*.*?\*/)*", re.DOTALL)


@dataclass
class SqlResult:
    """Columns and rows of one query; `truncated` when the row cap cut it."""

    columns: list[str]
    rows: list[list[Any]]
    truncated: bool
    elapsed_ms: float
    row_cap: int = 0
    types: list[str] = field(default_factory=list)


def check_readonly_sql(sql: str) -> str:
    """The statement, stripped, when it is exactly one SELECT/WITH query; SqlRefusedError otherwise."""
    text = sql.strip().rstrip(";").strip()
    if not text:
        raise SqlRefusedError("empty SQL")
    head = _LEADING.sub("", text, count=1).lstrip("(").lstrip()
    first = head.split(None, 1)[0].upper() if head else ""
    if first not in ("SELECT", "WITH"):
        raise SqlRefusedError(f"only SELECT or WITH queries are allowed, not {first or 'this'} statements")
    try:
        statements = duckdb.extract_statements(text)
    except duckdb.Error as exc:
        raise SqlRefusedError(f"SQL does not parse: {exc}") from exc
    if len(statements) != 1:
        raise SqlRefusedError(f"exactly one statement is allowed, got {len(statements)}")
    if statements[0].type != duckdb.StatementType.SELECT:
        raise SqlRefusedError(f"only SELECT or WITH queries are allowed, not {statements[0].type.name}")
    return text


@dataclass(frozen=True)
class SqlLimits:
    """What one query may use: DuckDB's memory limit and threads, temporary disk, and the process's address space."""

    memory_limit_mb: int = 1024
    threads: int = 2
    temp_limit_mb: int = 1024
    temp_directory: Path | None = None

    @property
    def address_space_bytes(self) -> int:
        """The worker's address-space cap: twice DuckDB's memory limit plus 1 GiB.

        DuckDB's limit governs its buffer manager only; one big value or hash table is allocated
        beside it, and the interpreter with DuckDB loaded reserves about 800 MB of address space.
        """
        return (2 * self.memory_limit_mb + 1024) * 1024 * 1024

    @classmethod
    def from_settings(cls, settings: Any) -> SqlLimits:
        """The limits the settings give (temporary files under <state>/sql-temp)."""
        return cls(
            memory_limit_mb=settings.sql_memory_limit_mb,
            threads=settings.sql_threads,
            temp_limit_mb=settings.sql_temp_limit_mb,
            temp_directory=settings.state_path / "sql-temp",
        )


class SqlRunner(LineWorker):
    """A worker process for untrusted SQL: one query at a time, killed at the time limit or past its temp cap."""

    label = "SQL"
    module = "udm.index.sql_worker"
    # How often the parent looks at the worker's spill files while a query runs.
    watch_every_s = 0.05

    def __init__(self, limits: SqlLimits) -> None:
        super().__init__()
        self.limits = limits
        self.last_peak_rss_kb = 0

    def _arguments(self) -> list[str]:
        return [str(self.limits.address_space_bytes), str(max(1, self.limits.temp_limit_mb) * 1024 * 1024)]

    def _busy_error(self, timeout_s: float) -> Exception:
        return SqlTimeoutError(f"the SQL worker stayed busy past the {timeout_s:g} s time limit")

    def _timeout_error(self, timeout_s: float) -> Exception:
        # DuckDB's interrupt is not prompt inside one long operator; ending the process is.
        return SqlTimeoutError(f"query stopped at its {timeout_s:g} s time limit")

    def _failure(self, reason: str) -> Exception:
        return SqlQueryFailedError(f"query failed: {reason}")

    def _spill_files(self, pid: int) -> list[os.DirEntry[str]]:
        """The worker's spill files (DuckDB names them after the process)."""
        folder = self.limits.temp_directory
        if folder is None:
            return []
        with contextlib.suppress(OSError):
            return [e for e in os.scandir(folder) if e.name.startswith(f"duckdb_temp_{pid}_")]
        return []

    def _watch(self, pid: int) -> Exception | None:
        total = 0
        for entry in self._spill_files(pid):
            with contextlib.suppress(OSError):
                total += entry.stat().st_blocks * 512
        if total > self.limits.temp_limit_mb * 1024 * 1024:
            return SqlMemoryError(
                f"query stopped: its temporary files passed {self.limits.temp_limit_mb} MB (sql_temp_limit_mb)"
            )
        return None

    def _after_kill(self, pid: int) -> None:
        # A killed DuckDB leaves its spill files behind.
        for entry in self._spill_files(pid):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)

    def query(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send one request; SqlTimeoutError when no answer comes within `timeout_s`."""
        response = self.exchange(request, timeout_s)
        self.last_peak_rss_kb = int(response.get("peak_rss_kb") or 0)
        return response


_RUNNERS: dict[SqlLimits, SqlRunner] = {}
_RUNNERS_LOCK = threading.Lock()


def shared_runner(limits: SqlLimits) -> SqlRunner:
    """The process's SQL worker for these limits (started on first use, stopped at exit)."""
    with _RUNNERS_LOCK:
        runner = _RUNNERS.get(limits)
        if runner is None:
            if not _RUNNERS:
                atexit.register(_close_all)
            # Limits change only with settings; keep the two newest workers, not one per settings seen.
            while len(_RUNNERS) >= 2:
                _RUNNERS.pop(next(iter(_RUNNERS))).close()
            runner = _RUNNERS[limits] = SqlRunner(limits)
        return runner


def _close_all() -> None:
    with _RUNNERS_LOCK:
        for runner in _RUNNERS.values():
            runner.close()


def run_readonly_sql(
    index: UdmIndex, sql: str, *, row_cap: int, timeout_s: float, limits: SqlLimits | None = None
) -> SqlResult:
    """Run one checked query in the SQL worker under `limits`, stopped after `timeout_s`."""
    text = check_readonly_sql(sql)
    limits = limits or SqlLimits.from_settings(index.settings)
    started = time.perf_counter()
    if not index.db_path.exists():
        index.refresh()
    if limits.temp_directory is None:
        limits = dataclasses.replace(limits, temp_directory=index.state / "sql-temp")
    temp = limits.temp_directory
    request = {
        "db": str(index.db_path),
        "sql": text,
        "row_cap": row_cap,
        "memory_limit": f"{limits.memory_limit_mb}MB",
        "threads": limits.threads,
        "temp_directory": str(temp),
        "temp_limit": f"{limits.temp_limit_mb}MB",
        "busy_timeout_s": index.settings.index_busy_timeout_s,
        # The index's own flag: a process holding the file idle lets go when it sees it.
        "writer_flag": str(index._writer_flag),
    }
    response = shared_runner(limits).query(request, timeout_s)
    if not response.get("ok"):
        kind, error = response.get("kind"), str(response.get("error"))
        if kind == "temp":
            raise SqlMemoryError(
                f"query stopped: its temporary files passed {limits.temp_limit_mb} MB (sql_temp_limit_mb): {error}"
            )
        if kind == "memory":
            raise SqlMemoryError(
                f"query stopped: out of memory under its limits ({limits.memory_limit_mb} MB for DuckDB, "
                f"sql_memory_limit_mb; {limits.address_space_bytes // (1024 * 1024)} MB of address space "
                f"for its process): {error}"
            )
        if kind == "busy":
            raise IndexBusyError(f"index busy: {error}")
        raise SqlQueryFailedError(f"query failed: {error}")
    return SqlResult(
        columns=list(response["columns"]),
        rows=list(response["rows"]),
        truncated=bool(response["truncated"]),
        elapsed_ms=round((time.perf_counter() - started) * 1000, 3),
        row_cap=row_cap,
        types=list(response["types"]),
    )
