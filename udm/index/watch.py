"""Watching the UDM root: the stat scan of its Markdown files and an inotify watch over its folders.

While nothing moves, the never-stale check is one non-blocking read() of the inotify descriptor;
events that name files let the next refresh stat just those (`restat`), anything else rescans.
"""

from __future__ import annotations

import ctypes
import os
import stat
import struct
from contextlib import suppress
from pathlib import Path

from udm.index.lookup import MARKDOWN_SUFFIXES, scan_markdown
from udm.shown import utf8_name

__all__ = ["Inotify", "make_watcher", "restat", "scan_root"]


def scan_root(
    root: Path, exclude: list[Path] | None = None, suffixes: tuple[str, ...] = MARKDOWN_SUFFIXES
) -> dict[str, tuple[int, int]]:
    """Every Markdown file under `root` (relative posix path -> (size, mtime_ns)), hidden dirs skipped."""
    return scan_markdown(root, exclude or [], suffixes=suffixes)


def restat(
    root: Path, suffixes: tuple[str, ...], known: dict[str, tuple[int, int]], paths: set[str]
) -> dict[str, tuple[int, int]]:
    """`known` with the stat of `paths` (absolute, under `root`) updated as `scan_root` sees them."""
    disk = dict(known)
    base = len(str(root)) + 1
    for full in paths:
        name = os.path.basename(full)
        if name.startswith(".") or not name.lower().endswith(suffixes):
            continue
        rel = full[base:].replace(os.sep, "/")
        if not utf8_name(rel):
            continue  # left out as scan_root leaves it out
        try:
            st = os.stat(full)
        except OSError:
            disk.pop(rel, None)
            continue
        if stat.S_ISREG(st.st_mode):
            disk[rel] = (st.st_size, st.st_mtime_ns)
        else:
            disk.pop(rel, None)
    return disk


# struct inotify_event (wd, mask, cookie, len) then `len` bytes of NUL-padded name.
_EVENT = struct.Struct("iIII")
# Overflow, watch removed, an event about a directory, the watched directory deleted or moved.
_RESCAN = 0x4000 | 0x8000 | 0x40000000 | 0x400 | 0x800
# The watched directory itself was deleted or moved, or its watch removed.
_GONE = 0x400 | 0x800 | 0x8000


class Inotify:
    """A non-blocking inotify watch over directories: `changed()` is one read() while nothing moves."""

    _MASK = 0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800

    def __init__(self) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        self._watched: set[str] = set()
        self._paths: dict[int, str] = {}

    def watch_tree(self, root: Path, exclude: list[Path]) -> None:
        """Watch `root` and every (non-hidden) directory below it."""
        skip = {str(p) for p in exclude}
        for current, dirs, _files in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".") and os.path.join(current, d) not in skip]
            if current not in self._watched:
                self._add(current)

    def watch_new(self, dirs: list[str]) -> bool:
        """Watch those of `dirs` not watched yet; whether there were any."""
        added = False
        for current in dirs:
            if current not in self._watched and self._add(current):
                added = True
        return added

    def _add(self, directory: str) -> bool:
        """Watch one directory (remembering its path by watch descriptor); whether it worked."""
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(directory), self._MASK)
        if wd < 0:
            return False
        old = self._paths.get(wd)
        if old is not None and old != directory:
            self._watched.discard(old)  # the same directory under a new name (its parent was moved)
        self._watched.add(directory)
        self._paths[wd] = directory
        return True

    def changed(self) -> bool:
        """Whether any event arrived since the last call (drains the queue)."""
        return self.changes() is not None

    def changes(self) -> tuple[bool, set[str]] | None:
        """Events since the last call (drains the queue): None when there were none.

        Otherwise whether a full rescan is needed (an event about a directory, a dropped watch, an
        overflow) and the paths of the files the events named.
        """
        seen = rescan = False
        paths: set[str] = set()
        while True:
            try:
                buf = os.read(self.fd, 65536)
            except BlockingIOError:
                break
            if not buf:
                break
            seen = True
            off = 0
            while off + _EVENT.size <= len(buf):
                wd, mask, _cookie, length = _EVENT.unpack_from(buf, off)
                name = buf[off + _EVENT.size : off + _EVENT.size + length].split(b"\0", 1)[0]
                off += _EVENT.size + length
                base = self._paths.get(wd)
                if mask & _GONE and base is not None:
                    # Deleted or moved away: a directory made later under that name needs a new watch.
                    self._watched.discard(base)
                    if mask & 0x8000:
                        del self._paths[wd]
                if mask & _RESCAN or not name or base is None:
                    rescan = True
                else:
                    paths.add(os.path.join(base, os.fsdecode(name)))
        return (rescan, paths) if seen else None

    def close(self) -> None:
        """Stop watching."""
        with suppress(OSError):
            os.close(self.fd)


def make_watcher() -> Inotify | None:
    """An inotify watch, or None where the system has none (other kernels, exhausted limits)."""
    try:
        return Inotify()
    except (OSError, AttributeError):
        return None
