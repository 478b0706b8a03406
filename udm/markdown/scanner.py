"""One CommonMark/GFM parse of a Markdown (or MDX) file: headings, fences, links, HTML and MDX blocks.

markdown-it-pyrs (the Rust port of markdown-it) parses the whole file once with source maps; this
module turns its tree into the document model's parts with 0-based line numbers over
`split_lines(text)`. Source maps are UTF-8 byte offsets into the text the parser saw; that text has
exactly the lines of the file (front matter blanked, line endings made `\\n`, NUL made U+FFFD as
CommonMark asks), so a byte offset maps to a line through one table of line-start offsets.

MDX: ESM `import`/`export` paragraphs and JSX tags/expressions are blanked out of the text the
parser sees (their lines are kept as opaque blocks), so they are never read as Markdown; what sits
between a JSX opening and closing tag stays Markdown, as MDX renders it. Indented code does not
exist in MDX, so the MDX parser has that rule off.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from html import unescape
from typing import Any

from markdown_it_pyrs import MarkdownIt, Node
from mdurl import decode as _url_decode

from udm.markdown.lines import split_lines

__all__ = [
    "ATX_HEADING",
    "PARSER_NAME",
    "Fence",
    "Heading",
    "Opaque",
    "Parsed",
    "RawLink",
    "atx_title",
    "parse_markdown",
]

PARSER_NAME = "markdown-it-pyrs"


@dataclass(slots=True)
class Heading:
    """An ATX or setext heading: level, title and its lines [start, end)."""

    level: int
    title: str
    start: int
    end: int


@dataclass(slots=True)
class Fence:
    """A fenced block: its lines [start, end), content end, info string, fence markup, indent and text."""

    start: int
    end: int
    content_end: int
    info: str
    markup: str
    indent: int
    text: str


@dataclass(slots=True)
class RawLink:
    """A link as parsed: 0-based line, text, target (decoded), form and byte offset (for ordering)."""

    line: int
    text: str
    target: str
    form: str
    offset: int


@dataclass(slots=True)
class Opaque:
    """An MDX block kept out of the Markdown parse: kind 'esm' or 'jsx', lines [start, end)."""

    kind: str
    start: int
    end: int


@dataclass(slots=True)
class Parsed:
    """What one parse found."""

    headings: list[Heading]
    fences: list[Fence]
    links: list[RawLink]
    opaque: list[Opaque] = field(default_factory=list)


# GFM as GitHub renders it: tables, strikethrough, task lists, extended autolinks (www., http://,
# e-mail), footnotes; front matter is read apart (udm.markdown.blockdata) and blanked before the parse.
_GFM: list[Any] = ["table", "strikethrough", "tasklist", "autolink_ext", "footnote"]
_COMMONMARK_RULES: list[Any] = [
    "blockquote",
    "code",
    "fence",
    "heading",
    "hr",
    "lheading",
    "list",
    "paragraph",
    "reference",
    "autolink",
    "backticks",
    "emphasis",
    "entity",
    "escape",
    "image",
    "link",
    "newline",
    "html_block",
    "html_inline",
]
_PARSERS: dict[bool, MarkdownIt] = {}
_LINKISH = re.compile(r"[\[<:@]|www\.", re.IGNORECASE)
_INLINE_HOLDERS = frozenset({"paragraph", "heading", "lheading", "tcell"})


def _parser(mdx: bool) -> MarkdownIt:
    found = _PARSERS.get(mdx)
    if found is None:
        if mdx:
            # No indented code in MDX: JSX children are indented and stay Markdown.
            found = MarkdownIt("zero").enable_many([r for r in _COMMONMARK_RULES if r != "code"] + _GFM)
        else:
            found = MarkdownIt("commonmark").enable_many(_GFM)
        _PARSERS[mdx] = found
    return found


# Greedy title, trimmed by atx_title: a lazy title before optional blanks is quadratic on long lines.
ATX_HEADING = re.compile(r"(#{1,6})(?:[ \t]+(.*))?$")
_FENCE_CLOSE_CACHE: dict[tuple[str, int], re.Pattern[str]] = {}


def atx_title(rest: str | None) -> str:
    """An ATX heading's text: trimmed, without a closing `#` sequence (which needs a blank before it)."""
    text = (rest or "").strip()
    if not text.endswith("#"):
        return text
    bare = text.rstrip("#")
    if not bare:
        return ""
    return bare.rstrip() if bare[-1] in " \t" else text


