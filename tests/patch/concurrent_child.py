"""Writer processes of the concurrency test, forked from one parent that imported the engine once.

argv: project dir, go-file path, then one patch file per writer. Each forked writer plans its patch,
writes `<patch>.ready`, waits for the go file, commits, and writes its result to `<patch>.result.json`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from udm.config import load_settings
from udm.patch import apply_patch, load_patch, parse_patch


def _writer(project: str, patch_file: str, go: str) -> None:
    settings = load_settings(cwd=project)
    plan = apply_patch(load_patch(patch_file), settings, dry_run=True)
    assert plan.planned_patch is not None, plan.error
    planned = parse_patch(plan.planned_patch)
    Path(patch_file + ".ready").write_text("planned", encoding="utf-8")
    while not Path(go).exists():
        time.sleep(0.002)
    result = apply_patch(planned, settings)
    out = {"status": result.status, "error": result.error, "txid": result.txid}
    Path(patch_file + ".result.json").write_text(json.dumps(out), encoding="utf-8")


if __name__ == "__main__":
    project, go, *patches = sys.argv[1:]
    pids = []
    for patch_file in patches:
        pid = os.fork()
        if pid == 0:
            try:
                _writer(project, patch_file, go)
            finally:
                os._exit(0)
        pids.append(pid)
    codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]
    print(json.dumps(codes), flush=True)
