"""Hostile names and content: control/bidi characters in file names, lone surrogates in patch content.

File names are checked in one place, the path guard's text checks, so the file tool, patch paths and
browser download save paths refuse the same characters with the same message. A lone surrogate
(JSON "\\ud800") in a patch is invalid input wherever the patch comes from, never a traceback.
"""

from __future__ import annotations

import json
import re
import shutil
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from flows.cli import run
from tasks.base import ToolContext, always_approve, call_tool
from tasks.browser.browser_tools import _sandbox_write
from tasks.browser.session import ActionError
from udm.config import Settings, load_settings
from udm.errors import InvalidPathError, PatchError
from udm.guard import PathGuard
from udm.patch import apply_patch, parse_patch
from udm.patch.loading import loads_patch

REPO = Path(__file__).resolve().parents[2]

BAD_CHARS = [
    ("\u202e", "U+202E"),  # RIGHT-TO-LEFT OVERRIDE: `evil\u202egnp.md` displays as `evildm.png`
    ("\u202a", "U+202A"),
    ("\u2066", "U+2066"),
    ("\u2069", "U+2069"),
    ("\u200e", "U+200E"),
    ("\u200f", "U+200F"),
    ("\u200b", "U+200B"),  # ZERO WIDTH SPACE (Cf)
    ("\ufeff", "U+FEFF"),
    ("\u00ad", "U+00AD"),  # SOFT HYPHEN (Cf)
    ("\n", "U+000A"),
    ("\t", "U+0009"),
    ("\x1b", "U+001B"),
    ("\x7f", "U+007F"),
    ("\x85", "U+0085"),
]


@pytest.fixture
def proj(tmp_path: Path) -> Settings:
    """A copy of the sample UDM with state/, logs/ and prompts/."""
    shutil.copytree(REPO / "examples" / "udm", tmp_path / "docs" / "udm")
    for sub in ("state", "logs", "prompts"):
        (tmp_path / sub).mkdir()
    return load_settings(cwd=tmp_path)


def _ctx(settings: Settings) -> ToolContext:
    return ToolContext(settings=settings, approver=always_approve)


def _all_names(settings: Settings) -> set[str]:
    """The manual's file names; asserts no planted name exists anywhere in the project."""
    assert not [p for p in settings.project_root.rglob("*") if "evil" in p.name or "report" in p.name]
    return {p.name for p in settings.udm_root.rglob("*")}


# -- file names ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("ch", "code"), BAD_CHARS)
def test_the_guard_refuses_control_and_format_characters(proj: Settings, ch: str, code: str) -> None:
    guard = PathGuard(proj.allowed_roots(), proj.project_root)
    with pytest.raises(InvalidPathError, match=re.escape(code)):
        guard.resolve(f"docs/udm/evil{ch}gnp.md")


def test_the_guard_still_accepts_ordinary_unicode_names(proj: Settings) -> None:
    guard = PathGuard(proj.allowed_roots(), proj.project_root)
    for name in ["café.md", "日本語.md", "naïve résumé.md", "emoji-😀.md", "a\u00a0b.md", "ελληνικά.md"]:
        assert guard.resolve(f"docs/udm/{name}").name == name


def test_the_guard_accepts_the_joiners_real_names_are_spelled_with(proj: Settings) -> None:
    # Persian and Indic words use ZERO WIDTH NON-JOINER; emoji sequences join with ZERO WIDTH JOINER.
    guard = PathGuard(proj.allowed_roots(), proj.project_root)
    for name in ["می\u200cخواهم.md", "क्\u200dष.md", "👩\u200d💻-notes.md"]:
        assert guard.resolve(f"docs/udm/{name}").name == name


@pytest.mark.parametrize(("ch", "code"), [("\x00", "NUL"), *BAD_CHARS[:3], ("\n", "U+000A")])
def test_the_file_tool_refuses_such_names(proj: Settings, ch: str, code: str) -> None:
    before = _all_names(proj)
    for action in ("writeFile", "createDirectory", "readFile"):
        res = call_tool(
            "fileSystemAccessTool",
            {"action": action, "filePath": f"docs/udm/evil{ch}gnp.md", "content": "x"},
            _ctx(proj),
        )
        assert not res.envelope.success
        assert res.envelope.data is not None and res.envelope.data["status"] == "ERROR_INVALID_PATH", res
        assert code in (res.envelope.error or ""), res.envelope.error
    assert _all_names(proj) == before


@pytest.mark.parametrize(("ch", "code"), [("\x00", "NUL"), ("\u202e", "U+202E"), ("\u2067", "U+2067")])
def test_patch_paths_refuse_such_names(proj: Settings, ch: str, code: str) -> None:
    before = _all_names(proj)
    for op in (
        {"op": "create_file", "file": f"evil{ch}gnp.md", "content": "# E\n"},
        {"op": "rename_file", "file": "00-index.md", "to": f"evil{ch}gnp.md"},
    ):
        res = apply_patch(parse_patch({"operations": [op]}), proj)
        assert res.status == "invalid", res
        assert code in (res.error or ""), res.error
    assert _all_names(proj) == before


