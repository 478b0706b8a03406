"""The `udm` index commands (no Prefect import) and index_flow on a real Prefect test server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flows.cli import run

REPO = Path(__file__).resolve().parents[2]


def test_cli_commands(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(workspace)
    assert run(["index", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["parsed"] == 9
    assert run(["query", "id", "COMP-002"]) == 0
    assert capsys.readouterr().out.startswith("COMP-002\t02-system-architecture.md:")
    assert run(["query", "task", "TASK-P0-M0.1-T002", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["retrievedContent"]["status"] == "done"
    assert run(["query", "section", "04-modes.md#5.3"]) == 0
    assert capsys.readouterr().out.startswith("## 5.3 Mode: ROO-MODE-PLAN-STRATEGIC")
    for kind, key in (("mode", "ROO-MODE-RESEARCH"), ("tool", "udmQueryTool"), ("config", "http.retries")):
        assert run(["query", kind, key]) == 0, kind
    assert capsys.readouterr().out.splitlines()[-1] == "3"
    assert run(["query", "refs", "COMP-006"]) == 0
    assert "00-index.md:" in capsys.readouterr().out
    assert run(["search", "symlink", "sandbox", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "SUCCESS"
    # Nothing found is said, not a silent empty answer; no words is a usage error naming what to give.
    assert run(["search", "zzqqxx"]) == 0
    assert capsys.readouterr().err.strip() == "no section matches 'zzqqxx'"
    assert run(["search", " "]) == 2
    assert "give at least one word" in capsys.readouterr().err
    assert run(["sql", "SELECT count(*) AS n FROM tasks"]) == 0
    assert capsys.readouterr().out.splitlines() == ["n", "46"]
    assert run(["sql", "DROP TABLE tasks"]) == 1
    assert "only SELECT" in capsys.readouterr().err
    assert run(["query", "id", "NOPE-1"]) == 1
    assert run(["lint"]) == 0


def test_cli_never_imports_prefect(workspace: Path) -> None:
    code = (
        "import sys\nfrom flows.cli import run\n"
        "rc = run(['query', 'id', 'COMP-001'])\n"
        "assert 'prefect' not in sys.modules, 'prefect imported'\nsys.exit(rc)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=workspace,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "COMP-001" in proc.stdout


@pytest.mark.prefect
@pytest.mark.slow
def test_index_flow(prefect_server: None, workspace: Path) -> None:
    from flows.index import index_flow

    stats = index_flow(root=str(workspace / "docs" / "udm"), state_dir=str(workspace / "state"))
    assert stats["parsed"] == 9 and stats["errors"] == []
    again = index_flow(root=str(workspace / "docs" / "udm"), state_dir=str(workspace / "state"))
    assert again["parsed"] == 0
