"""Markdown fragments for section operations: closed, restyled, releveled, spliced in between blank lines."""

from __future__ import annotations

import re

from udm.errors import PatchError
from udm.markdown import Document, Section, parse_document
from udm.patch.list_style import needs_list_style, read_list_styles, restyle_lists, starts_a_block
from udm.patch.splice import ensure_newline, format_markdown_fragment, split_lines

__all__ = [
    "ATX_LINE",
    "blank",
    "check_closed",
    "in_style",
    "insert",
    "last_content",
    "prepare_fragment",
    "refuse_duplicate_heading",
    "refuse_swallowing",
    "relevel",
]

ATX_LINE = re.compile(
    r"^(?P<lead> {0,3})(?P<hashes>#{1,6})(?P<gap>[ \t]+)(?P<title>.*?)(?P<close>[ \t]+#+)?(?P<tail>[ \t]*\r?\n?)$"
)


_PROBE = "# udm-probe-0f3c9a"


def check_closed(fragment: str) -> None:
    """Refuse Markdown that ends inside a fence or an HTML block: it would swallow what follows it."""
    if not fragment.strip():
        return
    body = ensure_newline(fragment)
    # A heading after a blank line is a heading unless something still open swallows it.
    probe = parse_document(f"{body}\n{_PROBE}\n")
    for b in probe.blocks:
        if b.content_end == b.end:
            raise PatchError(
                f"the content's code fence at its line {b.start + 1} ({b.fence.strip()}) is never closed; "
                f"end it with a {b.fence.strip()} line, or everything after it would become code"
            )
    at = len(split_lines(body)) + 1
    if not probe.sections or probe.sections[-1].heading_start != at:
        raise PatchError(
            "the content ends inside an HTML block or comment that is never closed (such as <!--, <pre>, "
            "<script>, <style> or <textarea>); close it, or everything after it would become part of it"
        )


def prepare_fragment(content: str, fmt: bool) -> str:
    """Operation content as a closed Markdown fragment ending in a newline (mdformatted when `fmt`)."""
    raw = ensure_newline(content.strip("\n"))
    check_closed(raw)
    if not fmt:
        return raw.lstrip("\n")
    text = format_markdown_fragment(content)
    check_closed(text)
    return text.lstrip("\n")


def blank(line: str) -> bool:
    """Whether the line holds only white space."""
    return not line.strip()


def insert(
    lines: list[str], at: int, fragment: str, *, join_above: bool = False, join_below: bool = False
) -> list[str]:
    """Insert a Markdown fragment at line `at`, separated from its neighbours by one blank line.

    `join_above` / `join_below`: no blank line on that side (the fragment continues a tight list there).
    """
    if not fragment:
        return lines
    before = lines[:at]
    if before and not before[-1].endswith("\n"):
        before[-1] += "\n"
    piece = fragment
    if before and not blank(before[-1]) and not join_above:
        piece = "\n" + piece
    if at < len(lines) and not blank(lines[at]) and not join_below:
        piece += "\n"
    return [*before, *split_lines(piece), *lines[at:]]


def refuse_swallowing(new: list[str], start: int, line: int, end: int, what: str) -> None:
    """Refuse an insertion after which `line` (or the first non-blank line from it) no longer starts a
    top-level block of new[start:end]: an indented block right after a list item becomes part of it."""
    while line < end and blank(new[line]):
        line += 1
    if line >= end or not new[line].startswith((" ", "\t")):
        return
    if not starts_a_block("".join(new[start:end]), line - start):
        raise PatchError(
            f"{what} (line {line + 1}: {new[line].strip()[:40]!r}) would become part of the list item "
            "before it, because it is indented; remove that indentation, or end the list with a line "
            "that is not part of it"
        )


def in_style(
    fragment: str, doc: Document, sec: Section, *, above: int | None = None, below: int | None = None
) -> tuple[str, bool, bool]:
    """The fragment's lists in the style of the section's (or else the document's) lists.

    `above`: the fragment goes right after line `above - 1`; if a list of the section ends there, the
    fragment's first list continues it. `below`: the fragment goes right before line `below`; if a
    list of the section starts there, the fragment's last list runs into it. Returns the fragment and
    whether it joins the list above / below without a blank line (to keep a tight list tight).
    """
    if not needs_list_style(fragment):
        return fragment, False, False
    offset = sec.heading_end
    styles = read_list_styles("".join(doc.lines[offset : sec.own_end]))
    if any(kind not in styles.by_kind for kind in needs_list_style(fragment)):
        styles.fill_from(read_list_styles("".join(doc.lines)))
    after = styles.trailing
    if after is None or above is None or last_content(doc.lines, offset, offset + after.end) != above:
        after = None
    before = styles.leading
    if before is None or below is None or offset + before.start != below:
        before = None
    return restyle_lists(fragment, styles, after=after, before=before)


def last_content(lines: list[str], start: int, end: int) -> int:
    """The line after the last non-blank line in [start, end) (start when all are blank)."""
    k = end
    while k > start and blank(lines[k - 1]):
        k -= 1
    return k


def relevel(fragment: str, level: int, shortcodes: tuple[tuple[str, str], ...] | None = None) -> str:
    """Shift the fragment's headings so its first heading has `level` (setext headings become ATX);
    `shortcodes`: the page's (a `# comment` in a Hugo code shortcode is no heading to shift)."""
    doc = parse_document(fragment, shortcodes=shortcodes)
    if not doc.sections:
        raise PatchError("the section content does not start with a heading")
    shift = level - doc.sections[0].level
    lines = list(doc.lines)
    for sec in reversed(doc.sections):
        new_level = max(1, min(6, sec.level + shift))
        m = ATX_LINE.match(lines[sec.heading_start])
        if m and sec.heading_end == sec.heading_start + 1:
            if shift:
                lines[sec.heading_start] = (
                    f"{m['lead']}{'#' * new_level}{m['gap']}{m['title']}{m['close'] or ''}{m['tail']}"
                )
        else:
            lines[sec.heading_start : sec.heading_end] = [f"{'#' * new_level} {sec.title}\n"]
    return "".join(lines)


def refuse_duplicate_heading(doc: Document, new_text: str, title: str, level: int) -> None:
    """An inserted heading must not repeat a sibling's: a retried insert would otherwise duplicate it."""
    after = parse_document(new_text, doc.path, shortcodes=doc.shortcodes)
    paths = [s.path for s in after.sections if s.title == title and s.level == level]
    dup = [p for p in set(paths) if paths.count(p) > 1]
    if dup:
        first = next((s for s in doc.sections if s.path == dup[0]), None)
        where = f" (line {first.start + 1})" if first else ""
        raise PatchError(
            f"a section '{dup[0]}' already exists{where}; replace or rename it instead of inserting a second one"
        )
