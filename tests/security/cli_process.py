"""`udm` run as a separate process, in a pipe or under a pseudo-terminal (what a person's terminal sees)."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_udm(
    cwd: Path | bytes, *args: str, terminal: bool = False, env: dict[str, str] | None = None
) -> tuple[int, bytes]:
    """`udm ARGS` as a process in `cwd` (no UDM_* variable of ours leaks in): its exit code and its
    stdout+stderr bytes, read from a pipe or, with `terminal`, from a pseudo-terminal."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("UDM_")}
    environ["PYTHONPATH"] = str(REPO)
    environ.update(env or {})
    command = [sys.executable, "-c", "from flows.entry import main; main()", *args]
    if not terminal:
        proc = subprocess.run(command, cwd=cwd, env=environ, capture_output=True, timeout=300)
        return proc.returncode, proc.stdout + proc.stderr
    master, slave = pty.openpty()
    child = subprocess.Popen(
        command, cwd=cwd, env=environ, stdout=slave, stderr=slave, stdin=subprocess.DEVNULL
    )
    os.close(slave)
    out = b""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed its end
                break
            if not chunk:
                break
            out += chunk
        elif child.poll() is not None:
            break
    os.close(master)
    return child.wait(timeout=60), out
