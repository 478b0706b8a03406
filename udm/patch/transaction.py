"""All-or-nothing commits of several files: write lock, journal, temp+fsync+rename, commit marker, recovery.

Protocol of one commit (every step durable before the next):

1. take the UDM root's write lock (`<state>/locks/udm-write.lock`, flock: the kernel frees it when the
   holder dies, so a crash never leaves a held lock), waiting at most `lock_timeout_s`;
2. recover any interrupted transaction (below);
3. `<state>/journal/<txid>/`: a backup of every file that will change, then `journal.json` listing
   each file (its root's name and its path relative to that root, hashes before/after, permission
   bits, backup and temp names) and the folders the commit will create, written via temp + rename; a
   file whose bytes are not the ones the change was computed from (`Change.before_sha`) stops the
   commit with ConflictError before anything is written;
4. the missing folders, then every new content into a temp file beside its target
   (`.udm-<txid>-<k>.tmp`: short, so a long file name never makes it too long), fsynced and given the
   target's permission bits;
5. rename each temp over its target (or unlink a deleted file), fsync the directories; each file is
   compared with `before_sha` again right before its rename, and a difference rolls back (ConflictError);
6. write the `COMMITTED` marker — the commit point;
7. remove the journal directory.

Every file-system step goes through directory descriptors: a target's parent is opened from its
root one component at a time with `O_NOFOLLOW | O_DIRECTORY` (the path guard's walk, following no
symlink at all, since the paths are real paths computed at planning time), and the temp, rename,
unlink, backup restore and folder creation are `dir_fd=`-relative calls on that descriptor. A folder
swapped for a symlink during a commit is therefore never followed: the walk refuses it
(PathChangedError, the commit rolls back), and a descriptor opened before the swap still names the
folder inside the root. The journal folder is handled the same way from `<state>/journal`.

A transaction names its roots (`{"udm": <manual>, "patches": <state>/patches}`); journal paths are
stored relative to one of them and never absolute. Recovery treats a journal as untrusted input: it
is read with a size cap and validated field by field by `udm.patch.journal` (types, hashes, names, a path
that is absolute, holds `..`, a NUL or control character, names an unknown root, or lies in the
engine's state folder; a backup or temp that is not the plain name this module writes). A journal
that fails is refused:
moved to `<state>/journal-refused/` untouched and reported, never acted on. A journal from before
this format (absolute paths) is accepted only when every path lies inside a root. A symlink met on
the way at recovery time stops recovery with TransactionError, the journal kept for the next try.

Recovery: a journal without `COMMITTED` is rolled back (backups restored where a file holds the new
content, created files and then empty created folders removed, temps deleted; a file that holds
neither the old nor the new content was edited by someone else and is left alone); one with
`COMMITTED` is rolled forward (any rename left undone is finished) and cleaned up. Recovery is
idempotent, so a crash during recovery is recovered by the next writer. `UDM_FAULT_INJECT=<step>`
makes the process `os._exit(137)` right after that named step (the crash tests use it);
`UDM_FAULT_SLOW_S` sleeps after every step so a test can kill a commit at random moments inside it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import stat
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from udm.config import ensure_folder
from udm.errors import (
    ConflictError,
    InvalidPathError,
    LockTimeoutError,
    PathChangedError,
    PathOutsideError,
    TransactionError,
    UdmError,
)
from udm.guard import escape_name
from udm.guard.paths import _NotFound, _Walk
from udm.patch.journal import (
    JOURNAL,
    JOURNAL_TMP,
    MARKER,
    READ_FLAGS,
    TXID,
    VERSION,
    Entry,
    Journal,
    Refused,
    Target,
    TxRoots,
    check_paths,
    load_journal,
    sha,
    temp_name,
)

__all__ = [
    "FAULT_ENV",
    "FAULT_STEPS",
    "Change",
    "commit_files",
    "fault_point",
    "journal_dir",
    "lock_path",
    "recover",
    "refused_dir",
    "write_lock",
]

FAULT_ENV = "UDM_FAULT_INJECT"
SLOW_ENV = "UDM_FAULT_SLOW_S"
# The named steps, in protocol order; `renamed_first` falls between the first and second rename.
FAULT_STEPS: tuple[str, ...] = (
    "locked",
    "backups_written",
    "journal_written",
    "temps_written",
    "renamed_first",
    "renamed",
    "committed",
    "cleaned",
)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def fault_point(step: str) -> None:
    """Crash here (`os._exit(137)`) when UDM_FAULT_INJECT names this step; sleep when asked to."""
    slow = os.environ.get(SLOW_ENV)
    if slow:
        time.sleep(float(slow))
    if os.environ.get(FAULT_ENV) == step:
        os._exit(137)


def lock_path(state: Path) -> Path:
    """The write lock of the UDM root whose state folder this is."""
    return state / "locks" / "udm-write.lock"


def journal_dir(state: Path) -> Path:
    """Where transactions keep their journals while they run."""
    return state / "journal"


def refused_dir(state: Path) -> Path:
    """Where recovery moves a journal it refuses to act on (kept for a person to inspect)."""
    return state / "journal-refused"


@contextlib.contextmanager
def write_lock(state: Path, timeout_s: float) -> Iterator[None]:
    """Hold the one-writer lock of a UDM root, waiting at most `timeout_s`; LockTimeoutError otherwise."""
    from filelock import FileLock, Timeout

    path = lock_path(state)
    ensure_folder(path.parent)
    lock = FileLock(str(path), timeout=timeout_s)
    try:
        lock.acquire()
    except Timeout as exc:
        raise LockTimeoutError(
            f"another writer holds the UDM write lock ({path}); gave up after {timeout_s:g} s — "
            "try again, or raise UDM_LOCK_TIMEOUT_S"
        ) from exc
    try:
        fault_point("locked")
        yield
    finally:
        lock.release()


@dataclass(frozen=True)
class Change:
    """One file of a transaction: its absolute path (inside one of the roots) and new content (None deletes it)."""

    path: Path
    after: bytes | None
    # `sha256:<hex>` of the bytes the new content was computed from (None: the file did not exist);
    # checked only when `check_before` is set.
    before_sha: str | None = None
    check_before: bool = False


# -- descriptor-relative file operations ---------------------------------------------------------


def _read_at(dir_fd: int, name: str, where: str) -> tuple[bytes | None, int | None]:
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


def _write_new_at(dir_fd: int, name: str, data: bytes, mode: int | None = None) -> None:
    """Create `name` (never an existing one, never through a link), write, fsync."""
    fd = os.open(name, _NEW_FLAGS, 0o666, dir_fd=dir_fd)
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


def _rename(dir_fd: int, src: str, dst: str, where: str) -> None:
    """Rename `src` over `dst` inside one held folder (`where` is `dst`'s real path, for messages and tests)."""
    os.rename(src, dst, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


# Errors that mean "there is no such file" (a name too long or under a file cannot exist either).
_ABSENT = (errno.ENOENT, errno.ENAMETOOLONG, errno.ENOTDIR)


def _unlink_quietly(dir_fd: int, name: str, where: str, notes: list[str]) -> None:
    """Remove a temp file of ours; one that was never created (or cannot be) is no reason to stop."""
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno not in _ABSENT:
            notes.append(f"could not remove {where}: {exc.strerror or exc}")


def _check_before(change: Change, current: bytes | None, *, stage: str) -> None:
    if change.check_before and sha(current) != change.before_sha:
        raise ConflictError(
            f"{change.path} was changed by someone else while this commit ran ({stage}); "
            "their edit is kept and this commit was not applied — plan it again"
        )


class _Dirs:
    """Parent folders held open during the rename phase (a bounded few), fsynced once when let go."""

    LIMIT = 64

    def __init__(self, space: TxRoots) -> None:
        self.space = space
        self.held: dict[tuple[str, str], _Walk] = {}

    def get(self, t: Target) -> _Walk | None:
        """The target's parent, held; None when it is missing."""
        key = (t.root, t.parent)
        w = self.held.pop(key, None)
        if w is None:
            if len(self.held) >= self.LIMIT:
                self._release(self.held.pop(next(iter(self.held))))
            try:
                w = self.space.open(t)
            except _NotFound:
                return None
        self.held[key] = w  # most recently used last
        return w

    @staticmethod
    def _release(w: _Walk) -> None:
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


# -- the journal folder ---------------------------------------------------------------------------


def _open_journal_root(state: Path, *, create: bool) -> int | None:
    """A descriptor of `<state>/journal` (never through a symlink); None when it does not exist."""
    jroot = journal_dir(state)
    if create:
        ensure_folder(state)
        with contextlib.suppress(FileExistsError):
            os.mkdir(jroot, 0o700)
    try:
        return os.open(jroot, _DIR_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            return -1  # not a real folder: recovery moves it aside
        raise


def _clean(jroot_fd: int, name: str) -> None:
    """Remove a journal folder: its files (never followed), then the folder."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=jroot_fd)
    except FileNotFoundError:
        return
    try:
        for child in os.listdir(fd):
            os.unlink(child, dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=jroot_fd)
    os.fsync(jroot_fd)


def _joined(notes: list[str]) -> str:
    return "" if not notes else " (" + "; ".join(notes) + ")"


# -- commit --------------------------------------------------------------------------------------


def commit_files(state: Path, changes: list[Change], *, roots: Mapping[str, Path], label: str = "") -> str:
    """Commit every change or none (the caller holds the write lock and has recovered); returns the txid."""
    if not changes:
        raise TransactionError("nothing to commit")
    space = TxRoots(roots, state)
    targets = [space.of_change(c.path) for c in changes]
    if len(set(targets)) != len(targets):
        raise TransactionError("a transaction names the same file twice")
    for name in {t.root for t in targets}:
        ensure_folder(Path(roots[name]))  # the patch store's folder on the first commit
    txid = datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(4)
    jroot_fd = _open_journal_root(state, create=True)
    if jroot_fd is None or jroot_fd < 0:
        raise TransactionError(f"{journal_dir(state)} is not a folder; run `udm recover`")
    try:
        os.mkdir(txid, 0o700, dir_fd=jroot_fd)
        os.fsync(jroot_fd)
        jfd = os.open(txid, _DIR_FLAGS, dir_fd=jroot_fd)
        try:
            return _commit(space, jroot_fd, jfd, txid, changes, targets, label)
        finally:
            os.close(jfd)
    finally:
        os.close(jroot_fd)


def _plan(space: TxRoots, jfd: int, txid: str, changes: list[Change], targets: list[Target]) -> Journal:
    """Back up every file that will change and note what the commit will do (nothing outside the journal yet)."""
    entries: list[Entry] = []
    new_dirs: list[Target] = []
    for k, (change, t) in enumerate(zip(changes, targets, strict=True)):
        with space.opened(t) as w:
            before, mode = (None, None) if w is None else _read_at(w.dir_fd, t.name, space.display(t))
        _check_before(change, before, stage="found before the backup")
        backup = None
        if before is not None:
            backup = f"backup-{k}"
            _write_new_at(jfd, backup, before)
        if change.after is not None:
            new_dirs += [d for d in space.missing_dirs(t) if d not in new_dirs]
        temp = temp_name(txid, k) if change.after is not None else None
        entries.append(Entry(t, sha(before), sha(change.after), mode, backup, temp))
    return Journal(txid, entries, new_dirs)


def _commit(
    space: TxRoots,
    jroot_fd: int,
    jfd: int,
    txid: str,
    changes: list[Change],
    targets: list[Target],
    label: str,
) -> str:
    try:
        journal = _plan(space, jfd, txid, changes, targets)
    except (OSError, UdmError):
        # Nothing outside the journal was touched yet: dropping the backups undoes everything.
        _clean(jroot_fd, txid)
        raise
    fault_point("backups_written")
    record = {
        "version": VERSION,
        "txid": txid,
        "label": label,
        "started": datetime.now(UTC).isoformat(),
        "files": [e.as_json() for e in journal.files],
        "created_dirs": [d.as_json() for d in journal.created_dirs],
    }
    _write_new_at(jfd, JOURNAL_TMP, json.dumps(record, indent=1).encode())
    os.rename(JOURNAL_TMP, JOURNAL, src_dir_fd=jfd, dst_dir_fd=jfd)
    os.fsync(jfd)
    fault_point("journal_written")
    try:
        _make_dirs(space, journal.created_dirs)
        for change, e in zip(changes, journal.files, strict=True):
            if change.after is not None and e.temp is not None:
                # No folder is created here: one that existed when planned and is gone now (moved
                # away by someone) fails the commit rather than being made anew.
                w = space.open(e.target)
                try:
                    _write_new_at(w.dir_fd, e.temp, change.after, e.mode)
                finally:
                    w.close()
        fault_point("temps_written")
        _rename_all(space, changes, journal)
        fault_point("renamed")
    except ConflictError as exc:
        undone, notes = _undo_now(space, jroot_fd, txid)
        if not undone:
            raise ConflictError(f"{exc}; {'; '.join(notes)}") from exc
        raise
    except (OSError, PathChangedError, PathOutsideError, InvalidPathError) as exc:
        undone, notes = _undo_now(space, jroot_fd, txid)
        outcome = "and was rolled back" if undone else "and could not be rolled back yet"
        raise TransactionError(f"commit failed {outcome}: {exc}{_joined(notes)}") from exc
    _write_new_at(jfd, MARKER, txid.encode())
    os.fsync(jfd)
    fault_point("committed")
    _clean(jroot_fd, txid)
    fault_point("cleaned")
    return txid


def _make_dirs(space: TxRoots, dirs: list[Target]) -> None:
    """Create the journaled folders, outermost first, each in its held parent."""
    for d in dirs:
        w = space.open(d)
        try:
            os.mkdir(d.name, 0o777, dir_fd=w.dir_fd)
        except FileExistsError:
            pass
        else:
            os.fsync(w.dir_fd)
        finally:
            w.close()


def _rename_all(space: TxRoots, changes: list[Change], journal: Journal) -> None:
    dirs = _Dirs(space)
    try:
        for n, (change, e) in enumerate(zip(changes, journal.files, strict=True)):
            t = e.target
            w = dirs.get(t)
            if w is None:
                if change.after is not None:
                    raise FileNotFoundError(errno.ENOENT, "the folder vanished", space.display(t))
                current = None
            else:
                # The folder held must still be the one its path names: not moved out of the root.
                space.verify(t, w)
                current, _ = _read_at(w.dir_fd, t.name, space.display(t))
            # The last look before the rename: an editor may have saved the file while we validated.
            _check_before(change, current, stage="found just before the rename")
            if w is not None and e.temp is not None:
                _rename(w.dir_fd, e.temp, t.name, space.display(t))
            elif w is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(t.name, dir_fd=w.dir_fd)
            if n == 0:
                fault_point("renamed_first")
    finally:
        dirs.close()


# -- rollback, roll forward, recovery --------------------------------------------------------------


def _undo_now(space: TxRoots, jroot_fd: int, txid: str) -> tuple[bool, list[str]]:
    """Roll back a commit that failed before its commit point; a failing rollback is left to `recover`."""
    try:
        jfd = os.open(txid, _DIR_FLAGS, dir_fd=jroot_fd)
        try:
            journal, _ = load_journal(space, jfd, txid)
            return True, _roll_back(space, jroot_fd, jfd, txid, journal)
        finally:
            os.close(jfd)
    except (OSError, UdmError, Refused) as exc:
        return False, [f"rollback: {exc}; the next write or `udm recover` finishes it"]


def _restore(space: TxRoots, t: Target, data: bytes, tmp: str, mode: int | None) -> None:
    # A folder gone since the commit started is not made anew: recovery retries once it is back.
    w = space.open(t)
    try:
        _write_new_at(w.dir_fd, tmp, data, mode)
        space.verify(t, w)
        _rename(w.dir_fd, tmp, t.name, space.display(t))
        os.fsync(w.dir_fd)
    finally:
        w.close()


def _roll_back(space: TxRoots, jroot_fd: int, jfd: int, txid: str, journal: Journal | None) -> list[str]:
    notes: list[str] = []
    if journal is not None:
        for k, e in enumerate(journal.files):
            t = e.target
            where = space.display(t)
            restore_tmp = f".udm-{txid}-{k}.restore.tmp"
            with space.opened(t) as w:
                current = None if w is None else _read_at(w.dir_fd, t.name, where)[0]
                restore: bytes | None = None
                if sha(current) == e.before_sha:
                    pass
                elif sha(current) != e.after_sha:
                    # Neither our old nor our new bytes: someone else's edit, which a restore would destroy.
                    notes.append(f"{where} was edited by someone else meanwhile and is left as it is")
                elif e.before_sha is None and w is not None:
                    os.unlink(t.name, dir_fd=w.dir_fd)
                    os.fsync(w.dir_fd)
                elif e.backup is not None:
                    restore, _ = _read_at(jfd, e.backup, f"backup {e.backup}")
                    if sha(restore) != e.before_sha:
                        raise TransactionError(f"the backup of {where} does not hold the old bytes")
                if w is not None:
                    if e.temp:
                        _unlink_quietly(w.dir_fd, e.temp, os.path.join(w.dir_path, e.temp), notes)
                    _unlink_quietly(w.dir_fd, restore_tmp, os.path.join(w.dir_path, restore_tmp), notes)
            if restore is not None:
                _restore(space, t, restore, restore_tmp, e.mode)
        for d in reversed(journal.created_dirs):
            # Only when empty: someone else may have put a file in a folder this commit created.
            with space.opened(d) as w, contextlib.suppress(OSError):
                if w is not None:
                    os.rmdir(d.name, dir_fd=w.dir_fd)
    _clean(jroot_fd, txid)
    return notes


def _roll_forward(space: TxRoots, jroot_fd: int, journal: Journal) -> None:
    for e in journal.files:
        t = e.target
        with space.opened(t) as w:
            if w is None:
                continue
            temp_there = e.temp is not None and _exists_at(w.dir_fd, e.temp)
            if temp_there and e.temp is not None:
                _rename(w.dir_fd, e.temp, t.name, space.display(t))
                os.fsync(w.dir_fd)
            elif e.after_sha is None:
                current, _ = _read_at(w.dir_fd, t.name, space.display(t))
                if current is not None and sha(current) == e.before_sha:
                    os.unlink(t.name, dir_fd=w.dir_fd)
                    os.fsync(w.dir_fd)
    _clean(jroot_fd, journal.txid)


def _exists_at(dir_fd: int, name: str) -> bool:
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode)


def _quarantine(state: Path, jroot_fd: int, name: str, reason: str) -> str:
    """Move a refused journal folder aside, untouched; the line that reports it."""
    folder = ensure_folder(refused_dir(state))
    rfd = os.open(folder, _DIR_FLAGS)
    try:
        new = name if TXID.fullmatch(name) else "refused"
        while True:
            try:
                os.stat(new, dir_fd=rfd, follow_symlinks=False)
            except FileNotFoundError:
                break
            new = f"{new[:60]}-{secrets.token_hex(3)}"
        os.rename(name, new, src_dir_fd=jroot_fd, dst_dir_fd=rfd)
        os.fsync(rfd)
        os.fsync(jroot_fd)
    finally:
        os.close(rfd)
    return (
        f"refused {escape_name(name)!r}: {reason}; nothing in it was acted on, it was moved to "
        f"{folder / new} for a person to inspect"
    )


def _recover_one(space: TxRoots, jroot_fd: int, name: str) -> str:
    jfd = os.open(name, _DIR_FLAGS, dir_fd=jroot_fd)
    try:
        if not TXID.fullmatch(name):
            raise Refused("its folder name is not a transaction id")
        journal, committed = load_journal(space, jfd, name)
        if journal is not None:
            check_paths(space, journal)
        if journal is not None and committed:
            _roll_forward(space, jroot_fd, journal)
            return f"rolled forward {name} ({len(journal.files)} files, it was committed)"
        notes = _roll_back(space, jroot_fd, jfd, name, journal)
        n = len(journal.files) if journal else 0
        return f"rolled back {name} ({n} files, it was not committed){_joined(notes)}"
    finally:
        os.close(jfd)


def recover(state: Path, roots: Mapping[str, Path]) -> list[str]:
    """Finish, undo or refuse every interrupted transaction (the caller holds the write lock); what was done."""
    space = TxRoots(roots, state)
    jroot_fd = _open_journal_root(state, create=False)
    if jroot_fd is None:
        return []
    done: list[str] = []
    if jroot_fd < 0:
        # Something else than a folder sits where the journals go (a symlink planted there?).
        parent = os.open(state, _DIR_FLAGS)
        try:
            done.append(_quarantine(state, parent, journal_dir(state).name, "it is not a folder"))
        finally:
            os.close(parent)
        return done
    failed: list[str] = []
    try:
        for name in sorted(os.listdir(jroot_fd)):
            try:
                st = os.stat(name, dir_fd=jroot_fd, follow_symlinks=False)
                if not stat.S_ISDIR(st.st_mode):
                    raise Refused("it is not a folder")
                done.append(_recover_one(space, jroot_fd, name))
            except Refused as exc:
                done.append(_quarantine(state, jroot_fd, name, str(exc)))
            except (OSError, UdmError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                where = f" ({exc.filename})" if isinstance(exc, OSError) and exc.filename else ""
                failed.append(f"{escape_name(name)}: {reason}{where}")
    finally:
        os.close(jroot_fd)
    if failed:
        before = f" (done first: {'; '.join(done)})" if done else ""
        raise TransactionError(
            f"cannot recover the interrupted transaction {'; '.join(failed)}; it is kept as it is — fix "
            f"the cause (a symlink in the way, disk space, permissions) and run `udm recover`{before}"
        )
    return done
