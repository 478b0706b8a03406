"""Every patch operation on a small UDM: what changes, and that nothing else does."""

from __future__ import annotations

import json
from typing import Any

import pytest

from udm.config import Settings
from udm.patch import (
    PatchResult,
    apply_patch,
    list_records,
    load_record,
    parse_patch,
    patch_json_schema,
    revert_patch,
)
from udm.patch.splice import changed_line_count


def apply(settings: Settings, *ops: dict[str, Any], dry_run: bool = False) -> PatchResult:
    return apply_patch(
        parse_patch({"description": "test", "operations": list(ops)}), settings, dry_run=dry_run
    )


def read(settings: Settings, name: str = "roadmap.md") -> str:
    return (settings.udm_root / name).read_text(encoding="utf-8")


def test_set_yaml_key_in_block_is_a_one_line_change_keeping_comments(small: Settings) -> None:
    before = read(small)
    res = apply(
        small,
        {
            "op": "set_yaml_key",
            "file": "roadmap.md",
            "section": "TASK-P0-M0.1-T001",
            "key": "status",
            "value": "done",
        },
    )
    assert res.status == "committed", res.error
    after = read(small)
    assert "status: done   # keep this comment\n" in after
    assert changed_line_count(before, after) == (1, 1)
    body = res.diff.splitlines()[2:]
    assert [ln for ln in body if ln[:1] in "+-"] == [
        "-status: todo   # keep this comment",
        "+status: done   # keep this comment",
    ]


def test_set_json_key_and_append_item_keep_indentation(small: Settings) -> None:
    res = apply(
        small,
        {
            "op": "set_json_key",
            "file": "roadmap.md",
            "section": "TASK-2: Second task",
            "key": "status",
            "value": "done",
        },
        {
            "op": "append_json_item",
            "file": "roadmap.md",
            "section": "TASK-2: Second task",
            "key": "tags",
            "value": "c",
        },
    )
    assert res.status == "committed", res.error
    text = read(small)
    block = text.split("```json\n", 1)[1].split("```", 1)[0]
    assert json.loads(block) == {"id": "TASK-P0-M0.1-T002", "status": "done", "tags": ["a", "b", "c"]}
    assert '  "status": "done",\n' in block


def test_append_prepend_replace_and_rename(small: Settings) -> None:
    res = apply(
        small,
        {
            "op": "append_to_section",
            "file": "roadmap.md",
            "section": "TASK-2: Second task",
            "content": "Closed after review.",
        },
        {"op": "prepend_to_section", "file": "roadmap.md", "section": "Phase 2", "content": "*Note*  first."},
        {"op": "rename_heading", "file": "roadmap.md", "section": "Phase 2", "to": "Phase two"},
    )
    assert res.status == "committed", res.error
    text = read(small)
    assert "}\n```\n\nClosed after review.\n\n## Phase two\n\n*Note* first.\n\nClosing words.\n" in text


def test_replace_section_body_keeps_heading_and_blank_lines(small: Settings) -> None:
    res = apply(
        small, {"op": "replace_section", "file": "roadmap.md", "section": "Phase 2", "content": "New words."}
    )
    assert res.status == "committed", res.error
    assert read(small).endswith("## Phase 2\n\nNew words.\n")


def test_insert_delete_and_move_sections(small: Settings) -> None:
    res = apply(
        small,
        {
            "op": "insert_section",
            "file": "roadmap.md",
            "section": "TASK-2: Second task",
            "position": "after",
            "heading": "TASK-3: Third",
            "content": "Third body.",
        },
        {
            "op": "move_section",
            "file": "roadmap.md",
            "section": "Phase 2",
            "to": "Phase 1",
            "position": "before",
        },
        {"op": "delete_section", "file": "roadmap.md", "section": "TASK-1: First task"},
    )
    assert res.status == "committed", res.error
    text = read(small)
    assert text.index("## Phase 2") < text.index("## Phase 1")
    assert "### TASK-3: Third\n\nThird body.\n" in text
    assert "TASK-1: First task" not in text
    assert res.destructive


