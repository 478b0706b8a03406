"""The patch store: one JSON record per applied patch (with its inverse) in `<state>/patches/`."""

from __future__ import annotations

import difflib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from udm.config import Settings
from udm.errors import PatchError
from udm.patch.splice import line_opcodes, sha256_text, split_lines

__all__ = [
    "inverse_of",
    "list_records",
    "load_record",
    "new_record",
    "patches_dir",
    "record_path",
    "transaction_roots",
]


def patches_dir(settings: Settings) -> Path:
    """Where applied patches are recorded."""
    return settings.state_path / "patches"


def transaction_roots(settings: Settings) -> dict[str, Path]:
    """The roots a patch transaction may touch: the manual and the patch store (nothing else in state/)."""
    return {"udm": settings.udm_root, "patches": patches_dir(settings)}


def record_path(settings: Settings, patch_id: str) -> Path:
    """Where the record of patch `patch_id` is kept."""
    return patches_dir(settings) / f"{patch_id}.json"


def inverse_of(changed: dict[str, tuple[str | None, str | None]]) -> list[dict[str, Any]]:
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


def new_record(
    kind: str,
    record_id: str,
    description: str,
    changed: dict[str, tuple[str | None, str | None]],
    files: list[Any],
    diff: str,
    *,
    head: dict[str, Any] | None = None,
    author: str | None = None,
    source: str | None = None,
    patch: dict[str, Any] | None = None,
    operations: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The record of a change about to be committed: what it did, its diff, and the inverse that undoes it.

    `head` holds fields that follow `kind` (a revert's `reverts`); callers add fields after `reverted_by`.
    """
    return {
        "id": record_id,
        "kind": kind,
        **(head or {}),
        "description": description,
        "author": author,
        "source": source,
        "applied_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "patch": patch,
        "operations": operations or [],
        "files": [f.model_dump() for f in files],
        "diff": diff,
        "inverse": inverse_of(changed),
        "reverted_by": None,
    }


def load_record(settings: Settings, patch_id: str) -> dict[str, Any]:
    """The stored record of an applied patch; PatchError naming known ids when there is none."""
    if not patch_id or "/" in patch_id or patch_id.startswith("."):
        raise PatchError(f"invalid patch id {patch_id!r}")
    path = record_path(settings, patch_id)
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
