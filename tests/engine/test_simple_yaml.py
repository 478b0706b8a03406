"""The flat-YAML fast path agrees with PyYAML wherever it accepts a block."""

from __future__ import annotations

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from udm.markdown.simple_yaml import NOT_SIMPLE, parse_simple_yaml

SCALARS = st.sampled_from(
    [
        "done",
        "todo",
        "TASK-P0-M0.1-T001",
        "M0.1",
        '"M0.1"',
        "'quoted'",
        '"a: b"',
        "12",
        "0",
        "-3",
        "012",
        "1.5",
        "yes",
        "No",
        "on",
        "null",
        "~",
        "true",
        "2024-01-01",
        "a b  c",
        "x:",
        "ROO-MODE-X",
        "path/to.md",
        '"with \\\\ escape"',
        "[a]",
        "",
        "e1",
        "Y",
        "'it''s'",
        "@at",
        "-",
        "a # c",
        ".inf",
    ]
)
KEYS = st.sampled_from(["id", "title", "status", "depends_on", "on", "yes", "mode", "key-x", "_k", "a"])


@st.composite
def blocks(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        key = draw(KEYS)
        form = draw(st.integers(0, 3))
        if form == 0:
            lines.append(f"{key}: {draw(SCALARS)}")
        elif form == 1:
            items = draw(st.lists(SCALARS, max_size=3))
            lines.append(f"{key}: [{', '.join(items)}]")
        elif form == 2:
            lines.append(f"{key}:")
            indent = " " * draw(st.integers(0, 4))
            lines.extend(f"{indent}- {item}" for item in draw(st.lists(SCALARS, max_size=3)))
        else:
            lines.append(f"{key}:")
    return "\n".join(lines) + "\n"


@settings(max_examples=250, deadline=None)
@given(blocks())
def test_fast_path_equals_pyyaml(text: str) -> None:
    fast = parse_simple_yaml(text)
    if fast is NOT_SIMPLE:
        return
    assert fast == yaml.safe_load(text)


def test_accepts_task_blocks() -> None:
    text = 'id: TASK-P0-M0.1-T002\ntitle: "Define the schemas"\nstatus: done\nmilestone: "M0.1"\ndepends_on:\n  - TASK-P0-M0.1-T001\n'
    assert parse_simple_yaml(text) == yaml.safe_load(text)
    assert parse_simple_yaml("a: yes\n") is NOT_SIMPLE
    assert parse_simple_yaml("a:\n  b: 1\n") is NOT_SIMPLE


COMMENTED = st.sampled_from(
    [
        "id: A-1",
        "status: todo   # set by the update flow",
        "# a whole-line comment",
        "  # an indented comment",
        "depends_on:",
        "  - TASK-P0-M0.1-T001  # first",
        "  - 12",
        "title: 'x' # after a quoted scalar",
        'note: "a # not a comment"',
        "tag: a#b",
        "list: [a, b] # flow list",
        "empty: # nothing",
        "",
    ]
)


@given(st.lists(COMMENTED, min_size=1, max_size=7))
@settings(max_examples=300, deadline=None)
def test_comments_are_dropped_only_where_yaml_reads_them(lines: list[str]) -> None:
    text = "\n".join(lines) + "\n"
    got = parse_simple_yaml(text)
    if got is NOT_SIMPLE:
        return
    assert got == yaml.safe_load(text)


def test_a_commented_task_block_stays_on_the_fast_path() -> None:
    text = "id: T-1\nstatus: todo   # set by the flow\ndepends_on:\n  - T-0  # first\n"
    assert parse_simple_yaml(text) == {"id": "T-1", "status": "todo", "depends_on": ["T-0"]}
