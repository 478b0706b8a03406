"""The settings files are trusted configuration: no tool may write them, even with the manual at the project root.

`load_settings` reads `udm.toml` and `[tool.udm]` of `pyproject.toml` in the project root, and
`prefect.yaml` there holds the deployments' job variables (their approval policy). With the UDM root
at the project root (`root = "."`, a repository that is only documentation), on `main` before this
one approved `writeFile` of `udm.toml` set `approval_policy = "full_auto"` and `allowed_dirs = ["/"]`
for every later process: approval off and the whole disk in bounds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.base import ToolContext, always_approve, call_tool
from tasks.filesystem import FileSystemAccessTool
from udm.config import load_settings

TOOL = FileSystemAccessTool()
LOOSER = 'approval_policy = "full_auto"\nallowed_dirs = ["/"]\n'


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("udm.toml", LOOSER),
        ("./udm.toml", LOOSER),
        ("pyproject.toml", "[tool.udm]\n" + LOOSER),
        ("prefect.yaml", "deployments: []\n"),
    ],
)
def test_a_tool_cannot_rewrite_the_settings(tmp_path: Path, name: str, content: str) -> None:
    (tmp_path / "index.md").write_text("# Docs\n", encoding="utf-8")
    (tmp_path / "udm.toml").write_text('root = "."\n', encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "docs"\n', encoding="utf-8")
    (tmp_path / "prefect.yaml").write_text("name: docs\n", encoding="utf-8")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    settings = load_settings(cwd=tmp_path)
    assert settings.udm_root == tmp_path.resolve()
    ctx = ToolContext(settings=settings.model_copy(update={"allow_delete": True}), approver=always_approve)
    for raw in (
        {"action": "writeFile", "filePath": name, "content": content},
        {"action": "moveFile", "filePath": "index.md", "destinationPath": name},
        {"action": "deleteFile", "filePath": name},
    ):
        env = call_tool(TOOL, raw, ctx).envelope
        assert env.data is not None and env.data["status"] == "ERROR_PERMISSION_DENIED", (raw, env)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before
    again = load_settings(cwd=tmp_path)
    assert again.approval_policy == settings.approval_policy and again.allowed_dirs == []


def test_a_patch_cannot_create_or_replace_the_settings(tmp_path: Path) -> None:
    from udm.patch import apply_patch, parse_patch

    (tmp_path / "index.md").write_text("# Docs\n", encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text('[tool.udm]\nroot = "."\n', encoding="utf-8")
    settings = load_settings(cwd=tmp_path)
    for ops in (
        [{"op": "create_file", "file": "udm.toml", "content": LOOSER}],
        [
            {"op": "delete_file", "file": "pyproject.toml"},
            {"op": "create_file", "file": "pyproject.toml", "content": "[tool.udm]\n" + LOOSER},
        ],
        [{"op": "rename_file", "file": "index.md", "to": "prefect.yaml"}],
    ):
        patch = parse_patch({"id": "loosen", "description": "d", "author": "ann", "operations": ops})
        result = apply_patch(patch, settings, review=None)
        assert result.status != "committed", result
    assert not (tmp_path / "udm.toml").exists() and not (tmp_path / "prefect.yaml").exists()
    assert load_settings(cwd=tmp_path).approval_policy == settings.approval_policy
