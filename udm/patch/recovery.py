"""Recovery of interrupted transactions: roll back, roll forward, or refuse and move aside (see transaction)."""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path

from udm.config import ensure_folder
from udm.errors import TransactionError, UdmError
from udm.guard import escape_name
from udm.patch.journal import TXID, Journal, Refused, TxRoots, check_paths, load_journal, sha
from udm.patch.transaction import joined_notes, roll_back
from udm.patch.txfiles import (
    DIR_FLAGS,
    clean_journal,
    exists_at,
    journal_dir,
    open_journal_root,
    read_at,
    refused_dir,
    rename_at,
)

__all__ = ["recover"]


def _roll_forward(space: TxRoots, jroot_fd: int, journal: Journal) -> None:
    for e in journal.files:
        t = e.target
        with space.opened(t) as w:
            if w is None:
                continue
            temp_there = e.temp is not None and exists_at(w.dir_fd, e.temp)
            if temp_there and e.temp is not None:
                rename_at(w.dir_fd, e.temp, t.name, space.display(t))
                os.fsync(w.dir_fd)
            elif e.after_sha is None:
                current, _ = read_at(w.dir_fd, t.name, space.display(t))
                if current is not None and sha(current) == e.before_sha:
                    os.unlink(t.name, dir_fd=w.dir_fd)
                    os.fsync(w.dir_fd)
    clean_journal(jroot_fd, journal.txid)


def _quarantine(state: Path, jroot_fd: int, name: str, reason: str) -> str:
    """Move a refused journal folder aside, untouched; the line that reports it."""
    folder = ensure_folder(refused_dir(state))
    rfd = os.open(folder, DIR_FLAGS)
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
    jfd = os.open(name, DIR_FLAGS, dir_fd=jroot_fd)
    try:
        if not TXID.fullmatch(name):
            raise Refused("its folder name is not a transaction id")
        journal, committed = load_journal(space, jfd, name)
        if journal is not None:
            check_paths(space, journal)
        if journal is not None and committed:
            _roll_forward(space, jroot_fd, journal)
            return f"rolled forward {name} ({len(journal.files)} files, it was committed)"
        notes = roll_back(space, jroot_fd, jfd, name, journal)
        n = len(journal.files) if journal else 0
        return f"rolled back {name} ({n} files, it was not committed){joined_notes(notes)}"
    finally:
        os.close(jfd)


def recover(state: Path, roots: Mapping[str, Path]) -> list[str]:
    """Finish, undo or refuse every interrupted transaction (the caller holds the write lock); what was done."""
    space = TxRoots(roots, state)
    jroot_fd = open_journal_root(state, create=False)
    if jroot_fd is None:
        return []
    done: list[str] = []
    if jroot_fd < 0:
        # Something else than a folder sits where the journals go (a symlink planted there?).
        parent = os.open(state, DIR_FLAGS)
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
