"""Line-level helpers for minimal edits: splicing, three-way minimal merges, diffs, fragment formatting."""

from __future__ import annotations

import difflib
import hashlib
import itertools
import operator
import re
from collections.abc import Sequence
from typing import Any

from udm.markdown import split_lines

__all__ = [
    "BOM",
    "changed_line_count",
    "disk_form",
    "edit_form",
    "ensure_newline",
    "format_markdown_fragment",
    "line_opcodes",
    "merge_minimal",
    "sha256_text",
    "splice",
    "split_lines",
    "unified_diff",
]


def sha256_text(text: str) -> str:
    """A `sha256:<hex>` digest of a text's UTF-8 bytes (preconditions and journal entries use it)."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def ensure_newline(text: str) -> str:
    """The text with a final newline (empty text stays empty)."""
    return text if not text or text.endswith("\n") else text + "\n"


BOM = "\ufeff"
_LONE_LF = re.compile(r"(?<!\r)\n")


def _all_crlf(text: str) -> bool:
    # "\r\r\n" would not come back from its LF form, so such a file keeps its bytes as they are.
    return "\r\n" in text and text.count("\n") == text.count("\r\n") and "\r\r\n" not in text


def edit_form(text: str) -> str:
    """The text as edits see it: no leading byte-order mark, and LF line ends when every line ends in CRLF.

    `disk_form(edit_form(t), t) == t` for every text, so an edit round-trips the bytes it does not touch.
    A file mixing LF and CRLF is left as it is: there is no one style to restore.
    """
    if text.startswith(BOM):
        text = text[1:]
    return text.replace("\r\n", "\n") if _all_crlf(text) else text


def disk_form(text: str, like: str | None) -> str:
    """An edited text given back the byte-order mark and CRLF line ends that `like` (its old text) had."""
    if like is None:
        return text
    if _all_crlf(like[1:] if like.startswith(BOM) else like):
        # The edit form holds no CRLF, so only lines an edit brought in with CRLF keep it.
        text = _LONE_LF.sub("\r\n", text)
    if like.startswith(BOM):
        text = BOM + text
    return text


def splice(lines: Sequence[str], start: int, end: int, new_text: str) -> list[str]:
    """Replace lines [start, end) with `new_text`; every other line object is kept as it was."""
    return [*lines[:start], *split_lines(new_text), *lines[end:]]


def merge_minimal(original: str, roundtrip: str, modified: str) -> str:
    """Apply the change `roundtrip -> modified` to `original`, touching only the lines that change.

    `roundtrip` is a serializer's output for the unchanged data and `modified` its output after the
    edit. Where the serializer reproduces `original` exactly, the result differs from `original` only in
    the edited lines. Where it does not (a comment a JSON5 writer drops, a spacing it normalises), the
    edit is anchored on the nearest lines the two agree on, so the differences outside the edit survive.
    """
    if roundtrip == modified:
        return original
    o_lines, r_lines, m_lines = split_lines(original), split_lines(roundtrip), split_lines(modified)
    if o_lines == r_lines:
        return modified
    mapped: list[int | None] = [None] * len(r_lines)
    for block in difflib.SequenceMatcher(None, r_lines, o_lines, autojunk=False).get_matching_blocks():
        for k in range(block.size):
            mapped[block.a + k] = block.b + k
    raw = [
        [i1, i2, j1, j2]
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(
            None, r_lines, m_lines, autojunk=False
        ).get_opcodes()
        if tag != "equal"
    ]
    hunks: list[list[int]] = []
    for n, (i1, i2, j1, j2) in enumerate(raw):
        # Grow the hunk over lines the original does not share until both ends sit on agreed lines.
        # Growth stays inside the equal R->M regions between hunks, where R and M advance together;
        # a hunk that reaches its neighbour merges with it.
        low = hunks[-1][1] if hunks else 0
        while i1 > low and mapped[i1 - 1] is None:
            i1, j1 = i1 - 1, j1 - 1
        high = raw[n + 1][0] if n + 1 < len(raw) else len(r_lines)
        while i2 < high and mapped[i2] is None:
            i2, j2 = i2 + 1, j2 + 1
        if hunks and i1 == low:
            hunks[-1][1], hunks[-1][3] = i2, j2
        else:
            hunks.append([i1, i2, j1, j2])
    out: list[str] = []
    cursor = 0
    for i1, i2, j1, j2 in hunks:
        before, after = (
            (mapped[i1 - 1] if i1 > 0 else -1),
            (mapped[i2] if i2 < len(r_lines) else len(o_lines)),
        )
        assert before is not None and after is not None  # guaranteed by the anchoring loops above
        # O-only lines (comments a serializer drops) just inside the anchors stay when the hunk's
        # first/last line is itself shared.
        first, last = (mapped[i1] if i1 < i2 else None), (mapped[i2 - 1] if i1 < i2 else None)
        o_start = first if first is not None else before + 1
        o_end = last + 1 if last is not None else after
        out.extend(o_lines[cursor:o_start])
        out.extend(m_lines[j1:j2])
        cursor = o_end
    out.extend(o_lines[cursor:])
    return "".join(out)


def line_opcodes(a: Sequence[str], b: Sequence[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib opcodes of two line lists without autojunk, matching only between the common prefix and suffix.

    Trimming first keeps a small edit in a big file fast: autojunk-free matching is quadratic in the
    number of repeated lines (blank lines, fences) it has to look at.
    """
    top = min(len(a), len(b))
    # The first differing line from each end, compared at C speed (a Python loop costs ~1 ms on a 50 KB file).
    lo = next(itertools.compress(itertools.count(), map(operator.ne, a, b)), top)
    hi = next(itertools.compress(itertools.count(), map(operator.ne, reversed(a), reversed(b))), top)
    hi = min(hi, top - lo)
    middle = difflib.SequenceMatcher(
        None, a[lo : len(a) - hi], b[lo : len(b) - hi], autojunk=False
    ).get_opcodes()
    out: list[tuple[str, int, int, int, int]] = [("equal", 0, lo, 0, lo)] if lo else []
    out += [
        (tag, i1 + lo, i2 + lo, j1 + lo, j2 + lo) for tag, i1, i2, j1, j2 in middle if i1 != i2 or j1 != j2
    ]
    if hi:
        out.append(("equal", len(a) - hi, len(a), len(b) - hi, len(b)))
    # Merge neighbouring equal runs (the trimmed ends next to an equal middle).
    merged: list[tuple[str, int, int, int, int]] = []
    for op in out:
        if merged and op[0] == "equal" and merged[-1][0] == "equal":
            t, i1, _, j1, _ = merged[-1]
            merged[-1] = (t, i1, op[2], j1, op[4])
        else:
            merged.append(op)
    return merged


