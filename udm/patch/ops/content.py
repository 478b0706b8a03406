"""Operations on a page's text and blocks: replace text, set a front-matter key, replace a code block."""

from __future__ import annotations

import re

from udm.errors import AmbiguousTargetError, DocumentError, PatchError, TargetNotFoundError
from udm.markdown import section_text, toml_opening
from udm.patch import format as P
from udm.patch.ops.fragments import blank
from udm.patch.ops.targets import (
    ExpectCheck,
    find_block_of_kind,
    find_section_hinted,
    markdown_doc,
    replace_block_content,
)
from udm.patch.splice import ensure_newline, sha256_text, split_lines
from udm.patch.structured import edit_text
from udm.patch.workspace import Workspace

__all__ = ["replace_code_block", "replace_text", "set_front_matter"]


def replace_text(ws: Workspace, op: P.ReplaceText, expect_check: ExpectCheck) -> str:
    """Replace exact text that must occur exactly `count` times."""
    text = ws.text(op.file)
    start, end, where = 0, len(text), op.file
    if op.section is not None:
        doc = markdown_doc(ws, op.file)
        sec = find_section_hinted(doc, op.section)
        start = sum(len(ln) for ln in doc.lines[: sec.start])
        end = start + len(section_text(doc, sec))
        where = f"section '{sec.path}' of {op.file}"
    scope = text[start:end]
    positions = [m.start() for m in re.finditer(re.escape(op.old), scope)]
    # Non-overlapping occurrences, as str.replace counts them.
    found = scope.count(op.old)
    matched_lines = sorted({text.count("\n", 0, start + p) for p in positions})
    lines = split_lines(text)
    expect_check(
        sha256_text("".join(lines[i] for i in matched_lines if i < len(lines))),
        f"the lines holding {op.old!r} in {where}",
    )
    if found != op.count:
        at = ", ".join(str(i + 1) for i in matched_lines[:10]) or "none"
        raise TargetNotFoundError(
            f"{op.old!r} occurs {found} time(s) in {where}, expected {op.count} (lines: {at})"
        )
    ws.put(op.file, text[:start] + scope.replace(op.old, op.new) + text[end:])
    return f"{found} occurrence(s) in {where} (lines {', '.join(str(i + 1) for i in matched_lines[:10])})"


def set_front_matter(ws: Workspace, op: P.SetFrontMatter, expect_check: ExpectCheck) -> str:
    """Set or delete a front-matter key (creating the front matter when absent)."""
    doc = markdown_doc(ws, op.file)
    lines = list(doc.lines)
    rng = doc.front_matter_range
    if rng is None and lines and lines[0].rstrip("\r\n") == "---":
        raise DocumentError(f"{op.file}: its front matter is not closed by '---'")
    if toml_opening(lines) is not None:
        # A YAML edit would corrupt TOML, and a YAML block above it would hide it from Hugo and Zola.
        raise DocumentError(f"{op.file}: its front matter is TOML ('+++'); set_front_matter edits YAML only")
    body = "".join(lines[rng[0] + 1 : rng[1] - 1]) if rng else ""
    expect_check(sha256_text(body), f"the front matter of {op.file}")
    if op.delete:
        new_body = edit_text(body, "yaml", "delete", op.key)
    else:
        new_body = edit_text(body, "yaml", "set", op.key, op.value)
    if rng:
        new = [*lines[: rng[0] + 1], new_body, *lines[rng[1] - 1 :]]
    else:
        new = [
            "---\n",
            ensure_newline(new_body),
            "---\n",
            *(["\n"] if lines and not blank(lines[0]) else []),
            *lines,
        ]
    ws.put(op.file, "".join(new))
    return f"front matter key '{op.key}' of {op.file}"


def replace_code_block(ws: Workspace, op: P.ReplaceCodeBlock, expect_check: ExpectCheck) -> str:
    """Replace a fenced block's content, keeping its fence and info string."""
    doc = markdown_doc(ws, op.file)
    sec = find_section_hinted(doc, op.section) if op.section is not None else None
    if sec is None and op.block is None:
        raise PatchError("replace_code_block needs 'section' and/or 'block'")
    if op.block is None and sec is not None:
        own = [b for b in doc.blocks if b.section == sec.index]
        if not own:
            raise TargetNotFoundError(f"no fenced code block in {op.file} section '{sec.path}'")
        try:
            block = own[0] if len(own) == 1 else find_block_of_kind(doc, sec, None, "any")
        except TargetNotFoundError:
            # Several blocks and none of them data: the data-block default cannot choose.
            raise AmbiguousTargetError(
                f"{len(own)} code blocks in {op.file} section '{sec.path}'; name one by index or ID",
                [f"block {k} '{b.lang or 'code'}' (line {b.start + 1})" for k, b in enumerate(own)],
            ) from None
    else:
        block = find_block_of_kind(doc, sec, op.block, "any")
    expect_check(sha256_text(block.text), f"block at line {block.start + 1} of {op.file}")
    ws.put(op.file, replace_block_content(doc, block, op.content))
    return f"{block.lang or 'code'} block at line {block.start + 1} of {op.file}"
