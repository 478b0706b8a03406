"""Committed patches as git commits, in real repositories: trailers, reverts, dirty files, branches."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from udm.config import Settings, load_settings
from udm.patch import apply_patch, parse_patch, revert_patch

from .conftest import make_root

EDIT = {"op": "set_yaml_key", "file": "config.md", "section": "HTTP", "key": "http.timeout", "value": 20}
REVIEW = {
    "policy": "ask_always",
    "decision": "approved",
    "reviewer": "ann",
    "comment": "fine",
    "decided_at": "2026-11-24T22:00:00+00:00",
    "flow_run_id": "0b7c",
    "flow_run_url": "http://127.0.0.1:4200/runs/flow-run/0b7c",
}


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` with a fixed identity; its stdout."""
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=Test", "-c", "user.email=test@example.org", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The small UDM inside a fresh git repository with one commit; git reads no user config."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-global-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Engine")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "engine@example.org")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Engine")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "engine@example.org")
    settings = make_root(tmp_path)
    (tmp_path / ".gitignore").write_text("state/\nlogs/\n")
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "the manual")
    return settings


def _patch(
    pid: str, *ops: dict[str, Any], description: str = "Raise the HTTP timeout\n\nSlow mirrors."
) -> Any:
    return parse_patch(
        {"id": pid, "description": description, "author": "ann", "operations": list(ops or [EDIT])}
    )


