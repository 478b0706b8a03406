"""The patch commands end to end through `flows.cli.run` on a copy of the sample UDM."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from flows.cli import run
from udm.config import Settings

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "patches" / "mark-t001-done.yaml"


def udm(settings: Settings, *args: str) -> int:
    return run(["--root", str(settings.udm_root), "--state-dir", str(settings.state_path), *args])


def test_check_apply_list_show_revert(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    roadmap = settings.udm_root / "05-roadmap.md"
    original = roadmap.read_bytes()
    assert udm(settings, "patch", "check", str(SAMPLE)) == 0
    out = capsys.readouterr().out
    assert "patch mark-t001-done: planned" in out and "+  timeout: 20" in out
    assert roadmap.read_bytes() == original

    assert udm(settings, "patch", "apply", str(SAMPLE), "--yes", "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["status"] == "committed" and report["patch_id"] == "mark-t001-done"
    assert [o["status"] for o in report["operations"]] == ["applied", "applied", "applied"]
    assert "reviewed_by: ann\n" in roadmap.read_text(encoding="utf-8")

    assert udm(settings, "patch", "check", str(SAMPLE)) == 1
    assert "already applied" in capsys.readouterr().err
    assert udm(settings, "patch", "apply", str(SAMPLE), "--yes") == 1
    assert "already applied" in capsys.readouterr().err

    assert udm(settings, "patch", "list") == 0
    assert "mark-t001-done" in capsys.readouterr().out
    assert udm(settings, "patch", "show", "mark-t001-done") == 0
    assert "+reviewed_by: ann" in capsys.readouterr().out
    assert udm(settings, "patch", "show", "mark-t001-dome") == 1
    assert "did you mean: mark-t001-done" in capsys.readouterr().err

    assert udm(settings, "patch", "revert", "mark-t001-done", "--yes") == 0
    assert roadmap.read_bytes() == original


def test_apply_without_terminal_or_yes_needs_approval(
    settings: Settings, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.stdin, "isatty", lambda: False)
    before = (settings.udm_root / "06-config.md").read_bytes()
    assert udm(settings, "patch", "apply", str(SAMPLE)) == 1
    assert "needs approval" in capsys.readouterr().err
    assert (settings.udm_root / "06-config.md").read_bytes() == before


def test_schema_recover_and_fmt(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    assert udm(settings, "patch", "schema") == 0
    assert json.loads(capsys.readouterr().out)["title"] == "UDM patch"
    assert udm(settings, "recover") == 0
    assert "nothing to recover" in capsys.readouterr().out
    messy = settings.udm_root / "messy.md"
    messy.write_text("# Messy\n\n* a\n* b\n", encoding="utf-8")
    assert udm(settings, "fmt", "messy.md", "--check") == 1
    assert "+- a" in capsys.readouterr().out
    assert udm(settings, "fmt", "messy.md", "--yes") == 0
    assert messy.read_text(encoding="utf-8") == "# Messy\n\n- a\n- b\n"
    assert udm(settings, "fmt", "messy.md", "--check") == 0
