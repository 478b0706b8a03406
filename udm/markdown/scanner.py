"""One CommonMark/GFM parse of a Markdown (or MDX) file: headings, fences, links, HTML and MDX blocks.

markdown-it-pyrs (the Rust port of markdown-it) parses the whole file once with source maps; this
module turns its tree into the document model's parts with 0-based line numbers over
`split_lines(text)`. Source maps are UTF-8 byte offsets into the text the parser saw; that text has
exactly the lines of the file (front matter blanked, line endings made `\\n`, NUL made U+FFFD as
CommonMark asks), so a byte offset maps to a line through one table of line-start offsets.

MDX: ESM `import`/`export` paragraphs and JSX tags/expressions are blanked out of the text the
parser sees (`udm.markdown.mdx`). Indented code does not exist in MDX, so the MDX parser has that
rule off.

The walk over the tree looks only into nodes whose source holds a character every link, image,
autolink, HTML tag or fence needs (`[`, `<`, `@`, `://`, `www.`, a fence marker): most prose,
lists and tables are passed over whole.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from markdown_it_pyrs import Node
from mdurl import decode as _url_decode

from udm.markdown.gitbook import find_gitbook_links
from udm.markdown.indented import unindent
from udm.markdown.lines import ByteOffsets, split_lines
from udm.markdown.liquid import find_liquid_links, liquid_target
from udm.markdown.mdx import Opaque, attr_links, blank_spans
from udm.markdown.mdx import mask_mdx as _mask_mdx
from udm.markdown.shortcodes import find_refs, opaque_shortcodes, parse_ref
from udm.markdown.tree import deflist_tree, parse_tree

__all__ = [
    "ATX_HEADING",
    "PARSER_NAME",
    "Fence",
    "Heading",
    "Opaque",
    "Parsed",
    "RawLink",
    "atx_title",
    "inline_text",
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
    # The text the heading renders to, when its source holds markup that changes it (entities, links,
    # emphasis, HTML): its anchor is made from this, as GitHub and the generators make it.
    text: str | None = None
    # An id the heading names itself (`{#id}`, `{: #id .c}`, react.dev's `{/*id*/}`): its anchor.
    anchor: str | None = None


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
class Parsed:
    """What one parse found."""

    headings: list[Heading]
    fences: list[Fence]
    links: list[RawLink]
    opaque: list[Opaque] = field(default_factory=list)
    # Set when a parser failure turned rules off for this file (udm.markdown.tree): what that cost.
    note: str | None = None


# What the source of every link (`[`), image, autolink and HTML tag (`<`), GFM bare URL (`://`,
# `www.`, an e-mail's `@`) and fence needs: a node whose source holds none of them is not walked into.
_MARKS = ("[", "<", "@", "://", "```", "~~~")
_MARKS_BYTES = tuple(m.encode("ascii") for m in _MARKS)
# Nodes with nothing to find below them.
_LEAVES = frozenset({"text", "text_special", "softbreak", "hardbreak", "code_inline", "code_block"})
_LINK_NODES = frozenset({"link", "image", "autolink", "linkify"})
# Inline wrappers whose source span markdown-it-pyrs can misplace by a few bytes (an `em` opening a
# block quote's paragraph starts after its `[`): never skipped for want of a mark in that span.
_WRAPPERS = frozenset({"em", "strong", "strikethrough"})
# Nodes no heading can sit in.
_NO_HEADINGS = _LEAVES | {"paragraph", "fence", "html_block", "table", "hr"}


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


# Marks after which a heading's source and its rendered text may differ in what a slug keeps (a
# code span's backticks and emphasis marks are no text: Mintlify's ids keep most punctuation).
_RENDERS_OTHERWISE = re.compile(r"[&\\\[<_`*]")
# A heading's own id at its end: an attribute list holding `#id` (Docusaurus, VitePress, MkDocs
# attr_list, Hugo, Pandoc) or react.dev's MDX comment `{/*id*/}`.
_OWN_ID = re.compile(
    r"[ \t]\{(?::[ \t]*)?(?:[^{}#]*[ \t])?#([A-Za-z0-9_][\w.:-]*)(?:[ \t][^{}]*)?\}$"
    r"|[ \t]\{/\*[ \t]*([A-Za-z0-9_][\w.:-]*)[ \t]*\*/\}$"
    # Python-Markdown's attr_list also takes the id as a key: `{ id=navigation-path }`.
    r"|[ \t]\{:?[ \t]*(?:[^{}=]*[ \t])?id=([\"']?)([A-Za-z0-9_][\w.:-]*)\3(?:[ \t][^{}]*)?[ \t]*\}$"
)


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


def inline_text(markdown: str) -> str:
    """The plain text a line of Markdown renders to (markup, tags and link targets left out, entities
    decoded), as a slug is made from it."""
    return _text_of(parse_tree(markdown if markdown.endswith("\n") else markdown + "\n").root).strip()


def _normalise(lines: list[str], first: int) -> tuple[str, bool]:
    """The text the parser sees: the same lines, front matter blanked, `\\n` endings, NUL as U+FFFD.

    The flag says it is exactly `"".join(lines)` (so its lines are `lines`).
    """
    body = "".join(lines[first:])
    same = first == 0
    if "\r" in body:
        body = body.replace("\r\n", "\n").replace("\r", "\n")
        same = False
    if "\x00" in body:
        body = body.replace("\x00", "\ufffd")
        same = False
    if body and not body.endswith("\n"):
        body += "\n"
        same = False
    return "\n" * first + body, same


class _Where:
    """Where a byte offset of the parser's text falls: its line, its character, and the marks after it."""

    __slots__ = ("count", "encoded", "fed", "marks", "starts")

    def __init__(self, src: str, fed: list[str]) -> None:
        self.fed = fed
        self.count = len(fed)
        data: str | bytes
        if src.isascii():
            data = src
            self.starts = [0, *itertools.accumulate(map(len, fed))]
            marks: tuple[Any, ...] = _MARKS
            www: Any = "www."
        else:
            data = src.encode("utf-8")
            self.starts = [0, *itertools.accumulate(len(line.encode("utf-8")) for line in fed)]
            marks, www = _MARKS_BYTES, b"www."
        found: list[int] = []
        for mark in marks:
            found += _positions(data, mark)
        if "w" in src or "W" in src:
            found += _positions(data.lower(), www)
        found.sort()
        self.marks = found
        self.encoded: dict[int, bytes] = {}

    def line_of(self, byte: int) -> int:
        """The 0-based line holding byte offset `byte`."""
        return min(bisect.bisect_right(self.starts, byte) - 1, max(self.count - 1, 0))

    def char_at(self, byte: int) -> str:
        """The (ASCII) character at a byte offset; '' past the end, U+FFFD inside a multi-byte one."""
        k = self.line_of(byte)
        if k >= self.count:
            return ""
        line = self.fed[k]
        at = byte - self.starts[k]
        if line.isascii():
            return line[at : at + 1]
        raw = self.encoded.get(k)
        if raw is None:
            raw = self.encoded[k] = line.encode("utf-8")
        return raw[at : at + 1].decode("ascii", "replace")

    def marked(self, span: tuple[int, int]) -> bool:
        """Whether a mark (see `_MARKS`) starts inside the byte span."""
        marks = self.marks
        i = bisect.bisect_left(marks, span[0])
        return i < len(marks) and marks[i] < span[1]


