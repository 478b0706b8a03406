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
import fnmatch
import hashlib
import itertools
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from udm.errors import AmbiguousTargetError, DocumentError, TargetNotFoundError
from udm.markdown.blockdata import DATA_LANGS
from udm.markdown.blockdata import collect_ids as _collect_ids
from udm.markdown.blockdata import front_ids as _front_ids
from udm.markdown.blockdata import parse_data as _parse_data
from udm.markdown.blockdata import parse_front_matter as _front_matter
from udm.markdown.ids import DEFINING_KEYS, IdMatcher, id_matcher
from udm.markdown.lines import split_lines
from udm.markdown.scanner import ATX_HEADING as _ATX_HEADING
from udm.markdown.scanner import PARSER_NAME, Opaque
from udm.markdown.scanner import Fence as _Fence
from udm.markdown.scanner import Heading as _Heading
from udm.markdown.scanner import RawLink as _RawLink
from udm.markdown.scanner import atx_title as _atx_title
from udm.markdown.scanner import parse_markdown as _parse_markdown
from udm.markdown.simple_yaml import simple_yaml_ids

__all__ = [
    "Block",
    "Document",
    "IdOccurrence",
    "Link",
    "Section",
    "block_ids",
    "definition_line",
    "fence_role",
    "find_block",
    "find_section",
    "load_document",
    "parse_document",
    "section_text",
    "slugify",
    "split_lines",
]


@dataclass(frozen=True, slots=True)
class Section:
    """A heading and the lines up to the next heading of the same or a higher level."""

    index: int
    level: int
    title: str
    heading_start: int
    heading_end: int
    start: int
    end: int
    own_end: int
    path: str
    anchor: str
    parent: int | None
    ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Block:
    """A fenced code block; `data`/`error` hold its parsed YAML or JSON, worked out on first use."""

    index: int
    lang: str
    info: str
    start: int
    end: int
    content_start: int
    content_end: int
    fence: str
    indent: int
    section: int | None
    text: str
    file: str = field(default="", repr=False)
    # 'data' (the manual's data: IDs, errors) or 'example' (illustration: parsed best-effort, never an error).
    role: str = "data"
    # Parsed data, error and defined IDs, filled on first use: most callers never read most blocks.
    _lazy: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def data(self) -> Any:
        """The parsed value of a YAML/JSON/verify block (None for other languages or on error)."""
        return self._parsed()[0]

    @property
    def error(self) -> str | None:
        """'path:line: message' when a data block does not parse, else None (examples are never errors)."""
        return self._parsed()[1] if self.role == "data" else None

    def _parsed(self) -> tuple[Any, str | None]:
        found = self._lazy.get("parsed")
        if found is None:
            found = (None, None)
            if self.lang in DATA_LANGS:
                found = _parse_data(self.lang, self.text, self.file, self.content_start)
            self._lazy["parsed"] = found
        return found


@dataclass(frozen=True, slots=True)
class Link:
    """A link a reader can click; kind is 'internal', 'external' or 'anchor'.

    form says how it is written: 'inline' `[t](x)`, 'reference' `[t][r]` / `[t][]` / `[t]`,
    'autolink' `<https://x>`, 'bare' (a GFM extended autolink: `www.x.org`, `https://x`),
    'image' `![alt](x)`, 'html' (href/src of an HTML tag), 'jsx' (href/src of an MDX/JSX tag).
    """

    line: int
    text: str
    target: str
    kind: str
    section: int | None
    form: str = "inline"


@dataclass(frozen=True, slots=True)
class IdOccurrence:
    """One place an ID appears; kind is 'heading', 'field', 'block', 'front_matter' or 'reference'."""

    id: str
    line: int
    section: int | None
    kind: str


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
        "content_hash",
        "front_matter",
        "front_matter_range",
        "lines",
        "parser",
        "path",
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
        self._outline: _Outline | None = None

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
            self._links = _find_links(self)
        return self._links

    @links.setter
    def links(self, value: list[Link]) -> None:
        self._links = value

    @property
    def id_refs(self) -> list[IdOccurrence]:
        """Every ID occurrence that is not a definition, in text order."""
        if self._id_refs is None:
            self._id_refs = _find_refs(self)
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

    def section(self, index: int) -> Section:
        """Section `index`, without working out the others' IDs when they are not known yet."""
        outline = self._outline
        if self._sections is not None or outline is None:
            return self.sections[index]
        if not 0 <= index < len(outline.headings):
            raise IndexError(f"no section {index}")
        found = outline.built.get(index)
        if found is None:
            found = outline.section(self, index, _own_ids(self, outline, index))
            outline.built[index] = found
        return found

    def section_at(self, line: int) -> Section | None:
        """The innermost section containing a 0-based line, or None before the first heading."""
        starts = [s.start for s in self.sections]
        i = bisect.bisect_right(starts, line) - 1
        return self.sections[i] if i >= 0 else None

    def _build(self) -> None:
        """Work out every ID definition and every section, as the parse always did."""
        outline = self._outline
        if outline is None:
            self._sections = self._sections if self._sections is not None else []
            self._id_defs = self._id_defs if self._id_defs is not None else []
            return
        defs = _all_defs(self, outline)
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


