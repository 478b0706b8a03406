"""Safe file operations inside the allowed directories: read, atomic write, mkdir, move, delete, list.

Every operation resolves its path with `udm.guard.paths.PathGuard` (component-wise root matching,
symlink hops checked one by one, `O_NOFOLLOW` walks from a root descriptor) and then acts only
through the directory descriptors that walk opened, with `dir_fd=` calls. Before it commits (the
rename of a write, an unlink, a move) the parent is walked again and must still be the same
directory, so a symlink swapped in between the check and the use cannot redirect it. Only regular
files and directories are opened, with `O_NONBLOCK` so a FIFO cannot hang a read.

Protected folders and git folders inside the roots are refused by `udm.guard.protected`, which every
walk here goes through; listings are made by `udm.guard.listing`, descriptor-level reads and temp files
by `udm.guard.fileio`.

Symlinks: followed (every hop checked) for reads, listing, existence checks, writes and `mkdir`;
never followed for the final component of `delete` and `move`, which act on the link itself. A
write through an inside symlink replaces the file it points to, atomically (temp file in the same
directory, fsync, rename); the rename never writes through a link.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from udm.errors import InvalidPathError, PathChangedError
from udm.guard.fileio import READ_FLAGS, iter_fd, lstat_or_none, read_limited, read_lines, write_temp
from udm.guard.listing import DirEntry, Listing, Scan
from udm.guard.paths import (
    _DIR_FLAGS,
    MAX_NAME_BYTES,
    MAX_PATH_BYTES,
    MAX_SYMLINK_HOPS,
    HeldWalk,
    PathInfo,
    PathMissing,
    _kind,
    escape_name,
    resolve_inside,
)
from udm.guard.protected import ProtectedGuard, in_git_folder

if TYPE_CHECKING:
    from collections.abc import Iterator

    from udm.config import Settings

__all__ = [
    "MAX_NAME_BYTES",
    "MAX_PATH_BYTES",
    "MAX_SYMLINK_HOPS",
    "DirEntry",
    "FileRead",
    "Listing",
    "PathInfo",
    "Sandbox",
    "WriteResult",
    "atomic_write",
    "escape_name",
    "in_git_folder",
    "resolve_inside",
    "safe_delete",
    "safe_list",
    "safe_mkdir",
    "safe_move",
    "safe_read_bytes",
    "tool_sandbox",
]

# A test seam: called with a stage name between a check and the use it guards, so tests can swap
# a symlink in exactly there. Always None in production.
_race_hook: Callable[[str], None] | None = None


def _race_point(stage: str) -> None:
    if _race_hook is not None:
        _race_hook(stage)


@dataclass(frozen=True)
class FileRead:
    """What a read returned: the bytes, the file's real path and size, and whether it was cut."""

    path: Path
    data: bytes
    size: int
    truncated: bool


@dataclass(frozen=True)
class WriteResult:
    """A committed write: the file's real path, the bytes written and the backup made, if any."""

    path: Path
    bytes_written: int
    backup_path: Path | None
    created: bool


