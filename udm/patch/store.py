"""The patch store: one JSON record per applied patch (with its inverse) in `<state>/patches/`."""

from __future__ import annotations

import difflib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from udm.config import Settings
from udm.errors import PatchError
from udm.patch.splice import line_opcodes, sha256_text, split_lines

__all__ = [
    "inverse_of",
    "list_records",
    "load_record",
    "new_record",
    "patches_dir",
    "read_record",
    "record_path",
    "record_problem",
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


class _Shape(BaseModel):
    """A part of a stored record: types as written, no coercion ('1' is not 1); unknown keys kept."""

    model_config = ConfigDict(strict=True, extra="allow")


class _File(_Shape):
    path: str
    action: str
    added: int
    removed: int


class _Hunk(_Shape):
    at: int = Field(ge=0)
    before: list[str]
    after: list[str]
    ctx_before: list[str]
    ctx_after: list[str]


class _Undo(_Shape):
    """One file's inverse: reverse hunks, or the whole text from before (`before`, null: the file was new)."""

    path: str = Field(min_length=1)
    before_sha: str | None
    after_sha: str | None
    before: str | None = None
    hunks: list[_Hunk] = Field(default_factory=list)

    @model_validator(mode="after")
    def _hunks_or_text(self) -> _Undo:
        if "hunks" not in self.model_fields_set and "before" not in self.model_fields_set:
            raise ValueError("an inverse entry holds either 'hunks' or the text 'before'")
        return self


class _Review(_Shape):
    policy: str | None = None
    decision: str | None = None
    reviewer: str | None = None
    comment: str | None = None
    decided_at: str | None = None
    flow_run_id: str | None = None
    flow_run_url: str | None = None


class _Record(_Shape):
    """A record as `new_record` writes it (plus `review`, `override`, a revert's `reverts`)."""

    id: str = Field(min_length=1)
    kind: str = "patch"
    description: str = ""
    author: str | None = None
    source: str | None = None
    applied_at: str | None = None
    patch: dict[str, Any] | None = None
    operations: list[Any] = Field(default_factory=list)
    files: list[_File]
    diff: str
    inverse: list[_Undo]
    reverted_by: str | None = None
    review: _Review | None = None


def record_problem(data: Any) -> str | None:
    """What makes `data` (parsed JSON) not a patch record, the first few fields named; None when it is one."""
    if not isinstance(data, dict):
        return f"it holds a JSON {_json_type(data)}, not an object"
    try:
        _Record.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        shown = [f"'{'.'.join(map(str, e['loc'])) or '(record)'}': {e['msg']}" for e in errors[:3]]
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        return "; ".join(shown) + more
    return None


def _json_type(data: Any) -> str:
    names = {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if data is None else names.get(type(data), type(data).__name__)


def load_record(settings: Settings, patch_id: str) -> dict[str, Any]:
    """The stored record of an applied patch; PatchError naming known ids when there is none, or naming
    the file when it is not a patch record."""
    if not patch_id or "/" in patch_id or patch_id.startswith("."):
        raise PatchError(f"invalid patch id {patch_id!r}")
    path = record_path(settings, patch_id)
    if not path.exists() and not path.is_symlink():
        known = [r["id"] for r in list_records(settings)]
        close = difflib.get_close_matches(patch_id, known, n=3, cutoff=0.4)
        hint = f" (did you mean: {', '.join(close)}?)" if close else ""
        raise PatchError(f"no applied patch {patch_id!r}{hint}")
    return read_record(path)


def read_record(path: Path) -> dict[str, Any]:
    """The record in `path`, read as untrusted data: PatchError naming the file and what is wrong
    when it is not a patch record as `new_record` writes them (state/ may hold anything)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        # ValueError covers bad JSON and bytes that are not UTF-8; RecursionError, nesting too deep.
        raise PatchError(f"patch record {path} is unreadable: {type(exc).__name__}: {exc}") from None
    problem = record_problem(data)
    if problem is not None:
        raise PatchError(f"patch record {path} is not a patch record: {problem}")
    record: dict[str, Any] = data
    return record


def list_records(settings: Settings, skipped: list[str] | None = None) -> list[dict[str, Any]]:
    """Summaries of every applied patch, oldest first; a file that is not a record is left out, and
    why is appended to `skipped` when given."""
    folder = patches_dir(settings)
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob("*.json")):
        try:
            data = read_record(path)
        except PatchError as exc:
            if skipped is not None:
                skipped.append(str(exc))
            continue
        out.append(
            {
                "id": data["id"],
                "kind": data.get("kind", "patch"),
                "applied_at": data.get("applied_at"),
                "description": data.get("description", ""),
                "author": data.get("author"),
                "files": [f["path"] for f in data["files"]],
                "reverted_by": data.get("reverted_by"),
                "reviewer": (data.get("review") or {}).get("reviewer"),
            }
        )
    return sorted(out, key=lambda r: (r["applied_at"] or "", r["id"]))
