"""`.gitignore` patterns, matched as git matches them, in time bounded by the pattern and the path.

A repository's `.gitignore` is untrusted input like the manual: a regex translation of its globs
(`*a*a*a*a*b`, `**/a/**/a/**/b`) backtracks for seconds on a forty-character name. Here a segment
glob is matched by the greedy two-pointer method (at most pattern x name steps) and `**` by a table
over path segments, so a crafted pattern costs no more than its size times the path's.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ignore_files", "ignored", "manual_ignored", "read_ignores"]

# A pattern longer than this, or a path of more segments, is not a file name a build writes.
_MAX_PATTERN = 1024
_MAX_SEGMENTS = 128
# A `.gitignore` is read up to this size and this many patterns (it is a file of the repository).
_MAX_IGNORE_BYTES = 256 << 10
_MAX_IGNORE_LINES = 5000

Ignores = tuple[
    tuple[str, tuple[str, ...]], ...
]  # (the manual root's path from the file's folder, its lines)


def ignore_files(root: Path) -> list[Path]:
    """The `.gitignore` files that apply to the manual at `root`: the repository root's down to the
    manual root's ([] when no git repository holds the manual)."""
    here = root.resolve()
    chain = []
    for _ in range(64):
        chain.append(here / ".gitignore")
        if (here / ".git").exists():
            return list(reversed(chain))
        if here.parent == here:
            break
        here = here.parent
    return []


def read_ignores(root: Path, files: list[Path]) -> Ignores:
    """Each of `files` (from `ignore_files`) that exists and holds patterns, as (the manual root's path
    from its folder, its pattern lines)."""
    from udm.site.model import read_head  # the model matches paths with this module

    out = []
    resolved = root.resolve()
    for path in files:
        try:
            raw = read_head(path, _MAX_IGNORE_BYTES)
        except OSError:
            continue  # absent (most folders have none) or unreadable
        if len(raw) > _MAX_IGNORE_BYTES:
            raw = raw[: raw.rfind(b"\n") + 1]  # whole lines only
        lines = tuple(
            line
            for line in raw.decode("utf-8", "replace").splitlines()[:_MAX_IGNORE_LINES]
            if line.strip() and not line.startswith("#")
        )
        if lines:
            prefix = resolved.relative_to(path.parent).as_posix()
            out.append(("" if prefix == "." else prefix, lines))
    return tuple(out)


_Token = tuple[str, object]  # ("*", None), ("?", None), ("=", char), ("[", (negated, items))


def _tokens(glob: str) -> list[_Token] | None:
    """A segment glob as tokens; None when it is malformed (an unclosed class matches nothing in git)."""
    out: list[_Token] = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if c == "\\" and i + 1 < len(glob):
            out.append(("=", glob[i + 1]))
            i += 2
        elif c == "*":
            if not out or out[-1][0] != "*":
                out.append(("*", None))
            i += 1
        elif c == "?":
            out.append(("?", None))
            i += 1
        elif c == "[":
            end, item = _class(glob, i)
            if item is None:
                return None
            out.append(("[", item))
            i = end
        else:
            out.append(("=", c))
            i += 1
    return out


def _class(glob: str, start: int) -> tuple[int, tuple[bool, list[tuple[str, str]]] | None]:
    """A `[...]` class from `start`: (index after it, (negated, ranges)); None when it never closes."""
    i = start + 1
    negated = i < len(glob) and glob[i] in "!^"
    if negated:
        i += 1
    ranges: list[tuple[str, str]] = []
    first = True
    while i < len(glob) and (glob[i] != "]" or first):
        first = False
        c = glob[i]
        if c == "\\" and i + 1 < len(glob):
            i += 1
            c = glob[i]
        if i + 2 < len(glob) and glob[i + 1] == "-" and glob[i + 2] != "]":
            ranges.append((c, glob[i + 2]))
            i += 3
        else:
            ranges.append((c, c))
            i += 1
    if i >= len(glob):
        return i, None
    return i + 1, (negated, ranges)


def _one(token: _Token, c: str) -> bool:
    """Whether one character matches a token that is no `*`."""
    kind, value = token
    if kind == "?":
        return True
    if kind == "=":
        return value == c
    negated, ranges = value  # type: ignore[misc]
    return (not any(lo <= c <= hi for lo, hi in ranges)) == negated  # type: ignore[has-type]


def _glob(tokens: list[_Token], name: str) -> bool:
    """Whether `name` (one path segment) matches the tokens: greedy, back to the last `*` only."""
    i = j = 0
    star = -1
    mark = 0
    while j < len(name):
        if i < len(tokens) and tokens[i][0] != "*" and _one(tokens[i], name[j]):
            i += 1
            j += 1
        elif i < len(tokens) and tokens[i][0] == "*":
            star, mark = i, j
            i += 1
        elif star >= 0:
            i = star + 1
            mark += 1
            j = mark
        else:
            return False
    while i < len(tokens) and tokens[i][0] == "*":
        i += 1
    return i == len(tokens)


@dataclass(frozen=True)
class _Pattern:
    negated: bool
    directory_only: bool
    anchored: bool  # holds a slash before its end: matched against the whole path, else any name
    segments: tuple[list[_Token] | None, ...]  # None: a `**` segment
    inside: bool = False  # ended in `/**`: what is inside the folder, not the folder itself