_ANCHOR_LOCK = threading.Lock()  # module-wide, so a Document still pickles


@dataclass(slots=True)
class _Outline:
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
        """Heading k's anchor, GitHub style: a repeated slug gets -1, -2, ... (worked out up to k)."""
        anchors = self.anchors
        if k < len(anchors):
            return anchors[k]
        with _ANCHOR_LOCK:  # cached documents are shared between threads: extend the list once
            return self._extend_anchors(k)

    def _extend_anchors(self, k: int) -> str:
        anchors, seen = self.anchors, self.seen_anchors
        while len(anchors) <= k:
            base = slugify(self.headings[len(anchors)].title)
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


# ---------------------------------------------------------------------------------------------
# Helpers


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


_FIELD_ANY = re.compile(
    r"^[ \t]*(?:[-*+][ \t]+)?\*\*(?:[A-Za-z]+ )?ID:?\*\*:?[ \t]*`?([A-Za-z0-9][A-Za-z0-9_.\-]*)`?",
    re.MULTILINE,
)


_SCHEME = re.compile(r"[a-zA-Z][a-zA-Z0-9+.\-]*:")


def _link_kind(target: str) -> str:
    if target.startswith("#"):
        return "anchor"
    if _SCHEME.match(target) or target.startswith("//"):
        # A scheme (https:, mailto:) or a protocol-relative URL leaves the manual.
        return "external"
    return "internal"


def block_ids(block: Block) -> list[str]:
    """IDs a data block defines: string values of id/task_id/mode_id/tool_id keys, at any depth (examples: none)."""
    if block.role != "data":
        return []
    ids: list[str] | None = block._lazy.get("ids")
    if ids is None:
        ids = _cheap_block_ids(block)
        if ids is None:
            ids = []
            _collect_ids(block.data, ids)
        block._lazy["ids"] = ids
    return list(ids)


def _cheap_block_ids(block: Block) -> list[str] | None:
    """The block's IDs when they can be told without parsing it (None: parse it)."""
    if block.lang not in DATA_LANGS:
        return []
    text = block.text
    # Without an escape, a key spelled nowhere in the text cannot be one of the block's keys.
    if "\\" not in text and not any(key in text for key in DEFINING_KEYS):
        return []
    if block.lang == "json":
        return None
    return simple_yaml_ids(text, DEFINING_KEYS)


# Info-string marks of a fence's role: the word `udm`, or an attribute block `{data}` / `{.data ...}` /
# `{udm}` for data, `{example}` / `{.example}` for an example. Bare words other than `udm` are no
# marks: sites use the rest of the info string as a title ("json User data response").
_DATA_MARKS = frozenset({"udm", "data", ".udm", ".data"})
_EXAMPLE_MARKS = frozenset({"example", ".example"})
_ATTR_BLOCK = re.compile(r"\{([^{}]*)\}")
# A key `id` or `..._id` (quoted or not, YAML or JSON) and the value after it: `api_id: "API-COMP-001-v1"`.
_ID_KEY_VALUE = re.compile(
    r"""(?:^|[\s{,\-])["']?(?:[A-Za-z0-9]+_)*id["']?[ \t]*:[ \t]*["']?([^\s"',}\]#]+)""",
    re.MULTILINE | re.IGNORECASE,
)
_UDM_KEYS = re.compile(r"""(?:^|[\s{,])["']?(?:task_id|mode_id|tool_id)["']?[ \t]*:""", re.MULTILINE)


