"""One writer on a manual: the write lock, recovery first, the workspace, and the commit of files and records."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from udm.config import Settings
from udm.errors import TransactionError
from udm.patch.gitrepo import GitRepo, branch_name, check_clean, commit_patch, find_repo, not_ignored
from udm.patch.recovery import recover
from udm.patch.splice import sha256_text
from udm.patch.store import transaction_roots
from udm.patch.transaction import Change, commit_files, write_lock
from udm.patch.workspace import Workspace
from udm.site import settings_site

__all__ = [
    "commit_changes",
    "git_target",
    "interrupted",
    "manual_workspace",
    "recover_interrupted",
    "recover_root",
    "writer_or_reader",
]


def recover_interrupted(settings: Settings) -> list[str]:
    """Recover interrupted transactions of this manual (the caller holds the write lock); what was done."""
    return recover(settings.state_path, transaction_roots(settings))


def git_target(
    settings: Settings, ws: Workspace, changed: dict[str, Any]
) -> tuple[GitRepo | None, list[Path]]:
    """The git work tree to commit to (None when off or not in one), after refusing dirty touched files."""
    if not settings.git_commit or not changed:
        return None, []
    repo = find_repo(settings.udm_root)
    if repo is None:
        return None, []
    paths = not_ignored(repo, [ws.real_path(p) for p in sorted(changed)])
    if not paths:
        return None, []
    check_clean(repo, paths)
    return repo, paths


def commit_changes(
    settings: Settings,
    ws: Workspace,
    changed: dict[str, tuple[str | None, str | None]],
    records: dict[Path, dict[str, Any]],
    label: str,
) -> tuple[str, dict[str, Any] | None]:
    """Commit the files and records as one transaction; then, in a git work tree, one git commit."""
    # Found before the transaction: a dirty touched file is a conflict and nothing is written.
    repo, paths = git_target(settings, ws, changed)
    # Each file carries the sha of the bytes the workspace read, so commit_files refuses to overwrite
    # an edit saved meanwhile (validation of a large manual takes a while).
    changes = [
        Change(
            ws.real_path(p),
            None if after is None else after.encode("utf-8"),
            before_sha=None if before is None else sha256_text(before),
            check_before=True,
        )
        for p, (before, after) in sorted(changed.items())
    ]
    for path, record in records.items():
        changes.append(
            Change(path, (json.dumps(record, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))
        )
    try:
        txid = commit_files(settings.state_path, changes, roots=transaction_roots(settings), label=label)
    except OSError as exc:
        # A disk error before the commit point: undo from the journal now rather than at the next write.
        try:
            recover_interrupted(settings)
        except TransactionError as again:
            raise TransactionError(f"commit failed: {exc}; {again}") from exc
        raise TransactionError(f"commit failed and was rolled back: {exc}") from exc
    if repo is None:
        return txid, None
    # The last record is the one this commit is about (a revert's, after the original it marks).
    record = list(records.values())[-1]
    branch = branch_name(str(record["id"])) if settings.git_branch_per_patch else None
    return txid, commit_patch(repo, paths, record, branch=branch).model_dump()


def interrupted(settings: Settings) -> bool:
    """Whether a transaction journal is left over from an interrupted commit."""
    jroot = settings.state_path / "journal"
    return jroot.is_dir() and any(jroot.iterdir())


@contextlib.contextmanager
def writer_or_reader(settings: Settings, dry_run: bool) -> Iterator[None]:
    """The write lock for a commit; a dry run only reads, so it locks only to recover a crash first."""
    if dry_run and not interrupted(settings):
        yield
        return
    with write_lock(settings.state_path, settings.lock_timeout_s):
        yield


def manual_workspace(settings: Settings) -> Workspace:
    """The manual as a patch sees it: its ID patterns, protected state, page suffixes and data sections."""
    site = settings_site(settings)
    return Workspace(
        settings.udm_root,
        list(settings.id_patterns),
        protected=tuple(settings.protected_paths()),
        markdown_suffixes=tuple(s.lower() for s in settings.markdown_suffixes),
        data_sections=tuple(settings.data_sections),
        shortcodes=site.shortcodes,
        site=site,
        page_bytes=int(settings.max_file_bytes),
    )


def recover_root(settings: Settings) -> list[str]:
    """Take the write lock and recover interrupted transactions; what was done."""
    with write_lock(settings.state_path, settings.lock_timeout_s):
        return recover_interrupted(settings)
