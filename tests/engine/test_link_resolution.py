"""Link resolution has one implementation (udm.index.resolve): small refreshes, bulk loads and the full
build leave the same verdicts, whichever way the anchors are looked up."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import udm.index.parse as parse_module
import udm.index.resolve as resolve_module
from udm.config import load_settings
from udm.index import UdmIndex

PAGES = ["a.md", "b.md", "sub/c.md", "sub/d.md"]
ANCHORS = ["intro", "setup", "usage"]
TARGETS = [
    *PAGES,
    "../b.md",
    "c.md",
    "missing.md",
    "sub/",
    "#intro",
    "#usage",
    *(f"{p}#{a}" for p in ("a.md", "b.md", "sub/c.md", "../a.md", "missing.md") for a in ANCHORS),
    "https://example.com/x",
]

# One page: whether it exists, its headings, and the links it holds.
PAGE = st.tuples(
    st.booleans(),
    st.lists(st.sampled_from(ANCHORS), max_size=3, unique=True),
    st.lists(st.sampled_from(TARGETS), max_size=4),
)
MANUAL = st.fixed_dictionaries(dict.fromkeys(PAGES, PAGE))


def _write(root: Path, manual: dict[str, Any]) -> None:
    for rel, (present, headings, links) in manual.items():
        path = root / rel
        if not present:
            path.unlink(missing_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [f"# Page {rel}", ""]
        for heading in headings:
            lines += [f"## {heading.title()}", "", "Text.", ""]
        lines += [f"See [{t}]({t})." for t in links]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _links(index: UdmIndex) -> list[tuple[Any, ...]]:
    with index.connect() as con:
        return sorted(
            con.execute(
                "SELECT file, line, target, kind, target_file, fragment, resolved FROM links"
            ).fetchall(),
            key=repr,
        )


def _full_build(project: Path, state: str) -> list[tuple[Any, ...]]:
    index = UdmIndex(load_settings(cwd=project, root=project / "docs", state_dir=project / state))
    try:
        index.refresh(full=True)
        return _links(index)
    finally:
        index.close()


@settings(max_examples=6, deadline=None)
@given(MANUAL, st.lists(MANUAL, min_size=1, max_size=2))
def test_small_refreshes_resolve_links_as_a_full_build(
    first: dict[str, Any], edits: list[dict[str, Any]]
) -> None:
    project = Path(tempfile.mkdtemp(prefix="udm-links-"))
    try:
        root = project / "docs"
        root.mkdir()
        _write(root, first)
        index = UdmIndex(load_settings(cwd=project, root=root, state_dir=project / "state"))
        try:
            index.refresh(full=True)
            for step, manual in enumerate(edits):
                _write(root, manual)
                index.ensure_fresh()
                assert _links(index) == _full_build(project, f"state-full-{step}"), step
        finally:
            index.close()
    finally:
        shutil.rmtree(project, ignore_errors=True)


@pytest.mark.parametrize("point_files", [0, 10_000])
def test_anchor_lookups_by_point_queries_or_semi_join_agree(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, point_files: int
) -> None:
    """Both ways of asking which anchors exist, in a full build and in a bulk load of changed files."""
    root = workspace / "docs" / "udm"
    expected = _full_build_of(workspace, "state-expected")
    monkeypatch.setattr(resolve_module, "_POINT_FILES", point_files)
    assert _full_build_of(workspace, "state-other") == expected
    # A bulk load (every change goes the bulk way): a heading other files link to is renamed.
    monkeypatch.setattr(parse_module, "PARALLEL_MIN_BYTES", 0)
    index = UdmIndex(load_settings(cwd=workspace, root=root, state_dir=workspace / "state-bulk"))
    try:
        index.refresh(full=True)
        page = next(p for p in sorted(root.rglob("*.md")) if "\n## " in p.read_text(encoding="utf-8"))
        text = page.read_text(encoding="utf-8")
        page.write_text(text.replace("\n## ", "\n## Renamed ", 1), encoding="utf-8")
        stats = index.refresh()
        assert stats.changed_files is None  # it went the bulk way
        assert _links(index) == _full_build_of(workspace, "state-after")
    finally:
        index.close()


def _full_build_of(workspace: Path, state: str) -> list[tuple[Any, ...]]:
    index = UdmIndex(load_settings(cwd=workspace, state_dir=workspace / state))
    try:
        index.refresh(full=True)
        return _links(index)
    finally:
        index.close()