def fence_role(
    lang: str,
    info: str,
    text: str,
    section_path: str | None,
    matcher: IdMatcher,
    data_sections: Sequence[str] = (),
) -> str:
    """'data' or 'example': a YAML/JSON fence is data only when the manual says so.

    In order: an info-string mark (`{example}` / `udm`, `{data}`, `{.data}`); a `verify`
    block; a section whose heading path matches a `data_sections` pattern; or a block that defines
    a UDM ID (a `task_id`/`mode_id`/`tool_id` key, or an `id` /
    `..._id` key holding an ID of the configured families). Everything else is an example.
    """
    if lang not in DATA_LANGS:
        return "example"
    low = info.lower()
    words = set(low.split()[1:]) & {"udm"}
    if "{" in low:
        for attrs in _ATTR_BLOCK.findall(low):
            words.update(attrs.split())
    if words & _EXAMPLE_MARKS:
        return "example"
    if words & _DATA_MARKS or lang == "verify":
        return "data"
    if section_path is not None and data_sections and _in_sections(section_path, data_sections):
        return "data"
    if _UDM_KEYS.search(text):
        return "data"
    if "id" in text.lower():
        for m in _ID_KEY_VALUE.finditer(text):
            if matcher.is_id(m.group(1)):
                return "data"
    return "example"


def _in_sections(path: str, patterns: Sequence[str]) -> bool:
    """Whether a heading path (or its last title) matches one of the glob patterns, ignoring case."""
    low = path.lower()
    title = low.rsplit(" > ", 1)[-1]
    return any(fnmatch.fnmatchcase(title, p.lower()) or fnmatch.fnmatchcase(low, p.lower()) for p in patterns)


def parse_document(
    text: str,
    path: str = "",
    id_patterns: Iterable[str] | None = None,
    *,
    data_sections: Sequence[str] = (),
) -> Document:
    """Parse Markdown text; bad blocks become `errors`, never exceptions.

    The parse finds headings, their tree and anchors, the fenced blocks and the links (one
    CommonMark/GFM parse, `udm.markdown.scanner`); `.mdx` paths parse as MDX. `data_sections`: heading
    patterns whose YAML/JSON fences are data (see `fence_role`). Data blocks are parsed
    on first use of their `data`/`error`; the IDs they define, when `sections` or `id_defs` are
    first used, by a grammar-checked scan of flat blocks or by parsing the others.
    """
    lines = split_lines(text)
    matcher = id_matcher(id_patterns)
    # A byte-order mark stays in the text (byte offsets are the file's), but the parse must not see it.
    seen = [lines[0][1:], *lines[1:]] if text.startswith("\ufeff") else lines

    front, fm_range, fm_error = _front_matter(seen, path)
    first = fm_range[1] if fm_range else 0

    parsed = _parse_markdown(seen, first, mdx=path.lower().endswith(".mdx"))
    headings, fences = parsed.headings, parsed.fences

    # Sections: ranges, parents, paths, anchors.
    n = len(lines)
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
    doc._outline = _Outline(
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
        fm_error,
        raw_links=parsed.links,
        opaque=parsed.opaque,
        data_sections=tuple(data_sections),
    )
    return doc


def _field_defs(doc: Document, outline: _Outline) -> list[tuple[int, str]]:
    """(line, ID) of every `**ID:** X` field outside fences, headings and the front matter, in text order."""
    if outline.fields is None:
        found: list[tuple[int, str]] = []
        if "**" in doc.text:
            line_at = _line_finder(doc.lines)
            fence_lines = _fence_lines(outline.fences, len(doc.lines))
            heading_lines = {h.start for h in outline.headings}
            is_id = outline.matcher.is_id
            for fm in _FIELD_ANY.finditer(doc.text):
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


def _all_defs(doc: Document, outline: _Outline) -> list[IdOccurrence]:
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
    for line, ident in _field_defs(doc, outline):
        define(ident, line, "field")
    for b in doc.blocks:
        for ident in block_ids(b):
            define(ident, _line_of(lines, ident, b.content_start, b.content_end), "block")
    return defs


def _own_ids(doc: Document, outline: _Outline, k: int) -> tuple[str, ...]:
    """Section k's IDs alone: those of its heading line, its fields and its data blocks, as `_all_defs` orders them."""
    own: list[str] = outline.matcher.findall(doc.lines[outline.headings[k].start])
    start, end = outline.starts[k], outline.own_ends[k]
    own += [ident for line, ident in _field_defs(doc, outline) if start <= line < end]
    for b in doc.blocks_in(k):
        own += block_ids(b)
    return tuple(dict.fromkeys(own))


def _defining_sections(doc: Document, outline: _Outline, ident: str) -> list[int]:
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
            line_at = _line_finder(doc.lines)
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


def _line_finder(lines: list[str]) -> Callable[[int], int]:
    """Maps a character offset in the text to its 0-based line (for regex scans over the whole text)."""
    offsets = [0, *itertools.accumulate(map(len, lines))][: len(lines)] if lines else [0]

    def line_at(pos: int) -> int:
        return bisect.bisect_right(offsets, pos) - 1

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


