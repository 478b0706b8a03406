"""All-or-nothing commits of several files: write lock, journal, temp+fsync+rename, commit marker, recovery.

Protocol of one commit (every step durable before the next):

1. take the UDM root's write lock (`<state>/locks/udm-write.lock`, flock: the kernel frees it when the
   holder dies, so a crash never leaves a held lock), waiting at most `lock_timeout_s`;
2. recover any interrupted transaction (below);
3. `<state>/journal/<txid>/`: a backup of every file that will change, then `journal.json` listing
   each file (path, hashes before/after, permission bits, backup and temp names) and the folders the
   commit will create, written via temp + rename; a file whose bytes are not the ones the change was
   computed from (`Change.before_sha`) stops the commit with ConflictError before anything is written;
4. the missing folders, then every new content into a temp file beside its target
   (`.udm-<txid>-<k>.tmp`: short, so a long file name never makes it too long), fsynced and given the
   target's permission bits;
5. rename each temp over its target (or unlink a deleted file), fsync the directories; each file is
   compared with `before_sha` again right before its rename, and a difference rolls back (ConflictError);
6. write the `COMMITTED` marker — the commit point;
7. remove the journal directory.

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
import hashlib
import json
import os
import secrets
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from udm.config import ensure_folder
from udm.errors import ConflictError, LockTimeoutError, TransactionError

__all__ = [
    "FAULT_ENV",
    "FAULT_STEPS",
    "Change",
    "commit_files",
    "fault_point",
    "journal_dir",
    "lock_path",
    "recover",
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
_JOURNAL = "journal.json"
_MARKER = "COMMITTED"


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
    """One file of a transaction: its absolute path and new content (None deletes it)."""

    path: Path
    after: bytes | None
    # `sha256:<hex>` of the bytes the new content was computed from (None: the file did not exist);
    # checked only when `check_before` is set.
    before_sha: str | None = None
    check_before: bool = False


def _sha(data: bytes | None) -> str | None:
    return None if data is None else "sha256:" + hashlib.sha256(data).hexdigest()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_durable(path: Path, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


# Errors that mean "there is no such file" (a name too long or under a file cannot exist either).
_ABSENT = (errno.ENOENT, errno.ENAMETOOLONG, errno.ENOTDIR)


def _read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError as exc:
        if exc.errno in _ABSENT:
            return None
        raise


def _mode_or_none(path: Path) -> int | None:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None


def _temp_name(target: Path, txid: str, k: int) -> Path:
    # Not derived from the target's name: `.<name>.udm-<txid>.tmp` overflows NAME_MAX for long names.
    return target.with_name(f".udm-{txid}-{k}.tmp")


def _missing_dirs(path: Path) -> list[Path]:
    """The folders to create, outermost first, for `path` to exist as a folder."""
    missing = []
    p = path
    while not p.exists() and p != p.parent:
        missing.append(p)
        p = p.parent
    return missing[::-1]


def _mkdirs(path: Path) -> None:
    for d in _missing_dirs(path):
        d.mkdir(exist_ok=True)
        _fsync_dir(d.parent)


def _check_before(change: Change, current: bytes | None, *, stage: str) -> None:
    if change.check_before and _sha(current) != change.before_sha:
        raise ConflictError(
            f"{change.path} was changed by someone else while this commit ran ({stage}); "
            "their edit is kept and this commit was not applied — plan it again"
        )


def commit_files(state: Path, changes: list[Change], *, label: str = "") -> str:
    """Commit every change or none (the caller holds the write lock and has recovered); returns the txid."""
    if not changes:
        raise TransactionError("nothing to commit")
    paths = [c.path for c in changes]
    if len(set(paths)) != len(paths):
        raise TransactionError("a transaction names the same file twice")
    txid = datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(4)
    jroot = journal_dir(state)
    jroot.mkdir(parents=True, exist_ok=True)
    jdir = jroot / txid
    jdir.mkdir()
    _fsync_dir(jroot)
    entries: list[dict[str, Any]] = []
    new_dirs: list[Path] = []
    try:
        for k, change in enumerate(changes):
            before = _read_or_none(change.path)
            _check_before(change, before, stage="found before the backup")
            backup = None
            if before is not None:
                backup = f"backup-{k}"
                _write_durable(jdir / backup, before)
            if change.after is not None:
                new_dirs += [d for d in _missing_dirs(change.path.parent) if d not in new_dirs]
            entries.append(
                {
                    "path": str(change.path),
                    "before_sha": _sha(before),
                    "after_sha": _sha(change.after),
                    "mode": _mode_or_none(change.path),
                    "backup": backup,
                    "temp": str(_temp_name(change.path, txid, k)) if change.after is not None else None,
                }
            )
    except (OSError, ConflictError):
        # Nothing outside the journal was touched yet: dropping the backups undoes everything.
        _clean(jdir)
        raise
    fault_point("backups_written")
    record = {
        "txid": txid,
        "label": label,
        "started": datetime.now(UTC).isoformat(),
        "files": entries,
        "created_dirs": [str(d) for d in new_dirs],
    }
    tmp = jdir / (_JOURNAL + ".tmp")
    _write_durable(tmp, json.dumps(record, indent=1).encode())
    os.replace(tmp, jdir / _JOURNAL)
    _fsync_dir(jdir)
    fault_point("journal_written")
    try:
        for change, entry in zip(changes, entries, strict=True):
            if change.after is not None:
                _mkdirs(change.path.parent)
                temp = Path(entry["temp"])
                _write_durable(temp, change.after)
                if entry["mode"] is not None:
                    os.chmod(temp, entry["mode"])
        fault_point("temps_written")
        dirs: set[Path] = set()
        for n, (change, entry) in enumerate(zip(changes, entries, strict=True)):
            # The last look before the rename: an editor may have saved the file while we validated.
            _check_before(change, _read_or_none(change.path), stage="found just before the rename")
            if change.after is not None:
                os.replace(entry["temp"], change.path)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(change.path)
            dirs.add(change.path.parent)
            if n == 0:
                fault_point("renamed_first")
        for d in dirs:
            _fsync_dir(d)
        fault_point("renamed")
    except ConflictError as exc:
        undone, notes = _undo_now(jdir)
        if not undone:
            raise ConflictError(f"{exc}; {'; '.join(notes)}") from exc
        raise
    except OSError as exc:
        undone, notes = _undo_now(jdir)
        outcome = "and was rolled back" if undone else "and could not be rolled back yet"
        raise TransactionError(f"commit failed {outcome}: {exc}{_joined(notes)}") from exc
    _write_durable(jdir / _MARKER, txid.encode())
    _fsync_dir(jdir)
    fault_point("committed")
    _clean(jdir)
    fault_point("cleaned")
    return txid


def _load_journal(jdir: Path) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads((jdir / _JOURNAL).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise TransactionError(f"journal {jdir} is unreadable: {exc}; inspect it by hand") from exc
    return data


def _clean(jdir: Path) -> None:
    for child in jdir.iterdir():
        child.unlink()
    jdir.rmdir()
    _fsync_dir(jdir.parent)


def _joined(notes: list[str]) -> str:
    return "" if not notes else " (" + "; ".join(notes) + ")"


def _undo_now(jdir: Path) -> tuple[bool, list[str]]:
    """Roll back a commit that failed before its commit point; a failing rollback is left to `recover`."""
    try:
        return True, _roll_back(jdir, _load_journal(jdir))
    except (OSError, TransactionError) as exc:
        return False, [f"rollback: {exc}; the next write or `udm recover` finishes it"]


def _restore(path: Path, data: bytes, tmp: Path, mode: int | None) -> None:
    _mkdirs(path.parent)
    _write_durable(tmp, data)
    if mode is not None:
        os.chmod(tmp, mode)
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _unlink_quietly(path: Path, notes: list[str]) -> None:
    """Remove a temp file of ours; one that was never created (or cannot be) is no reason to stop."""
    try:
        os.unlink(path)
    except OSError as exc:
        if exc.errno not in _ABSENT:
            notes.append(f"could not remove {path}: {exc.strerror or exc}")


def _roll_back(jdir: Path, journal: dict[str, Any] | None) -> list[str]:
    notes: list[str] = []
    if journal is not None:
        for k, entry in enumerate(journal["files"]):
            path = Path(entry["path"])
            current = _sha(_read_or_none(path))
            restore_tmp = path.with_name(f".udm-{journal['txid']}-{k}.restore.tmp")
            if current == entry["before_sha"]:
                pass
            elif current != entry["after_sha"]:
                # Neither our old nor our new bytes: someone else's edit, which a restore would destroy.
                notes.append(f"{path} was edited by someone else meanwhile and is left as it is")
            elif entry["before_sha"] is None:
                path.unlink()
                _fsync_dir(path.parent)
            else:
                _restore(path, (jdir / entry["backup"]).read_bytes(), restore_tmp, entry.get("mode"))
            if entry["temp"]:
                _unlink_quietly(Path(entry["temp"]), notes)
            _unlink_quietly(restore_tmp, notes)
        for d in reversed(journal.get("created_dirs", [])):
            # Only when empty: someone else may have put a file in a folder this commit created.
            with contextlib.suppress(OSError):
                os.rmdir(d)
    _clean(jdir)
    return notes


def _roll_forward(jdir: Path, journal: dict[str, Any]) -> None:
    for entry in journal["files"]:
        path = Path(entry["path"])
        temp = Path(entry["temp"]) if entry["temp"] else None
        if temp is not None and temp.exists():
            os.replace(temp, path)
            _fsync_dir(path.parent)
        elif (
            entry["after_sha"] is None and path.exists() and _sha(_read_or_none(path)) == entry["before_sha"]
        ):
            path.unlink()
            _fsync_dir(path.parent)
    _clean(jdir)


def recover(state: Path) -> list[str]:
    """Finish or undo every interrupted transaction (the caller holds the write lock); what was done."""
    jroot = journal_dir(state)
    if not jroot.is_dir():
        return []
    done: list[str] = []
    for jdir in sorted(p for p in jroot.iterdir() if p.is_dir()):
        journal = _load_journal(jdir)
        try:
            if journal is not None and (jdir / _MARKER).exists():
                _roll_forward(jdir, journal)
                done.append(f"rolled forward {jdir.name} ({len(journal['files'])} files, it was committed)")
            else:
                notes = _roll_back(jdir, journal)
                n = len(journal["files"]) if journal else 0
                done.append(f"rolled back {jdir.name} ({n} files, it was not committed){_joined(notes)}")
        except OSError as exc:
            raise TransactionError(
                f"cannot recover the interrupted transaction {jdir}: {exc}; fix the cause "
                "(disk space, permissions) and run `udm recover`"
            ) from exc
    return done
