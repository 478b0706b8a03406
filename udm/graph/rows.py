"""The shape of each graph row, made one way whether the facts come from the index or from the documents.

Both sources (`facts.rows_from_index` and `source.rows_from_documents`) read the same facts from
different places; the rows they produce, and how a link's target becomes a node ID, are written here once.
"""

from __future__ import annotations

import re
from typing import Any

from udm.graph.model import section_node_id

__all__ = [
    "check_items",
    "check_row",
    "component_row",
    "field_lines",
    "id_row",
    "link_row",
    "mode_row",
    "section_row",
    "task_row",
    "tool_row",
]

# `- **OwnerRooMode:** `ROO-MODE-X``, `- **Dependencies:** `COMP-002`, `COMP-004``
_FIELD_LINE = re.compile(r"^\s*(?:[-*+]\s+)?\*\*`?([A-Za-z][\w ]*?)`?:?\*\*:?\s*(.*)$")
_OWNER_FIELDS = re.compile(r"^owner", re.IGNORECASE)
_DEPENDENCY_FIELDS = re.compile(r"^(dependencies|depends[ _]on)$", re.IGNORECASE)


def section_row(
    file: str, anchor: str, title: str, level: int, line: int, path: str, parent: str | None
) -> dict[str, Any]:
    """A section's row; `parent` is the parent section's node ID (None for a top-level section)."""
    return {
        "file": file,
        "anchor": anchor,
        "title": title,
        "level": level,
        "line": line,
        "path": path,
        "parent": parent,
    }


def id_row(ident: str, file: str, line: int, section: str | None, *, definition: bool) -> dict[str, Any]:
    """An occurrence of an ID of the manual: where it stands and whether it defines the ID."""
    return {
        "id": ident,
        "file": file,
        "line": line,
        "section": section,
        "role": "definition" if definition else "reference",
    }


def task_row(ident: str, fields: dict[str, Any], file: str, line: int, section: str | None) -> dict[str, Any]:
    """A task's row from its data fields (title, status, phase, milestone, mode, depends_on)."""
    return {
        "id": ident,
        "title": fields.get("title"),
        "status": fields.get("status"),
        "phase": fields.get("phase"),
        "milestone": fields.get("milestone"),
        "mode": fields.get("mode"),
        "depends_on": fields.get("depends_on") or [],
        "file": file,
        "line": line,
        "section": section,
    }


def mode_row(ident: str, title: Any, tools: Any) -> dict[str, Any]:
    """A mode's row: its title and the tools it may call (a list, or text the builder splits)."""
    return {"id": ident, "title": title, "tools": tools}


def tool_row(name: str, description: str | None, file: str, line: int, section: str | None) -> dict[str, Any]:
    """A tool's row: its name and description, and the section that defines it."""
    return {"id": name, "description": description, "file": file, "line": line, "section": section}


def link_row(
    file: str,
    section: str | None,
    target: str,
    kind: str,
    line: int,
    target_file: str | None,
    fragment: str | None,
) -> dict[str, Any]:
    """A link's row; an anchor or internal link also names the section (or file) node it points at.

    `target_file` is the linked file relative to the manual's root and `fragment` the anchor after `#`.
    """
    if kind == "anchor":
        target_section: str | None = section_node_id(file, fragment or "")
    elif kind == "internal" and target_file:
        target_section = section_node_id(target_file, fragment) if fragment else target_file
    else:
        target_section = None
    return {
        "section": section,
        "target": target,
        "kind": kind,
        "line": line,
        "target_section": target_section,
    }


def field_lines(text: str) -> dict[str, str]:
    """`- **Name:** value` field lines of a section's text, first occurrence of each name."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        match = _FIELD_LINE.match(line)
        if match:
            out.setdefault(match.group(1).strip(), match.group(2).strip())
    return out


def _ids_in(text: str, pattern: re.Pattern[str]) -> list[str]:
    return list(dict.fromkeys(pattern.findall(text)))


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