def _find_refs(doc: Document) -> list[IdOccurrence]:
    """Every ID occurrence that is not a definition, found in one pass over the text."""
    matcher = doc._outline.matcher if doc._outline else id_matcher(None)
    def_keys = {(d.id, d.line) for d in doc.id_defs}
    line_at = _line_finder(doc.lines)
    section_of = _section_finder([s.start for s in doc.sections])
    refs: list[IdOccurrence] = []
    for im in matcher.finditer(doc.text):
        at = line_at(im.start())
        ident = im.group(0)
        if (ident, at) not in def_keys:
            refs.append(IdOccurrence(ident, at, section_of(at), "reference"))
    return refs


def _find_links(doc: Document) -> list[Link]:
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


# ---------------------------------------------------------------------------------------------
# Lookups


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
    # Work from the parse's outline while the sections (and so every block's IDs) are not built.
    outline = doc._outline if doc._sections is None else None
    if outline is not None:
        levels = [h.level for h in outline.headings]
        titles = [h.title for h in outline.headings]
        paths = outline.paths
        anchor_list: Callable[[], list[str]] = outline.all_anchors
        pick: Callable[[int], Section] = doc.section

        def defining() -> set[int]:
            assert outline is not None
            return set(_defining_sections(doc, outline, ident))
    else:
        all_secs = doc.sections
        levels = [s.level for s in all_secs]
        titles = [s.title for s in all_secs]
        paths = [s.path for s in all_secs]
        anchor_list = lambda: [s.anchor for s in all_secs]  # noqa: E731
        pick = all_secs.__getitem__

        def defining() -> set[int]:
            return {k for k, s in enumerate(all_secs) if ident in s.ids}

    cache: list[list[str]] = []

    def anchors() -> list[str]:
        if not cache:
            cache.append(anchor_list())
        return cache[0]

    # A heading written with its hashes names its level too.
    secs = [k for k in range(len(titles)) if level is None or levels[k] == level]
    anchor = ident[1:] if ident.startswith("#") else ident
    folded = ident.casefold()

    def stripped(title: str) -> str:
        return _NUMBER_PREFIX.sub("", title, count=1).casefold() if _NUMBER_PREFIX.match(title) else ""

    # Tried in order; later stages are only worked out when the earlier ones find nothing.
    stages: list[Callable[[], list[int]]] = [
        lambda: [k for k in secs if titles[k] == ident],
        lambda: [k for k in secs if " > " in ident and paths[k] == ident],
        lambda: [k for k in secs if anchors()[k] == anchor] if _could_be_anchor(anchor) else [],
        lambda: sorted(set(secs) & defining()),
        lambda: [k for k in secs if titles[k].casefold() == folded],
        lambda: [k for k in secs if " > " in ident and paths[k].casefold().endswith(folded)],
        lambda: [k for k in secs if anchors()[k] == slugify(anchor)],
        lambda: [k for k in secs if stripped(titles[k]) == folded],
        # A bare section number: '5.3' names '5.3 Mode: ROO-MODE-PLAN-STRATEGIC'.
        lambda: [k for k in secs if titles[k].split(" ", 1)[0].rstrip(".:") == ident.rstrip(".")],
    ]
    for stage in stages:
        found = stage()
        if len(found) == 1:
            return pick(found[0])
        if found:
            raise AmbiguousTargetError(
                f"'{identifier}' matches {len(found)} sections in {doc.path or '<string>'}",
                _candidates(doc, [pick(k) for k in found]),
            )
    raise TargetNotFoundError(f"no section '{identifier}' in {doc.path or '<string>'}")


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
        if len(found) == 1:
            return found[0]
        if found:
            raise AmbiguousTargetError(
                f"{len(found)} blocks define '{block}' in {where}",
                [f"block {b.index} (line {b.start + 1})" for b in found],
            )
        raise TargetNotFoundError(f"no block defining '{block}' in {where}")
    data_blocks = [b for b in pool if b.lang in ("yaml", "yml", "json")] if lang is None else pool
    if len(data_blocks) == 1:
        return data_blocks[0]
    if data_blocks:
        raise AmbiguousTargetError(
            f"{len(data_blocks)} data blocks in {where}; name one by index or ID",
            [f"block {b.index} '{b.lang}' (line {b.start + 1})" for b in data_blocks],
        )
    raise TargetNotFoundError(f"no YAML/JSON block in {where}")
