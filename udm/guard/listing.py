"""Directory listings of the sandbox: entries by name, odd names and escaping links skipped, never
descending through a symlink, protected folders left out."""

from __future__ import annotations

import fnmatch
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from udm.errors import InvalidPathError, PathChangedError, PathOutsideError
from udm.guard.paths import _DIR_FLAGS, _kind, _plain_kind, escape_name
from udm.guard.protected import ProtectedGuard

__all__ = ["DirEntry", "Listing", "Scan"]


@dataclass(frozen=True)
class DirEntry:
    """One listed entry; `name` is relative to the listed directory, '/'-separated."""

    name: str
    kind: Literal["file", "directory"]
    size: int | None
    mtime: float
    symlink: bool = False


@dataclass
class Listing:
    """A directory listing plus what was skipped (and why) and whether a limit cut it short."""

    path: Path
    entries: list[DirEntry] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    truncated: bool = False


# What an entry is, for the listing: kind, size, mtime and whether it is a symlink.
_Described = tuple[Literal["file", "directory"], int, float, bool]


@dataclass
class Scan:
    """One listing under way: its options, and the listing it fills."""

    guard: ProtectedGuard
    max_depth: int
    include_hidden: bool
    pattern: str | None
    only_dirs: bool
    limit: int
    out: Listing

    def directory(self, fd: int, real_dir: str, prefix: str, depth: int) -> None:
        """List the open folder `fd` (real path `real_dir`), its names prefixed with `prefix`."""
        out = self.out
        with os.scandir(fd) as it:
            items = sorted(it, key=lambda e: e.name)
        for entry in items:
            if out.truncated:
                return
            name = entry.name
            rel = prefix + name
            described = self._describe(entry, real_dir, rel)
            if described is None:
                continue
            kind, size, mtime, linked = described
            if self._wanted(kind, rel, name):
                if len(out.entries) >= self.limit:
                    out.truncated = True
                    return
                out.entries.append(DirEntry(rel, kind, size if kind == "file" else None, mtime, linked))
            # Never descend through a symlink: no loops, no entry listed twice.
            if kind == "directory" and not linked and depth < self.max_depth:
                try:
                    sub = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError:
                    out.skipped.append(f"{rel}: changed while listing")
                    continue
                try:
                    self.directory(sub, os.path.join(real_dir, name), rel + "/", depth + 1)
                finally:
                    os.close(sub)

    def _describe(self, entry: os.DirEntry[str], real_dir: str, rel: str) -> _Described | None:
        """What the entry is, or None when it is left out (the reason noted in `skipped` where one is due)."""
        name, skipped = entry.name, self.out.skipped
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            skipped.append(f"{escape_name(rel)}: the name is not valid UTF-8")
            return None
        if name.startswith(".") and not self.include_hidden:
            return None
        if self.guard._protected and self.guard._protected_by(os.path.join(real_dir, name)):
            skipped.append(f"{rel}: a folder of the engine's own state, not listed")
            return None
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            return None  # vanished while listing
        if stat.S_ISLNK(st.st_mode):
            try:
                info = self.guard.info(os.path.join(real_dir, name))
            except (PathOutsideError, InvalidPathError, PathChangedError, OSError) as exc:
                skipped.append(f"{rel}: symlink not followed ({exc})")
                return None
            if info is None:
                skipped.append(f"{rel}: dangling symlink")
                return None
            return info.kind, info.size, info.mtime, True
        plain = _plain_kind(st.st_mode)
        if plain is None:
            skipped.append(f"{rel}: a {_kind(st.st_mode)}, not listed")
            return None
        return plain, st.st_size, st.st_mtime, False

    def _wanted(self, kind: str, rel: str, name: str) -> bool:
        """Whether the entry is listed: a folder, or any entry unless only folders are; matching the pattern."""
        wanted = kind == "directory" or not self.only_dirs
        if self.pattern is not None:
            subject = rel if "/" in self.pattern else name
            wanted = wanted and fnmatch.fnmatchcase(subject, self.pattern)
        return wanted