class Sandbox(ProtectedGuard):
    """The allowed roots plus the safe operations on them; every method refuses paths that leave them."""

    def _open_walked(self, w: HeldWalk, flags: int, changed: tuple[int, ...]) -> int:
        """Open the walk's final name in its held parent; an error in `changed` means it was swapped."""
        assert w.name is not None
        try:
            return os.open(w.name, flags, dir_fd=w.dir_fd)
        except OSError as exc:
            if exc.errno in changed:
                raise PathChangedError(f"{self.display(w.path)} changed while being opened") from None
            raise

    # -- reading -------------------------------------------------------------------------------

    @contextmanager
    def _open_regular(self, path: str | Path) -> Iterator[tuple[int, str, os.stat_result]]:
        try:
            w = self._walk(path, follow_final=True)
        except PathMissing as exc:
            raise self._not_found(exc) from None
        try:
            if w.name is None or (w.st is not None and stat.S_ISDIR(w.st.st_mode)):
                raise IsADirectoryError(errno.EISDIR, "is a directory", self.display(w.path))
            if w.st is None:
                raise FileNotFoundError(errno.ENOENT, "no such file or directory", self.display(w.path))
            if not stat.S_ISREG(w.st.st_mode):
                raise InvalidPathError(
                    f"{self.display(w.path)} is a {_kind(w.st.st_mode)}; only regular files are read"
                )
            _race_point("read:before-open")
            fd = self._open_walked(w, READ_FLAGS, (errno.ELOOP, errno.ENOENT, errno.ENXIO))
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    raise InvalidPathError(
                        f"{self.display(w.path)} is a {_kind(st.st_mode)}; only regular files are read"
                    )
                if (st.st_dev, st.st_ino) != (w.st.st_dev, w.st.st_ino):
                    raise PathChangedError(f"{self.display(w.path)} was replaced while being opened")
                self.verify(w)
                yield fd, w.path, st
            finally:
                os.close(fd)
        finally:
            w.close()

    def read(
        self,
        path: str | Path,
        *,
        max_bytes: int | None = None,
        start_line: int | None = None,
        end_line: int | None = None,
    ) -> FileRead:
        """Read a regular file: whole, its first `max_bytes`, or lines start..end (1-based, inclusive)."""
        if start_line is not None and start_line < 1:
            raise ValueError("start_line is 1-based")
        if end_line is not None and start_line is not None and end_line < start_line:
            raise ValueError("end_line is before start_line")
        with self._open_regular(path) as (fd, real, st):
            if start_line is None and end_line is None:
                data, truncated = read_limited(fd, max_bytes)
            else:
                data, truncated = read_lines(fd, start_line or 1, end_line, max_bytes)
        return FileRead(Path(real), data, st.st_size, truncated)

    # -- writing -------------------------------------------------------------------------------

    def write(self, path: str | Path, data: bytes, *, backup: bool = False) -> WriteResult:
        """Atomically replace (or create) a regular file: temp file, fsync, rename, never via a link."""
        try:
            w = self._walk(path, follow_final=True)
        except PathMissing as exc:
            raise self._not_found(exc) from None
        temps: list[str] = []
        try:
            if w.name is None or (w.st is not None and stat.S_ISDIR(w.st.st_mode)):
                raise IsADirectoryError(errno.EISDIR, "is a directory", self.display(w.path))
            if w.st is not None and not stat.S_ISREG(w.st.st_mode):
                raise InvalidPathError(
                    f"{self.display(w.path)} is a {_kind(w.st.st_mode)}; only regular files are written"
                )
            bak_name = f"{w.name}.bak"
            if backup and w.st is not None and len(bak_name.encode()) > MAX_NAME_BYTES:
                raise InvalidPathError(f"the backup name for {self.display(w.path)} would be too long")
            if backup and self._protected:
                self._refuse_protected(os.path.join(w.dir_path, bak_name), path)
            _race_point("write:before-temp")
            mode = stat.S_IMODE(w.st.st_mode) & 0o777 if w.st is not None else None
            tmp, written = write_temp(w.dir_fd, [data], mode)
            temps.append(tmp)
            _race_point("write:before-commit")
            self.verify(w)
            backup_path: Path | None = None
            if backup and w.st is not None:
                temps.append(self._copy_to_temp(w, w.name))
                self._replace(w, temps[-1], bak_name)
                temps.pop()
                backup_path = Path(w.dir_path, bak_name)
            self._replace(w, tmp, w.name)
            temps.remove(tmp)
            os.fsync(w.dir_fd)
            return WriteResult(Path(w.path), written, backup_path, w.st is None)
        finally:
            for t in temps:
                with suppress(OSError):
                    os.unlink(t, dir_fd=w.dir_fd)
            w.close()

    def _replace(self, w: HeldWalk, src: str, dst: str) -> None:
        existing = lstat_or_none(dst, w.dir_fd)
        if existing is not None and stat.S_ISDIR(existing.st_mode):
            raise IsADirectoryError(
                errno.EISDIR, "is a directory", self.display(os.path.join(w.dir_path, dst))
            )
        # rename(2) replaces a symlink at `dst` itself; it never writes through it.
        os.replace(src, dst, src_dir_fd=w.dir_fd, dst_dir_fd=w.dir_fd)

    def _copy_to_temp(self, w: HeldWalk, name: str) -> str:
        fd = os.open(name, READ_FLAGS, dir_fd=w.dir_fd)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise InvalidPathError(f"{self.display(w.path)} is not a regular file")
            if w.st is not None and (st.st_dev, st.st_ino) != (w.st.st_dev, w.st.st_ino):
                raise PathChangedError(f"{self.display(w.path)} was replaced while being backed up")
            tmp, _ = write_temp(w.dir_fd, iter_fd(fd), stat.S_IMODE(st.st_mode) & 0o777)
            return tmp
        finally:
            os.close(fd)

    def mkdir(self, path: str | Path, *, parents: bool = False) -> tuple[Path, bool]:
        """Create a directory (and its parents when asked); returns its real path and whether it was new."""
        try:
            w = self._walk(path, follow_final=True, create_dirs=parents)
        except PathMissing as exc:
            raise self._not_found(exc) from None
        try:
            if w.st is not None or w.name is None:
                mode = w.st.st_mode if w.st is not None else stat.S_IFDIR
                if not stat.S_ISDIR(mode):
                    raise FileExistsError(
                        errno.EEXIST, f"exists and is a {_kind(mode)}, not a directory", self.display(w.path)
                    )
                return Path(w.path), False
            _race_point("mkdir:before-create")
            self.verify(w)
            os.mkdir(w.name, 0o777, dir_fd=w.dir_fd)
            return Path(w.path), True
        finally:
            w.close()

    def delete(self, path: str | Path) -> Path:
        """Delete a regular file or a symlink (the link itself, never what it points to)."""
        try:
            w = self._walk(path, follow_final=False)
        except PathMissing as exc:
            raise self._not_found(exc) from None
        try:
            if w.name is None:
                raise InvalidPathError(f"{self.display(w.path)} is an allowed root; it cannot be deleted")
            self._refuse_protected(w.path, path, holding=True)
            if w.st is None:
                raise FileNotFoundError(errno.ENOENT, "no such file or directory", self.display(w.path))
            if stat.S_ISDIR(w.st.st_mode):
                raise IsADirectoryError(
                    errno.EISDIR, "is a directory; only files are deleted", self.display(w.path)
                )
            if not (stat.S_ISREG(w.st.st_mode) or stat.S_ISLNK(w.st.st_mode)):
                raise InvalidPathError(f"{self.display(w.path)} is a {_kind(w.st.st_mode)}; not deleted")
            _race_point("delete:before-unlink")
            self.verify(w)
            os.unlink(w.name, dir_fd=w.dir_fd)
            return Path(w.path)
        finally:
            w.close()

    def move(self, src: str | Path, dst: str | Path) -> tuple[Path, Path]:
        """Move a file, symlink or directory to a new name inside the roots; never replaces `dst`."""
        try:
            s = self._walk(src, follow_final=False)
        except PathMissing as exc:
            raise self._not_found(exc) from None
        try:
            try:
                d = self._walk(dst, follow_final=False)
            except PathMissing as exc:
                raise self._not_found(exc) from None
            try:
                return self._move(s, d)
            finally:
                d.close()
        finally:
            s.close()

    def _move(self, s: HeldWalk, d: HeldWalk) -> tuple[Path, Path]:
        if s.name is None or d.name is None:
            raise InvalidPathError("an allowed root cannot be moved, nor replaced by a move")
        self._refuse_protected(s.path, s.path, holding=True)
        self._refuse_protected(d.path, d.path, holding=True)
        if s.st is None:
            raise FileNotFoundError(errno.ENOENT, "no such file or directory", self.display(s.path))
        kind = _kind(s.st.st_mode)
        if kind not in ("file", "directory", "symlink"):
            raise InvalidPathError(f"{self.display(s.path)} is a {kind}; not moved")
        if d.st is not None:
            raise FileExistsError(errno.EEXIST, "the destination exists", self.display(d.path))
        _race_point("move:before-rename")
        self.verify(s)
        self.verify(d)
        if kind == "directory":
            # No rename-without-replace in the standard library: re-check right before renaming.
            if lstat_or_none(d.name, d.dir_fd) is not None:
                raise FileExistsError(errno.EEXIST, "the destination exists", self.display(d.path))
            os.rename(s.name, d.name, src_dir_fd=s.dir_fd, dst_dir_fd=d.dir_fd)
        else:
            # link() fails with EEXIST instead of replacing, so a concurrent create cannot be clobbered.
            try:
                os.link(s.name, d.name, src_dir_fd=s.dir_fd, dst_dir_fd=d.dir_fd, follow_symlinks=False)
            except OSError as exc:
                if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOTSUP):
                    raise
                if lstat_or_none(d.name, d.dir_fd) is not None:
                    raise FileExistsError(
                        errno.EEXIST, "the destination exists", self.display(d.path)
                    ) from None
                os.rename(s.name, d.name, src_dir_fd=s.dir_fd, dst_dir_fd=d.dir_fd)
            else:
                os.unlink(s.name, dir_fd=s.dir_fd)
        os.fsync(d.dir_fd)
        if (s.dir_path) != (d.dir_path):
            os.fsync(s.dir_fd)
        return Path(s.path), Path(d.path)

    # -- listing -------------------------------------------------------------------------------

    def list(
        self,
        path: str | Path,
        *,
        recursive: bool = False,
        max_depth: int = 1,
        include_hidden: bool = False,
        pattern: str | None = None,
        only_dirs: bool = False,
        limit: int = 10_000,
    ) -> Listing:
        """List a directory (recursively to `max_depth`); odd names and escaping links are skipped."""
        try:
            w = self._walk(path, follow_final=True)
        except PathMissing as exc:
            raise self._not_found(exc) from None
        try:
            if w.name is not None and w.st is None:
                raise FileNotFoundError(errno.ENOENT, "no such file or directory", self.display(w.path))
            if w.name is not None and w.st is not None and not stat.S_ISDIR(w.st.st_mode):
                raise NotADirectoryError(errno.ENOTDIR, "not a directory", self.display(w.path))
            if w.name is None:
                dfd = os.dup(w.dir_fd)
            else:
                dfd = self._open_walked(w, _DIR_FLAGS, (errno.ELOOP, errno.ENOTDIR, errno.ENOENT))
            try:
                held = os.fstat(dfd)
                if w.st is not None and (held.st_dev, held.st_ino) != (w.st.st_dev, w.st.st_ino):
                    raise PathChangedError(f"{self.display(w.path)} was replaced while being opened")
                self.verify(w)
                listing = Listing(Path(w.path))
                depth = max_depth if recursive else 1
                Scan(self, depth, include_hidden, pattern, only_dirs, limit, listing).directory(
                    dfd, w.path, "", 1
                )
                return listing
            finally:
                os.close(dfd)
        finally:
            w.close()


