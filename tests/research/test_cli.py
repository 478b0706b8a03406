"""`udm research`: input errors, the approval question, and a report-only run through the flow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flows.cli import run


def test_invalid_request_is_a_usage_error(workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(workspace)
    assert run(["research", "What is BM25?", "--url", "ftp://example.org/x"]) == 2
    assert "not an http(s) URL" in capsys.readouterr().err
    assert run(["research", "What is BM25?", "--url", "http://127.0.0.1:99999/x"]) == 2
    err = capsys.readouterr().err
    assert "invalid port" in err and "99999" in err and "Traceback" not in err


def test_write_without_terminal_or_yes_is_refused(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.chdir(workspace)
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    assert run(["research", "What is BM25?"]) == 1
    err = capsys.readouterr().err
    assert "needs approval" in err and "--yes" in err and "--no-write" in err


@pytest.mark.prefect
def test_report_only_run_prints_json(
    prefect_server: None, site, workspace: Path, monkeypatch, capsys
) -> None:
    monkeypatch.chdir(workspace)
    monkeypatch.setenv("UDM_FETCH_ALLOW", "127.0.0.1")
    code = run(
        [
            "research",
            "What are the plain notes about?",
            "--url",
            site.base + "/notes.txt",
            "--no-write",
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["status"] == "reported" and out["sources_ok"] >= 1
    assert any(s["url"].endswith("/notes.txt") and s["status"] == "ok" for s in out["sources"])
