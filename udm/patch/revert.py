"""Reverting an applied patch: its inverse hunks, found where the lines sit now, applied as a new transaction."""

from __future__ import annotations

import secrets
from typing import Any

from udm.config import Settings
from udm.errors import ConflictError, PatchError, UdmError
from udm.patch.results import PatchResult, file_results, result_for_error
from udm.patch.splice import sha256_text, split_lines
from udm.patch.store import load_record, new_record, record_path
from udm.patch.transaction import write_lock
from udm.patch.validate import validate_workspace
from udm.patch.workspace import Workspace
from udm.patch.writer import commit_changes, manual_workspace, recover_interrupted
from udm.site import settings_site as _site

__all__ = ["revert_patch"]


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
            recovered = recover_interrupted(settings)
            record = load_record(settings, patch_id)
            if record.get("reverted_by"):
                raise PatchError(f"patch {patch_id} was already reverted by {record['reverted_by']}")
            ws = manual_workspace(settings)
            problems = _undo_inverse(ws, record["inverse"], patch_id)
            if problems:
                raise ConflictError(f"cannot revert {patch_id}: " + "; ".join(problems))
            # Restoring the previous text is never refused for its links (they were as the manual had them).
            validate_workspace(ws, site=_site(settings), revert=True)
            changed = ws.changed()
            files, diff = file_results(changed)
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
            revert_record = new_record(
                "revert",
                revert_id,
                f"revert of {patch_id}",
                changed,
                files,
                diff,
                head={"reverts": patch_id},
                source=patch_id,
            )
            records = {
                record_path(settings, patch_id): original,
                record_path(settings, revert_id): revert_record,
            }
            txid, git = commit_changes(settings, ws, changed, records, f"revert {patch_id}")
            return result.model_copy(
                update={"status": "committed", "committed": True, "txid": txid, "git": git}
            )
    except (UdmError, OSError) as exc:
        return result_for_error(patch_id, f"revert of {patch_id}", False, exc, [], recovered)


def _undo_inverse(ws: Workspace, inverse: list[dict[str, Any]], patch_id: str) -> list[str]:
    """Write each file's text from before the patch into `ws`; what stood in the way, per file."""
    problems: list[str] = []
    for entry in inverse:
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
    return problems
