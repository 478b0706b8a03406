"""A process that queried the index exits cleanly: its idle shared connection is closed at exit even
when the index object that opened it is gone (its release timer keeps the connection alive)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_SCRIPT = """
import sys
from udm.config import load_settings
from udm.index import UdmIndex

index = UdmIndex(load_settings(cwd=sys.argv[1]))
index.ensure_fresh()
with index.connect() as con:
    print(con.execute("SELECT count(*) FROM files").fetchone()[0])
del index  # the connection stays open, idle, until its release timer or the exit closes it
"""


def test_exit_closes_an_idle_connection_whose_index_is_gone(workspace: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(workspace)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.strip()) > 0
    # DuckDB's bindings (nanobind) list every connection still alive at interpreter teardown.
    assert "leaked" not in done.stderr, done.stderr[-2000:]
