"""Where the graph's rows come from: parsed documents of the manual (the index stores the same facts)."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from typing import Any

from udm.graph.model import GraphRows, kind_of_id, section_node_id
from udm.graph.rows import (
    check_items,
    check_row,
    component_row,
    field_lines,
    id_row,
    link_row,
    mode_row,
    section_row,
    task_row,
    tool_row,
)
from udm.markdown import Document

__all__ = ["rows_from_documents"]

_TOOL_HEADING = re.compile(r"\bTool:\s*`?([A-Za-z_][\w]*)`?")


def _link_file(doc: Document, target: str, kind: str) -> tuple[str | None, str | None]:
    """The file (relative to the manual's root) and anchor a link in `doc` points at."""
    if kind == "anchor":
        return None, target[1:]
    if kind != "internal":
        return None, None
    file, _, anchor = target.partition("#")
    path = posixpath.normpath(posixpath.join(posixpath.dirname(doc.path), file)) if file else doc.path
    return path, anchor


def _add_sections(rows: GraphRows, doc: Document, sids: list[str], id_pattern: re.Pattern[str]) -> None:
    """A document's sections, with the tools and components their headings and field lines define."""
    for s in doc.sections:
        parent = sids[s.parent] if s.parent is not None else None
        rows.sections.append(
            section_row(doc.path, s.anchor, s.title, s.level, s.heading_start + 1, s.path, parent)
        )
        own = "".join(doc.lines[s.heading_end : s.own_end])
        tool = _TOOL_HEADING.search(s.title)
        if tool:
            fields = field_lines(own)
            name = fields.get("name", tool.group(1)).strip('"` ')
            description = fields.get("description", "").strip('"` ') or None
            rows.tools.append(tool_row(name, description, doc.path, s.heading_start + 1, sids[s.index]))
        for ident in s.ids:
            if kind_of_id(ident) == "component":
                rows.components.append(component_row(ident, s.title, own, id_pattern))


def _add_blocks(rows: GraphRows, doc: Document, sids: list[str]) -> None:
    """A document's data blocks: checks from ```verify blocks, tasks and modes from the others."""
    for block in doc.blocks:
        section = sids[block.section] if block.section is not None else None
        data: Any = block.data
        if block.lang == "verify":
            rows.checks.extend(check_row(c, doc.path, block.start + 1, section) for c in check_items(data))
            continue
        if not isinstance(data, dict):
            continue
        ident = str(data.get("id") or data.get("task_id") or data.get("mode_id") or "")
        kind = kind_of_id(ident) if ident else ""
        if kind == "task":
            rows.tasks.append(task_row(ident, data, doc.path, block.start + 1, section))
        elif kind == "mode":
            rows.modes.append(mode_row(ident, data.get("name") or data.get("title"), data.get("tools")))


def rows_from_documents(docs: Iterable[Document], id_pattern: re.Pattern[str]) -> GraphRows:
    """Graph rows from parsed documents; `id_pattern` recognises the manual's IDs in field lines."""
    rows = GraphRows()
    for doc in docs:
        rows.files.append({"path": doc.path, "hash": doc.content_hash})
        sids = [section_node_id(doc.path, s.anchor) for s in doc.sections]
        _add_sections(rows, doc, sids, id_pattern)
        for occurrences, definition in ((doc.id_defs, True), (doc.id_refs, False)):
            for occ in occurrences:
                section = sids[occ.section] if occ.section is not None else None
                rows.ids.append(id_row(occ.id, doc.path, occ.line + 1, section, definition=definition))
        for link in doc.links:
            if link.section is not None:
                target_file, fragment = _link_file(doc, link.target, link.kind)
                rows.links.append(
                    link_row(
                        doc.path,
                        sids[link.section],
                        link.target,
                        link.kind,
                        link.line + 1,
                        target_file,
                        fragment,
                    )
                )
        _add_blocks(rows, doc, sids)
    return rows
