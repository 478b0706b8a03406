"""The path guard: resolves a path inside the allowed directories, or refuses it.

How it holds. A path is first checked as text (NUL bytes, control and format characters such as the
bidi override U+202E, undecodable bytes, over-long names),
made absolute against the project root and normalised lexically, then matched against the allowed
roots component by component (never by string prefix, so `/work/state_evil` is not inside
`/work/state`). It is then walked from an open descriptor of its root, one component at a time,
with `O_NOFOLLOW` and `dir_fd=`-relative calls: the kernel never resolves a path we did not check.
A symlink met on the way is read with `readlink` and its target is located and walked again the
same way, so every hop of a chain must land inside an allowed root. A walk ends holding an open
descriptor of the target's parent directory; `verify` walks again before an operation commits and
insists on the same directory, so a symlink swapped in after the check is caught.

`..` is resolved lexically, as `os.path.normpath` does, before any symlink is read.
The file operations built on this live in `udm.guard.sandbox`.
"""

from __future__ import annotations

import errno
import os
import stat
import unicodedata
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from udm.errors import InvalidPathError, PathChangedError, PathOutsideError
from udm.shown import shown_line

__all__ = [
    "MAX_NAME_BYTES",
    "MAX_PATH_BYTES",
    "MAX_SYMLINK_HOPS",
    "HeldWalk",
    "PathGuard",
    "PathInfo",
    "PathMissing",
    "escape_name",
    "resolve_inside",
]

MAX_NAME_BYTES = 255  # NAME_MAX on Linux file systems
MAX_PATH_BYTES = 4096  # PATH_MAX on Linux
MAX_SYMLINK_HOPS = 40  # the kernel's own limit for one resolution
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def escape_name(name: str, limit: int = 160) -> str:
    """A printable, bounded form of a name whose undecodable bytes were surrogate-escaped (`\\xff`)."""
    try:
        text = name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        # A surrogate that no undecodable byte produced (a JSON "\ud800"): shown as its escape.
        text = name.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= limit else f"{text[: limit - 20]}...({len(text)} chars)"


def _quoted(name: str) -> str:
    """A name in quotes for a message: every character a terminal acts on, and each undecodable byte
    (`\\xff`), written as its escape once (a repr would double the escapes), bounded in length."""
    return f"'{escape_name(shown_line(name))}'"


def _plain_kind(mode: int) -> Literal["file", "directory"] | None:
    if stat.S_ISREG(mode):
        return "file"
    return "directory" if stat.S_ISDIR(mode) else None


def _kind(mode: int) -> str:
    plain = _plain_kind(mode)
    if plain is not None:
        return plain
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


# Zero-width non-joiner and joiner are format characters that real names need: Persian and Indic
# words are spelled with them, and emoji sequences join with U+200D. They cannot reorder text.
_NAME_JOINERS = frozenset("\u200c\u200d")


def _control_char(text: str) -> str | None:
    """The first control (Cc) or format (Cf) character of `text` other than a joiner, or None."""
    # isprintable() is False for every Cc and Cf character (and for some harmless ones such as a
    # no-break space), so the common case costs one C-level scan.
    if text.isprintable():
        return None
    for ch in text:
        if unicodedata.category(ch) in ("Cc", "Cf") and ch not in _NAME_JOINERS:
            return ch
    return None


def _describe_char(ch: str) -> str:
    name = unicodedata.name(ch, "") or {"\x00": "NUL", "\n": "LINE FEED", "\t": "TAB"}.get(ch, "")
    return f"U+{ord(ch):04X}" + (f" ({name})" if name else "")


def _check_text(text: str, what: str) -> None:
    """Refuse text that can never name a safe path: NUL, control or bidi characters, bad UTF-8, over-long."""
    if "\x00" in text:
        raise InvalidPathError(f"{what} contains a NUL byte")
    ch = _control_char(text)
    if ch is not None:
        # Bidi overrides (U+202E) and other invisible format characters make a name display as
        # something it is not (`evil\u202egnp.md` shows as `evilmd.png`); control characters
        # break logs and terminals. Neither belongs in a file name.
        raise InvalidPathError(
            f"{what} contains the control or format character {_describe_char(ch)} at position "
            f"{text.index(ch)}; file names may not hold control, bidi or other invisible characters"
        )
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidPathError(
            f"{what} is not valid UTF-8 (it holds bytes that no character encodes)"
        ) from None
    if len(encoded) > MAX_PATH_BYTES:
        raise InvalidPathError(f"{what} is {len(encoded)} bytes long; the limit is {MAX_PATH_BYTES}")
    for part in encoded.split(b"/"):
        if len(part) > MAX_NAME_BYTES:
            raise InvalidPathError(
                f"{what} has a {len(part)}-byte component; the limit is {MAX_NAME_BYTES} bytes"
            )


