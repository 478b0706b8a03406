"""Edits keep the author's style: YAML flow collections stay flow; list items take the section's marker."""

from __future__ import annotations

from udm.structured import edit_text, get_value

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
