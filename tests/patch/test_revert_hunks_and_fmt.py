"""Revert of hunks a few lines apart; `udm fmt` refuses non-Markdown paths and validates before committing."""

from __future__ import annotations

from typing import Any

import pytest

from udm.config import Settings
from udm.patch import PatchResult, apply_patch, format_files, load_record, parse_patch, revert_patch

from .conftest import snapshot


def apply(settings: Settings, *ops: dict[str, Any], patch_id: str) -> PatchResult:
    return apply_patch(
        parse_patch({"id": patch_id, "description": "test", "operations": list(ops)}), settings
    )


@pytest.mark.parametrize("gap", [1, 2, 3])
def test_revert_undoes_hunks_a_few_lines_apart(small: Settings, gap: int) -> None:
    # Two changed lines with `gap` untouched lines between them: each hunk's two context lines reach
    # into the other hunk when gap <= 2.
    doc = small.udm_root / "near.md"
    doc.write_text("# A\n\nfoo 1\n" + "keep\n" * gap + "foo 2\n\nend\n", encoding="utf-8")
    before = doc.read_bytes()
    res = apply(
        small,
        {"op": "replace_text", "file": "near.md", "old": "foo", "new": "bar", "count": 2},
        patch_id="near",
    )
    assert res.status == "committed", res.error
    undone = revert_patch("near", small)
    assert undone.status == "committed", undone.error
    assert doc.read_bytes() == before
    assert load_record(small, "near")["reverted_by"] == undone.patch_id


def test_revert_still_refuses_a_hunk_whose_lines_changed(small: Settings) -> None:
    doc = small.udm_root / "near.md"
    doc.write_text("# A\n\nfoo 1\nkeep\nfoo 2\n\nend\n", encoding="utf-8")
    apply(
        small, {"op": "replace_text", "file": "near.md", "old": "foo", "new": "bar", "count": 2}, patch_id="p"
    )
    doc.write_text("# A\n\nbar 1\nkeep\nbaz 2\n\nend\n", encoding="utf-8")
    res = revert_patch("p", small)
    # The first hunk's context already reaches the edited line 5.
    assert res.status == "conflict" and "near.md changed since: lines 3-3" in (res.error or ""), res.error
    assert doc.read_text(encoding="utf-8") == "# A\n\nbar 1\nkeep\nbaz 2\n\nend\n"


def test_fmt_refuses_yaml_and_json_paths_naming_them(small: Settings) -> None:
    (small.udm_root / "c.yaml").write_text("server:\n  host: a\n  paths:\n    - /a\n", encoding="utf-8")
    (small.udm_root / "c.json").write_text('{"a": [1, 2]}\n', encoding="utf-8")
    (small.udm_root / "messy.md").write_text("# Messy\n\n* a\n", encoding="utf-8")
    before = snapshot(small.udm_root)
    for dry_run in (True, False):
        res = format_files(small, ["messy.md", "c.yaml", "c.json"], dry_run=dry_run)
        assert res.status == "invalid" and not res.committed
        assert "Markdown files only" in (res.error or "") and "c.yaml, c.json" in (res.error or ""), res.error
    assert snapshot(small.udm_root) == before
    assert not list(small.state_path.glob("patches/*.json"))


def test_fmt_of_a_folder_skips_yaml_and_json(small: Settings) -> None:
    yaml_text = "server:\n  host: a\n  paths:\n    - /a\n"
    (small.udm_root / "c.yaml").write_text(yaml_text, encoding="utf-8")
    (small.udm_root / "messy.md").write_text("# Messy\n\n* a\n", encoding="utf-8")
    res = format_files(small, ["."])
    assert res.status == "committed", res.error
    assert {f.path for f in res.files} == {"messy.md"}
    assert (small.udm_root / "c.yaml").read_text(encoding="utf-8") == yaml_text


def test_fmt_validates_before_committing(small: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    import mdformat

    # A formatter that renames a heading: roadmap.md's own link to #phase-1 would break.
    monkeypatch.setattr(mdformat, "text", lambda text, **_: text.replace("## Phase 1\n", "## Phase One\n"))
    before = snapshot(small.udm_root)
    res = format_files(small, ["roadmap.md"])
    assert res.status == "invalid" and not res.committed, res
    assert any("phase-1" in p for p in res.problems), res.problems
    assert snapshot(small.udm_root) == before
    assert not list(small.state_path.glob("patches/*.json"))


def test_fmt_keeps_a_byte_order_mark_and_crlf_line_ends(small: Settings) -> None:
    doc = small.udm_root / "bom.md"
    doc.write_bytes("\ufeff# Bom\r\n\r\n* a\r\n* b\r\n".encode())
    res = format_files(small, ["bom.md"])
    assert res.status == "committed", res.error
    assert doc.read_bytes() == "\ufeff# Bom\r\n\r\n- a\r\n- b\r\n".encode()


def test_an_unusable_state_folder_is_an_error_status(small: Settings) -> None:
    import shutil

    shutil.rmtree(small.state_path, ignore_errors=True)
    small.state_path.write_text("a file where the state folder should be", encoding="utf-8")
    before = snapshot(small.udm_root)
    op = {"op": "append_to_section", "file": "roadmap.md", "section": "Phase 1", "content": "More."}
    res = apply(small, op, patch_id="state")
    assert res.status == "error" and "as a state folder: Not a directory" in (res.error or "")
    assert format_files(small, ["roadmap.md"]).status == "error"
    assert revert_patch("state", small).status == "error"
    assert snapshot(small.udm_root) == before
