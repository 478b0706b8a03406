"""Sections looked up before every block's IDs are worked out are the sections a full parse gives."""

from __future__ import annotations

import pickle
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from udm.errors import UdmError
from udm.markdown import find_section, parse_document

PIECES = st.sampled_from(
    [
        "# Top",
        "## TASK-P1-M1.1-T001: First",
        "## TASK-P1-M1.1-T002: Second",
        "### 2.5 Core Tools",
        "### 2.5 Core Tools",
        "## Setext title\n---",
        "Text naming TASK-P1-M1.1-T001 and COMP-001.",
        "- **ID:** `COMP-001`",
        "**ID:** COMP-002",
        "```yaml\nid: TASK-P1-M1.1-T003\nstatus: todo   # c\n```",
        "```yaml\nid: TASK-P1-M1.1-T001\n```",
        '```yaml\ntask_id: "T-\\x41"\n```',  # an escape: 'T-A' is not written as such
        "```yaml\nid: 'it''s'\n```",  # a doubled quote: "it's" is not written as such
        "```yaml\nmeta:\n  mode_id: ROO-MODE-X\n```",
        '```json\n{"tool_id": "fs\\u0041"}\n```',
        '```json\n{"id": "J-1"}\n```',
        "```yaml\nid: [unclosed\n```",
        "```python\nid = 'X-9'\n```",
        "Plain paragraph.",
        "",
    ]
)
IDENTS = st.sampled_from(
    [
        "TASK-P1-M1.1-T001",
        "TASK-P1-M1.1-T002",
        "TASK-P1-M1.1-T003",
        "COMP-001",
        "COMP-002",
        "T-A",
        "it's",
        "ROO-MODE-X",
        "fsA",
        "J-1",
        "X-9",
        "Top",
        "2.5 Core Tools",
        "## 2.5 Core Tools",
        "25-core-tools-1",
        "#setext-title",
        "core tools",
        "Top > Setext title",
        "2.5",
        "nothing here",
        "a b",
    ]
)


def _outcome(doc: Any, ident: str) -> tuple[Any, ...]:
    try:
        s = find_section(doc, ident)
    except UdmError as exc:
        return ("error", type(exc).__name__, str(exc), getattr(exc, "candidates", None))
    return ("ok", s)


@settings(max_examples=400, deadline=None)
@given(st.lists(PIECES, max_size=14), st.lists(IDENTS, min_size=1, max_size=4))
def test_lookups_before_and_after_the_full_build_agree(pieces: list[str], idents: list[str]) -> None:
    text = "\n\n".join(pieces) + "\n"
    lazy = parse_document(text, "d.md")
    full = parse_document(text, "d.md")
    sections = full.sections  # built now: every block's IDs, then the sections
    for ident in idents:
        assert _outcome(lazy, ident) == _outcome(full, ident)
        try:
            sec = find_section(full, ident)
        except UdmError:
            continue
        assert lazy.blocks_in(sec.index) == [b for b in full.blocks if b.section == sec.index]
    for k, s in enumerate(sections):
        assert lazy.section(k) == s
    # Building later reuses the sections already handed out, and gives the same list.
    assert lazy.sections == sections
    assert lazy.id_defs == full.id_defs
    assert lazy.blocks == full.blocks and lazy.errors == full.errors
    assert lazy.links == full.links and lazy.id_refs == full.id_refs


def test_a_lookup_by_id_does_not_read_every_block() -> None:
    text = "# Doc\n\n" + "".join(
        f"## T{k}\n\n```yaml\nid: TASK-P1-M1.1-T{k:03}\n```\n\n" for k in range(1, 30)
    )
    doc = parse_document(text, "d.md")
    sec = find_section(doc, "TASK-P1-M1.1-T007")
    assert sec.title == "T7" and sec.ids == ("TASK-P1-M1.1-T007",)
    looked = [b.index for b in doc.blocks if "ids" in b._lazy]
    assert looked == [6]  # only the block of the section that holds the ID
    assert doc.sections[sec.index] is sec


def test_a_lazy_document_pickles_and_builds_after() -> None:
    text = "# A\n\n```yaml udm\nid: A-1\n```\n\n## B [x](#a)\n"
    doc = pickle.loads(pickle.dumps(parse_document(text, "a.md")))
    assert [s.ids for s in doc.sections] == [("A-1",), ()]
    assert doc.sections[1].anchor == "b-x" and [link.target for link in doc.links] == ["#a"]
