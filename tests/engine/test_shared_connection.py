"""The shared connection: the file attached to a kept DuckDB instance, opened while files parse."""

from __future__ import annotations

import time
from pathlib import Path

import duckdb
import pytest

from udm.config import load_settings
from udm.index import SqlLimits, SqlRefusedError, UdmIndex, run_readonly_sql


def test_two_index_objects_in_one_process_take_turns(workspace: Path) -> None:
    settings = load_settings(workspace)
    first = UdmIndex(settings)
    first.refresh(full=True)
    path = settings.udm_root / "01-introduction.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
    first.refresh()  # keeps the file attached read-write, idle
    assert first._ro is not None and first._ro_writable
    second = UdmIndex(settings)
    started = time.monotonic()
    with second.connect() as con:
        assert con.execute("SELECT count(*) FROM files").fetchone() == (9,)
    # The first stepped aside on seeing the waiting flag (it looks every RELEASE_POLL_S).
    assert time.monotonic() - started < 3.0
    assert first._ro is None
    second.close()
    with first.connect() as con:
        assert con.execute("SELECT count(*) FROM files").fetchone() == (9,)
    first.close()


def test_untrusted_sql_gets_its_own_restricted_connection(workspace: Path) -> None:
    settings = load_settings(workspace)
    index = UdmIndex(settings)
    index.refresh(full=True)
    limits = SqlLimits(memory_limit_mb=300, threads=1, temp_limit_mb=100)
    with index.connect() as con:  # this thread reads through the shared engine meanwhile
        before = con.execute("SELECT current_setting('memory_limit'), current_setting('threads')").fetchone()
        # Untrusted SQL runs in the SQL worker, on a read-only connection of its own.
        result = run_readonly_sql(
            index,
            "SELECT count(*), current_setting('memory_limit'), current_setting('threads') FROM files",
            row_cap=10,
            timeout_s=5,
            limits=limits,
        )
        assert result.rows == [[9, "286.1 MiB", 1]]
        assert con.execute("SELECT count(*) FROM files").fetchone() == (9,)
        # The restricted connection cannot reach other files.
        with pytest.raises(SqlRefusedError, match=r"external|disabled|Permission"):
            run_readonly_sql(
                index,
                f"SELECT * FROM read_text('{settings.udm_root / '01-introduction.md'}')",
                row_cap=1,
                timeout_s=5,
                limits=limits,
            )
        # Its limits never reach the index's own connection.
        after = con.execute("SELECT current_setting('memory_limit'), current_setting('threads')").fetchone()
        assert after == before and after is not None and after[0] != "286.1 MiB"
    index.close()


def test_a_missing_table_never_reads_a_python_variable(workspace: Path) -> None:
    index = UdmIndex(load_settings(workspace))
    index.refresh(full=True)
    nothing_here = {"a": 1}  # noqa: F841 - the name a query below asks for
    with index.connect() as con, pytest.raises(duckdb.CatalogException):
        con.execute("SELECT * FROM nothing_here")
    with pytest.raises(SqlRefusedError, match=r"Catalog Error.*nothing_here"):
        run_readonly_sql(index, "SELECT * FROM nothing_here", row_cap=1, timeout_s=5)
    index.close()
