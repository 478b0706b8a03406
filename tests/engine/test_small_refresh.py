"""A small refresh (rows loaded from memory, links resolved in Python) leaves the index a full build would."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import udm.index.small_refresh as index_module
from udm.config import Settings, load_settings
from udm.index import UdmIndex, UdmQuery, lookup_definitions
from udm.index.extract import TABLE_COLUMNS
from udm.index.lookup import LOOKUP_NAME
from udm.index.search import SearchBuilder, SearchIndex


def _tables(index: UdmIndex) -> dict[str, list[tuple[Any, ...]]]:
    out: dict[str, list[tuple[Any, ...]]] = {}
    with index.connect() as con:
        for table, cols in TABLE_COLUMNS.items():
            names = ", ".join(name for name, _ in cols)
            out[table] = sorted(con.execute(f"SELECT {names} FROM {table}").fetchall(), key=repr)
        out["files"] = sorted(
            con.execute(
                "SELECT path, content_hash, size, mtime_ns, parser, error, tables FROM files"
            ).fetchall()
        )
    return out


def _full_build(workspace: Path, name: str) -> dict[str, list[tuple[Any, ...]]]:
    other = UdmIndex(load_settings(workspace, state_dir=str(workspace / name)))
    try:
        other.refresh(full=True)
        return _tables(other)
    finally:
        other.close()


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_small_refreshes_match_a_full_build(workspace: Path) -> None:
    settings = load_settings(workspace)
    root = settings.udm_root
    index = UdmIndex(settings)
    index.refresh(full=True)

    # A heading another file links to by anchor is renamed (that incoming link breaks); a file gains
    # links to a missing and an existing anchor elsewhere and in itself; an appendix other files link
    # to is deleted; a new file appears.
    _edit(
        root / "02-system-architecture.md", "### 2.2.4 Component: Search Index", "### 2.2.4 Component: Finder"
    )
    _edit(
        root / "04-modes.md",
        "\n## ",
        "\nSee [gone](05-roadmap.md#no-such-anchor), [roadmap](05-roadmap.md), [here](#not-here) and "
        "[config](06-config.md#section-06-configuration).\n\n## ",
    )
    (root / "appendices" / "APP-NODEJS-FS-RESEARCH-V1.md").unlink()
    (root / "07-new.md").write_text(
        "# New\n\nLinks [arch](02-system-architecture.md#224-component-finder) and [x](missing.md).\n",
        encoding="utf-8",
    )
    stats = index.refresh()
    assert (stats.parsed, stats.removed, stats.workers) == (3, 1, 1)
    assert set(stats.stages) == {"parse", "load", "lookup", "search"}
    small = _tables(index)
    assert small == _full_build(workspace, "state-full-1")
    with index.connect() as con:
        broken = con.execute(
            "SELECT file, target FROM links WHERE resolved = false AND kind <> 'external' ORDER BY 1, 2"
        ).fetchall()
    assert (
        "appendices/00-appendix-index.md",
        "APP-NODEJS-FS-RESEARCH-V1.md#app-nodejs-fs-research-v1-sandboxing-a-file-system-server",
    ) in broken
    assert (
        "appendices/APP-DUCKDB-FTS-RESEARCH-V1.md",
        "../02-system-architecture.md#224-component-search-index",
    ) in broken
    assert ("04-modes.md", "05-roadmap.md#no-such-anchor") in broken and (
        "04-modes.md",
        "#not-here",
    ) in broken
    assert ("07-new.md", "02-system-architecture.md#224-component-finder") not in broken

    # The heading comes back: the link into it resolves again, the new file's link breaks.
    _edit(
        root / "02-system-architecture.md", "### 2.2.4 Component: Finder", "### 2.2.4 Component: Search Index"
    )
    index.refresh()
    assert _tables(index) == _full_build(workspace, "state-full-2")

    # The same file again (its targets' anchors now come from this process's cache), after another
    # index object rebuilt the database (the cache must not be trusted then), and once more.
    _edit(
        root / "04-modes.md",
        "[here](#not-here)",
        "[here](#not-here-either) [cfg](06-config.md#71-mcp-servers)",
    )
    index.refresh()
    assert _tables(index) == _full_build(workspace, "state-full-3")
    _edit(root / "06-config.md", "## 7.1 MCP Servers", "## 7.1 MCP Hosts")
    other = UdmIndex(settings)
    other.refresh()  # another writer: this process's cached anchors of 06-config.md are now stale
    other.close()
    _edit(root / "04-modes.md", "[here](#not-here-either)", "[here](#not-here-either-2)")
    index.refresh()
    assert _tables(index) == _full_build(workspace, "state-full-4")
    _edit(root / "04-modes.md", "[cfg](06-config.md#71-mcp-servers)", "[cfg](06-config.md#71-mcp-hosts)")
    index.refresh()
    assert _tables(index) == _full_build(workspace, "state-full-5")
    index.close()


def test_small_refresh_keeps_the_side_indexes_in_step(workspace: Path) -> None:
    settings = load_settings(workspace)
    root = settings.udm_root
    q = UdmQuery(settings)
    q.fresh()
    path = root / "01-introduction.md"
    path.write_text(path.read_text(encoding="utf-8") + "\n## Zebra crossing\n\n- **ID:** `COMP-777`\n")
    q.fresh()
    gen = q.index.generation
    assert SearchIndex(settings.state_path / "search").generation() == gen
    assert [h.title for h in q.search("zebra crossing", 3)][:1] == ["Zebra crossing"]
    state, exclude = settings.state_path, [settings.state_path]
    found = lookup_definitions(state, root, "COMP-777", exclude)
    assert found is not None and [d["file"] for d in found] == ["01-introduction.md"]

    # The SQLite mirror misses a generation (as after a crash): the next small refresh rewrites it whole.
    con = sqlite3.connect(state / LOOKUP_NAME)
    with con:
        con.execute("UPDATE meta SET value = '-5' WHERE key = 'generation'")
        con.execute("DELETE FROM defs WHERE id = 'COMP-001'")
    con.close()
    path.write_text(path.read_text(encoding="utf-8") + "\nOne more line.\n")
    q.fresh()
    found = lookup_definitions(state, root, "COMP-001", exclude)
    assert found is not None and found, "the mirror was not rebuilt"
    # The search index misses one too: the small refresh rebuilds it instead of patching it.
    SearchIndex(state / "search").set_generation(-1)
    path.write_text(path.read_text(encoding="utf-8") + "\nQuagga stripes.\n")
    q.fresh()
    assert SearchIndex(state / "search").generation() == q.index.generation
    assert q.search("quagga", 3) and q.search("zebra", 3)
    q.close()


def test_parallel_full_build_matches_the_serial_one(workspace: Path, monkeypatch: Any) -> None:
    import udm.index.parse

    serial = _full_build(workspace, "state-serial")
    monkeypatch.setattr(udm.index.parse, "PARALLEL_MIN_BYTES", 0)
    index = UdmIndex(load_settings(workspace, state_dir=str(workspace / "state-parallel")))
    stats = index.refresh(full=True)
    assert stats.workers > 1 or (os.cpu_count() or 1) < 2
    assert _tables(index) == serial
    # The search index was built while the workers parsed: every section is in it, at this generation.
    search = SearchIndex(index.search_path, root=index.root)
    assert search.generation() == stats.generation
    with index.connect() as con:
        titles = [r[0] for r in con.execute("SELECT title FROM sections WHERE level = 2 LIMIT 5").fetchall()]
    for title in titles:
        assert title in [h.title for h in search.search(title, 50)], title
    index.close()


def test_search_builder_reports_a_failure_without_hanging(tmp_path: Path) -> None:
    builder = SearchBuilder(SearchIndex(tmp_path / "search"))
    builder.feed([str(tmp_path / "no-such-sections.json")])
    builder.feed([str(tmp_path / "nor-this.json")])  # fed after the thread failed: still no hang
    with pytest.raises(FileNotFoundError):
        builder.finish()
    builder.close()


def test_the_zstd_setting_stays_with_the_full_builds_own_connection(workspace: Path) -> None:
    # `force_compression` is global to a DuckDB instance: set on the process's shared instance by a
    # first build, it would hold for every later refresh of the process.
    index = UdmIndex(load_settings(workspace))
    index.ensure_fresh()  # a first build of a small manual: the shared connection loads it
    engine = index.conns._engine
    assert engine is not None
    assert engine.execute("SELECT current_setting('force_compression')").fetchone()[0] != "zstd"
    index.refresh(full=True)  # its own connection, closed after
    with index.connect() as con:
        assert con.execute("SELECT current_setting('force_compression')").fetchone()[0] != "zstd"
        assert con.execute("SELECT count(*) FROM sections").fetchone()[0] > 0
    index.close()


def test_search_builder_commits_once_its_input_ends(tmp_path: Path) -> None:
    # The full build ends the input as the parse ends: tantivy commits while DuckDB loads.
    rows = [
        {
            "file": "a.md",
            "idx": 0,
            "start_line": 1,
            "title": "Alpha",
            "path": "Alpha",
            "content": "# Alpha\n",
        },
        {"file": "b.md", "idx": 0, "start_line": 1, "title": "Beta", "path": "Beta", "content": "# Beta\n"},
    ]
    name = tmp_path / "sections.0.0.json"
    name.write_text(json.dumps(rows))
    builder = SearchBuilder(SearchIndex(tmp_path / "search"))
    builder.feed([str(name)])
    builder.end_input()
    builder.end_input()  # idempotent
    builder._thread.join(timeout=60)
    assert not builder._thread.is_alive()  # committed without waiting for finish()
    builder.finish()
    assert [h.file for h in builder.index.search("beta")] == ["b.md"]


_READER = """
import sys, time
from udm.config import load_settings
from udm.index.core import UdmIndex
started = time.monotonic()
ix = UdmIndex(load_settings(sys.argv[1], index_busy_timeout_s=5))
with ix.connect() as con:
    n = con.execute("SELECT count(*) FROM files").fetchone()[0]
