"""The shipped verification pipeline against the sample site served by a plain static server."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.browser, pytest.mark.prefect]


@pytest.fixture
def static_site() -> Iterator[str]:
    """examples/site served by `python -m http.server` on 127.0.0.1 (no routes of our own)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-u",
            "-m",
            "http.server",
            "0",
            "--bind",
            "127.0.0.1",
            "--directory",
            "examples/site",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"port (\d+)", line)
        assert match, f"http.server did not start: {line!r}"
        yield f"http://127.0.0.1:{match.group(1)}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_shipped_verify_pipeline_passes_against_any_static_server(
    prefect_server: None, static_site: str, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows.pipeline import pipeline_flow

    monkeypatch.chdir(workspace)  # the flow step reads the manual (the sample UDM) from here
    monkeypatch.setenv("UDM_FETCH_ALLOW", "127.0.0.1")  # the site is on loopback: allowed explicitly
    summary = pipeline_flow(
        spec=str(REPO / "examples" / "pipelines" / "verify.yaml"),
        params={"base_url": static_site},
        project=str(workspace),
        artifact=False,
    )
    steps = summary["steps"]
    assert steps["site_up"]["output"]["status"] == "SUCCESS", steps["site_up"]
    checks = steps["checks"]["output"]
    statuses = {r["id"]: (r["status"], r.get("reason")) for r in checks["results"]}
    assert statuses == {
        "CHK-CONSOLE-HOME": ("PASS", None),
        "CHK-CONSOLE-ASK": ("PASS", None),
        "CHK-CONSOLE-SOURCES": ("PASS", None),
    }
