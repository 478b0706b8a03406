"""Index rows from a document's data blocks and field lines: tasks, modes, tools and config keys."""

from __future__ import annotations

import bisect
import itertools
import posixpath
import re
from collections.abc import Iterator
from typing import Any

from udm.markdown import Block, Document, Section, block_ids, definition_line

__all__ = ["Facts", "data_rows", "is_config_file", "json_safe", "tool_section_rows"]

_TOOL_TITLE = re.compile(r"\bTool:\s*`?([A-Za-z_][\w.\-]*)`?")
_MODE_TITLE = re.compile(r"\bMode:\s*`?([A-Za-z][\w\-]*)`?")
_FIELD_LINE = re.compile(r"\s*[-*+]\s+\*\*`?([A-Za-z_][\w ]*?)`?\*\*\s*:?\s*(.*)$")


def json_safe(value: Any) -> Any:
    """YAML values made JSON-able (dates and other scalars become strings, keys strings)."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else str(value)
    if isinstance(value, dict):
        return {str(k) if not isinstance(k, str) else k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return str(value)


def is_config_file(path: str) -> bool:
    """Whether a file's data blocks are configuration (its name mentions config or settings)."""
    name = posixpath.basename(path).lower()
    return "config" in name or "settings" in name


class Facts:
    """What several tables' rows of one document need: its path, section paths and blocks' data."""

    __slots__ = ("doc", "path", "safe_data", "spath")

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.path = doc.path
        # Data first: the sections' IDs are then read from the parsed blocks instead of their text.
        self.safe_data = [json_safe(b.data) if b.data is not None else None for b in doc.blocks]
        self.spath = [s.path for s in doc.sections]

    def sp(self, idx: int | None) -> str | None:
        """The heading path of section `idx` (None outside any section)."""
        return self.spath[idx] if idx is not None else None


def _str_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list):
        return [str(v) for v in value if v is not None and not isinstance(v, (dict, list))]
    return [str(value)]


def _scalar(value: Any) -> str | None:
    return None if value is None or isinstance(value, (dict, list)) else str(value)


def _walk_dicts(data: Any) -> Iterator[dict[str, Any]]:
    if isinstance(data, dict):
        yield data
        for value in data.values():
            if isinstance(value, (dict, list)):
                yield from _walk_dicts(value)
    elif isinstance(data, list):
        for item in data:
            yield from _walk_dicts(item)


def _is_task(d: dict[str, Any]) -> bool:
    """A mapping with task_id, or an id of the TASK family, or an id plus depends_on."""
    if isinstance(d.get("task_id"), str):
        return True
    ident = d.get("id")
    if not isinstance(ident, str) or "mode_id" in d:
        return False
    return ident.startswith("TASK-") or "depends_on" in d


def _is_mode(d: dict[str, Any], section: Section | None) -> bool:
    if isinstance(d.get("mode_id"), str):
        return True
    ident = d.get("id")
    if not isinstance(ident, str) or _is_task(d):
        return False
    return ident.startswith("ROO-MODE-") or bool(section and _MODE_TITLE.search(section.title))


def _line_in(doc: Document, needle: str, start: int, end: int) -> int:
    found = definition_line(doc.lines, needle, start, end)
    return (found if found is not None else start) + 1


def _starred_lines(doc: Document) -> list[int]:
    """Ascending indices of the lines holding `**` (the only ones a field line can be)."""
    # str.find over the whole text instead of a Python loop over every line (~6x less CPU).
    text = "".join(doc.lines)
    starts = [0, *itertools.accumulate(map(len, doc.lines))]
    out: list[int] = []
    pos = text.find("**")
    while pos >= 0:
        i = bisect.bisect_right(starts, pos) - 1
        out.append(i)
        pos = text.find("**", starts[i + 1])
    return out


