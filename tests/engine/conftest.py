"""Engine fixtures: a settings object over a copy of a UDM folder, and a query tool context."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tasks.base import ToolContext, always_approve
from udm.config import Settings, load_settings
from udm.index import UdmIndex, UdmQuery
from udm.markdown import parse_document

GOLDEN = Path(__file__).resolve().parent / "golden"


def write_tree(root: Path, files: dict[str, str]) -> None:
    """Write each (relative path, text) under `root`, making folders as needed."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def site_settings(root: Path, files: dict[str, str]) -> Settings:
    """The settings of a manual at `root` holding `files` (written first), its state folder inside it."""
    write_tree(root, files)
    return load_settings(cwd=root, root=root, state_dir=root / ".udm-state")


def cpu_seconds(fn: Callable[[], object], runs: int = 1) -> float:
    """The least CPU time this thread spent in `fn` over `runs` calls.

    Wall time counts the other test workers' load too: a ratio of two wall times taken seconds apart
    under a busy suite once read 25x for 8x the input. The thread's own CPU time does not wait for them.
    """
    best = float("inf")
    for _ in range(runs):
        started = time.thread_time()
        fn()
        best = min(best, time.thread_time() - started)
    return best


def parse_seconds(text: str, *, autorefs: bool = False, runs: int = 3) -> float:
    """The least CPU time of `runs` parses of `text` with its links (for linear-time tests)."""
    return cpu_seconds(lambda: parse_document(text, "x.md", autorefs=autorefs).links, runs)


def index_rows(settings: Settings, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    """The rows of one query over the index, brought up to date first."""
    index = UdmIndex(settings)
    try:
        index.ensure_fresh()
        with index.connect() as con:
            return con.execute(sql, params or []).fetchall()
    finally:
        index.close()


def link_verdicts(settings: Settings) -> dict[tuple[str, str], bool | None]:
    """Each indexed link's (file, target) and whether it resolved, with the index brought up to date."""
    rows = index_rows(settings, "SELECT file, target, resolved FROM links")
    return {(f, t): r for f, t, r in rows}


def page_verdicts(settings: Settings, page: str) -> dict[str, bool | None]:
    """Each link target of one page and whether it resolved (see `link_verdicts`)."""
    return {target: ok for (file, target), ok in link_verdicts(settings).items() if file == page}


# A Docsify page: its options are set inline and Docsify is loaded from a CDN.
DOCSIFY_PAGE = (
    '<html><body><div id="app"></div><script>{}</script>'
    '<script src="//cdn.jsdelivr.net/npm/docsify@4"></script></body></html>\n'
)


def docsify_site(tmp_path: Path, options: str, files: dict[str, str]) -> Path:
    """A Docsify site in `tmp_path/docs` (a git repository at `tmp_path`) with these options and files."""
    write_tree(tmp_path, {"docs/index.html": DOCSIFY_PAGE.format(f"window.$docsify = {options};"), **files})
    (tmp_path / ".git").mkdir(exist_ok=True)
    return tmp_path / "docs"


def root_verdicts(root: Path, page: str, project: Path | None = None) -> dict[str, bool | None]:
    """`page_verdicts` of a manual at `root`, its project `project` (the root's parent by default)."""
    project = project or root.parent
    return page_verdicts(load_settings(cwd=project, root=root, state_dir=project / ".st"), page)


@pytest.fixture
def query(settings: Settings) -> Iterator[UdmQuery]:
    """A query object over the sample UDM workspace (closed afterwards)."""
    q = UdmQuery(settings)
    yield q
    q.close()


@pytest.fixture
def bad_settings(tmp_path: Path) -> Settings:
    """Settings over a copy of the golden UDM that breaks every lint rule."""
    shutil.copytree(GOLDEN / "bad_udm", tmp_path / "udm")
    return load_settings(tmp_path, root="udm", state_dir="state", logs_dir="logs")


@pytest.fixture
def qctx(settings: Settings) -> ToolContext:
    """A tool context over the sample UDM that does not log."""
    return ToolContext(settings=settings, approver=always_approve, log=False)