def _positions(data: Any, mark: Any) -> list[int]:
    """Every offset where `mark` starts in `data` (str or bytes), by the C substring search."""
    out: list[int] = []
    find = data.find
    pos = find(mark)
    while pos >= 0:
        out.append(pos)
        pos = find(mark, pos + 1)
    return out


def nested_heading_texts(
    lines: list[str],
    first: int = 0,
    *,
    mdx: bool = False,
    shortcodes: tuple[tuple[str, str], ...] | None = None,
    indented: tuple[str, ...] = (),
) -> list[str]:
    """The rendered text of every heading inside a block quote, list item or other container.

    They start no section, yet GitHub and the generators give them ids too (`> #### custom_dir`).
    A parse of its own: link checks ask for it only on a page whose anchor is no section's.
    """
    src = _source(lines, first, mdx, shortcodes, indented)
    top = [node for node in parse_tree(src, mdx).root.children if node.name not in _HEADINGS]
    return _texts_below(top, _HEADINGS)


def definition_term_texts(
    lines: list[str],
    first: int = 0,
    *,
    mdx: bool = False,
    shortcodes: tuple[tuple[str, str], ...] | None = None,
    indented: tuple[str, ...] = (),
) -> list[str]:
    """The rendered text of every definition-list term (`Term` on the line before `: definition`),
    to which Hugo gives an id with `autoDefinitionTermID`; [] when the page has none or will not parse."""
    src = _source(lines, first, mdx, shortcodes, indented)
    if "\n:" not in src and "\n :" not in src and "\n  :" not in src:
        return []
    root = deflist_tree(src, mdx)
    return [] if root is None else _texts_below(list(root.children), frozenset({"definition_term"}))


