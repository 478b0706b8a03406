"""The search index stays bounded under many small refreshes: merges finish, nothing is left behind.

Each small refresh commits one more tantivy segment. Past the merge policy's 8 segments the commit
starts a merge; a writer let go before the merge ends abandons it, which left its half-written files
in the folder for good (tantivy does not know them, so never deletes them) and one more segment for
every later search to visit.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from udm.index.search import SearchIndex

_WORDS = ["cache", "install", "graph", "zebra", "tasks", "modes", "build", "query"]
_SEGMENT_FILE = re.compile(r"([0-9a-f]{32})\.")


def _row(file: str, idx: int, title: str, content: str) -> dict[str, Any]:
    return {
        "file": file,
        "idx": idx,
        "start_line": idx + 1,
        "title": title,
        "path": title,
        "content": content,
        "start_byte": 0,
        "own_end_byte": len(content),
        "mentions": [],
        "ids": [],
    }


def _segments(folder: Path) -> tuple[set[str], set[str]]:
    """The live segments (meta.json) and the segments that have files in the folder."""
    meta = json.loads((folder / "meta.json").read_text())
    live = {seg["segment_id"].replace("-", "") for seg in meta["segments"]}
    on_disk = {m[1] for p in folder.iterdir() if (m := _SEGMENT_FILE.match(p.name))}
    return live, on_disk


def test_many_small_updates_keep_the_index_bounded(tmp_path: Path) -> None:
    folder = tmp_path / "search"
    rows = [
        _row(f"f{f}.md", k, _WORDS[(f + k) % 8], " ".join(_WORDS[(f * k + j) % 8] for j in range(9)))
        for f in range(30)
        for k in range(4)
    ]
    SearchIndex(folder).update(full=True, removed=[], rows=rows, generation=1)
    for gen in range(2, 32):
        f = f"f{gen % 30}.md"
        SearchIndex(folder).update(
            full=False, removed=[f], rows=[_row(f, 0, "quagga", f"quagga stripes {gen}")], generation=gen
        )
        live, on_disk = _segments(folder)
        assert on_disk == live, (
            f"refresh {gen} left files of segments no index holds: {sorted(on_disk - live)}"
        )
        assert len(live) <= 9, f"refresh {gen}: {len(live)} segments"
    index = SearchIndex(folder)
    assert index.generation() == 31
    # Every edited file holds its one new section, found; the replaced sections are gone.
    assert {h.file for h in index.search("quagga", 100)} == {f"f{i}.md" for i in range(30)}
    assert len(index.search("quagga", 100)) == 30
