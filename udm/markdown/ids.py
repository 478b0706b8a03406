"""ID patterns: compile the configured families into one matcher and find IDs in text."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import lru_cache

from udm.config import DEFAULT_ID_PATTERNS

__all__ = ["DEFINING_KEYS", "IdMatcher", "id_family", "id_matcher"]

# Keys of a fenced YAML/JSON mapping whose string value defines an ID.
DEFINING_KEYS: tuple[str, ...] = ("id", "task_id", "mode_id", "tool_id")


def id_family(identifier: str) -> str:
    """The family of an ID: its first hyphen-separated part ('TASK' for 'TASK-P0-M0.1-T001')."""
    return identifier.split("-", 1)[0]


# Every default family starts with an upper-case word, a hyphen and a letter or digit. A scan for just
# that (a character class first, which the regex engine searches for quickly) finds where an ID may
# start, and the full pattern, look-behind and all, is tried only there: 2x faster over a large text
# than the full pattern tried at every position. Custom families keep the plain scan.
_DEFAULT_START = re.compile(r"[A-Z][A-Z0-9]*-[A-Za-z0-9]")


class IdMatcher:
    """Finds IDs of the configured families in text, each as a whole token."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(patterns)
        body = "|".join(f"(?:{p})" for p in self.patterns) or r"(?!x)x"
        # Whole tokens only: not glued to a letter, digit, '_' or a hyphenated continuation, so
        # COMP-001 is not found inside API-COMP-001-v1 and TASK-P0-M0.1-T001 ends before a full stop.
        self.regex = re.compile(rf"(?<![A-Za-z0-9_\-])(?:{body})(?![A-Za-z0-9_]|-[A-Za-z0-9]|\.[A-Za-z0-9])")
        self._full = re.compile(rf"(?:{body})")
        self._start = _DEFAULT_START if set(self.patterns) <= set(DEFAULT_ID_PATTERNS) else None

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """Every ID occurrence in `text` as a regex match (the same matches as `regex.finditer`)."""
        if self._start is None:
            return self.regex.finditer(text)
        return self._scan(self._start, text)

    def _scan(self, start: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
        search, match = start.search, self.regex.match
        pos = 0
        while (hint := search(text, pos)) is not None:
            at = hint.start()
            # match() at a position still sees the text before it, so the look-behind holds.
            found = match(text, at)
            if found is None:
                pos = at + 1
                continue
            yield found
            pos = found.end()  # IDs are never empty

    def findall(self, text: str) -> list[str]:
        """Every ID occurrence in `text`, in order, with repeats."""
        return [m.group(0) for m in self.finditer(text)]

    def is_id(self, value: str) -> bool:
        """Whether the whole of `value` is an ID of a configured family."""
        return self._full.fullmatch(value) is not None


@lru_cache(maxsize=16)
def _cached(patterns: tuple[str, ...]) -> IdMatcher:
    return IdMatcher(patterns)


def id_matcher(patterns: Iterable[str] | None = None) -> IdMatcher:
    """The (cached) matcher for these patterns; the defaults when None."""
    return _cached(tuple(patterns if patterns is not None else DEFAULT_ID_PATTERNS))
