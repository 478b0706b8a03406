"""Hostile journals and racing symlinks: recovery and the commit never write, read or delete outside the roots.

A planted `state/journal/<txid>/journal.json` is untrusted input: its paths are refused unless they
resolve inside the transaction's roots, and a refused journal is moved aside and reported, never
acted on. A folder swapped for a symlink while a commit runs is never followed: the commit walks and
renames through directory descriptors. Each case counts the files outside the roots.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

import udm.patch.journal as journal
import udm.patch.transaction as transaction
from flows.cli import run
from udm.config import Settings, load_settings
from udm.errors import TransactionError
from udm.patch import PatchResult, apply_patch, parse_patch, recover_root
from udm.patch.transaction import journal_dir, refused_dir

DOC = "# Notes\n\nvalue: 0\n"
SECRET = b"outside secret\n"
TXID = "20250101T000000-0badc0de"


def _sha(data: bytes | None) -> str | None:
    return None if data is None else "sha256:" + hashlib.sha256(data).hexdigest()


def _project(base: Path) -> tuple[Settings, Path]:
    """A project (docs/udm with d/notes.md, state/, logs/) plus a folder outside it holding a secret."""
    root = base / "proj" / "docs" / "udm"
    (root / "d").mkdir(parents=True)
    (root / "d" / "notes.md").write_text(DOC, encoding="utf-8")
    for sub in ("state", "logs"):
        (base / "proj" / sub).mkdir()
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(SECRET)
    return load_settings(cwd=base / "proj"), outside


@pytest.fixture
def proj(tmp_path: Path) -> tuple[Settings, Path]:
    """A project and a folder outside it."""
    return _project(tmp_path)


def _outside_state(outside: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(outside)): (p.read_bytes() if p.is_file() else b"<dir>")
        for p in sorted(outside.rglob("*"))
    }


def _plant(
    settings: Settings,
    record: Any,
    *,
    files: dict[str, bytes] | None = None,
    committed: bool = False,
    name: str = TXID,
) -> Path:
    jdir = journal_dir(settings.state_path) / name
    jdir.mkdir(parents=True)
    for fname, data in (files or {}).items():
        (jdir / fname).write_bytes(data)
    raw = record if isinstance(record, bytes) else json.dumps(record).encode()
    (jdir / "journal.json").write_bytes(raw)
    if committed:
        (jdir / "COMMITTED").write_text(name)
    return jdir


def _legacy(*files: dict[str, Any], created_dirs: list[str] | None = None) -> dict[str, Any]:
    return {"txid": TXID, "label": "planted", "files": list(files), "created_dirs": created_dirs or []}


def _refused(settings: Settings, done: list[str], name: str = TXID) -> None:
    """The report names the refusal, and the journal sits untouched in journal-refused/."""
    assert any(line.startswith("refused") for line in done), done
    assert not (journal_dir(settings.state_path) / name).exists()
    assert (refused_dir(settings.state_path) / name / "journal.json").exists()


def _apply_edit(settings: Settings, n: int, prev: int = 0) -> PatchResult:
    patch = parse_patch(
        {
            "description": f"edit {n}",
            "operations": [
                {"op": "replace_text", "file": "d/notes.md", "old": f"value: {prev}", "new": f"value: {n}"},
                {"op": "create_file", "file": f"d/new-{n}.md", "content": f"# New {n}\n"},
            ],
        }
    )
    return apply_patch(patch, settings)


# -- planted journals ------------------------------------------------------------------------------


def test_a_planted_journal_cannot_delete_a_file_outside(proj: tuple[Settings, Path]) -> None:
    settings, outside = proj
    before = _outside_state(outside)
    victim = outside / "secret.txt"
    # "Created by the transaction and still holding its bytes": the old recovery unlinked it.
    entry = {
        "path": str(victim),
        "before_sha": None,
        "after_sha": _sha(SECRET),
        "backup": None,
        "temp": str(outside / f".x.udm-{TXID}.tmp"),
    }
    _plant(settings, _legacy(entry, created_dirs=[str(outside)]))
    done = recover_root(settings)
    _refused(settings, done)
    assert "outside the transaction's roots" in done[0]
    assert _outside_state(outside) == before


def test_a_planted_journal_cannot_write_outside(proj: tuple[Settings, Path]) -> None:
    settings, outside = proj
    # Roll back "restores" the backup to a path outside; roll forward renames a temp onto one.
    restore = {
        "path": str(outside / "planted.sh"),
        "before_sha": _sha(b"#!/bin/sh\n"),
        "after_sha": None,
        "backup": "backup-0",
        "temp": None,
    }
    _plant(settings, _legacy(restore), files={"backup-0": b"#!/bin/sh\n"})
    _refused(settings, recover_root(settings))
    assert not (outside / "planted.sh").exists()

    inside_temp = settings.udm_root / "d" / f".notes.udm-{TXID}.tmp"
    inside_temp.write_bytes(b"payload\n")
    forward = {
        "path": str(outside / "planted.sh"),
        "before_sha": None,
        "after_sha": _sha(b"payload\n"),
        "backup": None,
        "temp": str(inside_temp),
    }
    _plant(settings, _legacy(forward), committed=True, name="20250101T000001-0badc0de")
    forward_record = json.loads(
        (journal_dir(settings.state_path) / "20250101T000001-0badc0de" / "journal.json").read_text()
    )
    forward_record["txid"] = "20250101T000001-0badc0de"
    (journal_dir(settings.state_path) / "20250101T000001-0badc0de" / "journal.json").write_text(
        json.dumps(forward_record)
    )
    done = recover_root(settings)
    _refused(settings, done, "20250101T000001-0badc0de")
    assert not (outside / "planted.sh").exists()
    assert inside_temp.read_bytes() == b"payload\n"  # not acted on at all


def test_a_planted_journal_cannot_read_a_file_outside_into_the_root(proj: tuple[Settings, Path]) -> None:
    settings, outside = proj
    notes = settings.udm_root / "d" / "notes.md"
    # The "backup" is the secret: the old recovery copied it over notes.md.
    entry = {
        "path": str(notes),
        "before_sha": _sha(SECRET),
        "after_sha": _sha(notes.read_bytes()),
        "backup": str(outside / "secret.txt"),
        "temp": None,
    }
    _plant(settings, _legacy(entry))
    done = recover_root(settings)
    _refused(settings, done)
    assert "backup" in done[0]
    assert notes.read_text(encoding="utf-8") == DOC
    assert not [p for p in settings.udm_root.rglob("*") if p.is_file() and p.read_bytes() == SECRET]


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("../../../outside/secret.txt", "'..'"),
        ("d/../../../../outside/secret.txt", "'..'"),
        ("/etc/passwd", "absolute"),
        ("d/a\x00b.md", "NUL"),
        ("d/evil\u202egnp.md", "U+202E"),
        ("x" * 5000, "bytes long"),
    ],
)
def test_a_relative_journal_path_that_leaves_the_root_is_refused(
    proj: tuple[Settings, Path], path: str, why: str
) -> None:
    settings, outside = proj
    before = _outside_state(outside)
    entry = {
        "root": "udm",
        "path": path,
        "before_sha": None,
        "after_sha": _sha(SECRET),
        "mode": None,
        "backup": None,
        "temp": f".udm-{TXID}-0.tmp",
    }
    _plant(settings, {"version": 2, "txid": TXID, "files": [entry], "created_dirs": []})
    done = recover_root(settings)
    _refused(settings, done)
    assert why in done[0], done
    assert _outside_state(outside) == before


def test_a_journal_may_not_reach_into_the_state_folder(tmp_path: Path) -> None:
    # state/ inside the manual's folder: the "udm" root must still not touch the journal or locks.
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text(DOC, encoding="utf-8")
    settings = load_settings(cwd=tmp_path, root="docs", state_dir="docs/state")
    other = journal_dir(settings.state_path) / "20250101T000009-0badc0de"
    other.mkdir(parents=True)
    (other / "backup-0").write_bytes(b"keep")
    entry = {
        "root": "udm",
        "path": "state/journal/20250101T000009-0badc0de/backup-0",
        "before_sha": None,
        "after_sha": _sha(b"keep"),
        "mode": None,
        "backup": None,
        "temp": f".udm-{TXID}-0.tmp",
    }
    _plant(settings, {"version": 2, "txid": TXID, "files": [entry], "created_dirs": []})
    done = recover_root(settings)
    assert any("state folder" in line for line in done), done


def test_a_symlink_hop_out_stops_recovery_and_touches_nothing(proj: tuple[Settings, Path]) -> None:
    settings, outside = proj
    (settings.udm_root / "link").symlink_to(outside)
    before = _outside_state(outside)
    entry = {
        "root": "udm",
        "path": "link/secret.txt",
        "before_sha": None,
        "after_sha": _sha(SECRET),
        "mode": None,
        "backup": None,
        "temp": f".udm-{TXID}-0.tmp",
    }
    _plant(settings, {"version": 2, "txid": TXID, "files": [entry], "created_dirs": []})
    with pytest.raises(TransactionError, match="symlink") as exc:
        recover_root(settings)
    assert TXID in str(exc.value) and "udm recover" in str(exc.value)
    assert _outside_state(outside) == before
    assert (journal_dir(settings.state_path) / TXID).is_dir()  # kept for the next try
    # A writer reports it as its status, and writes nothing.
    res = _apply_edit(settings, 1)
    assert res.status == "error" and "symlink" in (res.error or ""), res
    # Once the link is gone, the journal's file simply does not exist: nothing to undo.
    (settings.udm_root / "link").unlink()
    done = recover_root(settings)
    assert done and done[0].startswith(f"rolled back {TXID}"), done
    assert _outside_state(outside) == before


def test_a_journal_folder_that_is_a_symlink_out_is_moved_aside_not_emptied(
    proj: tuple[Settings, Path],
) -> None:
    settings, outside = proj
    (outside / "journal.json").write_text("{}")
    (outside / "backup-0").write_bytes(b"theirs")
    journal_dir(settings.state_path).mkdir()
    (journal_dir(settings.state_path) / TXID).symlink_to(outside)
    before = _outside_state(outside)
    done = recover_root(settings)
    assert any(line.startswith(f"refused '{TXID}': it is not a folder") for line in done), done
    assert _outside_state(outside) == before


def test_the_journal_root_itself_as_a_symlink_is_moved_aside(proj: tuple[Settings, Path]) -> None:
    settings, outside = proj
    (outside / TXID).mkdir()
    (outside / TXID / "backup-0").write_bytes(b"theirs")
    journal_dir(settings.state_path).symlink_to(outside)
    before = _outside_state(outside)
    done = recover_root(settings)
    assert done and done[0].startswith("refused 'journal'"), done
    assert _outside_state(outside) == before
    assert _apply_edit(settings, 1).status == "committed"


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe", "not UTF-8"),
        (b"[1, 2]", "not an object"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (json.dumps({"txid": TXID, "files": "all"}).encode(), "'files'"),
        (json.dumps({"txid": "other", "files": []}).encode(), "txid"),
        (json.dumps({"version": 99, "txid": TXID, "files": []}).encode(), "unknown version"),
        (json.dumps({"version": 2, "txid": TXID, "files": [7]}).encode(), "files[0] is not an object"),
        (
            json.dumps(
                {
                    "version": 2,
                    "txid": TXID,
                    "files": [
                        {
                            "root": "udm",
                            "path": "d/notes.md",
                            "before_sha": None,
                            "after_sha": None,
                            "mode": 10**40,
                            "backup": None,
                            "temp": None,
                        }
                    ],
                }
            ).encode(),
            "mode",
        ),
        (
            json.dumps(
                {
                    "version": 2,
                    "txid": TXID,
                    "files": [
                        {
                            "root": "udm",
                            "path": "d/notes.md",
                            "before_sha": "md5:x",
                            "after_sha": None,
                            "backup": None,
                            "temp": None,
                        }
                    ],
                }
            ).encode(),
            "before_sha",
        ),
        (
            json.dumps(
                {
                    "version": 2,
                    "txid": TXID,
                    "files": [
                        {
                            "root": "etc",
                            "path": "passwd",
                            "before_sha": None,
                            "after_sha": None,
                            "backup": None,
                            "temp": None,
                        }
                    ],
                }
            ).encode(),
            "unknown root",
        ),
        (
            json.dumps(
                {
                    "version": 2,
                    "txid": TXID,
                    "files": [
                        {
                            "root": "udm",
                            "path": "d/notes.md",
                            "before_sha": None,
                            "after_sha": None,
                            "backup": None,
                            "temp": "notes.md",
                        }
                    ],
                }
            ).encode(),
            "temp",
        ),
        (
            json.dumps(
                {
                    "version": 2,
                    "txid": TXID,
                    "files": [
                        {
                            "root": "udm",
                            "path": "d/notes.md",
                            "before_sha": _sha(b"x"),
                            "after_sha": None,
                            "backup": "../../../outside/secret.txt",
                            "temp": None,
                        }
                    ],
                }
            ).encode(),
            "backup",
        ),
    ],
)
def test_a_malformed_journal_is_a_clear_report(proj: tuple[Settings, Path], raw: bytes, why: str) -> None:
    settings, outside = proj
    before = _outside_state(outside)
    _plant(settings, raw)
    done = recover_root(settings)
    _refused(settings, done)
    assert why in done[0], done
    assert _outside_state(outside) == before
    assert (settings.udm_root / "d" / "notes.md").read_text(encoding="utf-8") == DOC


def test_an_oversized_journal_is_refused_unread(
    proj: tuple[Settings, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings, _ = proj
    monkeypatch.setattr(journal, "MAX_JOURNAL_BYTES", 1000)
    _plant(settings, b'{"txid": "' + b"x" * 5000 + b'"}')
    done = recover_root(settings)
    _refused(settings, done)
    assert "larger than 1000 bytes" in done[0]


def test_a_stray_file_in_a_journal_folder_is_refused(proj: tuple[Settings, Path]) -> None:
    settings, _ = proj
    jdir = _plant(settings, b"{}")
    (jdir / "sub").mkdir()
    done = recover_root(settings)
    _refused(settings, done)
    assert "no journal file" in done[0]


def test_the_status_and_udm_recover_name_the_refusal(
    proj: tuple[Settings, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    settings, outside = proj
    entry = {
        "path": str(outside / "secret.txt"),
        "before_sha": None,
        "after_sha": _sha(SECRET),
        "backup": None,
        "temp": None,
    }
    _plant(settings, _legacy(entry))
    res = _apply_edit(settings, 1)
    assert res.status == "committed", res.error
    assert res.recovered and res.recovered[0].startswith(f"refused '{TXID}'"), res.recovered

    _plant(settings, _legacy(entry), name="20250101T000002-0badc0de")
    path = journal_dir(settings.state_path) / "20250101T000002-0badc0de" / "journal.json"
    path.write_text(path.read_text().replace(TXID, "20250101T000002-0badc0de"))
    code = run(["--root", str(settings.udm_root), "--state-dir", str(settings.state_path), "recover"])
    out = capsys.readouterr().out
    # A refused journal is an unfinished transaction: the exit code says so.
    assert code == 1 and "refused '20250101T000002-0badc0de'" in out and "outside" in out, out
    assert (outside / "secret.txt").read_bytes() == SECRET
    code = run(["--root", str(settings.udm_root), "--state-dir", str(settings.state_path), "recover"])
    assert code == 0 and "nothing to recover" in capsys.readouterr().out


def test_journals_are_written_with_relative_paths(
    proj: tuple[Settings, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings, _ = proj
    seen: list[dict[str, Any]] = []

    def look(step: str) -> None:
        if step == "journal_written":
            (jdir,) = list(journal_dir(settings.state_path).iterdir())
            seen.append(json.loads((jdir / "journal.json").read_text()))

    monkeypatch.setattr(transaction, "fault_point", look)
    assert _apply_edit(settings, 1).status == "committed"
    (record,) = seen
    assert record["version"] == 2
    assert {(f["root"], f["path"]) for f in record["files"]} >= {("udm", "d/notes.md"), ("udm", "d/new-1.md")}
    assert any(f["root"] == "patches" for f in record["files"])
    for f in record["files"]:
        assert not f["path"].startswith("/") and ".." not in f["path"].split("/")
        assert f["temp"] is None or "/" not in f["temp"]


# Any JSON value in any field of an otherwise valid journal: a report or a recovery, never a traceback.
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
_FIELDS = ["root", "path", "before_sha", "after_sha", "mode", "backup", "temp"]


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    field=st.sampled_from([*_FIELDS, "txid", "files", "created_dirs", "version"]),
    value=_json,
    text=st.text(alphabet=st.characters(codec=None), max_size=30),
)
def test_any_value_in_a_journal_field_is_handled(
    proj: tuple[Settings, Path], field: str, value: Any, text: str
) -> None:
    settings, outside = proj
    notes = settings.udm_root / "d" / "notes.md"
    data = notes.read_bytes()
    entry: dict[str, Any] = {
        "root": "udm",
        "path": "d/notes.md",
        "before_sha": _sha(data),
        "after_sha": _sha(b"other"),
        "mode": 0o644,
        "backup": "backup-0",
        "temp": f".udm-{TXID}-0.tmp",
    }
    record: dict[str, Any] = {"version": 2, "txid": TXID, "files": [entry], "created_dirs": []}
    target = entry if field in _FIELDS else record
    target[field] = text if isinstance(value, bool) else value  # strings with surrogates/controls too
    try:
        raw = json.dumps(record).encode()
    except (ValueError, TypeError):
        raw = b"{}"
    _plant(settings, raw, files={"backup-0": data})
    done = recover_root(settings)
    assert len(done) == 1 and (done[0].startswith(("refused", "rolled back"))), done
    assert not journal_dir(settings.state_path).exists() or not any(
        journal_dir(settings.state_path).iterdir()
    )
    assert _outside_state(outside) == {"secret.txt": SECRET}
    assert notes.read_bytes() == data


# -- a folder flipped to a symlink while commits run -------------------------------------------------


# Swaps the folder and a symlink with renameat2(RENAME_EXCHANGE): the name `d` is always there, a
# folder one moment and a link out of the root the next, so nothing can tell the swap from a real edit.
_FLIP = """
import ctypes, os, sys, time
folder, link, outside, stop = (a.encode() for a in sys.argv[1:5])
libc = ctypes.CDLL(None, use_errno=True)
os.symlink(outside, link)
def exchange():
    if libc.renameat2(-100, folder, -100, link, 2) != 0:
        err = ctypes.get_errno()
        print("unsupported" if err in (22, 38) else f"error {os.strerror(err)}")
        sys.exit(0)