def _closer(markup: str) -> re.Pattern[str]:
    # A closing fence may sit behind container markers ('> ', list indentation).
    key = (markup[0], len(markup))
    pat = _FENCE_CLOSE_CACHE.get(key)
    if pat is None:
        ch = re.escape(markup[0])
        pat = re.compile(rf"[ \t>]*{ch}{{{len(markup)},}}[ \t]*$")
        _FENCE_CLOSE_CACHE[key] = pat
    return pat


# href/src attributes of HTML and JSX tags: "x", 'x', or a JSX string expression {"x"} / {'x'} / {`x`}.
_ATTR = re.compile(
    r"""(?<![\w-])(href|src)[ \t\r\n]*=[ \t\r\n]*(?:"([^"]*)"|'([^']*)'|\{[ \t]*(?:"([^"]*)"|'([^']*)'|`([^`$]*)`)[ \t]*\}|([^\s"'=<>`{}]+))""",
    re.IGNORECASE,
)
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)


def _attr_links(content: str, base: int, form: str, out: list[tuple[int, str, str]]) -> None:
    """(byte offset, target, form) of each href/src attribute in HTML or JSX text starting at byte `base`."""
    if "<!--" in content:
        content = _COMMENT.sub(lambda m: " " * len(m.group(0).encode("utf-8")), content)
    ascii_text = content.isascii()
    done_chars = done_bytes = 0  # counted on from the last match: linear on large blocks
    for m in _ATTR.finditer(content):
        value = next(g for g in m.groups()[1:] if g is not None)
        if ascii_text:
            at = m.start()
        else:
            done_bytes += len(content[done_chars : m.start()].encode("utf-8"))
            done_chars = at = m.start()
            at = done_bytes
        target = unescape(value).strip()
        if target:
            out.append((base + at, target, form))


def _text_of(node: Node) -> str:
    """The plain text of an inline node's children (soft and hard breaks as spaces)."""
    parts: list[str] = []
    stack = list(reversed(node.children))
    while stack:
        child = stack.pop()
        name = child.name
        if name in ("text", "text_special", "code_inline"):
            parts.append(child.meta.get("content", "") if name != "code_inline" else _text_of(child))
        elif name in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.children:
            stack.extend(reversed(child.children))
    return "".join(parts)


def _normalise(lines: list[str], first: int) -> str:
    """The text the parser sees: the same lines, front matter blanked, `\\n` endings, NUL as U+FFFD."""
    body = "".join(lines[first:])
    if "\r" in body:
        body = body.replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in body:
        body = body.replace("\x00", "\ufffd")
    if body and not body.endswith("\n"):
        body += "\n"
    return "\n" * first + body


