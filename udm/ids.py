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


class IdMatcher:
    """Finds IDs of the configured families in text, each as a whole token."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(patterns)
        body = "|".join(f"(?:{p})" for p in self.patterns) or r"(?!x)x"
        # Whole tokens only: not glued to a letter, digit, '_' or a hyphenated continuation, so
        # COMP-001 is not found inside API-COMP-001-v1 and TASK-P0-M0.1-T001 ends before a full stop.
        self.regex = re.compile(rf"(?<![A-Za-z0-9_\-])(?:{body})(?![A-Za-z0-9_]|-[A-Za-z0-9]|\.[A-Za-z0-9])")
        self._full = re.compile(rf"(?:{body})")

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """Every ID occurrence in `text` as a regex match."""
        return self.regex.finditer(text)

    def findall(self, text: str) -> list[str]:
        """Every ID occurrence in `text`, in order, with repeats."""
        return [m.group(0) for m in self.regex.finditer(text)]

    def is_id(self, value: str) -> bool:
        """Whether the whole of `value` is an ID of a configured family."""
        return self._full.fullmatch(value) is not None


@lru_cache(maxsize=16)
def _cached(patterns: tuple[str, ...]) -> IdMatcher:
    return IdMatcher(patterns)


def id_matcher(patterns: Iterable[str] | None = None) -> IdMatcher:
    """The (cached) matcher for these patterns; the defaults when None."""
    return _cached(tuple(patterns if patterns is not None else DEFAULT_ID_PATTERNS))
