"""Stopping a worker process the engine talks to over pipes (the SQL and SPARQL workers)."""

from __future__ import annotations

import contextlib
import subprocess
from typing import Any

__all__ = ["kill_worker"]


def kill_worker(proc: subprocess.Popen[Any]) -> None:
    """Kill the worker, reap it (bounded wait) and close our ends of its pipes."""
    proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            stream.close()
