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

This module holds the lock, the commit and the rollback of a failed commit; `udm.patch.recovery` the
recovery of an interrupted one; `udm.patch.txfiles` the descriptor-relative file steps both use.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
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
from udm.patch.journal import (
    JOURNAL,
    JOURNAL_TMP,
    MARKER,
    VERSION,
    Entry,
    Journal,
    Refused,
    Target,
    TxRoots,
    load_journal,
    sha,
    temp_name,
)
from udm.patch.txfiles import (
    DIR_FLAGS,
    HeldDirs,
    clean_journal,
    journal_dir,
    open_journal_root,
    read_at,
    refused_dir,
    unlink_quietly,
    write_new_at,
)

# The one rename of commit and rollback, looked up here at call time: tests replace it to fail a rename.
from udm.patch.txfiles import rename_at as _rename

__all__ = [
    "FAULT_ENV",
    "FAULT_STEPS",
    "Change",
    "commit_files",
    "fault_point",
    "joined_notes",
    "journal_dir",
    "lock_path",
    "refused_dir",
    "roll_back",
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


def _check_before(change: Change, current: bytes | None, *, stage: str) -> None:
    if change.check_before and sha(current) != change.before_sha:
        raise ConflictError(
            f"{change.path} was changed by someone else while this commit ran ({stage}); "
            "their edit is kept and this commit was not applied — plan it again"
        )


def joined_notes(notes: list[str]) -> str:
    """Notes as a parenthesised tail for a message (empty when there are none)."""
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
    jroot_fd = open_journal_root(state, create=True)
    if jroot_fd is None or jroot_fd < 0:
        raise TransactionError(f"{journal_dir(state)} is not a folder; run `udm recover`")
    try:
        os.mkdir(txid, 0o700, dir_fd=jroot_fd)
        os.fsync(jroot_fd)
        jfd = os.open(txid, DIR_FLAGS, dir_fd=jroot_fd)
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
            before, mode = (None, None) if w is None else read_at(w.dir_fd, t.name, space.display(t))
        _check_before(change, before, stage="found before the backup")
        backup = None
        if before is not None:
            backup = f"backup-{k}"
            write_new_at(jfd, backup, before)
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
        clean_journal(jroot_fd, txid)
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
    write_new_at(jfd, JOURNAL_TMP, json.dumps(record, indent=1).encode())
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
                    write_new_at(w.dir_fd, e.temp, change.after, e.mode)
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
        raise TransactionError(f"commit failed {outcome}: {exc}{joined_notes(notes)}") from exc
    write_new_at(jfd, MARKER, txid.encode())
    os.fsync(jfd)
    fault_point("committed")
    clean_journal(jroot_fd, txid)
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
    dirs = HeldDirs(space)
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
                current, _ = read_at(w.dir_fd, t.name, space.display(t))
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


# -- rollback (recovery of an interrupted transaction is in udm.patch.recovery) --------------------


def _undo_now(space: TxRoots, jroot_fd: int, txid: str) -> tuple[bool, list[str]]:
    """Roll back a commit that failed before its commit point; a failing rollback is left to `recover`."""
    try:
        jfd = os.open(txid, DIR_FLAGS, dir_fd=jroot_fd)
        try:
            journal, _ = load_journal(space, jfd, txid)
            return True, roll_back(space, jroot_fd, jfd, txid, journal)
        finally:
            os.close(jfd)
    except (OSError, UdmError, Refused) as exc:
        return False, [f"rollback: {exc}; the next write or `udm recover` finishes it"]


def _restore(space: TxRoots, t: Target, data: bytes, tmp: str, mode: int | None) -> None:
    # A folder gone since the commit started is not made anew: recovery retries once it is back.
    w = space.open(t)
    try:
        write_new_at(w.dir_fd, tmp, data, mode)
        space.verify(t, w)
        _rename(w.dir_fd, tmp, t.name, space.display(t))
        os.fsync(w.dir_fd)
    finally:
        w.close()


def roll_back(space: TxRoots, jroot_fd: int, jfd: int, txid: str, journal: Journal | None) -> list[str]:
    """Undo an uncommitted transaction from its journal and remove the journal; notes on what was left."""
    notes: list[str] = []
    if journal is not None:
        for k, e in enumerate(journal.files):
            t = e.target
            where = space.display(t)
            restore_tmp = f".udm-{txid}-{k}.restore.tmp"
            with space.opened(t) as w:
                current = None if w is None else read_at(w.dir_fd, t.name, where)[0]
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
                    restore, _ = read_at(jfd, e.backup, f"backup {e.backup}")
                    if sha(restore) != e.before_sha:
                        raise TransactionError(f"the backup of {where} does not hold the old bytes")
                if w is not None:
                    if e.temp:
                        unlink_quietly(w.dir_fd, e.temp, os.path.join(w.dir_path, e.temp), notes)
                    unlink_quietly(w.dir_fd, restore_tmp, os.path.join(w.dir_path, restore_tmp), notes)
            if restore is not None:
                _restore(space, t, restore, restore_tmp, e.mode)
        for d in reversed(journal.created_dirs):
            # Only when empty: someone else may have put a file in a folder this commit created.
            with space.opened(d) as w, contextlib.suppress(OSError):
                if w is not None:
                    os.rmdir(d.name, dir_fd=w.dir_fd)
    clean_journal(jroot_fd, txid)
    return notes
