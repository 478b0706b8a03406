"""A `.git` folder below an allowed root is code: the tools and patches may not write or plant one.

git runs what a repository's config names (`core.fsmonitor` on every `git status`, hooks, filters),
and the engine runs `git status` and `git commit` on every committed patch (`git_commit`, on by
default) in the first repository found above the manual. On `main` before this, five approved file
tool calls (or one patch) built `docs/udm/.git` with `core.fsmonitor = "touch PWNED"`, and the next
patch, however harmless, ran the command. With the manual's repository at the UDM root itself, one
`writeFile` of `.git/config` did the same.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tasks.base import ToolContext, always_approve, call_tool
from tasks.filesystem import FileSystemAccessTool
from udm.config import Settings, load_settings
from udm.patch import apply_patch, parse_patch

TOOL = FileSystemAccessTool()
EDIT = {"op": "append_to_section", "file": "config.md", "section": "HTTP", "content": "Reviewed."}


def make_root(base: Path) -> Settings:
    """A project with docs/udm holding two pages, plus state/ and logs/."""
    root = base / "docs" / "udm"
    root.mkdir(parents=True)
    (root / "roadmap.md").write_text("# Roadmap\n\nText.\n", encoding="utf-8")
    (root / "config.md").write_text("# Config\n\n## HTTP\n\nTimeouts.\n", encoding="utf-8")
    for sub in ("state", "logs"):
        (base / sub).mkdir()
    return load_settings(cwd=base)


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The small UDM in a git repository at the project root; git reads no user config."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-global-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for var in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{var}_NAME", "Engine")
        monkeypatch.setenv(f"GIT_{var}_EMAIL", "engine@example.org")
    settings = make_root(tmp_path)
    (tmp_path / ".gitignore").write_text("state/\nlogs/\n")
    _git(tmp_path, "init", "-q", "-b", "main")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "the manual")
    return settings


def _call(settings: Settings, **raw: Any) -> dict[str, Any]:
    ctx = ToolContext(settings=settings.model_copy(update={"allow_delete": True}), approver=always_approve)
    env = call_tool(TOOL, raw, ctx).envelope
    assert env.data is not None, env
    return env.data


def _config(marker: Path) -> str:
    return f'[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "touch {marker}"\n'


def _next_patch_runs_nothing(settings: Settings, marker: Path) -> None:
    patch = parse_patch({"id": "harmless", "description": "d", "author": "ann", "operations": [EDIT]})
    result = apply_patch(patch, settings, review=None)
    assert not marker.exists(), "git ran a command from a configuration a tool wrote"
    assert result.status == "committed", result


@pytest.mark.parametrize("spelling", [".git", ".GIT", "sub/.git", "sub/../.Git"])
def test_the_file_tool_cannot_build_a_repository_in_the_manual(project: Settings, spelling: str) -> None:
    marker = project.project_root / "PWNED"
    git_dir = f"docs/udm/{spelling}"
    calls = [
        {"action": "createDirectory", "filePath": git_dir},
        {"action": "writeFile", "filePath": f"{git_dir}/HEAD", "content": "ref: refs/heads/main\n"},
        {"action": "writeFile", "filePath": f"{git_dir}/config", "content": _config(marker)},
        {"action": "createDirectory", "filePath": f"{git_dir}/objects"},
        {"action": "createDirectory", "filePath": f"{git_dir}/refs"},
        {"action": "writeFile", "filePath": git_dir, "content": "gitdir: /tmp\n"},
    ]
    for raw in calls:
        out = _call(project, **raw)
        assert out["status"] == "ERROR_PERMISSION_DENIED", (raw, out)
        assert ".git" in str(out["errorDetails"]), out
    assert not [p for p in project.udm_root.rglob("*") if p.name.casefold() == ".git"]
    _next_patch_runs_nothing(project, marker)


def test_a_repository_at_the_udm_root_keeps_its_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-global-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    settings = make_root(tmp_path)
    _git(settings.udm_root, "init", "-q", "-b", "main")
    config = settings.udm_root / ".git" / "config"
    before = config.read_bytes()
    # A symlink planted in the manual (a checked-out repository may hold one) leads there too.
    os.symlink(".git", settings.udm_root / "notes")
    marker = tmp_path / "PWNED"
    for path in ("docs/udm/.git/config", "docs/udm/notes/config", "docs/udm/.git/hooks/pre-commit"):
        out = _call(settings, action="writeFile", filePath=path, content=_config(marker))
        assert out["status"] == "ERROR_PERMISSION_DENIED", (path, out)
    for raw in (
        {"action": "readFile", "filePath": "docs/udm/.git/config"},
        {"action": "deleteFile", "filePath": "docs/udm/.git/config"},
        {"action": "moveFile", "filePath": "docs/udm/.git", "destinationPath": "scratch/git"},
        {"action": "moveFile", "filePath": "docs/udm/roadmap.md", "destinationPath": "docs/udm/.git/config"},
    ):
        out = _call(settings, **raw)
        assert out["status"] == "ERROR_PERMISSION_DENIED", (raw, out)
    assert config.read_bytes() == before


@pytest.mark.parametrize(
    "op",
    [
        {"op": "create_file", "file": ".git/config", "content": "[core]\n\tfsmonitor = touch x\n"},
        {"op": "create_file", "file": "a/.GIT/HEAD", "content": "ref: refs/heads/main\n"},
        {"op": "rename_file", "file": "roadmap.md", "to": ".git"},
    ],
)
def test_a_patch_cannot_write_a_git_folder(project: Settings, op: dict[str, Any]) -> None:
    patch = parse_patch({"id": "plant", "description": "d", "author": "ann", "operations": [op]})
    result = apply_patch(patch, project, review=None)
    assert result.status != "committed", result
    assert ".git" in str(result.error), result
    assert not [p for p in project.udm_root.rglob("*") if p.name.casefold() == ".git"]


def test_the_browser_cannot_open_a_git_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A repository's config may hold a token in a remote URL; readFile refuses it, and so does file:.
    from tasks.browser.guard import Guard
    from tasks.browser.session import ActionError, _file_roots, normalize_url
    from udm.net import AllowList

    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-global-gitconfig"))
    settings = make_root(tmp_path)
    _git(settings.udm_root, "init", "-q", "-b", "main")
    config = settings.udm_root / ".git" / "config"
    for url in (config.as_uri(), (settings.udm_root / ".GIT" / "config").as_uri()):
        with pytest.raises(ActionError) as info:
            normalize_url(url, settings)
        assert info.value.status == "ERROR_PATH_NOT_ALLOWED" and ".git" in info.value.message
    guard = Guard(AllowList.parse([]))
    guard.set_allow([], *_file_roots(settings))
    assert "git folder" in (guard.file_verdict(config.as_uri()) or "")
    assert guard.file_verdict((settings.udm_root / "roadmap.md").as_uri()) is None


def test_a_folder_that_looks_like_a_bare_repository_is_not_used(project: Settings) -> None:
    # Git's own discovery takes a folder holding HEAD, config, objects/ and refs/ for a repository: four
    # names the sandbox cannot refuse in a manual. The engine names the repository it found instead.
    marker = project.project_root / "PWNED"
    config = _config(marker).replace("bare = false\n", f"bare = false\n\tworktree = {project.udm_root}\n")
    for raw in (
        {"action": "writeFile", "filePath": "docs/udm/HEAD", "content": "ref: refs/heads/main\n"},
        {"action": "writeFile", "filePath": "docs/udm/config", "content": config},
        {"action": "createDirectory", "filePath": "docs/udm/objects"},
        {"action": "createDirectory", "filePath": "docs/udm/refs"},
    ):
        assert _call(project, **raw)["status"] == "SUCCESS"
    patch = parse_patch({"id": "harmless", "description": "d", "author": "ann", "operations": [EDIT]})
    result = apply_patch(patch, project, review=None)
    assert not marker.exists(), "git ran a command from a configuration a tool wrote"
    # The planted files are untracked files of the real repository, not a repository of their own.
    assert result.status == "committed" and result.git and result.git["commit"], result
    assert result.git["files"] == ["docs/udm/config.md"], result
