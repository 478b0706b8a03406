"""A transaction's file-system steps, each relative to a held folder descriptor and never through a symlink.

Reads, exclusive creates, renames and unlinks take a `dir_fd` opened by the path guard's walk; the
journal folder `<state>/journal` is opened the same way. See `udm.patch.transaction` for the protocol.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from udm.config import ensure_folder
from udm.errors import PathChangedError
from udm.guard import HeldWalk, PathMissing
from udm.patch.journal import READ_FLAGS, Target, TxRoots

__all__ = [
    "ABSENT",
    "DIR_FLAGS",
    "HeldDirs",
    "clean_journal",
    "exists_at",
    "journal_dir",
    "open_journal_root",
    "read_at",
    "refused_dir",
    "rename_at",
    "unlink_quietly",
    "write_new_at",
]

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def journal_dir(state: Path) -> Path:
    """Where transactions keep their journals while they run."""
    return state / "journal"


def refused_dir(state: Path) -> Path:
    """Where recovery moves a journal it refuses to act on (kept for a person to inspect)."""
    return state / "journal-refused"


def read_at(dir_fd: int, name: str, where: str) -> tuple[bytes | None, int | None]:
    """A regular file's bytes and permission bits, read without following a symlink; (None, None) if absent."""
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PathChangedError(f"{where} is a symlink now; it is not followed") from None
        if exc.errno in (errno.ENAMETOOLONG, errno.ENOTDIR):
            return None, None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise PathChangedError(f"{where} is not a regular file now")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks), stat.S_IMODE(st.st_mode)
    finally:
        os.close(fd)


def write_new_at(dir_fd: int, name: str, data: bytes, mode: int | None = None) -> None:
    """Create `name` (never an existing one, never through a link), write, fsync."""
    fd = os.open(name, NEW_FLAGS, 0o666, dir_fd=dir_fd)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=dir_fd)
        raise
    os.close(fd)


def rename_at(dir_fd: int, src: str, dst: str, where: str) -> None:
    """Rename `src` over `dst` inside one held folder (`where` is `dst`'s real path, for messages and tests)."""
    os.rename(src, dst, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


# Errors that mean "there is no such file" (a name too long or under a file cannot exist either).
ABSENT = (errno.ENOENT, errno.ENAMETOOLONG, errno.ENOTDIR)


def unlink_quietly(dir_fd: int, name: str, where: str, notes: list[str]) -> None:
    """Remove a temp file of ours; one that was never created (or cannot be) is no reason to stop."""
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno not in ABSENT:
            notes.append(f"could not remove {where}: {exc.strerror or exc}")


class HeldDirs:
    """Parent folders held open during the rename phase (a bounded few), fsynced once when let go."""

    LIMIT = 64

    def __init__(self, space: TxRoots) -> None:
        self.space = space
        self.held: dict[tuple[str, str], HeldWalk] = {}

    def get(self, t: Target) -> HeldWalk | None:
        """The target's parent, held; None when it is missing."""
        key = (t.root, t.parent)
        w = self.held.pop(key, None)
        if w is None:
            if len(self.held) >= self.LIMIT:
                self._release(self.held.pop(next(iter(self.held))))
            try:
                w = self.space.open(t)
            except PathMissing:
                return None
        self.held[key] = w  # most recently used last
        return w

    @staticmethod
    def _release(w: HeldWalk) -> None:
        try:
            os.fsync(w.dir_fd)
        finally:
            w.close()

    def close(self) -> None:
        """Fsync and close every held folder."""
        try:
            while self.held:
                self._release(self.held.pop(next(iter(self.held))))
        finally:
            for w in self.held.values():
                w.close()


def exists_at(dir_fd: int, name: str) -> bool:
    """Whether `name` in the held folder is a regular file (a symlink is not followed)."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode)


# -- the journal folder ---------------------------------------------------------------------------


def open_journal_root(state: Path, *, create: bool) -> int | None:
    """A descriptor of `<state>/journal` (never through a symlink); None when it does not exist."""
    jroot = journal_dir(state)
    if create:
        ensure_folder(state)
        with contextlib.suppress(FileExistsError):
            os.mkdir(jroot, 0o700)
    try:
        return os.open(jroot, DIR_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            return -1  # not a real folder: recovery moves it aside
        raise


def clean_journal(jroot_fd: int, name: str) -> None:
    """Remove a journal folder: its files (never followed), then the folder."""
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=jroot_fd)
    except FileNotFoundError:
        return
    try:
        for child in os.listdir(fd):
            os.unlink(child, dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=jroot_fd)
    os.fsync(jroot_fd)
