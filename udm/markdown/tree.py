"""markdown-it-pyrs's parse tree of a file, kept from taking the file (or a whole build) down with it.

markdown-it-pyrs 0.4.0 (markdown-it 0.6, the newest on PyPI) panics on some valid input instead of
parsing it. A Rust panic reaches Python as pyo3's `PanicException`, a `BaseException` that a parse
worker cannot even pickle back, so one page stopped a whole `udm index`. Two are known:

- a GFM bare URL that runs into a multi-byte character (`http://localhost:4321/로`, usual in Korean,
  Japanese and Chinese text, where no space follows a URL): the autolink rule slices the text inside
  the character; the same mix of character and byte offsets makes it miss every bare URL that
  follows a non-ASCII character in its paragraph (`café: http://x.com`);
- a code span opened inside link text (`` [a `b](c) ``).

So text with a non-ASCII character and a URL is parsed without the bare-URL rule, and its bare URLs
come from a second parse of a copy in which every non-ASCII character is ASCII of the same UTF-8
length (byte offsets, and so lines, stay the file's; each link's text is read back from the file).
Any other panic parses the file again with fewer inline rules (`FALLBACKS`) and says which were off;
a file that no rule set parses raises `MarkdownParseError` (the index lists it as skipped).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from markdown_it_pyrs import MarkdownIt, Node

from udm.errors import DocumentError

__all__ = ["FALLBACKS", "MarkdownParseError", "Tree", "deflist_tree", "markdown_tree", "parse_tree"]

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
# Block structure alone: the last resort keeps headings, fences and tables when every inline rule set
# panics (a file's sections and data blocks matter more than its links).
_BLOCK_RULES: list[Any] = ["blockquote", "code", "fence", "heading", "hr", "lheading", "list", "paragraph"]
_BLOCK_RULES += ["reference", "html_block", "table"]
INLINE = "inline"
# Rules turned off, in the order tried after a panic: fewest first; INLINE is every inline rule.
FALLBACKS: tuple[tuple[str, ...], ...] = (
    ("autolink_ext",),
    ("backticks",),
    ("autolink_ext", "backticks"),
    (INLINE,),
)
# What a bare URL or e-mail address needs (the rule finds nothing in text without one of these).
_URL_START = re.compile(r"https?://|www\.|@", re.IGNORECASE)
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_EMAIL = re.compile(r"[A-Za-z0-9._+-]+@[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*[A-Za-z0-9]")

# From a `[` to the next bracket or the end (`_unpaired_code`: the parser panics on a backtick run
# there that does not close, whether or not a `]` follows). One star and no `]` required: each
# character is scanned once (a star on each side of a backtick backtracked quadratically).
_BRACKETED = re.compile(r"\[([^\[\]]*)")
_TICKS = re.compile(r"`+")

_PARSERS: dict[tuple[bool, tuple[str, ...]], MarkdownIt] = {}


class MarkdownParseError(DocumentError):
    """A file the Markdown parser fails on with every rule set (a parser bug, not the file's fault)."""


@dataclass(slots=True)
class Tree:
    """A parse: the tree, bare URLs found apart (byte offset, text, URL), and the rules a panic turned off."""

    root: Node
    bare: list[tuple[int, str, str]] = field(default_factory=list)
    off: tuple[str, ...] = ()
    failure: str = ""

    def note(self) -> str | None:
        """What the reader of the file's links should know when rules were off, else None."""
        if not self.off:
            return None
        rules = " and ".join("every inline rule" if r == INLINE else r for r in self.off)
        cost = "; ".join(_COST[r] for r in self.off)
        return (
            f"the Markdown parser (markdown-it-pyrs) failed on this file ({self.failure}); "
            f"read again with {rules} off: {cost}"
        )


# What a rule being off costs the file's links.
_COST = {
    "autolink_ext": "bare URLs in it are not links",
    "backticks": "code spans in it read as text (a link inside one counts)",
    INLINE: "no links in it were read",
}


def _parser(mdx: bool, off: tuple[str, ...] = ()) -> MarkdownIt:
    found = _PARSERS.get((mdx, off))
    if found is None:
        if not off and not mdx:
            found = MarkdownIt("commonmark").enable_many(_GFM)
        else:
            # No indented code in MDX: JSX children are indented and stay Markdown.
            rules: list[Any] = _BLOCK_RULES if INLINE in off else [*_COMMONMARK_RULES, *_GFM]
            found = MarkdownIt("zero").enable_many(
                [r for r in rules if r not in off and not (mdx and r == "code")]
            )
        _PARSERS[(mdx, off)] = found
    return found


def _panic(exc: BaseException) -> bool:
    # pyo3 makes the class at run time (module pyo3_runtime): it can only be told by name.
    return type(exc).__name__ == "PanicException"


@contextmanager
def _stderr_off(off: bool) -> Iterator[None]:
    """File descriptor 2 sent to /dev/null while a parse that may panic runs: Rust's panic hook
    writes the panic (and a backtrace) there, which a user must not see for a failure caught here."""
    saved = -1
    if off:
        # No usable sys.stderr: nothing of Python's is waiting to be written.
        with suppress(AttributeError, OSError, ValueError):
            sys.stderr.flush()
        try:
            saved = os.dup(2)
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, 2)
            finally:
                os.close(devnull)
        except OSError:
            pass  # no descriptor 2 (a daemon): nothing would be printed anyway
    try:
        yield
    finally:
        if saved >= 0:
            os.dup2(saved, 2)
            os.close(saved)


