"""`udm lint`: every rule against a golden UDM, the sample is clean, the CLI exits 1 on errors."""

from __future__ import annotations

import json

import pytest

from flows.cli import run
from udm.config import Settings
from udm.index import lint
from udm.index.lint_rules import RULES, find_cycles

from .conftest import GOLDEN


def test_golden_findings(bad_settings: Settings) -> None:
    findings = lint(bad_settings)
    assert "".join(f"{f}\n" for f in findings) == (GOLDEN / "lint.txt").read_text(encoding="utf-8")
    # Every rule fires at least once; UTF-8 (a family nobody defines) stays quiet.
    assert {f.rule for f in findings} == set(RULES)
    assert not any(f.rule == "undefined-id" and "UTF-8" in f.message for f in findings)


def test_sample_udm_is_clean(settings: Settings) -> None:
    assert lint(settings) == []


def test_cli_lint_json_and_exit_code(
    bad_settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(bad_settings.project_root)
    code = run(["--root", "udm", "--state-dir", "state", "lint", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    assert data["errors"] == 14 and data["warnings"] == 4
    assert {"file", "line", "rule", "severity", "message"} <= set(data["findings"][0])


def test_find_cycles() -> None:
    graph = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["d"], "e": ["a", "x"]}
    assert sorted(find_cycles(graph)) == [["a", "b", "c"], ["d"]]
    assert find_cycles({"a": ["b"], "b": []}) == []


def test_renaming_a_heading_breaks_links_into_it(settings: Settings) -> None:
    assert lint(settings) == []
    path = settings.udm_root / "02-system-architecture.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace("### 2.2.1 Component: Web Console", "### 2.2.1 Component: Web UI"), encoding="utf-8"
    )
    broken = [f for f in lint(settings) if f.rule == "broken-anchor"]
    assert broken and all("221-component-web-console" in f.message for f in broken)
    assert {f.file for f in broken} >= {"00-index.md"}
    path.write_text(text, encoding="utf-8")
    assert lint(settings) == []