def test_replace_text_counts_and_front_matter(small: Settings) -> None:
    res = apply(
        small,
        {"op": "replace_text", "file": "config.md", "old": "timeout: 10", "new": "timeout: 20", "count": 1},
        {"op": "set_front_matter", "file": "config.md", "key": "owner", "value": "ann"},
    )
    assert res.status == "committed", res.error
    assert read(small, "config.md").startswith("---\nowner: ann\n---\n\n# Config\n")
    bad = apply(
        small,
        {"op": "replace_text", "file": "roadmap.md", "old": "TASK-P0-M0.1-T001", "new": "X", "count": 1},
    )
    assert bad.status == "invalid" and "occurs 2 time(s)" in (bad.error or "")


def test_replace_code_block_and_file_operations(small: Settings) -> None:
    res = apply(
        small,
        {
            "op": "replace_code_block",
            "file": "config.md",
            "section": "HTTP",
            "content": "http:\n  timeout: 30\n",
        },
        {"op": "create_file", "file": "notes/new.md", "content": "# New\n\nText.\n"},
        {"op": "rename_file", "file": "notes/new.md", "to": "notes/renamed.md"},
    )
    assert res.status == "committed", res.error
    assert "```yaml udm\nhttp:\n  timeout: 30\n```\n" in read(small, "config.md")
    assert read(small, "notes/renamed.md") == "# New\n\nText.\n"
    assert not (small.udm_root / "notes" / "new.md").exists()


def test_yaml_file_edits_detect_indentation(small: Settings) -> None:
    (small.udm_root / "modes.yaml").write_text(
        "modes:\n    - id: A\n      on: true  # c\nname: 'x'\n", encoding="utf-8"
    )
    res = apply(
        small,
        {"op": "set_yaml_key", "file": "modes.yaml", "key": "modes[0].on", "value": False},
        {"op": "append_yaml_item", "file": "modes.yaml", "key": "modes", "value": {"id": "B"}},
        {"op": "set_yaml_key", "file": "modes.yaml", "key": "name", "value": "y"},
    )
    assert res.status == "committed", res.error
    # ruamel keeps the comment in its column, so the longer value eats one space before it.
    assert read(small, "modes.yaml") == "modes:\n    - id: A\n      on: false # c\n    - id: B\nname: 'y'\n"


def test_validation_refuses_broken_links_and_duplicate_ids(small: Settings) -> None:
    before = read(small)
    res = apply(small, {"op": "rename_heading", "file": "roadmap.md", "section": "Phase 1", "to": "Stage 1"})
    assert res.status == "invalid" and "link to #phase-1 would break" in (res.error or "")
    dup = apply(
        small,
        {
            "op": "append_to_section",
            "file": "config.md",
            "section": "HTTP",
            "content": "- **ID:** `TASK-P0-M0.1-T001`",
        },
    )
    assert dup.status == "invalid" and "already defined in roadmap.md" in (dup.error or "")
    assert read(small) == before


def test_preconditions_let_unrelated_edits_through_and_stop_overlapping_ones(small: Settings) -> None:
    op = {"op": "append_to_section", "file": "roadmap.md", "section": "Phase 2", "content": "Mine."}
    plan = apply(small, op, dry_run=True)
    assert plan.planned_patch is not None
    unrelated = apply(
        small,
        {
            "op": "append_to_section",
            "file": "roadmap.md",
            "section": "TASK-2: Second task",
            "content": "Other.",
        },
    )
    assert unrelated.status == "committed"
    ok = apply_patch(parse_patch(plan.planned_patch), small)
    assert ok.status == "committed", ok.error
    plan2 = apply(small, {**op, "content": "Again."}, dry_run=True)
    apply(
        small, {"op": "append_to_section", "file": "roadmap.md", "section": "Phase 2", "content": "Theirs."}
    )
    assert plan2.planned_patch is not None
    conflict = apply_patch(parse_patch(plan2.planned_patch), small)
    assert conflict.status == "conflict"
    assert "section 'Roadmap > Phase 2'" in (conflict.error or "")


