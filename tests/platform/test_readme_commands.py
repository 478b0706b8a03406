"""The README's Prefect sections run as written on the sample (the slow part needs a real server)."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def bash_blocks(section: str) -> list[list[str]]:
    """The command lines of every ```bash block under a README heading (until the next heading)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index(f"\n{section}\n")
    end = text.find("\n#", start + len(section) + 2)
    body = text[start : end if end != -1 else len(text)]
    blocks = re.findall(r"```bash\n(.*?)```", body, re.S)
    return [[line for line in block.splitlines() if line.strip()] for block in blocks]


@pytest.fixture
def sample_project(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The workspace (the sample manual at docs/udm) with the checkout's examples, as the working directory."""
    shutil.copytree(REPO / "examples", workspace / "examples", ignore=shutil.ignore_patterns("udm"))
    monkeypatch.chdir(workspace)
    return workspace


@pytest.mark.prefect
def test_the_pipeline_commands_run_as_written(
    prefect_server: None, sample_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from flows.cli import run

    [block] = bash_blocks("### Declarative pipelines")
    assert len(block) == 3
    for line in block:
        argv = shlex.split(line, comments=True)
        assert argv[0] == "udm", line
        code = run(argv[1:])
        out = capsys.readouterr()
        assert code == 0, (line, out.out[-2000:], out.err[-2000:])
    roadmap = (sample_project / "docs" / "udm" / "05-roadmap.md").read_text(encoding="utf-8")
    task = roadmap.split("id: TASK-P2-M2.1-T004", 1)[1][:200]
    assert "status: in_progress" in task  # the update pipeline changed the sample


@pytest.mark.prefect
def test_the_update_command_pauses_for_review_on_the_sample(
    prefect_server: None, sample_project: Path, reviewer: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from flows.cli import run

    lines = [line for block in bash_blocks("### Local server, deployments and schedules") for line in block]
    [line] = [line for line in lines if line.startswith("udm run update ")]
    thread, seen = reviewer({"approve": True, "reviewer": "ann", "comment": "go"})
    code = run(shlex.split(line, comments=True)[1:])
    thread.join(5)
    out = capsys.readouterr().out
    assert code == 0 and "run_id" in seen, out
    assert "update flow: committed (Completed)" in out
    roadmap = (sample_project / "docs" / "udm" / "05-roadmap.md").read_text(encoding="utf-8")
    assert "assignee: bob" in roadmap
