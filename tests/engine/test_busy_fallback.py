"""With the index busy, the verify blocks are read from the files, and a page the index skips (not valid
UTF-8, too large) is skipped there too: listed with the index's reason, never raised."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from udm.config import Settings, load_settings
from udm.graph.facts import documents_source, index_source
from udm.graph.model import build_graph
from udm.index import UdmIndex
from udm.verify import gather_checks
from udm.verify.model import CheckProblem
from udm.verify.spec import inline_checks, inline_checks_from_index

GOOD = """# Guide

## Login

-   **ID:** `COMP-001`

```verify
id: CHK-LOGIN
url: /login
expect: [{exists: h1}]
```
"""

# A legacy page in Latin-1, holding a check the verifier cannot read: byte 13 is the 0xE9 of "Café".
LATIN = b"# Old\n\n## Caf\xe9\n\n```verify\nid: CHK-OLD\nurl: /old\n```\n"
BIG = "# Big\n\n-   **ID:** `COMP-009`\n\n" + "word " * 400 + "\n"

SKIPPED = [
    CheckProblem("big.md:1", "skipped: too large (2032 bytes > max_file_bytes 1000)"),
    CheckProblem("latin.md:3", "skipped: not valid UTF-8 (byte 13)"),
]

# Holds the index's DuckDB file read-write, as another process's refresh does.
_HOLDER = (
    "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('locked', flush=True); time.sleep(60)"
)


@pytest.fixture
def manual(tmp_path: Path) -> Settings:
    """A manual with one readable page, one not valid UTF-8 and one too large; its index built."""
    root = tmp_path / "udm"
    root.mkdir()
    (root / "guide.md").write_text(GOOD, encoding="utf-8")
    (root / "latin.md").write_bytes(LATIN)
    (root / "big.md").write_text(BIG, encoding="utf-8")
    settings = load_settings(
        tmp_path,
        root="udm",
        state_dir="state",
        logs_dir="logs",
        max_file_bytes=1000,
        index_busy_timeout_s=0.5,
    )
    index = UdmIndex(settings)
    try:
        index.refresh(full=True)
    finally:
        index.close()
    return settings


@pytest.fixture
def busy(manual: Settings) -> Iterator[None]:
    """Another process holds the index for the test's length."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(manual.state_path / "index.duckdb")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield
    finally:
        holder.kill()
        holder.wait()


def test_the_index_lists_the_pages_it_skips(manual: Settings) -> None:
    index = UdmIndex(manual)
    try:
        skipped = index.skipped_files()
    finally:
        index.close()
    assert skipped == [("big.md", SKIPPED[0].message), ("latin.md", SKIPPED[1].message)]


@pytest.mark.usefixtures("busy")
def test_busy_index_fallback_skips_undecodable_and_large_pages(manual: Settings) -> None:
    checks, problems = gather_checks(manual)
    assert [(c.id, c.udm_refs) for c in checks] == [("CHK-LOGIN", ["COMP-001"])]
    assert sorted(problems, key=lambda p: p.source) == SKIPPED


def test_index_and_files_list_the_same_skipped_pages(manual: Settings) -> None:
    for checks, problems in (inline_checks(manual), inline_checks_from_index(manual)):
        assert [c.id for c in checks] == ["CHK-LOGIN"]
        assert sorted(problems, key=lambda p: p.source) == SKIPPED


def test_graph_from_files_skips_the_pages_the_index_skips(manual: Settings) -> None:
    from_files = build_graph(documents_source(manual).rows())
    from_index = build_graph(index_source(manual).rows())
    assert "COMP-001" in from_files.g.nodes
    assert "COMP-009" not in from_files.g.nodes
    assert set(from_files.g.nodes) == set(from_index.g.nodes)
    assert set(from_files.edges()) == set(from_index.edges())
    assert documents_source(manual).fingerprint() == index_source(manual).fingerprint()


def test_the_query_tool_gives_the_index_reason_for_an_undecodable_page(manual: Settings) -> None:
    """udmQueryTool reads a page's text from the file: it says what the index says, not a codec message."""
    from tasks.base import ToolContext, call_tool
    from tasks.udm_query import UdmQueryTool
    from udm.index import get_query

    ctx = ToolContext(settings=manual, log=False)
    asks = ({"udm_filepath": "latin.md"}, {"query_type": "get_section_content", "udm_path_or_id": "latin.md"})
    try:
        answers = [call_tool(UdmQueryTool(), raw, ctx).envelope.data or {} for raw in asks]
    finally:
        get_query(manual).close()
    reason = "latin.md:3: not valid UTF-8 (byte 13)"
    assert [(a["status"], a["errorDetails"]) for a in answers] == [
        ("ERROR_PARSE_FAILED", reason),
        ("ERROR_PARSING_UDM_SECTION", reason),
    ]
