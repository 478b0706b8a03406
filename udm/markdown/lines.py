"""Splitting text into lines the way CommonMark, editors and `grep -n` count them."""

from __future__ import annotations

import re

__all__ = ["ByteOffsets", "split_lines"]

# str.splitlines also breaks at these; CommonMark, editors and grep only at \n, \r\n and \r.
_OTHER_BREAKS = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
_LINE = re.compile(r"[^\n\r]*(?:\r\n|\n|\r)|[^\n\r]+\Z")


def split_lines(text: str) -> list[str]:
    """Lines with their endings, broken only at \\n, \\r\\n and \\r; `"".join(...)` gives the text back."""
    if any(ch in text for ch in _OTHER_BREAKS):
        return _LINE.findall(text)
    # The common case: no other break character, so the C splitter gives the same lines, faster.
    return text.splitlines(keepends=True)


class ByteOffsets:
    """The UTF-8 byte offsets of character offsets of one text, asked for in increasing order: each is
    counted on from the last, so a scan's matches cost one pass over the text in all (a parser's source
    maps are in bytes)."""

    __slots__ = ("_bytes", "_chars", "_plain", "_text")

    def __init__(self, text: str) -> None:
        self._text = text
        self._plain = text.isascii()
        self._chars = self._bytes = 0

    def at(self, char: int) -> int:
        """The byte offset of the character at `char` (no smaller than the last one asked for)."""
        if self._plain:
            return char
        self._bytes += len(self._text[self._chars : char].encode("utf-8"))
        self._chars = char
        return self._bytes
