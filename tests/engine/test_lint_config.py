"""Lint a docs team can live with (issue 18.6): rule settings, path ignores, disable comments, CI formats,
exit codes, and the pre-commit hook."""

from __future__ import annotations

import json
import re
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from flows.cli import run
from udm.config import Settings, load_settings
from udm.index import LintConfig, lint
from udm.index.lint_format import SARIF_SCHEMA
from udm.index.lint_rules import _OWN_ANCHOR, RULES, _Switches

REPO = Path(__file__).resolve().parents[2]

A = """# A

### Skipped a level

Broken: [x](missing.md)

<!-- udm-lint-disable-next-line broken-link -->
Quiet: [y](gone.md)

<!-- udm-lint-disable broken-anchor -->
Quiet: [z](#nope)
<!-- udm-lint-enable broken-anchor -->
Loud: [w](#nope2)

```md
<!-- udm-lint-disable -->
```

Loud: [v](#nope3) <!-- udm-lint-disable-line broken-link -->
"""
B = "<!-- udm-lint-disable-file -->\n# B\n\n[x](missing.md)\n"
C = "# C\n\n[x](missing.md)\n"


def _manual(tmp_path: Path, **settings: object) -> Settings:
    root = tmp_path / "docs"
    (root / "vendor").mkdir(parents=True)
    (root / "a.md").write_text(A)
    (root / "b.md").write_text(B)
    (root / "vendor" / "c.md").write_text(C)
    return load_settings(cwd=tmp_path, root=root, state_dir=tmp_path / "state", **settings)


def _keys(settings: Settings) -> set[tuple[str, int, str, str]]:
    return {(f.file, f.line, f.rule, f.severity) for f in lint(settings)}


def test_disable_comments(tmp_path: Path) -> None:
    assert _keys(_manual(tmp_path)) == {
        ("a.md", 3, "heading-skip", "warning"),
        ("a.md", 5, "broken-link", "error"),
        ("a.md", 13, "broken-anchor", "error"),
        # A comment inside a code block is an example, not a directive; disable-line names another rule.
        ("a.md", 19, "broken-anchor", "error"),
        ("vendor/c.md", 3, "broken-link", "error"),
    }


def test_rule_severities_and_path_ignores_from_settings(tmp_path: Path) -> None:
    s = _manual(
        tmp_path,
        lint_rules={"heading-skip": "off", "broken-anchor": "warning"},
        lint_ignore={"vendor/*": ["broken-link"]},
    )
    assert _keys(s) == {
        ("a.md", 5, "broken-link", "error"),
        ("a.md", 13, "broken-anchor", "warning"),
        ("a.md", 19, "broken-anchor", "warning"),
    }
    everything = _manual(tmp_path / "x", lint_ignore=["*.md"])
    assert lint(everything) == []


def test_unknown_rule_in_settings_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    s = _manual(tmp_path, lint_rules={"broken-links": "off"})
    with pytest.raises(Exception, match="no rule 'broken-links'"):
        LintConfig.from_settings(s)
    monkeypatch.setenv("UDM_LINT_RULES", '{"broken-links": "off"}')
    assert _cli(s, "lint") == 2
    assert "no rule 'broken-links'" in capsys.readouterr().err


def test_disable_all_then_enable_one() -> None:
    sw = _Switches("<!-- udm-lint-disable -->\n\n<!-- udm-lint-enable broken-link -->\n", "x.md")
    assert sw.off("heading-skip", 1) and sw.off("broken-link", 2)
    assert not sw.off("broken-link", 3) and sw.off("heading-skip", 3)
    again = _Switches(
        "<!-- udm-lint-disable broken-link heading-skip -->\n<!-- udm-lint-enable -->\n", "x.md"
    )
    assert again.off("heading-skip", 1) and not again.off("heading-skip", 2)


def test_markdownlint_comments_switch_the_rules_both_have() -> None:
    # opentelemetry.io's pages carry `<!-- markdownlint-disable heading-increment -->`.
    text = (
        "<!-- markdownlint-disable heading-increment -->\n"  # 1
        "x\n"  # 2
        "<!-- markdownlint-enable MD001 -->\n"  # 3
        "<!-- markdownlint-disable MD013 line-length -->\n"  # 4: rules udm does not have
        "<!-- markdownlint-disable-next-line link-fragments -->\n"  # 5
        "[a](#nope)\n"  # 6
        "<!-- markdownlint-disable -->\n"  # 7: all of markdownlint's, so the two both have
        "y\n"  # 8
    )
    sw = _Switches(text, "x.md")
    assert sw.off("heading-skip", 2) and not sw.off("heading-skip", 3)
    # link-fragments is markdownlint's check of a page's own anchors: those, not links into others.
    assert sw.off(_OWN_ANCHOR, 6) and not sw.off("broken-anchor", 6) and not sw.off(_OWN_ANCHOR, 5)
    assert not sw.off("broken-link", 6)
    assert sw.off("heading-skip", 8) and sw.off(_OWN_ANCHOR, 8)
    assert not sw.off("broken-link", 8) and not sw.off("duplicate-id", 8)


def _cli(settings: Settings, *args: str) -> int:
    return run(["--root", str(settings.udm_root), "--state-dir", str(settings.state_path), *args])


