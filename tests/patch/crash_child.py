"""Fork server of the crash tests: imports once, then forks one writer process per trial.

Reads lines `<project dir> <patch file> <fault step or -> <slow seconds or ->` from stdin; for each
forks a child that applies the patch (and may be killed by the test), prints `started <pid>`, waits
for it and prints `exit <pid> <status>`.
"""

from __future__ import annotations

import os
import sys

from udm.config import load_settings
from udm.patch import apply_patch, load_patch
from udm.patch.transaction import FAULT_ENV, SLOW_ENV


def _child(project: str, patch_file: str, step: str, slow: str) -> None:
    if step != "-":
        os.environ[FAULT_ENV] = step
    if slow != "-":
        os.environ[SLOW_ENV] = slow
    result = apply_patch(load_patch(patch_file), load_settings(cwd=project))
    os._exit(0 if result.ok else 1)


if __name__ == "__main__":
    print("ready", flush=True)
    for line in sys.stdin:
        project, patch_file, step, slow = line.split()
        pid = os.fork()
        if pid == 0:
            _child(project, patch_file, step, slow)
        print(f"started {pid}", flush=True)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        print(f"exit {pid} {code}", flush=True)
