"""What a patch's plan promises at its commit, and what `udm fmt` walks (udm/patch).

Attacks a writer racing a reviewed plan could make, or a caller of the reformat: change the destination
of a planned `move_section` (its `to` section) or create the destination of a planned `rename_file`
between plan and commit: only each operation's target was re-checked, so the commit put the section
somewhere the reviewed diff did not show, or failed as a bad instruction rather than as a conflict;
name the manual as `./` or `docs/..` in `format_paths` (refused as "leaves the UDM root"); reformat a
whole manual holding `.git/*.md` or a state folder with Markdown inside the root (refused as a whole,
since the walk met them). Each case asserts the conflict, or what was formatted, and that nothing in
`.git` or the state folder changed.
"""

from __future__ import annotations

from typing import Any

from tasks.base import ToolContext, always_approve, call_tool
from udm.config import Settings
from udm.patch import Patch, apply_patch, format_files

PAGE = "# Guide\n\n## A\n\nAlpha.\n\n## B\n\nBravo.\n\n## C\n\nCharlie.\n"


def _planned(settings: Settings, raw: dict[str, Any]) -> Patch:
    plan = apply_patch(Patch.model_validate(raw), settings, dry_run=True)
    assert plan.status == "planned", plan
    return Patch.model_validate(plan.planned_patch)


def test_a_move_commits_only_where_the_plan_put_it(settings: Settings) -> None:
    page = settings.udm_root / "moves.md"
    page.write_text(PAGE, encoding="utf-8")
    move = {
        "id": "move-c",
        "operations": [{"op": "move_section", "file": "moves.md", "section": "C", "to": "A"}],
    }
    planned = _planned(settings, move)
    # Someone adds a subsection under A meanwhile: 'after A' now lands below it, not where the plan showed.
    changed = PAGE.replace("Alpha.\n", "Alpha.\n\n### A1\n\nNew.\n")
    page.write_text(changed, encoding="utf-8")
    res = apply_patch(planned, settings)
    # Before: committed, C moved below the new subsection (a diff nobody reviewed).
    assert res.status == "conflict", res
    assert "destination 'Guide > A'" in (res.error or ""), res.error
    assert page.read_text(encoding="utf-8") == changed
    # Unchanged destination: the plan commits as shown.
    again = _planned(settings, {**move, "id": "move-c2"})
    assert apply_patch(again, settings).status == "committed"


def test_a_rename_whose_destination_appeared_is_a_conflict(settings: Settings) -> None:
    (settings.udm_root / "old.md").write_text("# Old\n\nText.\n", encoding="utf-8")
    planned = _planned(
        settings, {"id": "ren", "operations": [{"op": "rename_file", "file": "old.md", "to": "new.md"}]}
    )
    (settings.udm_root / "new.md").write_text("# Someone else's\n", encoding="utf-8")
    res = apply_patch(planned, settings)
    # Before: status 'invalid' ("new.md exists"), as if the reviewed patch had been a bad instruction.
    assert res.status == "conflict", res
    assert "its destination new.md of old.md changed since the patch was planned" in (res.error or ""), (
        res.error
    )
    assert (settings.udm_root / "new.md").read_text(encoding="utf-8") == "# Someone else's\n"
    assert (settings.udm_root / "old.md").exists()


def _fmt(settings: Settings, paths: list[str]) -> Any:
    out = call_tool(
        "udmUpdaterTool",
        {"format_paths": paths, "dry_run": True},
        ToolContext(settings=settings, approver=always_approve),
    )
    return out.envelope.data


def test_the_root_spelled_with_dots_is_the_manual(settings: Settings) -> None:
    whole = _fmt(settings, ["."])
    assert whole["status"] in ("SUCCESS", "NO_CHANGES"), whole
    for spelling in ("./", "./.", " ./ ", "appendices/..", "appendices/./.."):
        data = _fmt(settings, [spelling])
        # Before: ERROR_INVALID_UPDATE "path './' leaves the UDM root".
        assert data["status"] == whole["status"], (spelling, data)
        assert data["unified_diff"] == whole["unified_diff"], spelling
    one = next(p for p in sorted((settings.udm_root / "appendices").glob("*.md")))
    dotted = _fmt(settings, [f"appendices/./{one.name}"])
    assert dotted["status"] in ("SUCCESS", "NO_CHANGES"), dotted


def test_a_whole_manual_reformat_skips_git_and_state(settings: Settings) -> None:
    root = settings.udm_root
    (root / "messy.md").write_text("#  Messy\n\n*  item\n", encoding="utf-8")
    (root / ".git").mkdir()
    (root / ".git" / "notes.md").write_text("*  in git\n", encoding="utf-8")
    inside = settings.model_copy(update={"state_dir": root / "state-inside"})
    (inside.state_path / "patches").mkdir(parents=True)
    (inside.state_path / "patches" / "notes.md").write_text("*  state\n", encoding="utf-8")
    res = format_files(inside, None)
    # Before: status 'invalid', refused as a whole (the walk met .git/notes.md and the state's file).
    assert res.status == "committed", res
    assert "messy.md" in [f.path for f in res.files]
    assert not any(f.path.startswith((".git", "state-inside")) for f in res.files)
    assert (root / ".git" / "notes.md").read_text(encoding="utf-8") == "*  in git\n"
    assert (inside.state_path / "patches" / "notes.md").read_text(encoding="utf-8") == "*  state\n"