flips = 0
while not os.path.exists(stop):
    exchange()
    time.sleep(0.0005)
    exchange()
    flips += 1
    time.sleep(0.0005)
os.unlink(link)
print(flips)
"""


class _Flipper:
    """A process that swaps `d` for a symlink to a folder outside the root and back, as fast as it can."""

    def __init__(self, folder: Path, outside: Path) -> None:
        self.folder, self.outside = folder, outside
        self.stop = folder.parent.parent / "stop-flipping"
        self.flips = 0
        self.proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> _Flipper:
        # A process, not a thread: a thread waits for the GIL and flips only between two applies.
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _FLIP,
                str(self.folder),
                str(self.folder) + ".link",
                str(self.outside),
                str(self.stop),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None
        self.stop.touch()
        out, _ = self.proc.communicate(timeout=30)
        self.stop.unlink()
        if out.strip() == "unsupported":
            pytest.skip("renameat2(RENAME_EXCHANGE) is not supported here")
        assert out.strip().isdigit(), out
        self.flips = int(out)


def _race(settings: Settings, outside: Path, applies: int) -> None:
    spill = outside / "spill"
    spill.mkdir()
    committed: list[int] = []
    outcomes: dict[str, int] = {}
    with _Flipper(settings.udm_root / "d", spill) as flipper:
        for n in range(1, applies + 1):
            res = _apply_edit(settings, n, committed[-1] if committed else 0)
            outcomes[res.status] = outcomes.get(res.status, 0) + 1
            if res.status == "committed":
                committed.append(n)
            else:
                assert res.error, res  # a clear error, never a silent failure
                assert res.status in ("error", "invalid", "conflict"), res
    assert flipper.flips > applies // 2, flipper.flips
    leaked = list(spill.rglob("*"))
    assert leaked == [], f"{len(leaked)} files outside the root: {leaked[:5]} ({outcomes})"
    recover_root(settings)
    folder = settings.udm_root / "d"
    text = (folder / "notes.md").read_text(encoding="utf-8")
    assert text == DOC.replace("value: 0", f"value: {committed[-1] if committed else 0}"), (text, outcomes)
    assert sorted(p.name for p in folder.glob("new-*.md")) == sorted(f"new-{n}.md" for n in committed)
    assert not list(settings.udm_root.rglob("*.tmp"))
    assert _outside_state(outside) == {"secret.txt": SECRET, "spill": b"<dir>"}


def test_racing_applies_against_a_flipping_symlink_leave_nothing_outside(proj: tuple[Settings, Path]) -> None:
    _race(*proj, applies=100)


@pytest.mark.slow
def test_600_racing_applies_leave_nothing_outside(proj: tuple[Settings, Path]) -> None:
    _race(*proj, applies=600)


@pytest.mark.parametrize("step", ["backups_written", "journal_written", "temps_written", "renamed_first"])
def test_a_folder_swapped_at_each_step_is_never_followed(
    proj: tuple[Settings, Path], monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    settings, outside = proj
    folder = settings.udm_root / "d"
    # The link points at a copy of the folder, so the last look before the rename finds the bytes it
    # expects there: only the walk, not the conflict check, can stop the commit.
    copy = outside / "copy"
    shutil.copytree(folder, copy)
    swapped: list[str] = []
    real_fault_point: Callable[[str], None] = transaction.fault_point

    def swap(name: str) -> None:
        if name == step and not swapped:
            os.rename(folder, folder.with_name("d.real"))
            folder.symlink_to(copy, target_is_directory=True)
            swapped.append(name)
        real_fault_point(name)

    monkeypatch.setattr(transaction, "fault_point", swap)
    before = _outside_state(outside)
    res = _apply_edit(settings, 1)
    assert swapped == [step]
    assert _outside_state(outside) == before
    assert res.status == "error" and "symlink" in (res.error or ""), res
    monkeypatch.undo()
    folder.unlink()
    os.rename(folder.with_name("d.real"), folder)
    recover_root(settings)
    assert not list(settings.udm_root.rglob("*.tmp"))


def test_an_old_journal_of_the_first_commit_is_recovered(proj: tuple[Settings, Path]) -> None:
    # The old writer's first commit created state/patches itself and listed it among created_dirs.
    settings, _ = proj
    notes = settings.udm_root / "d" / "notes.md"
    new = b"# Notes\n\nvalue: 9\n"
    record = settings.state_path / "patches" / "p1.json"
    record.parent.mkdir()
    record.write_bytes(b"{}\n")
    notes.write_bytes(new)
    entries = [
        {
            "path": str(notes),
            "before_sha": _sha(DOC.encode()),
            "after_sha": _sha(new),
            "backup": "backup-0",
            "temp": str(notes.with_name(f".notes.md.udm-{TXID}.tmp")),
        },
        {
            "path": str(record),
            "before_sha": None,
            "after_sha": _sha(b"{}\n"),
            "backup": None,
            "temp": str(record.with_name(f".p1.json.udm-{TXID}.tmp")),
        },
    ]
    _plant(settings, _legacy(*entries, created_dirs=[str(record.parent)]), files={"backup-0": DOC.encode()})
    done = recover_root(settings)
    assert done == [f"rolled back {TXID} (2 files, it was not committed)"], done
    assert notes.read_text(encoding="utf-8") == DOC
    assert not record.exists()