def _normalize(text: str) -> str:
    norm = os.path.normpath(text)
    # POSIX lets '//x' mean something else than '/x'; we only ever mean the latter.
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    return norm


def _split(abs_path: str) -> tuple[str, ...]:
    return tuple(p for p in abs_path.split("/") if p)


def _join(base: str, *parts: str) -> str:
    return os.path.join(base, *parts) if parts else base


@dataclass(frozen=True)
class _Root:
    path: str  # absolute as configured
    real: str  # its real path when the sandbox was made: what gets opened
    forms: tuple[tuple[str, ...], ...]  # component tuples a path may start with to be inside


class PathMissing(FileNotFoundError):
    """ENOENT during a walk; remembers the real prefix that exists and the components that do not."""

    def __init__(self, existing: str, missing: tuple[str, ...]) -> None:
        super().__init__(errno.ENOENT, "no such file or directory", _join(existing, *missing[:1]))
        self.existing = existing
        self.missing = missing


@dataclass
class HeldWalk:
    """Where a walk ended: an open parent directory, the final name in it and its lstat."""

    root: _Root
    dir_fd: int
    dir_path: str
    name: str | None  # None: the target is the directory `dir_fd` itself (an allowed root)
    st: os.stat_result | None  # lstat of `name`; None when it does not exist
    hops: int = 0  # symlinks followed on the way

    @property
    def path(self) -> str:
        """The real absolute path of the target."""
        return self.dir_path if self.name is None else os.path.join(self.dir_path, self.name)

    def close(self) -> None:
        """Release the directory descriptor."""
        if self.dir_fd >= 0:
            os.close(self.dir_fd)
            self.dir_fd = -1


@dataclass(frozen=True)
class PathInfo:
    """What an existing path is: its real path, kind, size and modification time (epoch seconds)."""

    path: Path
    kind: Literal["file", "directory"]
    size: int
    mtime: float
    symlink: bool = False


