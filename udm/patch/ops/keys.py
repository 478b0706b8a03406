"""The six key operations: set, delete or append by key path in a YAML/JSON file or a fenced data block."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from udm.errors import DocumentError, PatchError, TargetError
from udm.patch.ops.targets import (
    ExpectCheck,
    find_block_of_kind,
    find_section_hinted,
    markdown_doc,
    replace_block_content,
)
from udm.patch.splice import sha256_text
from udm.patch.structured import Action, Format, edit_text
from udm.patch.workspace import Workspace

__all__ = ["key_operation"]

_STRUCTURED: dict[str, Format] = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".json5": "json5"}


def key_operation(
    action: Action, family: Literal["yaml", "json"]
) -> Callable[[Workspace, Any, ExpectCheck], str]:
    """The operation that applies `action` at a key path of a `family` text (a file or a fenced block)."""

    def run(ws: Workspace, op: Any, expect_check: ExpectCheck) -> str:
        value = getattr(op, "value", None)
        suffix = Path(op.file).suffix.lower()
        if suffix in _STRUCTURED:
            return _edit_file(ws, op, _STRUCTURED[suffix], family, action, value, expect_check)
        return _edit_block(ws, op, family, action, value, expect_check)

    run.__doc__ = f"{action.capitalize()} by key path in a {family.upper()} file or fenced block."
    return run


def _edit_file(
    ws: Workspace, op: Any, fmt: Format, family: str, action: Action, value: Any, expect_check: ExpectCheck
) -> str:
    if (fmt == "yaml") != (family == "yaml"):
        raise PatchError(f"{op.op} cannot edit {op.file}: it is a {fmt.upper()} file")
    if op.section is not None or op.block is not None:
        raise PatchError(f"{op.file} is a {fmt.upper()} file; 'section' and 'block' apply to Markdown files")
    text = ws.text(op.file)
    expect_check(sha256_text(text), f"file {op.file}")
    try:
        ws.put(op.file, edit_text(text, fmt, action, op.key, value))
    except DocumentError as exc:
        raise DocumentError(f"{op.file}: {exc}") from exc
    return f"key '{op.key}' of {op.file}"


def _edit_block(
    ws: Workspace, op: Any, family: str, action: Action, value: Any, expect_check: ExpectCheck
) -> str:
    doc = markdown_doc(ws, op.file)
    sec = find_section_hinted(doc, op.section) if op.section is not None else None
    if sec is None and op.block is None:
        raise PatchError(
            f"{op.op} on a Markdown file needs 'section' and/or 'block' to choose the fenced block"
        )
    block = find_block_of_kind(doc, sec, op.block, family)
    where = f"block at line {block.start + 1}" + (
        f" in section '{doc.section(block.section).path}'" if block.section is not None else ""
    )
    expect_check(sha256_text(block.text), where)
    fmt: Format = "yaml" if family == "yaml" else ("json5" if block.lang == "json5" else "json")
    try:
        new_text = edit_text(block.text, fmt, action, op.key, value)
    except DocumentError as exc:
        raise DocumentError(f"{op.file} {where}: {exc}") from exc
    except TargetError as exc:
        raise type(exc)(f"{op.file} {where}: {exc}") from exc
    ws.put(op.file, replace_block_content(doc, block, new_text))
    return f"key '{op.key}' of the {where}"
