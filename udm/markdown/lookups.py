"""Finding a section or a fenced block of a document by what a person or a patch calls it."""

from __future__ import annotations

import re
from collections.abc import Callable

from udm.errors import AmbiguousTargetError, TargetNotFoundError
from udm.markdown.definitions import defining_sections
from udm.markdown.document import Document
from udm.markdown.model import Block, Section
from udm.markdown.outline import slugify
from udm.markdown.roles import block_ids
from udm.markdown.scanner import ATX_HEADING as _ATX_HEADING
from udm.markdown.scanner import atx_title as _atx_title

__all__ = ["find_block", "find_section", "section_text"]


def section_text(doc: Document, section: Section, *, own: bool = False) -> str:
    """The exact text of a section (heading included); `own` stops at its first subsection."""
    return "".join(doc.lines[section.start : section.own_end if own else section.end])


def _candidates(doc: Document, found: list[Section]) -> list[str]:
    return [f"{s.path} (line {s.start + 1})" for s in found]


_NUMBER_PREFIX = re.compile(r"(?:\d+(?:\.[0-9A-Za-z]+)*\.?|[A-Z](?:\.\d+)*\.?)\s+")


def _could_be_anchor(text: str) -> bool:
    """False when `text` holds an ASCII character no anchor can: slugify lower-cases, drops ASCII
    punctuation but '-' and '_', and turns spaces into hyphens."""
    return not any(ch.isascii() and not (ch.islower() or ch.isdigit() or ch in "-_") for ch in text)


def find_section(doc: Document, identifier: str) -> Section:
    """Resolve heading text, heading path, anchor, '#anchor' or a defined ID to one section."""
    ident, level = _named(identifier)
    view = _Headings(doc, ident)
    # A heading written with its hashes names its level too.
    secs = [k for k in range(len(view.titles)) if level is None or view.levels[k] == level]
    for stage in _stages(view, secs, ident):
        found = stage()
        if len(found) == 1:
            return view.pick(found[0])
        if found:
            raise AmbiguousTargetError(
                f"'{identifier}' matches {len(found)} sections in {doc.path or '<string>'}",
                _candidates(doc, [view.pick(k) for k in found]),
            )
    raise TargetNotFoundError(f"no section '{identifier}' in {doc.path or '<string>'}")


def _named(identifier: str) -> tuple[str, int | None]:
    """The text a section identifier names, and the level when it is written with its hashes."""
    ident = identifier.strip()
    if not ident:
        raise TargetNotFoundError("empty section identifier")
    level: int | None = None
    m = _ATX_HEADING.match(ident)
    if m and m.group(2) is not None:
        level = len(m.group(1))
        ident = _atx_title(m.group(2))
    if not ident or set(ident) == {"#"}:
        raise TargetNotFoundError(
            f"'{identifier.strip()}' names no section: give heading text, an anchor or an ID"
        )
    return ident, level


class _Headings:
    """Levels, titles, paths, anchors and defined IDs of a document's headings, each worked out once.

    From the parse's outline while the sections (and so every block's IDs) are not built.
    """

    def __init__(self, doc: Document, ident: str) -> None:
        self.doc = doc
        self.ident = ident
        self.outline = doc._outline if doc._sections is None else None
        self._anchors: list[str] | None = None
        if self.outline is not None:
            self.levels = [h.level for h in self.outline.headings]
            self.titles = [h.title for h in self.outline.headings]
            self.paths = self.outline.paths
            self.pick: Callable[[int], Section] = doc.section
        else:
            self.levels = [s.level for s in doc.sections]
            self.titles = [s.title for s in doc.sections]
            self.paths = [s.path for s in doc.sections]
            self.pick = doc.sections.__getitem__

    def anchors(self) -> list[str]:
        """Every heading's anchor."""
        if self._anchors is None:
            if self.outline is not None:
                self._anchors = self.outline.all_anchors()
            else:
                self._anchors = [s.anchor for s in self.doc.sections]
        return self._anchors

    def defining(self) -> set[int]:
        """The headings whose sections define the identifier as an ID."""
        if self.outline is not None:
            return set(defining_sections(self.doc, self.outline, self.ident))
        return {k for k, s in enumerate(self.doc.sections) if self.ident in s.ids}


def _stages(view: _Headings, secs: list[int], ident: str) -> list[Callable[[], list[int]]]:
    """The ways a section may be named, tried in order; later ones are worked out only when needed."""
    titles, paths, anchors = view.titles, view.paths, view.anchors
    anchor = ident[1:] if ident.startswith("#") else ident
    folded = ident.casefold()

    def stripped(title: str) -> str:
        return _NUMBER_PREFIX.sub("", title, count=1).casefold() if _NUMBER_PREFIX.match(title) else ""

    return [
        lambda: [k for k in secs if titles[k] == ident],
        lambda: [k for k in secs if " > " in ident and paths[k] == ident],
        lambda: [k for k in secs if anchors()[k] == anchor] if _could_be_anchor(anchor) else [],
        lambda: sorted(set(secs) & view.defining()),
        lambda: [k for k in secs if titles[k].casefold() == folded],
        lambda: [k for k in secs if " > " in ident and paths[k].casefold().endswith(folded)],
        lambda: [k for k in secs if anchors()[k] == slugify(anchor)],
        lambda: [k for k in secs if stripped(titles[k]) == folded],
        # A bare section number: '5.3' names '5.3 Mode: ROO-MODE-PLAN-STRATEGIC'.
        lambda: [k for k in secs if titles[k].split(" ", 1)[0].rstrip(".:") == ident.rstrip(".")],
    ]


def find_block(
    doc: Document, section: Section | None, block: int | str | None, lang: str | None = None
) -> Block:
    """A fenced block by index among the section's own blocks, by defined ID, or the only data block."""
    where = f"{doc.path or '<string>'}" + (f" section '{section.path}'" if section else "")
    pool = doc.blocks if section is None else doc.blocks_in(section.index)
    if lang is not None:
        want = {"yaml", "yml"} if lang.lower() in ("yaml", "yml") else {lang.lower()}
        pool = [b for b in pool if b.lang in want]
    if isinstance(block, bool):
        raise TargetNotFoundError(f"invalid block selector {block!r}")
    if isinstance(block, int):
        if 0 <= block < len(pool):
            return pool[block]
        raise TargetNotFoundError(f"no block #{block} in {where} ({len(pool)} blocks)")
    if isinstance(block, str):
        found = [b for b in pool if block in block_ids(b)]
        if not found and section is not None:
            found = [b for b in doc.blocks if block in block_ids(b)]
        return _only_block(
            found,
            f"{len(found)} blocks define '{block}' in {where}",
            lambda b: f"block {b.index} (line {b.start + 1})",
            f"no block defining '{block}' in {where}",
        )
    data_blocks = [b for b in pool if b.lang in ("yaml", "yml", "json")] if lang is None else pool
    return _only_block(
        data_blocks,
        f"{len(data_blocks)} data blocks in {where}; name one by index or ID",
        lambda b: f"block {b.index} '{b.lang}' (line {b.start + 1})",
        f"no YAML/JSON block in {where}",
    )


def _only_block(found: list[Block], ambiguous: str, candidate: Callable[[Block], str], missing: str) -> Block:
    """The one block found; AmbiguousTargetError naming each candidate, or TargetNotFoundError."""
    if len(found) == 1:
        return found[0]
    if found:
        raise AmbiguousTargetError(ambiguous, [candidate(b) for b in found])
    raise TargetNotFoundError(missing)