_HEADINGS = frozenset({"heading", "lheading"})


# The blocks whose text renders as no Markdown: code (fenced or indented) and HTML (a comment too).
_VERBATIM_BLOCKS = frozenset({"code_block", "fence", "html_block"})


def verbatim_line_ranges(
    lines: list[str],
    first: int = 0,
    *,
    mdx: bool = False,
    shortcodes: tuple[tuple[str, str], ...] | None = None,
    indented: tuple[str, ...] = (),
) -> list[tuple[int, int]]:
    """The 0-based line ranges [start, end) of the blocks, at any depth, whose text renders as no
    Markdown: fences, indented code and HTML blocks. In order, not overlapping. A parse of its own:
    asked for only where a line's meaning depends on it (a pymdownx snippet line)."""
    src = _source(lines, first, mdx, shortcodes, indented)
    spans = _Spans(parse_tree(src, mdx).root, _VERBATIM_BLOCKS).spans
    if not spans:
        return []
    fed = src.splitlines(keepends=True)
    sizes = map(len, fed) if src.isascii() else (len(line.encode("utf-8")) for line in fed)
    starts = [0, *itertools.accumulate(sizes)]
    last = max(len(fed) - 1, 0)

    def line_of(byte: int) -> int:
        return min(bisect.bisect_right(starts, byte) - 1, last)

    return [(line_of(a), line_of(max(a, b - 1)) + 1) for a, b in spans]


def _source(
    lines: list[str],
    first: int,
    mdx: bool,
    shortcodes: tuple[tuple[str, str], ...] | None = None,
    indented: tuple[str, ...] = (),
) -> str:
    """The text the parser sees of a file's lines (as `parse_markdown` makes it, without its flag)."""
    src, _ = _normalise(lines, first)
    return _masked(src, first, mdx, shortcodes, indented)[0]


def _masked(
    src: str,
    first: int,
    mdx: bool,
    shortcodes: tuple[tuple[str, str], ...] | None,
    indented: tuple[str, ...] = (),
) -> tuple[str, list[Opaque], list[tuple[int, str, str]]]:
    """The text with what is no Markdown blanked (MDX's ESM and JSX; a Hugo site's code and raw
    paired shortcodes) and a MkDocs site's indented block bodies as block quotes, its MDX blocks, and
    the href/src links found in what was blanked."""
    if mdx:
        return _mask_mdx(src, first)
    if indented:
        src = unindent(src, indented)
    html: list[tuple[int, str, str]] = []
    inner = opaque_shortcodes(src, shortcodes) if shortcodes else []
    if inner:
        # One pass (blanking shortens the text); code holds no link, raw text's HTML links are kept.
        code = frozenset(a for a, _, kind in inner if kind == "code")
        src = blank_spans(src, [(a, b) for a, b, _ in inner], html, "html", html=True, quiet=code)
    return src, [], html


def _texts_below(nodes: list[Node], names: frozenset[str]) -> list[str]:
    """The rendered text of every node named in `names` among `nodes` or below them (not looking
    inside the nodes that can hold no heading)."""
    out: list[str] = []
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if node.name in names:
            out.append(_text_of(node).strip())
        elif node.name not in _NO_HEADINGS:
            stack.extend(node.children)
    return out


