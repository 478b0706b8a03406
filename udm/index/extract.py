"""A parsed Document -> the index's rows: sections, blocks, IDs, tasks, modes, tools, config, links.

Lines in the index are 1-based (as editors and `file:line` messages show them); section and block
ranges are `start_line`..`end_line`, both inclusive. The document model underneath is 0-based.
"""

from __future__ import annotations

import bisect
import itertools
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from udm.markdown import Block, Document, Section, block_ids, definition_line

__all__ = [
    "TABLE_COLUMNS",
    "ParseOptions",
    "document_rows",
    "is_config_file",
    "json_safe",
    "outside_root",
    "parse_options",
    "split_link_target",
]

# Column order of every row table (the NDJSON files the workers write follow it).
TABLE_COLUMNS: dict[str, list[tuple[str, str]]] = {
    "sections": [
        ("file", "VARCHAR"),
        ("idx", "INTEGER"),
        ("level", "INTEGER"),
        ("title", "VARCHAR"),
        ("path", "VARCHAR"),
        ("anchor", "VARCHAR"),
        ("start_line", "INTEGER"),
        ("heading_end", "INTEGER"),
        ("own_end", "INTEGER"),
        ("end_line", "INTEGER"),
        ("parent", "INTEGER"),
        ("ids", "VARCHAR[]"),
        ("start_byte", "BIGINT"),
        ("end_byte", "BIGINT"),
        ("own_end_byte", "BIGINT"),
        ("content", "VARCHAR"),
    ],
    "blocks": [
        ("file", "VARCHAR"),
        ("idx", "INTEGER"),
        ("section", "INTEGER"),
        ("section_path", "VARCHAR"),
        ("lang", "VARCHAR"),
        ("info", "VARCHAR"),
        ("start_line", "INTEGER"),
        ("end_line", "INTEGER"),
        ("content", "VARCHAR"),
        ("data", "JSON"),
        ("error", "VARCHAR"),
        ("role", "VARCHAR"),  # data | example (see udm.markdown.document.fence_role)
    ],
    "ids": [
        ("id", "VARCHAR"),
        ("kind", "VARCHAR"),
        ("how", "VARCHAR"),
        ("file", "VARCHAR"),
        ("line", "INTEGER"),
        ("section", "INTEGER"),
        ("section_path", "VARCHAR"),
    ],
    "tasks": [
        ("id", "VARCHAR"),
        ("title", "VARCHAR"),
        ("status", "VARCHAR"),
        ("phase", "VARCHAR"),
        ("milestone", "VARCHAR"),
        ("mode", "VARCHAR"),
        ("depends_on", "VARCHAR[]"),
        ("file", "VARCHAR"),
        ("line", "INTEGER"),
        ("section", "INTEGER"),
        ("section_path", "VARCHAR"),
        ("definition", "JSON"),
    ],
    "modes": [
        ("id", "VARCHAR"),
        ("name", "VARCHAR"),
        ("file", "VARCHAR"),
        ("line", "INTEGER"),
        ("section", "INTEGER"),
        ("section_path", "VARCHAR"),
        ("definition", "JSON"),
    ],
    "tools": [
        ("name", "VARCHAR"),
        ("description", "VARCHAR"),
        ("input_schema", "JSON"),
        ("output_schema", "JSON"),
        ("file", "VARCHAR"),
        ("line", "INTEGER"),
        ("section", "INTEGER"),
        ("section_path", "VARCHAR"),
        ("definition", "JSON"),
    ],
    "config": [
        ("key", "VARCHAR"),
        ("value", "JSON"),
        ("file", "VARCHAR"),
        ("line", "INTEGER"),
        ("section", "INTEGER"),
        ("section_path", "VARCHAR"),
    ],
    "problems": [
        ("file", "VARCHAR"),
        ("line", "INTEGER"),
        ("message", "VARCHAR"),
    ],
    "links": [
        ("file", "VARCHAR"),
        ("line", "INTEGER"),
        ("section", "INTEGER"),
        ("text", "VARCHAR"),
        ("target", "VARCHAR"),
        ("kind", "VARCHAR"),
        ("target_file", "VARCHAR"),
        ("fragment", "VARCHAR"),
        ("resolved", "BOOLEAN"),
        # inline, reference, autolink, bare, image, html, jsx (see udm.markdown.document.Link)
        ("form", "VARCHAR"),
    ],
}


