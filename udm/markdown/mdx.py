"""MDX: ESM `import`/`export` paragraphs and JSX tags/expressions blanked out of the parser's text.

Their lines are kept as opaque blocks, so they are never read as Markdown; what sits between a JSX
opening and closing tag stays Markdown, as MDX renders it. The `href`/`src` attributes of the JSX
tags (and of HTML tags, which `udm.markdown.scanner` hands here) are links.
"""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass
from html import unescape

from udm.markdown.lines import ByteOffsets, split_lines

__all__ = ["Opaque", "attr_links", "blank_spans", "mask_mdx"]


@dataclass(slots=True)
class Opaque:
    """An MDX block kept out of the Markdown parse: kind 'esm' or 'jsx', lines [start, end)."""

    kind: str
    start: int
    end: int


# href/src attributes of HTML and JSX tags: "x", 'x', or a JSX string expression {"x"} / {'x'} / {`x`}.
# An attribute follows a blank: not a bound one (Vue's `:href="p.url"`, `v-bind:src`: an expression),
# a property in script (`link.href = url`) or a URL's query inside another attribute's value
# (`img="https://x.dev/_image?href=%2Fa.png"`, fastmcp's docs).
_ATTR = re.compile(
    r"""(?<=\s)(href|src)[ \t\r\n]*=[ \t\r\n]*(?:"([^"]*)"|'([^']*)'|\{[ \t]*(?:"([^"]*)"|'([^']*)'|`([^`$]*)`)[ \t]*\}"""
    # HTML written in a JavaScript string (Astro's `<Fragment set:html={"<a href=\"/x\">"}>`): its
    # quotes are escaped, and the value is the string's, its escapes undone.
    r"""|\\"((?:[^"\\\n]|\\[^"\n])*)\\"|\\'((?:[^'\\\n]|\\[^'\n])*)\\'"""
    r"""|([^\s"'=<>`{}\\][^\s"'=<>`{}]*))""",
    re.IGNORECASE,
)
# Groups of _ATTR whose value is a JavaScript string's text.
_ESCAPED_GROUPS = (7, 8)
# A JavaScript string's escapes: code points (`\u002F`, `\u{1F389}`, `\x2F`), the named controls and
# any other character standing for itself (`\/`, `\"`).
_JS_ESCAPE = re.compile(r"\\(?:u\{([0-9a-fA-F]{1,6})\}|u([0-9a-fA-F]{4})|x([0-9a-fA-F]{2})|(.))", re.DOTALL)
_JS_NAMED = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
# How far back an attribute's tag opening is looked for (`<`, or `&lt;` in escaped text).
_TAG_REACH = 2048
# An unquoted value opening with an escaped quote (`src=&quot;x&quot;`) is escaped text too, however
# far its `&lt;` (a wrapped line of displayed code).
# The forms html.unescape reads as a quote: `&quot` and the numeric ones need no `;` (HTML's legacy
# references), `&apos;` does.
_ENTITY_QUOTE = re.compile(r"&(?:quot;?|apos;|#0*3[49](?![0-9]);?|#x0*2[27](?![0-9a-f]);?)", re.IGNORECASE)
# The forms html.unescape reads as `<`: text that shows a tag.
_ENTITY_LT = re.compile(r"&(?:lt;?|#0*60(?![0-9]);?|#x0*3c(?![0-9a-f]);?)", re.IGNORECASE)
# From a `&lt;` on, text whose quotes all close: the entity opened a shown tag. One still open where
# the attribute starts means the entity sat inside a quoted value of a real tag (`title="1 &lt; 2"`).
# Possessive: a long run that fails gives nothing back.
_QUOTES_CLOSED = re.compile(r"""[^"']*+(?:"[^"]*+"[^"']*+|'[^']*+'[^"']*+)*+""")
_UNQUOTED_GROUP = 9
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
# What a <script> or <style> element holds is code, not markup: its words are no attributes.
_CODE_OPEN = re.compile(r"<(script|style)\b", re.IGNORECASE | re.ASCII)
# Searched in the text itself: lower() changes some lengths (İ), so its offsets would not be the text's.
_CODE_CLOSE = {name: re.compile(f"</{name}", re.IGNORECASE | re.ASCII) for name in ("script", "style")}


