"""Writer process of the concurrency test: plan a patch, wait for the start signal, commit, print JSON.

argv: project dir, patch file, ready-marker path, go-file path.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from udm.config import load_settings
from udm.patch import load_patch, parse_patch
from udm.updates import apply_patch

if __name__ == "__main__":
    project, patch_file, ready, go = sys.argv[1:5]
    settings = load_settings(cwd=project)
    plan = apply_patch(load_patch(patch_file), settings, dry_run=True)
    assert plan.planned_patch is not None, plan.error
    planned = parse_patch(plan.planned_patch)
    Path(ready).write_text("planned", encoding="utf-8")
    while not Path(go).exists():
        time.sleep(0.005)
    result = apply_patch(planned, settings)
    print(json.dumps({"status": result.status, "error": result.error, "txid": result.txid}), flush=True)
