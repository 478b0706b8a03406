"""ID definitions and references, links with their sections, and the line that defines an ID."""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from udm.markdown.blockdata import front_ids as _front_ids
from udm.markdown.ids import DEFINING_KEYS, IdMatcher, id_matcher
from udm.markdown.model import Block, IdOccurrence, Link
from udm.markdown.outline import Outline
from udm.markdown.roles import block_ids
from udm.markdown.scanner import Fence as _Fence
from udm.markdown.scanner import Heading as _Heading

if TYPE_CHECKING:
    from udm.markdown.document import Document

__all__ = [
    "MYST_SCHEMES",
    "all_defs",
    "defining_sections",
    "definition_line",
    "find_links",
    "find_refs",
    "line_finder",
    "own_ids",
]


_FIELD_ANY = re.compile(
    r"^[ \t]*(?:[-*+][ \t]+)?\*\*(?:[A-Za-z]+ )?ID:?\*\*:?[ \t]*`?([A-Za-z0-9][A-Za-z0-9_.\-]*)`?",
    re.MULTILINE,
)


_SCHEME = re.compile(r"[a-zA-Z][a-zA-Z0-9+.\-]*:")
# MyST's own link schemes: the project's files and targets (resolved in udm.site.routes).
MYST_SCHEMES = ("project:", "path:")


def _link_kind(target: str) -> str:
    if target.startswith("#"):
        return "anchor"
    if target.startswith(MYST_SCHEMES):
        # MyST's `project:path` and `path:file` name the project's own files (udm.site.routes); on
        # another site they resolve to nothing and are left unchecked, as any unknown scheme.
        return "internal"
    if _SCHEME.match(target) or target.startswith("//"):
        # A scheme (https:, mailto:) or a protocol-relative URL leaves the manual.
        return "external"
    return "internal"


def field_defs(doc: Document, outline: Outline) -> list[tuple[int, str]]:
    """(line, ID) of every `**ID:** X` field outside fences, headings and the front matter, in text order."""
    if outline.fields is None:
        found: list[tuple[int, str]] = []
        if "**" in doc.text:
            line_at = line_finder(doc)
            fence_lines = _fence_lines(outline.fences, len(doc.lines))
            heading_lines = {h.start for h in outline.headings}
            is_id = outline.matcher.is_id
            for fm in _field_matches(doc.text):
                i = line_at(fm.start())
                # `- **ID:** TBD` is a placeholder, not a definition: only tokens shaped like IDs count.
                if (
                    i >= outline.first
                    and not fence_lines[i]
                    and i not in heading_lines
                    and is_id(fm.group(1))
                ):
                    found.append((i, fm.group(1)))
        outline.fields = found
    return outline.fields


def _field_matches(text: str) -> Iterator[re.Match[str]]:
    """The matches of `_FIELD_ANY.finditer(text)`, tried only at the starts of lines holding `**`.

    A match lies within one line and starts at the line's start, so trying each such line once finds
    the same matches; the C substring search skips the rest (~8x faster than the regex's own scan).
    """
    pos = text.find("**")
    while pos >= 0:
        found = _FIELD_ANY.match(text, text.rfind("\n", 0, pos) + 1)
        if found is not None:
            yield found
        end = text.find("\n", pos)
        if end < 0:
            return
        pos = text.find("**", end + 1)


def all_defs(doc: Document, outline: Outline) -> list[IdOccurrence]:
    """Every ID definition: headings, front matter, fields, then data blocks (each once per line)."""
    lines = doc.lines
    defs: list[IdOccurrence] = []
    def_keys: set[tuple[str, int]] = set()
    section_of = outline.section_of

    def define(ident: str, line: int, kind: str) -> None:
        if (ident, line) in def_keys:
            return
        def_keys.add((ident, line))
        defs.append(IdOccurrence(ident, line, section_of(line), kind))

    for line, ident in _heading_ids(outline.matcher, lines, outline.headings):
        define(ident, line, "heading")
    if doc.front_matter:
        rng = doc.front_matter_range
        for ident in _front_ids(doc.front_matter):
            define(ident, _line_of(lines, ident, 0, rng[1] if rng else 1), "front_matter")
    for line, ident in field_defs(doc, outline):
        define(ident, line, "field")
    for b in doc.blocks:
        for ident in block_ids(b):
            define(ident, _line_of(lines, ident, b.content_start, b.content_end), "block")
    return defs


def own_ids(doc: Document, outline: Outline, k: int) -> tuple[str, ...]:
    """Section k's IDs alone: those of its heading line, its fields and its data blocks, as `all_defs` orders them."""
    own: list[str] = outline.matcher.findall(doc.lines[outline.headings[k].start])
    start, end = outline.starts[k], outline.own_ends[k]
    own += [ident for line, ident in field_defs(doc, outline) if start <= line < end]
    for b in doc.blocks_in(k):
        own += block_ids(b)
    return tuple(dict.fromkeys(own))


