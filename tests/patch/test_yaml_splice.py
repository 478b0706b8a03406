"""A YAML scalar set done as a one-line splice gives exactly what the full ruamel round trip gives."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from udm.errors import UdmError
from udm.patch.splice import _count_changes, changed_line_count, split_lines
from udm.patch.yamledit import _edit_yaml_round_trip, _splice_yaml_scalar
from udm.patch.yamledit import edit_yaml as _edit_yaml

KEYS = st.sampled_from(["id", "title", "status", "depends_on", "milestone", "n", "key-x", "_k", "true", "On"])
# Old values inside the splice subset (canonical_edits draws only these); OLD adds ones outside it.
CANON_VALUES = [
    "todo",
    "TASK-P1-M1.1-T040",
    '"Task number 40"',
    '""',
    "'single'",
    "''",
    "12",
    "-3",
    "0",
    "a b",
    "path/to.md",
]
OLD = st.sampled_from(
    [
        *CANON_VALUES,
        "yes",
        "null",
        "True",
        "1.5",
        "0x1F",
        "007",
        '"with \\"escape\\""',
        "it's",
        "Über",
        "[a, b]",
        "{a: 1}",
        "a  b",
    ]
)
TAILS = st.sampled_from(["", "", " # c", "   # aligned comment", "  #", "#x", "  ", " # trailing "])
NEW: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(
        [
            "done",
            "in_progress",
            "x",
            "a much longer value than the comment column allows",
            "two words",
            "yes",
            "No",
            "null",
            "true",
            "",
            " padded",
            "it's",
            'say "hi"',
            "a: b",
            "#x",
            "a #b",
            "back\\slash",
            "Über",
            "12",
            "1.5",
            "TASK-P1-M1.1-T041",
            "-dash",
            "x" * 250,
        ]
    ),
    st.integers(-1000, 10**12),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.lists(st.sampled_from(["a", "b"]), max_size=2),
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=12),
)


@st.composite
def blocks(draw: st.DrawFn) -> str:
    lines: list[str] = []
    indent = " " * draw(st.sampled_from([0, 2, 4]))
    for _ in range(draw(st.integers(1, 6))):
        key = draw(KEYS)
        form = draw(st.integers(0, 5))
        if form <= 2:
            lines.append(f"{key}: {draw(OLD)}{draw(TAILS)}")
        elif form == 3:
            lines.append(f"{key}:{draw(TAILS)}")
            item_indent = indent if draw(st.integers(0, 5)) else " " * draw(st.sampled_from([0, 1, 2, 4]))
            lines.extend(f"{item_indent}- {draw(OLD)}{draw(TAILS)}" for _ in range(draw(st.integers(0, 3))))
        elif form == 4:
            lines.append(draw(st.sampled_from(["", "# a comment", "  # indented comment", "   "])))
        else:
            lines.append(
                draw(st.sampled_from([f"{key}:  two-spaces", f"{key}: x  ", "meta:\n  nested: 1", "---"]))
            )
    end = draw(st.sampled_from(["\n", "\n", "", "\n\n"]))
    return "\n".join(lines) + end


def _outcome(fn: Any, text: str, key: str, value: Any) -> tuple[str, str]:
    try:
        return "ok", fn(text, [key], "set", value)
    except UdmError as exc:
        return "error", type(exc).__name__


@settings(max_examples=500, deadline=None)
@given(blocks(), KEYS, NEW)
# ruamel writes another line's `null` back as nothing and `True` as `true`: not a splice.
@example("id: todo\ntitle: null\n", "id", "done")
@example("id: todo\nflag: True\n", "id", "done")
def test_splice_equals_round_trip(text: str, key: str, value: Any) -> None:
    assert _outcome(_edit_yaml, text, key, value) == _outcome(_edit_yaml_round_trip, text, key, value)


CANON_OLD = st.sampled_from(CANON_VALUES)


@st.composite
def canonical_edits(draw: st.DrawFn) -> tuple[str, str]:
    """Blocks inside the splice subset (mostly) and one of their keys, so the splice is exercised."""
    keys = draw(
        st.lists(
            st.sampled_from(["id", "title", "status", "depends_on", "milestone", "n", "key-x", "_k"]),
            min_size=1,
            max_size=6,
            unique=True,
        )
    )
    indent = " " * draw(st.sampled_from([0, 2, 4]))
    lines: list[str] = []
    for key in keys:
        if draw(st.integers(0, 4)) == 0:
            lines.append(draw(st.sampled_from(["", "# a comment"])))
        tail = draw(st.sampled_from(["", "", " # c", "   # aligned comment", "          # far"]))
        if draw(st.integers(0, 4)):
            lines.append(f"{key}: {draw(CANON_OLD)}{tail}")
        else:
            lines.append(f"{key}:{tail}")
            lines.extend(f"{indent}- {draw(CANON_OLD)}" for _ in range(draw(st.integers(0, 2))))
    return "\n".join(lines) + "\n", draw(st.sampled_from(keys))


@settings(max_examples=1000, deadline=None)
@given(canonical_edits(), NEW)
def test_splice_equals_round_trip_inside_the_subset(edit: tuple[str, str], value: Any) -> None:
    text, key = edit
    assert _outcome(_edit_yaml, text, key, value) == _outcome(_edit_yaml_round_trip, text, key, value)


TASK = 'id: TASK-P1-M1.1-T040\ntitle: "Task number 40"\nstatus: todo   # updated by the update flow\ndepends_on:\n  - TASK-P1-M1.1-T001\n'


@pytest.mark.parametrize(
    ("key", "value", "line"),
    [
        ("status", "done", "status: done   # updated by the update flow"),
        ("status", "in_progress", "status: in_progress # updated by the update flow"),
        ("status", 3, "status: 3      # updated by the update flow"),
        ("title", "Renamed", 'title: "Renamed"'),
        ("id", "TASK-P1-M1.1-T041", "id: TASK-P1-M1.1-T041"),
    ],
)
def test_task_block_edits_are_spliced(key: str, value: Any, line: str) -> None:
    spliced = _splice_yaml_scalar(TASK, [key], "set", value)
    assert spliced is not None and line in spliced.splitlines()
    assert spliced == _edit_yaml_round_trip(TASK, [key], "set", value)


def test_structure_changes_take_the_round_trip() -> None:
    assert _splice_yaml_scalar(TASK, ["owner"], "set", "ann") is None  # a new key
    assert _splice_yaml_scalar(TASK, ["depends_on"], "set", "x") is None  # a list
    assert _splice_yaml_scalar(TASK, ["status"], "set", ["a"]) is None  # a non-scalar value
    assert _splice_yaml_scalar(TASK, ["status"], "set", "a: b") is None  # needs quoting
    assert _splice_yaml_scalar(TASK, ["status"], "delete", None) is None
    assert _splice_yaml_scalar("a: [x, y]\nb: 1\n", ["b"], "set", 2) is None  # flow style in the block


LINES = st.sampled_from(
    ["a\n", "b\n", "\n", "status: todo\n", "status: done\n", "x\r\n", "y\r", "z", "\u2028", "a"]
)


@settings(max_examples=600, deadline=None)
@given(
    st.lists(LINES, max_size=12), st.lists(LINES, max_size=3), st.lists(LINES, max_size=3), st.integers(0, 12)
)
def test_changed_line_count_equals_the_count_over_whole_texts(
    base: list[str], cut: list[str], new: list[str], at: int
) -> None:
    before = "".join(base)
    after = "".join(base[:at] + new + base[at + len(cut) :])
    assert changed_line_count(before, after) == _count_changes(split_lines(before), split_lines(after))