def _first_tree(src: str, mdx: bool, tries: tuple[tuple[str, ...], ...]) -> Tree:
    """The tree of the first rule set in `tries` that parses `src`; MarkdownParseError when none does."""
    failure = ""
    suspect = _unpaired_code(src)
    for off in tries:
        try:
            with _stderr_off(suspect or bool(failure)):
                return Tree(_parser(mdx, off).tree(src), off=off, failure=failure)
        except BaseException as exc:
            if not _panic(exc):
                raise
            failure = failure or " ".join(str(exc).split())[:200]
    raise MarkdownParseError(f"the Markdown parser (markdown-it-pyrs) failed: {failure}")


def _ascii_char(ch: str) -> str:
    # Whitespace stays whitespace (a bare URL may follow it); anything else reads as a letter, which
    # is what GFM makes of it inside a URL (only ASCII punctuation is trimmed from a URL's end).
    return (" " if ch.isspace() else "x") * len(ch.encode("utf-8"))


def _ascii_copy(src: str) -> str:
    """`src` with every non-ASCII character made ASCII of its UTF-8 length (byte offsets kept)."""
    return _NON_ASCII.sub(lambda m: "".join(map(_ascii_char, m.group())), src)


def _unpaired_code(src: str) -> bool:
    """Whether the text after a `[` holds a backtick run that no run of its length closes (a panic)."""
    if "`" not in src or "[" not in src:
        return False
    for m in _BRACKETED.finditer(src):
        if "`" not in m.group(1):
            continue
        runs = [len(t) for t in _TICKS.findall(m.group(1))]
        i = 0
        while i < len(runs):
            try:
                i = runs.index(runs[i], i + 1) + 1
            except ValueError:
                return True
    return False


def _bare_urls(root: Node, raw: bytes) -> list[tuple[int, str, str]]:
    """The bare URLs (GFM extended autolinks) of a tree, their text read from the file's bytes `raw`."""
    found: list[tuple[int, str, str]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        span = node.srcmap
        stack.extend(node.children)
        if node.name != "autolink" or span is None or raw[span[0] : span[0] + 1] == b"<":
            continue
        text = raw[span[0] : span[1]].decode("utf-8", "replace")
        lower = text.lower()
        if "://" in lower[:12] or lower.startswith("mailto:"):
            found.append((span[0], text, text))
        elif lower.startswith("www."):
            found.append((span[0], text, "http://" + text))
        else:
            # An e-mail address is ASCII only (GFM), where a URL's path takes any character: the
            # letters the ASCII copy lent it around the address are not part of it.
            m = _EMAIL.search(text)
            if m is not None:
                at = span[0] + len(text[: m.start()].encode("utf-8"))
                found.append((at, m.group(), "mailto:" + m.group()))
    return found


def parse_tree(src: str, mdx: bool = False) -> Tree:
    """The CommonMark/GFM tree of `src` (MDX rules when `mdx`), surviving the parser's known panics."""
    if src.isascii() or not _URL_START.search(src):
        return _first_tree(src, mdx, ((), *FALLBACKS))
    # In text with a non-ASCII character the bare-URL rule mixes character and byte offsets: it
    # misses the URLs after one (`é http://x.com`) or panics on one inside a URL. So the file is parsed
    # without the rule, and its bare URLs are found in an ASCII copy with the same byte offsets.
    tree = _first_tree(src, mdx, FALLBACKS)
    try:
        bare = _first_tree(_ascii_copy(src), mdx, ((), *FALLBACKS[1:]))
    except MarkdownParseError as exc:
        bare = Tree(tree.root, off=(INLINE,), failure=str(exc))
    if "autolink_ext" in bare.off or INLINE in bare.off:
        tree.failure = tree.failure or bare.failure
        return tree
    if INLINE not in tree.off:
        tree.bare = _bare_urls(bare.root, src.encode("utf-8"))
        tree.off = tuple(r for r in tree.off if r != "autolink_ext")
        tree.failure = tree.failure if tree.off else ""
    return tree


def markdown_tree(text: str) -> Node:
    """The CommonMark/GFM tree of `text` (the index's rules), surviving the parser's known panics."""
    return parse_tree(text).root


def deflist_tree(src: str, mdx: bool = False) -> Node | None:
    """The tree of `src` with definition lists (`Term` then `: definition`) read as such, or None when
    the parser fails on it. Only Hugo's term ids ask for it: the index's parse knows no such lists."""
    key = (mdx, ("+deflist",))
    parser = _PARSERS.get(key)
    if parser is None:
        rules = [r for r in [*_COMMONMARK_RULES, *_GFM] if not (mdx and r == "code")]
        parser = _PARSERS[key] = MarkdownIt("zero").enable_many([*rules, "deflist"])
    try:
        with _stderr_off(_unpaired_code(src)):
            return parser.tree(src)
    except BaseException as exc:
        if not _panic(exc):
            raise
        return None
