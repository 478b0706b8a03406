"""The IDs a block defines, told without parsing it, agree with the IDs its parsed data holds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from udm.markdown import block_ids, parse_document
from udm.markdown.blockdata import collect_ids, parse_data
from udm.markdown.ids import DEFINING_KEYS
from udm.markdown.simple_yaml import simple_yaml_ids

KEYS = st.sampled_from(
    [*DEFINING_KEYS, "title", "status", "depends_on", "on", "yes", "key-x", "_k", "ID", "Id"]
)
VALUES = st.sampled_from(
    [
        "TASK-P1-M1.1-T040",
        "ROO-MODE-PLAN",
        "fileSystemAccessTool",
        "done",
        '"quoted-id"',
        '"  padded  "',
        '"two words"',
        '""',
        "'single-id'",
        "'it''s'",
        '"esc\\u0041"',
        "yes",
        "No",
        "null",
        "NULL",
        "~",
        "true",
        "y",
        "12",
        "-3",
        "0x1F",
        "1.5",
        ".inf",
        "2024-01-01",
        "1e5",
        "a b  c",
        "a: b",
        "x:",
        "a #b",
        "a#b",
        "Über",
        "naïve-id",
        "x\u2028y",
        "&anchor a",
        "*alias",
        "!!str 5",
        "[a, b]",
        "{id: NESTED-1}",
        "|",
        ">",
        "-",
        "- a",
        "@at",
        "`tick`",
        "%pct",
        "(paren)",
        "path/to.md",
        "a,b",
        "",
        "id",
    ]
)
TAILS = st.sampled_from(["", "", "   # a comment", " #c", "#not", "  ", "\t# tab", " # é"])


@st.composite
def yaml_blocks(draw: st.DrawFn) -> str:
    lines: list[str] = []
    for _ in range(draw(st.integers(0, 7))):
        form = draw(st.integers(0, 6))
        key = draw(KEYS)
        if form <= 2:
            lines.append(f"{key}: {draw(VALUES)}{draw(TAILS)}")
        elif form == 3:
            lines.append(f"{key}:{draw(TAILS)}")
            indent = " " * draw(st.sampled_from([0, 2, 2, 4]))
            for _ in range(draw(st.integers(0, 3))):
                lines.append(f"{indent}- {draw(VALUES)}{draw(TAILS)}")
        elif form == 4:
            lines.append(
                draw(st.sampled_from(["", "# comment with id: X-1", "  # indented", "   ", "---", "..."]))
            )
        elif form == 5:
            # Nested mappings, odd spacing and other shapes the cheap scan must refuse or get right.
            lines.append(
                draw(
                    st.sampled_from(
                        [
                            "meta:\n  id: NESTED-2",
                            "- id: LIST-1",
                            f"{key}:   spaced",
                            f"{key} : spaced-colon",
                            "'id': QUOTED-KEY",
                            '"id": DQ-KEY',
                            '"\\x69d": ESCAPED-KEY',
                            "? id\n: COMPLEX-1",
                            "base: &b {id: ANCHOR-1}\ncopy: *b",
                            "id: TASK-A\nid: TASK-B",
                            "text: |\n  id: IN-LITERAL",
                            "id:\n  - A-1",
                            "\tid: TAB-1",
                            'id: "unclosed',
                        ]
                    )
                )
            )
        else:
            lines.append(f"{key}: {draw(VALUES)} {draw(VALUES)}")
    text = "\n".join(lines)
    return text + ("\n" if draw(st.booleans()) else "")


CLEAN_VALUES = st.sampled_from(
    [
        "TASK-P1-M1.1-T040",
        "ROO-MODE-PLAN",
        "done",
        '"quoted-id"',
        '"  padded  "',
        '"two words"',
        '""',
        "'single-id'",
        "yes",
        "Null",
        "12",
        "-3",
        "1.5",
        "2024-01-01",
        "a b  c",
        "Über",
        "_under",
        ".dot",
        "(paren)",
        "path/to.md",
        "a,b",
        "id",
    ]
)


@st.composite
def flat_blocks(draw: st.DrawFn) -> str:
    """Blocks mostly inside the flat subset, so the cheap scan answers often."""
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 6))):
        key = draw(KEYS)
        tail = draw(st.sampled_from(["", "", "  # c", " #x"]))
        form = draw(st.integers(0, 4))
        if form <= 2:
            lines.append(f"{key}: {draw(CLEAN_VALUES)}{tail}")
        elif form == 3:
            lines.append(f"{key}:{tail}")
            indent = " " * draw(st.sampled_from([0, 2, 4]))
            lines.extend(f"{indent}- {draw(CLEAN_VALUES)}" for _ in range(draw(st.integers(0, 2))))
        else:
            lines.append(draw(st.sampled_from(["", "# id: X-9", "  # note"])))
    return "\n".join(lines) + "\n"


@settings(max_examples=1500, deadline=None)
@given(flat_blocks())
def test_cheap_ids_agree_on_flat_blocks(text: str) -> None:
    cheap = simple_yaml_ids(text, DEFINING_KEYS)
    if cheap is not None:
        assert cheap == _from_data(text)


def _from_data(text: str) -> list[str]:
    data, _error = parse_data("yaml", text, "", 1)
    out: list[str] = []
    collect_ids(data, out)
    return out


@settings(max_examples=1500, deadline=None)
@given(yaml_blocks())
def test_cheap_ids_agree_with_the_parsed_data(text: str) -> None:
    cheap = simple_yaml_ids(text, DEFINING_KEYS)
    if cheap is not None:
        assert cheap == _from_data(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(yaml_blocks(), min_size=1, max_size=4), st.sampled_from(["yaml", "yml", "verify", "json"]))
def test_block_ids_of_a_document_agree_with_its_data(bodies: list[str], lang: str) -> None:
    # Marked as data (`udm`): unmarked blocks without a UDM ID are examples, which define nothing.
    text = "# Doc\n\n" + "".join(f"## S{i}\n\n```{lang} udm\n{body}```\n\n" for i, body in enumerate(bodies))
    doc = parse_document(text, "d.md")
    for b in doc.blocks:
        assert block_ids(b) == _from_data_lang(b.lang, b.text)
    # The section IDs came from the same (cheap) IDs; a fresh parse that reads data first agrees.
    again = parse_document(text, "d.md")
    for b in again.blocks:
        assert b.data == b.data  # parse now
    assert [s.ids for s in again.sections] == [s.ids for s in doc.sections]
    assert again.errors == doc.errors == [b.error for b in doc.blocks if b.error]


def _from_data_lang(lang: str, text: str) -> list[str]:
    data, _error = parse_data(lang, text, "", 1)
    out: list[str] = []
    collect_ids(data, out)
    return out


def test_task_blocks_take_the_cheap_path() -> None:
    text = (
        'id: TASK-P1-M1.1-T040\ntitle: "Task number 40"\nstatus: todo   # updated by the update flow\n'
        "depends_on:\n  - TASK-P1-M1.1-T001\n"
    )
    assert simple_yaml_ids(text, DEFINING_KEYS) == ["TASK-P1-M1.1-T040"]
    assert simple_yaml_ids("mode_id: ROO-MODE-X\ntool_id: 'fs'\nid: \"A-1\"\n", DEFINING_KEYS) == [
        "A-1",
        "ROO-MODE-X",
        "fs",
    ]
    assert simple_yaml_ids("id: yes\n", DEFINING_KEYS) is None  # a boolean: the parser decides
    assert simple_yaml_ids("meta:\n  id: X-1\n", DEFINING_KEYS) is None  # nested: parsed


def test_block_data_is_parsed_on_first_use_only() -> None:
    text = "# A\n\n```yaml udm\nid: A-1\n```\n\n```yaml udm\nkey: [unclosed\n```\n"
    doc = parse_document(text, "a.md")
    assert doc.sections[0].ids == ("A-1",)
    assert all("parsed" not in b._lazy for b in doc.blocks)  # the IDs needed no parse
    assert doc.errors and doc.errors[0].startswith("a.md:8: invalid YAML")
    assert doc.blocks[0].data == {"id": "A-1"} and doc.blocks[1].data is None
