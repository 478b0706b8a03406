"""Patches end to end: plan (dry run), apply as one transaction, store with inverse, revert, list, recover."""

from __future__ import annotations

import contextlib
import difflib
import json
import secrets
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from udm.config import Settings
from udm.errors import (
    AmbiguousTargetError,
    ConflictError,
    InvalidPathError,
    LockTimeoutError,
    PatchError,
    PathOutsideError,
    TargetError,
    TransactionError,
    UdmError,
)
from udm.patch.apply import OpReport, apply_operations
from udm.patch.format import Patch
from udm.patch.gitrepo import GitRepo, branch_name, check_clean, commit_patch, find_repo, not_ignored
from udm.patch.splice import changed_line_count, line_opcodes, sha256_text, split_lines, unified_diff
from udm.patch.transaction import Change, commit_files, recover, write_lock
from udm.patch.validate import ValidationFailedError, validate_workspace
from udm.patch.workspace import MARKDOWN_SUFFIXES, Workspace
from udm.site import settings_site as _site

__all__ = [
    "FileResult",
    "OperationResult",
    "PatchResult",
    "apply_patch",
    "format_files",
    "list_records",
    "load_record",
    "patches_dir",
    "recover_root",
    "revert_patch",
    "transaction_roots",
]

Status = Literal["committed", "planned", "unchanged", "conflict", "invalid", "error", "lock_timeout"]


class OperationResult(BaseModel):
    """What one operation did."""

    index: int = Field(description="Position in the patch (0-based).")
    op: str = Field(description="The operation's name.")
    file: str = Field(description="The file it edits.")
    status: Literal["applied", "unchanged", "error", "not_run"] = Field(description="Its outcome.")
    target: str = Field(default="", description="The section, block, key or lines it resolved to.")
    message: str = Field(default="", description="Why it failed, or a note.")
    added: int = Field(default=0, description="Lines it added.")
    removed: int = Field(default=0, description="Lines it removed.")


class FileResult(BaseModel):
    """One file the patch changes."""

    path: str = Field(description="Relative to the UDM root.")
    action: Literal["modified", "created", "deleted"] = Field(description="What happens to it.")
    added: int = Field(description="Lines added.")
    removed: int = Field(description="Lines removed.")


class PatchResult(BaseModel):
    """The transaction report of one patch (or revert): per-operation status, files, diff, patch id."""

    patch_id: str = Field(description="The patch's id (its record is <state>/patches/<id>.json).")
    status: Status = Field(
        description="committed, planned (dry run), unchanged, conflict, invalid, error or lock_timeout."
    )
    committed: bool = Field(default=False, description="Whether files on disk changed.")
    description: str = Field(default="", description="The patch's description.")
    txid: str | None = Field(default=None, description="The transaction id of the commit.")
    destructive: bool = Field(default=False, description="Whether the patch deletes sections or files.")
    operations: list[OperationResult] = Field(default_factory=list, description="One entry per operation.")
    files: list[FileResult] = Field(default_factory=list, description="Files changed (or that would change).")
    diff: str = Field(default="", description="Unified diff of every file.")
    error: str | None = Field(default=None, description="What went wrong, when status is not a success.")
    problems: list[str] = Field(default_factory=list, description="Every validation finding or candidate.")
    recovered: list[str] = Field(
        default_factory=list, description="Interrupted transactions recovered first."
    )
    planned_patch: dict[str, Any] | None = Field(
        default=None, description="The patch with each operation's precondition hash (`expect`) filled in."
    )
    git: dict[str, Any] | None = Field(
        default=None,
        description="The git commit made for it (commit, branch, files, or error) when the manual is in a "
        "git work tree.",
    )

    @property
    def ok(self) -> bool:
        """True for committed, planned and unchanged."""
        return self.status in ("committed", "planned", "unchanged")


def patches_dir(settings: Settings) -> Path:
    """Where applied patches are recorded."""
    return settings.state_path / "patches"


def transaction_roots(settings: Settings) -> dict[str, Path]:
    """The roots a patch transaction may touch: the manual and the patch store (nothing else in state/)."""
    return {"udm": settings.udm_root, "patches": patches_dir(settings)}


def _recover(settings: Settings) -> list[str]:
    return recover(settings.state_path, transaction_roots(settings))


