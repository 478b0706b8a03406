"""The DuckDB index: tables, incremental refresh, deletions, never-stale answers, two processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from udm.config import Settings, load_settings
from udm.index import UdmIndex, UdmQuery

REPO = Path(__file__).resolve().parents[2]


def test_full_index_fills_every_table(settings: Settings) -> None:
    index = UdmIndex(settings)
    stats = index.refresh(full=True)
    assert stats.files == 9 and stats.parsed == 9 and not stats.errors
    with index.connect() as con:
        counts = {
            t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]  # type: ignore[index]
            for t in ("files", "sections", "blocks", "ids", "tasks", "modes", "tools", "config", "links")
        }
        assert counts["tasks"] == 46 and counts["modes"] == 7 and counts["tools"] == 5
        assert all(v > 0 for v in counts.values()), counts
        row = con.execute(
            "SELECT title, status, depends_on, file FROM tasks WHERE id = 'TASK-P0-M0.1-T002'"
        ).fetchone()
        assert row == ("Define the core tool schemas", "done", ["TASK-P0-M0.1-T001"], "05-roadmap.md")
        tool = con.execute("SELECT input_schema FROM tools WHERE name = 'fileSystemAccessTool'").fetchone()
        assert tool is not None and "filePath" in json.loads(tool[0])["properties"]
        assert con.execute("SELECT value FROM config WHERE key = 'http.timeout'").fetchone() == ("10",)
        assert con.execute("SELECT count(*) FROM links WHERE resolved = false").fetchone() == (0,)
        # Section ranges are 1-based inclusive and slice the file exactly.
        start, end, content = con.execute(
            "SELECT start_line, own_end, content FROM sections WHERE file = '04-modes.md' AND title LIKE '5.3 %'"
        ).fetchone()  # type: ignore[misc]
        lines = (settings.udm_root / "04-modes.md").read_text(encoding="utf-8").splitlines(keepends=True)
        assert "".join(lines[start - 1 : end]) == content
    index.close()


def test_incremental_refresh_parses_only_changes(settings: Settings) -> None:
    index = UdmIndex(settings)
    index.refresh(full=True)
    assert index.refresh().parsed == 0
    path = settings.udm_root / "01-introduction.md"
    path.write_text(path.read_text(encoding="utf-8") + "\n## Extra\n\nMentions COMP-001.\n", encoding="utf-8")
    os.utime(settings.udm_root / "06-config.md")  # same bytes, new mtime: no parse
    (settings.udm_root / "appendices" / "APP-DUCKDB-FTS-RESEARCH-V1.md").unlink()
    stats = index.refresh()
    assert (stats.parsed, stats.touched, stats.removed) == (1, 1, 1)
    with index.connect() as con:
        assert con.execute("SELECT count(*) FROM files").fetchone() == (8,)
        assert con.execute(
            "SELECT count(*) FROM sections WHERE file LIKE 'appendices/APP-DUCKDB%'"
        ).fetchone() == (0,)
        assert con.execute("SELECT count(*) FROM sections WHERE title = 'Extra'").fetchone() == (1,)
    index.close()


def test_queries_are_never_stale(query: UdmQuery, settings: Settings) -> None:
    assert query.config("http.timeout")["value"] == 10
    path = settings.udm_root / "06-config.md"
    path.write_text(
        path.read_text(encoding="utf-8").replace("  timeout: 10\n", "  timeout: 11\n"), encoding="utf-8"
    )
    # No refresh call: the query notices the change itself.
    assert query.config("http.timeout")["value"] == 11
    new = settings.udm_root / "07-new.md"
    new.write_text("# New\n\n- **ID:** `COMP-777`\n", encoding="utf-8")
    assert query.find_by_id("COMP-777")[0].file == "07-new.md"
    new.unlink()
    assert query.find_by_id("COMP-777") == []


def test_staleness_without_inotify(settings: Settings) -> None:
    # A second process-like object without a watcher still sees edits through the stat check.
    q = UdmQuery(settings)
    q.index._watcher = None
    assert q.task("TASK-P0-M0.1-T001")["status"] == "done"
    path = settings.udm_root / "05-roadmap.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("status: done", "status: blocked", 1), encoding="utf-8")
    q2 = UdmQuery(settings)
    assert q2.task("TASK-P0-M0.1-T001")["status"] == "blocked"
    q.close()
    q2.close()


_HOLDER = """
import sys, time
from udm.config import load_settings
from udm.index.core import UdmIndex
s = load_settings(sys.argv[1], index_busy_timeout_s=float(sys.argv[2]))
ix = UdmIndex(s)
with ix.connect(read_only=False) as con:
    print("locked", flush=True)
    time.sleep(float(sys.argv[3]))
