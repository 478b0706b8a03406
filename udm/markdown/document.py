"""Markdown -> sections, fenced blocks, front matter, links and IDs, with exact 0-based line ranges.

Headings are what CommonMark says they are, and only top-level ones start sections: a `#` line
inside a fence, an HTML block, a list item or a block quote does not. `udm.markdown.scanner` finds them,
with fences and links, in one CommonMark/GFM parse (markdown-it-pyrs) with source positions.
Data blocks are parsed on first use; ID references and errors are worked out on first use.

Line numbers are 0-based and ranges half-open over `Document.lines` (keepends), so
`"".join(doc.lines[a:b])` is the exact text. Messages shown to people use 1-based `file:line`.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from udm.errors import DocumentError
from udm.markdown.blockdata import parse_front_matter as _front_matter
from udm.markdown.definitions import all_defs, definition_line, find_links, find_refs, own_ids
from udm.markdown.ids import id_matcher
from udm.markdown.lines import split_lines
from udm.markdown.model import Block, IdOccurrence, Link, Section
from udm.markdown.outline import Outline, build_outline, slugify
from udm.markdown.roles import block_ids, fence_role
from udm.markdown.scanner import (
    PARSER_NAME,
    Opaque,
    definition_term_texts,
    nested_heading_texts,
    verbatim_line_ranges,
)
from udm.markdown.scanner import parse_markdown as _parse_markdown
from udm.markdown.tree import MarkdownParseError

_T = TypeVar("_T")

# The records, roles and the ID-line rule are re-exported: they were this module's before the split.
__all__ = [
    "Block",
    "Document",
    "IdOccurrence",
    "Link",
    "Section",
    "block_ids",
    "definition_line",
    "fence_role",
    "load_document",
    "parse_document",
    "slugify",
    "split_lines",
]


class Document:
    """A parsed Markdown file.

    What a patch does not need is worked out on first use, from the same text and with the same
    rules: `sections` (their IDs need every data block looked at), `id_defs`, `links`, `id_refs`
    and `errors`. Until then `section(k)` and `find_section` work from the outline the scanner
    found. Every one of them can also be given, or set, directly.
    """

    __slots__ = (
        "_blocks",
        "_errors",
        "_id_defs",
        "_id_refs",
        "_links",
        "_outline",
        "_sections",
        "_starts",
        "content_hash",
        "front_matter",
        "front_matter_range",
        "indented",
        "lines",
        "notes",
        "parser",
        "path",
        "shortcodes",
        "text",
    )

    def __init__(
        self,
        path: str,
        text: str,
        lines: list[str],
        sections: list[Section] | None,
        blocks: list[Block] | None,
        front_matter: dict[str, Any] | None,
        front_matter_range: tuple[int, int] | None,
        links: list[Link] | None,
        id_defs: list[IdOccurrence] | None,
        id_refs: list[IdOccurrence] | None,
        errors: list[str] | None,
        content_hash: str,
        parser: str = PARSER_NAME,
    ) -> None:
        self.path = path
        self.text = text
        self.lines = lines
        self._sections = sections
        self._blocks = blocks
        self.front_matter = front_matter
        self.front_matter_range = front_matter_range
        self._links = links
        self._id_defs = id_defs
        self._id_refs = id_refs
        self._errors = errors
        self.content_hash = content_hash
        self.parser = parser
        # What a parser failure cost this file ('path:line: message'; udm.markdown.tree), if anything.
        self.notes: list[str] = []
        self._outline: Outline | None = None
        self._starts: list[int] | None = None
        # The Hugo shortcodes that hold no Markdown, as the parse was told (its later parses use them too).
        self.shortcodes: tuple[tuple[str, str], ...] | None = None
        # The markers of a MkDocs site's indented blocks whose bodies are Markdown, as the parse was told.
        self.indented: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"Document(path={self.path!r}, parser={self.parser!r})"

    @property
    def blocks(self) -> list[Block]:
        """Every fenced block, in text order (index k is blocks[k])."""
        if self._blocks is None:
            outline = self._outline
            self._blocks = [outline.block(k) for k in range(len(outline.fences))] if outline else []
        return self._blocks

    @blocks.setter
    def blocks(self, value: list[Block]) -> None:
        self._blocks = value

    def blocks_in(self, section: int) -> list[Block]:
        """The fenced blocks of section `section`'s own lines, without building the others."""
        outline = self._outline
        if self._blocks is not None or outline is None:
            return [b for b in self.blocks if b.section == section]
        return [outline.block(k) for k, sec in enumerate(outline.fence_sections) if sec == section]

    @property
    def sections(self) -> list[Section]:
        """Every section, in text order (index k is sections[k])."""
        if self._sections is None:
            self._build()
        assert self._sections is not None
        return self._sections

    @sections.setter
    def sections(self, value: list[Section]) -> None:
        self._sections = value

    @property
    def id_defs(self) -> list[IdOccurrence]:
        """Every ID definition (headings, front matter, `**ID:**` fields, data blocks), by kind then text order."""
        if self._id_defs is None:
            self._build()
        assert self._id_defs is not None
        return self._id_defs

    @id_defs.setter
    def id_defs(self, value: list[IdOccurrence]) -> None:
        self._id_defs = value

    @property
    def links(self) -> list[Link]:
        """Markdown links outside fences and code spans, in text order."""
        if self._links is None:
            self._links = find_links(self)
        return self._links

    @links.setter
    def links(self, value: list[Link]) -> None:
        self._links = value

    @property
    def id_refs(self) -> list[IdOccurrence]:
        """Every ID occurrence that is not a definition, in text order."""
        if self._id_refs is None:
            self._id_refs = find_refs(self)
        return self._id_refs

    @id_refs.setter
    def id_refs(self, value: list[IdOccurrence]) -> None:
        self._id_refs = value

    @property
    def errors(self) -> list[str]:
        """Front matter and data blocks that do not parse, as 'path:line: message', in file order."""
        if self._errors is None:
            front_error = self._outline.front_error if self._outline else None
            found = [front_error] if front_error else []
            found += [b.error for b in self.blocks if b.error]
            self._errors = found
        return self._errors

    @errors.setter
    def errors(self, value: list[str]) -> None:
        self._errors = value

    @property
    def opaque(self) -> list[Opaque]:
        """MDX blocks kept out of the Markdown parse (ESM `import`/`export`, JSX), in text order."""
        return list(self._outline.opaque) if self._outline else []

    def line_starts(self) -> list[int]:
        """The character offset in `text` of each line's start, then of the text's end (worked out once)."""
        if self._starts is None:
            self._starts = [0, *itertools.accumulate(map(len, self.lines))]
        return self._starts

    def section(self, index: int) -> Section:
        """Section `index`, without working out the others' IDs when they are not known yet."""
        outline = self._outline
        if self._sections is not None or outline is None:
            return self.sections[index]
        if not 0 <= index < len(outline.headings):
            raise IndexError(f"no section {index}")
        found = outline.built.get(index)
        if found is None:
            found = outline.section(self, index, own_ids(self, outline, index))
            outline.built[index] = found
        return found

    def section_at(self, line: int) -> Section | None:
        """The innermost section containing a 0-based line, or None before the first heading."""
        starts = [s.start for s in self.sections]
        i = bisect.bisect_right(starts, line) - 1
        return self.sections[i] if i >= 0 else None

    def nested_heading_texts(self) -> list[str]:
        """The rendered text of the headings inside block quotes and list items (no sections, yet ids)."""
        try:
            return self._reparse(nested_heading_texts)
        except MarkdownParseError:
            return []

    def verbatim_lines(self) -> list[tuple[int, int]]:
        """The line ranges [start, end) of the blocks whose text renders as no Markdown (fences,
        indented code, HTML blocks), at any depth; [] when the parse fails."""
        try:
            return self._reparse(verbatim_line_ranges)
        except MarkdownParseError:
            return []

    def definition_terms(self) -> list[str]:
        """The rendered text of the definition-list terms (Hugo gives them ids; no sections)."""
        return self._reparse(definition_term_texts)

    def _reparse(self, reader: Callable[..., _T]) -> _T:
        """What `reader` finds in a parse of its own of the page, which sees the text as the first did."""
        return reader(
            *self._parsed_lines(),
            mdx=self.path.lower().endswith(".mdx"),
            shortcodes=self.shortcodes,
            indented=self.indented,
        )

    def _parsed_lines(self) -> tuple[list[str], int]:
        """The lines the parse saw (a byte-order mark left out) and the first after the front matter."""
        first = self.front_matter_range[1] if self.front_matter_range else 0
        return _without_bom(self.lines), first

    def heading_sources(self) -> list[str]:
        """Each section heading's text as written (entities and markup as they are in the source)."""
        outline = self._outline
        return [] if outline is None else [h.title for h in outline.headings]

    def heading_texts(self) -> list[tuple[str, str | None]]:
        """Each section heading's rendered text and the id it names itself (None when it names none)."""
        outline = self._outline
        if outline is None:
            return []
        return [(h.title if h.text is None else h.text, h.anchor) for h in outline.headings]

    def _build(self) -> None:
        """Work out every ID definition and every section, as the parse always did."""
        outline = self._outline
        if outline is None:
            self._sections = self._sections if self._sections is not None else []
            self._id_defs = self._id_defs if self._id_defs is not None else []
            return
        defs = all_defs(self, outline)
        if self._id_defs is None:
            self._id_defs = defs
        if self._sections is None:
            by_section: dict[int, list[str]] = {}
            for d in defs:
                if d.section is not None:
                    # A definition belongs to the section whose own body holds it.
                    by_section.setdefault(d.section, []).append(d.id)
            sections = []
            for k in range(len(outline.headings)):
                built = outline.built.get(k)
                if built is None:
                    built = outline.section(self, k, tuple(dict.fromkeys(by_section.get(k, []))))
                sections.append(built)
            self._sections = sections


