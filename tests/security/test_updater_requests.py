"""udmUpdaterTool's requests besides an update list (#22.2): a revert, a reformat, a whole patch.

Attacks an agent calling the tool could make: have a revert (which deletes the files a patch created
and is never refused for the links it breaks) approved at a lower level than a delete; make a safe
dry-run reformat burn CPU by naming the manual many times; reach files outside the manual, in the
state folder or in `.git` through `format_paths`; load a record from outside the patch store through
`revert_patch_id`; make parsing a deep `patch` cost the square of its depth; have the review's diff artifact call an
override patch `moderate` while the review asks at the destructive level. Each case asserts the
refusal with a clear error, or what the tool did, and that nothing outside the manual changed.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from tasks.base import ApprovalRequest, Permission, ToolContext, always_approve, call_tool
from udm.config import ApprovalPolicy, Settings
from udm.errors import PatchError
from udm.patch import parse_patch

TOOL = "udmUpdaterTool"


def _call(settings: Settings, raw: dict[str, Any], approver: Any = always_approve) -> Any:
    return call_tool(TOOL, raw, ToolContext(settings=settings, approver=approver))


def _snapshot(folder: Path, but: Path | None = None) -> dict[str, bytes]:
    return {
        str(p): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink() and (but is None or not p.is_relative_to(but))
    }


def test_a_revert_that_deletes_a_created_file_is_asked_as_destructive(settings: Settings) -> None:
    created = {"operations": [{"op": "create_file", "file": "notes.md", "content": "# Notes\n\nNew.\n"}]}
    made = _call(settings, {"patch": {"id": "make-notes", **created}})
    assert made.envelope.success and (settings.udm_root / "notes.md").exists()
    asked: list[ApprovalRequest] = []

    def moderate_only(request: ApprovalRequest) -> bool:
        asked.append(request)
        return request.permission == Permission.MODERATE

    strict = settings.model_copy(update={"approval_policy": ApprovalPolicy.SMART_AUTO})
    res = _call(strict, {"revert_patch_id": "make-notes"}, moderate_only)
    # Before: asked as moderate, approved, and notes.md deleted by a moderate call.
    assert [r.permission for r in asked] == [Permission.DESTRUCTIVE]
    assert not res.envelope.success and "destructive" in (res.envelope.error or "")
    assert (settings.udm_root / "notes.md").exists()
    undone = _call(strict, {"revert_patch_id": "make-notes"})
    assert undone.envelope.success and not (settings.udm_root / "notes.md").exists()


def test_a_manual_named_many_times_is_formatted_once(settings: Settings) -> None:
    once = _call(settings, {"format_paths": ["."], "dry_run": True})
    many = _call(settings, {"format_paths": ["", "appendices", *(["."] * 300)], "dry_run": True})
    assert once.envelope.success and many.envelope.success
    # Before: every '.' formatted every file again ("mdformat of 3000+ file(s)"), a safe call's CPU
    # growing with the length of its list.
    assert many.output.report.description == once.output.report.description
    assert (
        once.output.report.description == f"mdformat of {len(list(settings.udm_root.rglob('*.md')))} file(s)"
    )
    assert many.envelope.data["unified_diff"] == once.envelope.data["unified_diff"]


@pytest.fixture
def hostile(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The sample manual with a link to a folder of Markdown outside it, a `.git` folder and the state
    folder inside it, each holding a Markdown file a reformat would rewrite."""
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.md").write_text("*  outside\n", encoding="utf-8")
    root = settings.udm_root
    (root / "elsewhere").symlink_to(outside, target_is_directory=True)
    (root / "escape.md").symlink_to(outside / "secret.md")
    (root / ".git").mkdir()
    (root / ".git" / "notes.md").write_text("*  in git\n", encoding="utf-8")
    state = root / "state-inside"
    (state / "patches").mkdir(parents=True)
    (state / "patches" / "notes.md").write_text("*  state\n", encoding="utf-8")
    return settings.model_copy(update={"state_dir": state})