def test_records_and_revert_including_conflicting_revert(small: Settings) -> None:
    original = read(small)
    res = apply(
        small,
        {
            "op": "set_yaml_key",
            "file": "roadmap.md",
            "section": "TASK-P0-M0.1-T001",
            "key": "status",
            "value": "done",
        },
    )
    assert [r["id"] for r in list_records(small)] == [res.patch_id]
    assert load_record(small, res.patch_id)["diff"] == res.diff
    # An edit elsewhere does not block the revert (hunks are anchored by context).
    apply(small, {"op": "append_to_section", "file": "roadmap.md", "section": "Phase 2", "content": "More."})
    undone = revert_patch(res.patch_id, small)
    assert undone.status == "committed", undone.error
    assert read(small).replace("\nMore.\n", "") == original
    assert revert_patch(res.patch_id, small).status == "invalid"  # already reverted
    res2 = apply(
        small,
        {
            "op": "set_yaml_key",
            "file": "roadmap.md",
            "section": "TASK-P0-M0.1-T001",
            "key": "status",
            "value": "done",
        },
    )
    apply(
        small,
        {
            "op": "set_yaml_key",
            "file": "roadmap.md",
            "section": "TASK-P0-M0.1-T001",
            "key": "status",
            "value": "blocked",
        },
    )
    before = read(small)
    conflict = revert_patch(res2.patch_id, small)
    assert conflict.status == "conflict" and "roadmap.md changed since" in (conflict.error or "")
    assert read(small) == before


def test_schema_is_published_and_lists_every_operation() -> None:
    schema = patch_json_schema()
    text = json.dumps(schema)
    for op in ("replace_section", "set_yaml_key", "delete_file", "move_section", "set_front_matter"):
        assert f'"{op}"' in text
    assert schema["title"] == "UDM patch"


@pytest.mark.parametrize(
    ("op", "needle"),
    [
        (
            {"op": "append_to_section", "file": "roadmap.md", "section": "TASK-3", "content": "x"},
            "no section 'TASK-3'",
        ),
        (
            {
                "op": "set_yaml_key",
                "file": "roadmap.md",
                "section": "TASK-P0-M0.1-T001",
                "key": "deps.x",
                "value": 1,
            },
            "no key 'deps'",
        ),
    ],
)
def test_missing_targets_name_candidates(small: Settings, op: dict[str, Any], needle: str) -> None:
    res = apply(small, op)
    assert res.status == "invalid" and needle in (res.error or "")
    if op["op"] == "append_to_section":
        assert "candidates:" in (res.error or "") and "TASK-1: First task" in (res.error or "")
    else:
        assert "keys: id, title, status, depends_on" in (res.error or "")


def test_existing_front_matter_and_renamed_file_links(small: Settings) -> None:
    (small.udm_root / "fm.md").write_text(
        "---\ntitle: Old  # shown\ntags: [a]\n---\n\n# FM\n", encoding="utf-8"
    )
    res = apply(
        small,
        {"op": "set_front_matter", "file": "fm.md", "key": "title", "value": "New"},
        {"op": "set_front_matter", "file": "fm.md", "key": "tags", "delete": True},
    )
    assert res.status == "committed", res.error
    assert read(small, "fm.md") == "---\ntitle: New  # shown\n---\n\n# FM\n"
    # roadmap.md links to config.md#http: renaming config.md would break it.
    moved = apply(small, {"op": "rename_file", "file": "config.md", "to": "settings.md"})
    assert moved.status == "invalid" and "roadmap.md: link to config.md#http would break" in (
        moved.error or ""
    )
    assert (small.udm_root / "config.md").exists()


def test_insert_section_refuses_a_duplicate_sibling(small: Settings) -> None:
    op = {
        "op": "insert_section",
        "file": "roadmap.md",
        "section": "Phase 1",
        "position": "after",
        "heading": "Phase 2",
        "content": "x",
    }
    res = apply(small, op)
    assert res.status == "invalid" and "a section 'Roadmap > Phase 2' already exists (line" in (
        res.error or ""
    )