def parse_markdown(
    lines: list[str],
    first: int = 0,
    *,
    mdx: bool = False,
    shortcodes: tuple[tuple[str, str], ...] | None = None,
    autorefs: bool = False,
    indented: tuple[str, ...] = (),
    roles: bool = False,
    liquid: str = "",
) -> Parsed:
    """Headings (top level only), fences (any depth), links and MDX blocks of a file's lines.

    `first` is the first line after the front matter (the lines before it are blanked). `shortcodes`:
    the Hugo paired shortcodes whose inner text is no Markdown (`Site.shortcodes`): blanked like MDX
    blocks, the HTML links of a "raw" one kept; given (even empty) on a Hugo site only, where its
    `ref`/`relref` shortcodes are links too (elsewhere `{{< ref "x" >}}` is plain text). `autorefs`: a
    MkDocs site with mkdocs-autorefs, where a reference no definition defines is a cross-reference.
    `indented`: the markers of a MkDocs site's indented blocks (`!!!` admonitions, `???` details, `===`
    tabs; `udm.markdown.indented`), whose bodies are Markdown, not indented code. `roles`: a MyST
    site, where the roles a reader clicks (`` {ref}`label` ``, `` {doc}`path` ``) are links. `liquid`: the
    site whose `{% %}` tags are links: "jekyll" (a destination written in Liquid, `({{ '/x/' |
    relative_url }})`, `udm.markdown.liquid`) or "gitbook" (its blocks that link, `{% embed url="x" %}`,
    `udm.markdown.gitbook`); "" elsewhere.
    """
    src, same = _normalise(lines, first)
    # html: (byte offset, target, form) of the href and src of what was blanked (JSX, raw shortcodes)
    masked, opaque, html = _masked(src, first, mdx, shortcodes, indented)
    same = same and masked is src
    src = masked
    where = _Where(src, lines if same else split_lines(src))
    tree = parse_tree(src, mdx, where.fed)
    root = tree.root
    headings = _top_headings(root, lines, where)
    fences: list[Fence] = []
    found: list[tuple[int, str, str, str]] = []  # (byte offset, text, url, form)
    _walk(root, lines, where, fences, found, html)
    found += [(at, text, url, "bare") for at, text, url in tree.bare]
    line_of = where.line_of
    links = [RawLink(line_of(at), text, _decode(url), form, at) for at, text, url, form in found] + [
        RawLink(line_of(at), "", target, form, at) for at, target, form in html
    ]
    if not mdx and shortcodes is not None:
        refs = _hugo_refs(root, src)
        if refs:
            # The ref is the link; an HTML attribute or `<...>` destination holding it is the same one.
            links = [link for link in links if not (link.target.startswith("{{") and parse_ref(link.target))]
            links += [RawLink(line_of(at), text, raw, "ref", at) for at, text, raw in refs]
    if autorefs and not mdx:
        links += [
            RawLink(line_of(at), text, target, "autoref", at) for at, text, target in _autorefs(root, src)
        ]
    if roles and not mdx:
        links += [
            RawLink(line_of(at), text, target, "role", at) for at, text, target in _myst_roles(root, src)
        ]
    if liquid == "jekyll" and not mdx:
        parsed = {(link.line, link.target) for link in links}
        links += [
            RawLink(line, text, target, "liquid", at)
            for at, text, target in _liquid_links(root, src)
            if (line := line_of(at), target) not in parsed
        ]
    elif liquid == "gitbook" and not mdx:
        links += [
            RawLink(line_of(at), "", target, "gitbook", at) for at, target in _gitbook_links(root, src, links)
        ]
    links.sort(key=lambda link: link.offset)
    return Parsed(headings, fences, links, opaque, tree.note())


# Nodes whose text is code: a shortcode written there is shown, not followed (as every link in code).
_CODE_NODES = frozenset({"code_inline", "code_block", "fence"})