HOSTILE_PATHS = [
    "..",
    "../docs",
    "/etc",
    "/etc/passwd",
    "elsewhere",
    "elsewhere/secret.md",
    "escape.md",
    ".git",
    ".git/notes.md",
    "state-inside",
    "state-inside/patches/notes.md",
    "a\x00.md",
    "a\u202e.md",
    "a\x1b[2J.md",
    "00-index.md\n../../x.md",
]


@hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    paths=st.lists(st.sampled_from(HOSTILE_PATHS), min_size=1, max_size=3),
    good=st.lists(st.sampled_from(["00-index.md", "appendices", "."]), max_size=2),
    dry_run=st.booleans(),
)
def test_format_paths_outside_the_manual_are_refused(
    hostile: Settings, paths: list[str], good: list[str], dry_run: bool
) -> None:
    outside = hostile.udm_root / "elsewhere"
    # The state folder inside the manual gets its write lock; only the patch store must stay as it was.
    before = _snapshot(outside.resolve()), _snapshot(hostile.udm_root, hostile.state_path)
    store = _snapshot(hostile.state_path / "patches")
    res = _call(hostile, {"format_paths": [*good, *paths], "dry_run": dry_run})
    data = res.envelope.data
    assert data is not None and data["status"] == "ERROR_INVALID_UPDATE", res.envelope
    assert data["committed"] is False and data["files_changed"] == []
    assert data["errorDetails"], data
    assert (_snapshot(outside.resolve()), _snapshot(hostile.udm_root, hostile.state_path)) == before
    assert _snapshot(hostile.state_path / "patches") == store


def test_a_reformat_of_the_whole_manual_never_touches_state_or_git(hostile: Settings) -> None:
    state_page = hostile.state_path / "patches" / "notes.md"
    before = _snapshot(hostile.udm_root / ".git"), state_page.read_bytes()
    res = _call(hostile, {"format_paths": []})
    data = res.envelope.data
    # The walk leaves .git and the state folder out, as the index does: the manual is formatted, they
    # are never written (it was once refused as a whole).
    assert data is not None and data["status"] == "SUCCESS" and data["committed"], data
    assert not any(f["path"].startswith((".git", "state-inside")) for f in data["files_changed"]), data
    # The state folder gains the reformat's record; its Markdown file stays as it was.
    assert (_snapshot(hostile.udm_root / ".git"), state_page.read_bytes()) == before


def _planted(settings: Settings) -> None:
    """A record, with an inverse that would delete 00-index.md, planted beside (not in) the patch store."""
    record = (
        '{"id": "planted", "kind": "patch", "inverse": [{"path": "00-index.md", "before": null, '
        '"before_sha": null, "after_sha": null}], "reverted_by": null}'
    )
    for where in (settings.state_path, settings.state_path.parent, settings.udm_root):
        (where / "planted.json").write_text(record, encoding="utf-8")


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    patch_id=st.one_of(
        st.sampled_from(
            [
                "../planted",
                "../../planted",
                "./../planted",
                "..\\planted",
                "%2e%2e/planted",
                "patches/../../planted",
                "/tmp/planted",
                ".",
                "..",
                "planted.json/..",
            ]
        ),
        st.text(st.sampled_from("./\\%~$*?abcdeplnt-_\x00\n"), min_size=1, max_size=30),
    )
)
def test_a_revert_id_never_reaches_outside_the_patch_store(settings: Settings, patch_id: str) -> None:
    _planted(settings)
    index = settings.udm_root / "00-index.md"
    res = _call(settings, {"revert_patch_id": patch_id})
    data = res.envelope.data
    assert data is not None and data["status"] == "ERROR_INVALID_UPDATE", res.envelope
    assert data["committed"] is False and index.exists()