def _ops(reports: list[OpReport]) -> list[OperationResult]:
    return [OperationResult(**{k: v for k, v in r.as_dict().items() if k != "expect"}) for r in reports]


def _files(changed: dict[str, tuple[str | None, str | None]]) -> tuple[list[FileResult], str]:
    files: list[FileResult] = []
    diffs: list[str] = []
    for path, (before, after) in sorted(changed.items()):
        added, removed = changed_line_count(before, after)
        action: Literal["modified", "created", "deleted"] = (
            "created" if before is None else "deleted" if after is None else "modified"
        )
        files.append(FileResult(path=path, action=action, added=added, removed=removed))
        diffs.append(unified_diff(path, before, after))
    return files, "".join(diffs)


def _inverse(changed: dict[str, tuple[str | None, str | None]]) -> list[dict[str, Any]]:
    """Per file, what undoes the change: reverse hunks anchored by context, or the whole file."""
    out: list[dict[str, Any]] = []
    for path, (before, after) in sorted(changed.items()):
        entry: dict[str, Any] = {"path": path, "before_sha": None if before is None else sha256_text(before)}
        entry["after_sha"] = None if after is None else sha256_text(after)
        if before is None or after is None:
            entry["before"] = before
            out.append(entry)
            continue
        a, b = split_lines(before), split_lines(after)
        hunks = []
        for tag, i1, i2, j1, j2 in line_opcodes(a, b):
            if tag == "equal":
                continue
            hunks.append(
                {
                    "at": j1,
                    "before": a[i1:i2],
                    "after": b[j1:j2],
                    "ctx_before": b[max(0, j1 - 2) : j1],
                    "ctx_after": b[j2 : j2 + 2],
                }
            )
        entry["hunks"] = hunks
        out.append(entry)
    return out


def _result_for_error(
    patch_id: str,
    description: str,
    destructive: bool,
    exc: UdmError | OSError,
    reports: list[OpReport],
    recovered: list[str],
) -> PatchResult:
    if isinstance(exc, OSError):
        # The transaction layer turns its own disk errors into statuses; this is anything else (the
        # state folder unusable, say): nothing was committed, and the person needs the OS's reason.
        where = f" ({exc.filename})" if exc.filename else ""
        exc = TransactionError(f"disk error, nothing changed: {exc.strerror or exc}{where}")
    status: Status = "error"
    problems: list[str] = []
    if isinstance(exc, ConflictError):
        status = "conflict"
    elif isinstance(exc, LockTimeoutError):
        status = "lock_timeout"
    elif isinstance(exc, ValidationFailedError):
        status, problems = "invalid", exc.problems
        if exc.overridable:
            exc = ValidationFailedError(
                [*exc.problems, "only links, anchors or IDs: an override (who and why) may apply it"],
                overridable=True,
            )
    elif isinstance(exc, PatchError | TargetError | PathOutsideError | InvalidPathError):
        # A path that leaves the root (or can never exist) is a bad instruction, not a failed commit.
        status = "invalid"
        if isinstance(exc, AmbiguousTargetError):
            problems = list(exc.candidates)
    return PatchResult(
        patch_id=patch_id,
        status=status,
        description=description,
        destructive=destructive,
        operations=_ops(reports),
        error=str(exc),
        problems=problems,
        recovered=recovered,
    )


def _record_path(settings: Settings, patch_id: str) -> Path:
    return patches_dir(settings) / f"{patch_id}.json"


def _git(settings: Settings, ws: Workspace, changed: dict[str, Any]) -> tuple[GitRepo | None, list[Path]]:
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


def _commit(
    settings: Settings,
    ws: Workspace,
    changed: dict[str, tuple[str | None, str | None]],
    records: dict[Path, dict[str, Any]],
    label: str,
) -> tuple[str, dict[str, Any] | None]:
    """Commit the files and records as one transaction; then, in a git work tree, one git commit."""
    # Found before the transaction: a dirty touched file is a conflict and nothing is written.
    repo, paths = _git(settings, ws, changed)
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
            _recover(settings)
        except TransactionError as again:
            raise TransactionError(f"commit failed: {exc}; {again}") from exc
        raise TransactionError(f"commit failed and was rolled back: {exc}") from exc
    if repo is None:
        return txid, None
    # The last record is the one this commit is about (a revert's, after the original it marks).
    record = list(records.values())[-1]
    branch = branch_name(str(record["id"])) if settings.git_branch_per_patch else None
    return txid, commit_patch(repo, paths, record, branch=branch).model_dump()


