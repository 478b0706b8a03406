"""The author's list style (markers, spacing, numbering, tight or loose) and a fragment restyled to match it.

An edit that inserts Markdown must not change how the lists around it parse: a fragment's `- item`
appended under `*   item` bullets starts a second list (CommonMark ends a list where the marker
changes), and one blank line between a tight list and appended items makes the whole list loose. So
a fragment's lists take the style of the lists already there, per kind (bullet or ordered) and
nesting depth, and a fragment list that continues the list it is placed after takes that list's own
style, numbering and tightness. Only markers, the spaces around them and blank lines between items
change; a re-parse checks that the fragment's structure and text are otherwise what they were, and
the fragment is left as written where that check fails.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from udm.markdown import split_lines

__all__ = [
    "ListInfo",
    "ListStyle",
    "ListStyles",
    "needs_list_style",
    "read_list_styles",
    "restyle_lists",
    "starts_a_block",
]

# A list item's first line: indentation, marker, the spaces after it, and the rest. Spaces only: a
# tab's width depends on its column, so a list indented with tabs is left as it is.
_ITEM_LINE = re.compile(
    r"(?P<indent> *)(?P<marker>[*+-]|(?P<num>\d{1,9})[.)])(?P<pad> *)(?P<rest>.*)", re.DOTALL
)
_MAYBE_LIST = re.compile(r"^ *(?:[*+-]|\d{1,9}[.)])(?: |$)", re.MULTILINE)
_TOP_MARKERS = re.compile(r"^ {0,3}(?:(?P<bullet>[*+-])|\d{1,9}[.)])(?: |$)", re.MULTILINE)


def needs_list_style(text: str) -> set[tuple[bool, int]]:
    """The kinds of top-level list, (ordered, 0), that the text seems to hold (a cheap look, no parse)."""
    return {(m["bullet"] is None, 0) for m in _TOP_MARKERS.finditer(text)}


@dataclass(frozen=True)
class ListStyle:
    """How one list is written: marker (bullet or delimiter), spaces after it, indent, numbering, tightness."""

    ordered: bool
    marker: str  # '*', '-', '+' for bullets; '.' or ')' for ordered lists
    padding: int  # spaces between the marker and the item's text (1-4)
    lead: int  # spaces before the marker of a top-level item
    sequential: bool  # ordered lists: numbers count up (else every item repeats the first number)
    tight: bool  # no blank lines between items


@dataclass(eq=False)
class _Item:
    line: int
    end: int
    depth: int
    indent: int
    marker: str
    padding: int | None  # None: nothing follows the marker on its line
    number: int | None
    rest: str
    parent: _Item | None


@dataclass(eq=False)
class ListInfo:
    """One list of a parsed text: kind, marker, lines, depth, tightness, items, whether it can be restyled."""

    ordered: bool
    markup: str
    start: int
    end: int
    depth: int
    level: int
    tight: bool = True
    ok: bool = True
    items: list[_Item] = field(default_factory=list)

    def style(self) -> ListStyle | None:
        """The style this list is written in (None when its markers could not be read)."""
        known = [item for item in self.items if item.padding is not None]
        if not self.ok or not known:
            return None
        numbers = [item.number for item in self.items]
        sequential = len(numbers) < 2 or numbers[1] != numbers[0]
        return ListStyle(
            ordered=self.ordered,
            marker=self.markup,
            padding=known[-1].padding or 1,
            lead=self.items[0].indent,
            sequential=sequential,
            tight=self.tight,
        )


@dataclass
class ListStyles:
    """The list styles of a text: per (ordered, depth), and its first and last top-level blocks if they are lists."""

    by_kind: dict[tuple[bool, int], ListStyle] = field(default_factory=dict)
    leading: ListInfo | None = None
    trailing: ListInfo | None = None

    def fill_from(self, other: ListStyles) -> None:
        """Take the styles this text lacks from a wider one (the whole document)."""
        for key, style in other.by_kind.items():
            self.by_kind.setdefault(key, style)


@functools.cache
def _parser() -> Any:
    from markdown_it import MarkdownIt

    # markdown-it-py, the reference CommonMark parser here: its tokens carry each item's marker.
    return MarkdownIt("commonmark", {"html": True}).enable("table")


def _parse(text: str) -> tuple[list[Any], list[ListInfo]]:
    """Tokens and lists of a text (lists in document order, outer before inner)."""
    tokens = _parser().parse(text)
    lines = split_lines(text)
    lists: list[ListInfo] = []
    open_lists: list[ListInfo] = []
    open_items: list[_Item | None] = []
    quotes = 0
    for tok in tokens:
        kind = tok.type
        if kind == "blockquote_open":
            quotes += 1
        elif kind == "blockquote_close":
            quotes -= 1
        elif kind in ("bullet_list_open", "ordered_list_open"):
            parent_ok = open_lists[-1].ok if open_lists else True
            info = ListInfo(
                ordered=kind == "ordered_list_open",
                markup=tok.markup,
                start=tok.map[0],
                end=tok.map[1],
                depth=len(open_lists),
                level=tok.level,
                ok=parent_ok and quotes == 0,
            )
            lists.append(info)
            open_lists.append(info)
        elif kind in ("bullet_list_close", "ordered_list_close"):
            open_lists.pop()
        elif kind == "list_item_open":
            current = open_lists[-1]
            parent = open_items[-1] if open_items else None
            item = _read_item(lines, tok, current, parent)
            if item is None:
                current.ok = False
            else:
                current.items.append(item)
            open_items.append(item)
        elif kind == "list_item_close":
            open_items.pop()
        elif (
            kind == "paragraph_open"
            and open_lists
            and tok.level == open_lists[-1].level + 2
            and not tok.hidden
        ):
            open_lists[-1].tight = False
    return tokens, lists


def _read_item(lines: list[str], tok: Any, owner: ListInfo, parent: _Item | None) -> _Item | None:
    start, end = tok.map
    if parent is not None and parent.line == start:
        return None  # `- - x`: two items on one line; left as written
    line = lines[start]
    body = line.rstrip("\r\n")
    m = _ITEM_LINE.fullmatch(body)
    if m is None:
        return None
    marker = m["marker"]
    if owner.ordered:
        if m["num"] is None or marker[-1] != tok.markup or int(m["num"]) != int(tok.info or m["num"]):
            return None
    elif marker != tok.markup:
        return None
    pad = len(m["pad"])
    if m["rest"] == "":
        padding = None
    elif pad > 4 or pad == 0:
        return None  # an indented code block right after the marker: its spacing is not style
    else:
        padding = pad
    return _Item(
        line=start,
        end=end,
        depth=owner.depth,
        indent=len(m["indent"]),
        marker=marker,
        padding=padding,
        number=int(m["num"]) if m["num"] is not None else None,
        rest=m["rest"] + line[len(body) :],
        parent=parent,
    )


def starts_a_block(text: str, line: int) -> bool:
    """Whether `line` of the text starts a top-level block, or an item of a top-level list (not nested deeper)."""
    for tok in _parse(text)[0]:
        if tok.map is not None and tok.map[0] == line and tok.nesting >= 0:
            return tok.level == 0 or (tok.level == 1 and tok.type == "list_item_open")
    return False


def _top_level_blocks(tokens: list[Any]) -> list[Any]:
    return [t for t in tokens if t.level == 0 and t.nesting >= 0 and t.map is not None]


def read_list_styles(text: str) -> ListStyles:
    """The list styles of a Markdown text (the last list of each kind and depth wins)."""
    styles = ListStyles()
    if not _MAYBE_LIST.search(text):
        return styles
    tokens, lists = _parse(text)
    for info in lists:
        style = info.style()
        if style is not None:
            styles.by_kind[(info.ordered, info.depth)] = style
    blocks = _top_level_blocks(tokens)
    top = {info.start: info for info in lists if info.depth == 0}
    if blocks:
        styles.leading = top.get(blocks[0].map[0]) if blocks[0].type.endswith("_list_open") else None
        styles.trailing = top.get(blocks[-1].map[0]) if blocks[-1].type.endswith("_list_open") else None
    return styles


def _signature(tokens: list[Any]) -> list[tuple[Any, ...]]:
    # What a reader sees: block structure and text. Markers, numbers, the spaces that restyling
    # changes and tightness (compared per list by the caller) are left out.
    out: list[tuple[Any, ...]] = []
    for tok in tokens:
        content = tok.content if tok.type in ("inline", "fence", "code_block", "html_block") else ""
        out.append((tok.type, tok.tag, tok.nesting, tok.level, content))
    return out


def _continues(info: ListInfo | None, target: ListInfo | None) -> bool:
    return (
        info is not None and target is not None and info.ok and target.ok and info.ordered == target.ordered
    )


def restyle_lists(
    fragment: str,
    styles: ListStyles,
    *,
    after: ListInfo | None = None,
    before: ListInfo | None = None,
) -> tuple[str, bool, bool]:
    """The fragment with its lists in the given styles, and whether it joins `after` / `before` with no blank line.

    `after` is the list the fragment is placed right after (the fragment's first list continues it
    when it is of the same kind and opens the fragment), `before` the list placed right after the
    fragment (the fragment's last list runs into it when of the same kind).
    """
    if not _MAYBE_LIST.search(fragment):
        return fragment, False, False
    tokens, lists = _parse(fragment)
    if not lists:
        return fragment, False, False
    blocks = _top_level_blocks(tokens)
    top = {info.start: info for info in lists if info.depth == 0}
    first = top.get(blocks[0].map[0]) if blocks[0].type.endswith("_list_open") else None
    last = top.get(blocks[-1].map[0]) if blocks[-1].type.endswith("_list_open") else None
    cont_after = after if first is not None and first.start == 0 and _continues(first, after) else None
    cont_before = before if _continues(last, before) else None
    signature = _signature(tokens)
    for tighten in (True, False):
        text = _rewrite(
            lists, split_lines(fragment), styles, (first, cont_after), (last, cont_before), tighten
        )
        new_tokens, new_lists = _parse(text)
        if _signature(new_tokens) != signature or len(new_lists) != len(lists):
            continue  # the restyled text would read differently: try without, then keep it as written
        wanted = [info.tight for info in lists]
        if tighten:
            for info, target in ((first, cont_after), (last, cont_before)):
                if info is not None and target is not None:
                    wanted[lists.index(info)] = target.tight  # identity: ListInfo compares by id
        if [info.tight for info in new_lists] != wanted:
            continue
        join_after = cont_after is not None and cont_after.tight
        join_before = cont_before is not None and cont_before.tight
        return text, join_after, join_before
    return fragment, False, False


# A list paired with the list it continues (or runs into): (the fragment's list, the page's list or None).
_Joined = tuple[ListInfo | None, ListInfo | None]


@dataclass
class _Edits:
    """The line edits of a restyle: new first lines of items, shifts of their other lines, blank lines."""

    delta: list[int]  # per line: how far its indentation moves
    first_lines: dict[int, str] = field(default_factory=dict)  # an item's first line -> its new text
    moved: dict[int, int] = field(default_factory=dict)  # id(item) -> how far its content column moved
    blank_before: dict[int, bool] = field(default_factory=dict)  # a line -> whether a blank line precedes it


def _rewrite(
    lists: list[ListInfo],
    lines: list[str],
    styles: ListStyles,
    after: _Joined,
    before: _Joined,
    tighten: bool,
) -> str:
    """The fragment's lines with every list restyled (and, with `tighten`, joined lists made as tight as theirs)."""
    edits = _Edits([0] * len(lines))
    for info in lists:
        if not info.ok or not info.items:
            continue
        target = None
        if info is after[0] and after[1] is not None:
            target = after[1]
        elif info is before[0] and before[1] is not None:
            target = before[1]
        style = target.style() if target is not None else styles.by_kind.get((info.ordered, info.depth))
        numbers = _numbers(info, style, after[1] if info is after[0] else None)
        _restyle_items(edits, info, style, numbers)
        if tighten and target is not None:
            for item in info.items[1:]:
                edits.blank_before[item.line] = not target.tight
        if tighten and info.depth == 1 and info.items:
            # A blank line between an item's text and its nested list (mdformat writes one in a loose
            # list) also makes the outer list loose: gone when the outer list continues a tight one.
            owner = info.items[0].parent
            outer_list = next((candidate for candidate in lists if owner in candidate.items), None)
            if any(
                outer_list is own and joined is not None and joined.tight for own, joined in (after, before)
            ):
                edits.blank_before[info.start] = False
    return _emit(lines, edits)


def _restyle_items(edits: _Edits, info: ListInfo, style: ListStyle | None, numbers: list[int]) -> None:
    """New first lines for the list's items in `style`, and the shift of each item's other lines."""
    for k, item in enumerate(info.items):
        outer = edits.moved.get(id(item.parent), 0) if item.parent is not None else 0
        indent = style.lead if style is not None and info.depth == 0 else max(0, item.indent + outer)
        marker, padding = item.marker, item.padding
        if style is not None:
            marker = f"{numbers[k]}{style.marker}" if info.ordered else style.marker
            padding = style.padding if padding is not None else None
        shift = (indent + len(marker) + (padding or 1)) - (
            item.indent + len(item.marker) + (item.padding or 1)
        )
        edits.moved[id(item)] = shift
        # Inner items come later in `lists` and overwrite their own lines; the outer item's lines
        # after an inner list keep the outer shift.
        for n in range(item.line + 1, item.end):
            edits.delta[n] = shift
        edits.first_lines[item.line] = " " * indent + marker + " " * (padding or 0) + item.rest


def _emit(lines: list[str], edits: _Edits) -> str:
    """The lines with the edits made."""
    out: list[str] = []
    for n, line in enumerate(lines):
        if n in edits.blank_before:
            if edits.blank_before[n]:
                if out and out[-1].strip():
                    out.append("\n")
            else:
                while out and not out[-1].strip():
                    out.pop()
        if n in edits.first_lines:
            out.append(edits.first_lines[n])
            continue
        shift = edits.delta[n]
        if shift and line.strip():
            if shift > 0:
                line = " " * shift + line
            elif line[:-shift].strip(" ") == "":
                line = line[-shift:]
        out.append(line)
    return "".join(out)


def _numbers(info: ListInfo, style: ListStyle | None, continued: ListInfo | None) -> list[int]:
    count = len(info.items)
    if not info.ordered or style is None:
        return [item.number or 0 for item in info.items]
    if continued is not None and continued.items:
        prior = continued.items[-1].number or 0
        start = prior + 1 if style.sequential else prior
    else:
        start = info.items[0].number or 0
    return [start + k for k in range(count)] if style.sequential else [start] * count
