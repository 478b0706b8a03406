"""Settings: resolution order, comma lists, path resolution and `udm config` output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flows.cli import run
from udm.config import DEFAULT_ID_PATTERNS, ApprovalPolicy, load_settings
from udm.errors import ConfigError


def write_sources(tmp_path: Path, pyproject: str | None, udm_toml: str | None) -> None:
    """Write (or remove) the two config files of a project folder."""
    for name, text in (("pyproject.toml", pyproject), ("udm.toml", udm_toml)):
        path = tmp_path / name
        if text is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(text, encoding="utf-8")


def test_defaults(tmp_path: Path) -> None:
    s = load_settings(cwd=tmp_path)
    assert s.project_root == tmp_path.resolve()
    assert s.root == Path("docs/udm")
    assert s.udm_root == tmp_path.resolve() / "docs" / "udm"
    assert s.state_path == tmp_path.resolve() / "state"
    assert s.logs_path == tmp_path.resolve() / "logs"
    assert s.approval_policy is ApprovalPolicy.SMART_AUTO
    assert s.allowed_dirs == []
    assert s.allow_delete is False
    assert s.browser is None
    assert s.id_patterns == DEFAULT_ID_PATTERNS
    base = tmp_path.resolve()
    assert s.allowed_roots() == [base / "docs/udm", base / "scratch", base / "logs", base / "prompts"]
    assert s.scratch_path == base / "scratch" and s.state_path not in s.allowed_roots()


def test_resolution_order_each_layer_wins_over_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pyproject = '[project]\nname = "x"\n\n[tool.udm]\nroot = "from-pyproject"\nlogs_dir = "pp-logs"\n'
    udm_toml = 'root = "from-udm-toml"\napproval_policy = "full_auto"\n'
    write_sources(tmp_path, pyproject, udm_toml)
    monkeypatch.setenv("UDM_ROOT", "from-env")

    assert load_settings(cwd=tmp_path, root="from-override").root == Path("from-override")
    s = load_settings(cwd=tmp_path)
    assert s.root == Path("from-env")
    # Keys set by lower layers only still come through: the layers merge per key.
    assert s.approval_policy is ApprovalPolicy.FULL_AUTO
    assert s.logs_dir == Path("pp-logs")

    monkeypatch.delenv("UDM_ROOT")
    assert load_settings(cwd=tmp_path).root == Path("from-udm-toml")
    write_sources(tmp_path, pyproject, None)
    s = load_settings(cwd=tmp_path)
    assert s.root == Path("from-pyproject")
    assert s.approval_policy is ApprovalPolicy.SMART_AUTO
    write_sources(tmp_path, None, None)
    assert load_settings(cwd=tmp_path).root == Path("docs/udm")


def test_files_are_read_from_the_given_cwd_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    elsewhere = tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / "udm.toml").write_text('root = "manual"\n', encoding="utf-8")
    monkeypatch.chdir(elsewhere)
    assert load_settings(cwd=project).udm_root == project.resolve() / "manual"
    assert load_settings().root == Path("docs/udm")
    # load_settings must leave the working directory where it was.
    assert Path.cwd() == elsewhere.resolve()


def test_comma_separated_lists_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UDM_ALLOWED_DIRS", " extra-a, /abs/extra-b ,, extra-a ")
    monkeypatch.setenv("UDM_FETCH_ALLOW", "127.0.0.1,localhost")
    s = load_settings(cwd=tmp_path)
    assert s.allowed_dirs == [Path("extra-a"), Path("/abs/extra-b"), Path("extra-a")]
    assert s.fetch_allow == ["127.0.0.1", "localhost"]
    roots = s.allowed_roots()
    assert roots[-2:] == [tmp_path.resolve() / "extra-a", Path("/abs/extra-b")]
    assert len(roots) == len(set(roots))

    monkeypatch.setenv("UDM_ALLOWED_DIRS", '["json-a", "json-b"]')
    assert load_settings(cwd=tmp_path).allowed_dirs == [Path("json-a"), Path("json-b")]


def test_lists_from_toml_and_env_scalars(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "udm.toml").write_text(
        'allowed_dirs = ["t1", "t2"]\nbrowser_concurrency = 2\n', encoding="utf-8"
    )
    monkeypatch.setenv("UDM_ALLOW_DELETE", "true")
    monkeypatch.setenv("UDM_BROWSER", "/opt/chrome")
    monkeypatch.setenv("UDM_APPROVAL_POLICY", "ask_always")
    s = load_settings(cwd=tmp_path)
    assert s.allowed_dirs == [Path("t1"), Path("t2")]
    assert s.browser_concurrency == 2
    assert s.allow_delete is True
    assert s.browser == "/opt/chrome"
    assert s.approval_policy is ApprovalPolicy.ASK_ALWAYS


def test_bad_values_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UDM_APPROVAL_POLICY", "yolo")
    with pytest.raises(ConfigError, match="invalid setting 'approval_policy': Input should be 'ask_always'"):
        load_settings(cwd=tmp_path)
    monkeypatch.delenv("UDM_APPROVAL_POLICY")
    with pytest.raises(ConfigError, match="'browser_concurrency'"):
        load_settings(cwd=tmp_path, browser_concurrency=0)
    (tmp_path / "udm.toml").write_text("root = [1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(cwd=tmp_path)


def test_structured_settings_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Plain comma-separated globs ignore every rule there, as a list of globs in udm.toml does.
    monkeypatch.setenv("UDM_LINT_IGNORE", "vendor/*, drafts/*")
    assert load_settings(cwd=tmp_path).lint_ignore == {"vendor/*": ["*"], "drafts/*": ["*"]}
    monkeypatch.setenv("UDM_LINT_IGNORE", '{"vendor/*": ["broken-link"]}')
    assert load_settings(cwd=tmp_path).lint_ignore == {"vendor/*": ["broken-link"]}
    monkeypatch.delenv("UDM_LINT_IGNORE")
    # A map that is not JSON is a setting named in a ConfigError, never a traceback.
    monkeypatch.setenv("UDM_LINT_RULES", "{broken")
    with pytest.raises(ConfigError, match=r'invalid setting: .*"lint_rules".*holds JSON'):
        load_settings(cwd=tmp_path)
    monkeypatch.chdir(tmp_path)
    assert run(["config"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: invalid setting") and "Traceback" not in err


def test_cli_reports_bad_settings_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("UDM_APPROVAL_POLICY", "yolo")
    assert run(["config"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: invalid setting 'approval_policy'")
    assert "Traceback" not in err


def test_udm_config_prints_resolved_settings_with_secrets_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("UDM_BRAVE_API_KEY", "brave-secret-value")
    monkeypatch.setenv("UDM_CONTEXT7_API_KEY", "ctx7-secret-value")
    monkeypatch.setenv("UDM_STATE_DIR", "custom-state")
    assert run(["--root", "my-manual", "config"]) == 0
    out = capsys.readouterr().out
    assert "brave-secret-value" not in out
    assert "ctx7-secret-value" not in out
    data = json.loads(out)
    assert data["brave_api_key"] == "**********"
    assert data["context7_api_key"] == "**********"
    assert data["google_api_key"] is None
    assert data["udm_root"] == str(tmp_path.resolve() / "my-manual")
    assert data["state_path"] == str(tmp_path.resolve() / "custom-state")
    assert data["approval_policy"] == "smart_auto"
    assert str(tmp_path.resolve() / "logs") in data["allowed_roots"]

    assert run(["config", "--text"]) == 0
    text = capsys.readouterr().out
    assert "brave-secret-value" not in text
    assert 'brave_api_key = "**********"' in text
    # The --root of the previous invocation does not leak into this one.
    assert f'udm_root = "{tmp_path.resolve() / "docs" / "udm"}"' in text