def _without_bom(lines: list[str]) -> list[str]:
    """The lines as the parse sees them: a byte-order mark stays in the text (byte offsets are the
    file's), but the parse must not see it."""
    return [lines[0][1:], *lines[1:]] if lines and lines[0].startswith("\ufeff") else lines


def parse_document(
    text: str,
    path: str = "",
    id_patterns: Iterable[str] | None = None,
    *,
    data_sections: Sequence[str] = (),
    shortcodes: tuple[tuple[str, str], ...] | None = None,
    autorefs: bool = False,
    indented: tuple[str, ...] = (),
    roles: bool = False,
    liquid: str = "",
) -> Document:
    """Parse Markdown text; bad blocks become `errors`, never exceptions (but MarkdownParseError for
    the rare file the parser fails on with every rule set, see udm.markdown.tree).

    The parse finds headings, their tree and anchors, the fenced blocks and the links (one
    CommonMark/GFM parse, `udm.markdown.scanner`); `.mdx` paths parse as MDX. `data_sections`: heading
    patterns whose YAML/JSON fences are data (see `fence_role`). `shortcodes`: a Hugo site's paired
    shortcodes whose inner text is no Markdown (`udm.site.Site.shortcodes`). `autorefs`: a reference no
    definition defines is a mkdocs-autorefs cross-reference (`udm.site.Site.autorefs`). `indented`: the
    markers of a MkDocs site's indented blocks, whose bodies are Markdown (`udm.site.Site.indented`).
    `roles`: a MyST site's roles are links (`` {ref}`label` ``, `udm.site.Site.labels`). `liquid`: the
    site whose `{% %}` tags are links, "jekyll" (`udm.markdown.liquid`) or "gitbook"
    (`udm.markdown.gitbook`).
    Data blocks are parsed
    on first use of their `data`/`error`; the IDs they define, when `sections` or `id_defs` are
    first used, by a grammar-checked scan of flat blocks or by parsing the others.
    """
    lines = split_lines(text)
    matcher = id_matcher(id_patterns)
    seen = _without_bom(lines)

    front, fm_range, fm_error = _front_matter(seen, path)
    first = fm_range[1] if fm_range else 0

    try:
        parsed = _parse_markdown(
            seen,
            first,
            mdx=path.lower().endswith(".mdx"),
            shortcodes=shortcodes,
            autorefs=autorefs,
            indented=indented,
            roles=roles,
            liquid=liquid,
        )
    except MarkdownParseError as exc:
        where = f"{path}:{exc.line}" if path else f"line {exc.line}"
        raise MarkdownParseError(f"{where}: {exc}", exc.line) from None
    doc = Document(
        path=path,
        text=text,
        lines=lines,
        sections=None,
        blocks=None,
        front_matter=front,
        front_matter_range=fm_range,
        links=None,
        id_defs=None,
        id_refs=None,
        errors=None,
        content_hash=hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
        parser=PARSER_NAME,
    )
    doc.shortcodes = shortcodes
    doc.indented = indented
    doc._outline = build_outline(parsed, len(lines), path, matcher, first, fm_error, tuple(data_sections))
    if parsed.note:
        doc.notes.append(f"{path}:1: {parsed.note}")
    return doc


def load_document(root: Path, relpath: str, id_patterns: Iterable[str] | None = None) -> Document:
    """Read and parse a file under `root`; raises DocumentError when it is missing or not UTF-8."""
    path = Path(root) / relpath
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise DocumentError(f"{relpath}: no such file") from exc
    except OSError as exc:
        raise DocumentError(f"{relpath}: cannot read: {exc.strerror or exc}") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DocumentError(f"{relpath}:{line}: not valid UTF-8 (byte {exc.start})") from exc
    return parse_document(text, Path(relpath).as_posix(), id_patterns)
