"""markdown-it-pyrs's parse tree of a file, kept from taking the file (or a whole build) down with it.

markdown-it-pyrs 0.4.0 (markdown-it 0.6 with markdown-it-footnote 0.2, the newest on PyPI) fails on
some valid input instead of parsing it. A Rust panic reaches Python as pyo3's `PanicException`, a
`BaseException` that a parse worker cannot even pickle back, so one page stopped a whole
`udm index`; worse, a stack overflow kills the process and exponential backtracking never ends.
Known, and what this module does about each:

- A GFM bare URL that runs into a multi-byte character (`http://localhost:4321/로`, usual in
  Korean, Japanese and Chinese, where no space follows a URL) panics, and the same mix of character
  and byte offsets makes the rule miss every bare URL or e-mail address after a non-ASCII character
  in its paragraph (`café: http://x.com`). Text with a non-ASCII character and a URL is parsed
  without that rule, and its bare URLs come from a second parse of a copy in which every non-ASCII
  character is ASCII of the same UTF-8 length (byte offsets, and so lines, stay the file's; each
  link's text is read back from the file).
- A code span opened after a `[` (`` [a `b](c) ``), and an inline footnote `^[` at the end of a
  paragraph, panic: the file is parsed again with fewer inline rules (`FALLBACKS`), and the note
  says which were off and what that costs.
- `[^` nested in `[^` (`[^[^[^...`, 40 of them: 80 bytes) takes exponential time in the footnote
  rule: past `FOOTNOTE_NESTING` the file is parsed with that rule off.
- Containers nested thousands deep (`> > > ...`, `- - - ...`, `1) 1) ...`) overflow the parser's
  stack and kill the process: past `MAX_NESTING` the file is refused before the parser sees it.
  Images nested in images' text (`![![![...`) do too: past `MAX_NESTING`, images are off.

A file no rule set parses, or one nested too deep, raises `MarkdownParseError` (the index lists it
as skipped, a patch that would write it is refused). Rust's panic messages are kept off the terminal.
"""

from __future__ import annotations

import itertools
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
# The rules known to panic: every combination of them is tried off, fewest first, before every
# inline rule is (INLINE: block structure only, no links).
_PANICKY = ("autolink_ext", "backticks", "footnote", "image")
FALLBACKS: tuple[tuple[str, ...], ...] = (
    *(c for n in range(1, len(_PANICKY) + 1) for c in itertools.combinations(_PANICKY, n)),
    (INLINE,),
)
# Containers (block quotes, list items) nested deeper than this are refused: the parser recurses once
# per level and overflows an 8 MiB stack near 20,000 list levels (a thread's stack may be smaller).
MAX_NESTING = 1000
# `[^` nested deeper than this (with no `]` between) turns the footnote rule off: each level doubles
# its time (18: 0.09 s, 22: 1.5 s, 40: forever).
FOOTNOTE_NESTING = 12
# A line's container prefix: `>` and list markers, with the space between them.
_MARKER = r">|[-+*](?=[ \t]|$)|\d{1,9}[.)](?=[ \t]|$)"
_PREFIX = re.compile(rf"[ \t]*+(?:(?:{_MARKER})[ \t]*+)*+")
_MARKERS = re.compile(_MARKER)
_SPACES = re.compile(r"[ \t]+")
# What a bare URL or e-mail address needs (the rule finds nothing in text without one of these).
_URL_START = re.compile(r"https?://|www\.|@", re.IGNORECASE)
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_EMAIL = re.compile(r"[A-Za-z0-9._+-]+@[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*[A-Za-z0-9]")

_TICKS = re.compile(r"`+")

_PARSERS: dict[tuple[bool, tuple[str, ...], tuple[str, ...]], MarkdownIt] = {}


class MarkdownParseError(DocumentError):
    """A file the Markdown parser fails on with every rule set, or nested too deep for it."""

    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(message)
        self.line = line  # 1-based


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
            f"the Markdown parser (markdown-it-pyrs) cannot read this file with every rule "
            f"({self.failure}); read with {rules} off: {cost}"
        )


