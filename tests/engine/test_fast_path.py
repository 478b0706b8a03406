"""The `udm query id` fast path: same output as the full CLI, and it steps aside when unsure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flows.cli import run
from flows.entry import fast_query_id
from udm.config import load_settings
from udm.index import UdmIndex


def test_fast_path_matches_full_cli(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(workspace)
    assert fast_query_id(["query", "id", "COMP-002"]) is None  # no index yet
    UdmIndex(load_settings(workspace)).refresh()
    capsys.readouterr()
    assert fast_query_id(["query", "id", "COMP-002"]) == 0
    fast = capsys.readouterr().out
    assert run(["query", "id", "COMP-002"]) == 0
    assert capsys.readouterr().out == fast
    log = (workspace / "logs" / "tool-calls.jsonl").read_text(encoding="utf-8").splitlines()
    first, second = json.loads(log[-2]), json.loads(log[-1])
    assert first["fast_path"] is True and first["input_digest"] == second["input_digest"]
    # Not the fast path's business: other commands, --json, unknown IDs, stale files.
    assert fast_query_id(["query", "id", "COMP-002", "--json"]) is None
    assert fast_query_id(["query", "task", "X"]) is None
    assert fast_query_id(["query", "id", "NOPE-1"]) is None
    path = workspace / "docs" / "udm" / "01-introduction.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nmore\n", encoding="utf-8")
    assert fast_query_id(["query", "id", "COMP-002"]) is None
    monkeypatch.setenv("UDM_APPROVAL_POLICY", "ask_always")
    UdmIndex(load_settings(workspace)).refresh()
    assert fast_query_id(["query", "id", "COMP-002"]) is None
    monkeypatch.delenv("UDM_APPROVAL_POLICY")
    assert fast_query_id(["--root", "docs/udm", "--state-dir", "state", "query", "id", "COMP-002"]) == 0
    assert fast_query_id(["--root", "elsewhere", "query", "id", "COMP-002"]) is None
