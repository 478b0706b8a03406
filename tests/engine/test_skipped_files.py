"""Which files the index reads: `.mdx` pages, the suffix setting, and every file left out listed with why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flows.cli import run
from udm.config import load_settings
from udm.index import UdmIndex
from udm.markdown import parse_document

MDX = """\
---
title: Cards
---

import { Card } from "/snippets/card.mdx";
export const meta = { id: "not-data" };

# Cards

<Card title="Install" href="/guide/install">
  Read [the guide](guide.md) first.
</Card>
"""


def _manual(tmp_path: Path) -> Path:
    root = tmp_path / "udm"
    root.mkdir()
    (root / "guide.md").write_text("# Guide\n\n[cards](cards.mdx)\n", encoding="utf-8")
    (root / "cards.mdx").write_text(MDX, encoding="utf-8")
    (root / "notes.mdown").write_text("# Notes\n", encoding="utf-8")
    (root / "latin.md").write_bytes(b"# Caf\xe9\n")
    (root / "big.md").write_text("# Big\n\n" + "word " * 400 + "\n", encoding="utf-8")
    outside = tmp_path / "secret.md"
    outside.write_text("# Secret\n", encoding="utf-8")
    (root / "linked.md").symlink_to(outside)
    return root


def test_mdx_is_indexed_and_every_skipped_file_is_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _manual(tmp_path)
    monkeypatch.setenv("UDM_MAX_FILE_BYTES", "1000")
    base = ["--root", str(root), "--state-dir", str(tmp_path / "state")]
    assert run([*base, "index"]) == 0
    out = capsys.readouterr().out
    assert "skipped 4 files:" in out
    assert "  big.md: skipped: too large (2008 bytes > max_file_bytes 1000)" in out, out
    assert "  latin.md: skipped: not valid UTF-8 (byte 5)" in out
    assert "  linked.md: skipped: a symbolic link out of the root" in out
    assert "  notes.mdown: skipped: suffix .mdown is not in markdown_suffixes" in out
    # Listed again on a run that parses nothing: never dropped silently.
    assert run([*base, "index"]) == 0
    assert "skipped 4 files:" in capsys.readouterr().out

    settings = load_settings(tmp_path, root=str(root), state_dir=str(tmp_path / "state"))
    index = UdmIndex(settings)
    try:
        with index.connect() as con:
            sections = con.execute("SELECT file, title FROM sections ORDER BY file").fetchall()
            links = con.execute("SELECT file, line, target, form FROM links ORDER BY file, line").fetchall()
            blocks = con.execute("SELECT count(*) FROM blocks WHERE file = 'cards.mdx'").fetchone()
    finally:
        index.close()
    assert sections == [("cards.mdx", "Cards"), ("guide.md", "Guide")]
    doc = parse_document(MDX, "cards.mdx")
    assert [(o.kind, o.start + 1, o.end) for o in doc.opaque] == [
        ("esm", 5, 6),
        ("jsx", 10, 10),
        ("jsx", 12, 12),
    ]
    assert links == [
        ("cards.mdx", 10, "/guide/install", "jsx"),
        ("cards.mdx", 11, "guide.md", "inline"),
        ("guide.md", 3, "cards.mdx", "inline"),
    ]
    assert blocks == (0,)  # the ESM `export` with an `id:` is no data block


def test_suffixes_are_a_setting(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _manual(tmp_path)
    base = ["--root", str(root), "--state-dir", str(tmp_path / "state")]
    os.environ["UDM_MARKDOWN_SUFFIXES"] = ".md,MDOWN"
    try:
        assert run([*base, "index", "--json"]) == 0
    finally:
        del os.environ["UDM_MARKDOWN_SUFFIXES"]
    data = json.loads(capsys.readouterr().out)
    assert {"path": "cards.mdx", "reason": "skipped: suffix .mdx is not in markdown_suffixes"} in data[
        "skipped"
    ]
    assert "notes.mdown" not in {s["path"] for s in data["skipped"]}  # '.MDOWN' makes it a page
    assert data["files"] == 4  # guide.md, notes.mdown, big.md and latin.md (listed, never parsed)


# A 50 MB file of one line, indexed by a fresh process: its peak memory is what it costs.
_BIG_INDEX = """
import sys
from udm.config import load_settings
from udm.markdown.document import parse_document
from udm.index.core import UdmIndex
ix = UdmIndex(load_settings(sys.argv[1], root=sys.argv[2], state_dir=sys.argv[3]))
stats = ix.refresh(full=True)
print(stats.errors)
print("skipped", ix.skipped_files())
ix.close()
# VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec from the forked copy of the (large)
# test process, so it would report the parent's size; VmHWM starts anew with this program.
with open("/proc/self/status") as fh:
    print("peak_mb", next(int(l.split()[1]) for l in fh if l.startswith("VmHWM")) // 1024)
"""


def test_a_50_mb_one_line_file_indexes_in_bounded_memory(tmp_path: Path) -> None:
    root = tmp_path / "udm"
    root.mkdir()
    (root / "small.md").write_text("# Small\n", encoding="utf-8")
    with open(root / "one-line.md", "wb") as fh:
        fh.write(b"[a](b.md) " * 5_000_000)  # 50 MB, no newline, dense with links
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-c", _BIG_INDEX, str(repo), str(root), str(tmp_path / "state")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(repo)},
    )
    assert proc.returncode == 0, proc.stderr
    peak = int(proc.stdout.rsplit("peak_mb", 1)[1])
    print(f"peak RSS indexing a 50 MB one-line file: {peak} MB")
    assert "one-line.md" in proc.stdout and "skipped: too large (50000000 bytes" in proc.stdout
    assert peak < 600, proc.stdout
