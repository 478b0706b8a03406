"""The outline of a parsed file: headings, their tree, paths and anchors, fences and their sections.

Everything else in a `Document` (sections with their IDs, blocks, links) is derived from it on demand.
"""

from __future__ import annotations

import bisect
import threading
import unicodedata
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from udm.markdown.ids import IdMatcher
from udm.markdown.model import Block, Section
from udm.markdown.roles import fence_role
from udm.markdown.scanner import Fence as _Fence
from udm.markdown.scanner import Heading as _Heading
from udm.markdown.scanner import Opaque, Parsed
from udm.markdown.scanner import RawLink as _RawLink

if TYPE_CHECKING:
    from udm.markdown.document import Document

__all__ = ["Outline", "build_outline", "slugify"]

_ANCHOR_LOCK = threading.Lock()  # module-wide, so a Document still pickles


@dataclass(slots=True)
class Outline:
    """The headings and their tree, as the parse found them; the rest of a Document is derived from it."""

    headings: list[_Heading]
    ends: list[int]
    own_ends: list[int]
    parents: list[int | None]
    paths: list[str]
    fences: list[_Fence]
    fence_sections: list[int | None]
    file: str
    matcher: IdMatcher
    first: int  # the first line after the front matter
    front_error: str | None
    starts: list[int] = field(default_factory=list)
    built: dict[int, Section] = field(default_factory=dict)
    built_blocks: dict[int, Block] = field(default_factory=dict)
    raw_links: list[_RawLink] = field(default_factory=list)
    opaque: list[Opaque] = field(default_factory=list)  # MDX ESM/JSX blocks, never read as Markdown
    data_sections: tuple[str, ...] = ()
    fields: list[tuple[int, str]] | None = None  # `**ID:**` field definitions: (line, ID)
    anchors: list[str] = field(default_factory=list)  # the first len(anchors) ones, worked out on demand
    seen_anchors: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.starts = [h.start for h in self.headings]

    def anchor(self, k: int) -> str:
        """Heading k's anchor: the id it names itself, else GitHub's (a repeated slug gets -1, -2, ...),
        worked out up to k."""
        anchors = self.anchors
        if k < len(anchors):
            return anchors[k]
        with _ANCHOR_LOCK:  # cached documents are shared between threads: extend the list once
            return self._extend_anchors(k)

    def _extend_anchors(self, k: int) -> str:
        anchors, seen = self.anchors, self.seen_anchors
        while len(anchors) <= k:
            heading = self.headings[len(anchors)]
            if heading.anchor is not None:
                # Named by the author: used as written, never numbered.
                seen.setdefault(heading.anchor, 0)
                anchors.append(heading.anchor)
                continue
            base = slugify(heading.title if heading.text is None else heading.text)
            anchor = base
            if base in seen:
                seen[base] += 1
                anchor = f"{base}-{seen[base]}"
                while anchor in seen:
                    seen[base] += 1
                    anchor = f"{base}-{seen[base]}"
            seen.setdefault(anchor, 0)
            anchors.append(anchor)
        return anchors[k]

    def all_anchors(self) -> list[str]:
        """Every heading's anchor."""
        if self.headings:
            self.anchor(len(self.headings) - 1)
        return self.anchors

    def block(self, k: int) -> Block:
        """Block k (built once)."""
        found = self.built_blocks.get(k)
        if found is None:
            f = self.fences[k]
            lang = f.info.split(maxsplit=1)[0].lower() if f.info else ""
            sec = self.fence_sections[k]
            role = fence_role(
                lang,
                f.info,
                f.text,
                self.paths[sec] if sec is not None else None,
                self.matcher,
                self.data_sections,
            )
            # Positional arguments: a frozen dataclass is built field by field, and keywords cost more.
            found = Block(
                k,
                lang,
                f.info,
                f.start,
                f.end,
                f.start + 1,
                f.content_end,
                f.markup,
                f.indent,
                sec,
                f.text,
                self.file,
                role,
            )
            self.built_blocks[k] = found
        return found

    def section_of(self, line: int) -> int | None:
        """The index of the section whose own lines hold `line`."""
        i = bisect.bisect_right(self.starts, line) - 1
        return i if i >= 0 else None

    def section(self, doc: Document, k: int, ids: tuple[str, ...]) -> Section:
        """Section k with the given IDs."""
        h = self.headings[k]
        return Section(
            k,
            h.level,
            h.title,
            h.start,
            h.end,
            h.start,
            self.ends[k],
            self.own_ends[k],
            self.paths[k],
            self.anchor(k),
            self.parents[k],
            ids,
        )


# ASCII characters `[^\w\- ]` drops: the same deletion as one bytes.translate, without the regex.
_SLUG_DROP = bytes(c for c in range(128) if not (chr(c).isalnum() or chr(c) in "_- "))


def _slug_keeps(category: str) -> bool:
    return category[0] in "LMN" or category == "Pc"


def slugify(title: str) -> str:
    """GitHub-style anchor: lower case, punctuation dropped, spaces to hyphens."""
    if title.isascii():
        # NFKC leaves ASCII as it is, and on ASCII \w is [A-Za-z0-9_].
        return (
            title.strip()
            .lower()
            .encode("ascii")
            .translate(None, _SLUG_DROP)
            .decode("ascii")
            .replace(" ", "-")
        )
    # As github-slugger: no normalisation; letters, marks, numbers and connector punctuation stay
    # (combining marks too: Devanagari vowel signs, accents typed as two code points).
    text = title.strip().lower()
    kept = "".join(ch for ch in text if ch in "- " or _slug_keeps(unicodedata.category(ch)))
    return kept.replace(" ", "-")


def build_outline(
    parsed: Parsed,
    n: int,
    path: str,
    matcher: IdMatcher,
    first: int,
    front_error: str | None,
    data_sections: tuple[str, ...],
) -> Outline:
    """The outline of a parse of `n` lines: section ranges, parents and paths, each fence's section."""
    headings, fences = parsed.headings, parsed.fences
    count = len(headings)
    ends = [n] * count
    own_ends = [n] * count
    parents: list[int | None] = [None] * count
    stack: list[int] = []
    for k, h in enumerate(headings):
        while stack and headings[stack[-1]].level >= h.level:
            ends[stack.pop()] = h.start
        parents[k] = stack[-1] if stack else None
        stack.append(k)
        if k + 1 < count:
            own_ends[k] = headings[k + 1].start
    for k in range(count):
        own_ends[k] = min(own_ends[k], ends[k])
    # The section of each fenced block (blocks themselves are built on first use).
    starts = [h.start for h in headings]
    fence_sections = [bisect.bisect_right(starts, f.start) - 1 for f in fences]
    sections_of: list[int | None] = [k if k >= 0 else None for k in fence_sections]
    paths: list[str] = []
    for k, h in enumerate(headings):
        parent = parents[k]
        paths.append(f"{paths[parent]} > {h.title}" if parent is not None else h.title)
    return Outline(
        headings,
        ends,
        own_ends,
        parents,
        paths,
        fences,
        sections_of,
        path,
        matcher,
        first,
        front_error,
        raw_links=parsed.links,
        opaque=parsed.opaque,
        data_sections=data_sections,
    )