def attr_links(content: str, base: int, form: str, out: list[tuple[int, str, str]]) -> None:
    """(byte offset, target, form) of each href/src attribute in HTML or JSX text starting at byte `base`."""
    if "<!--" in content:
        content = _COMMENT.sub(lambda m: " " * len(m.group(0).encode("utf-8")), content)
    low = content.lower()
    if "<script" in low or "<style" in low:
        content = _blank_code(content)
    # Where each escaped `<` is, found once: looking back for the nearest is a bisect, not a search.
    shown = [m.start() for m in _ENTITY_LT.finditer(content)] if "&" in content else []
    offsets = ByteOffsets(content)  # counted on from the last match: linear on large blocks
    for m in _ATTR.finditer(content):
        if m.group(1).lower() == "src" and _tag_name(content, m.start()) == "style":
            # HTML's <style> has no src; Vue's single-file blocks in a VitePress page do, and name a
            # module for the bundler (`@theme/x.css`), not a page or file of the site.
            continue
        if shown and _in_escaped_text(content, m.start(), shown):
            continue
        group = next(i for i in range(2, len(m.groups()) + 1) if m.group(i) is not None)
        value = m.group(group)
        if group == _UNQUOTED_GROUP and _ENTITY_QUOTE.match(value):
            continue
        if group in _ESCAPED_GROUPS and "\\" in value:
            value = _js_unescape(value)
        target = unescape(value).strip()
        if target:
            out.append((base + offsets.at(m.start()), target, form))


def _blank_code(content: str) -> str:
    """The text of each <script>/<style> element blanked byte for byte (offsets after it stay the
    file's; its opening tag stays), in one pass: each tag's `>` and closing tag are looked for once."""
    out: list[str] = []
    at = 0
    for m in _CODE_OPEN.finditer(content):
        if m.start() < at:
            continue  # inside an element already blanked
        tag_end = content.find(">", m.end())
        if tag_end < 0:
            break  # no tag closes: nor will a later one
        found = _CODE_CLOSE[m.group(1).lower()].search(content, tag_end)
        closing = -1 if found is None else found.start()
        end = len(content) if closing < 0 else closing
        out.append(content[at : tag_end + 1])
        out.append(" " * len(content[tag_end + 1 : end].encode("utf-8")))
        at = end
        if closing < 0:
            break
    out.append(content[at:])
    return "".join(out)


def _in_escaped_text(content: str, at: int, shown: list[int]) -> bool:
    """Whether the attribute at `at` belongs to a tag shown as text: an escaped `<` (at an offset of
    `shown`) opens it, nearer than any `<`, and not inside a quoted value (a diagnostic printing
    `&lt;a href='example.org'&gt;` shows an attribute it does not have; `<a title="1 &lt; 2" href>`
    has one)."""
    low = max(0, at - _TAG_REACH)
    i = bisect.bisect_left(shown, at) - 1
    if i < 0 or shown[i] < low or shown[i] < content.rfind("<", low, at):
        return False
    return _QUOTES_CLOSED.fullmatch(content, shown[i], at) is not None


def _js_unescape(value: str) -> str:
    """A JavaScript string's text with its escapes undone (a lone surrogate becomes U+FFFD)."""

    def one(m: re.Match[str]) -> str:
        code = m.group(1) or m.group(2) or m.group(3)
        if code is None:
            return _JS_NAMED.get(m.group(4), m.group(4))
        point = int(code, 16)
        return chr(point) if point < 0x110000 else "\ufffd"

    out = _JS_ESCAPE.sub(one, value)
    if any("\ud800" <= c <= "\udfff" for c in out):
        # `\ud83c\udf89` is one emoji in JavaScript: pair the halves as UTF-16 does.
        out = out.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return out


def _tag_name(content: str, at: int) -> str:
    """The lower-cased name of the tag whose attribute starts at `at` ("" when there is none)."""
    start = content.rfind("<", max(0, at - _TAG_REACH), at)  # bounded: a `src` each costs no more
    m = _NAME_CHARS.match(content, start + 1) if start >= 0 else None
    return m.group(0).lower() if m else ""


_ESM_START = re.compile(r"(?:import|export)(?=[\s{*])")
# Any indent: MDX turns indented code off, so a fence opens at any depth (inside a list item, a
# `<Steps>` step), and the HTML of its code must not be read as JSX.
_FENCE_OPEN = re.compile(r"[ \t]*(`{3,}|~{3,})")
_JSX_LINE = re.compile(r"[ \t]*(?:<(?:[A-Za-z_$][\w.:$-]*|/|>)|\{)")
_NAME_CHARS = re.compile(r"[\w.:$-]*")
_NEWLINE = re.compile(b"\n")


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