# -- the function API: one call, one sandbox ----------------------------------------------------


def safe_read_bytes(
    path: str | Path,
    roots: Iterable[Path | str],
    max_bytes: int | None = None,
    *,
    project_root: Path | str | None = None,
) -> bytes:
    """The bytes of a regular file inside `roots` (at most `max_bytes`)."""
    return Sandbox(roots, project_root).read(path, max_bytes=max_bytes).data


def atomic_write(
    path: str | Path,
    data: bytes,
    roots: Iterable[Path | str],
    backup: bool = False,
    *,
    project_root: Path | str | None = None,
) -> WriteResult:
    """Atomically write `data` to a file inside `roots` (temp file, fsync, rename)."""
    return Sandbox(roots, project_root).write(path, data, backup=backup)


def safe_mkdir(
    path: str | Path,
    roots: Iterable[Path | str],
    *,
    parents: bool = False,
    project_root: Path | str | None = None,
) -> Path:
    """Create a directory inside `roots`; an existing directory is fine."""
    return Sandbox(roots, project_root).mkdir(path, parents=parents)[0]


def safe_move(
    src: str | Path, dst: str | Path, roots: Iterable[Path | str], *, project_root: Path | str | None = None
) -> Path:
    """Move `src` to `dst`, both inside `roots`; refuses to replace an existing `dst`."""
    return Sandbox(roots, project_root).move(src, dst)[1]


def safe_delete(
    path: str | Path, roots: Iterable[Path | str], *, project_root: Path | str | None = None
) -> Path:
    """Delete a file or symlink inside `roots` (never what a symlink points to)."""
    return Sandbox(roots, project_root).delete(path)


def safe_list(
    path: str | Path,
    roots: Iterable[Path | str],
    *,
    recursive: bool = False,
    max_depth: int = 1,
    include_hidden: bool = False,
    pattern: str | None = None,
    project_root: Path | str | None = None,
) -> Listing:
    """List a directory inside `roots`."""
    return Sandbox(roots, project_root).list(
        path, recursive=recursive, max_depth=max_depth, include_hidden=include_hidden, pattern=pattern
    )


def tool_sandbox(settings: Settings) -> Sandbox:
    """The sandbox every tool works through: the allowed roots, with the protected folders refused."""
    # The scratch folder is the tools' own: it exists whenever they can use it.
    with suppress(OSError):
        settings.scratch_path.mkdir(parents=True, exist_ok=True)
    return Sandbox(settings.allowed_roots(), settings.project_root, protected=settings.protected_paths())