@pytest.fixture
def cli_manual(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.chdir(tmp_path)  # paths in CI reports are relative to the project root
    return _manual(tmp_path)


def test_sarif(cli_manual: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli(cli_manual, "lint", "--format", "sarif") == 1
    sarif = json.loads(capsys.readouterr().out)
    assert sarif["version"] == "2.1.0" and sarif["$schema"] == SARIF_SCHEMA
    driver = sarif["runs"][0]["tool"]["driver"]
    assert driver["name"] == "udm-lint" and [r["id"] for r in driver["rules"]] == list(RULES)
    results = sarif["runs"][0]["results"]
    first = next(r for r in results if r["ruleId"] == "broken-link")
    assert first["level"] == "error" and "missing.md" in first["message"]["text"]
    location = first["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "docs/a.md" and location["region"]["startLine"] == 5
    assert driver["rules"][first["ruleIndex"]]["id"] == "broken-link"
    assert {r["level"] for r in results} == {"error", "warning"}


def test_junit(cli_manual: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli(cli_manual, "lint", "--format", "junit") == 1
    suites = ET.fromstring(capsys.readouterr().out.split("\n", 1)[1])
    assert suites.tag == "testsuites" and suites.get("failures") == "5"
    names = {s.get("name") for s in suites.iter("testsuite")}
    assert names == {"docs/a.md", "docs/vendor/c.md"}
    failure = next(
        c.find("failure") for c in suites.iter("testcase") if c.get("name") == "broken-link at line 5"
    )
    assert (
        failure is not None
        and failure.get("type") == "error"
        and "missing.md" in (failure.get("message") or "")
    )


def test_junit_clean_manual(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n")
    s = load_settings(cwd=tmp_path, root=root, state_dir=tmp_path / "state")
    assert _cli(s, "lint", "--format", "junit") == 0
    suites = ET.fromstring(capsys.readouterr().out.split("\n", 1)[1])
    assert suites.get("failures") == "0" and len(list(suites.iter("testcase"))) == 1


def test_github_annotations(cli_manual: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli(cli_manual, "lint", "--format", "github") == 1
    lines = capsys.readouterr().out.splitlines()
    pattern = re.compile(r"^::(error|warning) file=([^,]+),line=(\d+),title=([\w-]+)::(.+)$")
    parsed = [pattern.match(line) for line in lines]
    assert all(parsed) and len(parsed) == 5
    assert ("warning", "docs/a.md", "3", "heading-skip") in {m.groups()[:4] for m in parsed if m}


def test_json_and_output_file(
    cli_manual: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.json"
    assert _cli(cli_manual, "lint", "--format", "json", "--output", str(out)) == 1
    data = json.loads(out.read_text())
    assert data["errors"] == 4 and data["warnings"] == 1
    assert {"file", "line", "rule", "severity", "message"} <= set(data["findings"][0])
    assert "4 errors, 1 warnings" in capsys.readouterr().err


def test_exit_codes(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n\n### Skipped\n")  # one warning, no error
    s = load_settings(cwd=tmp_path, root=root, state_dir=tmp_path / "state")
    assert _cli(s, "lint") == 0
    assert _cli(s, "lint", "--fail-on", "warning") == 1
    assert _cli(s, "lint", "--max-warnings", "0") == 1
    assert _cli(s, "lint", "--max-warnings", "1") == 0
    (root / "b.md").write_text("[x](nowhere.md)\n")
    assert _cli(s, "lint") == 1
    assert _cli(s, "lint", "--fail-on", "never") == 0
    assert _cli(s, "lint", "--format", "xml") == 2


def test_exit_policy_from_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n\n### Skipped\n")
    s = load_settings(cwd=tmp_path, root=root, state_dir=tmp_path / "state")
    monkeypatch.setenv("UDM_LINT_FAIL_ON", "warning")
    assert _cli(s, "lint") == 1
    monkeypatch.setenv("UDM_LINT_FAIL_ON", "error")
    monkeypatch.setenv("UDM_LINT_MAX_WARNINGS", "0")
    assert _cli(s, "lint") == 1
    assert _cli(s, "lint", "--max-warnings", "-1") == 0  # the option wins over the setting


def test_pre_commit_hook() -> None:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "udm-lint")
    assert hook["entry"] == "udm lint" and hook["language"] == "python" and hook["pass_filenames"] is False
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert "udm" in scripts


def test_markdownlint_comments_in_a_manual(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n\n<!-- markdownlint-disable heading-increment -->\n\n#### Deep\n")
    (root / "b.md").write_text("# B\n\n#### Deep\n")
    settings = load_settings(cwd=tmp_path, root=root, state_dir=tmp_path / "state")
    assert {(f.file, f.rule) for f in lint(settings)} == {("b.md", "heading-skip")}


def test_markdownlint_capture_restore_and_own_anchors(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "b.md").write_text("# B\n")
    (root / "a.md").write_text(
        "# A\n\n"
        "<!-- markdownlint-capture -->\n<!-- markdownlint-disable MD051 -->\n"  # 3, 4
        "[q](#quiet) [x](b.md#cross)\n"  # 5: own anchor off; a link into b.md still checked
        "<!-- markdownlint-restore -->\n"  # 6
        "[l](#loud)\n"  # 7: the switches as they stood before the capture
        "<!-- eslint-disable no-undef -->\n"  # 8: another tool's comment
    )
    settings = load_settings(cwd=tmp_path, root=root, state_dir=tmp_path / "state")
    found = {(f.line, f.message) for f in lint(settings) if f.rule == "broken-anchor"}
    assert found == {
        (5, "no heading with anchor #cross in b.md"),
        (7, "no heading with anchor #loud in a.md"),
    }
