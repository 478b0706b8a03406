"""`.gitignore` patterns, matched as git matches them, in time bounded by the pattern and the path.

A repository's `.gitignore` is untrusted input like the manual: a regex translation of its globs
(`*a*a*a*a*b`, `**/a/**/a/**/b`) backtracks for seconds on a forty-character name. Here a segment
glob is matched by the greedy two-pointer method (at most pattern x name steps), and a pattern with
`**` by one table over the path's segments that answers every leading folder at once; the patterns
read, their segments and the depth of a path asked about are bounded, and each answer is kept.
"""

from __future__ import annotations

import functools
import os
import posixpath
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

__all__ = [
    "FolderIgnores",
    "Ignores",
    "Nested",
    "gitignore_lines",
    "ignore_files",
    "ignore_states",
    "ignored",
    "ignored_folder",
    "manual_ignored",
    "pattern_lines",
    "read_ignores",
]

# A pattern longer than this, or of more segments, is no file name a build writes.
_MAX_PATTERN = 1024
_MAX_PATTERN_SEGMENTS = 32
# A path deeper than this is not looked up (its missing file stays broken, the safe answer).
_MAX_DEPTH = 32
# What is read of the `.gitignore` files: this much of each, this many patterns in all.
_MAX_IGNORE_BYTES = 256 << 10
_MAX_PATTERNS = 2000
# Folders of the manual whose `.gitignore` one resolution pass reads (each a stat, most have none).
_MAX_FOLDERS = 20_000