@dataclass(frozen=True, slots=True)
class ParseOptions:
    """What the index's parse needs from the settings (picklable, for the worker processes)."""

    id_patterns: tuple[str, ...]
    data_sections: tuple[str, ...] = ()
    max_file_bytes: int = 4_000_000


def parse_options(settings: Any) -> ParseOptions:
    """The parse options of these settings."""
    return ParseOptions(
        tuple(settings.id_patterns), tuple(settings.data_sections), int(settings.max_file_bytes)
    )


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


def split_link_target(source_file: str, target: str) -> tuple[str | None, str | None]:
    """(target file relative to the UDM root, fragment) of a link; file None for a same-file anchor."""
    path, _, fragment = target.partition("#")
    fragment = unquote(fragment)
    if not path:
        return None, fragment or None
    path = unquote(path.split("?", 1)[0])
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(source_file), path))
    return joined, fragment or None


def outside_root(target_file: str) -> bool:
    """Whether a link's normalised target leaves the UDM root (absolute, or above it)."""
    return target_file.startswith("/") or target_file == ".." or target_file.startswith("../")


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


def document_rows(doc: Document, *, exists: Any = None) -> dict[str, list[dict[str, Any]]]:
    """Every index row of one document, by table. `exists(relpath)` checks non-Markdown link targets."""
    path = doc.path
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in TABLE_COLUMNS}
    spath = [s.path for s in doc.sections]

    def sp(idx: int | None) -> str | None:
        return spath[idx] if idx is not None else None

    # Byte offset of every line start (and of the end), so readers can pread a section directly.
    sizes = map(len, doc.lines) if doc.text.isascii() else (len(line.encode("utf-8")) for line in doc.lines)
    byte_at = [0, *itertools.accumulate(sizes)]
    mentions: dict[int, list[str]] = {}
    for occ in (*doc.id_defs, *doc.id_refs):
        if occ.section is not None:
            bucket = mentions.setdefault(occ.section, [])
            if occ.id not in bucket:
                bucket.append(occ.id)
    for s in doc.sections:
        rows["sections"].append(
            {
                "file": path,
                "idx": s.index,
                "level": s.level,
                "title": s.title,
                "path": s.path,
                "anchor": s.anchor,
                "start_line": s.start + 1,
                "heading_end": s.heading_end,
                "own_end": s.own_end,
                "end_line": s.end,
                "parent": s.parent,
                "ids": list(s.ids),
                "start_byte": byte_at[s.start],
                "end_byte": byte_at[s.end],
                "own_end_byte": byte_at[s.own_end],
                "content": "".join(doc.lines[s.start : s.own_end]),
                "mentions": mentions.get(s.index, []),
            }
        )
    safe_data = [json_safe(b.data) if b.data is not None else None for b in doc.blocks]
    for b in doc.blocks:
        rows["blocks"].append(
            {
                "file": path,
                "idx": b.index,
                "section": b.section,
                "section_path": sp(b.section),
                "lang": b.lang,
                "info": b.info,
                "start_line": b.start + 1,
                "end_line": b.end,
                "content": b.text,
                "data": safe_data[b.index],
                "error": b.error,
                "role": b.role,
            }
        )
    for occ in doc.id_defs:
        rows["ids"].append(
            {
                "id": occ.id,
                "kind": "def",
                "how": occ.kind,
                "file": path,
                "line": occ.line + 1,
                "section": occ.section,
                "section_path": sp(occ.section),
            }
        )
    for occ in doc.id_refs:
        rows["ids"].append(
            {
                "id": occ.id,
                "kind": "ref",
                "how": "reference",
                "file": path,
                "line": occ.line + 1,
                "section": occ.section,
                "section_path": sp(occ.section),
            }
        )

    config_file = is_config_file(path)
    tool_sections: set[int] = set()
    for b in doc.blocks:
        if b.data is None:
            continue
        if config_file and b.lang in ("yaml", "yml", "json") and not block_ids(b):
            rows["config"].extend(_config_rows(doc, b, sp(b.section)))
        if b.role != "data":
            continue  # an example's `id:` or `depends_on` is illustration, not a task
        section = doc.sections[b.section] if b.section is not None else None
        for d in _walk_dicts(safe_data[b.index]):
            if _is_task(d):
                ident = str(d.get("task_id") or d.get("id"))
                rows["tasks"].append(
                    {
                        "id": ident,
                        "title": _scalar(d.get("title") or d.get("name")),
                        "status": _scalar(d.get("status")),
                        "phase": _scalar(d.get("phase")),
                        "milestone": _scalar(d.get("milestone")),
                        "mode": _scalar(d.get("mode") or d.get("mode_id")),
                        "depends_on": _str_list(d.get("depends_on")),
                        "file": path,
                        "line": _line_in(doc, ident, b.content_start, b.content_end),
                        "section": b.section,
                        "section_path": sp(b.section),
                        "definition": d,
                    }
                )
            elif _is_mode(d, section):
                ident = str(d.get("mode_id") or d.get("id"))
                rows["modes"].append(
                    {
                        "id": ident,
                        "name": _scalar(d.get("name")),
                        "file": path,
                        "line": _line_in(doc, ident, b.content_start, b.content_end),
                        "section": b.section,
                        "section_path": sp(b.section),
                        "definition": d,
                    }
                )
            elif isinstance(d.get("tool_id"), str) and (
                "description" in d or "input_schema" in d or "inputSchema" in d
            ):
                rows["tools"].append(
                    {
                        "name": d["tool_id"],
                        "description": _scalar(d.get("description")),
                        "input_schema": d.get("input_schema") or d.get("inputSchema"),
                        "output_schema": d.get("output_schema") or d.get("outputSchema"),
                        "file": path,
                        "line": b.start + 1,
                        "section": b.section,
                        "section_path": sp(b.section),
                        "definition": d,
                    }
                )
                if b.section is not None:
                    tool_sections.add(b.section)

    # Tools written as a section: '### 2.5.1 Tool: `x`' with name/description fields and schema blocks.
    starred = _starred_lines(doc)
    for s in doc.sections:
        if s.index in tool_sections:
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
        rows["tools"].append(
            {
                "name": name,
                "description": fields.get("description"),
                "input_schema": input_schema,
                "output_schema": output_schema,
                "file": path,
                "line": s.start + 1,
                "section": s.index,
                "section_path": s.path,
                "definition": definition,
            }
        )

    for problem in doc.errors:
        # Messages are 'path:line: text' (block and front-matter parse failures).
        rest = problem[len(path) + 1 :] if problem.startswith(f"{path}:") else problem
        line_text, _, message = rest.partition(":")
        rows["problems"].append(
            {
                "file": path,
                "line": int(line_text) if line_text.isdigit() else 1,
                "message": message.strip() or problem,
            }
        )
    for link in doc.links:
        target_file, fragment = (
            (None, unquote(link.target[1:]) or None)
            if link.kind == "anchor"
            else split_link_target(path, link.target)
            if link.kind == "internal"
            else (None, None)
        )
        resolved: bool | None = None
        if link.kind == "internal" and target_file is not None and outside_root(target_file):
            # A link out of the manual is broken for its readers, whatever this machine holds there.
            resolved = False
        elif link.kind == "internal" and target_file is not None and not target_file.endswith(".md"):
            resolved = bool(exists(target_file)) if exists is not None else None
        rows["links"].append(
            {
                "file": path,
                "line": link.line + 1,
                "section": link.section,
                "text": link.text,
                "target": link.target,
                "kind": link.kind,
                "target_file": target_file,
                "fragment": fragment,
                "resolved": resolved,
                "form": link.form,
            }
        )
    return rows
