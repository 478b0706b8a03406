"""The SQL worker process: answers JSON-line requests with read-only queries over the index file.

DuckDB's interrupt is checked between vectors, so one long operator (`list_value(range(200000000))`
builds a single value) runs on for seconds after it, and its memory is allocated outside the buffer
manager that `memory_limit` governs. Here the query runs in a process of its own, with its address
space capped (`RLIMIT_AS`, so any allocation past it fails as DuckDB's out-of-memory error) and
killed by the parent at the time limit. Each query opens the index read-only and closes it, so no
lock is held between queries. Only the standard library, duckdb and `udm.workerproc` (its JSON-line
loop) are imported.

Start:    python -m udm.index.sql_worker ADDRESS_SPACE_BYTES FILE_SIZE_BYTES
Request:  {"db": path, "sql": text, "row_cap": n, "memory_limit": "256MB", "threads": n,
           "temp_directory": path, "temp_limit": "1024MB", "busy_timeout_s": s, "writer_flag": path}
Response: {"ok": true, "columns": [...], "types": [...], "rows": [[...]], "truncated": bool,
           "peak_rss_kb": n}
          or {"ok": false, "kind": "memory"|"temp"|"busy"|"failed", "error": text, "peak_rss_kb": n}

DuckDB 2.0 does not hold its spill files to `max_temp_directory_size` (a hash join wrote 235 MB
with a 1 MB setting), so the worker's files are also capped by `RLIMIT_FSIZE` (a write past it fails
as "File too large", with SIGXFSZ ignored) and the parent watches the directory's total.
"""

from __future__ import annotations

import resource
import signal
import sys
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

from udm.workerproc import serve_json_lines

__all__ = ["answer", "main"]


def _json_value(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    return str(value)


def _is_lock_error(exc: Exception) -> bool:
    text = str(exc)
    return "Could not set lock" in text or "Conflicting lock" in text


def _connect(request: dict[str, Any]) -> Any:
    import duckdb

    deadline = time.monotonic() + float(request["busy_timeout_s"])
    flag = Path(request["writer_flag"])
    flagged = False
    delay = 0.01
    try:
        while True:
            try:
                # The limits are the connection's configuration from its first moment; the temp
                # directory can only be set while file access is still allowed, so it is set first.
                con = duckdb.connect(
                    request["db"],
                    read_only=True,
                    config={
                        "temp_directory": request["temp_directory"],
                        "max_temp_directory_size": request["temp_limit"],
                        "memory_limit": request["memory_limit"],
                        "threads": int(request["threads"]),
                    },
                )
                break
            except (duckdb.IOException, duckdb.ConnectionException) as exc:
                if not _is_lock_error(exc) or time.monotonic() >= deadline:
                    raise
                if not flagged:
                    # The index's protocol: a process holding an idle connection lets go when flagged.
                    with suppress(OSError):
                        flag.touch()
                    flagged = True
                time.sleep(delay)
                delay = min(delay * 2, 0.2)
    finally:
        if flagged:
            with suppress(OSError):
                flag.unlink()
    con.execute(
        "SET enable_external_access = false; SET enable_progress_bar = false; "
        "SET python_enable_replacements = false; SET lock_configuration = true"
    )
    return con


def _peak_kb() -> int:
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """Run one request and return the response object."""
    import duckdb

    try:
        con = _connect(request)
    except (duckdb.IOException, duckdb.ConnectionException) as exc:
        kind = "busy" if _is_lock_error(exc) else "failed"
        return {"ok": False, "kind": kind, "error": str(exc), "peak_rss_kb": _peak_kb()}
    except duckdb.Error as exc:
        return {"ok": False, "kind": "failed", "error": str(exc), "peak_rss_kb": _peak_kb()}
    try:
        cur = con.execute(request["sql"])
        description = cur.description or []
        rows = cur.fetchmany(int(request["row_cap"]) + 1)
        cap = int(request["row_cap"])
        return {
            "ok": True,
            "columns": [d[0] for d in description],
            "types": [str(d[1]) for d in description],
            "rows": [[_json_value(v) for v in row] for row in rows[:cap]],
            "truncated": len(rows) > cap,
            "peak_rss_kb": _peak_kb(),
        }
    except (duckdb.OutOfMemoryException, MemoryError) as exc:
        return {"ok": False, "kind": "memory", "error": str(exc).split("\n")[0], "peak_rss_kb": _peak_kb()}
    except duckdb.IOException as exc:
        kind = "temp" if "File too large" in str(exc) else "failed"
        return {"ok": False, "kind": kind, "error": str(exc), "peak_rss_kb": _peak_kb()}
    except duckdb.Error as exc:
        return {"ok": False, "kind": "failed", "error": str(exc), "peak_rss_kb": _peak_kb()}
    finally:
        con.close()


def _failed(exc: Exception) -> dict[str, Any]:
    """The response to a request that raised: out of memory, or failed naming the error."""
    if isinstance(exc, MemoryError):
        return {"ok": False, "kind": "memory", "error": "out of memory", "peak_rss_kb": _peak_kb()}
    return {"ok": False, "kind": "failed", "error": f"{type(exc).__name__}: {exc}"}


def main() -> None:
    """Cap the address space, then serve requests from stdin until it closes."""
    limit, file_limit = int(sys.argv[1]), int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))
    import duckdb  # noqa: F401 - imported once, under the cap, before the first request

    serve_json_lines(answer, _failed)


if __name__ == "__main__":
    main()
