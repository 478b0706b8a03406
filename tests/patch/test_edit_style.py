"""Edits keep the author's style: YAML flow collections stay flow; list items take the section's marker."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from udm.errors import PatchError
from udm.patch import Workspace, apply_operations, edit_text, get_value, parse_patch

FLOW = "title: X\ntags: [a, b]\nmeta: {k: 1, j: 2}\nblock:\n  - a\n"


def test_a_flow_list_set_to_a_new_list_stays_flow() -> None:
    """`tags: [a, b]` set to four items is still one line (it became a block list of four lines)."""
    assert edit_text(FLOW, "yaml", "set", "tags", ["a", "b", "c", "d"]) == FLOW.replace(
        "[a, b]", "[a, b, c, d]"
    )


def test_a_flow_mapping_set_to_a_new_mapping_stays_flow() -> None:
    """A nested list inside it is written in flow style too, and reads back as written."""
    out = edit_text(FLOW, "yaml", "set", "meta", {"k": 1, "j": 3, "z": [1, 2]})
    assert out == FLOW.replace("{k: 1, j: 2}", "{k: 1, j: 3, z: [1, 2]}")
    assert get_value(out, "yaml", "meta") == {"k": 1, "j": 3, "z": [1, 2]}


def test_a_block_list_stays_block() -> None:
    """Only a collection that was flow stays flow."""
    assert edit_text(FLOW, "yaml", "set", "block", ["q", "r"]) == FLOW.replace("  - a\n", "  - q\n  - r\n")


# ---------------------------------------------------------------- list markers, spacing and tightness

_MD = MarkdownIt("commonmark")
_ITEM = re.compile(r"( *)([*+-]|\d{1,9}[.)])( *)")
_words = st.sampled_from(["alpha", "beta", "gamma", "delta", "omega", "kappa"])
# The inserted text uses other words, so the edited lines are told apart from the old ones exactly.
_new_words = st.sampled_from(["ALPHA", "BETA", "GAMMA"])


@st.composite
def _list(draw: st.DrawFn, lead: int = -1, nested: bool = True, words: Any = _words) -> list[str]:
    """A list as its author wrote it: marker, spaces after it, indent, numbering, tight or loose, nesting."""
    ordered = draw(st.booleans())
    mark = draw(st.sampled_from([".", ")"] if ordered else ["*", "+", "-"]))
    pad = draw(st.integers(1, 4))
    indent = draw(st.integers(0, 3)) if lead < 0 else lead
    start = draw(st.integers(1, 3))
    same = draw(st.booleans())
    loose = draw(st.booleans())
    out: list[str] = []
    for k in range(draw(st.integers(1, 3))):
        marker = f"{start if same else start + k}{mark}" if ordered else mark
        if k and loose:
            out.append("")
        out.append(" " * indent + marker + " " * pad + draw(words))
        if nested and draw(st.booleans()):
            out.extend(draw(_list(lead=indent + len(marker) + pad, nested=False, words=words)))
    return out


@st.composite
def _document(draw: st.DrawFn) -> tuple[str, list[str]]:
    sections = []
    body = ["# Doc", ""]
    for n in range(draw(st.integers(1, 3))):
        name = f"Part {n}"
        sections.append(name)
        body += [f"## {name}", ""]
        if draw(st.booleans()):
            body += [f"Some {draw(_words)} text.", ""]
        if draw(st.booleans()):
            body += [*draw(_list()), ""]
            if draw(st.booleans()):
                body += [*draw(_list()), ""] if draw(st.booleans()) else [f"After {draw(_words)}.", ""]
    return "\n".join(body), sections


def _items(text: str) -> tuple[list[tuple[Any, ...]], int]:
    """Every list item markdown-it-py sees: (line, marker, number, depth, tight, list's first line,
    content column, spaces after the marker)."""
    tokens = _MD.parse(text)
    lines = text.splitlines()
    out = []
    stack: list[tuple[Any, list[Any]]] = []
    for i, tok in enumerate(tokens):
        if tok.type in ("bullet_list_open", "ordered_list_open"):
            close = next(
                j
                for j in range(i + 1, len(tokens))
                if tokens[j].level == tok.level and tokens[j].nesting == -1
            )
            paragraphs = [
                t for t in tokens[i:close] if t.type == "paragraph_open" and t.level == tok.level + 2
            ]
            stack.append((tok, [all(p.hidden for p in paragraphs)]))
        elif tok.type.endswith("_list_close"):
            stack.pop()
        elif tok.type == "list_item_open":
            owner, (tight,) = stack[-1]
            m = _ITEM.match(lines[tok.map[0]])
            column, pad = (m.end(), len(m.group(3))) if m else (-1, -1)
            out.append((tok.map[0], tok.markup, tok.info, len(stack) - 1, tight, owner.map[0], column, pad))
    return out, len(lines)


def _edited(old: str, new: str) -> tuple[int, int, int]:
    """Lines the edit changed: (first, end in old, end in new), by common prefix and suffix."""
    a, b = old.splitlines(), new.splitlines()
    p = 0
    while p < min(len(a), len(b)) and a[p] == b[p]:
        p += 1
    s = 0
    while s < min(len(a), len(b)) - p and a[-1 - s] == b[-1 - s]:
        s += 1
    return p, len(a) - s, len(b) - s


def _apply(text: str, op: dict[str, Any]) -> str:
    texts = {"doc.md": text.encode("utf-8")}
    ws = Workspace(Path("."), reader=lambda rel: texts.get(rel))
    apply_operations(parse_patch({"operations": [{"file": "doc.md", **op}]}), ws)
    out = ws.read("doc.md")
    assert out is not None
    return out


@hsettings(max_examples=150, deadline=None)
@given(
    doc=_document(),
    fragment=_list(words=_new_words),
    intro=st.booleans(),
    op=st.sampled_from(["append_to_section", "prepend_to_section", "insert_section"]),
    fmt=st.booleans(),
    crlf=st.booleans(),
    data=st.data(),
)
def test_list_structure_outside_the_edit_is_unchanged(
    doc: tuple[str, list[str]],
    fragment: list[str],
    intro: bool,
    op: str,
    fmt: bool,
    crlf: bool,
    data: st.DataObject,
) -> None:
    """After an edit, every list item outside the edited lines parses as before (marker, number, depth,
    tight or loose, the list it belongs to); appended items continue the list they follow in its style."""
    text, sections = doc
    section = data.draw(st.sampled_from(sections))
    content = "\n".join((["NOTE.", ""] if intro else []) + fragment)
    edit: dict[str, Any] = {"op": op, "section": section, "content": content, "format": fmt}
    if op == "insert_section":
        edit.update(heading="Added", position="after")
    if crlf:
        text = text.replace("\n", "\r\n")
    try:
        new = _apply(text, edit)
    except PatchError as exc:
        # Refused, not corrupted: an indented block right after a list item would become part of it.
        assert op != "insert_section" and "would become part of the list item before it" in str(exc)
        return
    assert ("\r\n" in new) == crlf
    old_items, _ = _items(text)
    new_items, _ = _items(new)
    first, old_end, new_end = _edited(text, new)
    moved = new_end - old_end

    def mapped(item: tuple[Any, ...]) -> tuple[Any, ...]:
        line, marker, number, depth, tight, owner, column, pad = item
        shift = 0 if line < first else moved
        return (
            line + shift,
            marker,
            number,
            depth,
            tight,
            owner + (0 if owner < first else moved),
            column,
            pad,
        )

    outside = [mapped(i) for i in old_items if i[0] < first or i[0] >= old_end]
    kept = [i for i in new_items if i[0] < first or i[0] >= new_end]
    # A list that the inserted items join keeps its tightness whenever the author could have written
    # those items tight; an item of several blocks makes the list loose, as typing it would.
    joined = {i[5] for i in new_items if first <= i[0] < new_end and i[3] == 0}
    if not _can_be_tight(content):
        kept = [(*i[:4], None, *i[5:]) if i[5] in joined else i for i in kept]
        outside = [
            (*i[:4], None, *i[5:]) if any(k[5] in joined and k[0] == i[0] for k in kept) else i
            for i in outside
        ]
    # Owners (a list's first line) aside, items outside the edit read exactly as before ...
    assert [i[:5] + i[6:] for i in kept] == [i[:5] + i[6:] for i in outside]
    for now, was in zip(kept, outside, strict=True):
        # ... and stay in their list, except that items prepended right before a list run into it.
        assert now[5] == was[5] or (op == "prepend_to_section" and first <= now[5] <= new_end)

    # Appended items continue the list the section ends with, in its marker and spacing.
    if op == "append_to_section" and not intro:
        trailing = _trailing_list(text, section)
        added = [i for i in new_items if first <= i[0] < new_end and i[3] == 0]
        if trailing is not None and added and (trailing[1] in ".)") == (added[0][1] in ".)"):
            assert {i[5] for i in added} == {trailing[5]}, "the appended items started a second list"
            assert {(i[1], i[7]) for i in added} == {(trailing[1], trailing[7])}


def _can_be_tight(text: str) -> bool:
    """Whether the text reads the same with its blank lines removed (then its lists can all be tight)."""

    def blocks(source: str) -> list[tuple[str, int, str]]:
        return [(t.type, t.level, t.content) for t in _MD.parse(source)]

    return blocks("\n".join(ln for ln in text.splitlines() if ln.strip())) == blocks(text)


def _trailing_list(text: str, section: str) -> tuple[Any, ...] | None:
    """The last top-level item of the section's own text when the section ends with a list, else None."""
    lines = text.splitlines()
    start = lines.index(f"## {section}") + 1
    end = next((k for k in range(start, len(lines)) if lines[k].startswith("## ")), len(lines))
    blocks = [t for t in _MD.parse("\n".join(lines[start:end])) if t.level == 0 and t.nesting >= 0 and t.map]
    if not blocks or not blocks[-1].type.endswith("_list_open"):
        return None
    items, _ = _items(text)
    return [i for i in items if i[3] == 0 and start <= i[0] < end][-1]


# -- formatting never changes what inserted Markdown says ------------------------------------------


def test_an_appended_link_that_looks_like_a_task_box_stays_a_link() -> None:
    # mdformat-gfm escapes `[x](...)` at the start of a paragraph into the text `\[x\](...)`.
    doc = "# T\n\n## S\n\nSome text.\n"
    out = _apply(doc, {"op": "append_to_section", "section": "S", "content": "[x](b.md)"})
    assert "[x](b.md)" in out and "\\[" not in out


def test_an_appended_reference_definition_is_kept() -> None:
    # mdformat drops a definition the fragment never uses, though the page may use it elsewhere.
    doc = "# T\n\nSee [the guide][g].\n\n## S\n\nSome text.\n"
    content = "More text.\n\n[g]: guide.md"
    out = _apply(doc, {"op": "append_to_section", "section": "S", "content": content})
    assert "[g]: guide.md" in out
    env: dict[str, Any] = {}
    MarkdownIt("commonmark").render(out, env)
    assert env["references"]["G"]["href"] == "guide.md"
