"""The CLI's fast path reads its settings with the standard library (`udm/config_sources.py`): it must
see the manual, state and logs `Settings` sees, whatever the config files and variables say.

Attacks a hostile (or merely unusual) `udm.toml`, `[tool.udm]` or environment could make: a key in
another case (`ROOT = "x"`, which `Settings` reads as the root, made `udm query id` answer from
`docs/udm`), two spellings of one key, values of the wrong type, `..` and `~` in paths, a file nested
past the parser's recursion limit, a `tool` that is not a table (both were tracebacks). Every case
asserts: the fast path gives exactly the full path's folders and policy, or leaves the command to the
full path, which reports bad settings as a ConfigError.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from flows.cli import run
from flows.entry import daemon_eligible
from udm.config import load_settings
from udm.errors import ConfigError

KEYS = ("root", "state_dir", "logs_dir", "approval_policy", "project_root")
PATHS = ("docs/udm", "manual", "./a/../b", "../up", "~/home-udm", "/tmp/abs-udm", "", "sub dir/x")
POLICIES = ("smart_auto", "full_auto", "ask_always", "Smart_Auto")


@pytest.fixture(autouse=True)
def _no_udm_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.lower().startswith("udm_"):
            monkeypatch.delenv(name)


def _spellings(key: str) -> st.SearchStrategy[str]:
    return st.sampled_from([key, key.upper(), key.title(), key[0].upper() + key[1:]])


def _value(key: str) -> st.SearchStrategy[Any]:
    good = st.sampled_from(POLICIES if key == "approval_policy" else PATHS)
    return st.one_of(good, good, st.integers(-3, 3), st.booleans(), st.lists(good, max_size=2))


def _toml_value(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, bool) else str(value).lower()


@st.composite
def _table(draw: st.DrawFn) -> list[tuple[str, Any]]:
    """Entries of one TOML table: some settings, each in one or two spellings."""
    entries: list[tuple[str, Any]] = []
    for key in draw(st.lists(st.sampled_from(KEYS[:-1]), unique=True, max_size=3)):
        names = draw(st.lists(_spellings(key), min_size=1, max_size=2, unique=True))
        entries += [(name, draw(_value(key))) for name in names]
    if draw(st.integers(0, 9)) == 0:
        entries.append((draw(_spellings("project_root")), "."))
    return entries


@st.composite
def _environment(draw: st.DrawFn) -> list[tuple[str, str]]:
    env: list[tuple[str, str]] = []
    for key in draw(st.lists(st.sampled_from(KEYS[:-1]), unique=True, max_size=2)):
        for name in draw(st.lists(_spellings(f"udm_{key}"), min_size=1, max_size=2, unique=True)):
            value = draw(st.sampled_from(POLICIES if key == "approval_policy" else PATHS))
            env.append((name, value))
    return env


def _write(path: Path, header: str, entries: list[tuple[str, Any]]) -> None:
    lines = [header] if header else []
    lines += [f"{name} = {_toml_value(value)}" for name, value in entries]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@hsettings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    udm_toml=_table(),
    pyproject=_table(),
    env=_environment(),
    root_option=st.sampled_from([None, "manual", "--root=opt", ""]),
)
def test_the_fast_path_reads_the_folders_settings_reads(
    udm_toml: list[tuple[str, Any]],
    pyproject: list[tuple[str, Any]],
    env: list[tuple[str, str]],
    root_option: str | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with monkeypatch.context() as mp, tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        mp.chdir(cwd)
        _write(cwd / "udm.toml", "", udm_toml)
        _write(cwd / "pyproject.toml", "[tool.udm]", pyproject)
        for name, value in env:
            mp.setenv(name, value)
        options: list[str] = []
        overrides: dict[str, Any] = {}
        if root_option is not None:
            if root_option.startswith("--root="):
                options, overrides["root"] = [root_option], Path(root_option.partition("=")[2])
            else:
                options, overrides["root"] = ["--root", root_option], Path(root_option)
        fast = daemon_eligible([*options, "query", "id", "X-1"])
        try:
            full = load_settings(cwd, **overrides)
        except ConfigError as exc:
            # The full path words what is wrong; a rule on settings the fast path does not read (the
            # scratch folder inside a state folder of "") is left to the commands that use them.
            assert fast is None or "scratch_dir" in str(exc)
            return
        if fast is None:
            return  # left to the full path (ask_always, project_root, ...)
        assert fast == {
            "root": str(full.udm_root),
            "state": str(full.state_path),
            "logs": str(full.logs_path),
            "approval_policy": full.approval_policy.value,
        }


def test_a_root_in_upper_case_is_the_root_of_both_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "udm.toml").write_text('ROOT = "current"\nState_Dir = "st"\n', encoding="utf-8")
    full = load_settings(tmp_path)
    assert full.udm_root == tmp_path / "current"
    # Before: the fast path read docs/udm and state/, another manual's lookup.
    assert daemon_eligible(["query", "id", "X-1"]) == {
        "root": str(tmp_path / "current"),
        "state": str(tmp_path / "st"),
        "logs": str(tmp_path / "logs"),
        "approval_policy": "smart_auto",
    }


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("udm.toml", "x = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
        ("udm.toml", "x = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n", "nested too deeply"),
        ("pyproject.toml", "tool = 5\n", "`tool` is a int, not a table"),
        ("pyproject.toml", 'tool = ["udm"]\n', "`tool` is a list, not a table"),
        ("pyproject.toml", '[tool]\nudm = "root"\n', "`tool.udm` is a str, not a table"),
    ],
)
def test_a_config_file_the_parser_cannot_take_is_a_clear_error(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
    text: str,
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text(text, encoding="utf-8")
    # Before: RecursionError / AttributeError out of both paths, a traceback for every `udm` command.
    assert daemon_eligible(["query", "id", "X-1"]) is None
    with pytest.raises(ConfigError, match=message):
        load_settings(tmp_path)
    assert run(["config"]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


# '?' is left out: DuckDB itself cannot write an index under such a folder (its WAL path breaks there).
@pytest.mark.parametrize("name", ["C# docs", "50%25 done", "a#b%d"])
def test_a_project_folder_with_uri_characters_is_answered_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    from flows.entry import fast_query_id
    from udm.index import UdmIndex

    project = tmp_path / name
    (project / "docs" / "udm").mkdir(parents=True)
    (project / "docs" / "udm" / "a.md").write_text("# A\n\n## COMP-042 The part\n\nText.\n", encoding="utf-8")
    monkeypatch.chdir(project)
    UdmIndex(load_settings(project)).refresh()
    capsys.readouterr()
    # Before: the lookup's path went into a SQLite URI as it was, so '#' cut it short: the fast path
    # opened (creating, read-write) a file named by the folder's prefix beside the project, and '%25'
    # named another folder ("50% done"); it never answered here.
    assert fast_query_id(["query", "id", "COMP-042"]) == 0
    assert "COMP-042\ta.md:3" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