def parse_markdown(lines: list[str], first: int = 0, *, mdx: bool = False) -> Parsed:
    """Headings (top level only), fences (any depth), links and MDX blocks of a file's lines.

    `first` is the first line after the front matter (the lines before it are blanked).
    """
    src = _normalise(lines, first)
    opaque: list[Opaque] = []
    jsx_links: list[tuple[int, str, str]] = []
    if mdx:
        src, opaque, jsx_links = _mask_mdx(src, first)
    fed = split_lines(src)
    if src.isascii():
        starts = [0, *itertools.accumulate(map(len, fed))]
    else:
        starts = [0, *itertools.accumulate(len(line.encode("utf-8")) for line in fed)]
    count = len(fed)

    def line_of(byte: int) -> int:
        return min(bisect.bisect_right(starts, byte) - 1, max(count - 1, 0))

    encoded: dict[int, bytes] = {}

    def char_at(byte: int) -> str:
        k = line_of(byte)
        if k >= count:
            return ""
        line = fed[k]
        if line.isascii():
            return line[byte - starts[k] : byte - starts[k] + 1]
        raw = encoded.get(k)
        if raw is None:
            raw = encoded[k] = line.encode("utf-8")
        return raw[byte - starts[k] : byte - starts[k] + 1].decode("ascii", "replace")

    root = _parser(mdx).tree(src)
    headings: list[Heading] = []
    fences: list[Fence] = []
    found: list[tuple[int, str, str, str]] = []  # (byte offset, text, url, form)
    html: list[tuple[int, str, str]] = list(jsx_links)
    for node in root.children:
        name = node.name
        if name == "heading" or name == "lheading":
            span = node.srcmap
            if span is None:
                continue
            start, end = line_of(span[0]), line_of(max(span[1], span[0])) + 1
            level = int(node.meta.get("level", 1))
            if name == "heading":
                m = ATX_HEADING.match(lines[start].strip()) if start < len(lines) else None
                title = atx_title(m.group(2)) if m else _text_of(node).strip()
            else:
                title = " ".join(part.strip() for part in lines[start : end - 1]).strip()
            headings.append(Heading(level, title, start, end))
    # Everything else, at any depth, in one walk. In ASCII text an inline run without '[', '<', ':'
    # or '@' (every link, autolink, image and HTML tag needs one) is not walked into: most prose.
    skip_plain = src.isascii()
    search = _LINKISH.search
    stack: list[Node] = list(reversed(root.children))
    while stack:
        node = stack.pop()
        name = node.name
        if name == "text" or name == "softbreak" or name == "code_inline" or name == "code_block":
            continue
        if skip_plain and name in _INLINE_HOLDERS:
            span = node.srcmap
            if span is not None and search(src, span[0], span[1]) is None:
                continue
        if name == "link" or name == "image" or name == "autolink" or name == "linkify":
            span = node.srcmap
            url = node.meta.get("url", "")
            if span is not None:
                if name == "link":
                    form = "inline" if char_at(span[1] - 1) == ")" else "reference"
                elif name == "image":
                    form = "image"
                elif name == "autolink":
                    form = "autolink" if char_at(span[0]) == "<" else "bare"
                else:
                    form = "bare"
                found.append((span[0], _text_of(node), url, form))
            if name == "image":
                continue  # an image's description is its alt text: nothing in it is clickable
        elif name == "fence":
            span = node.srcmap
            if span is not None:
                fences.append(_fence(node, span, lines, line_of))
            continue
        elif name == "html_block" or name == "html_inline":
            span = node.srcmap
            content = node.meta.get("content", "")
            if span is not None and ("href" in content.lower() or "src" in content.lower()):
                _attr_links(content, span[0], "html", html)
            continue
        children = node.children
        if children:
            stack.extend(reversed(children))
    links = [RawLink(line_of(at), text, _decode(url), form, at) for at, text, url, form in found] + [
        RawLink(line_of(at), "", target, form, at) for at, target, form in html
    ]
    links.sort(key=lambda link: link.offset)
    return Parsed(headings, fences, links, opaque)


def _decode(url: str) -> str:
    """A link target as a reader sees it: the parser's percent-encoding undone, reserved characters kept."""
    if "%" not in url:
        return url
    try:
        return _url_decode(url)
    except (ValueError, UnicodeError):
        return url


def _fence(node: Node, span: tuple[int, int], lines: list[str], line_of: Callable[[int], int]) -> Fence:
    """A fence node as the document model's Fence."""
    start = line_of(span[0])
    end = line_of(max(span[1], span[0])) + 1
    meta = node.meta
    markup = str(meta.get("marker", "`")) * int(meta.get("marker_len", 3))
    line = lines[start] if start < len(lines) else ""
    indent = len(line) - len(line.lstrip(" "))
    closed = (
        end - 1 > start
        and end - 1 < len(lines)
        and bool(_closer(markup).match(lines[end - 1].rstrip("\r\n")))
    )
    return Fence(
        start,
        end,
        end - 1 if closed else end,
        str(meta.get("info", "")).strip(),
        markup,
        indent,
        meta.get("content", ""),
    )


# ---------------------------------------------------------------------------------------------
# MDX

_ESM_START = re.compile(r"(?:import|export)(?=[\s{*])")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})")
_JSX_LINE = re.compile(r"[ \t]*(?:<(?:[A-Za-z_$][\w.:$-]*|/|>)|\{)")
_NAME_CHARS = re.compile(r"[\w.:$-]*")


def _skip_braces(src: str, q: int) -> int | None:
    """The offset after the `}` balancing the `{` at q (strings and template literals skipped), or None."""
    depth = 0
    n = len(src)
    while q < n:
        c = src[q]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return q + 1
        elif c in "\"'`":
            end = src.find(c, q + 1)
            if end < 0:
                return None
            q = end
        q += 1
    return None


