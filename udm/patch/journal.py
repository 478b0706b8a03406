"""The transaction journal: named roots and relative targets, the journal's format, and reading it back.

A transaction names its roots (`{"udm": <manual>, "patches": <state>/patches}`); a journal stores each
path as `{"root", "path"}` relative to one of them. Read back, a journal is untrusted input (a tool
may have planted it): it is read with a size cap and validated field by field, and anything that is
not what `udm.patch.transaction` writes raises `Refused` naming the field. Journals from before this format
(absolute paths, no `version`) are accepted only where every path lies inside a root.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from udm.errors import InvalidPathError, PathOutsideError, TransactionError
from udm.guard import MAX_NAME_BYTES, HeldWalk, PathGuard, PathMissing, escape_name

__all__ = [
    "BACKUP",
    "JOURNAL",
    "JOURNAL_TMP",
    "MARKER",
    "MAX_JOURNAL_BYTES",
    "READ_FLAGS",
    "TXID",
    "VERSION",
    "Entry",
    "Journal",
    "Refused",
    "Target",
    "TxRoots",
    "check_paths",
    "load_journal",
    "sha",
    "temp_name",
]

# A journal of 100,000 files is about 30 MB; anything larger was not written by udm.patch.transaction.
MAX_JOURNAL_BYTES = 64 << 20
VERSION = 2
JOURNAL = "journal.json"
JOURNAL_TMP = JOURNAL + ".tmp"
MARKER = "COMMITTED"
TXID = re.compile(r"[0-9A-Za-z][0-9A-Za-z-]{0,63}")
BACKUP = re.compile(r"backup-[0-9]{1,9}")
_SHA = re.compile(r"sha256:[0-9a-f]{64}")
# O_NONBLOCK: a FIFO planted where a file was expected cannot hang the read.
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


def sha(data: bytes | None) -> str | None:
    """`sha256:<hex>` of the bytes, None for no file."""
    return None if data is None else "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Target:
    """A file or folder of a transaction: its root's name and its real path relative to that root."""

    root: str
    rel: str  # '/'-separated, no empty, '.' or '..' component

    @property
    def name(self) -> str:
        """The final component."""
        return self.rel.rsplit("/", 1)[-1]

    @property
    def parent(self) -> str:
        """The folder's path relative to the root ('' for the root itself)."""
        return self.rel.rsplit("/", 1)[0] if "/" in self.rel else ""

    def as_json(self) -> dict[str, str]:
        """The journal's form."""
        return {"root": self.root, "path": self.rel}


class Refused(TransactionError):
    """A journal that is not what this module writes; the reason names the field."""


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


