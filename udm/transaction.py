"""All-or-nothing commits of several files: write lock, journal, temp+fsync+rename, commit marker, recovery.

Protocol of one commit (every step durable before the next):

1. take the UDM root's write lock (`<state>/locks/udm-write.lock`, flock: the kernel frees it when the
   holder dies, so a crash never leaves a held lock), waiting at most `lock_timeout_s`;
2. recover any interrupted transaction (below);
3. `<state>/journal/<txid>/`: a backup of every file that will change, then `journal.json` listing
   each file (path, hashes before/after, backup and temp names), written via temp + rename;
4. every new content into a temp file beside its target (`.<name>.udm-<txid>.tmp`), fsynced;
5. rename each temp over its target (or unlink a deleted file), fsync the directories;
6. write the `COMMITTED` marker — the commit point;
7. remove the journal directory.

Recovery: a journal without `COMMITTED` is rolled back (backups restored where a file already
changed, created files removed, temps deleted); one with `COMMITTED` is rolled forward (any rename
left undone is finished) and cleaned up. Recovery is idempotent, so a crash during recovery is
recovered by the next writer. `UDM_FAULT_INJECT=<step>` makes the process `os._exit(137)` right after
that named step (the crash tests use it); `UDM_FAULT_SLOW_S` sleeps after every step so a test can
kill a commit at random moments inside it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from udm.errors import LockTimeoutError, TransactionError

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
    path.parent.mkdir(parents=True, exist_ok=True)
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


def _read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _temp_name(target: Path, txid: str) -> Path:
    return target.with_name(f".{target.name}.udm-{txid}.tmp")


def _mkdirs(path: Path) -> None:
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        d.mkdir(exist_ok=True)
        _fsync_dir(d.parent)


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
    for k, change in enumerate(changes):
        before = _read_or_none(change.path)
        backup = None
        if before is not None:
            backup = f"backup-{k}"
            _write_durable(jdir / backup, before)
        entries.append(
            {
                "path": str(change.path),
                "before_sha": _sha(before),
                "after_sha": _sha(change.after),
                "backup": backup,
                "temp": str(_temp_name(change.path, txid)) if change.after is not None else None,
            }
        )
    fault_point("backups_written")
    record = {"txid": txid, "label": label, "started": datetime.now(UTC).isoformat(), "files": entries}
    tmp = jdir / (_JOURNAL + ".tmp")
    _write_durable(tmp, json.dumps(record, indent=1).encode())
    os.replace(tmp, jdir / _JOURNAL)
    _fsync_dir(jdir)
    fault_point("journal_written")
    try:
        for change, entry in zip(changes, entries, strict=True):
            if change.after is not None:
                _mkdirs(change.path.parent)
                _write_durable(Path(entry["temp"]), change.after)
        fault_point("temps_written")
        dirs: set[Path] = set()
        for n, (change, entry) in enumerate(zip(changes, entries, strict=True)):
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
    except OSError as exc:
        # Not committed: undo what was done so far, from the journal, before reporting.
        _roll_back(jdir, _load_journal(jdir))
        raise TransactionError(f"commit failed and was rolled back: {exc}") from exc
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


def _restore(path: Path, data: bytes, txid: str) -> None:
    tmp = path.with_name(f".{path.name}.udm-{txid}.restore.tmp")
    _mkdirs(path.parent)
    _write_durable(tmp, data)
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _roll_back(jdir: Path, journal: dict[str, Any] | None) -> None:
    if journal is not None:
        txid = journal["txid"]
        for entry in journal["files"]:
            path = Path(entry["path"])
            current = _read_or_none(path)
            if entry["before_sha"] is None:
                if current is not None and _sha(current) == entry["after_sha"]:
                    path.unlink()
                    _fsync_dir(path.parent)
            elif _sha(current) != entry["before_sha"]:
                _restore(path, (jdir / entry["backup"]).read_bytes(), txid)
            if entry["temp"]:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry["temp"])
    _clean(jdir)


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
        if journal is not None and (jdir / _MARKER).exists():
            _roll_forward(jdir, journal)
            done.append(f"rolled forward {jdir.name} ({len(journal['files'])} files, it was committed)")
        else:
            _roll_back(jdir, journal)
            n = len(journal["files"]) if journal else 0
            done.append(f"rolled back {jdir.name} ({n} files, it was not committed)")
    return done