def _scan_tag(src: str, p: int) -> int | None:
    """The offset after a JSX tag starting with `<` at p (attributes may span lines), or None."""
    n = len(src)
    q = p + 1
    if q < n and src[q] == "/":
        q += 1
    q = _NAME_CHARS.match(src, q).end()  # type: ignore[union-attr]
    while q < n:
        c = src[q]
        if c == ">":
            return q + 1
        if c == "/" and src.startswith("/>", q):
            return q + 2
        if c == "\n" and src.startswith("\n\n", q):
            return None  # a blank line ends any tag: this was text
        if c in "\"'":
            end = src.find(c, q + 1)
            if end < 0:
                return None
            q = end + 1
            continue
        if c == "{":
            end2 = _skip_braces(src, q)
            if end2 is None:
                return None
            q = end2
            continue
        if c == "<":
            return None
        q += 1
    return None


def _mask_mdx(src: str, first: int) -> tuple[str, list[Opaque], list[tuple[int, str, str]]]:
    """The text with ESM and JSX blanked (newlines kept), the opaque blocks, and JSX href/src links."""
    lines = split_lines(src)
    offsets = [0, *itertools.accumulate(map(len, lines))]
    spans: list[tuple[int, int]] = []
    opaque: list[Opaque] = []
    fence: tuple[str, int] | None = None
    i = first
    n = len(lines)
    prev_blank = True

    def line_at(pos: int) -> int:
        return bisect.bisect_right(offsets, pos) - 1

    while i < n:
        line = lines[i]
        if fence is not None:
            stripped = line.strip()
            if stripped.startswith(fence[0] * fence[1]) and not stripped.strip(fence[0]):
                fence = None
            i += 1
            prev_blank = False
            continue
        fm = _FENCE_OPEN.match(line)
        if fm:
            fence = (fm.group(1)[0], len(fm.group(1)))
            i += 1
            prev_blank = False
            continue
        if prev_blank and _ESM_START.match(line):
            j = i
            while j < n and lines[j].strip():
                j += 1
            spans.append((offsets[i], offsets[j]))
            opaque.append(Opaque("esm", i, j))
            i, prev_blank = j, False
            continue
        jm = _JSX_LINE.match(line)
        if jm:
            pos = offsets[i] + len(line) - len(line.lstrip(" \t"))
            end = _mask_line_tags(src, pos, spans)
            if end is not None:
                last = line_at(max(end - 1, pos))
                if opaque and opaque[-1].kind == "jsx" and opaque[-1].end == i:
                    opaque[-1].end = last + 1  # one block for a run of JSX lines
                else:
                    opaque.append(Opaque("jsx", i, last + 1))
                # Text after the tags on their last line stays Markdown; the next line starts fresh.
                i = last + 1
                prev_blank = False
                continue
        prev_blank = not line.strip()
        i += 1
    links: list[tuple[int, str, str]] = []
    if not spans:
        return src, opaque, links
    out: list[str] = []
    at = 0
    ascii_src = src.isascii()
    done_bytes = 0  # the byte offset of `at`, counted on span by span
    for a, b in spans:
        out.append(src[at:a])
        chunk = src[a:b]
        if not ascii_src:
            done_bytes += len(src[at:a].encode("utf-8"))
        base = a if ascii_src else done_bytes
        if not ascii_src:
            done_bytes += len(chunk.encode("utf-8"))
        if chunk.lstrip().startswith("<"):
            _attr_links(chunk, base, "jsx", links)
        out.append(re.sub(r"[^\n]", " ", chunk))
        at = b
    out.append(src[at:])
    return "".join(out), opaque, links


def _mask_line_tags(src: str, pos: int, spans: list[tuple[int, int]]) -> int | None:
    """Blank the JSX tags and expressions from `pos` on while they follow each other on a line; their end."""
    end: int | None = None
    n = len(src)
    while pos < n:
        c = src[pos]
        stop = _scan_tag(src, pos) if c == "<" else _skip_braces(src, pos) if c == "{" else None
        if stop is None:
            break
        spans.append((pos, stop))
        end = stop
        pos = stop
        while pos < n and src[pos] in " \t":
            pos += 1
        if pos >= n or src[pos] == "\n":
            break
    return end