class TxRoots:
    """The transaction's named roots, one path guard each; every walk follows no symlink."""

    def __init__(self, roots: Mapping[str, Path], state: Path) -> None:
        if not roots:
            raise TransactionError("a transaction needs at least one root")
        self.guards = {name: PathGuard([path], project_root=path) for name, path in roots.items()}
        self.reals = {name: os.path.realpath(path) for name, path in roots.items()}
        self.state_real = os.path.realpath(state)
        self.state_abs = os.path.abspath(state)

    def _real(self, root: str) -> str:
        return self.reals[root]

    def display(self, t: Target) -> str:
        """The target's real absolute path, printable."""
        return escape_name(os.path.join(self._real(t.root), t.rel))

    def target(self, root: Any, rel: Any) -> Target:
        """A journal's (root, path) checked as text; Refused naming what is wrong."""
        if not isinstance(root, str) or root not in self.guards:
            raise Refused(f"names an unknown root {escape_name(str(root))[:40]!r}")
        if not isinstance(rel, str) or not rel:
            raise Refused("has a path that is not a non-empty string")
        if rel.startswith("/"):
            raise Refused(f"has an absolute path {escape_name(rel)!r}; journal paths are relative")
        if any(part in ("", ".", "..") for part in rel.split("/")):
            raise Refused(f"has a path with an empty, '.' or '..' component: {escape_name(rel)!r}")
        try:
            self.guards[root].absolute(rel)  # NUL, control and bidi characters, undecodable, too long
        except InvalidPathError as exc:
            raise Refused(f"has an invalid path: {exc}") from None
        t = Target(root, rel)
        self._check_state(t)
        return t

    def _check_state(self, t: Target) -> None:
        # Only a root that itself lies in the state folder (the patch store) may write there: the
        # manual's root must not reach the journal, the locks or the index even when state/ sits in it.
        real_root = self._real(t.root)
        real = os.path.join(real_root, t.rel)
        for state in {self.state_real, self.state_abs}:
            if _inside(real, state) and not _inside(real_root, state):
                raise Refused(f"lies in the engine's state folder ({escape_name(real)})")

    def locate(self, path: Any) -> Target:
        """The root and relative path of an absolute path inside one of the roots; Refused otherwise."""
        if not isinstance(path, str | Path):
            raise Refused("has a path that is not a string")
        text = os.fspath(path)
        if not os.path.isabs(text):
            raise Refused(f"has a path {escape_name(text)!r} that is neither relative to a root nor absolute")
        if ".." in text.split("/"):
            raise Refused(f"has a path with a '..' component: {escape_name(text)!r}")
        best: tuple[str, tuple[str, ...], int] | None = None
        for name, guard in self.guards.items():
            try:
                norm = guard.absolute(text)
            except InvalidPathError as exc:
                raise Refused(f"has an invalid path: {exc}") from None
            found = guard._locate(norm)
            if found is None or not found[1]:
                continue
            depth = len(norm.split("/")) - len(found[1])
            if best is None or depth > best[2]:
                best = (name, found[1], depth)
        if best is None:
            roots = ", ".join(str(g.roots[0]) for g in self.guards.values())
            raise Refused(f"lies outside the transaction's roots ({roots})")
        return self.target(best[0], "/".join(best[1]))

    def is_root(self, path: Any) -> bool:
        """Whether `path` names one of the roots itself (as configured or as its real path)."""
        if not isinstance(path, str) or not os.path.isabs(path) or "\x00" in path:
            return False
        norm = os.path.normpath(path)
        return any(norm in (os.path.normpath(str(g.roots[0])), self.reals[n]) for n, g in self.guards.items())

    def of_change(self, path: Path) -> Target:
        """The target of a Change; PathOutsideError or InvalidPathError when it cannot be one."""
        try:
            return self.locate(path)
        except Refused as exc:
            raise PathOutsideError(f"cannot commit {escape_name(os.fspath(path))}: it {exc}") from None

    def open(self, t: Target) -> HeldWalk:
        """Walk to the target's parent (no symlink followed), held open; PathMissing when a folder is missing."""
        return self.guards[t.root].open_parent(t.rel)

    @contextlib.contextmanager
    def opened(self, t: Target) -> Iterator[HeldWalk | None]:
        """`open` as a context; None when a folder on the way is missing."""
        try:
            w = self.open(t)
        except PathMissing:
            yield None
            return
        try:
            yield w
        finally:
            w.close()

    def verify(self, t: Target, w: HeldWalk) -> None:
        """The held parent must still be the folder its path names (not moved away meanwhile)."""
        self.guards[t.root].verify(w)

    def missing_dirs(self, t: Target) -> list[Target]:
        """The folders to create, outermost first, for the target's parent to exist."""
        try:
            self.open(t).close()
        except PathMissing as exc:
            parts = t.rel.split("/")
            first = len(parts) - len(exc.missing)
            return [Target(t.root, "/".join(parts[: i + 1])) for i in range(max(first, 0), len(parts) - 1)]
        return []


@dataclass(frozen=True)
class Entry:
    """One file of a journal: target, hashes before/after, permission bits, backup and temp names."""

    target: Target
    before_sha: str | None
    after_sha: str | None
    mode: int | None
    backup: str | None
    temp: str | None  # a plain name in the target's folder

    def as_json(self) -> dict[str, Any]:
        """The journal's form."""
        return {
            **self.target.as_json(),
            "before_sha": self.before_sha,
            "after_sha": self.after_sha,
            "mode": self.mode,
            "backup": self.backup,
            "temp": self.temp,
        }


@dataclass(frozen=True)
class Journal:
    """A journal as validated: its txid, files and the folders the commit creates."""

    txid: str
    files: list[Entry]
    created_dirs: list[Target]


def temp_name(txid: str, k: int) -> str:
    # Not derived from the target's name: `.<name>.udm-<txid>.tmp` overflows NAME_MAX for long names.
    return f".udm-{txid}-{k}.tmp"


def _field(entry: dict[str, Any], key: str, where: str) -> Any:
    if key not in entry:
        raise Refused(f"{where} lacks {key!r}")
    return entry[key]


def _sha_field(value: Any, where: str) -> str | None:
    if value is None or (isinstance(value, str) and _SHA.fullmatch(value)):
        return value
    raise Refused(f"{where} is not null or 'sha256:<64 hex digits>'")


def _parse_entry(space: TxRoots, txid: str, k: int, raw: Any, legacy: bool) -> Entry:
    where = f"files[{k}]"
    if not isinstance(raw, dict):
        raise Refused(f"{where} is not an object")
    path = _field(raw, "path", where)
    try:
        target = space.locate(path) if legacy else space.target(_field(raw, "root", where), path)
    except Refused as exc:
        raise Refused(f"{where} {exc}") from None
    before = _sha_field(_field(raw, "before_sha", where), f"{where}.before_sha")
    after = _sha_field(_field(raw, "after_sha", where), f"{where}.after_sha")
    mode = raw.get("mode")
    if mode is not None and (type(mode) is not int or not 0 <= mode <= 0o7777):
        raise Refused(f"{where}.mode is not null or permission bits (0 to 0o7777)")
    backup = _field(raw, "backup", where)
    if backup is not None and not (isinstance(backup, str) and BACKUP.fullmatch(backup)):
        raise Refused(f"{where}.backup is not a plain 'backup-<n>' name in the journal folder")
    if before is not None and backup is None:
        raise Refused(f"{where} replaces an existing file but names no backup")
    temp = _field(raw, "temp", where)
    if temp is not None:
        temp = _legacy_temp(temp, path, txid, where) if legacy else temp
        if not legacy and temp != temp_name(txid, k):
            raise Refused(f"{where}.temp is not {temp_name(txid, k)!r}")
    if after is not None and temp is None and not legacy:
        raise Refused(f"{where} writes a file but names no temp")
    return Entry(target, before, after, mode, backup, temp)


