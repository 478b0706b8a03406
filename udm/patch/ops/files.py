"""The file operations: create, rename and delete a file."""

from __future__ import annotations

from udm.errors import PatchError
from udm.patch import format as P
from udm.patch.ops.fragments import check_closed
from udm.patch.ops.targets import ExpectCheck, joint_hash
from udm.patch.splice import format_markdown_fragment, sha256_text
from udm.patch.workspace import MARKDOWN_SUFFIXES, Workspace, check_relpath

__all__ = ["create_file", "delete_file", "rename_file"]


def create_file(ws: Workspace, op: P.CreateFile, expect_check: ExpectCheck) -> str:
    """Create a file that does not exist (a Markdown one closed, and mdformatted when asked)."""
    rel = check_relpath(op.file)
    if ws.read(rel) is not None:
        raise PatchError(f"cannot create {rel}: it exists")
    expect_check(sha256_text(""), f"absence of {rel}")
    content = op.content
    if rel.lower().endswith(MARKDOWN_SUFFIXES):
        check_closed(content)
        if op.format:
            content = format_markdown_fragment(content)
    ws.write(rel, content)
    return f"new file {rel}"


def _existing(ws: Workspace, path: str, expect_check: ExpectCheck) -> tuple[str, str]:
    """The file's checked relative path and text, after recording its precondition hash."""
    rel = check_relpath(path)
    text = ws.require(rel)
    expect_check(sha256_text(text), f"file {rel}")
    return rel, text


def delete_file(ws: Workspace, op: P.DeleteFile, expect_check: ExpectCheck) -> str:
    """Delete a file."""
    rel, _ = _existing(ws, op.file, expect_check)
    ws.write(rel, None)
    return f"file {rel}"


def rename_file(ws: Workspace, op: P.RenameFile, expect_check: ExpectCheck) -> str:
    """Move a file to a new path that does not exist (its precondition: the file and its destination's
    absence, so a destination made between plan and commit is a conflict)."""
    rel = check_relpath(op.file)
    text = ws.require(rel)
    dest = check_relpath(op.to)
    there = ws.read(dest) if dest != rel else text
    expect_check(
        joint_hash(sha256_text(text), None if there is None else sha256_text(there)),
        f"file or its destination {dest}",
    )
    if dest == rel:
        raise PatchError(f"rename_file: {rel} and its destination are the same")
    if there is not None:
        raise PatchError(f"cannot rename {rel} to {dest}: {dest} exists")
    ws.write(dest, text)
    ws.write(rel, None)
    return f"{rel} -> {dest}"