@pytest.mark.parametrize(("ch", "code"), [("\u202e", "U+202E"), ("\x1b", "U+001B")])
def test_browser_download_save_paths_refuse_such_names(proj: Settings, ch: str, code: str) -> None:
    before = _all_names(proj)
    with pytest.raises(ActionError) as exc:
        _sandbox_write(proj, proj.project_root / "scratch" / f"report{ch}fdp.exe", b"data")
    assert code in str(exc.value), exc.value
    assert _all_names(proj) == before


_control = st.characters(categories=["Cc", "Cf"])
_surrogate = st.characters(categories=["Cs"])
# Uniform code points almost never hit the few that matter: draw those on purpose too.
_any_char = st.one_of(st.characters(codec=None, exclude_characters="/"), _control, _surrogate)


def _texts(min_size: int = 0, max_size: int = 12) -> st.SearchStrategy[str]:
    # Joined from single characters: st.text() merges a one_of alphabet and drops the surrogates.
    return st.lists(_any_char, min_size=min_size, max_size=max_size).map("".join)


@hsettings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.one_of(
        _texts(min_size=1),
        st.builds(lambda a, c, b: a + c + b, _texts(max_size=5), _control, st.text(max_size=5)),
    )
)
def test_any_name_is_accepted_inside_or_refused_clearly(proj: Settings, name: str) -> None:
    guard = PathGuard(proj.allowed_roots(), proj.project_root)
    bad = any(unicodedata.category(c) in ("Cc", "Cf", "Cs") and c not in "\u200c\u200d" for c in name)
    try:
        real = guard.resolve(f"docs/udm/{name}")
    except InvalidPathError as exc:
        assert bad or len(name.encode("utf-8", "surrogatepass")) > 255, (name, exc)
        assert "\u202e" not in str(exc) and "\x00" not in str(exc)  # the message itself is safe to print
        return
    assert not bad, name
    assert proj.udm_root.resolve() in real.parents or real == proj.udm_root.resolve()


# -- lone surrogates in patch content ---------------------------------------------------------------

SURROGATE_PATCH = (
    '{"operations": [{"op": "replace_text", "file": "05-roadmap.md", "old": "a", "new": "b\\ud800"}]}'
)


def test_a_lone_surrogate_in_a_json_patch_is_invalid_input() -> None:
    with pytest.raises(PatchError, match=r"operations\[0\]\.new .*U\+D800.* lone surrogate"):
        loads_patch(SURROGATE_PATCH, "p.json")


def test_a_lone_surrogate_in_a_yaml_patch_is_invalid_input() -> None:
    text = 'operations:\n  - {op: set_yaml_key, file: a.md, key: k, value: {deep: ["x\\udc00"]}}\n'
    with pytest.raises(PatchError, match=r"operations\[0\]\.value\.deep\[0\] .*U\+DC00"):
        loads_patch(text, "p.yaml")


def test_a_lone_surrogate_in_a_key_is_invalid_input() -> None:
    data = {"operations": [{"op": "set_yaml_key", "file": "a.md", "key": "k", "value": {"\ud83d": 1}}]}
    with pytest.raises(PatchError, match="lone surrogate"):
        parse_patch(data)


def test_the_updater_tool_reports_a_lone_surrogate_as_invalid(proj: Settings) -> None:
    roadmap = proj.udm_root / "05-roadmap.md"
    before = roadmap.read_bytes()
    res = call_tool(
        "udmUpdaterTool",
        {
            "udm_updates_list": [
                {"target_file": "05-roadmap.md", "operation": "replace_text", "old": "a", "new": "b\ud800"}
            ]
        },
        _ctx(proj),
    )
    assert not res.envelope.success
    assert res.envelope.data is not None and res.envelope.data["status"] == "ERROR_INVALID_UPDATE"
    assert "lone surrogate" in (res.envelope.error or "")
    assert roadmap.read_bytes() == before


@pytest.mark.parametrize("command", ["check", "apply"])
def test_udm_patch_reports_a_lone_surrogate_without_a_traceback(
    proj: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    patch = tmp_path / "p.json"
    patch.write_text(SURROGATE_PATCH, encoding="utf-8")
    roadmap = proj.udm_root / "05-roadmap.md"
    before = roadmap.read_bytes()
    args = ["--root", str(proj.udm_root), "--state-dir", str(proj.state_path), "patch", command, str(patch)]
    code = run([*args, "--yes"] if command == "apply" else args)
    out = capsys.readouterr()
    assert code == 1
    assert "lone surrogate" in out.err and "Traceback" not in out.err + out.out, out
    assert roadmap.read_bytes() == before


@hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(new=_texts(), field=st.sampled_from(["new", "description"]))
def test_any_text_in_a_patch_commits_or_is_refused_clearly(proj: Settings, new: str, field: str) -> None:
    data: dict[str, Any] = {
        "operations": [
            {"op": "append_to_section", "file": "00-index.md", "section": "Contents", "content": "x"}
        ]
    }
    target = data if field == "description" else data["operations"][0]
    target["content" if field == "new" else field] = "\n" + new + "\n" if field == "new" else new
    has_surrogate = any(0xD800 <= ord(c) <= 0xDFFF for c in new)
    try:
        patch = parse_patch(data)
    except PatchError as exc:
        assert has_surrogate and "lone surrogate" in str(exc), exc
        return
    assert not has_surrogate
    res = apply_patch(patch, proj, dry_run=True)
    assert res.status in ("planned", "invalid", "unchanged"), res
    json.dumps(res.model_dump())  # the report itself is printable JSON
