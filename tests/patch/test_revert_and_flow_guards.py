"""The update flow's report when its rollback revert fails, its diff artifact, the editor's action spellings."""

from __future__ import annotations

import pytest

from udm.config import Settings
from udm.patch import PatchResult, load_record, parse_patch


def test_diff_artifact_fences_any_backtick_run_and_escapes_the_description() -> None:
    from markdown_it import MarkdownIt

    from flows.update_artifacts import diff_markdown as _diff_markdown

    diff = "--- a/x.md\n+++ b/x.md\n@@ -1,2 +1,4 @@\n+````yaml\n+k: ```` `` `\n+````\n # end\n"
    description = "# not a heading\n```\n<b>raw</b> *x* [l](u)"
    patch = parse_patch(
        {
            "id": "fence-test",
            "description": description,
            "author": "a_b*c",
            "operations": [{"op": "replace_text", "file": "x.md", "old": "a", "new": "b"}],
        }
    )
    plan = PatchResult(patch_id="fence-test", status="planned", diff=diff)
    tokens = MarkdownIt("commonmark").parse(_diff_markdown(plan, patch))
    fences = [t for t in tokens if t.type == "fence"]
    assert len(fences) == 1 and fences[0].content == diff and fences[0].info == "diff"
    assert [t.tag for t in tokens if t.type == "heading_open"] == ["h1", "h2", "h2"]
    assert not [t for t in tokens if t.type in ("html_block", "html_inline")]
    inline = [t for t in tokens if t.type == "inline"]
    # Rendered, the description reads as its text on one line: no heading, fence, tag, emphasis or link.
    shown = inline[1]
    assert [c.type for c in shown.children or []] == ["text"]
    assert shown.children is not None and shown.children[0].content == " ".join(description.split())
    author = inline[2].children or []
    assert author and author[0].content.startswith("Author: a_b*c ·")


@pytest.mark.prefect
def test_failed_revert_after_a_failed_step_is_reported_as_an_error(
    prefect_server: None, small: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    import flows.udm_update as mod

    config = small.udm_root / "config.md"

    def reindex_after_an_edit(settings: Settings, paths: list[str]) -> bool:
        # Someone edits the patched line before the step fails, so the revert must refuse.
        config.write_text(config.read_text(encoding="utf-8").replace("timeout: 20", "timeout: 99"))
        raise RuntimeError("index exploded")

    monkeypatch.setattr(mod, "_reindex", reindex_after_an_edit)
    ops = [{"op": "set_yaml_key", "file": "config.md", "section": "HTTP", "key": "http.timeout", "value": 20}]
    patch = parse_patch({"id": "flow-revert-fails", "description": "t", "operations": ops})
    result = mod.run_update(patch, small, policy="full_auto")
    assert result.status == "error", result
    assert result.message.startswith("committed, revert failed: cannot revert flow-revert-fails"), result
    assert "index exploded" in result.message
    assert result.patch is not None and result.patch.committed
    assert "timeout: 99" in config.read_text(encoding="utf-8")
    assert load_record(small, "flow-revert-fails")["reverted_by"] is None


@pytest.mark.prefect
def test_revert_that_raises_is_reported_as_an_error(
    prefect_server: None, small: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    import flows.udm_update as mod

    def broken_reindex(settings: Settings, paths: list[str]) -> bool:
        raise RuntimeError("index exploded")

    def broken_revert(patch_id: str, settings: Settings) -> PatchResult:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(mod, "_reindex", broken_reindex)
    monkeypatch.setattr(mod, "revert_patch", broken_revert)
    ops = [{"op": "set_yaml_key", "file": "config.md", "section": "HTTP", "key": "http.timeout", "value": 30}]
    patch = parse_patch({"id": "flow-revert-raises", "description": "t", "operations": ops})
    result = mod.run_update(patch, small, policy="full_auto")
    assert result.status == "error", result
    assert "committed, revert failed: OSError" in result.message and "No space left" in result.message
    assert "timeout: 30" in (small.udm_root / "config.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("given", "action"),
    [
        ("replaceSection", "replace_section"),
        ("REPLACE_SECTION", "replace_section"),
        ("replace_section", "replace_section"),
        ("getSection", "get_section"),
        ("GET_SECTION", "get_section"),
    ],
)
def test_markdown_editor_accepts_camel_snake_and_upper_case_actions(given: str, action: str) -> None:
    from tasks.markdown_editor import MarkdownEditorInput

    data = MarkdownEditorInput.model_validate(
        {"markdownContent": "# A\n\nx\n", "action": given, "sectionHeader": "A", "newSectionContent": "y"}
    )
    assert data.action.value == action
