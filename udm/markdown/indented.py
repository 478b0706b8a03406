"""Python-Markdown's indented blocks (MkDocs): admonitions, pymdownx.details and pymdownx.tabbed.

On a MkDocs site with these extensions, `!!! note`, `??? tip` and `=== "Tab"` open a block whose body
is the lines indented four columns deeper below it (blank lines between). CommonMark reads that body
as indented code, so its links, fences and headings would be unseen. The text the CommonMark parser
sees is rewritten line for line: each body becomes a block quote (`> ` in place of its indentation),
a container as the block is, holding the same Markdown; nested blocks are rewritten the same way. The
lines stay the lines of the file (same count, same order), so every line number the parse reports is
the file's. Fenced code is left as it is: a marker there is an example of the syntax.
"""

from __future__ import annotations

import re

__all__ = ["INDENTED_BLOCKS", "MAX_DEPTH", "TAB_TITLE", "unindent"]

# The extensions (as `markdown_extensions` names them) and the marker each opens its blocks with.
INDENTED_BLOCKS = {
    "admonition": "!!!",
    "markdown.extensions.admonition": "!!!",
    "pymdownx.details": "???",
    "pymdownx.tabbed": "===",
}

# Each marker's opening line, as the extension's own pattern reads it (after the container's indent).
_OPENERS = {
    "!!!": r'!!! ?[\w\-]+(?: +[\w\-]+)*(?: +"[^\n]*")?',
    "???": r'\?{3}\+? ?(?:(?:[\w\-]+(?: +[\w\-]+)*?)?(?: +"[^\n]*")|[\w\-]+(?: +[\w\-]+)*?)',
    "===": r'={3}(?:\+|\+!|!\+|!)? +"[^\n]*"',
}
# A pymdownx.tabbed tab's opening line: group 1 is its title.
TAB_TITLE = re.compile(r'[ \t]*={3}(?:\+|\+!|!\+|!)? +"(.*)" *')
_TAB = 4  # Python-Markdown's tab_length: a body sits this many columns deeper than its marker
# Blocks nested deeper than this are left as CommonMark reads them (indented code): each level copies
# its body once more, so crafted nesting costs a bounded multiple of the page, and no recursion limit.
MAX_DEPTH = 12
# A fence's opening line at any depth (superfences nests them anywhere): its marker run, info after.
_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})(.*)")


def _opener(markers: tuple[str, ...]) -> re.Pattern[str]:
    """The pattern of a line that opens a block of one of these markers (group 1: its indent)."""
    alternatives = "|".join(_OPENERS[m] for m in markers if m in _OPENERS) or "(?!)"
    return re.compile(rf"([ \t]*)(?:{alternatives}) *")


def unindent(src: str, markers: tuple[str, ...]) -> str:
    """The text with each block's indented body turned into a block quote, line for line ("" markers:
    the text as it is)."""
    if not markers or not any(m in src for m in markers):
        return src
    lines = src.split("\n")
    out = _rewrite(lines, _opener(markers), markers, MAX_DEPTH)
    return src if out == lines else "\n".join(out)


def _columns(line: str) -> int:
    """How many columns of blanks a line starts with (tabs to the next multiple of four)."""
    col = 0
    for ch in line:
        if ch == " ":
            col += 1
        elif ch == "\t":
            col += _TAB - col % _TAB
        else:
            break
    return col


def _dedent(line: str, columns: int) -> str:
    """The line without its first `columns` columns of blanks (a tab counts to its stop)."""
    col = i = 0
    while i < len(line) and col < columns and line[i] in " \t":
        col += 1 if line[i] == " " else _TAB - col % _TAB
        i += 1
    return " " * (col - columns) + line[i:] if col > columns else line[i:]


def _rewrite(lines: list[str], opener: re.Pattern[str], markers: tuple[str, ...], depth: int) -> list[str]:
    """The lines with every block body outside fenced code rewritten as a block quote, nested ones too
    (down to `depth` levels)."""
    if depth <= 0:
        return lines
    out: list[str] = []
    fence: tuple[str, int] | None = None  # the open fence's marker character and length
    i, count = 0, len(lines)
    while i < count:
        line = lines[i]
        i += 1
        if fence is not None:
            out.append(line)
            m = _FENCE.fullmatch(line.rstrip())
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= fence[1] and not m.group(2).strip():
                fence = None
            continue
        m = _FENCE.fullmatch(line)
        if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            fence = (m.group(1)[0], len(m.group(1)))
            out.append(line)
            continue
        head = opener.fullmatch(line) if any(mark in line for mark in markers) else None
        out.append(line)
        # Python-Markdown opens a block at its container's first column: a list item's content sits
        # four columns in, so a marker indented by anything but a multiple of four opens none.
        if head is None or _columns(head.group(1)) % _TAB:
            continue
        indent = _columns(head.group(1)) + _TAB
        last = i - 1  # the body's last line (blank lines after it are not its)
        k = i
        while k < count:
            if not lines[k].strip():
                k += 1
            elif _columns(lines[k]) >= indent:
                last = k
                k += 1
            else:
                break
        if last < i:
            continue
        lead = head.group(1)
        body = _rewrite([_dedent(b, indent) for b in lines[i : last + 1]], opener, markers, depth - 1)
        out += [f"{lead}> {b}" if b.strip() else f"{lead}>" for b in body]
        i = last + 1
    return out