def test_reverting_twice_is_refused_and_changes_nothing_more(settings: Settings) -> None:
    doc = {"id": "p-once", "operations": [{"op": "create_file", "file": "once.md", "content": "# Once\n"}]}
    assert _call(settings, {"patch": doc}).envelope.success
    first = _call(settings, {"revert_patch_id": "p-once"})
    assert first.envelope.success
    again = _call(settings, {"revert_patch_id": "p-once"})
    assert again.envelope.data["status"] == "ERROR_INVALID_UPDATE"
    assert "already reverted" in again.envelope.data["errorDetails"]
    # Reverting the revert brings the file back (a new transaction), once.
    revert_id = first.envelope.data["patch_id"]
    assert _call(settings, {"revert_patch_id": revert_id}).envelope.success
    assert (settings.udm_root / "once.md").read_text(encoding="utf-8") == "# Once\n"
    assert _call(settings, {"revert_patch_id": revert_id}).envelope.data["status"] == "ERROR_INVALID_UPDATE"


def _deep(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = {"a": [value]}
    return value


def test_a_deep_patch_is_refused_in_time_linear_in_its_depth() -> None:
    # 200,000 levels (1.6 MB of JSON): the lone-surrogate walk spelled every item's path, so the text
    # it built grew with the square of the depth (minutes here); now the path of a hit only.
    doc = {"operations": [{"op": "create_file", "file": "x.md", "content": "x"}], "zz": _deep(200_000)}
    started = time.perf_counter()
    with pytest.raises(PatchError, match="zz"):
        parse_patch(doc)
    assert time.perf_counter() - started < 20


def test_a_lone_surrogate_deep_down_is_named_by_its_path() -> None:
    doc = {"operations": [{"op": "set_front_matter", "file": "x.md", "key": "k", "value": _deep(3)}]}
    doc["operations"][0]["value"]["a"][0]["a"][0]["a"][0] = "bad \ud800"
    with pytest.raises(PatchError, match=r"operations\[0\]\.value\.a\[0\]\.a\[0\]\.a\[0\] \(U\+D800"):
        parse_patch(doc)


def test_the_review_artifact_names_an_override_destructive(settings: Settings) -> None:
    from flows.update_artifacts import diff_markdown
    from udm.patch import apply_patch

    doc = {
        "id": "forced",
        "operations": [
            {"op": "replace_text", "file": "06-config.md", "old": "timeout: 10", "new": "timeout: 20"}
        ],
        "override": {"by": "agent", "reason": "trust me"},
    }
    patch = parse_patch(doc)
    plan = apply_patch(patch, settings, dry_run=True)
    # Before: "moderate" on the page the reviewer reads, while the review asked at the destructive level.
    assert "**destructive**" in diff_markdown(plan, patch)
    assert "moderate" in diff_markdown(plan, parse_patch({k: v for k, v in doc.items() if k != "override"}))


def test_the_terminal_prompt_shows_escape_sequences_instead_of_running_them(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io
    import json
    import sys

    from flows.cli import run

    monkeypatch.chdir(workspace)
    # A patch written by an agent: its description erases the line above and draws a harmless one,
    # its content clears the screen; the real operation rewrites a timeout.
    erase = "\x1b[1A\x1b[2K\r"
    patch = {
        "id": "looks-harmless",
        "description": f"fix a typo{erase}  - replace_text 06-config.md typo",
        "operations": [
            {"op": "replace_text", "file": "06-config.md", "old": "timeout: 10", "new": "timeout: 99999"},
            {
                "op": "append_to_section",
                "file": "00-index.md",
                "section": "Lumen Unified Development Manual",
                "content": "\x1b[2J\x1b[H\u202eok",
            },
        ],
    }
    path = workspace / "p.json"
    path.write_text(json.dumps(patch), encoding="utf-8")
    before = (workspace / "docs" / "udm" / "06-config.md").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.StringIO("n\n"))
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    assert run(["patch", "apply", str(path)]) == 1
    err = capsys.readouterr().err
    # Before: the escape sequences reached the terminal as they were.
    assert "\x1b" not in err and "\u202e" not in err and "\r" not in err.replace("\r\n", "")
    assert "\\x1b[1A\\x1b[2K\\r" in err and "+\\x1b" in err and "\\u202eok" in err
    assert "replace_text 06-config.md" in err and "+  timeout: 99999" in err
    assert (workspace / "docs" / "udm" / "06-config.md").read_bytes() == before
