"""Crash safety: a 20-file commit killed with SIGKILL at every named step and at random moments."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from filelock import FileLock

from udm.config import load_settings
from udm.patch import recover_root
from udm.patch.transaction import FAULT_ENV, FAULT_STEPS, SLOW_ENV, journal_dir, lock_path

REPO = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("crash_child.py")
FILES = 20


def _project(base: Path) -> Path:
    root = base / "docs" / "udm"
    (root / "sub").mkdir(parents=True)
    for sub in ("state", "logs"):
        (base / sub).mkdir()
    for n in range(FILES):
        folder = root / "sub" if n % 2 else root
        (folder / f"f{n:02}.md").write_text(f"# File {n}\n\nvalue: old-{n}\n", encoding="utf-8")
    ops = "\n".join(
        f"  - {{op: replace_text, file: {'sub/' if n % 2 else ''}f{n:02}.md, old: 'old-{n}', new: 'new-{n}'}}"
        for n in range(FILES)
    )
    (base / "patch.yaml").write_text(
        f"id: crash-test\ndescription: twenty files\noperations:\n{ops}\n", encoding="utf-8"
    )
    return base


class _ForkServer:
    """One child process that imported the engine once and forks a writer per trial."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        env.pop(FAULT_ENV, None)
        env.pop(SLOW_ENV, None)
        self.proc = subprocess.Popen(
            [sys.executable, str(CHILD)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        assert self._line() == "ready"

    def _line(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def run(self, project: Path, step: str | None, delay: float | None) -> int:
        """Start a writer; kill it after `delay` (or let the fault step stop it); its exit code."""
        assert self.proc.stdin is not None
        slow = "0.004" if delay is not None else "-"
        self.proc.stdin.write(f"{project} {project / 'patch.yaml'} {step or '-'} {slow}\n")
        self.proc.stdin.flush()
        started = self._line().split()
        assert started[0] == "started", started
        if delay is not None:
            time.sleep(delay)
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(started[1]), signal.SIGKILL)
        ended = self._line().split()
        assert ended[:2] == ["exit", started[1]], ended
        return int(ended[2])

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _check(project: Path, label: str) -> str:
    """Recover, then: all 20 files old or all new, the record with them, no temp file, journal or held lock."""
    settings = load_settings(cwd=project)
    recover_root(settings)
    root = settings.udm_root
    texts = [
        ((root / "sub" if n % 2 else root) / f"f{n:02}.md").read_text(encoding="utf-8") for n in range(FILES)
    ]
    olds = sum(f"value: old-{n}\n" in t for n, t in enumerate(texts))
    news = sum(f"value: new-{n}\n" in t for n, t in enumerate(texts))
    assert (olds, news) in ((FILES, 0), (0, FILES)), f"mixed state after {label}: {olds} old, {news} new"
    record = settings.state_path / "patches" / "crash-test.json"
    assert record.exists() == (news == FILES), "the patch record must commit with the files"
    leftovers = [p for p in project.rglob("*") if p.name.endswith(".tmp")]
    assert not leftovers, leftovers
    jdir = journal_dir(settings.state_path)
    assert not jdir.exists() or not any(jdir.iterdir())
    with FileLock(str(lock_path(settings.state_path)), timeout=0):
        pass  # the dead writer's lock is free
    return "new" if news else "old"


def _run(tmp_path: Path, steps: list[str], random_trials: int) -> dict[str, int]:
    rng = random.Random(4)
    plans: list[tuple[str | None, float | None]] = [(s, None) for s in steps]
    plans += [(None, rng.uniform(0.0, 0.08)) for _ in range(random_trials)]
    server = _ForkServer()
    outcomes = []
    try:
        for k, (step, delay) in enumerate(plans):
            project = _project(tmp_path / f"t{k}")
            code = server.run(project, step, delay)
            if step is not None:
                assert code == 137, f"step {step}: the writer exited {code} instead of crashing"
            outcomes.append(_check(project, step or f"kill after {delay:.3f} s"))
    finally:
        server.close()
    return {k: outcomes.count(k) for k in ("old", "new")}


def test_kill_at_every_named_step_then_recover(tmp_path: Path) -> None:
    counts = _run(tmp_path, list(FAULT_STEPS), random_trials=12)
    # Killed before the marker: rolled back; after it: rolled forward. Both must occur.
    assert counts["old"] >= 5 and counts["new"] >= 2, counts


@pytest.mark.slow
def test_two_hundred_kills(tmp_path: Path) -> None:
    counts = _run(tmp_path, list(FAULT_STEPS) * 5, random_trials=170)
    assert counts["old"] + counts["new"] == 210
    assert counts["old"] > 0 and counts["new"] > 0, counts
