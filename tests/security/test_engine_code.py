"""The engine's own code is out of the tools' reach even when an allowed directory holds it.

With the manual at the project root (`root = "."`) or `allowed_dirs` naming a folder that holds the
project's virtual environment or an engine checkout, one approved `writeFile` of a `.pth` file in
site-packages, or of a module in `udm/`, ran code at the next start of any `udm` command: on `main`
before this both writes succeeded. The probe files here are inert (a comment) and removed either way.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import udm
from tasks.base import ToolContext, always_approve, call_tool
from udm.config import load_settings


def _site_packages() -> Path:
    return next(
        Path(p) for p in sys.path if p.endswith("site-packages") and Path(p).is_relative_to(sys.prefix)
    )


@pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="needs a virtual environment")
@pytest.mark.parametrize("where", ["venv", "engine"])
def test_a_tool_cannot_write_into_the_engines_code(tmp_path: Path, where: str) -> None:
    (tmp_path / "docs" / "udm").mkdir(parents=True)
    if where == "venv":
        allowed, target = Path(sys.prefix), _site_packages() / "udm-attack-probe.pth"
    else:
        engine = Path(udm.__file__).resolve().parent
        allowed, target = engine.parent, engine / "zz_attack_probe.py"
    settings = load_settings(cwd=tmp_path, allowed_dirs=[allowed])
    ctx = ToolContext(settings=settings, approver=always_approve, log=False)
    try:
        out = call_tool(
            "fileSystemAccessTool",
            {"action": "writeFile", "filePath": str(target), "content": "# inert probe\n"},
            ctx,
        ).envelope.data
        assert out is not None and out["status"] == "ERROR_PERMISSION_DENIED", out
        assert not target.exists()
    finally:
        target.unlink(missing_ok=True)
