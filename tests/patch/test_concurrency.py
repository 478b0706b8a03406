"""Eight writer processes at once: no lost update, conflicts name the section, result = a serial order."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from udm.config import load_settings
from udm.patch import Workspace, apply_operations, load_patch

REPO = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("concurrent_child.py")
SECTIONS = ["Alpha", "Beta", "Gamma", "Delta", "Epsilon"]
DOC = "# Doc\n\n" + "".join(f"## {name}\n\nAbout {name}.\n\n" for name in SECTIONS)
OTHER = "# Other\n\n## One\n\nFirst.\n\n## Two\n\nSecond.\n"


def _patch_text(i: int) -> str:
    section = SECTIONS[i % 5]
    ops = [
        f"  - {{op: append_to_section, file: doc.md, section: {section}, content: 'Line from writer {i}.'}}"
    ]
    if i in (3, 4):
        ops.append(
            f"  - {{op: append_to_section, file: other.md, section: {['One', 'Two'][i - 3]}, content: 'Writer {i} was here.'}}"
        )
    return f"id: writer-{i}\ndescription: writer {i}\noperations:\n" + "\n".join(ops) + "\n"


def test_eight_writers(tmp_path: Path) -> None:
    root = tmp_path / "docs" / "udm"
    root.mkdir(parents=True)
    (tmp_path / "state").mkdir()
    (root / "doc.md").write_text(DOC, encoding="utf-8")
    (root / "other.md").write_text(OTHER, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    go = tmp_path / "go"
    files = []
    for i in range(8):
        (tmp_path / f"p{i}.yaml").write_text(_patch_text(i), encoding="utf-8")
        files.append(str(tmp_path / f"p{i}.yaml"))
    # One parent imports the engine once and forks the eight writers: real processes, started fast.
    parent = subprocess.Popen(
        [sys.executable, str(CHILD), str(tmp_path), str(go), *files],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 90
    while not all(Path(f + ".ready").exists() for f in files):
        assert time.monotonic() < deadline, "writers did not plan in time"
        assert parent.poll() is None, "the writers' parent died while they were planning"
        time.sleep(0.01)
    go.write_text("go", encoding="utf-8")
    assert json.loads(parent.communicate(timeout=90)[0]) == [0] * 8
    results = [json.loads(Path(f + ".result.json").read_text(encoding="utf-8")) for f in files]

    statuses = [r["status"] for r in results]
    for a, b in ((0, 5), (1, 6), (2, 7)):
        pair = sorted([statuses[a], statuses[b]])
        assert pair == ["committed", "conflict"], (a, b, results[a], results[b])
        loser = a if statuses[a] == "conflict" else b
        assert f"section 'Doc > {SECTIONS[a]}'" in results[loser]["error"]
    assert statuses[3] == statuses[4] == "committed"

    # No lost update, and the files equal the accepted patches applied one after the other.
    accepted = sorted((r["txid"], i) for i, r in enumerate(results) if r["status"] == "committed")
    texts = {"doc.md": DOC.encode(), "other.md": OTHER.encode()}
    ws = Workspace(root, reader=lambda rel: texts.get(rel))
    for _, i in accepted:
        apply_operations(load_patch(tmp_path / f"p{i}.yaml"), ws)
    for name in ("doc.md", "other.md"):
        assert (root / name).read_text(encoding="utf-8") == ws.read(name)
    doc = (root / "doc.md").read_text(encoding="utf-8")
    for i, r in enumerate(results):
        assert doc.count(f"Line from writer {i}.") == (1 if r["status"] == "committed" else 0)
    settings = load_settings(cwd=tmp_path)
    assert len(list((settings.state_path / "patches").glob("*.json"))) == len(accepted)