# What a rule being off costs the file's links.
_COST = {
    "autolink_ext": "bare URLs in it are not links",
    "backticks": "code spans in it read as text (a link inside one counts)",
    "footnote": "footnotes in it read as text (`[^1]: x` as a link definition)",
    "image": "images in it read as links",
    INLINE: "no links in it were read",
}


def _parser(mdx: bool, off: tuple[str, ...] = (), extra: tuple[Any, ...] = ()) -> MarkdownIt:
    """The parser for MDX or Markdown with the rules `off` turned off and the `extra` ones on."""
    found = _PARSERS.get((mdx, off, extra))
    if found is None:
        if not off and not mdx and not extra:
            found = MarkdownIt("commonmark").enable_many(_GFM)
        else:
            # No indented code in MDX: JSX children are indented and stay Markdown.
            rules: list[Any] = _BLOCK_RULES if INLINE in off else [*_COMMONMARK_RULES, *_GFM]
            rules = [r for r in rules if r not in off and not (mdx and r == "code")]
            found = MarkdownIt("zero").enable_many([*rules, *extra])
        _PARSERS[(mdx, off, extra)] = found
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


def _first_tree(
    src: str,
    mdx: bool,
    tries: tuple[tuple[str, ...], ...],
    quiet: bool,
    why: str = "",
    extra: tuple[str, ...] = (),
) -> Tree:
    """The tree of the first rule set in `tries` that parses `src`; MarkdownParseError when none does.

    `quiet`: a known panic trigger is in the text (`_suspect`); `why`: why the first rule set already
    has rules off (the note's reason when no panic gives one); `extra`: rules on beyond the index's.
    """
    failure = ""
    for off in tries:
        try:
            with _stderr_off(quiet or bool(failure)):
                return Tree(_parser(mdx, off, extra).tree(src), off=off, failure=failure or why)
        except BaseException as exc:
            if not _panic(exc):
                raise
            failure = failure or " ".join(str(exc).split())[:200]
    raise MarkdownParseError(f"the Markdown parser (markdown-it-pyrs) failed: {failure}")


