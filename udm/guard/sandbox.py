"""Safe file operations inside the allowed directories: read, atomic write, mkdir, move, delete, list.

Every operation resolves its path with `udm.guard.paths.PathGuard` (component-wise root matching,
symlink hops checked one by one, `O_NOFOLLOW` walks from a root descriptor) and then acts only
through the directory descriptors that walk opened, with `dir_fd=` calls. Before it commits (the
rename of a write, an unlink, a move) the parent is walked again and must still be the same
directory, so a symlink swapped in between the check and the use cannot redirect it. Only regular
files and directories are opened, with `O_NONBLOCK` so a FIFO cannot hang a read.

Protected folders (`protected=`, the engine's state: see `Settings.tool_sandbox`) lie inside the
roots but are out of bounds: every operation refuses a path that resolves into one (its real path,
after every symlink hop, is inside or equal to it), a listing skips them, and `move`/`delete` also
refuse a path that holds one (renaming or unlinking an ancestor would let a look-alike take its
place). A walk that would create folders first resolves the path without creating anything, so no
folder is made inside a protected one either.

Symlinks: followed (every hop checked) for reads, listing, existence checks, writes and `mkdir`;
never followed for the final component of `delete` and `move`, which act on the link itself. A
write through an inside symlink replaces the file it points to, atomically (temp file in the same
directory, fsync, rename); the rename never writes through a link.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from udm.errors import InvalidPathError, PathChangedError, PathOutsideError, PathProtectedError
from udm.guard.paths import (
    _DIR_FLAGS,
    MAX_NAME_BYTES,
    MAX_PATH_BYTES,
    MAX_SYMLINK_HOPS,
    PathGuard,
    PathInfo,
    _kind,
    _normalize,
    _NotFound,
    _plain_kind,
    _split,
    _Walk,
    escape_name,
    resolve_inside,
)

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
]

_CHUNK = 1 << 20
# O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a writer.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC

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


def in_git_folder(real: str | Path, roots: Iterable[str | Path]) -> bool:
    """Whether the real path `real` lies in or names a `.git` below the allowed root it is in (any case)."""
    parts = _split(os.fspath(real))
    for root in roots:
        form = _split(os.path.realpath(os.fspath(root)))
        if parts[: len(form)] == form:
            return any(p.casefold() == ".git" for p in parts[len(form) :])
    return False


# Protected files rather than folders (Settings.tool_sandbox): named as settings in a refusal.
_SETTINGS_FILES = frozenset({"udm.toml", "pyproject.toml", "prefect.yaml"})


class Sandbox(PathGuard):
    """The allowed roots plus the safe operations on them; every method refuses paths that leave them."""

    def __init__(
        self,
        roots: Iterable[Path | str],
        project_root: Path | str | None = None,
        *,
        protected: Iterable[Path | str] = (),
    ) -> None:
        super().__init__(roots, project_root)
        forms: list[tuple[tuple[str, ...], str]] = []
        for p in protected:
            absolute = _normalize(os.path.join(self.project_root, os.fspath(p)))
            # Both spellings: the real path is what a walk reports; the configured one is what the
            # engine opens, so an ancestor of it that is a symlink must not be replaceable either.
            for form in dict.fromkeys((_split(absolute), _split(os.path.realpath(absolute)))):
                forms.append((form, absolute))
        self._protected = tuple(forms)

    def _protected_by(self, real: str, *, holding: bool = False) -> str | None:
        """The protected folder `real` lies in (or, with `holding`, also one that lies in `real`)."""
        parts = _split(real)
        for form, shown in self._protected:
            if parts[: len(form)] == form or (holding and form[: len(parts)] == parts):
                return shown
        return None

    def _refuse_protected(self, real: str, original: str | Path, *, holding: bool = False) -> None:
        shown = self._protected_by(real, holding=holding)
        if shown is not None:
            what = "lies in" if self._protected_by(real) else "holds"
            raise PathProtectedError(
                f"{escape_name(os.fspath(original))!r} {what} {self.display(shown)!r}, "
                + (
                    "a file of the engine's settings"
                    if os.path.basename(shown) in _SETTINGS_FILES
                    else "a folder of the engine's own state"
                )
                + ", which the tools may neither read nor write (use the scratch folder for scratch files)"
            )

    def _refuse_git(self, real: str, original: str | Path) -> None:
        # git runs what a repository's config names (core.fsmonitor, hooks, filters) whenever the
        # engine commits a patch, and finds the repository by the first `.git` above the manual: a
        # `.git` a tool could write or plant below a root would be code execution at the next commit.
        parts = _split(real)
        for root in self._roots:
            for form in root.forms:
                if parts[: len(form)] == form:
                    if any(p.casefold() == ".git" for p in parts[len(form) :]):
                        raise PathProtectedError(
                            f"{escape_name(os.fspath(original))!r} lies in or names a git folder "
                            "('.git'), whose configuration and hooks git runs as code: the tools may "
                            "neither read nor write it"
                        )
                    return

    def _refuse(self, real: str, original: str | Path) -> None:
        self._refuse_git(real, original)
        self._refuse_protected(real, original)

    def _walk(
        self, path: str | Path, *, follow_final: bool, create_dirs: bool = False, follow_links: bool = True
    ) -> _Walk:
        if create_dirs:
            # Where the path leads, found without creating anything: no folder is made inside state
            # or a git folder.
            with suppress(_NotFound):
                self._walk(path, follow_final=follow_final, follow_links=follow_links).close()
        try:
            w = super()._walk(
                path, follow_final=follow_final, create_dirs=create_dirs, follow_links=follow_links
            )
        except _NotFound as exc:
            self._refuse(os.path.join(exc.existing, *exc.missing), path)
            raise
        try:
            self._refuse(w.path, path)
        except BaseException:
            w.close()
            raise
        return w

    # -- reading -------------------------------------------------------------------------------

    @contextmanager
    def _open_regular(self, path: str | Path) -> Iterator[tuple[int, str, os.stat_result]]:
        try:
            w = self._walk(path, follow_final=True)
        except _NotFound as exc:
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
            try:
                fd = os.open(w.name, _READ_FLAGS, dir_fd=w.dir_fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOENT, errno.ENXIO):
                    raise PathChangedError(f"{self.display(w.path)} changed while being opened") from None
                raise
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
                data, truncated = _read_limited(fd, max_bytes)
            else:
                data, truncated = _read_lines(fd, start_line or 1, end_line, max_bytes)
        return FileRead(Path(real), data, st.st_size, truncated)

    # -- writing -------------------------------------------------------------------------------

    def _temp_in(self, dir_fd: int, mode: int) -> tuple[int, str]:
        for _ in range(8):
            name = f".udm-{secrets.token_hex(6)}.tmp"
            try:
                return os.open(name, _TEMP_FLAGS, mode, dir_fd=dir_fd), name
            except FileExistsError:
                continue
        raise FileExistsError(errno.EEXIST, "could not create a unique temporary file")

    def _write_temp(self, dir_fd: int, chunks: Iterable[bytes], mode: int | None) -> tuple[str, int]:
        fd, name = self._temp_in(dir_fd, 0o666)
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

    def write(self, path: str | Path, data: bytes, *, backup: bool = False) -> WriteResult:
        """Atomically replace (or create) a regular file: temp file, fsync, rename, never via a link."""
        try:
            w = self._walk(path, follow_final=True)
        except _NotFound as exc:
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
            tmp, written = self._write_temp(w.dir_fd, [data], mode)
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

    def _replace(self, w: _Walk, src: str, dst: str) -> None:
        existing = _lstat_or_none(dst, w.dir_fd)
        if existing is not None and stat.S_ISDIR(existing.st_mode):
            raise IsADirectoryError(
                errno.EISDIR, "is a directory", self.display(os.path.join(w.dir_path, dst))
            )
        # rename(2) replaces a symlink at `dst` itself; it never writes through it.
        os.replace(src, dst, src_dir_fd=w.dir_fd, dst_dir_fd=w.dir_fd)

    def _copy_to_temp(self, w: _Walk, name: str) -> str:
        fd = os.open(name, _READ_FLAGS, dir_fd=w.dir_fd)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise InvalidPathError(f"{self.display(w.path)} is not a regular file")
            if w.st is not None and (st.st_dev, st.st_ino) != (w.st.st_dev, w.st.st_ino):
                raise PathChangedError(f"{self.display(w.path)} was replaced while being backed up")
            tmp, _ = self._write_temp(w.dir_fd, _iter_fd(fd), stat.S_IMODE(st.st_mode) & 0o777)
            return tmp
        finally:
            os.close(fd)

    def mkdir(self, path: str | Path, *, parents: bool = False) -> tuple[Path, bool]:
        """Create a directory (and its parents when asked); returns its real path and whether it was new."""
        try:
            w = self._walk(path, follow_final=True, create_dirs=parents)
        except _NotFound as exc:
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
        except _NotFound as exc:
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
        except _NotFound as exc:
            raise self._not_found(exc) from None
        try:
            try:
                d = self._walk(dst, follow_final=False)
            except _NotFound as exc:
                raise self._not_found(exc) from None
            try:
                return self._move(s, d)
            finally:
                d.close()
        finally:
            s.close()

    def _move(self, s: _Walk, d: _Walk) -> tuple[Path, Path]:
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
            if _lstat_or_none(d.name, d.dir_fd) is not None:
                raise FileExistsError(errno.EEXIST, "the destination exists", self.display(d.path))
            os.rename(s.name, d.name, src_dir_fd=s.dir_fd, dst_dir_fd=d.dir_fd)
        else:
            # link() fails with EEXIST instead of replacing, so a concurrent create cannot be clobbered.
            try:
                os.link(s.name, d.name, src_dir_fd=s.dir_fd, dst_dir_fd=d.dir_fd, follow_symlinks=False)
            except OSError as exc:
                if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOTSUP):
                    raise
                if _lstat_or_none(d.name, d.dir_fd) is not None:
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
        except _NotFound as exc:
            raise self._not_found(exc) from None
        try:
            if w.name is not None and w.st is None:
                raise FileNotFoundError(errno.ENOENT, "no such file or directory", self.display(w.path))
            if w.name is not None and w.st is not None and not stat.S_ISDIR(w.st.st_mode):
                raise NotADirectoryError(errno.ENOTDIR, "not a directory", self.display(w.path))
            if w.name is None:
                dfd = os.dup(w.dir_fd)
            else:
                try:
                    dfd = os.open(w.name, _DIR_FLAGS, dir_fd=w.dir_fd)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                        raise PathChangedError(f"{self.display(w.path)} changed while being opened") from None
                    raise
            try:
                held = os.fstat(dfd)
                if w.st is not None and (held.st_dev, held.st_ino) != (w.st.st_dev, w.st.st_ino):
                    raise PathChangedError(f"{self.display(w.path)} was replaced while being opened")
                self.verify(w)
                listing = Listing(Path(w.path))
                depth = max_depth if recursive else 1
                self._scan(dfd, w.path, "", 1, depth, include_hidden, pattern, only_dirs, limit, listing)
                return listing
            finally:
                os.close(dfd)
        finally:
            w.close()

    def _scan(
        self,
        fd: int,
        real_dir: str,
        prefix: str,
        depth: int,
        max_depth: int,
        include_hidden: bool,
        pattern: str | None,
        only_dirs: bool,
        limit: int,
        out: Listing,
    ) -> None:
        with os.scandir(fd) as it:
            items = sorted(it, key=lambda e: e.name)
        for entry in items:
            if out.truncated:
                return
            name = entry.name
            rel = prefix + name
            try:
                name.encode("utf-8")
            except UnicodeEncodeError:
                out.skipped.append(f"{escape_name(rel)}: the name is not valid UTF-8")
                continue
            if name.startswith(".") and not include_hidden:
                continue
            if self._protected and self._protected_by(os.path.join(real_dir, name)):
                out.skipped.append(f"{rel}: a folder of the engine's own state, not listed")
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue  # vanished while listing
            linked = stat.S_ISLNK(st.st_mode)
            if linked:
                try:
                    info = self.info(os.path.join(real_dir, name))
                except (PathOutsideError, InvalidPathError, PathChangedError, OSError) as exc:
                    out.skipped.append(f"{rel}: symlink not followed ({exc})")
                    continue
                if info is None:
                    out.skipped.append(f"{rel}: dangling symlink")
                    continue
                kind, size, mtime = info.kind, info.size, info.mtime
            else:
                plain = _plain_kind(st.st_mode)
                if plain is None:
                    out.skipped.append(f"{rel}: a {_kind(st.st_mode)}, not listed")
                    continue
                kind, size, mtime = plain, st.st_size, st.st_mtime
            wanted = kind == "directory" or not only_dirs
            if pattern is not None:
                subject = rel if "/" in pattern else name
                wanted = wanted and fnmatch.fnmatchcase(subject, pattern)
            if wanted:
                if len(out.entries) >= limit:
                    out.truncated = True
                    return
                out.entries.append(DirEntry(rel, kind, size if kind == "file" else None, mtime, linked))
            # Never descend through a symlink: no loops, no entry listed twice.
            if kind == "directory" and not linked and depth < max_depth:
                try:
                    sub = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError:
                    out.skipped.append(f"{rel}: changed while listing")
                    continue
                try:
                    self._scan(
                        sub,
                        os.path.join(real_dir, name),
                        rel + "/",
                        depth + 1,
                        max_depth,
                        include_hidden,
                        pattern,
                        only_dirs,
                        limit,
                        out,
                    )
                finally:
                    os.close(sub)


def _lstat_or_none(name: str, dir_fd: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _iter_fd(fd: int) -> Iterator[bytes]:
    while chunk := os.read(fd, _CHUNK):
        yield chunk


def _read_limited(fd: int, max_bytes: int | None) -> tuple[bytes, bool]:
    out = bytearray()
    while max_bytes is None or len(out) < max_bytes:
        want = _CHUNK if max_bytes is None else min(_CHUNK, max_bytes - len(out))
        chunk = os.read(fd, want)
        if not chunk:
            return bytes(out), False
        out += chunk
    # Exactly at the limit: cut only when more bytes follow.
    return bytes(out), bool(os.read(fd, 1))


def _read_lines(fd: int, start: int, end: int | None, max_bytes: int | None) -> tuple[bytes, bool]:
    out = bytearray()
    line = 1
    for chunk in _iter_fd(fd):
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