class PathGuard:
    """Allowed roots plus the project root: resolves paths inside them, or refuses."""

    def __init__(self, roots: Iterable[Path | str], project_root: Path | str | None = None) -> None:
        self.project_root = os.path.abspath(os.fspath(project_root) if project_root else os.getcwd())
        built: list[_Root] = []
        for r in roots:
            text = os.fspath(r)
            _check_text(text, f"allowed directory {text!r}")
            absolute = _normalize(os.path.join(self.project_root, text))
            real = os.path.realpath(absolute)
            forms = tuple(dict.fromkeys((_split(absolute), _split(real))))
            if all(b.path != absolute for b in built):
                built.append(_Root(absolute, real, forms))
        if not built:
            raise InvalidPathError("no allowed directories are configured")
        self._roots = tuple(built)

    @property
    def roots(self) -> list[Path]:
        """The allowed roots, absolute, as configured."""
        return [Path(r.path) for r in self._roots]

    def display(self, path: str | Path) -> str:
        """A path for messages: relative to the project root when under it."""
        text = os.fspath(path)
        rel = os.path.relpath(text, self.project_root) if os.path.isabs(text) else text
        return escape_name(text if rel.startswith("..") else rel)

    def _roots_text(self) -> str:
        return ", ".join(self.display(r.path) for r in self._roots)

    # -- locating and walking ------------------------------------------------------------------

    def absolute(self, path: str | Path) -> str:
        """The path checked as text, made absolute against the project root and normalised."""
        text = os.fspath(path)
        if not text:
            raise InvalidPathError("the path is empty")
        _check_text(text, f"path {_quoted(text)}")
        norm = _normalize(text if os.path.isabs(text) else os.path.join(self.project_root, text))
        _check_text(norm, f"path {_quoted(text)} (resolved to {_quoted(norm)})")
        return norm

    def _locate(self, abs_path: str) -> tuple[_Root, tuple[str, ...]] | None:
        parts = _split(abs_path)
        best: tuple[_Root, int] | None = None
        for root in self._roots:
            for form in root.forms:
                # Whole components, never a string prefix: CVE-2025-53110 was exactly that bug.
                if parts[: len(form)] == form and (best is None or len(form) > best[1]):
                    best = (root, len(form))
        if best is None:
            return None
        return best[0], parts[best[1] :]

    def contains(self, path: str | Path) -> bool:
        """Whether an absolute path lies lexically inside an allowed root (no file-system access)."""
        return self._locate(_normalize(os.path.abspath(os.fspath(path)))) is not None

    def _open_root(self, root: _Root, create: bool) -> int:
        try:
            # O_NOFOLLOW on the root's own last component: the root is trusted as configured, but a
            # root later swapped for a symlink must not be followed.
            return os.open(root.real, _DIR_FLAGS)
        except FileNotFoundError:
            if not create:
                raise PathMissing(root.real, ()) from None
            os.makedirs(root.real, exist_ok=True)
            return os.open(root.real, _DIR_FLAGS)
        except NotADirectoryError:
            raise PathChangedError(
                f"allowed directory {self.display(root.path)} is no longer a directory"
            ) from None

    def _walk(
        self, path: str | Path, *, follow_final: bool, create_dirs: bool = False, follow_links: bool = True
    ) -> HeldWalk:
        """Walk to the parent of the target from its root's descriptor; see the module docstring."""
        original = os.fspath(path)
        walker = _Walker(self, original, follow_final, create_dirs, follow_links, self.absolute(original))
        return walker.run()

    @contextmanager
    def _walked(
        self, path: str | Path, *, follow_final: bool, create_dirs: bool = False
    ) -> Iterator[HeldWalk]:
        w = self._walk(path, follow_final=follow_final, create_dirs=create_dirs)
        try:
            yield w
        finally:
            w.close()

    def open_parent(self, path: str | Path, *, create_dirs: bool = False) -> HeldWalk:
        """Walk to `path` following no symlink at all, holding its parent open (the caller closes it).

        For callers that hold real paths (the commit, recovery): a symlink anywhere on the way means
        the tree changed since the path was computed, so it raises PathChangedError instead of
        following it. A missing folder raises FileNotFoundError (its `missing` lists the components
        from the first missing one on) unless `create_dirs` makes it.
        """
        return self._walk(path, follow_final=False, create_dirs=create_dirs, follow_links=False)

    def verify(self, w: HeldWalk) -> None:
        """The walked parent must still be reachable from its root without symlinks, as the same inode."""
        held = os.fstat(w.dir_fd)
        rel = _split(w.dir_path)[len(_split(w.root.real)) :]
        try:
            fd = os.open(w.root.real, _DIR_FLAGS)
        except OSError:
            raise PathChangedError(f"allowed directory {self.display(w.root.path)} changed") from None
        try:
            for part in rel:
                try:
                    nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except OSError:
                    raise PathChangedError(
                        f"{self.display(w.dir_path)} was moved or replaced (by a symlink?) during the "
                        "operation; nothing was changed"
                    ) from None
                os.close(fd)
                fd = nfd
            now = os.fstat(fd)
        finally:
            os.close(fd)
        if (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino):
            raise PathChangedError(
                f"{self.display(w.dir_path)} was replaced during the operation; nothing was changed"
            )

    def _not_found(self, exc: PathMissing) -> FileNotFoundError:
        return FileNotFoundError(errno.ENOENT, "no such file or directory", self.display(exc.filename))

    # -- queries -------------------------------------------------------------------------------

    def resolve(self, path: str | Path, *, must_exist: bool = False, follow_final: bool = True) -> Path:
        """The real path inside an allowed root that `path` names; raises if it leaves them."""
        try:
            with self._walked(path, follow_final=follow_final) as w:
                if w.name is not None and w.st is None and must_exist:
                    raise PathMissing(w.dir_path, (w.name,))
                return Path(w.path)
        except PathMissing as exc:
            if must_exist:
                raise self._not_found(exc) from None
            return Path(exc.existing, *exc.missing)

    def info(self, path: str | Path) -> PathInfo | None:
        """What `path` is (following inside symlinks), or None when it does not exist."""
        try:
            with self._walked(path, follow_final=True) as w:
                st = w.st
                if st is None:
                    return None
                kind = _plain_kind(st.st_mode)
                if kind is None:
                    raise InvalidPathError(
                        f"{self.display(w.path)} is a {_kind(st.st_mode)}, not a file or directory"
                    )
                return PathInfo(Path(w.path), kind, st.st_size, st.st_mtime, w.hops > 0)
        except PathMissing:
            return None


