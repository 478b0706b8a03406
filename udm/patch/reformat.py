"""`udm fmt`: whole-file mdformat (GFM + front matter) of Markdown files, committed as one revertible transaction."""

from __future__ import annotations

import os
import posixpath
import secrets
from datetime import UTC, datetime
from pathlib import Path

from udm.config import Settings
from udm.errors import PatchError, UdmError
from udm.index import scan_markdown
from udm.patch.results import PatchResult, file_results, result_for_error
from udm.patch.store import new_record, record_path
from udm.patch.transaction import write_lock
from udm.patch.validate import validate_workspace
from udm.patch.workspace import MARKDOWN_SUFFIXES, Workspace
from udm.patch.writer import commit_changes, manual_workspace, recover_interrupted
from udm.site import settings_site as _site

__all__ = ["format_files"]


def format_files(settings: Settings, paths: list[str] | None = None, *, dry_run: bool = False) -> PatchResult:
    """Whole-file mdformat (GFM + front matter) of Markdown files, committed as one revertible transaction."""
    import mdformat

    patch_id = f"fmt-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
    recovered: list[str] = []
    try:
        with write_lock(settings.state_path, settings.lock_timeout_s):
            recovered = recover_interrupted(settings)
            ws = manual_workspace(settings)
            # Left out of folder walks in both spellings: a walk from a folder's real path sees real paths.
            skip = settings.protected_paths()
            skip += [Path(os.path.realpath(p)) for p in skip]
            targets = _markdown_files(ws, paths or ["."], skip)
            for rel in targets:
                # Formatted in edit form, so a byte-order mark and CRLF line ends come back as they were.
                ws.put(rel, mdformat.text(ws.text(rel), extensions={"gfm", "frontmatter"}))
            # mdformat can change what a file means (an escaped marker, a renumbered list, a moved anchor).
            validate_workspace(ws, site=_site(settings))
            changed = ws.changed()
            files, diff = file_results(changed)
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
            record = new_record("fmt", patch_id, result.description, changed, files, diff, source="udm fmt")
            txid, git = commit_changes(
                settings, ws, changed, {record_path(settings, patch_id): record}, "fmt"
            )
            return result.model_copy(
                update={"status": "committed", "committed": True, "txid": txid, "git": git}
            )
    except (UdmError, OSError) as exc:
        return result_for_error(patch_id, "mdformat", False, exc, [], recovered)


def _markdown_files(ws: Workspace, paths: list[str], skip: list[Path]) -> list[str]:
    """The Markdown files the given files and folders name: folders walked as the index walks the
    manual (hidden files and folders such as `.git`, links out of the root and the `skip` folders, the
    engine's state, left out)."""
    root = ws.root
    targets: list[str] = []
    not_markdown: list[str] = []
    for given in paths:
        # Spelled as the file tool reads it: './', 'docs/..' and ' . ' all name the root itself.
        text = given.replace("\\", "/").strip()
        rel = posixpath.normpath(text) if text else "."
        real = root if rel == "." else ws.real_path(given)
        if real.is_dir():
            under = real.relative_to(root).as_posix()
            found = scan_markdown(real, skip, suffixes=MARKDOWN_SUFFIXES)
            targets += sorted(posixpath.normpath(f"{under}/{name}") for name in found)
        elif real.name.lower().endswith(MARKDOWN_SUFFIXES):
            targets.append(real.relative_to(root).as_posix())
        else:
            not_markdown.append(given)
    if not_markdown:
        # mdformat reads YAML or JSON as paragraphs and escapes it into something else entirely.
        raise PatchError(
            "udm fmt formats Markdown files only (.md, .markdown); not: " + ", ".join(not_markdown)
        )
    # Each file once: a file named twice (or by a folder and itself, `.` given N times) is formatted
    # once, so the cost of a call is bounded by the manual, not by the length of its list.
    return list(dict.fromkeys(targets))
