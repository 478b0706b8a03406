"""The commit's guards: long names, failed rollbacks, edits saved meanwhile, permissions, created folders, ids."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

import udm.patch.journal as journal
import udm.patch.transaction as transaction
import udm.patch.updates as updates
from udm.config import Settings
from udm.errors import PatchError
from udm.patch import PatchResult, apply_patch, parse_patch, recover_root
from udm.patch.transaction import journal_dir

from .conftest import CONFIG_DOC, SMALL_DOC


def apply(settings: Settings, *ops: dict[str, Any], patch_id: str | None = None) -> PatchResult:
    data: dict[str, Any] = {"description": "test", "operations": list(ops)}
    if patch_id:
        data["id"] = patch_id
    return apply_patch(parse_patch(data), settings)


def both_files(n: int = 1) -> list[dict[str, Any]]:
    """Edit config.md and roadmap.md (committed in that order: the changes are sorted by path)."""
    return [
        {"op": "replace_text", "file": "config.md", "old": "timeout: 10", "new": f"timeout: {10 + n}"},
        {"op": "replace_text", "file": "roadmap.md", "old": "Closing words.", "new": f"Closing {n}."},
    ]


def no_leftovers(settings: Settings) -> None:
    jroot = journal_dir(settings.state_path)
    assert not jroot.exists() or not any(jroot.iterdir()), list(jroot.iterdir())
    assert not [p for p in settings.udm_root.rglob("*") if p.name.endswith(".tmp")]


def test_a_file_name_near_name_max_commits(small: Settings) -> None:
    name = "x" * 240 + ".md"
    (small.udm_root / name).write_text("# A\n\nold\n", encoding="utf-8")
    res = apply(small, {"op": "replace_text", "file": name, "old": "old", "new": "new"})
    assert res.status == "committed", res.error
    assert (small.udm_root / name).read_text(encoding="utf-8") == "# A\n\nnew\n"
    no_leftovers(small)


def test_a_journal_whose_temp_name_is_too_long_is_recovered(small: Settings) -> None:
    # What an older writer left: its temp name (`.<name>.udm-<txid>.tmp`) exceeds NAME_MAX.
    target = small.udm_root / ("x" * 240 + ".md")
    target.write_text("# A\n\nold\n", encoding="utf-8")
    txid = "20250101T000000-deadbeef"
    jdir = journal_dir(small.state_path) / txid
    jdir.mkdir(parents=True)
    (jdir / "backup-0").write_bytes(target.read_bytes())
    entry = {
        "path": str(target),
        "before_sha": journal.sha(target.read_bytes()),
        "after_sha": journal.sha(b"# A\n\nnew\n"),
        "backup": "backup-0",
        "temp": str(target.with_name(f".{target.name}.udm-{txid}.tmp")),
    }
    (jdir / "journal.json").write_text(json.dumps({"txid": txid, "label": "old", "files": [entry]}))
    done = recover_root(small)
    assert done and done[0].startswith(f"rolled back {txid}")
    no_leftovers(small)
    res = apply(small, *both_files())
    assert res.status == "committed", res.error


def test_a_rollback_that_fails_is_a_status_and_the_next_write_finishes_it(
    small: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    os.chmod(small.udm_root / "config.md", 0o640)
    real_rename = transaction._rename
    calls = []

    def flaky_rename(dir_fd: int, src: str, dst: str, where: str) -> None:
        # The first rename in the UDM works; every later one (the second file's, the restore) fails.
        if small.udm_root in Path(where).parents:
            calls.append(where)
            if len(calls) > 1:
                raise OSError(5, "Input/output error")
        real_rename(dir_fd, src, dst, where)

    monkeypatch.setattr(transaction, "_rename", flaky_rename)
    res = apply(small, *both_files())
    assert res.status == "error"
    assert "could not be rolled back yet" in res.error and "udm recover" in res.error, res.error
    assert (small.udm_root / "config.md").read_text(encoding="utf-8") != CONFIG_DOC  # not undone yet
    monkeypatch.setattr(transaction, "_rename", real_rename)

    res = apply(small, *both_files(2))
    assert res.recovered and "rolled back" in res.recovered[0]
    assert res.status == "committed", res.error
    assert "timeout: 12" in (small.udm_root / "config.md").read_text(encoding="utf-8")
    assert stat.S_IMODE(os.stat(small.udm_root / "config.md").st_mode) == 0o640
    no_leftovers(small)


def test_a_disk_error_restores_the_files_and_their_permission_bits(
    small: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    os.chmod(small.udm_root / "config.md", 0o600)
    real_rename = transaction._rename
    calls = []

    def second_rename_fails(dir_fd: int, src: str, dst: str, where: str) -> None:
        if small.udm_root in Path(where).parents:
            calls.append(where)
            if len(calls) == 2:
                raise OSError(28, "No space left on device")
        real_rename(dir_fd, src, dst, where)

    monkeypatch.setattr(transaction, "_rename", second_rename_fails)
    res = apply(small, *both_files())
    assert res.status == "error" and "rolled back" in res.error, res.error
    assert (small.udm_root / "config.md").read_text(encoding="utf-8") == CONFIG_DOC
    assert stat.S_IMODE(os.stat(small.udm_root / "config.md").st_mode) == 0o600
    no_leftovers(small)


def test_commit_keeps_the_permission_bits(small: Settings) -> None:
    os.chmod(small.udm_root / "roadmap.md", 0o600)
    os.chmod(small.udm_root / "config.md", 0o664)
    res = apply(small, *both_files())
    assert res.status == "committed", res.error
    assert stat.S_IMODE(os.stat(small.udm_root / "roadmap.md").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(small.udm_root / "config.md").st_mode) == 0o664


def test_an_edit_saved_during_validation_is_kept_and_reported(
    small: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    theirs = SMALL_DOC + "\nTheir edit.\n"
    real_validate = updates.validate_workspace

    def validate_while_someone_saves(ws: Any, **options: Any) -> list[str]:
        (small.udm_root / "roadmap.md").write_text(theirs, encoding="utf-8")
        return real_validate(ws, **options)

    monkeypatch.setattr(updates, "validate_workspace", validate_while_someone_saves)
    res = apply(small, *both_files())
    assert res.status == "conflict", res.error
    assert "roadmap.md" in res.error and "changed by someone else" in res.error
    assert (small.udm_root / "roadmap.md").read_text(encoding="utf-8") == theirs
    assert (small.udm_root / "config.md").read_text(encoding="utf-8") == CONFIG_DOC
    assert not (small.state_path / "patches" / f"{res.patch_id}.json").exists()
    no_leftovers(small)


def test_an_edit_saved_just_before_the_rename_is_kept_and_the_rest_rolled_back(
    small: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    theirs = SMALL_DOC + "\nTheir edit.\n"
    real_fault_point = transaction.fault_point

    def save_after_first_rename(step: str) -> None:
        if step == "renamed_first":  # config.md already holds the new text
            (small.udm_root / "roadmap.md").write_text(theirs, encoding="utf-8")
        real_fault_point(step)

    monkeypatch.setattr(transaction, "fault_point", save_after_first_rename)
    res = apply(small, *both_files())
    assert res.status == "conflict", res.error
    assert (small.udm_root / "roadmap.md").read_text(encoding="utf-8") == theirs
    assert (small.udm_root / "config.md").read_text(encoding="utf-8") == CONFIG_DOC
    assert not (small.state_path / "patches" / f"{res.patch_id}.json").exists()
    no_leftovers(small)


def test_a_file_created_meanwhile_is_a_conflict(small: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    real_validate = updates.validate_workspace

    def validate_while_someone_creates(ws: Any, **options: Any) -> list[str]:
        (small.udm_root / "new.md").write_text("# Mine\n", encoding="utf-8")
        return real_validate(ws, **options)

    monkeypatch.setattr(updates, "validate_workspace", validate_while_someone_creates)
    res = apply(small, {"op": "create_file", "file": "new.md", "content": "# New\n"})
    assert res.status == "conflict", res.error
    assert (small.udm_root / "new.md").read_text(encoding="utf-8") == "# Mine\n"


class _Crash(BaseException):
    """Stands in for a kill at a fault point: nothing after it runs, no `except` of the commit sees it."""


@pytest.mark.parametrize("step", ["journal_written", "temps_written", "renamed_first", "renamed"])
def test_rollback_removes_the_folders_the_commit_created(
    small: Settings, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    def crash_at(name: str) -> None:
        if name == step:
            raise _Crash

    (small.udm_root / "old").mkdir()
    monkeypatch.setattr(transaction, "fault_point", crash_at)
    with pytest.raises(_Crash):
        apply(
            small,
            {"op": "create_file", "file": "new/dir/n.md", "content": "# N\n"},
            {"op": "create_file", "file": "old/o.md", "content": "# O\n"},
        )
    monkeypatch.undo()
    done = recover_root(small)
    assert done and "rolled back" in done[0]
    assert not (small.udm_root / "new").exists()
    assert (small.udm_root / "old").is_dir()  # it was there before
    assert not (small.udm_root / "old" / "o.md").exists()
    no_leftovers(small)


def test_rollback_keeps_a_created_folder_someone_filled(
    small: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash_at(name: str) -> None:
        if name == "renamed":
            (small.udm_root / "new" / "theirs.md").write_text("# Theirs\n", encoding="utf-8")
            raise _Crash

    monkeypatch.setattr(transaction, "fault_point", crash_at)
    with pytest.raises(_Crash):
        apply(small, {"op": "create_file", "file": "new/dir/n.md", "content": "# N\n"})
    monkeypatch.undo()
    recover_root(small)
    assert sorted(p.name for p in (small.udm_root / "new").iterdir()) == ["theirs.md"]


@pytest.mark.parametrize("bad", ["abc\n", "abc\r\n", "abc\n\n", "\nabc"])
def test_a_patch_id_with_a_newline_is_rejected(bad: str) -> None:
    with pytest.raises(PatchError, match="id may only hold"):
        parse_patch({"id": bad, "operations": [{"op": "delete_file", "file": "a.md"}]})