"""


def _spawn_holder(workspace: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(workspace), "5", str(seconds)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


@pytest.mark.slow
def test_two_processes_wait_then_succeed_or_report_busy(workspace: Path) -> None:
    settings = load_settings(workspace)
    UdmIndex(settings).refresh(full=True)
    # Another process holds the write lock briefly: our query waits and then answers.
    holder = _spawn_holder(workspace, 1.0)
    q = UdmQuery(load_settings(workspace, index_busy_timeout_s=8))
    started = time.monotonic()
    assert q.task("TASK-P0-M0.1-T002")["status"] == "done"
    assert time.monotonic() - started < 8
    holder.wait(timeout=20)
    q.close()
    # It holds it longer than we wait: a clear "index busy" error after the bounded wait.
    holder = _spawn_holder(workspace, 6.0)
    impatient = UdmIndex(load_settings(workspace, index_busy_timeout_s=0.5))
    from udm.errors import IndexBusyError

    with pytest.raises(IndexBusyError, match="index busy"), impatient.connect() as con:
        con.execute("SELECT 1")
    holder.kill()
    holder.wait()
    # Nothing is corrupted: a fresh index opens and answers.
    check = UdmQuery(load_settings(workspace))
    assert check.task("TASK-P0-M0.1-T002")["status"] == "done"
    check.close()


@pytest.mark.slow
def test_concurrent_refresh_and_query_processes(workspace: Path) -> None:
    settings = load_settings(workspace)
    UdmIndex(settings).refresh(full=True)
    script = (
        "import sys\nfrom udm.config import load_settings\nfrom udm.index.query import UdmQuery\n"
        "q = UdmQuery(load_settings(sys.argv[1]))\n"
        "for i in range(8):\n"
        "    assert q.find_by_id('COMP-001'), 'lost COMP-001'\n"
        "print('ok')\n"
    )
    path = workspace / "docs" / "udm" / "01-introduction.md"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(workspace)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        for _ in range(2)
    ]
    index = UdmIndex(settings)
    for i in range(3):
        path.write_text(path.read_text(encoding="utf-8") + f"\nEdit {i}.\n", encoding="utf-8")
        index.refresh()
    index.close()
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0 and out.strip() == "ok", err


def test_section_content_by_byte_range_matches_the_document(query: UdmQuery, settings: Settings) -> None:
    from udm.markdown import load_document, section_text

    text = "# Über\n\nç — é\n\n## Ünter\n\n日本語 COMP-001\n\n## Second\n\nx\n"
    (settings.udm_root / "99-unicode.md").write_text(text, encoding="utf-8")
    doc = load_document(settings.udm_root, "99-unicode.md")
    for sec in doc.sections:
        assert query.section_content("99-unicode.md", "#" + sec.anchor) == section_text(doc, sec)
        assert query.section_content("99-unicode.md", "#" + sec.anchor, own=True) == section_text(
            doc, sec, own=True
        )
    for rel in ("05-roadmap.md", "02-system-architecture.md"):
        doc = load_document(settings.udm_root, rel)
        for sec in doc.sections[::7]:
            assert query.section_content(rel, "#" + sec.anchor) == section_text(doc, sec)