Ignores = tuple[
    tuple[str, tuple[str, ...]], ...
]  # (the manual root's path from the file's folder, its lines)
# The `.gitignore` files in folders of the manual: (the folder from the manual root, its lines),
# shallow ones first.
Nested = tuple[tuple[str, tuple[str, ...]], ...]


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
    from its folder, its lines), lines split as git splits them (at a newline only; a UTF-8 byte-order
    mark dropped)."""
    out = []
    budget = _MAX_PATTERNS
    resolved = root.resolve()
    for path in files:
        lines = pattern_lines(path)[:budget]
        budget -= len(lines)
        if lines:
            prefix = resolved.relative_to(path.parent).as_posix()
            out.append(("" if prefix == "." else prefix, lines))
    return tuple(out)


def pattern_lines(path: Path) -> tuple[str, ...]:
    """The pattern lines of a file in `.gitignore` syntax (a `.gitignore`, Mintlify's `.mintignore`),
    split as git splits them (at a newline only; a UTF-8 byte-order mark dropped), comments and blank
    lines left out; () when it is absent or cannot be read. Only its head is read, whole lines."""
    from udm.site.model import read_head  # the model matches paths with this module

    try:
        raw = read_head(path, _MAX_IGNORE_BYTES)
    except OSError:
        return ()  # absent (most folders have none) or unreadable
    if len(raw) > _MAX_IGNORE_BYTES:
        raw = raw[: raw.rfind(b"\n") + 1]  # whole lines only
    return gitignore_lines(raw.decode("utf-8", "replace"))


def gitignore_lines(text: str) -> tuple[str, ...]:
    """The pattern lines of a `.gitignore`'s text, as git reads them: split at a newline only, a
    carriage return before it dropped (a file written on Windows), a UTF-8 byte-order mark dropped,
    comments and blank lines left out."""
    text = text.removeprefix("\ufeff")
    lines = (line[:-1] if line.endswith("\r") else line for line in text.split("\n"))
    return tuple(line for line in lines if line and not line.startswith("#"))[:_MAX_PATTERNS]


_Token = tuple[str, object]  # ("*", None), ("?", None), ("=", char), ("[", (negated, items))

# POSIX bracket classes (`[[:digit:]]`), as git's wildmatch reads them.
_POSIX = {
    "alnum": str.isalnum,
    "alpha": str.isalpha,
    "blank": lambda c: c in " \t",
    "cntrl": lambda c: ord(c) < 32 or ord(c) == 127,
    "digit": lambda c: "0" <= c <= "9",
    "graph": lambda c: c.isprintable() and not c.isspace(),
    "lower": str.islower,
    "print": str.isprintable,
    "punct": lambda c: c.isprintable() and not c.isalnum() and not c.isspace(),
    "space": str.isspace,
    "upper": str.isupper,
    "xdigit": lambda c: c in "0123456789abcdefABCDEF",
}


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


def _class(glob: str, start: int) -> tuple[int, tuple[bool, list[object]] | None]:
    """A `[...]` class from `start`: (index after it, (negated, items)), an item a (low, high) range or
    a POSIX class's test; None when it never closes or names no POSIX class git knows."""
    i = start + 1
    negated = i < len(glob) and glob[i] in "!^"
    if negated:
        i += 1
    items: list[object] = []
    first = True
    while i < len(glob) and (glob[i] != "]" or first):
        first = False
        if glob.startswith("[:", i):
            end = glob.find(":]", i + 2)
            test = _POSIX.get(glob[i + 2 : end]) if end > 0 else None
            if test is None:
                return i, None
            items.append(test)
            i = end + 2
            continue
        c, i = _class_char(glob, i)
        if i + 1 < len(glob) and glob[i] == "-" and glob[i + 1] != "]":
            high, i = _class_char(glob, i + 1)
            items.append((c, high))
        else:
            items.append((c, c))
    if i >= len(glob):
        return i, None
    return i + 1, (negated, items)


def _class_char(glob: str, i: int) -> tuple[str, int]:
    """The character at `i` of a class (a backslash escapes the next) and the index after it."""
    if glob[i] == "\\" and i + 1 < len(glob):
        return glob[i + 1], i + 2
    return glob[i], i + 1


def _one(token: _Token, c: str) -> bool:
    """Whether one character matches a token that is no `*`."""
    kind, value = token
    if kind == "?":
        return True
    if kind == "=":
        return value == c
    negated, items = cast("tuple[bool, list[Any]]", value)
    hit = any(item(c) if callable(item) else item[0] <= c <= item[1] for item in items)
    return hit != negated


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
    # Per segment, the characters it matches literally: a name lacking one is no match, found without
    # running the glob (`*a*a*...*b` against a folder of `a`s, each a pattern x name walk otherwise).
    needs: tuple[str, ...] = ()

    def fits(self, k: int, segment: list[_Token], name: str) -> bool:
        """Whether segment `k` (a glob, not `**`) matches the name."""
        return all(c in name for c in self.needs[k]) and _glob(segment, name)


def _trimmed(line: str) -> str:
    """The line without its trailing spaces, but for one a backslash escapes (`a\\ ` keeps it;
    `a\\\\ ` is an escaped backslash, so its space goes)."""
    text = line
    while text.endswith(" "):
        body = text[:-1]
        slashes = len(body) - len(body.rstrip("\\"))
        if slashes % 2:
            break
        text = body
    return text


def _pattern(line: str) -> _Pattern | None:
    """One `.gitignore` line as a pattern; None for a blank line, a comment, or one git never matches
    (too long, ending in a lone backslash, an unclosed class)."""
    if len(line) > _MAX_PATTERN:
        return None
    text = _trimmed(line)
    if not text or text.startswith("#"):
        return None
    negated = text.startswith("!")
    if negated or text.startswith(("\\!", "\\#")):
        text = text[1:]
    if (len(text) - len(text.rstrip("\\"))) % 2:
        return None  # a trailing backslash escapes nothing: git matches no path with it
    directory_only = text.endswith("/")
    if directory_only:
        text = text[:-1]
    if not text:
        return None
    anchored = "/" in text
    parts = (text[1:] if text.startswith("/") else text).split("/")
    if len(parts) > _MAX_PATTERN_SEGMENTS:
        return None
    # A segment of stars alone, two or more, is `**`; a trailing one is the folder's inside.
    stars = [len(p) >= 2 and set(p) == {"*"} for p in parts]
    if len(parts) == 1 and stars[0]:
        return _Pattern(negated, directory_only, False, (None,))  # every file and folder
    inside = len(parts) > 1 and stars[-1]
    if inside:
        parts, stars = parts[:-1], stars[:-1]
    segments: list[list[_Token] | None] = []
    literal = anchored  # git compares an anchored pattern's literal start as a string first
    for part, star in zip(parts, stars, strict=True):
        if star:
            if not segments or segments[-1] is not None:
                segments.append(None)
            literal = False
            continue
        tokens = _tokens(part)
        if tokens is None:
            return None
        segments.append(tokens)
        wild = next((k for k, ch in enumerate(part) if ch in "*?[\\"), None)
        if literal and wild is not None:
            literal = False
            if wild > 0 and part[wild:].startswith("**") and set(part[wild:]) == {"*"}:
                # `/a**` (and `/a**/x`): after the literal `a`, git's wildmatch sees the stars at the start
                # of what is left, a `**` that crosses folders: `a`, then anything, `a/b` included.
                segments.append(None)
    needs = tuple(
        "" if seg is None else "".join(sorted({str(v) for kind, v in seg if kind == "="})) for seg in segments
    )
    return _Pattern(negated, directory_only, anchored, tuple(segments), inside, needs)


def _matches(pattern: _Pattern, parts: list[str]) -> list[bool]:
    """For each d in 1..len(parts), whether the pattern matches the path's first d segments (one table
    over (segment, depth): each glob is tried once)."""
    m = len(parts)
    if not pattern.anchored:
        tokens = pattern.segments[0]
        return [tokens is None or pattern.fits(0, tokens, part) for part in parts]
    # row[d]: the segments so far match parts[:d] exactly.
    row = [True] + [False] * m
    for k, segment in enumerate(pattern.segments):
        if segment is None:
            seen = False
            for d in range(m + 1):
                seen = seen or row[d]
                row[d] = seen
        else:
            row = [False] + [row[d - 1] and pattern.fits(k, segment, parts[d - 1]) for d in range(1, m + 1)]
    if not pattern.inside:
        return row[1:]
    # `gen/**`: a path with `gen` among its folders, not `gen` itself; `**/**`, whose folder part
    # matches no folder at all, every path.
    out, seen = [], row[0]
    for d in range(1, m + 1):
        out.append(seen)
        seen = seen or row[d]
    return out


class _Rules:
    """The patterns of one `.gitignore`, matched against paths relative to its folder."""

    def __init__(self, lines: tuple[str, ...]) -> None:
        self.patterns = [p for p in (_pattern(line) for line in lines) if p is not None]

    def verdicts(self, parts: list[str], last_is_dir: bool) -> list[bool | None]:
        """For each d in 1..len(parts): True when the last pattern matching `parts[:d]` ignores it, False
        when it takes it back, None when none matches. All but the last are folders."""
        out: list[bool | None] = [None] * len(parts)
        for pattern in self.patterns:
            hits = _matches(pattern, parts)
            for d, hit in enumerate(hits):
                if hit and (not pattern.directory_only or d < len(parts) - 1 or last_is_dir):
                    out[d] = not pattern.negated
        return out


@functools.lru_cache(maxsize=64)
def _rules(lines: tuple[str, ...]) -> _Rules:
    """A `.gitignore` file's patterns, compiled once."""
    return _Rules(lines)


def _decided(files: Ignores, rel: str, last_is_dir: bool, nested: Nested = ()) -> list[bool | None]:
    """The verdict on each folder leading to `rel` and on `rel` itself, the last one first: for each,
    the last matching pattern of the files that see it, a deeper file's over a shallower one's (the
    repository's down to the manual root's, then `nested`, those in folders of the manual).
    [] when `rel` is deeper than a build writes."""
    by_end: list[bool | None] = []  # index e: e folders up from `rel` (0 is `rel` itself)
    seen = [
        (posixpath.normpath(posixpath.join(prefix, rel)) if prefix else rel, lines) for prefix, lines in files
    ]
    seen += [(rel[len(folder) + 1 :], lines) for folder, lines in nested if rel.startswith(folder + "/")]
    for full, lines in seen:
        if full in (".", "..") or full.startswith(("../", "/")):
            continue  # the file's own folder, or a path outside it: its patterns do not see it
        parts = full.split("/")
        if len(parts) > _MAX_DEPTH:
            return []
        for end, verdict in enumerate(reversed(_rules(lines).verdicts(parts, last_is_dir))):
            if end == len(by_end):
                by_end.append(None)
            if verdict is not None:
                by_end[end] = verdict
    return by_end


def ignored(files: Ignores, rel: str, nested: Nested = ()) -> bool:
    """Whether the `.gitignore` files (`Ignores`, the repository's first; then `nested`, those in
    folders of the manual) ignore the file `rel` (normalised, from the manual root; it may climb above
    it, into the repository), as git decides: a file in an ignored folder is ignored whatever a later
    pattern says of the file; otherwise the last matching pattern decides, a deeper file's over a
    shallower one's."""
    return _ignored(files, rel, False, nested)


def ignored_folder(files: Ignores, rel: str, nested: Nested = ()) -> bool:
    """Whether the `.gitignore` files ignore `rel` taken as a folder (a `dir/` pattern matches it),
    or a folder above it."""
    return _ignored(files, rel, True, nested)


@functools.lru_cache(maxsize=8192)
def _ignored(files: Ignores, rel: str, last_is_dir: bool, nested: Nested = ()) -> bool:
    if not (files or nested) or not rel or rel.startswith("/"):
        return False
    # The topmost ignored folder (or the path) decides: nothing below it can be taken back.
    return any(verdict for verdict in reversed(_decided(files, rel, last_is_dir, nested)))


class FolderIgnores:
    """The patterns of the `.gitignore` in a folder of the manual at `root`, below it (the root's own is
    `read_ignores`'): () where there is none, where it is a link (git reads none through a link) or
    where the folder leads out of the root. Each folder is read once; all of them share one budget
    of patterns, as the repository's files do. `consulted` tells which were read, for the index to
    notice a later change to one."""

    def __init__(self, root: Path) -> None:
        self.base = os.path.realpath(root)
        self._seen: dict[str, tuple[str, ...]] = {}
        self._budget = _MAX_PATTERNS

    def __call__(self, folder: str) -> tuple[str, ...]:
        """The patterns of `folder`'s `.gitignore` (a folder from the manual root)."""
        hit = self._seen.get(folder)
        if hit is None:
            hit = ()
            path = os.path.join(self.base, folder, ".gitignore")
            if folder and len(self._seen) < _MAX_FOLDERS and self._budget > 0 and not os.path.islink(path):
                real = os.path.realpath(path)
                if real.startswith(self.base.rstrip(os.sep) + os.sep):
                    hit = pattern_lines(Path(real))[: self._budget]
                    self._budget -= len(hit)
            self._seen[folder] = hit
        return hit

    def consulted(self) -> dict[str, list[int] | None]:
        """Each folder read, with its `.gitignore`'s state (`ignore_states`)."""
        return ignore_states(Path(self.base), list(self._seen))


def ignore_states(root: Path, folders: list[str]) -> dict[str, list[int] | None]:
    """Each folder's `.gitignore` as it is now: [size, mtime in ns] (of the file or a link in its
    place), None where there is none."""
    out: dict[str, list[int] | None] = {}
    for folder in folders:
        try:
            st = os.lstat(os.path.join(root, folder, ".gitignore"))
        except OSError:
            out[folder] = None
            continue
        out[folder] = [st.st_size, st.st_mtime_ns]
    return out


@functools.lru_cache(maxsize=8192)
def last_match_ignored(lines: tuple[str, ...], rel: str) -> bool:
    """Whether `.gitignore`-style lines exclude the file `rel` as the pathspec library's
    `GitIgnoreSpec` decides (MkDocs' `exclude_docs`): a pattern matches the file itself, or a folder
    above it (`snippets/` matches `snippets/a.md`); the last pattern that matches the file itself
    decides, else the last that matches a folder above it. So `snippets/` then `!snippets/keep.md`
    publishes `keep.md`, which git would not."""
    if not lines or not rel or rel.startswith("/"):
        return False
    parts = rel.split("/")
    if len(parts) > _MAX_DEPTH:
        return False
    itself: bool | None = None
    above: bool | None = None
    for pattern in _rules(lines).patterns:
        hits = _matches(pattern, parts)
        if pattern.inside:
            # `gen/**` matches what is below `gen` as itself; `gen/**/` as a folder above it (and
            # `**/**/` only what has a folder above it).
            if not hits[-1]:
                continue
            if not pattern.directory_only:
                itself = not pattern.negated
            elif len(parts) > 1:
                above = not pattern.negated
        elif hits[-1] and not pattern.directory_only:
            itself = not pattern.negated
        elif any(hits[:-1]):
            above = not pattern.negated
    return (itself if itself is not None else above) is True


def manual_ignored(files: Ignores) -> bool:
    """Whether the `.gitignore` files ignore a folder holding the manual (a scratch copy inside a
    repository): then the repository holds none of its files, and its patterns say nothing of them."""
    return any(_decided(files, ".", last_is_dir=True)) if files else False