def _tries(off: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """The rule sets to try in order: none off, then `FALLBACKS`; each with at least `off` off."""
    return tuple(t for t in ((), *FALLBACKS) if INLINE in t or set(off) <= set(t))


def _nesting(lines: list[str]) -> tuple[int, int]:
    """(an upper bound of the deepest container nesting, its 0-based line), from each line's prefix.

    Opening a container N deep takes the markers or the indentation of the N - 1 around it on the
    same line (lazy lines open nothing), so a line's `>` and list markers plus half of each run of
    space in its prefix bound its depth; only lines long enough to pass the limit are looked at.
    """
    deepest, where = 0, 0
    for k, line in enumerate(lines):
        if len(line) * 2 <= MAX_NESTING:
            continue
        m = _PREFIX.match(line)
        prefix = m.group() if m else ""
        markers = len(_MARKERS.findall(prefix))
        # A run of c columns of space stands for at most c // 2 list items' indentation (the one
        # space after a marker, none).
        runs = _SPACES.findall(prefix)
        depth = markers + sum((run.count(" ") + 4 * run.count("\t")) // 2 for run in runs)
        if depth > deepest:
            deepest, where = depth, k
    return deepest, where


def _check_nesting(lines: list[str]) -> None:
    """Raise MarkdownParseError when a line's containers may nest past `MAX_NESTING`."""
    depth, at = _nesting(lines)
    if depth > MAX_NESTING:
        raise MarkdownParseError(
            f"containers (block quotes, list items, indentation) up to {depth} deep (the limit is "
            f"{MAX_NESTING}): the Markdown parser would overflow its stack",
            at + 1,
        )


def _nested(src: str, opener: str, limit: int) -> int:
    """How deep `opener` nests with no `]` between (0 when that is not past `limit`)."""
    if src.count(opener) <= limit:
        return 0
    deepest = max(part.count(opener) for part in src.split("]"))
    return deepest if deepest > limit else 0


def _forced_off(src: str) -> tuple[tuple[str, ...], str]:
    """The rules a file's text must be parsed without (known to hang or crash on it), and why."""
    off: list[str] = []
    why: list[str] = []
    footnotes = _nested(src, "[^", FOOTNOTE_NESTING)
    if footnotes:
        off.append("footnote")
        why.append(f"[^ nested {footnotes} deep: its time doubles with each level")
    images = _nested(src, "![", MAX_NESTING)
    if images:
        off.append("image")
        why.append(f"![ nested {images} deep: more than {MAX_NESTING} overflows the parser's stack")
    return tuple(off), "; ".join(why)


def _suspect(src: str) -> bool:
    """Whether the parse may panic on a known trigger (Rust's panic output is then kept quiet)."""
    return "^[" in src or _unpaired_code(src)


def _ascii_char(ch: str) -> str:
    # Whitespace stays whitespace (a bare URL may follow it); anything else reads as a letter, which
    # is what GFM makes of it inside a URL (only ASCII punctuation is trimmed from a URL's end).
    return (" " if ch.isspace() else "x") * len(ch.encode("utf-8"))


def _ascii_copy(src: str) -> str:
    """`src` with every non-ASCII character made ASCII of its UTF-8 length (byte offsets kept)."""
    return _NON_ASCII.sub(lambda m: "".join(map(_ascii_char, m.group())), src)


def _unpaired_code(src: str) -> bool:
    """Whether a paragraph with a `[` has a backtick run that no later run of its length closes (the
    code-span rule may then panic); it may say yes where the parser would not."""
    if "`" not in src or "[" not in src:
        return False
    for part in src.split("\n\n"):
        if "[" not in part or "`" not in part:
            continue
        runs = [len(t) for t in _TICKS.findall(part.replace("\\`", ""))]
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


def parse_tree(src: str, mdx: bool = False, lines: list[str] | None = None) -> Tree:
    """The CommonMark/GFM tree of `src` (MDX rules when `mdx`; `lines`: its lines, when known),
    surviving the parser's known failures; MarkdownParseError for a file nested too deep."""
    _check_nesting(src.split("\n") if lines is None else lines)
    off, why = _forced_off(src)
    quiet = _suspect(src)  # the ASCII copy below has the same brackets, backticks and carets
    if src.isascii() or not _URL_START.search(src):
        return _first_tree(src, mdx, _tries(off), quiet, why)
    # In text with a non-ASCII character the bare-URL rule mixes character and byte offsets: it
    # misses the URLs after one (`é http://x.com`) or panics on one inside a URL. So the file is parsed
    # without the rule, and its bare URLs are found in an ASCII copy with the same byte offsets.
    tree = _first_tree(src, mdx, _tries((*off, "autolink_ext")), quiet, why)
    try:
        with_urls = tuple(t for t in _tries(off) if "autolink_ext" not in t)
        bare = _first_tree(_ascii_copy(src), mdx, with_urls, quiet)
    except MarkdownParseError as exc:
        bare = Tree(tree.root, off=(INLINE,), failure=str(exc))
    if INLINE not in tree.off and "autolink_ext" not in bare.off and INLINE not in bare.off:
        tree.bare = _bare_urls(bare.root, src.encode("utf-8"))
        tree.off = tuple(r for r in tree.off if r != "autolink_ext")
        tree.failure = tree.failure if tree.off else ""
    else:
        tree.failure = tree.failure or bare.failure
    return tree


def markdown_tree(text: str) -> Node:
    """The CommonMark/GFM tree of `text` (the index's rules), surviving the parser's known panics."""
    return parse_tree(text).root


def deflist_tree(src: str, mdx: bool = False) -> Node | None:
    """The tree of `src` with definition lists (`Term` then `: definition`) read as such, or None when
    the parser fails on it. Only Hugo's term ids ask for it: the index's parse knows no such lists.

    The index's guards hold: too deep a nesting is not parsed, and the rules that hang or crash on
    the text are off; but no fallback is tried (the terms are wanted as the full rules read them).
    """
    try:
        _check_nesting(src.split("\n"))
        off, _ = _forced_off(src)
        return _first_tree(src, mdx, _tries(off)[:1], _suspect(src), extra=("deflist",)).root
    except MarkdownParseError:
        return None
