"""Splitting text into lines the way CommonMark, editors and `grep -n` count them."""

from __future__ import annotations

import re

__all__ = ["split_lines"]

# str.splitlines also breaks at these; CommonMark, editors and grep only at \n, \r\n and \r.
_OTHER_BREAKS = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
_LINE = re.compile(r"[^\n\r]*(?:\r\n|\n|\r)|[^\n\r]+\Z")


def split_lines(text: str) -> list[str]:
    """Lines with their endings, broken only at \\n, \\r\\n and \\r; `"".join(...)` gives the text back."""
    if any(ch in text for ch in _OTHER_BREAKS):
        return _LINE.findall(text)
    # The common case: no other break character, so the C splitter gives the same lines, faster.
    return text.splitlines(keepends=True)
