"""The line-skipping scanner decides exactly as the line-by-line scanner it replaced (kept here as the reference)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from udm.scanner import (
    _FENCE_OPEN,
    _HARD_INDENTED,
    _HARD_LIST,
    _HARD_QUOTE,
    _ORDERED,
    _SETEXT,
    _THEMATIC,
    Fence,
    Heading,
    _closer,
    _html_block_end,
    scan_fast,
)
from udm.scanner import (
    ATX_HEADING as _ATX,
)


def _atx_title(rest: str | None) -> str:
    text = (rest or "").strip()
    if text and set(text) == {"#"}:
        return ""
    return re.sub(r"[ \t]+#+$", "", text).strip()


# The scanner as it was before lines were skipped (udm/document.py at d9a0482), unchanged.
def _reference_scan(lines: list[str], first: int) -> tuple[list[Heading], list[Fence]] | None:
    """Headings and fences of an easy file, or None when markdown-it must decide.

    Handles ATX headings, fences, setext headings under plain paragraphs (lines starting with a
    letter), and HTML blocks the way CommonMark delimits them; anything else that could hide or
    make a heading (indented or container lines with '#', fences or '<', odd underlines) bails out.
    """
    headings: list[Heading] = []
    fences: list[Fence] = []
    n = len(lines)
    i = first
    run_start = -1  # first line of the current paragraph, -1 when not in one
    run_plain = False
    while i < n:
        raw = lines[i].rstrip("\r\n")
        if not raw.strip():
            run_start = -1
            i += 1
            continue
        c = raw[0]
        if c == "#":
            m = _ATX.match(raw)
            if m:
                headings.append(Heading(len(m.group(1)), _atx_title(m.group(2)), i, i + 1))
                run_start = -1
                i += 1
                continue
        elif c in "`~":
            m = _FENCE_OPEN.match(raw)
            if m and not (c == "`" and "`" in m.group(2)):
                markup = m.group(1)
                close = _closer(markup, strict=True)
                j = i + 1
                while j < n and not close.match(lines[j].rstrip("\r\n")):
                    j += 1
                closed = j < n
                end = j + 1 if closed else n
                fences.append(
                    Fence(
                        i, end, j if closed else n, m.group(2).strip(), markup, 0, "".join(lines[i + 1 : j])
                    )
                )
                run_start = -1
                i = end
                continue
        elif c == "<":
            end_html = _html_block_end(lines, i, run_start >= 0)
            if end_html is None:
                return None
            if end_html > i:
                run_start = -1
                i = end_html
                continue
        elif c in " \t":
            if _HARD_INDENTED.match(raw) or _SETEXT.match(raw):
                return None
        elif c == ">":
            if _HARD_QUOTE.match(raw):
                return None
        elif c in "-*+0123456789" and _HARD_LIST.match(raw):
            return None
        if (c == "=" or c == "-") and _SETEXT.match(raw):
            if run_start >= 0:
                if not run_plain:
                    return None
                title = " ".join(part.strip() for part in lines[run_start:i])
                headings.append(Heading(1 if c == "=" else 2, title.strip(), run_start, i + 1))
                run_start = -1
                i += 1
                continue
            if c == "-":
                if len(raw.strip()) < 3:
                    return None  # '-' is an empty list item, '--' text: leave it to markdown-it
                i += 1  # a thematic break
                continue
        if c in "*-_" and _THEMATIC.match(raw):
            run_start = -1  # a thematic break ends the paragraph
            i += 1
            continue
        plain = (c.isalpha() or (c.isdigit() and not _ORDERED.match(raw))) and "|" not in raw
        if run_start < 0:
            run_start, run_plain = i, plain
        else:
            run_plain = run_plain and plain
        i += 1
    return headings, fences


LINE = st.sampled_from(
    [
        "",
        "",
        "   ",
        "\u00a0",
        "text line",
        "Plain words",
        "Über text",
        "another | piped",
        "# H1",
        "## H2 ##",
        "###### six",
        "####### seven",
        "#nohead",
        "#",
        "# #",
        "```yaml",
        "```",
        "````",
        "~~~",
        "~~~~ json",
        "``` `x`",
        "  ```",
        "   ~~~",
        "    # code",
        "  # indented heading",
        "\t# tab",
        "  text",
        "- item",
        "- # list heading",
        "* item",
        "+ item",
        "+ <b>",
        "1. numbered",
        "1) item",
        "12. # hidden",
        "2024 was a year",
        "13.1 Numbered title",
        "> quote",
        "> # quoted heading",
        "<div>",
        "</div>",
        "<!-- c -->",
        "<!-- a comment",
        "end -->",
        "<details>",
        "<span>",
        "<pre>",
        "<?php",
        "===",
        "=",
        "---",
        "--",
        "-",
        "  ---",
        "- - -",
        "***",
        "___",
        "Title ==",
        "| a | b |",
    ]
)


@settings(max_examples=1500, deadline=None)
@given(st.lists(LINE, max_size=30), st.sampled_from(["\n", "\n", "\r\n"]), st.integers(0, 2))
def test_scanner_matches_the_reference(lines_: list[str], eol: str, first: int) -> None:
    text = eol.join(lines_) + eol
    lines = text.splitlines(keepends=True)
    first = min(first, len(lines))
    new, old = scan_fast(lines, first), _reference_scan(lines, first)
    if old is None:
        assert new is None
        return
    assert new is not None
    assert new[0] == old[0]
    assert new[1] == old[1]
