"""Bad input through `udm patch apply`: a clear error, exit 1, and not one byte changes on disk."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flows.cli import run
from udm.config import Settings
from udm.errors import PatchError
from udm.patch import load_patch

from .conftest import snapshot

CASES = {
    "unknown operation": (
        "operations: [{op: frobnicate, file: roadmap.md}]",
        "unknown operation 'frobnicate'",
    ),
    "missing target": (
        "operations: [{op: append_to_section, file: roadmap.md, section: Phase 9, content: x}]",
        "no section 'Phase 9'",
    ),
    "ambiguous target": (
        "operations: [{op: append_to_section, file: dup.md, section: Notes, content: x}]",
        "matches 2 sections",
    ),
    "invalid YAML value": (
        "operations: [{op: replace_code_block, file: config.md, section: HTTP, content: 'http: [1, 2'}]",
        "block does not parse",
    ),
    "YAML block that does not parse": (
        "operations: [{op: set_yaml_key, file: broken.md, section: Broken, key: a, value: 1}]",
        "YAML does not parse",
    ),
    "key path not found": (
        "operations: [{op: set_yaml_key, file: config.md, section: HTTP, key: 'http.pool.size', value: 4}]",
        "no key 'pool' under http",
    ),
    "path outside the root": (
        "operations: [{op: create_file, file: ../../escape.md, content: x}]",
        "leaves the UDM root",
    ),
    "absolute path": (
        "operations: [{op: delete_file, file: /etc/hostname}]",
        "must be relative to the UDM root",
    ),
    "symlink out of the root": (
        "operations: [{op: replace_text, file: outside/secret.md, old: s, new: t}]",
        "outside the allowed directories",
    ),
    "non-UTF-8 file": (
        "operations: [{op: replace_text, file: latin1.md, old: caf, new: tea}]",
        "not valid UTF-8",
    ),
    "patch file that is not YAML": (
        "operations: [{op: replace_text, file: x.md, old: a\n  new: b",
        "is not valid YAML",
    ),
    "patch that is a list": ("- op: delete_file\n  file: roadmap.md\n", "a patch is a mapping"),
    "second operation fails": (
        "operations:\n  - {op: replace_text, file: config.md, old: 'timeout: 10', new: 'timeout: 20'}\n"
        "  - {op: delete_section, file: roadmap.md, section: Nowhere}",
        "operations[1] (delete_section)",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_changes_nothing(
    small: Settings, tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = small.udm_root
    (root / "dup.md").write_text("# D\n\n## Notes\n\na\n\n## Notes\n\nb\n", encoding="utf-8")
    (root / "broken.md").write_text("# B\n\n## Broken\n\n```yaml\na: [1\n```\n", encoding="utf-8")
    (root / "latin1.md").write_bytes("# Caf\xe9\n\ncaf\xe9\n".encode("latin-1"))
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.md").write_text("s\n", encoding="utf-8")
    os.symlink(outside, root / "outside")
    text, needle = CASES[case]
    patch_file = tmp_path / "bad.yaml"
    patch_file.write_text(text, encoding="utf-8")
    before = snapshot(tmp_path)
    code = run(
        [
            "--root",
            str(root),
            "--state-dir",
            str(small.state_path),
            "patch",
            "apply",
            str(patch_file),
            "--yes",
        ]
    )
    captured = capsys.readouterr()
    assert code == 1
    assert needle in captured.err, captured.err
    assert "Traceback" not in captured.err + captured.out
    assert snapshot(tmp_path) == before


def test_not_utf8_patch_file(tmp_path: Path) -> None:
    bad = tmp_path / "p.yaml"
    bad.write_bytes(b"operations: [\xff]")
    with pytest.raises(PatchError, match="not UTF-8"):
        load_patch(bad)
