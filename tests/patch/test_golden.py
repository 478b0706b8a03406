"""Golden cases of every patch operation: the files before, a patch, and the files after or the refusal.

One folder per operation and one per case, read like markdown-it-py's fixtures:

    tests/patch/golden/<operation>/<case>/
        patch.yaml   the patch (YAML); its `file` paths are relative to input/
        input/       the manual before the patch (no folder: an empty manual)
        expected/    the manual after it, byte for byte (a file of input/ missing here was deleted)
        error.txt    instead of expected/: `<status>: <error>` of the refusal; the files stay as input/

Each case is applied as `udm patch apply` applies a patch (operations, validation, transaction) to a
copy of input/ in a temporary project; the manual's whole tree is then compared byte for byte.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from udm.config import load_settings
from udm.patch import apply_patch, load_patch
from udm.patch.format import OPERATION_TYPES
from udm.patch.ops import OPERATIONS

GOLDEN = Path(__file__).with_name("golden")
CASES = sorted(p for p in GOLDEN.glob("*/*") if p.is_dir())


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file under the folder by its relative path (empty when there is no folder)."""
    if not folder.is_dir():
        return {}
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}/{c.name}" for c in CASES])
def test_golden_case(case: Path, tmp_path: Path) -> None:
    root = tmp_path / "docs" / "udm"
    if (case / "input").is_dir():
        shutil.copytree(case / "input", root)
    else:
        root.mkdir(parents=True)
    for sub in ("state", "logs"):
        (tmp_path / sub).mkdir()
    settings = load_settings(cwd=tmp_path)
    patch = load_patch(case / "patch.yaml")

    result = apply_patch(patch, settings)

    refusal = case / "error.txt"
    if refusal.exists():
        assert f"{result.status}: {result.error}\n" == refusal.read_text(encoding="utf-8")
        assert _tree(root) == _tree(case / "input"), "a refused patch changed the files"
    else:
        assert result.status == "committed", result.error
        assert _tree(root) == _tree(case / "expected")


def test_every_operation_has_its_golden_folder_and_its_table_entry() -> None:
    assert {p.name for p in GOLDEN.iterdir() if p.is_dir()} == set(OPERATION_TYPES) == set(OPERATIONS)
    for op in OPERATION_TYPES:
        cases = [c for c in CASES if c.parent.name == op]
        assert any((c / "expected").is_dir() for c in cases), f"{op} has no success case"
        for case in cases:
            assert (case / "patch.yaml").is_file(), case
            assert (case / "expected").is_dir() != (case / "error.txt").is_file(), (
                f"{case}: one of expected/ or error.txt"
            )
            ops = [
                o["op"]
                for o in yaml.safe_load((case / "patch.yaml").read_text(encoding="utf-8"))["operations"]
            ]
            assert op in ops, f"{case} does not use {op}"
