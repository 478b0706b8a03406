"""Text from files, names and callers as a terminal or a CI log shows it: faithfully, never acted on.

A heading, a link target, a file name or a config value may hold an escape sequence (`\\x1b]0;...\\a`
retitles a terminal, `\\x1b[2J` clears it), a bidi override (U+202E shows `txt.exe` as `exe.txt`) or
an undecodable byte of a name (a lone surrogate, which cannot even be written out as UTF-8). Each is
shown as its escape (`\\x1b`, `\\u202e`; an undecodable byte as `\\xff`), as `ls` and `git` show
such names. Only the
standard library is imported: the `udm` client's fast paths use this module.
"""

from __future__ import annotations

import re
from typing import TextIO

__all__ = ["for_stream", "json_shown", "shown", "shown_line", "utf8_name"]

# Beyond C0: DEL and the C1 controls, the bidi and zero-width format characters, line and paragraph
# separators, lone surrogates, and the two non-characters XML refuses.
_BEYOND_C0 = (
    "\x7f-\x9f\u061c\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\ufeff\ud800-\udfff\ufffe\uffff"
)
# `shown` keeps a tab and line breaks (a CR only ending a line); `shown_line` keeps none.
_HIDDEN = re.compile(f"\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f{_BEYOND_C0}]")
_HIDDEN_LINE = re.compile(f"[\x00-\x1f{_BEYOND_C0}]")


def _escape(m: re.Match[str]) -> str:
    """`\\x1b`, `\\u202e`: the character's Python escape; `\\xff` for a lone surrogate that stands
    for an undecodable byte of a name (U+DC80..U+DCFF), the byte as `ls` and the skipped lists show it."""
    char = m.group()
    if "\udc80" <= char <= "\udcff":
        return f"\\x{ord(char) - 0xDC00:02x}"
    return char.encode("unicode_escape", "backslashreplace").decode("ascii")


def shown(text: str) -> str:
    """`text` with every hidden character as its escape; tabs and line breaks (`\\n`, `\\r\\n`) kept."""
    return text if text.isascii() and text.isprintable() else _HIDDEN.sub(_escape, text)


def shown_line(text: str) -> str:
    """`text` as one line: every hidden character, tabs and line breaks too, as its escape."""
    return text if text.isascii() and text.isprintable() else _HIDDEN_LINE.sub(_escape, text)


def for_stream(text: str, stream: TextIO) -> str:
    """`text` shown (see `shown`) when `stream` is a terminal, as it is otherwise (a pipe or a file
    gets the exact text, as `ls` does)."""
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):  # a closed or stand-in stream
        terminal = False
    return shown(text) if terminal else text


# What json.dumps(..., ensure_ascii=False) leaves raw (it escapes C0 itself) that a terminal acts on
# or UTF-8 cannot hold.
_JSON_HIDDEN = re.compile(f"[{_BEYOND_C0}]")


def json_shown(text: str) -> str:
    """JSON text (from json.dumps, which escapes C0 controls already) with the other hidden characters
    as JSON's own `\\uXXXX` escapes: the same data to a parser, nothing acted on by a terminal, and
    a lone surrogate written out without an encoding error."""
    if text.isascii() and "\x7f" not in text:
        return text
    return _JSON_HIDDEN.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def utf8_name(name: str) -> bool:
    """Whether a name read from the file system is valid UTF-8 (no byte was surrogate-escaped)."""
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
