"""Every reader of the manual's files sees the pages the index sees: its suffixes, its state folder left out."""

from __future__ import annotations

from pathlib import Path

import pytest

from udm.config import Settings, load_settings
from udm.graph.facts import documents_source, index_source
from udm.graph.model import build_graph
from udm.index import UdmIndex, manual_pages
from udm.verify.spec import inline_checks, inline_checks_from_index

PAGE = """# {title}

## Component

-   **ID:** `{comp}`

```verify
id: {check}
url: /{check}
expect: [{{exists: h1}}]
```
"""

# file -> (component ID defined there, check ID of its verify block)
SEEN = {
    "guide.md": ("COMP-001", "CHK-GUIDE"),
    "page.mdx": ("COMP-002", "CHK-MDX"),
    "notes.mdoc": ("COMP-003", "CHK-MDOC"),
}
UNSEEN = {"old.markdown": ("COMP-004", "CHK-OLD"), "state/leftover.md": ("COMP-005", "CHK-STATE")}


@pytest.fixture
def custom(tmp_path: Path) -> Settings:
    """A manual with its own suffixes (`.mdoc` in, `.markdown` out) and its state folder inside it."""
    for rel, (comp, check) in {**SEEN, **UNSEEN}.items():
        path = tmp_path / "udm" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(PAGE.format(title=rel, comp=comp, check=check), encoding="utf-8")
    return load_settings(
        tmp_path,
        root="udm",
        state_dir="udm/state",
        logs_dir="logs",
        markdown_suffixes=[".md", ".mdx", ".mdoc"],
    )


def test_manual_pages_are_the_indexed_files(custom: Settings) -> None:
    index = UdmIndex(custom)
    try:
        index.ensure_fresh()
        with index.connect(read_only=True) as con:
            indexed = [r[0] for r in con.execute("SELECT path FROM files ORDER BY path").fetchall()]
    finally:
        index.close()
    assert manual_pages(custom) == indexed == sorted(SEEN)


def test_verify_blocks_from_files_and_from_the_index_agree(custom: Settings) -> None:
    for checks, problems in (inline_checks(custom), inline_checks_from_index(custom)):
        assert problems == []
        assert {c.id: (c.source.split(":")[0], c.udm_refs) for c in checks} == {
            check: (rel, [comp]) for rel, (comp, check) in SEEN.items()
        }


def test_graph_from_documents_is_the_graph_from_the_index(custom: Settings) -> None:
    from_files = build_graph(documents_source(custom).rows())
    from_index = build_graph(index_source(custom).rows())
    ids = {n for n in from_files.g.nodes if n.startswith("COMP-")}
    assert ids == {comp for comp, _ in SEEN.values()}
    assert set(from_files.g.nodes) == set(from_index.g.nodes)
    assert set(from_files.edges()) == set(from_index.edges())
    assert documents_source(custom).fingerprint() == index_source(custom).fingerprint()


def test_suffixes_match_whatever_the_case_of_the_file_name(tmp_path: Path) -> None:
    """`README.MD` is a page as `README.md` is: the setting says suffixes are matched case-blind."""
    for rel in ("README.MD", "docs/Guide.Md", "docs/page.MDX"):
        path = tmp_path / "udm" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {rel}\n", encoding="utf-8")
    settings = load_settings(tmp_path, root="udm", state_dir="state", logs_dir="logs")
    index = UdmIndex(settings)
    try:
        index.refresh(full=True)
        with index.connect(read_only=True) as con:
            indexed = [r[0] for r in con.execute("SELECT path FROM files ORDER BY path").fetchall()]
        skipped = index.skipped_files()
    finally:
        index.close()
    assert indexed == ["README.MD", "docs/Guide.Md", "docs/page.MDX"]
    assert skipped == []
    assert sorted(manual_pages(settings)) == indexed