def apply_patch(
    patch: Patch,
    settings: Settings,
    *,
    dry_run: bool = False,
    check_expect: bool = True,
    review: dict[str, Any] | None = None,
) -> PatchResult:
    """Plan (dry run) or apply a patch as one transaction; never raises for expected failures.

    `review` (who approved, when, their comment, the flow run) is stored in the patch record."""
    reports: list[OpReport] = []
    recovered: list[str] = []
    _warm_up(patch)
    try:
        with _writer_or_reader(settings, dry_run):
            recovered = _recover(settings) if not dry_run or _interrupted(settings) else []
            ws = _workspace(settings)
            if _record_path(settings, patch.id).exists():
                raise PatchError(f"patch {patch.id} was already applied (see `udm patch show {patch.id}`)")
            reports, hashes = apply_operations(patch, ws, check_expect=check_expect, reports=reports)
            overridden = validate_workspace(ws, site=_site(settings), override=patch.override is not None)
            changed = ws.changed()
            planned = patch.model_copy(deep=True)
            for op, h in zip(planned.operations, hashes, strict=True):
                if op.expect is None:
                    op.expect = h
            files, diff = _files(changed)
            result = PatchResult(
                patch_id=patch.id,
                status="planned" if dry_run else "unchanged",
                description=patch.description,
                destructive=patch.destructive,
                operations=_ops(reports),
                files=files,
                diff=diff,
                recovered=recovered,
                problems=overridden,
                planned_patch=planned.model_dump(mode="json", exclude_unset=True),
            )
            if dry_run:
                # The plan names a dirty work tree too, before anyone reviews it.
                _git(settings, ws, changed)
            if dry_run or not changed:
                return result
            record = {
                "id": patch.id,
                "kind": "patch",
                "description": patch.description,
                "author": patch.author,
                "source": patch.source,
                "applied_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "patch": result.planned_patch,
                "operations": [o.model_dump() for o in result.operations],
                "files": [f.model_dump() for f in files],
                "diff": diff,
                "inverse": _inverse(changed),
                "reverted_by": None,
                "review": review,
            }
            if patch.override is not None:
                # Who forced it and why, with what the validator would have refused.
                record["override"] = {**patch.override.model_dump(), "problems": overridden}
            txid, git = _commit(
                settings, ws, changed, {_record_path(settings, patch.id): record}, f"patch {patch.id}"
            )
            return result.model_copy(
                update={"status": "committed", "committed": True, "txid": txid, "git": git}
            )
    except (UdmError, OSError) as exc:
        reports = reports or [
            OpReport(index=i, op=op.op, file=op.file) for i, op in enumerate(patch.operations)
        ]
        return _result_for_error(patch.id, patch.description, patch.destructive, exc, reports, recovered)


def _interrupted(settings: Settings) -> bool:
    jroot = settings.state_path / "journal"
    return jroot.is_dir() and any(jroot.iterdir())


@contextlib.contextmanager
def _writer_or_reader(settings: Settings, dry_run: bool) -> Iterator[None]:
    """The write lock for a commit; a dry run only reads, so it locks only to recover a crash first."""
    if dry_run and not _interrupted(settings):
        yield
        return
    with write_lock(settings.state_path, settings.lock_timeout_s):
        yield


def _warm_up(patch: Patch) -> None:
    # Import mdformat and its plugins before taking the lock: the first import costs ~0.3 s.
    if any(getattr(op, "format", False) for op in patch.operations):
        from udm.patch.splice import format_markdown_fragment

        format_markdown_fragment("x")


def _find_hunk(lines: list[str], hunk: dict[str, Any]) -> int | None:
    """Where the hunk's 'after' lines (with their context) sit now: the expected place, else a unique match."""
    pattern = hunk["ctx_before"] + hunk["after"] + hunk["ctx_after"]
    guess = hunk["at"] - len(hunk["ctx_before"])
    if lines[guess : guess + len(pattern)] == pattern:
        return guess + len(hunk["ctx_before"])
    if not pattern:
        return None
    found = [i for i in range(len(lines) - len(pattern) + 1) if lines[i : i + len(pattern)] == pattern]
    return found[0] + len(hunk["ctx_before"]) if len(found) == 1 else None


