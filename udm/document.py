"""Markdown -> sections, fenced blocks, front matter, links and IDs, with exact 0-based line ranges.

Headings are what CommonMark says they are, and only top-level ones start sections: a `#` line
inside a fence, an HTML block, a list item or a block quote does not. `udm.scanner` finds them:
a fence-aware line scanner for the common easy files, markdown-it-py (block-only) for the rest.
Data blocks are parsed on first use; links, ID references and errors are worked out on first use.

Line numbers are 0-based and ranges half-open over `Document.lines` (keepends), so
`"".join(doc.lines[a:b])` is the exact text. Messages shown to people use 1-based `file:line`.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from udm.errors import AmbiguousTargetError, DocumentError, TargetNotFoundError
from udm.ids import DEFINING_KEYS, IdMatcher, id_matcher
from udm.scanner import Heading as _Heading
from udm.scanner import scan_fast as _scan_fast
from udm.scanner import scan_markdown_it as _scan_markdown_it
from udm.simple_yaml import NOT_SIMPLE, parse_simple_yaml, simple_yaml_ids

__all__ = [
    "Block",
    "Document",
    "IdOccurrence",
    "Link",
    "Section",
    "block_ids",
    "find_block",
    "find_section",
    "load_document",
    "parse_document",
    "section_text",
    "slugify",
]

_YamlLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
DATA_LANGS = frozenset({"yaml", "yml", "json", "verify"})


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
    # Parsed data, error and defined IDs, filled on first use: most callers never read most blocks.
    _lazy: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def data(self) -> Any:
        """The parsed value of a YAML/JSON/verify block (None for other languages or on error)."""
        return self._parsed()[0]

    @property
    def error(self) -> str | None:
        """'path:line: message' when the data block does not parse, else None."""
        return self._parsed()[1]

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
    """A Markdown link `[text](target)`; kind is 'internal', 'external' or 'anchor'."""

    line: int
    text: str
    target: str
    kind: str
    section: int | None


@dataclass(frozen=True, slots=True)
class IdOccurrence:
    """One place an ID appears; kind is 'heading', 'field', 'block', 'front_matter' or 'reference'."""

    id: str
    line: int
    section: int | None
    kind: str


class Document:
    """A parsed Markdown file.

    `links`, `id_refs` and `errors` are worked out on first use (a patch needs none of them), from
    the same text and with the same rules as the rest; they can also be given, or set, directly.
    """

    __slots__ = (
        "_errors",
        "_id_refs",
        "_links",
        "_refs_context",
        "blocks",
        "content_hash",
        "front_matter",
        "front_matter_range",
        "id_defs",
        "lines",
        "parser",
        "path",
        "sections",
        "text",
    )

    def __init__(
        self,
        path: str,
        text: str,
        lines: list[str],
        sections: list[Section],
        blocks: list[Block],
        front_matter: dict[str, Any] | None,
        front_matter_range: tuple[int, int] | None,
        links: list[Link] | None,
        id_defs: list[IdOccurrence],
        id_refs: list[IdOccurrence] | None,
        errors: list[str] | None,
        content_hash: str,
        parser: str = "markdown-it",
    ) -> None:
        self.path = path
        self.text = text
        self.lines = lines
        self.sections = sections
        self.blocks = blocks
        self.front_matter = front_matter
        self.front_matter_range = front_matter_range
        self._links = links
        self.id_defs = id_defs
        self._id_refs = id_refs
        self._errors = errors
        self.content_hash = content_hash
        self.parser = parser
        self._refs_context: _RefsContext | None = None

    def __repr__(self) -> str:
        return (
            f"Document(path={self.path!r}, sections={len(self.sections)}, blocks={len(self.blocks)}, "
            f"parser={self.parser!r})"
        )

    @property
    def links(self) -> list[Link]:
        """Markdown links outside fences and code spans, in text order."""
        if self._links is None:
            self._links = _find_links(self, self._context())
        return self._links

    @links.setter
    def links(self, value: list[Link]) -> None:
        self._links = value

    @property
    def id_refs(self) -> list[IdOccurrence]:
        """Every ID occurrence that is not a definition, in text order."""
        if self._id_refs is None:
            self._id_refs = _find_refs(self, self._context())
        return self._id_refs

    @id_refs.setter
    def id_refs(self, value: list[IdOccurrence]) -> None:
        self._id_refs = value

    @property
    def errors(self) -> list[str]:
        """Front matter and data blocks that do not parse, as 'path:line: message', in file order."""
        if self._errors is None:
            ctx = self._context()
            found = [ctx.front_error] if ctx.front_error else []
            found += [b.error for b in self.blocks if b.error]
            self._errors = found
        return self._errors

    @errors.setter
    def errors(self, value: list[str]) -> None:
        self._errors = value

    def _context(self) -> _RefsContext:
        if self._refs_context is None:
            self._refs_context = _RefsContext(id_matcher(None), frozenset(), 0, None)
        return self._refs_context

    def section_at(self, line: int) -> Section | None:
        """The innermost section containing a 0-based line, or None before the first heading."""
        starts = [s.start for s in self.sections]
        i = bisect.bisect_right(starts, line) - 1
        return self.sections[i] if i >= 0 else None


@dataclass(frozen=True, slots=True)
class _RefsContext:
    """What the lazy parts of a Document need from its parse."""

    matcher: IdMatcher
    def_keys: frozenset[tuple[str, int]]
    first: int  # the first line after the front matter
    front_error: str | None


# ---------------------------------------------------------------------------------------------
# Helpers


# ASCII characters `[^\w\- ]` drops: the same deletion as one bytes.translate, without the regex.
_SLUG_DROP = bytes(c for c in range(128) if not (chr(c).isalnum() or chr(c) in "_- "))


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
    text = unicodedata.normalize("NFKC", title).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


_LINK = re.compile(r"(?<!!)\[([^\]\n]*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_CODE_SPAN = re.compile(r"`+[^`\n]*`+")
_LINK_HINT = re.compile(r"\]\(")
_FIELD_ANY = re.compile(
    r"^[ \t]*(?:[-*+][ \t]+)?\*\*(?:[A-Za-z]+ )?ID:?\*\*:?[ \t]*`?([A-Za-z0-9][A-Za-z0-9_.\-]*)`?",
    re.MULTILINE,
)


def _link_kind(target: str) -> str:
    if target.startswith("#"):
        return "anchor"
    if re.match(r"[a-zA-Z][a-zA-Z0-9+.\-]*:", target):
        return "external"
    return "internal"


def _collect_ids(data: Any, out: list[str]) -> None:
    if isinstance(data, dict):
        for key in DEFINING_KEYS:
            value = data.get(key)
            if isinstance(value, str) and value.strip() and " " not in value.strip():
                out.append(value.strip())
        for value in data.values():
            if isinstance(value, (dict, list)):
                _collect_ids(value, out)
    elif isinstance(data, list):
        for item in data:
            _collect_ids(item, out)


def block_ids(block: Block) -> list[str]:
    """IDs a block defines: string values of id/task_id/mode_id/tool_id keys, at any depth."""
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


def _parse_data(lang: str, text: str, path: str, first_line: int) -> tuple[Any, str | None]:
    """Parse a data block; errors are 'path:line: message' with the 1-based file line."""
    where = path or "<string>"
    # Parsers report end-of-input problems one line past the text; keep the line inside the block.
    last = first_line + max(1, text.count("\n"))
    if lang == "json":
        try:
            return json.loads(text), None
        except json.JSONDecodeError as exc:
            return None, f"{where}:{min(first_line + exc.lineno, last)}: invalid JSON: {exc.msg}"
    simple = parse_simple_yaml(text)
    if simple is not NOT_SIMPLE:
        return simple, None
    try:
        return yaml.load(text, Loader=_YamlLoader), None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = min(first_line + (mark.line + 1 if mark is not None else 1), last)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return None, f"{where}:{line}: invalid YAML: {problem}"


def _front_matter(
    lines: list[str], path: str
) -> tuple[dict[str, Any] | None, tuple[int, int] | None, str | None]:
    if not lines or lines[0].rstrip("\r\n") != "---":
        return None, None, None
    for j in range(1, len(lines)):
        if lines[j].rstrip("\r\n") in ("---", "..."):
            body = "".join(lines[1:j])
            data, error = _parse_data("yaml", body, path, 1)
            if error is None and data is not None and not isinstance(data, dict):
                error = f"{path or '<string>'}:1: front matter is not a mapping"
                data = None
            return (data or None) if error is None else None, (0, j + 1), error
    return None, None, None


# ---------------------------------------------------------------------------------------------
# Parsing


def parse_document(text: str, path: str = "", id_patterns: Iterable[str] | None = None) -> Document:
    """Parse Markdown text; bad blocks become `errors`, never exceptions.

    Data blocks are parsed on first use of their `data`/`error` (or of `Document.errors`); the IDs
    they define are found at once, by a grammar-checked scan of flat blocks or by parsing the rest.
    """
    lines = text.splitlines(keepends=True)
    matcher = id_matcher(id_patterns)

    front, fm_range, fm_error = _front_matter(lines, path)
    first = fm_range[1] if fm_range else 0

    scanned = _scan_fast(lines, first)
    parser = "scanner"
    if scanned is None:
        parser = "markdown-it"
        # Blank the front matter so markdown-it keeps line numbers but does not see a heading in it.
        md_text = text if not fm_range else "\n" * first + "".join(lines[first:])
        scanned = _scan_markdown_it(lines, md_text)
    headings, fences = scanned

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
    starts = [h.start for h in headings]

    def section_of(line: int) -> int | None:
        i = bisect.bisect_right(starts, line) - 1
        return i if i >= 0 else None

    # Blocks (their data is parsed on first use).
    blocks: list[Block] = []
    for k, f in enumerate(fences):
        info = f.info
        # Positional arguments: a frozen dataclass is built field by field, and keywords cost more.
        lang = info.split(maxsplit=1)[0].lower() if info else ""
        blocks.append(
            Block(
                k,
                lang,
                info,
                f.start,
                f.end,
                f.start + 1,
                f.content_end,
                f.markup,
                f.indent,
                section_of(f.start),
                f.text,
                path,
            )
        )

    # ID definitions.
    defs: list[IdOccurrence] = []
    def_keys: set[tuple[str, int]] = set()

    def define(ident: str, line: int, kind: str) -> None:
        if (ident, line) in def_keys:
            return
        def_keys.add((ident, line))
        defs.append(IdOccurrence(ident, line, section_of(line), kind))

    for line, ident in _heading_ids(matcher, lines, headings):
        define(ident, line, "heading")
    if front:
        for ident in _front_ids(front):
            define(ident, _line_of(lines, ident, 0, fm_range[1] if fm_range else 1), "front_matter")
    if "**" in text:
        line_at = _line_finder(lines)
        fence_lines = _fence_lines(blocks, n)
        heading_lines = {h.start for h in headings}
        for fm in _FIELD_ANY.finditer(text):
            i = line_at(fm.start())
            if i >= first and not fence_lines[i] and i not in heading_lines:
                define(fm.group(1), i, "field")
    for b in blocks:
        for ident in block_ids(b):
            define(ident, _line_of(lines, ident, b.content_start, b.content_end), "block")

    # Sections with their IDs.
    by_section: dict[int, list[str]] = {}
    for d in defs:
        if d.section is not None:
            sec = d.section
            # A definition belongs to the section whose own body holds it.
            by_section.setdefault(sec, []).append(d.id)
    sections: list[Section] = []
    seen_anchors: dict[str, int] = {}
    paths: list[str] = []
    for k, h in enumerate(headings):
        parent = parents[k]
        sec_path = f"{paths[parent]} > {h.title}" if parent is not None else h.title
        paths.append(sec_path)
        base = slugify(h.title)
        anchor = base
        if base in seen_anchors:
            seen_anchors[base] += 1
            anchor = f"{base}-{seen_anchors[base]}"
            while anchor in seen_anchors:
                seen_anchors[base] += 1
                anchor = f"{base}-{seen_anchors[base]}"
        seen_anchors.setdefault(anchor, 0)
        ids = tuple(dict.fromkeys(by_section.get(k, [])))
        sections.append(
            Section(
                k,
                h.level,
                h.title,
                h.start,
                h.end,
                h.start,
                ends[k],
                own_ends[k],
                sec_path,
                anchor,
                parent,
                ids,
            )
        )
    doc = Document(
        path=path,
        text=text,
        lines=lines,
        sections=sections,
        blocks=blocks,
        front_matter=front,
        front_matter_range=fm_range,
        links=None,
        id_defs=defs,
        id_refs=None,
        errors=None,
        content_hash=hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
        parser=parser,
    )
    doc._refs_context = _RefsContext(matcher, frozenset(def_keys), first, fm_error)
    return doc


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


def _fence_lines(blocks: list[Block], n: int) -> bytearray:
    """One byte per line, set on the lines of fenced blocks (fences included)."""
    marks = bytearray(n)
    for b in blocks:
        marks[b.start : b.end] = b"\x01" * (b.end - b.start)
    return marks


def _section_finder(doc: Document) -> Callable[[int], int | None]:
    starts = [s.start for s in doc.sections]

    def section_of(line: int) -> int | None:
        i = bisect.bisect_right(starts, line) - 1
        return i if i >= 0 else None

    return section_of


def _find_refs(doc: Document, ctx: _RefsContext) -> list[IdOccurrence]:
    """Every ID occurrence that is not a definition, found in one pass over the text."""
    line_at = _line_finder(doc.lines)
    section_of = _section_finder(doc)
    refs: list[IdOccurrence] = []
    for im in ctx.matcher.finditer(doc.text):
        at = line_at(im.start())
        ident = im.group(0)
        if (ident, at) not in ctx.def_keys:
            refs.append(IdOccurrence(ident, at, section_of(at), "reference"))
    return refs


def _find_links(doc: Document, ctx: _RefsContext) -> list[Link]:
    """Links outside fences and code spans."""
    text, lines = doc.text, doc.lines
    links: list[Link] = []
    if "](" not in text:
        return links
    line_at = _line_finder(lines)
    section_of = _section_finder(doc)
    fence_lines = _fence_lines(doc.blocks, len(lines))
    seen_lines: set[int] = set()
    for hit in _LINK_HINT.finditer(text):
        i = line_at(hit.start())
        if i < ctx.first or fence_lines[i] or i in seen_lines:
            continue
        seen_lines.add(i)
        src = lines[i]
        plain = _CODE_SPAN.sub("", src) if "`" in src else src
        for lm in _LINK.finditer(plain):
            target = lm.group(2)
            links.append(Link(i, lm.group(1), target, _link_kind(target), section_of(i)))
    return links


def _front_ids(front: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for key in DEFINING_KEYS:
        value = front.get(key)
        if isinstance(value, str) and value.strip() and " " not in value.strip():
            out.append(value.strip())
    return out


def _line_of(lines: list[str], needle: str, start: int, end: int) -> int:
    """The first line in [start, end) containing `needle`, else `start` (or the line before it)."""
    for i in range(start, min(end, len(lines))):
        if needle in lines[i]:
            return i
    return max(0, start - 1) if start >= len(lines) else start


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


_HEADING_ID = re.compile(r"(#{1,6})\s+(.*?)\s*#*\s*$")
_NUMBER_PREFIX = re.compile(r"(?:\d+(?:\.[0-9A-Za-z]+)*\.?|[A-Z](?:\.\d+)*\.?)\s+")


def find_section(doc: Document, identifier: str) -> Section:
    """Resolve heading text, heading path, anchor, '#anchor' or a defined ID to one section."""
    ident = identifier.strip()
    if not ident:
        raise TargetNotFoundError("empty section identifier")
    level: int | None = None
    m = _HEADING_ID.fullmatch(ident)
    if m:
        level = len(m.group(1))
        ident = m.group(2).strip()
    # A heading written with its hashes names its level too.
    secs = [s for s in doc.sections if level is None or s.level == level]
    anchor = ident[1:] if ident.startswith("#") else ident
    folded = ident.casefold()

    def stripped(title: str) -> str:
        return _NUMBER_PREFIX.sub("", title, count=1).casefold() if _NUMBER_PREFIX.match(title) else ""

    slug = slugify(anchor)
    # Tried in order; later stages are only worked out when the earlier ones find nothing.
    stages: list[Callable[[], list[Section]]] = [
        lambda: [s for s in secs if s.title == ident and (level is None or s.level == level)],
        lambda: [s for s in secs if " > " in ident and s.path == ident],
        lambda: [s for s in secs if s.anchor == anchor],
        lambda: [s for s in secs if ident in s.ids],
        lambda: [s for s in secs if s.title.casefold() == folded and (level is None or s.level == level)],
        lambda: [s for s in secs if " > " in ident and s.path.casefold().endswith(folded)],
        lambda: [s for s in secs if s.anchor == slug],
        lambda: [s for s in secs if stripped(s.title) == folded],
        # A bare section number: '5.3' names '5.3 Mode: ROO-MODE-PLAN-STRATEGIC'.
        lambda: [s for s in secs if s.title.split(" ", 1)[0].rstrip(".:") == ident.rstrip(".")],
    ]
    for stage in stages:
        found = stage()
        if len(found) == 1:
            return found[0]
        if found:
            raise AmbiguousTargetError(
                f"'{identifier}' matches {len(found)} sections in {doc.path or '<string>'}",
                _candidates(doc, found),
            )
    raise TargetNotFoundError(f"no section '{identifier}' in {doc.path or '<string>'}")


def find_block(
    doc: Document, section: Section | None, block: int | str | None, lang: str | None = None
) -> Block:
    """A fenced block by index among the section's own blocks, by defined ID, or the only data block."""
    where = f"{doc.path or '<string>'}" + (f" section '{section.path}'" if section else "")
    pool = [b for b in doc.blocks if section is None or b.section == section.index]
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