def test_a_committed_patch_is_one_commit_with_trailers(repo: Settings) -> None:
    top = repo.project_root
    before = git(top, "rev-parse", "HEAD").strip()
    add = {"op": "append_to_section", "file": "roadmap.md", "section": "Phase 2", "content": "Reviewed."}
    result = apply_patch(_patch("git-one", EDIT, add), repo, review=REVIEW)
    assert result.status == "committed" and result.git is not None, result
    head = git(top, "rev-parse", "HEAD").strip()
    assert result.git["commit"] == head and result.git["branch"] == "main" and result.git["error"] is None
    assert git(top, "rev-parse", "HEAD~1").strip() == before
    message = git(top, "log", "-1", "--format=%B")
    assert message.startswith("Raise the HTTP timeout\n\nSlow mirrors.\n\n")
    trailers = git(top, "log", "-1", "--format=%(trailers:only,unfold)").strip().splitlines()
    assert trailers == [
        "Patch-Id: git-one",
        "Reviewed-by: ann",
        "Flow-Run: http://127.0.0.1:4200/runs/flow-run/0b7c",
    ]
    changed = git(top, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(changed) == ["docs/udm/config.md", "docs/udm/roadmap.md"]
    assert git(top, "status", "--porcelain") == ""

    undo = revert_patch("git-one", repo)
    assert undo.status == "committed" and undo.git is not None and undo.git["commit"], undo
    assert git(top, "log", "-1", "--format=%s").strip() == "Revert patch git-one"
    trailers = git(top, "log", "-1", "--format=%(trailers:only,unfold)").strip().splitlines()
    assert trailers == [f"Patch-Id: {undo.patch_id}", "Reverts: git-one"]
    # The revert commit restores the first commit's files exactly.
    assert git(top, "diff", before, "HEAD", "--", "docs/udm") == ""


def test_a_dirty_touched_file_is_a_conflict_and_is_never_overwritten(repo: Settings) -> None:
    top = repo.project_root
    config = repo.udm_root / "config.md"
    mine = config.read_text(encoding="utf-8") + "\nMy unsaved note.\n"
    config.write_text(mine, encoding="utf-8")
    head = git(top, "rev-parse", "HEAD").strip()
    plan = apply_patch(_patch("git-dirty"), repo, dry_run=True)
    assert plan.status == "conflict" and "docs/udm/config.md" in (plan.error or ""), plan
    result = apply_patch(_patch("git-dirty"), repo)
    assert result.status == "conflict", result
    assert "uncommitted changes" in (result.error or "") and "docs/udm/config.md (M)" in (result.error or "")
    assert config.read_text(encoding="utf-8") == mine
    assert git(top, "rev-parse", "HEAD").strip() == head
    assert not (repo.state_path / "patches" / "git-dirty.json").exists()


def test_other_uncommitted_work_stays_out_of_the_commit(repo: Settings) -> None:
    top = repo.project_root
    roadmap = repo.udm_root / "roadmap.md"
    roadmap.write_text(roadmap.read_text(encoding="utf-8") + "\nstaged work\n", encoding="utf-8")
    git(top, "add", "docs/udm/roadmap.md")
    (top / "notes.txt").write_text("scratch\n")
    result = apply_patch(_patch("git-other"), repo)
    assert result.status == "committed" and result.git and result.git["commit"], result
    assert git(top, "show", "--name-only", "--format=", "HEAD").split() == ["docs/udm/config.md"]
    status = git(top, "status", "--porcelain").splitlines()
    assert sorted(status) == ["?? notes.txt", "M  docs/udm/roadmap.md"]


def test_branch_per_patch_and_the_off_switch(repo: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    top = repo.project_root
    main_head = git(top, "rev-parse", "main").strip()
    monkeypatch.setenv("UDM_GIT_BRANCH_PER_PATCH", "true")
    branched = load_settings(cwd=top)
    result = apply_patch(_patch("Git.Branch_1"), branched)
    assert result.status == "committed" and result.git is not None, result
    assert result.git["branch"] == "udm/patch-Git.Branch_1"
    assert git(top, "rev-parse", "main").strip() == main_head  # the team's branch is untouched
    assert git(top, "rev-parse", "udm/patch-Git.Branch_1").strip() == result.git["commit"]
    assert git(top, "rev-parse", "udm/patch-Git.Branch_1~1").strip() == main_head

    monkeypatch.setenv("UDM_GIT_BRANCH_PER_PATCH", "false")
    monkeypatch.setenv("UDM_GIT_COMMIT", "false")
    off = load_settings(cwd=top)
    head = git(top, "rev-parse", "HEAD").strip()
    edit = {**EDIT, "value": 30}
    plain = apply_patch(_patch("git-off", edit), off)
    assert plain.status == "committed" and plain.git is None
    assert git(top, "rev-parse", "HEAD").strip() == head
    assert git(top, "status", "--porcelain").strip() == "M docs/udm/config.md"


def test_outside_a_repository_nothing_is_tried(tmp_path: Path) -> None:
    settings = make_root(tmp_path)
    result = apply_patch(_patch("no-repo"), settings)
    assert result.status == "committed" and result.git is None


def test_a_commit_message_cannot_forge_trailers() -> None:
    from udm.patch.gitrepo import branch_name, commit_message

    record = {"id": "p", "description": "", "review": {**REVIEW, "reviewer": "ann\nReviewed-by: mallory"}}
    message = commit_message(record)
    assert message.splitlines()[0] == "udm patch p"
    assert "Reviewed-by: ann Reviewed-by: mallory" in message and "\nReviewed-by: mallory" not in message
    assert branch_name("..x.lock") == "udm/patch-x-lock" and branch_name("-") == "udm/patch-patch"


@pytest.mark.prefect
def test_the_update_flow_commits_with_the_reviewer(
    prefect_server: None, repo: Settings, reviewer: Any
) -> None:
    from flows.udm_update import run_update

    thread, seen = reviewer({"approve": True, "reviewer": "Ann Example", "comment": "ok"})
    result = run_update(_patch("git-flow"), repo, policy="ask_always", poll_interval_s=1)
    thread.join(5)
    assert result.status == "committed" and result.patch is not None and result.patch.git, result
    trailers = git(repo.project_root, "log", "-1", "--format=%(trailers:only,unfold)").strip().splitlines()
    assert trailers[:2] == ["Patch-Id: git-flow", "Reviewed-by: Ann Example"]
    assert trailers[2].startswith("Flow-Run: ") and str(seen["run_id"]) in trailers[2]


def test_a_manual_in_an_ignored_folder_is_not_committed(repo: Settings) -> None:
    top = repo.project_root
    (top / ".gitignore").write_text("state/\nlogs/\ndocs/\n")
    git(top, "rm", "-r", "-q", "--cached", "docs")
    git(top, "commit", "-q", "-am", "the manual is scratch here")
    head = git(top, "rev-parse", "HEAD").strip()
    result = apply_patch(_patch("git-ignored"), repo)
    assert result.status == "committed" and result.git is None, result
    assert git(top, "rev-parse", "HEAD").strip() == head