print(n, round(time.monotonic() - started, 3), flush=True)
ix.close()
"""


def test_an_idle_writer_lets_another_process_in(workspace: Path) -> None:
    settings = load_settings(workspace)
    q = UdmQuery(settings)
    q.fresh()
    path = settings.udm_root / "01-introduction.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
    q.fresh()  # a small refresh: this process now keeps a read-write connection, idle
    assert q.index._ro is not None and q.index._ro_writable
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-c", _READER, str(workspace)],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(repo)},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    count, waited = proc.stdout.split()
    # It raised the waiting flag; our idle connection stepped aside well before its 5 s limit.
    assert int(count) == 9 and float(waited) < 4.0
    assert q.index._ro is None
    assert q.find_by_id("COMP-001")  # and this process reopens as it needs
    q.close()


def test_patched_query_caches_equal_fresh_ones(workspace: Path, monkeypatch: Any) -> None:
    import udm.index.query

    monkeypatch.setattr(udm.index.query, "_LOAD_ALL_AFTER", 0)  # the all-sections cache from the start
    settings = load_settings(workspace)
    root = settings.udm_root
    q = UdmQuery(settings)
    assert q.find_by_id("COMP-001")
    q.section_content("05-roadmap.md", None)
    assert q._all_sections is not None
    edits = [
        ("01-introduction.md", lambda t: t + "\n## COMP-778 A new component\n\n- **ID:** `COMP-779`\n"),
        ("02-system-architecture.md", lambda t: t.replace("COMP-001", "COMP-901", 1)),
        ("07-new.md", lambda t: "# New file\n\n## RM-777 Road\n\nText.\n"),
    ]
    for name, change in edits:
        path = root / name
        path.write_text(change(path.read_text(encoding="utf-8") if path.exists() else ""), encoding="utf-8")
        q.fresh()
        assert q.index.last_refresh is not None and q.index.last_refresh.changed_files == [name]
        defs = q._definitions()
        q._section_rows(name)
        sections = dict(q._all_sections or {})
        other = UdmQuery(settings, UdmIndex(settings))
        monkeypatch.setattr(other, "_files_asked", 99)
        other.fresh()
        assert defs == other._definitions()
        other._section_rows(name)
        assert sections == other._all_sections
        other.close()
    assert [d.file for d in q.find_by_id("RM-777")] == ["07-new.md"]
    assert q.find_by_id("COMP-779") and q.find_by_id("COMP-901")
    (root / "07-new.md").unlink()
    q.fresh()
    assert not q._definitions().get("RM-777")
    q.close()


@pytest.fixture
def built(workspace: Path) -> Iterator[tuple[Settings, UdmIndex]]:
    """Settings over the workspace and an index fully built from it (closed afterwards)."""
    settings = load_settings(workspace)
    index = UdmIndex(settings)
    index.refresh(full=True)
    yield settings, index
    index.close()


def test_a_small_refresh_clears_the_tables_a_file_held_and_fills_new_ones(
    workspace: Path, built: tuple[Settings, UdmIndex]
) -> None:
    settings, index = built
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
    assert _tables(index) == _full_build(workspace, "state-full")


def test_a_reopened_writer_uses_the_files_parsed_while_it_opened(
    workspace: Path, built: tuple[Settings, UdmIndex], monkeypatch: Any
) -> None:
    settings, index = built
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
    assert _tables(index) == _full_build(workspace, "state-full-1")

    # A guess that turns out wrong (same bytes, new mtime: nothing to parse) is dropped, not loaded.
    calls.clear()
    index._drop_ro()
    time.sleep(0.01)
    path.touch()
    stats = index.refresh()
    assert calls[0] == ["01-introduction.md"] and not any(calls[1:])
    assert stats.parsed == 0 and stats.touched == 1
    assert _tables(index) == _full_build(workspace, "state-full-2")


def test_a_refresh_in_another_thread_waits_for_the_mutex(
    workspace: Path, built: tuple[Settings, UdmIndex]
) -> None:
    settings, index = built
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
    assert _tables(index) == _full_build(workspace, "state-full")
