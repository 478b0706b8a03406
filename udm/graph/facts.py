"""The graph's source of facts: the DuckDB index (kept fresh first), or the Markdown files directly.

`index_source` is the default: the fingerprint is a digest of the index's `files` table (path and
content hash per file), recomputed only when the index's generation moved, and the rows are read from
its tables in bulk. `documents_source` parses the files itself; it serves as a cross-check in tests.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import udm.graph.rows as shape
from udm.config import Settings
from udm.graph.model import GRAPH_SCHEMA_VERSION, GraphRows, section_node_id
from udm.graph.source import rows_from_documents
from udm.index import manual_documents, manual_pages, read_page

if TYPE_CHECKING:
    from udm.graph.store import GraphSource
    from udm.index import PageRead

__all__ = ["documents_source", "index_source", "rows_from_index"]


def _pattern(settings: Settings) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in settings.id_patterns))


def _digest(pairs: list[tuple[str, str]]) -> str:
    h = hashlib.sha256(GRAPH_SCHEMA_VERSION.encode())
    for path, content_hash in sorted(pairs):
        h.update(f"{path}\0{content_hash}\n".encode())
    return h.hexdigest()[:20]


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def rows_from_index(con: Any, id_pattern: re.Pattern[str]) -> GraphRows:
    """Graph rows read from an open index connection (DuckDB), every table in one bulk query."""
    rows = GraphRows()
    rows.files = [
        {"path": p, "hash": h} for p, h in con.execute("SELECT path, content_hash FROM files").fetchall()
    ]
    sid = _add_sections(rows, con, id_pattern)
    for ident, kind, file, line, section in con.execute(
        "SELECT id, kind, file, line, section FROM ids"
    ).fetchall():
        rows.ids.append(shape.id_row(ident, file, line, sid(file, section), definition=kind == "def"))
    for ident, title, status, phase, milestone, mode, deps, file, line, section in con.execute(
        "SELECT id, title, status, phase, milestone, mode, depends_on, file, line, section FROM tasks"
    ).fetchall():
        fields = {"title": title, "status": status, "phase": phase, "milestone": milestone, "mode": mode}
        fields["depends_on"] = list(deps or [])
        rows.tasks.append(shape.task_row(ident, fields, file, line, sid(file, section)))
    for ident, name, tools in con.execute(
        "SELECT id, name, json_extract(definition, '$.tools') FROM modes"
    ).fetchall():
        listed = _json(tools)
        rows.modes.append(shape.mode_row(ident, name, listed if isinstance(listed, list) else []))
    for name, description, file, line, section in con.execute(
        "SELECT name, description, file, line, section FROM tools"
    ).fetchall():
        rows.tools.append(shape.tool_row(name, description, file, line, sid(file, section)))
    for file, line, section, target, kind, target_file, fragment in con.execute(
        "SELECT file, line, section, target, kind, target_file, fragment FROM links"
    ).fetchall():
        rows.links.append(shape.link_row(file, sid(file, section), target, kind, line, target_file, fragment))
    for file, section, start_line, data in con.execute(
        "SELECT file, section, start_line, data FROM blocks WHERE lang = 'verify' AND data IS NOT NULL"
    ).fetchall():
        rows.checks.extend(
            shape.check_row(c, file, start_line, sid(file, section)) for c in shape.check_items(_json(data))
        )
    return rows


def _add_sections(
    rows: GraphRows, con: Any, id_pattern: re.Pattern[str]
) -> Callable[[str, int | None], str | None]:
    """The index's sections (and the components they define); returns the (file, idx) -> node ID map."""
    anchors: dict[tuple[str, int], str] = {}
    section_rows = con.execute(
        "SELECT file, idx, level, title, path, anchor, start_line, parent, "
        "CASE WHEN len(list_filter(ids, lambda x: x LIKE 'COMP-%')) > 0 THEN content END, ids "
        "FROM sections ORDER BY file, idx"
    ).fetchall()
    for file, idx, _level, _title, _path, anchor, *_ in section_rows:
        anchors[(file, idx)] = section_node_id(file, anchor)

    def sid(file: str, idx: int | None) -> str | None:
        return anchors.get((file, idx)) if idx is not None else None

    for file, _idx, level, title, path, anchor, start_line, parent, content, ids in section_rows:
        rows.sections.append(
            shape.section_row(file, anchor, title, level, start_line, path, sid(file, parent))
        )
        if content is not None:
            for ident in ids or []:
                if ident.startswith("COMP-"):
                    rows.components.append(shape.component_row(ident, title, content, id_pattern))
    return sid


_SOURCES: dict[tuple[str, str, tuple[str, ...]], GraphSource] = {}
_SOURCES_LOCK = threading.Lock()


def index_source(settings: Settings) -> GraphSource:
    """The index as the graph's source: refreshed before each use, fingerprinted by file hashes."""
    key = (str(settings.udm_root), str(settings.state_path), tuple(settings.id_patterns))
    with _SOURCES_LOCK:
        if key not in _SOURCES:
            _SOURCES[key] = _make_index_source(settings)
        return _SOURCES[key]


def _make_index_source(settings: Settings) -> GraphSource:
    from udm.graph.store import GraphSource
    from udm.index import get_query

    query = get_query(settings)
    pattern = _pattern(settings)
    memo: dict[str, Any] = {"generation": None, "fingerprint": None}
    lock = threading.Lock()

    def fingerprint() -> str:
        query.fresh()
        with lock:
            generation = query.index.generation
            if memo["generation"] != generation or memo["fingerprint"] is None:
                with query.index.connect(read_only=True) as con:
                    pairs = con.execute("SELECT path, content_hash FROM files").fetchall()
                memo.update(generation=generation, fingerprint=_digest([(p, h) for p, h in pairs]))
            return str(memo["fingerprint"])

    def rows() -> GraphRows:
        with query.index.connect(read_only=True) as con:
            return rows_from_index(con, pattern)

    return GraphSource(fingerprint=fingerprint, rows=rows)


def documents_source(settings: Settings) -> GraphSource:
    """A source that parses the manual's Markdown files directly, without the index.

    Pages are read as the index reads them: one it skips (too large, not valid UTF-8) adds no facts
    and counts in the fingerprint as the index's `files` row does (an unreadable one not at all).
    """
    from udm.graph.store import GraphSource

    root = str(settings.udm_root)
    pattern = _pattern(settings)

    def fingerprint() -> str:
        pages = ((rel, read_page(root, rel, settings.max_file_bytes)) for rel in manual_pages(settings))
        return _digest([(rel, page.digest) for rel, page in pages if page.st is not None])

    def rows() -> GraphRows:
        skipped: list[tuple[str, PageRead]] = []
        rows = rows_from_documents(list(manual_documents(settings, skipped)), pattern)
        # The index keeps a files row (no facts) for a page it skips but could read.
        rows.files += [{"path": rel, "hash": page.digest} for rel, page in skipped if page.st is not None]
        return rows

    return GraphSource(fingerprint=fingerprint, rows=rows)
