"""Descriptor-level I/O of the sandbox: bounded reads, line ranges, temp files written and fsynced.

Everything here acts on descriptors the sandbox's walks opened (`dir_fd=`-relative names), never on
path text, so it adds no way around the path guard.
"""

from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Iterable, Iterator
from contextlib import suppress

__all__ = ["READ_FLAGS", "iter_fd", "lstat_or_none", "read_limited", "read_lines", "write_temp"]

_CHUNK = 1 << 20
# O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a writer.
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def lstat_or_none(name: str, dir_fd: int) -> os.stat_result | None:
    """The lstat of `name` in the folder `dir_fd`, or None when nothing has that name."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def iter_fd(fd: int) -> Iterator[bytes]:
    """The rest of an open file, in chunks."""
    while chunk := os.read(fd, _CHUNK):
        yield chunk


def read_limited(fd: int, max_bytes: int | None) -> tuple[bytes, bool]:
    """The file's bytes (at most `max_bytes`) and whether more followed."""
    out = bytearray()
    while max_bytes is None or len(out) < max_bytes:
        want = _CHUNK if max_bytes is None else min(_CHUNK, max_bytes - len(out))
        chunk = os.read(fd, want)
        if not chunk:
            return bytes(out), False
        out += chunk
    # Exactly at the limit: cut only when more bytes follow.
    return bytes(out), bool(os.read(fd, 1))


def read_lines(fd: int, start: int, end: int | None, max_bytes: int | None) -> tuple[bytes, bool]:
    """Lines start..end (1-based, inclusive) of the file, at most `max_bytes`, and whether they were cut."""
    out = bytearray()
    line = 1
    for chunk in iter_fd(fd):
        pos = 0
        while pos < len(chunk):
            nl = chunk.find(b"\n", pos)
            stop = len(chunk) if nl < 0 else nl + 1
            if line >= start:
                out += chunk[pos:stop]
                if max_bytes is not None and len(out) > max_bytes:
                    return bytes(out[:max_bytes]), True
            pos = stop
            if nl >= 0:
                line += 1
                if end is not None and line > end:
                    return bytes(out), False
    return bytes(out), False


def _temp_in(dir_fd: int, mode: int) -> tuple[int, str]:
    for _ in range(8):
        name = f".udm-{secrets.token_hex(6)}.tmp"
        try:
            return os.open(name, _TEMP_FLAGS, mode, dir_fd=dir_fd), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "could not create a unique temporary file")


def write_temp(dir_fd: int, chunks: Iterable[bytes], mode: int | None) -> tuple[str, int]:
    """A new temp file in `dir_fd` holding `chunks`, fsynced; its name and size (removed on failure)."""
    fd, name = _temp_in(dir_fd, 0o666)
    written = 0
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        for chunk in chunks:
            view = memoryview(chunk)
            while view:
                n = os.write(fd, view)
                view = view[n:]
                written += n
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with suppress(OSError):
            os.unlink(name, dir_fd=dir_fd)
        raise
    os.close(fd)
    return name, written
