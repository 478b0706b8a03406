"""The demo framework: a fresh workspace per run, steps in order, a failing step reported, not fatal."""

from __future__ import annotations

import hashlib
import sys
import types
from pathlib import Path

import pytest

import flows.demo as demo
from flows.cli import run


def tree_digest(root: Path) -> str:
    """One hash over every file's path and bytes under root."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(root).as_posix().encode())
            h.update(p.read_bytes())
    return h.hexdigest()


@pytest.fixture
def fake_steps(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Three demo steps in a throw-away module: one edits the copy, one fails, one records order."""
    seen: list[str] = []
    module = types.ModuleType("udm_demo_fake_steps")

    def edit(ws: demo.DemoWorkspace) -> None:
        seen.append("edit")
        target = ws.settings.udm_root / "06-config.md"
        target.write_text(
            target.read_text(encoding="utf-8").replace("timeout: 10", "timeout: 11"), encoding="utf-8"
        )
        ws.shared["edited"] = str(target)
        ws.say("   edited the workspace copy")

    def broken(ws: demo.DemoWorkspace) -> None:
        seen.append("broken")
        raise RuntimeError("this step is broken on purpose")

    def last(ws: demo.DemoWorkspace) -> None:
        seen.append("last")
        assert ws.shared["edited"].startswith(str(ws.path))
        assert ws.ctx().settings.udm_root == ws.path / "docs" / "udm"

    module.edit = edit  # type: ignore[attr-defined]
    module.broken = broken  # type: ignore[attr-defined]
    module.last = last  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(
        demo,
        "DEMO_STEPS",
        [
            ("edit a file", f"{module.__name__}:edit"),
            ("a broken step", f"{module.__name__}:broken"),
            ("the last step", f"{module.__name__}:last"),
        ],
    )
    return seen


def test_run_demo_isolated_and_resilient(
    tmp_path: Path, fake_steps: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    before = tree_digest(demo.SAMPLE_UDM)
    failures = demo.run_demo(tmp_path / "ws")
    out = capsys.readouterr().out
    assert failures == 1
    assert fake_steps == ["edit", "broken", "last"]
    # The sample under examples/ is never touched; the copy is.
    assert tree_digest(demo.SAMPLE_UDM) == before
    copy = tmp_path / "ws" / "docs" / "udm"
    assert "timeout: 11" in (copy / "06-config.md").read_text(encoding="utf-8")
    assert "FAILED: RuntimeError: this step is broken on purpose" in out
    assert "demo finished: 2 steps ok, 1 failed" in out
    errors = (tmp_path / "ws" / "logs" / "demo-errors.log").read_text(encoding="utf-8")
    assert "--- a broken step" in errors and "Traceback" in errors
    for sub in ("state", "logs", "prompts"):
        assert (tmp_path / "ws" / sub).is_dir()


def test_only_filter_and_exit_codes(
    tmp_path: Path, fake_steps: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["demo", "--workspace", str(tmp_path / "a"), "--only", "LAST", "--only", "edit"]) == 0
    assert fake_steps == ["edit", "last"]
    assert "demo finished: 2 steps ok, 0 failed" in capsys.readouterr().out
    assert run(["demo", "--workspace", str(tmp_path / "b")]) == 1
    # A workspace that is not empty is refused as a usage error.
    assert run(["demo", "--workspace", str(tmp_path / "a")]) == 2
    assert "is not empty" in capsys.readouterr().err


def test_default_workspace_is_under_state_demo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_steps: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    ws = demo.create_workspace()
    assert ws.path.parent == tmp_path.resolve() / "state" / "demo"
    assert ws.settings.udm_root == ws.path / "docs" / "udm"
    assert ws.settings.logs_path == ws.path / "logs"
    assert (ws.settings.udm_root / "00-index.md").is_file()
