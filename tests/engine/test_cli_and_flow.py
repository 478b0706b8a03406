"""The `udm` index commands (no Prefect import) and index_flow on a real Prefect test server."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
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


@pytest.mark.prefect
@pytest.mark.slow
def test_index_flow_tells_the_site_notes_in_its_logs_and_artifact(
    prefect_server: None, tmp_path: Path
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId, LogFilter, LogFilterFlowRunId

    from flows.index import index_flow

    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "site" / "docs").mkdir(parents=True)
    (root / "site" / "docusaurus.config.js").write_text("module.exports = {};\n", encoding="utf-8")
    (root / "site" / "docs" / "a.md").write_text("# A\n", encoding="utf-8")
    state = index_flow(root=str(root), state_dir=str(tmp_path / "state"), return_state=True)
    assert state.is_completed()  # the index is right; what it could not apply is said, not failed
    stats = state.result()
    [note] = stats["site_notes"]
    assert note.startswith("site/docusaurus.config.js: a site config of docusaurus below the manual root")
    run_id = state.state_details.flow_run_id
    with get_client(sync_client=True) as client:
        deadline = time.monotonic() + 20  # the run's logs reach the server in batches
        while True:
            logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run_id])))
            if any("site config" in log.message for log in logs) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[run_id])))
        artifact = client._client.get("/artifacts/udm-index-errors/latest").json()
    assert runs[0].state is not None and runs[0].state.is_completed()
    assert [(log.level, log.message) for log in logs if "site config" in log.message] == [
        (logging.WARNING, f"site config: {note}")
    ]
    assert "## Site config" in artifact["data"] and "site/docusaurus.config.js" in artifact["data"]