def _undo_hunks(lines: list[str], hunks: list[dict[str, Any]]) -> tuple[list[str], dict[str, Any] | None]:
    """The lines with every hunk undone, or (the lines, the first hunk that no longer reads as left)."""
    # Locate every hunk before changing a line: undoing one rewrites lines that a neighbour up to two
    # lines away holds as its context, so a hunk-by-hunk undo would call a fresh patch changed.
    spots: list[int] = []
    end = 0
    for hunk in hunks:
        at = _find_hunk(lines, hunk)
        # A match that starts inside the previous hunk was found elsewhere: the text moved on.
        if at is None or at < end:
            return lines, hunk
        spots.append(at)
        end = at + len(hunk["after"])
    out = list(lines)
    for hunk, at in reversed(list(zip(hunks, spots, strict=True))):
        out[at : at + len(hunk["after"])] = hunk["before"]
    return out, None


def revert_patch(patch_id: str, settings: Settings) -> PatchResult:
    """Undo an applied patch as a new transaction; a conflict (and no change) if its lines moved on."""
    recovered: list[str] = []
    try:
        with write_lock(settings.state_path, settings.lock_timeout_s):
            recovered = _recover(settings)
            record = load_record(settings, patch_id)
            if record.get("reverted_by"):
                raise PatchError(f"patch {patch_id} was already reverted by {record['reverted_by']}")
            ws = _workspace(settings)
            problems: list[str] = []
            for entry in record["inverse"]:
                path = entry["path"]
                current = ws.read(path)
                current_sha = None if current is None else sha256_text(current)
                if "hunks" not in entry:
                    if current_sha != entry["after_sha"]:
                        state = "exists" if current is not None else "is gone"
                        problems.append(f"{path} {state} and differs from what patch {patch_id} left")
                        continue
                    ws.write(path, entry["before"])
                    continue
                if current is None:
                    problems.append(f"{path} no longer exists")
                    continue
                reverted, moved = _undo_hunks(split_lines(current), entry["hunks"])
                if moved is not None:
                    first = moved["at"] + 1
                    problems.append(
                        f"{path} changed since: lines {first}-{first + max(len(moved['after']), 1) - 1} "
                        f"no longer read as patch {patch_id} left them"
                    )
                    continue
                ws.write(path, "".join(reverted))
            if problems:
                raise ConflictError(f"cannot revert {patch_id}: " + "; ".join(problems))
            # Restoring the previous text is never refused for its links (they were as the manual had them).
            validate_workspace(ws, site=_site(settings), revert=True)
            changed = ws.changed()
            files, diff = _files(changed)
            revert_id = f"revert-{patch_id[:80]}-{secrets.token_hex(2)}"
            result = PatchResult(
                patch_id=revert_id,
                status="unchanged",
                description=f"revert of {patch_id}",
                files=files,
                diff=diff,
                recovered=recovered,
            )
            if not changed:
                return result
            original = dict(record, reverted_by=revert_id)
            revert_record = {
                "id": revert_id,
                "kind": "revert",
                "reverts": patch_id,
                "description": f"revert of {patch_id}",
                "author": None,
                "source": patch_id,
                "applied_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "patch": None,
                "operations": [],
                "files": [f.model_dump() for f in files],
                "diff": diff,
                "inverse": _inverse(changed),
                "reverted_by": None,
            }
            records = {
                _record_path(settings, patch_id): original,
                _record_path(settings, revert_id): revert_record,
            }
            txid, git = _commit(settings, ws, changed, records, f"revert {patch_id}")
            return result.model_copy(
                update={"status": "committed", "committed": True, "txid": txid, "git": git}
            )
    except (UdmError, OSError) as exc:
        return _result_for_error(patch_id, f"revert of {patch_id}", False, exc, [], recovered)


def load_record(settings: Settings, patch_id: str) -> dict[str, Any]:
    """The stored record of an applied patch; PatchError naming known ids when there is none."""
    if not patch_id or "/" in patch_id or patch_id.startswith("."):
        raise PatchError(f"invalid patch id {patch_id!r}")
    path = _record_path(settings, patch_id)
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        known = [r["id"] for r in list_records(settings)]
        close = difflib.get_close_matches(patch_id, known, n=3, cutoff=0.4)
        hint = f" (did you mean: {', '.join(close)}?)" if close else ""
        raise PatchError(f"no applied patch {patch_id!r}{hint}") from None
    except (OSError, ValueError) as exc:
        raise PatchError(f"patch record {path} is unreadable: {exc}") from exc
    return data


