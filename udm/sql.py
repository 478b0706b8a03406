"""Read-only SQL over the index: one SELECT/WITH statement, a row cap, a time limit, no file access."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import duckdb

from udm.errors import UdmError
from udm.index import UdmIndex

__all__ = ["SqlRefusedError", "SqlResult", "SqlTimeoutError", "check_readonly_sql", "run_readonly_sql"]

_LEADING = re.compile(r"^(?:\s+|--[^\n]*\n?|/\*.*?\*/)*", re.DOTALL)


class SqlRefusedError(UdmError):
    """A statement that is not a single SELECT/WITH query."""


class SqlTimeoutError(UdmError):
    """A query that ran past its time limit and was interrupted."""


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


def _json_value(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    return str(value)


def run_readonly_sql(index: UdmIndex, sql: str, *, row_cap: int, timeout_s: float) -> SqlResult:
    """Run one checked query on a read-only connection, interrupted after `timeout_s`."""
    text = check_readonly_sql(sql)
    started = time.perf_counter()
    # strict: a genuinely read-only connection that cannot read other files, never the shared writer.
    with index.connect(read_only=True, strict=True) as con:
        cur = con.cursor()
        # A cursor starts with default settings: no scanning a Python variable named like a table.
        cur.execute("SET python_enable_replacements = false")
        fired = threading.Event()

        def interrupt() -> None:
            fired.set()
            cur.interrupt()

        timer = threading.Timer(timeout_s, interrupt)
        timer.daemon = True
        timer.start()
        try:
            result = cur.execute(text)
            columns = [d[0] for d in result.description] if result.description else []
            types = [str(d[1]) for d in result.description] if result.description else []
            rows = result.fetchmany(row_cap + 1)
        except duckdb.Error as exc:
            if fired.is_set():
                raise SqlTimeoutError(f"query interrupted after its {timeout_s:g} s time limit") from exc
            raise SqlRefusedError(f"query failed: {exc}") from exc
        finally:
            timer.cancel()
            cur.close()
    truncated = len(rows) > row_cap
    return SqlResult(
        columns=columns,
        rows=[[_json_value(v) for v in row] for row in rows[:row_cap]],
        truncated=truncated,
        elapsed_ms=round((time.perf_counter() - started) * 1000, 3),
        row_cap=row_cap,
        types=types,
    )