def _field_values(doc: Document, section: Section, starred: list[int] | None = None) -> dict[str, str]:
    """'- **`name`**: "x"' field lines of a section's own body, by lower-cased field name.

    `starred` (from `_starred_lines`) narrows the lines looked at; lines without `**` never match.
    """
    out: dict[str, str] = {}
    if starred is None:
        candidates: Any = range(section.heading_end, section.own_end)
    else:
        lo = bisect.bisect_left(starred, section.heading_end)
        candidates = starred[lo : bisect.bisect_left(starred, section.own_end, lo)]
    for i in candidates:
        line = doc.lines[i]
        if "**" not in line:
            continue
        m = _FIELD_LINE.match(line)
        if m:
            value = m.group(2).strip()
            # Values are often written as `"x"`: peel backticks and quotes alike.
            while len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`":
                value = value[1:-1].strip()
            out.setdefault(m.group(1).strip().lower().replace(" ", "_"), value)
    return out


def _schema_after(doc: Document, blocks: list[Block], words: tuple[str, ...]) -> Any:
    """The data of the first block whose preceding line names the schema (input_schema ...)."""
    for b in blocks:
        before = doc.lines[b.start - 1].lower() if b.start > 0 else ""
        if any(w in before for w in words) and b.data is not None:
            return json_safe(b.data)
    return None


def _config_rows(doc: Document, block: Block, section_path: str | None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    lines = doc.lines

    def visit(value: Any, prefix: str, search_from: int) -> None:
        if not isinstance(value, dict):
            return
        for key, child in value.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            line = search_from
            pattern = re.compile(rf"^\s*(?:-\s+)?[\"']?{re.escape(str(key))}[\"']?\s*:")
            for i in range(search_from, block.content_end):
                if pattern.match(lines[i]):
                    line = i
                    break
            rows.append(
                {
                    "key": name,
                    "value": json_safe(child),
                    "file": doc.path,
                    "line": line + 1,
                    "section": block.section,
                    "section_path": section_path,
                }
            )
            visit(child, name, line)

    visit(block.data, "", block.content_start)
    return rows


_Rows = list[dict[str, Any]]


def data_rows(facts: Facts) -> tuple[_Rows, _Rows, _Rows, _Rows, set[int]]:
    """Tasks, modes and tools defined in data blocks, config keys; and the sections holding such tools."""
    doc = facts.doc
    tasks: _Rows = []
    modes: _Rows = []
    tools: _Rows = []
    config: _Rows = []
    tool_sections: set[int] = set()
    config_file = is_config_file(facts.path)
    for b in doc.blocks:
        if b.data is None:
            continue
        if config_file and b.lang in ("yaml", "yml", "json") and not block_ids(b):
            config.extend(_config_rows(doc, b, facts.sp(b.section)))
        if b.role != "data":
            continue  # an example's `id:` or `depends_on` is illustration, not a task
        section = doc.sections[b.section] if b.section is not None else None
        for d in _walk_dicts(facts.safe_data[b.index]):
            if _is_task(d):
                tasks.append(_task_row(facts, b, d))
            elif _is_mode(d, section):
                modes.append(_mode_row(facts, b, d))
            elif isinstance(d.get("tool_id"), str) and (
                "description" in d or "input_schema" in d or "inputSchema" in d
            ):
                tools.append(_block_tool_row(facts, b, d))
                if b.section is not None:
                    tool_sections.add(b.section)
    return tasks, modes, tools, config, tool_sections


def _task_row(facts: Facts, b: Block, d: dict[str, Any]) -> dict[str, Any]:
    ident = str(d.get("task_id") or d.get("id"))
    return {
        "id": ident,
        "title": _scalar(d.get("title") or d.get("name")),
        "status": _scalar(d.get("status")),
        "phase": _scalar(d.get("phase")),
        "milestone": _scalar(d.get("milestone")),
        "mode": _scalar(d.get("mode") or d.get("mode_id")),
        "depends_on": _str_list(d.get("depends_on")),
        "file": facts.path,
        "line": _line_in(facts.doc, ident, b.content_start, b.content_end),
        "section": b.section,
        "section_path": facts.sp(b.section),
        "definition": d,
    }


def _mode_row(facts: Facts, b: Block, d: dict[str, Any]) -> dict[str, Any]:
    ident = str(d.get("mode_id") or d.get("id"))
    return {
        "id": ident,
        "name": _scalar(d.get("name")),
        "file": facts.path,
        "line": _line_in(facts.doc, ident, b.content_start, b.content_end),
        "section": b.section,
        "section_path": facts.sp(b.section),
        "definition": d,
    }


def _block_tool_row(facts: Facts, b: Block, d: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": d["tool_id"],
        "description": _scalar(d.get("description")),
        "input_schema": d.get("input_schema") or d.get("inputSchema"),
        "output_schema": d.get("output_schema") or d.get("outputSchema"),
        "file": facts.path,
        "line": b.start + 1,
        "section": b.section,
        "section_path": facts.sp(b.section),
        "definition": d,
    }


def tool_section_rows(doc: Document, skip: set[int]) -> list[dict[str, Any]]:
    """Tools written as a section: '### 2.5.1 Tool: `x`' with name/description fields and schema blocks."""
    rows: list[dict[str, Any]] = []
    starred = _starred_lines(doc)
    for s in doc.sections:
        if s.index in skip:
            continue
        fields = _field_values(doc, s, starred)
        m = _TOOL_TITLE.search(s.title)
        name = fields.get("name") or (m.group(1) if m else None)
        if not name or not (m or "input_schema" in fields or "description" in fields):
            continue
        own_blocks = [b for b in doc.blocks if b.section == s.index]
        input_schema = _schema_after(doc, own_blocks, ("input_schema", "inputschema", "input schema"))
        output_schema = _schema_after(doc, own_blocks, ("output_schema", "outputschema", "output schema"))
        definition = {
            "name": name,
            "description": fields.get("description"),
            "input_schema": input_schema,
            "output_schema": output_schema,
            "fields": {k: v for k, v in fields.items() if k not in ("name", "description")},
        }
        rows.append(
            {
                "name": name,
                "description": fields.get("description"),
                "input_schema": input_schema,
                "output_schema": output_schema,
                "file": doc.path,
                "line": s.start + 1,
                "section": s.index,
                "section_path": s.path,
                "definition": definition,
            }
        )
    return rows
