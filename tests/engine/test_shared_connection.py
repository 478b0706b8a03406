"""The shared connection: the file attached to a kept DuckDB instance, opened while files parse."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

import udm.index as index_module
from udm.config import load_settings
from udm.extract import TABLE_COLUMNS
from udm.index import UdmIndex
from udm.sql import SqlRefusedError, run_readonly_sql


def _rows(index: UdmIndex) -> dict[str, list[tuple[Any, ...]]]:
    out: dict[str, list[tuple[Any, ...]]] = {}
    with index.connect() as con:
        for table, cols in TABLE_COLUMNS.items():
            names = ", ".join(name for name, _ in cols)
            out[table] = sorted(con.execute(f"SELECT {names} FROM {table}").fetchall(), key=repr)
        out["files"] = sorted(
            con.execute("SELECT path, content_hash, size, parser, tables FROM files").fetchall()
        )
    return out


def _full(workspace: Path, name: str) -> dict[str, list[tuple[Any, ...]]]:
    other = UdmIndex(load_settings(workspace, state_dir=str(workspace / name)))
    try:
        other.refresh(full=True)
        return _rows(other)
    finally:
        other.close()


def test_a_small_refresh_clears_the_tables_a_file_held_and_fills_new_ones(workspace: Path) -> None:
    settings = load_settings(workspace)
    index = UdmIndex(settings)
    index.refresh(full=True)
    modes = settings.udm_root / "04-modes.md"
    with index.connect() as con:
        held = con.execute("SELECT tables FROM files WHERE path = '04-modes.md'").fetchone()
        assert held is not None and "modes" in held[0] and "tasks" not in held[0]
        count = con.execute("SELECT count(*) FROM modes WHERE file = '04-modes.md'").fetchone()
        assert count is not None and count[0] > 0
    # Every mode definition goes; a task block arrives in a file that had none.
    modes.write_text(
        "# Modes\n\nNo modes any more.\n\n```yaml\ntask_id: TASK-P9-M9.9-T999\ntitle: New task\n"
        "status: todo\n```\n",
        encoding="utf-8",
    )
    stats = index.refresh()
    assert stats.parsed == 1
    with index.connect() as con:
        assert con.execute("SELECT count(*) FROM modes WHERE file = '04-modes.md'").fetchone() == (0,)
        assert con.execute("SELECT id FROM tasks WHERE file = '04-modes.md'").fetchall() == [
            ("TASK-P9-M9.9-T999",)
        ]
        held = con.execute("SELECT tables FROM files WHERE path = '04-modes.md'").fetchone()
        assert held is not None and "modes" not in held[0] and "tasks" in held[0]
    assert _rows(index) == _full(workspace, "state-full")
    index.close()


def test_a_reopened_writer_uses_the_files_parsed_while_it_opened(workspace: Path, monkeypatch: Any) -> None:
    settings = load_settings(workspace)
    index = UdmIndex(settings)
    index.refresh(full=True)
    index.refresh()  # a small refresh: the process now knows the files table
    calls: list[list[str]] = []
    real = index_module._parse_in_memory

    def counting(root: str, relpaths: list[str], patterns: list[str]) -> Any:
        calls.append(list(relpaths))
        return real(root, relpaths, patterns)

    monkeypatch.setattr(index_module, "_parse_in_memory", counting)
    path = settings.udm_root / "01-introduction.md"
    path.write_text(path.read_text(encoding="utf-8") + "\n## Added\n\nMentions COMP-001.\n", encoding="utf-8")
    index._drop_ro()  # as when another process came in between
    stats = index.refresh()
    # Parsed once, ahead, while the connection was being made; the refresh took that parse.
    assert calls == [["01-introduction.md"]] and stats.parsed == 1
    assert _rows(index) == _full(workspace, "state-full-1")

    # A guess that turns out wrong (same bytes, new mtime: nothing to parse) is dropped, not loaded.
    calls.clear()
    index._drop_ro()
    time.sleep(0.01)
    path.touch()
    stats = index.refresh()
    assert calls[0] == ["01-introduction.md"] and not any(calls[1:])
    assert stats.parsed == 0 and stats.touched == 1
    assert _rows(index) == _full(workspace, "state-full-2")
    index.close()


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
    with index.connect() as con:  # this thread reads through the shared engine meanwhile
        assert not index._ro_strict
        result = run_readonly_sql(index, "SELECT count(*) FROM files", row_cap=10, timeout_s=5)
        assert result.rows == [[9]]
        assert con.execute("SELECT count(*) FROM files").fetchone() == (9,)
        # The restricted connection cannot reach other files.
        with pytest.raises(SqlRefusedError, match=r"external|disabled|Permission"):
            run_readonly_sql(
                index,
                f"SELECT * FROM read_text('{settings.udm_root / '01-introduction.md'}')",
                row_cap=1,
                timeout_s=5,
            )
    # Idle: the shared connection itself becomes the restricted one.
    run_readonly_sql(index, "SELECT 1", row_cap=1, timeout_s=5)
    assert index._ro_strict
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


def test_a_refresh_in_another_thread_waits_for_the_mutex(workspace: Path) -> None:
    settings = load_settings(workspace)
    index = UdmIndex(settings)
    index.refresh(full=True)
    path = settings.udm_root / "01-introduction.md"
    errors: list[BaseException] = []

    def edit_and_refresh(n: int) -> None:
        try:
            index.refresh()
        except BaseException as exc:  # reported below
            errors.append(exc)

    for n in range(3):
        path.write_text(path.read_text(encoding="utf-8") + f"\nLine {n}.\n", encoding="utf-8")
        threads = [threading.Thread(target=edit_and_refresh, args=(n,)) for _ in range(2)]
        for t in threads:
            t.start()
        with index.connect() as con:
            con.execute("SELECT count(*) FROM sections").fetchone()
        for t in threads:
            t.join()
    assert not errors
    assert _rows(index) == _full(workspace, "state-full")
    index.close()