def _pattern(line: str) -> _Pattern | None:
    """One `.gitignore` line as a pattern; None for a blank line, a comment or one too long."""
    if len(line) > _MAX_PATTERN:
        return None
    text = line.rstrip("\n\r")
    # Trailing spaces go unless escaped.
    while text.endswith(" ") and not text.endswith("\\ "):
        text = text[:-1]
    if not text or text.startswith("#"):
        return None
    negated = text.startswith("!")
    if negated or text.startswith(("\\!", "\\#")):
        text = text[1:]
    directory_only = text.endswith("/")
    text = text.rstrip("/")
    if not text:
        return None
    if text == "**":
        return _Pattern(negated, directory_only, False, (None,))  # every file and folder
    anchored = "/" in text
    parts = text.lstrip("/").split("/")
    inside = len(parts) > 1 and parts[-1] == "**"
    if inside:
        parts = parts[:-1]
    segments: list[list[_Token] | None] = []
    for part in parts:
        if part == "**":
            if not segments or segments[-1] is not None:
                segments.append(None)
            continue
        tokens = _tokens(part)
        if tokens is None:
            return None
        segments.append(tokens)
    return _Pattern(negated, directory_only, anchored, tuple(segments), inside)


def _path_match(segments: tuple[list[_Token] | None, ...], parts: list[str]) -> bool:
    """Whether the pattern's segments match the path's parts, `**` being any number of them (a table
    over (segment, part) positions: each is decided once)."""
    n, m = len(segments), len(parts)
    # can[i][j]: segments[i:] match parts[j:].
    can = [[False] * (m + 1) for _ in range(n + 1)]
    can[n][m] = True
    for i in range(n - 1, -1, -1):
        seg = segments[i]
        for j in range(m, -1, -1):
            if seg is None:
                can[i][j] = can[i + 1][j] or (j < m and can[i][j + 1])
            else:
                can[i][j] = j < m and can[i + 1][j + 1] and _glob(seg, parts[j])
    return can[0][0]


class _Rules:
    """The patterns of one `.gitignore`, matched against paths relative to its folder."""

    def __init__(self, lines: tuple[str, ...]) -> None:
        self.patterns = [p for p in (_pattern(line) for line in lines) if p is not None]

    def decide(self, parts: list[str], is_dir: bool) -> bool | None:
        """True when the last pattern matching the path ignores it, False when it re-includes it, None
        when none matches."""
        verdict: bool | None = None
        for pattern in self.patterns:
            if pattern.directory_only and not is_dir:
                continue
            if pattern.inside:
                # `gen/**`: a path with `gen` as one of its folders, not `gen` itself.
                hit = any(_path_match(pattern.segments, parts[:k]) for k in range(1, len(parts)))
            elif pattern.anchored:
                hit = _path_match(pattern.segments, parts)
            else:
                tokens = pattern.segments[0]
                hit = tokens is None or _glob(tokens, parts[-1])
            if hit:
                verdict = not pattern.negated
        return verdict


@functools.lru_cache(maxsize=64)
def _rules(lines: tuple[str, ...]) -> _Rules:
    """A `.gitignore` file's patterns, compiled once."""
    return _Rules(lines)


def ignored(files: tuple[tuple[str, tuple[str, ...]], ...], rel: str) -> bool:
    """Whether the `.gitignore` files (each: the manual root's path from its folder, its lines; the
    repository's first) ignore the file `rel` (normalised, from the manual root), as git decides:
    a file in an ignored folder is ignored whatever a later pattern says of the file; otherwise the
    last matching pattern decides, a deeper file's over a shallower one's."""
    if not files or not rel or rel.startswith(("../", "/")) or rel == "..":
        return False  # only paths inside the manual are asked (the model's outside_root)
    for depth in range(1, rel.count("/") + 2):
        is_dir = depth <= rel.count("/")
        verdict: bool | None = None
        for prefix, lines in files:
            parts = (f"{prefix}/{rel}" if prefix else rel).split("/")
            whole = len(parts) - rel.count("/") - 1 + depth
            if whole > _MAX_SEGMENTS:
                return False
            decided = _rules(lines).decide(parts[:whole], is_dir)
            if decided is not None:
                verdict = decided
        if verdict:
            return True  # an ignored folder (or the file itself)
    return False


def manual_ignored(files: Ignores) -> bool:
    """Whether the `.gitignore` files ignore a folder holding the manual (a scratch copy inside a
    repository): then the repository holds none of its files, and its patterns say nothing of them.
    Each folder above the manual is decided as git decides it: by the last matching pattern of the
    files at or above it, a deeper file's over a shallower one's."""
    depth = max((len(prefix.split("/")) for prefix, _ in files if prefix), default=0)
    for above in range(min(depth, _MAX_SEGMENTS), 0, -1):  # the folder `above` levels over the root
        verdict: bool | None = None
        for prefix, lines in files:
            parts = prefix.split("/") if prefix else []
            if len(parts) < above:
                continue  # the file sits below that folder
            folder = parts[: len(parts) - above + 1]
            decided = _rules(lines).decide(folder, True)
            if decided is not None:
                verdict = decided
        if verdict:
            return True
    return False
