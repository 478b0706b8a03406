"""The CLI's fast paths resolve settings and log calls through the same code as `Settings` and `call_tool`."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flows.entry import daemon_eligible, fast_query_id
from tasks.base import ToolContext, always_approve, call_tool
from udm.config import load_settings
from udm.errors import ConfigError
from udm.index import UdmIndex

KEYS = ("root", "state_dir", "logs_dir")
SOURCES = ("default", "option", "ENV", "env", "udm.toml", "pyproject")
VALUES = ("docs/udm", "manual", "./a/../b", "/tmp/udm-abs", "~/udm-home", "sub dir/x")


@pytest.fixture(autouse=True)
def _no_udm_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.lower().startswith("udm_"):
            monkeypatch.delenv(name)


def _write_sources(
    cwd: Path, chosen: dict[str, tuple[str, str]], monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    """Put each key's value where its source says; the leading options of a command line."""
    options: list[str] = []
    udm_toml, pyproject = [], ["[tool.udm]"]
    for key, (source, value) in chosen.items():
        if source == "option":
            options += ["--root" if key == "root" else "--state-dir", value]
        elif source in ("ENV", "env"):
            name = f"UDM_{key.upper()}"
            monkeypatch.setenv(name if source == "ENV" else name.lower(), value)
        elif source == "udm.toml":
            udm_toml.append(f"{key} = {json.dumps(value)}")
        elif source == "pyproject":
            pyproject.append(f"{key} = {json.dumps(value)}")
    (cwd / "udm.toml").write_text("\n".join(udm_toml) + "\n", encoding="utf-8")
    (cwd / "pyproject.toml").write_text("\n".join(pyproject) + "\n", encoding="utf-8")
    return options


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    chosen=st.fixed_dictionaries(
        {key: st.tuples(st.sampled_from(SOURCES), st.sampled_from(VALUES)) for key in KEYS}
    ),
    policy=st.sampled_from(("smart_auto", "full_auto", "ask_always", None)),
)
def test_fast_path_settings_are_the_settings_of_the_full_path(
    chosen: dict[str, tuple[str, str]], policy: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # --state-dir and --root are the only options; logs_dir has no option, so it takes the file instead.
    if chosen["logs_dir"][0] == "option":
        chosen["logs_dir"] = ("udm.toml", chosen["logs_dir"][1])
    with monkeypatch.context() as mp, tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        mp.chdir(cwd)
        options = _write_sources(cwd, chosen, mp)
        if policy is not None:
            mp.setenv("UDM_APPROVAL_POLICY", policy)
        conf = daemon_eligible([*options, "query", "id", "X-1"])
        overrides = {k: v for k, (s, v) in chosen.items() if s == "option"}
        full = load_settings(cwd, **overrides)
        if full.approval_policy.value == "ask_always":
            assert conf is None  # nobody to prompt on the fast paths
            return
        assert conf == {
            "root": str(full.udm_root),
            "state": str(full.state_path),
            "logs": str(full.logs_path),
            "approval_policy": full.approval_policy.value,
        }


def test_an_invalid_policy_is_left_to_the_full_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("UDM_APPROVAL_POLICY", "Full_Auto")
    with pytest.raises(ConfigError, match="approval_policy"):
        load_settings(tmp_path)
    assert daemon_eligible(["query", "id", "X-1"]) is None
    (tmp_path / "udm.toml").write_text("root = [\n", encoding="utf-8")
    monkeypatch.delenv("UDM_APPROVAL_POLICY")
    assert daemon_eligible(["query", "id", "X-1"]) is None  # bad TOML: the full path words it


def test_fast_and_full_log_lines_have_the_same_shape(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(workspace)
    s = load_settings(workspace)
    UdmIndex(s).refresh()
    assert fast_query_id(["query", "id", "COMP-002"]) == 0
    call_tool(
        "udmQueryTool",
        {"query_type": "find_by_id", "udm_path_or_id": "COMP-002"},
        ToolContext(settings=s, approver=always_approve),
    )
    lines = (workspace / "logs" / "tool-calls.jsonl").read_text(encoding="utf-8").splitlines()
    fast, full = json.loads(lines[-2]), json.loads(lines[-1])
    # The same leading options as the daemon's path, in both spellings.
    assert fast_query_id(["--root=docs/udm", "--state-dir", "state", "query", "id", "COMP-002"]) == 0
    assert fast.pop("fast_path") is True
    assert set(fast) == set(full)
    for key in ("tool", "input_digest", "input_fields", "permission", "decision", "status"):
        assert fast[key] == full[key], key


def test_the_daemon_fingerprint_sees_every_variable_settings_read(tmp_path: Path) -> None:
    from udm.daemon import client as dc

    base = dc.fingerprint(str(tmp_path), {"PATH": "/bin"})
    # Settings reads udm_root as UDM_ROOT: a daemon must not answer a client that set it.
    assert dc.fingerprint(str(tmp_path), {"PATH": "/bin", "udm_root": "elsewhere"}) != base
    assert dc.fingerprint(str(tmp_path), {"PATH": "/bin", "UDM_ROOT": "elsewhere"}) != base
    assert dc.fingerprint(str(tmp_path), {"PATH": "/usr/bin"}) == base
    (tmp_path / "udm.toml").write_text('root = "x"\n', encoding="utf-8")
    assert dc.fingerprint(str(tmp_path), {"PATH": "/bin"}) != base
