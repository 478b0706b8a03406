"""markdown-it-py as the reference the document model's parse (markdown-it-pyrs) is checked against.

Headings (top level), fences (any depth) and links (inline, reference, autolinks, images) as
markdown-it-py with the same GFM plugins sees them; targets decoded as `udm.markdown.scanner` decodes them.
GFM extended autolinks (bare `www.x` / `https://x`) are left out: markdown-it-py finds them only
with linkify-it-py, which is not a dependency.
"""

from __future__ import annotations

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.footnote import footnote_plugin
from mdit_py_plugins.tasklists import tasklists_plugin
from mdurl import decode

from udm.markdown import split_lines
from udm.markdown.scanner import _mask_mdx, atx_title

_MD = MarkdownIt("commonmark").enable(["table", "strikethrough"]).use(footnote_plugin).use(tasklists_plugin)
# MDX: the same text udm parses (ESM and JSX blanked by udm.markdown.scanner), without indented code.
_MDX = (
    MarkdownIt("commonmark")
    .enable(["table", "strikethrough"])
    .disable("code")
    .use(footnote_plugin)
    .use(tasklists_plugin)
)


def _url(url: str) -> str:
    return decode(url) if "%" in url else url


def reference(
    text: str, first: int = 0, mdx: bool = False
) -> tuple[list[tuple[int, str, int, int]], list[tuple[int, int, str, str]], list[tuple[int, str, str]]]:
    """(headings (level, title, start, end), fences (start, end, info, text), links (line, target, form)).

    `first`: the first line after the front matter (the lines before it are blanked, as udm does);
    `mdx`: parse the text as udm parses an `.mdx` file (ESM/JSX masked, no indented code).
    """
    lines = split_lines(text)
    src = "\n" * first + "".join(lines[first:])
    if mdx:
        src = _mask_mdx(src.replace("\r\n", "\n").replace("\r", "\n"), first)[0]
    tokens = (_MDX if mdx else _MD).parse(src)
    headings: list[tuple[int, str, int, int]] = []
    fences: list[tuple[int, int, str, str]] = []
    links: list[tuple[int, str, str]] = []
    for k, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.level == 0 and tok.map:
            start, end = tok.map
            if tok.markup.startswith("#"):
                title = atx_title(lines[start].strip().lstrip("#"))
            else:
                title = " ".join(part.strip() for part in tokens[k + 1].content.split("\n")).strip()
            headings.append((int(tok.tag[1]), title, start, end))
        elif tok.type == "fence" and tok.map:
            fences.append((tok.map[0], tok.map[1], tok.info.strip(), tok.content))
        elif tok.type == "inline" and tok.map:
            links += _inline_links(tok, tok.map[0])
    return headings, fences, links


def _inline_links(inline: Token, first: int) -> list[tuple[int, str, str]]:
    """Links of an inline token; the line counts softbreaks seen before each link.

    A line break inside a code span is not counted (markdown-it makes it a space), so a link after one
    is placed a line early: the generated documents hold no such span; on real pages, see the README.
    """
    out: list[tuple[int, str, str]] = []
    line = first
    for child in inline.children or []:
        if child.type in ("softbreak", "hardbreak"):
            line += 1
        elif child.type == "link_open":
            form = "autolink" if child.markup == "autolink" else "link"
            out.append((line, _url(str(child.attrs.get("href", ""))), form))
        elif child.type == "image":
            out.append((line, _url(str(child.attrs.get("src", ""))), "image"))
        elif child.type in ("text", "code_inline", "html_inline"):
            line += child.content.count("\n")
    return out
