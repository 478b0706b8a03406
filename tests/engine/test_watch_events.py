"""With inotify, a refresh stats only the files the events name; the result must equal a full scan."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from udm.config import load_settings
from udm.index import UdmIndex
from udm.index.core import scan_root


def _ops(root: Path) -> list[tuple[str, object]]:
    intro = root / "01-introduction.md"
    sub = root / "appendices"
    return [
        ("edit", lambda: intro.write_text(intro.read_text(encoding="utf-8") + "\nMore.\n", encoding="utf-8")),
        ("new file", lambda: (sub / "NEW-NOTE.md").write_text("# Note\n\nCOMP-001.\n", encoding="utf-8")),
        ("not markdown", lambda: (root / "notes.txt").write_text("x", encoding="utf-8")),
        ("hidden", lambda: (root / ".draft.md").write_text("# Draft\n", encoding="utf-8")),
        ("rename", lambda: (sub / "NEW-NOTE.md").rename(sub / "NEW-NOTE-2.md")),
        ("to txt", lambda: (sub / "NEW-NOTE-2.md").rename(sub / "NEW-NOTE-2.txt")),
        ("back", lambda: (sub / "NEW-NOTE-2.txt").rename(sub / "NEW-NOTE-3.markdown")),
        ("delete", lambda: (root / "06-config.md").unlink()),
        ("new dir", lambda: (root / "extra").mkdir()),
        ("file in new dir", lambda: (root / "extra" / "x.md").write_text("# X\n", encoding="utf-8")),
        ("move dir", lambda: (root / "extra").rename(root / "extra2")),
        ("edit in moved dir", lambda: (root / "extra2" / "x.md").write_text("# X\n\nY.\n", encoding="utf-8")),
        ("recreate old dir", lambda: (root / "extra").mkdir()),
        ("file in recreated dir", lambda: (root / "extra" / "y.md").write_text("# Y\n", encoding="utf-8")),
        (
            "edit in recreated dir",
            lambda: (root / "extra" / "y.md").write_text("# Y\n\nZ.\n", encoding="utf-8"),
        ),
        ("dir named .md", lambda: (root / "odd.md").mkdir()),
        ("replace by temp", lambda: (root / "tmp-save").write_text("# Intro\n", encoding="utf-8")),
        ("rename over", lambda: os.replace(root / "tmp-save", root / "01-introduction.md")),
    ]


def test_event_driven_refresh_matches_a_full_scan(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = load_settings(workspace)
    root = settings.udm_root
    index = UdmIndex(settings)
    index.ensure_fresh()
    if index._watcher is None:
        pytest.skip("no inotify here")
    restats: list[int] = []
    original = index._restat
    monkeypatch.setattr(
        index, "_restat", lambda known, paths: restats.append(len(paths)) or original(known, paths)
    )
    for name, op in _ops(root):
        op()  # type: ignore[operator]
        index.ensure_fresh()
        assert index._known == scan_root(root, [settings.state_path]), name
        with index.connect() as con:
            indexed = {r[0] for r in con.execute("SELECT path FROM files").fetchall()}
        assert indexed == set(index._known), name
    assert len(restats) >= 8, restats  # most steps took the event path, not a rescan
    index.close()