def mask_mdx(src: str, first: int) -> tuple[str, list[Opaque], list[tuple[int, str, str]]]:
    """The text with ESM and JSX blanked (newlines kept), the opaque blocks, and JSX href/src links."""
    spans, opaque = _opaque_spans(src, first)
    links: list[tuple[int, str, str]] = []
    if not spans:
        return src, opaque, links
    return blank_spans(src, spans, links), opaque, links


def _opaque_spans(src: str, first: int) -> tuple[list[tuple[int, int]], list[Opaque]]:
    """The character spans of ESM paragraphs and JSX tags (outside fences), and their opaque blocks."""
    lines = split_lines(src)
    offsets = [0, *itertools.accumulate(map(len, lines))]
    spans: list[tuple[int, int]] = []
    opaque: list[Opaque] = []
    fence: tuple[str, int] | None = None
    i = first
    n = len(lines)
    prev_blank = True
    while i < n:
        line = lines[i]
        if fence is not None:
            stripped = line.strip()
            if stripped.startswith(fence[0] * fence[1]) and not stripped.strip(fence[0]):
                fence = None
            i, prev_blank = i + 1, False
            continue
        fm = _FENCE_OPEN.match(line)
        if fm:
            fence = (fm.group(1)[0], len(fm.group(1)))
            i, prev_blank = i + 1, False
            continue
        if prev_blank and _ESM_START.match(line):
            j = i
            while j < n and lines[j].strip():
                j += 1
            spans.append((offsets[i], offsets[j]))
            opaque.append(Opaque("esm", i, j))
            i, prev_blank = j, False
            continue
        if _JSX_LINE.match(line):
            pos = offsets[i] + len(line) - len(line.lstrip(" \t"))
            end = _mask_line_tags(src, pos, spans)
            if end is not None:
                last = bisect.bisect_right(offsets, max(end - 1, pos)) - 1
                if opaque and opaque[-1].kind == "jsx" and opaque[-1].end == i:
                    opaque[-1].end = last + 1  # one block for a run of JSX lines
                else:
                    opaque.append(Opaque("jsx", i, last + 1))
                # Text after the tags on their last line stays Markdown; the next line starts fresh.
                i, prev_blank = last + 1, False
                continue
        prev_blank = not line.strip()
        i += 1
    return spans, opaque


def blank_spans(
    src: str,
    spans: list[tuple[int, int]],
    links: list[tuple[int, str, str]],
    form: str = "jsx",
    html: bool = False,
    quiet: frozenset[int] = frozenset(),
) -> str:
    """`src` with every span blanked but its newlines; the href/src of the JSX tags among them (of
    any HTML in them with `html`) go to `links` as `form`, at the blanked text's byte offset of the
    line they are on; a span starting at an offset in `quiet` (code) gives none.

    A span's lines keep no characters (a span starting mid-line leaves one space, so the words
    around it stay apart): blanked to spaces, a long line of code would read as deep indentation.
    """
    out: list[str] = []
    at = 0
    done = 0  # the blanked text's byte offset of `at`, counted on span by span
    for a, b in spans:
        kept = src[at:a]
        out.append(kept)
        done += len(kept) if kept.isascii() else len(kept.encode("utf-8"))
        chunk = src[a:b]
        blanked = "\n" * chunk.count("\n")
        if a > 0 and src[a - 1] != "\n" and chunk[:1] not in ("", "\n"):
            blanked = " " + blanked
        if a not in quiet and (html or chunk.lstrip().startswith("<")):
            found: list[tuple[int, str, str]] = []
            attr_links(chunk, 0, form, found)
            if found:
                # A link's line is the count of newlines before it, looked up among their offsets
                # (counting from the span's start for each link is quadratic in a large span).
                newlines = [m.start() for m in _NEWLINE.finditer(chunk.encode("utf-8"))]
                lead = len(blanked) - len(newlines)  # the one space a mid-line span keeps
                for offset, target, kind in found:
                    line = bisect.bisect_left(newlines, offset)
                    links.append((done + (lead + line if line else 0), target, kind))
        out.append(blanked)
        done += len(blanked)
        at = b
    out.append(src[at:])
    return "".join(out)


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