def _legacy_temp(temp: Any, path: str, txid: str, where: str) -> str | None:
    """An old journal's absolute temp path as a name beside its target, or None when it cannot exist."""
    if not isinstance(temp, str) or os.path.dirname(temp) != os.path.dirname(path):
        raise Refused(f"{where}.temp is not a temp file beside its target")
    name = os.path.basename(temp)
    if not (name.startswith(".") and name.endswith(".tmp") and f"udm-{txid}" in name):
        raise Refused(f"{where}.temp {escape_name(name)!r} is not a temp name of this transaction")
    # Older writers named temps after the target; past NAME_MAX such a temp was never created.
    return None if len(name.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES else name


def _parse_journal(space: TxRoots, name: str, raw: bytes) -> Journal:
    """A journal's bytes checked field by field; Refused naming the first problem."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise Refused(f"journal.json is not UTF-8 (byte {exc.start})") from None
    except ValueError as exc:
        raise Refused(f"journal.json is not valid JSON: {exc}") from None
    except RecursionError:
        raise Refused("journal.json is nested too deeply") from None
    if not isinstance(data, dict):
        raise Refused("journal.json is not an object")
    version = data.get("version")
    if version not in (None, VERSION):
        raise Refused(f"journal.json has an unknown version {escape_name(str(version))[:20]!r}")
    legacy = version is None
    if data.get("txid") != name:
        raise Refused("journal.json's txid is not the name of its folder")
    files = data.get("files")
    if not isinstance(files, list) or not files:
        raise Refused("journal.json's 'files' is not a non-empty list")
    entries = [_parse_entry(space, name, k, e, legacy) for k, e in enumerate(files)]
    if len({e.target for e in entries}) != len(entries):
        raise Refused("journal.json names the same file twice")
    dirs_raw = data.get("created_dirs", [])
    if not isinstance(dirs_raw, list):
        raise Refused("journal.json's 'created_dirs' is not a list")
    dirs = []
    for k, d in enumerate(dirs_raw):
        try:
            if legacy and space.is_root(d):
                continue  # an old writer's first commit made the patch store itself; it stays
            if legacy:
                dirs.append(space.locate(d))
            elif isinstance(d, dict):
                dirs.append(space.target(d.get("root"), d.get("path")))
            else:
                raise Refused("is not an object")
        except Refused as exc:
            raise Refused(f"created_dirs[{k}] {exc}") from None
    return Journal(name, entries, dirs)


def _journal_listing(jfd: int) -> set[str]:
    """The names in a journal folder: only what the commit writes, each a regular file; Refused otherwise."""
    names = set(os.listdir(jfd))
    for n in names:
        if n not in (JOURNAL, JOURNAL_TMP, MARKER) and not BACKUP.fullmatch(n):
            raise Refused(f"holds {escape_name(n)!r}, which is no journal file")
        if not stat.S_ISREG(os.stat(n, dir_fd=jfd, follow_symlinks=False).st_mode):
            raise Refused(f"{n} is not a regular file")
    return names


def _read_journal_file(jfd: int, name: str, limit: int) -> bytes:
    fd = os.open(name, READ_FLAGS, dir_fd=jfd)
    try:
        data = os.read(fd, limit + 1)
        while len(data) <= limit and (chunk := os.read(fd, limit + 1 - len(data))):
            data += chunk
    finally:
        os.close(fd)
    if len(data) > limit:
        raise Refused(f"{name} is larger than {limit} bytes")
    return data


def load_journal(space: TxRoots, jfd: int, txid: str) -> tuple[Journal | None, bool]:
    """The journal of a folder (None: the commit never got past its backups) and whether it committed."""
    names = _journal_listing(jfd)
    if JOURNAL not in names:
        return None, False
    journal = _parse_journal(space, txid, _read_journal_file(jfd, JOURNAL, MAX_JOURNAL_BYTES))
    for e in journal.files:
        if e.backup is not None and e.before_sha is not None and e.backup not in names:
            raise Refused(f"the backup {e.backup} of {e.target.rel} is missing")
    return journal, MARKER in names


def check_paths(space: TxRoots, journal: Journal) -> None:
    """Every parent must be reachable without a symlink before anything is done (PathChangedError)."""
    for t in [e.target for e in journal.files] + journal.created_dirs:
        with space.opened(t):
            pass