def list_records(settings: Settings) -> list[dict[str, Any]]:
    """Summaries of every applied patch, oldest first."""
    folder = patches_dir(settings)
    if not folder.is_dir():
        return []
    out = []
    for path in folder.glob("*.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        out.append(
            {
                "id": data.get("id", path.stem),
                "kind": data.get("kind", "patch"),
                "applied_at": data.get("applied_at"),
                "description": data.get("description", ""),
                "author": data.get("author"),
                "files": [f["path"] for f in data.get("files", [])],
                "reverted_by": data.get("reverted_by"),
                "reviewer": (data.get("review") or {}).get("reviewer"),
            }
        )
    return sorted(out, key=lambda r: (r["applied_at"] or "", r["id"]))


def _workspace(settings: Settings) -> Workspace:
    """The manual as a patch sees it: its ID patterns, protected state, page suffixes and data sections."""
    return Workspace(
        settings.udm_root,
        list(settings.id_patterns),
        protected=tuple(settings.protected_paths()),
        markdown_suffixes=tuple(s.lower() for s in settings.markdown_suffixes),
        data_sections=tuple(settings.data_sections),
    )


def recover_root(settings: Settings) -> list[str]:
    """Take the write lock and recover interrupted transactions; what was done."""
    with write_lock(settings.state_path, settings.lock_timeout_s):
        return _recover(settings)


def format_files(settings: Settings, paths: list[str] | None = None, *, dry_run: bool = False) -> PatchResult:
    """Whole-file mdformat (GFM + front matter) of Markdown files, committed as one revertible transaction."""
    import mdformat

    patch_id = f"fmt-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
    recovered: list[str] = []
    try:
        with write_lock(settings.state_path, settings.lock_timeout_s):
            recovered = _recover(settings)
            ws = _workspace(settings)
            root = ws.root
            targets: list[str] = []
            not_markdown: list[str] = []
            for given in paths or ["."]:
                rel = "." if given in ("", ".") else given
                real = root if rel == "." else ws.real_path(rel)
                if real.is_dir():
                    targets += sorted(
                        p.relative_to(root).as_posix()
                        for p in real.rglob("*")
                        if p.name.lower().endswith(MARKDOWN_SUFFIXES)
                        and p.is_file()
                        and not p.is_symlink()
                        and not p.name.startswith(".")
                    )
                elif real.name.lower().endswith(MARKDOWN_SUFFIXES):
                    targets.append(real.relative_to(root).as_posix())
                else:
                    not_markdown.append(given)
            if not_markdown:
                # mdformat reads YAML or JSON as paragraphs and escapes it into something else entirely.
                raise PatchError(
                    "udm fmt formats Markdown files only (.md, .markdown); not: " + ", ".join(not_markdown)
                )
            for rel in targets:
                # Formatted in edit form, so a byte-order mark and CRLF line ends come back as they were.
                ws.put(rel, mdformat.text(ws.text(rel), extensions={"gfm", "frontmatter"}))
            # mdformat can change what a file means (an escaped marker, a renumbered list, a moved anchor).
            validate_workspace(ws, site=_site(settings))
            changed = ws.changed()
            files, diff = _files(changed)
            result = PatchResult(
                patch_id=patch_id,
                status="planned" if dry_run else "unchanged",
                description=f"mdformat of {len(targets)} file(s)",
                files=files,
                diff=diff,
                recovered=recovered,
            )
            if dry_run or not changed:
                return result
            record = {
                "id": patch_id,
                "kind": "fmt",
                "description": result.description,
                "author": None,
                "source": "udm fmt",
                "applied_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "patch": None,
                "operations": [],
                "files": [f.model_dump() for f in files],
                "diff": diff,
                "inverse": _inverse(changed),
                "reverted_by": None,
            }
            txid, git = _commit(settings, ws, changed, {_record_path(settings, patch_id): record}, "fmt")
            return result.model_copy(
                update={"status": "committed", "committed": True, "txid": txid, "git": git}
            )
    except (UdmError, OSError) as exc:
        return _result_for_error(patch_id, "mdformat", False, exc, [], recovered)