def _grouped(
    codes: list[tuple[str, int, int, int, int]], n: int
) -> list[list[tuple[str, int, int, int, int]]]:
    # The grouping of difflib.SequenceMatcher.get_grouped_opcodes, over precomputed opcodes.
    if not codes:
        return []
    codes = list(codes)
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = tag, max(i1, i2 - n), i2, max(j1, j2 - n), j2
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)
    nn = n + n
    groups: list[list[tuple[str, int, int, int, int]]] = []
    group: list[tuple[str, int, int, int, int]] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > nn:
            group.append((tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - n), max(j1, j2 - n)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups


def unified_diff(path: str, before: str | None, after: str | None, context: int = 3) -> str:
    """A git-style unified diff of one file (`before`/`after` None for a created/deleted file).

    difflib's own `unified_diff` treats frequent lines (blank lines, fences) of long files as junk and
    then shows unchanged lines as changed; matching without autojunk keeps the diff minimal.
    """
    a, b = split_lines(before or ""), split_lines(after or "")
    if a == b and (before is None) == (after is None):
        return ""

    def show(line: str) -> str:
        """One diff line; a missing final newline is marked as git does."""
        # A missing final newline would glue two diff lines together; mark it as git does.
        return line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"

    out = [
        f"--- {'/dev/null' if before is None else 'a/' + path}\n",
        f"+++ {'/dev/null' if after is None else 'b/' + path}\n",
    ]
    for group in _grouped(line_opcodes(a, b), context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        old = f"{i1 + 1 if i2 > i1 else i1},{i2 - i1}" if i2 - i1 != 1 else f"{i1 + 1}"
        new = f"{j1 + 1 if j2 > j1 else j1},{j2 - j1}" if j2 - j1 != 1 else f"{j1 + 1}"
        out.append(f"@@ -{old} +{new} @@\n")
        for tag, x1, x2, y1, y2 in group:
            if tag == "equal":
                out.extend(" " + show(ln) for ln in a[x1:x2])
                continue
            out.extend("-" + show(ln) for ln in a[x1:x2])
            out.extend("+" + show(ln) for ln in b[y1:y2])
    return "".join(out)


def _common_prefix_length(a: str, b: str) -> int:
    """How many leading characters two texts share (compared in C-speed chunks)."""
    top = min(len(a), len(b))
    lo, step = 0, 4096
    while lo < top:
        hi = min(lo + step, top)
        if a[lo:hi] == b[lo:hi]:
            lo = hi
            continue
        while hi - lo > 1:  # the first difference is in [lo, hi): halve the window
            mid = (lo + hi) // 2
            if a[lo:mid] == b[lo:mid]:
                lo = mid
            else:
                hi = mid
        return lo
    return top


def changed_line_count(before: str | None, after: str | None) -> tuple[int, int]:
    """(lines added, lines removed) between two texts, matched without autojunk."""
    a_text, b_text = before or "", after or ""
    # A small edit in a big file: split only the lines between the shared head and tail. When the
    # first and last of those lines differ, `line_opcodes` would trim exactly the same head and
    # tail, so the counts are the same; otherwise count over the whole texts.
    head = _common_prefix_length(a_text, b_text)
    head = a_text.rfind("\n", 0, head) + 1
    tail = _common_prefix_length(a_text[head:][::-1], b_text[head:][::-1])
    cut_a = a_text.find("\n", len(a_text) - tail) + 1 if tail else 0
    if tail and cut_a > 0:
        cut_b = cut_a - len(a_text) + len(b_text)
        a_mid, b_mid = split_lines(a_text[head:cut_a]), split_lines(b_text[head:cut_b])
    else:
        a_mid, b_mid = split_lines(a_text[head:]), split_lines(b_text[head:])
    if not (a_mid and b_mid and a_mid[0] != b_mid[0] and a_mid[-1] != b_mid[-1]):
        a_mid, b_mid = split_lines(a_text), split_lines(b_text)
    return _count_changes(a_mid, b_mid)


def _count_changes(a: list[str], b: list[str]) -> tuple[int, int]:
    added = removed = 0
    for tag, i1, i2, j1, j2 in line_opcodes(a, b):
        if tag != "equal":
            removed += i2 - i1
            added += j2 - j1
    return added, removed


def format_markdown_fragment(text: str) -> str:
    """The fragment normalised by mdformat (GFM + front matter), ending in exactly one newline."""
    import mdformat

    if not text.strip():
        return ""
    formatted = mdformat.text(text, extensions={"gfm", "frontmatter"})
    # An escape mdformat adds to a bracket (`[x][id]` at a paragraph's start, read like a task box,
    # becomes `\[x\][id]`) changes nothing to CommonMark, but a MkDocs site with autorefs reads
    # `[x][id]` as a cross-reference, and the escaped one pairs its brackets otherwise.
    added_escapes = formatted.count("\\[") + formatted.count("\\]") > text.count("\\[") + text.count("\\]")
    if added_escapes or not _same_meaning(text, formatted):
        # mdformat-gfm escapes a paragraph that starts like a task box (`[x](a.md)` becomes the text
        # `\[x\](a.md)`), and mdformat drops a reference definition the fragment itself never uses,
        # though the rest of the page may. Formatting is a nicety; losing a link is not.
        return ensure_newline(text.strip("\n"))
    return formatted.rstrip("\n") + "\n"


def _same_meaning(before: str, after: str) -> bool:
    """Whether two Markdown texts render the same and define the same link references."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    env_a: dict[str, Any] = {}
    env_b: dict[str, Any] = {}
    # Runs of spaces and line breaks mean one space to a browser; mdformat collapses them on purpose.
    html_a = " ".join(md.render(before, env_a).split())
    html_b = " ".join(md.render(after, env_b).split())
    return html_a == html_b and _definitions(env_a) == _definitions(env_b)


def _definitions(env: dict[str, Any]) -> dict[str, tuple[str, str]]:
    # Where a definition stands does not matter to a reader (mdformat moves them to the end).
    return {k: (v.get("href", ""), v.get("title", "")) for k, v in env.get("references", {}).items()}
