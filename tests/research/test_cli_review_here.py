"""`udm research` without a Prefect UI asks at the terminal with udmUpdaterTool's own approval request.

The question comes once the appendix is known: the commit's summary and diff, the tool's name and level,
the digest call_tool logs; the answer is the review the commit's call-log line and patch record carry.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from flows.cli import run

pytestmark = pytest.mark.prefect


def _research(site: Any, answer: str, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setenv("UDM_FETCH_ALLOW", "127.0.0.1")
    monkeypatch.setenv("UDM_APPROVAL_POLICY", "smart_auto")
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setattr(sys, "stdin", io.StringIO(answer))
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    question = "What are the plain notes about?"
    return run(["research", question, "--url", site.base + "/notes.txt", "--topic", "PLAIN-NOTES", "--json"])


def _commit_lines(workspace: Path) -> list[dict[str, Any]]:
    lines = (workspace / "logs" / "tool-calls.jsonl").read_text(encoding="utf-8").splitlines()
    calls = [json.loads(line) for line in lines]
    return [c for c in calls if c["tool"] == "udmUpdaterTool" and c["input_fields"] == ["patch"]]


def test_an_approved_write_carries_the_terminal_review(
    prefect_server: None, site: Any, workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.chdir(workspace)
    code = _research(site, "y\n", monkeypatch)
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert code == 0 and result["status"] == "written", err
    assert "[udmUpdaterTool: moderate]" in err and "udmUpdaterTool: apply patch" in err
    assert "create_file appendices/" in err and "+# " in err  # the summary, then the appendix's diff
    (commit,) = _commit_lines(workspace)
    assert (commit["decision"], commit["status"]) == ("approved", "SUCCESS")
    assert commit["review"]["decision"] == "approved"
    assert commit["review"]["reviewer"].endswith(" at the terminal")
    record_id = result["update"]["patch_id"]
    record = json.loads((workspace / "state" / "patches" / f"{record_id}.json").read_text(encoding="utf-8"))
    assert record["review"]["input_digest"] == commit["input_digest"]
    assert record["review"]["reviewer"] == commit["review"]["reviewer"]


def test_a_write_not_approved_at_the_terminal_changes_nothing(
    prefect_server: None, site: Any, workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.chdir(workspace)
    appendices = workspace / "docs" / "udm" / "appendices"
    before = sorted(p.name for p in appendices.iterdir()) if appendices.is_dir() else []
    code = _research(site, "n\n", monkeypatch)
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert code == 1 and result["status"] == "rejected", err
    assert "not approved at the terminal" in result["message"]
    assert (sorted(p.name for p in appendices.iterdir()) if appendices.is_dir() else []) == before
    assert _commit_lines(workspace) == []