def defining_sections(doc: Document, outline: Outline, ident: str) -> list[int]:
    """Indices of the sections whose IDs include `ident`, looking only where it could be defined.

    A definition holds the ID as written (heading, field, or a data block's value) unless a block
    spells it with an escape ('\\' in YAML or JSON, '' in single-quoted YAML), and an ID holds no
    whitespace; so only sections with a literal occurrence or such a block are worked out.
    """
    if doc._sections is not None or not ident or ident.split() != [ident]:
        return [k for k, s in enumerate(doc.sections) if ident in s.ids]
    text = doc.text
    line_at: Callable[[int], int] | None = None
    candidates: set[int] = set()
    pos = text.find(ident)
    while pos >= 0:
        if line_at is None:
            line_at = line_finder(doc)
        k = outline.section_of(line_at(pos))
        if k is not None:
            candidates.add(k)
        pos = text.find(ident, pos + 1)
    for f, sec in zip(outline.fences, outline.fence_sections, strict=True):
        if sec is not None and ("\\" in f.text or "''" in f.text):
            candidates.add(sec)
    return [k for k in sorted(candidates) if ident in doc.section(k).ids]


def _heading_ids(matcher: IdMatcher, lines: list[str], headings: list[_Heading]) -> list[tuple[int, str]]:
    """(line, ID) of each ID on a heading's first line, in order: one regex pass over those lines."""
    joined = "".join([lines[h.start] for h in headings])
    if not joined:
        return []
    ends = list(itertools.accumulate(len(lines[h.start]) for h in headings))
    out: list[tuple[int, str]] = []
    for m in matcher.finditer(joined):
        k = bisect.bisect_right(ends, m.start())
        if m.end() > ends[k]:
            # Only a pattern that matches a line break gets here: look at each line alone.
            return [(h.start, ident) for h in headings for ident in matcher.findall(lines[h.start])]
        out.append((headings[k].start, m.group(0)))
    return out


def line_finder(doc: Document) -> Callable[[int], int]:
    """Maps a character offset in the text to its 0-based line (for regex scans over the whole text)."""
    offsets = doc.line_starts()
    last = max(len(doc.lines) - 1, 0)

    def line_at(pos: int) -> int:
        return min(bisect.bisect_right(offsets, pos) - 1, last)

    return line_at


def _fence_lines(blocks: Sequence[Block | _Fence], n: int) -> bytearray:
    """One byte per line, set on the lines of fenced blocks (fences included)."""
    marks = bytearray(n)
    for b in blocks:
        marks[b.start : b.end] = b"\x01" * (b.end - b.start)
    return marks


def _section_finder(starts: list[int]) -> Callable[[int], int | None]:
    def section_of(line: int) -> int | None:
        i = bisect.bisect_right(starts, line) - 1
        return i if i >= 0 else None

    return section_of


def find_refs(doc: Document) -> list[IdOccurrence]:
    """Every ID occurrence that is not a definition, found in one pass over the text."""
    matcher = doc._outline.matcher if doc._outline else id_matcher(None)
    def_keys = {(d.id, d.line) for d in doc.id_defs}
    line_at = line_finder(doc)
    section_of = _section_finder([s.start for s in doc.sections])
    refs: list[IdOccurrence] = []
    for im in matcher.finditer(doc.text):
        at = line_at(im.start())
        ident = im.group(0)
        if (ident, at) not in def_keys:
            refs.append(IdOccurrence(ident, at, section_of(at), "reference"))
    return refs


def find_links(doc: Document) -> list[Link]:
    """Every link of the parse, with its section, in text order."""
    outline = doc._outline
    if outline is None:
        return []
    section_of = outline.section_of
    return [
        Link(r.line, r.text, r.target, _link_kind(r.target), section_of(r.line), r.form)
        for r in outline.raw_links
    ]


def _line_of(lines: list[str], needle: str, start: int, end: int) -> int:
    """The line in [start, end) defining `needle` (see definition_line), else `start` (or the one before)."""
    found = definition_line(lines, needle, start, end)
    if found is not None:
        return found
    return max(0, start - 1) if start >= len(lines) else start


_DEFINING_KEY = re.compile(r"(?:^|[\s{,\-])[\"']?(?:" + "|".join(DEFINING_KEYS) + r")[\"']?[ \t]*:")


def _whole_token(line: str, ident: str) -> bool:
    """Whether `ident` occurs in `line` as a whole ID, not inside a longer one (COMP-001 in COMP-0011)."""
    pos = line.find(ident)
    while pos >= 0:
        before = line[pos - 1] if pos else " "
        after = line[pos + len(ident) : pos + len(ident) + 2]
        inside_before = before.isalnum() or before in "-_."
        inside_after = bool(after) and (
            after[0].isalnum() or after[0] in "-_" or (after[0] == "." and after[1:2].isalnum())
        )
        if not inside_before and not inside_after:
            return True
        pos = line.find(ident, pos + 1)
    return False


def definition_line(lines: list[str], ident: str, start: int, end: int) -> int | None:
    """The line in [start, end) of a data block or front matter that defines `ident`.

    Best: an `id`/`task_id`/`mode_id`/`tool_id` key with the ID as a whole token; then any line with
    the whole token; then any line holding it at all (an escaped spelling); None when none does.
    """
    token_line: int | None = None
    text_line: int | None = None
    for i in range(start, min(end, len(lines))):
        line = lines[i]
        if ident not in line:
            continue
        if text_line is None:
            text_line = i
        if _whole_token(line, ident):
            if _DEFINING_KEY.search(line):
                return i
            if token_line is None:
                token_line = i
    return token_line if token_line is not None else text_line
