"""Where the graph's rows come from: parsed documents of the manual (the index stores the same facts)."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from typing import Any

from udm.graph.model import GraphRows, kind_of_id, section_node_id
from udm.markdown import Document

__all__ = ["check_items", "check_row", "component_row", "field_lines", "rows_from_documents"]

# `- **OwnerRooMode:** `ROO-MODE-X``, `- **Dependencies:** `COMP-002`, `COMP-004``
_FIELD_LINE = re.compile(r"^\s*(?:[-*+]\s+)?\*\*`?([A-Za-z][\w ]*?)`?:?\*\*:?\s*(.*)$")
_TOOL_HEADING = re.compile(r"\bTool:\s*`?([A-Za-z_][\w]*)`?")
_OWNER_FIELDS = re.compile(r"^owner", re.IGNORECASE)
_DEPENDENCY_FIELDS = re.compile(r"^(dependencies|depends[ _]on)$", re.IGNORECASE)


def _section_ids(doc: Document) -> list[str]:
    return [section_node_id(doc.path, s.anchor) for s in doc.sections]


def _fields(doc: Document, start: int, end: int) -> dict[str, str]:
    return field_lines("".join(doc.lines[start:end]))


def field_lines(text: str) -> dict[str, str]:
    """`- **Name:** value` field lines of a section's text, first occurrence of each name."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        match = _FIELD_LINE.match(line)
        if match:
            out.setdefault(match.group(1).strip(), match.group(2).strip())
    return out


def component_row(ident: str, title: str, own_text: str, id_pattern: re.Pattern[str]) -> dict[str, Any]:
    """A component's row from its section: title, owner mode(s) and dependencies from its field lines."""
    fields = field_lines(own_text)
    owner = next((v for k, v in fields.items() if _OWNER_FIELDS.match(k)), "")
    deps = next((v for k, v in fields.items() if _DEPENDENCY_FIELDS.match(k)), "")
    return {
        "id": ident,
        "title": re.sub(r"^[\d.]+\s*(Component:\s*)?", "", title),
        "owner": _ids_in(owner, id_pattern),
        "depends_on": [d for d in _ids_in(deps, id_pattern) if d != ident],
    }


def check_items(data: Any) -> list[dict[str, Any]]:
    """The checks of a ```verify block: one check, a list of them, or {checks: [...]} like a spec file."""
    if isinstance(data, dict) and isinstance(data.get("checks"), list):
        return [c for c in data["checks"] if isinstance(c, dict) and c.get("id")]
    if isinstance(data, list):
        return [c for c in data if isinstance(c, dict) and c.get("id")]
    return [data] if isinstance(data, dict) and data.get("id") else []


def check_row(check: dict[str, Any], file: str, line: int, section: str | None) -> dict[str, Any]:
    """A check's row: its id, title, URL and the IDs or sections whose claim it tests."""
    refs = check.get("udm_refs") or []
    return {
        "id": str(check["id"]),
        "title": check.get("title") or check.get("name") or check.get("description"),
        "url": check.get("url"),
        "file": file,
        "line": line,
        "section": section,
        "refs": [str(r) for r in refs] if isinstance(refs, list) else [str(refs)],
    }


def _ids_in(text: str, pattern: re.Pattern[str]) -> list[str]:
    return list(dict.fromkeys(pattern.findall(text)))


def _resolve_link(doc: Document, target: str, kind: str) -> str | None:
    if kind == "anchor":
        return section_node_id(doc.path, target[1:])
    if kind != "internal":
        return None
    file, _, anchor = target.partition("#")
    base = posixpath.dirname(doc.path)
    path = posixpath.normpath(posixpath.join(base, file)) if file else doc.path
    return section_node_id(path, anchor) if anchor else path


def rows_from_documents(docs: Iterable[Document], id_pattern: re.Pattern[str]) -> GraphRows:
    """Graph rows from parsed documents; `id_pattern` recognises the manual's IDs in field lines."""
    rows = GraphRows()
    for doc in docs:
        rows.files.append({"path": doc.path, "hash": doc.content_hash})
        sids = _section_ids(doc)
        for s in doc.sections:
            rows.sections.append(
                {
                    "file": doc.path,
                    "anchor": s.anchor,
                    "title": s.title,
                    "level": s.level,
                    "line": s.heading_start + 1,
                    "path": s.path,
                    "parent": sids[s.parent] if s.parent is not None else None,
                }
            )
            tool = _TOOL_HEADING.search(s.title)
            if tool:
                fields = _fields(doc, s.heading_end, s.own_end)
                rows.tools.append(
                    {
                        "id": fields.get("name", tool.group(1)).strip('"` '),
                        "description": fields.get("description", "").strip('"` ') or None,
                        "file": doc.path,
                        "line": s.heading_start + 1,
                        "section": sids[s.index],
                    }
                )
            for ident in s.ids:
                if kind_of_id(ident) == "component":
                    own = "".join(doc.lines[s.heading_end : s.own_end])
                    rows.components.append(component_row(ident, s.title, own, id_pattern))
        for occ in doc.id_defs:
            rows.ids.append(
                {
                    "id": occ.id,
                    "file": doc.path,
                    "line": occ.line + 1,
                    "section": sids[occ.section] if occ.section is not None else None,
                    "role": "definition",
                }
            )
        for occ in doc.id_refs:
            rows.ids.append(
                {
                    "id": occ.id,
                    "file": doc.path,
                    "line": occ.line + 1,
                    "section": sids[occ.section] if occ.section is not None else None,
                    "role": "reference",
                }
            )
        for link in doc.links:
            if link.section is None:
                continue
            rows.links.append(
                {
                    "section": sids[link.section],
                    "target": link.target,
                    "kind": link.kind,
                    "line": link.line + 1,
                    "target_section": _resolve_link(doc, link.target, link.kind),
                }
            )
        for block in doc.blocks:
            section = sids[block.section] if block.section is not None else None
            data = block.data
            if block.lang == "verify":
                rows.checks.extend(
                    check_row(c, doc.path, block.start + 1, section) for c in check_items(data)
                )
                continue
            if not isinstance(data, dict):
                continue
            ident = str(data.get("id") or data.get("task_id") or data.get("mode_id") or "")
            kind = kind_of_id(ident) if ident else ""
            if kind == "task":
                rows.tasks.append(
                    {
                        "id": ident,
                        "title": data.get("title"),
                        "status": data.get("status"),
                        "phase": data.get("phase"),
                        "milestone": data.get("milestone"),
                        "mode": data.get("mode"),
                        "depends_on": data.get("depends_on") or [],
                        "file": doc.path,
                        "line": block.start + 1,
                        "section": section,
                    }
                )
            elif kind == "mode":
                rows.modes.append(
                    {"id": ident, "title": data.get("name") or data.get("title"), "tools": data.get("tools")}
                )
    return rows