@dataclass
class _Walker:
    """One walk's state: the path still to resolve, the symlinks followed so far, and how to treat them."""

    guard: PathGuard
    original: str
    follow_final: bool
    create_dirs: bool
    follow_links: bool
    pending: str  # the absolute path still to walk: the original, or where the last symlink points
    via: str | None = None  # the last symlink followed, named when its target lies outside
    hops: int = 0

    def run(self) -> HeldWalk:
        """Walk from the root `pending` lies in; each symlink met sends the walk round again."""
        while True:
            located = self.guard._locate(self.pending)
            if located is None:
                raise self._outside()
            root, parts = located
            walk = self._from_root(root, parts)
            if walk is not None:
                return walk

    def _outside(self) -> PathOutsideError:
        original, pending, roots = (
            escape_name(self.original),
            escape_name(self.pending),
            self.guard._roots_text(),
        )
        if self.via is None:
            return PathOutsideError(
                f"{original!r} resolves to {pending!r}, outside the allowed directories ({roots})"
            )
        return PathOutsideError(
            f"{original!r} goes through the symlink {self.guard.display(self.via)!r}, which "
            f"points to {pending!r}, outside the allowed directories ({roots})"
        )

    def _from_root(self, root: _Root, parts: tuple[str, ...]) -> HeldWalk | None:
        """Walk `parts` down from `root` one component at a time; None when a symlink moved `pending`."""
        fd = self.guard._open_root(root, self.create_dirs)
        cur = root.real
        try:
            if not parts:
                return HeldWalk(root, fd, cur, None, os.fstat(fd), self.hops)
            i = 0
            while True:
                part = parts[i]
                last = i == len(parts) - 1
                st = self._lstat(fd, cur, parts, i)
                if st is None:
                    return HeldWalk(root, fd, cur, part, None, self.hops)
                if stat.S_ISLNK(st.st_mode) and (self.follow_final or not last):
                    self._follow(fd, cur, part, parts[i + 1 :])
                    os.close(fd)
                    fd = -1
                    return None
                if last:
                    return HeldWalk(root, fd, cur, part, st, self.hops)
                if not stat.S_ISDIR(st.st_mode):
                    raise NotADirectoryError(
                        errno.ENOTDIR, "not a directory", self.guard.display(os.path.join(cur, part))
                    )
                nfd = self._open_dir(fd, cur, part)
                os.close(fd)
                fd = nfd
                cur = os.path.join(cur, part)
                i += 1
        except BaseException:
            if fd >= 0:
                os.close(fd)
            raise

    def _lstat(self, fd: int, cur: str, parts: tuple[str, ...], i: int) -> os.stat_result | None:
        """The lstat of `parts[i]` in `fd`: None for a missing final component; a missing folder is made
        when the walk creates folders, else the walk ends with `PathMissing`."""
        while True:
            try:
                return os.stat(parts[i], dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                if i == len(parts) - 1:
                    return None
                if not self.create_dirs:
                    raise PathMissing(cur, parts[i:]) from None
                try:
                    os.mkdir(parts[i], 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
                else:
                    os.fsync(fd)  # the new entry survives a crash before anything is put in it
                # stat again: whatever is there now goes through the checks

    def _follow(self, fd: int, cur: str, part: str, rest: tuple[str, ...]) -> None:
        """Read the symlink `part` in `fd`; its target joined with `rest` becomes the path to walk."""
        if not self.follow_links:
            raise PathChangedError(
                f"{self.guard.display(os.path.join(cur, part))} is a symlink where a folder was "
                "expected (swapped in meanwhile?); this operation follows no symlink"
            )
        self.hops += 1
        if self.hops > MAX_SYMLINK_HOPS:
            raise InvalidPathError(
                f"{escape_name(self.original)!r}: more than {MAX_SYMLINK_HOPS} symlinks (a symlink loop?)"
            )
        via = self.via = os.path.join(cur, part)
        try:
            target = os.readlink(part, dir_fd=fd)
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.ENOENT):
                raise
            raise PathChangedError(f"{self.guard.display(via)} changed while being read") from None
        _check_text(target, f"the target of symlink {self.guard.display(via)!r}")
        base = target if os.path.isabs(target) else os.path.join(cur, target)
        self.pending = _normalize(os.path.join(base, *rest))
        _check_text(self.pending, f"path {escape_name(self.original)!r} through its symlinks")

    def _open_dir(self, fd: int, cur: str, part: str) -> int:
        """The folder `part` in `fd`, opened without following a symlink swapped in since its lstat."""
        try:
            return os.open(part, _DIR_FLAGS, dir_fd=fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                raise PathChangedError(
                    f"{self.guard.display(os.path.join(cur, part))} changed while being opened"
                ) from None
            raise


def resolve_inside(
    path: str | Path,
    roots: Iterable[Path | str],
    project_root: Path | str | None = None,
    *,
    must_exist: bool = False,
) -> Path:
    """The real path `path` names inside `roots`; PathOutsideError/InvalidPathError otherwise."""
    return PathGuard(roots, project_root).resolve(path, must_exist=must_exist)