# Docsify's options in a link's title (`':include'`, `':include :type=code'`, `':ignore'`).
_DOCSIFY_TITLE = re.compile(r"(?:^|\s):(include|ignore)(?=\s|$)")
# Nodes whose source is no Markdown text: an autorefs cross-reference is not looked for there (a
# link's own brackets are a link already).
_NOT_TEXT = _CODE_NODES | {"html_block", "html_inline", "link", "image", "autolink", "definition"}


class _Spans:
    """The source spans (bytes) of the nodes of some kinds: is a byte offset inside one?"""

    def __init__(self, root: Node, names: frozenset[str]) -> None:
        spans: list[tuple[int, int]] = []
        stack = [root]
        while stack:
            node = stack.pop()
            if node.name in names:
                if node.srcmap is not None:
                    spans.append(node.srcmap)
                continue
            stack.extend(node.children)
        spans.sort()
        self.spans = spans
        self.starts = [s for s, _ in spans]

    def inside(self, byte: int) -> bool:
        """Whether `byte` lies in one of the spans (they do not overlap: no node of a kind is searched)."""
        i = bisect.bisect_right(self.starts, byte) - 1
        return i >= 0 and self.spans[i][0] <= byte < self.spans[i][1]


# A MyST role a reader clicks: `{ref}`label``, `{doc}`text <path>``. The role's name is text; what
# follows it is a code span to the CommonMark parser.
_ROLE = re.compile(r"\{(ref|numref|doc|download)\}`([^`\n]{1,300})`")
_ROLE_TITLED = re.compile(r"(.*?)\s*<([^<>]+)>\s*")


def _myst_roles(root: Node, src: str) -> list[tuple[int, str, str]]:
    """(byte offset, link text, `{role}target`) of the MyST roles that are links, outside code."""
    if "}`" not in src:
        return []
    code = _Spans(root, _CODE_NODES)
    out: list[tuple[int, str, str]] = []
    offsets = ByteOffsets(src)
    for m in _ROLE.finditer(src):
        at = offsets.at(m.start())
        if code.inside(at):
            continue  # a role shown in code, or in a fence
        inner = m.group(2).strip()
        titled = _ROLE_TITLED.fullmatch(inner)
        text, target = (titled.group(1), titled.group(2).strip()) if titled else ("", inner)
        if target:
            out.append((at, text, f"{{{m.group(1)}}}{target}"))
    return out


def _liquid_links(root: Node, src: str) -> list[tuple[int, str, str]]:
    """(byte offset, link text, destination) of the Markdown destinations written in Liquid (a Jekyll
    page's) that name a page or a file, outside code; a reference definition's has no text."""
    found = find_liquid_links(src)
    if not found:
        return []
    # In an HTML block Markdown makes no link (its `href`s are found as HTML attributes).
    code = _Spans(root, _CODE_NODES | {"html_block"})
    offsets = ByteOffsets(src)
    out: list[tuple[int, str, str]] = []
    for n, (start, dest_at, dest) in enumerate(found):
        byte = offsets.at(dest_at)
        # Only what names a page or a file is a link to check: `{{ site.repository }}/issues/1` is the
        # build's to compute, as it was before Jekyll's conventions were read.
        if code.inside(byte) or liquid_target(dest) is None:
            continue
        inline = src.startswith("](", start)
        # The text is a nicety: past a few thousand links on one page it is left out (time stays linear).
        text = _bracket_text(src, dest_at) if inline and n < _MAX_TEXTS else ""
        out.append((byte, text, dest))
    return out


def _gitbook_links(root: Node, src: str, links: list[RawLink]) -> list[tuple[int, str]]:
    """(byte offset, destination) of the GitBook blocks that link (`udm.markdown.gitbook`), outside
    code, HTML and HTML comments; a content-ref whose body holds a Markdown link to the same destination is that link."""
    found = find_gitbook_links(src)
    if not found:
        return []
    # An HTML comment in a paragraph is an `html_inline` node: GitBook shows nothing of it either.
    code = _Spans(root, _CODE_NODES | {"html_block", "html_inline"})
    # Two readers: each asks for offsets in increasing order (the tags', and the content-refs' ends).
    offsets, ends = ByteOffsets(src), ByteOffsets(src)
    ordered = sorted(links, key=lambda link: link.offset)
    starts = [link.offset for link in ordered]
    out: list[tuple[int, str]] = []
    for at, tag, dest, end in found:
        byte = offsets.at(at)
        if code.inside(byte):
            continue
        if tag == "content-ref":
            first, stop = bisect.bisect_right(starts, byte), bisect.bisect_left(starts, ends.at(end))
            body = ordered[first : min(stop, first + _MAX_BODY_LINKS)]
            if any(link.target in (dest, _decode(dest)) for link in body):
                continue
        out.append((byte, dest))
    return out


