"""The seven section operations: replace, append, prepend, insert, delete, rename heading, move."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from udm.errors import PatchError
from udm.markdown import Document, Section, parse_document
from udm.patch import format as P
from udm.patch.ops.fragments import (
    ATX_LINE,
    blank,
    in_style,
    insert,
    last_content,
    prepare_fragment,
    refuse_duplicate_heading,
    refuse_swallowing,
    relevel,
)
from udm.patch.ops.targets import ExpectCheck, find_section_hinted, hash_section, joint_hash, markdown_doc
from udm.patch.splice import ensure_newline, split_lines
from udm.patch.workspace import Workspace

__all__ = [
    "append_to_section",
    "delete_section",
    "insert_section",
    "move_section",
    "prepend_to_section",
    "rename_heading",
    "replace_section",
]

# An edit of one section: the page, the section the operation names, the operation -> the page's new lines.
SectionEdit = Callable[[Workspace, Document, Section, Any], list[str]]


def _section_operation(edit: SectionEdit) -> Callable[[Workspace, Any, ExpectCheck], str]:
    """The operation that finds the section, checks its precondition, applies `edit` and writes the page."""

    @wraps(edit)
    def run(ws: Workspace, op: Any, expect: ExpectCheck) -> str:
        doc = markdown_doc(ws, op.file)
        sec = find_section_hinted(doc, op.section)
        expect(hash_section(doc, sec), f"section '{sec.path}'")
        ws.put(op.file, "".join(edit(ws, doc, sec, op)))
        return f"section '{sec.path}' (line {sec.start + 1})"

    return run


@_section_operation
def replace_section(ws: Workspace, doc: Document, sec: Section, op: P.ReplaceSection) -> list[str]:
    """Replace the section's body (or, `with_heading`, the whole section), keeping its blank lines."""
    lines = list(doc.lines)
    end = sec.own_end if op.own_only else sec.end
    fragment, _, _ = in_style(prepare_fragment(op.content, op.format), doc, sec)
    if op.with_heading:
        sections = parse_document(fragment, shortcodes=doc.shortcodes).sections if fragment else None
        if sections is not None and (not sections or sections[0].start != 0):
            raise PatchError("with_heading is true, so content must start with a heading")
        tail = lines[last_content(lines, sec.start, end) : end]
        return [*lines[: sec.start], *split_lines(fragment), *tail, *lines[end:]]
    body_start = sec.heading_end
    first = body_start
    while first < end and blank(lines[first]):
        first += 1
    if first == end:
        # An empty body: one blank line after the heading, the old blank lines after it.
        lead = ["\n"] if fragment else []
        tail = lines[body_start:end] or (["\n"] if fragment and end < len(lines) else [])
    else:
        # Keep the body's own leading and trailing blank lines; only its content changes.
        lead = lines[body_start:first]
        tail = lines[last_content(lines, body_start, end) : end]
    return [*lines[:body_start], *lead, *split_lines(fragment), *tail, *lines[end:]]


@_section_operation
def append_to_section(ws: Workspace, doc: Document, sec: Section, op: P.AppendToSection) -> list[str]:
    """Add content at the end of the section's own body, continuing a list that ends there."""
    lines = list(doc.lines)
    at = max(last_content(lines, sec.heading_end, sec.own_end), sec.heading_end)
    piece, join, _ = in_style(prepare_fragment(op.content, op.format), doc, sec, above=at)
    new = insert(lines, at, piece, join_above=join)
    refuse_swallowing(new, sec.heading_end, at, at + len(new) - len(lines), "the content's first line")
    return new


@_section_operation
def prepend_to_section(ws: Workspace, doc: Document, sec: Section, op: P.PrependToSection) -> list[str]:
    """Add content at the start of the section's body, right after its heading."""
    lines = list(doc.lines)
    at = sec.heading_end
    while at < sec.own_end and blank(lines[at]):
        at += 1
    piece, _, join = in_style(prepare_fragment(op.content, op.format), doc, sec, below=at)
    new = insert(lines, at, piece, join_below=join)
    grown = len(new) - len(lines)
    refuse_swallowing(new, at, at + grown, sec.own_end + grown, "the section's first line after the content")
    return new


@_section_operation
def insert_section(ws: Workspace, doc: Document, sec: Section, op: P.InsertSection) -> list[str]:
    """Insert a new section before or after this one, its headings shifted to the asked level."""
    lines = list(doc.lines)
    level = op.level or sec.level
    if op.heading is not None:
        if "\n" in op.heading.strip():
            raise PatchError("heading must be one line")
        raw = f"{'#' * level} {op.heading.strip()}\n\n{op.content}"
    else:
        raw = op.content
    fragment = in_style(relevel(prepare_fragment(raw, op.format), level, doc.shortcodes), doc, sec)[0]
    at = sec.start if op.position == "before" else sec.end
    new = insert(lines, at, fragment)
    refuse_duplicate_heading(
        doc, "".join(new), parse_document(fragment, shortcodes=doc.shortcodes).sections[0].title, level
    )
    return new


@_section_operation
def delete_section(ws: Workspace, doc: Document, sec: Section, op: P.DeleteSection) -> list[str]:
    """Remove the section with its subsections."""
    lines = list(doc.lines)
    return [*lines[: sec.start], *lines[sec.end :]]


@_section_operation
def rename_heading(ws: Workspace, doc: Document, sec: Section, op: P.RenameHeading) -> list[str]:
    """Change the heading's text, keeping its level, markers, indent and line end."""
    lines = list(doc.lines)
    title = op.to.strip()
    if "\n" in title:
        raise PatchError("the new heading text must be one line")
    line = lines[sec.heading_start]
    m = ATX_LINE.match(line)
    if m and sec.heading_end == sec.heading_start + 1:
        lines[sec.heading_start] = f"{m['lead']}{m['hashes']}{m['gap']}{title}{m['close'] or ''}{m['tail']}"
    else:
        indent = line[: len(line) - len(line.lstrip())]
        ending = line[len(line.rstrip("\r\n")) :]
        lines[sec.heading_start] = f"{indent}{title}{ending}"
    return lines


def move_section(ws: Workspace, op: P.MoveSection, expect: ExpectCheck) -> str:
    """Move the section (with its subsections) before or after another, optionally to a new level.

    Its precondition covers the destination section too: a commit after the destination changed
    would put the section somewhere other than the plan showed."""
    doc = markdown_doc(ws, op.file)
    sec = find_section_hinted(doc, op.section)
    dest_probe = find_section_hinted(doc, op.to)
    expect(
        joint_hash(hash_section(doc, sec), hash_section(doc, dest_probe)),
        f"section '{sec.path}' or its destination '{dest_probe.path}'",
    )
    lines = list(doc.lines)
    if sec.start <= dest_probe.start < sec.end:
        raise PatchError(f"cannot move section '{sec.path}' into itself ('{dest_probe.path}')")
    moved = "".join(lines[sec.start : last_content(lines, sec.start, sec.end)])
    if op.level is not None and op.level != sec.level:
        moved = relevel(moved, op.level, doc.shortcodes)
    rest = "".join([*lines[: sec.start], *lines[sec.end :]])
    rest_doc = ws.parse(rest, doc.path)
    dest = find_section_hinted(rest_doc, op.to)
    at = dest.start if op.position == "before" else dest.end
    ws.put(op.file, "".join(insert(list(rest_doc.lines), at, ensure_newline(moved))))
    return f"section '{sec.path}' (line {sec.start + 1})"