# The Markdown links of a content-ref's body compared with its tag's (GitBook writes one).
_MAX_BODY_LINKS = 8


def _hugo_refs(root: Node, src: str) -> list[tuple[int, str, str]]:
    """(byte offset, link text, shortcode) of the Hugo `ref`/`relref` shortcodes outside code."""
    found = find_refs(src)
    if not found:
        return []
    code = _Spans(root, _CODE_NODES)
    out: list[tuple[int, str, str]] = []
    for n, (char, byte, raw) in enumerate(found):
        if code.inside(byte):
            continue
        # The text is a nicety: past a few thousand refs on one page it is left out (time stays linear).
        out.append((byte, _bracket_text(src, char) if n < _MAX_TEXTS else "", raw))
    return out


_MAX_TEXTS = 2000
# How far a bracket is looked for (a link text or a cross-reference's title and label), and how many
# brackets are stepped over on the way.
_BRACKET_REACH = 300
_BRACKET_STEPS = 24


def _opening(src: str, close: int) -> int:
    """The index of the `[` that the `]` at `close` closes (brackets nest), -1 when there is none within
    reach, nor within a few bracket pairs (Python-Markdown's link text nests six deep; crafted runs of
    brackets cost a bounded search each). Brackets are counted with the C searches, not char by char."""
    low = max(0, close - _BRACKET_REACH)
    depth, pos = 1, close
    for _ in range(_BRACKET_STEPS):
        if pos <= low:
            break
        opening, closing = src.rfind("[", low, pos), src.rfind("]", low, pos)
        if opening < 0:
            return -1
        if closing > opening:
            depth, pos = depth + 1, closing
            continue
        depth, pos = depth - 1, opening
        if depth == 0:
            return opening
    return -1


def _bracket_text(src: str, start: int) -> str:
    """The text of the `[text](` written just before a ref at character `start`, "" when there is none."""
    before = src[max(0, start - _BRACKET_REACH) : start].rstrip(" \t<")
    if not before.endswith("]("):
        return ""
    opening = _opening(before, len(before) - 2)
    return " ".join(before[opening + 1 : -2].split()) if opening >= 0 else ""


# Where a reference's text ends and its label starts (Python-Markdown allows one space between).
_LABEL_START = re.compile(r"\][ \t\n]?\[")


def _autorefs(root: Node, src: str) -> list[tuple[int, str, str]]:
    """(byte offset, title, target) of the mkdocs-autorefs cross-references: `[title][identifier]` and
    `[title][]` whose label no reference definition defines (the parser left them as text), outside
    code, HTML and links, not images, footnotes or task boxes. The target is the label as written,
    `[identifier]`, or the whole `[title][]` of a collapsed one (its title is the identifier, or the
    title's slug)."""
    if _LABEL_START.search(src) is None:
        return []
    skip = _Spans(root, _NOT_TEXT)
    offsets = ByteOffsets(src)
    taken = last = -1
    out: list[tuple[int, str, str]] = []
    for m in _LABEL_START.finditer(src):
        close = m.start()
        if close < taken or _escaped(src, close):
            continue
        end = src.find("]", m.end(), m.end() + _BRACKET_REACH)
        if end < 0:
            continue
        label = src[m.end() : end]
        # A footnote (`[^1]`, matched before references), a code span (a placeholder autorefs skips).
        if (
            "[" in label
            or "\n" in label
            or "`" in label
            or label.startswith("^")
            or (label and not label.strip())
        ):
            continue
        opening = _opening(src, close)
        # An image's (`![alt][x]`) or an escaped bracket; one inside an earlier hit is not looked at.
        if opening <= last or (opening > 0 and src[opening - 1] in "!\\"):
            continue
        title = src[opening + 1 : close]
        if not title.strip() or title.startswith("^") or _task_box(src, opening, title):
            continue
        byte = offsets.at(opening)
        # Inside code or HTML, or a link already: `[a] [b]` with `b` defined links `[b]` alone.
        label_byte = byte + len(src[opening : m.end() - 1].encode("utf-8"))
        if skip.inside(byte) or skip.inside(label_byte):
            continue
        text = " ".join(title.split())
        out.append((byte, text, f"[{label}]" if label else f"[{text}][]"))
        taken, last = end + 1, opening
    return out


def _escaped(src: str, at: int) -> bool:
    """Whether the character at `at` is escaped (an odd run of backslashes before it)."""
    n = 0
    while at - n > 0 and src[at - n - 1] == "\\" and n < 64:
        n += 1
    return n % 2 == 1


# A list item's start: a task box right after it (`- [x] `) is a checkbox, no link text.
_ITEM_START = re.compile(r"[ \t]*(?:>[ \t]*)*(?:[-*+]|\d{1,9}[.)])[ \t]+")


def _task_box(src: str, opening: int, title: str) -> bool:
    """Whether `[title]` at `opening` is a GFM task box (`[x]`, `[X]`, `[ ]` first in a list item)."""
    if title not in ("x", "X", " "):
        return False
    line_start = src.rfind("\n", 0, opening) + 1
    return _ITEM_START.fullmatch(src, line_start, opening) is not None


def _top_headings(root: Node, lines: list[str], where: _Where) -> list[Heading]:
    """The top-level ATX and setext headings (a heading in a list or a quote starts no section)."""
    headings: list[Heading] = []
    line_of = where.line_of
    for node in root.children:
        name = node.name
        if name != "heading" and name != "lheading":
            continue
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
        text = _text_of(node).strip() if _RENDERS_OTHERWISE.search(title) else None
        own = _OWN_ID.search(title) if title.endswith("}") else None
        anchor = own.group(1) or own.group(2) or own.group(4) if own else None
        headings.append(Heading(level, title, start, end, None if text == title else text, anchor))
    return headings


def _walk(
    root: Node,
    lines: list[str],
    where: _Where,
    fences: list[Fence],
    found: list[tuple[int, str, str, str]],
    html: list[tuple[int, str, str]],
) -> None:
    """Fences, links and HTML href/src at any depth, in one walk that skips sources without a mark."""
    marked, char_at = where.marked, where.char_at
    stack: list[Node] = list(reversed(root.children))
    while stack:
        node = stack.pop()
        name = node.name
        if name in _LEAVES:
            continue
        span = node.srcmap
        if name in _LINK_NODES:
            if span is not None:
                if name == "link":
                    form = "inline" if char_at(span[1] - 1) == ")" else "reference"
                    title = node.meta.get("title", "")
                    docsify = _DOCSIFY_TITLE.search(title) if ":" in title else None
                    if docsify is not None:
                        # Docsify's `[x](part.md ':include')` embeds the file; `':ignore'` leaves the
                        # link as written.
                        form = "embed" if docsify.group(1) == "include" else "ignore"
                elif name == "image":
                    form = "image"
                elif name == "autolink":
                    form = "autolink" if char_at(span[0]) == "<" else "bare"
                else:
                    form = "bare"
                found.append((span[0], _text_of(node), node.meta.get("url", ""), form))
            if name == "image":
                continue  # an image's description is its alt text: nothing in it is clickable
        elif name == "fence":
            if span is not None:
                fences.append(_fence(node, span, lines, where.line_of))
            continue
        elif name == "html_block" or name == "html_inline":
            content = node.meta.get("content", "")
            low = content.lower()
            if span is not None and ("href" in low or "src" in low):
                attr_links(content, span[0], "html", html)
            continue
        elif span is not None and name not in _WRAPPERS and not marked(span):
            continue
        children = node.children
        if children:
            stack.extend(reversed(children))


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
