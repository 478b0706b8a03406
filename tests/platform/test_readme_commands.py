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


def _port_free(port: int) -> bool:
    import socket

    with socket.socket() as s:
        # As the servers bind: a port left in TIME_WAIT by an earlier run is free for them.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.timeout(900)
def test_the_server_serve_deploy_and_schedule_commands_run_as_written(tmp_path: Path) -> None:
    """Every command of "Local server, deployments and schedules", in order, in a sample project."""
    import os
    import signal
    import subprocess
    import sys
    import time

    for port in (4200, 8000):
        if not _port_free(port):
            pytest.skip(f"port {port} is busy; the README's commands use it")
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    shutil.copytree(REPO / "examples" / "udm", project / "docs" / "udm")
    shutil.copytree(REPO / "examples", project / "examples", ignore=shutil.ignore_patterns("udm"))
    for sub in ("state", "logs"):
        (project / sub).mkdir()
    for name in ("flows", "tasks", "udm", "prefect.yaml"):
        (project / name).symlink_to(REPO / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UDM_", "PREFECT_"))}
    env.update(
        PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}",
        PYTHONPATH=str(REPO),
        PREFECT_HOME=str(project / "state" / "client-home"),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        DO_NOT_TRACK="1",
        PREFECT_LOGGING_LEVEL="WARNING",
        PREFECT_WORKER_QUERY_SECONDS="2",
    )
    background: list[subprocess.Popen[str]] = []

    def sh(line: str, timeout: float = 300) -> str:
        """One README line through bash in the project: in the background when it ends with '&'."""
        line = re.sub(r"\s+#\s.*$", "", line)  # a trailing comment
        if line.rstrip().endswith("&"):
            log = (tmp_path / f"background-{len(background)}.log").open("w")
            # Its own process group: the cleanup below stops bash and what it started together.
            proc = subprocess.Popen(
                ["bash", "-c", line.rstrip().rstrip("&")],
                cwd=project,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
            background.append(proc)
            return ""
        done = subprocess.run(
            ["bash", "-c", line], cwd=project, env=env, capture_output=True, text=True, timeout=timeout
        )
        assert done.returncode == 0, (line, done.stdout[-3000:], done.stderr[-3000:])
        return done.stdout + done.stderr

    def api() -> Any:
        """A settings context pointing this process's client at the README's server (single use)."""
        from prefect.settings import PREFECT_API_URL, temporary_settings

        return temporary_settings(updates={PREFECT_API_URL: "http://127.0.0.1:4200/api"})

    def wait(predicate: Any, seconds: float, what: str) -> Any:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(1)
        logs = "\n".join(p.read_text()[-2000:] for p in sorted(tmp_path.glob("background-*.log")))
        raise AssertionError(f"timed out waiting for {what}; background output:\n{logs}")

    blocks = bash_blocks("### Local server, deployments and schedules")
    server, sample, pool, schedules = blocks
    try:
        assert "running" in sh(server[0]) + sh(server[1])
        env["PREFECT_API_URL"] = "http://127.0.0.1:4200/api"  # sample[0], the export
        assert sample[0].startswith("export PREFECT_API_URL=http://127.0.0.1:4200/api")
        sh(sample[1])  # the sample site
        sh(sample[2])  # udm serve
        from prefect.client.orchestration import get_client

        def served(name: str) -> Any:
            with api(), get_client(sync_client=True) as client:
                try:
                    return client.read_deployment_by_name(name)
                except Exception:
                    return None

        wait(lambda: served("udm-pipeline/run-pipeline-served"), 180, "udm serve")
        out = sh(sample[3], timeout=600)  # the verify pipeline through the served deployment
        assert "Completed" in out, out[-3000:]
        # The update pauses for review: approve it as a reviewer in the UI would.
        update = subprocess.Popen(
            ["bash", "-c", sample[4]],
            cwd=project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterState, FlowRunFilterStateType
        from prefect.client.schemas.objects import StateType
        from prefect.flow_runs import resume_flow_run

        def paused() -> Any:
            with api(), get_client(sync_client=True) as client:
                runs = client.read_flow_runs(
                    flow_run_filter=FlowRunFilter(
                        state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.PAUSED]))
                    )
                )
            return runs

        [run] = wait(paused, 180, "the update to pause")
        with api():
            resume_flow_run(run.id, run_input={"approve": True, "reviewer": "ann", "comment": "ok"})
        out, err = update.communicate(timeout=180)
        assert update.returncode == 0 and "committed" in out, out + err
        # The pool: deploy --all while udm serve runs leaves the served deployments and schedules alone.
        before = served("udm-index/reindex-served")
        assert before is not None and before.schedules and before.work_pool_name is None
        for line in pool:
            if "SERVER" in line:  # the placeholder line for other machines
                continue
            sh(line)
        after = served("udm-index/reindex-served")
        assert after.id == before.id and after.work_pool_name is None
        assert [s.schedule for s in after.schedules] == [s.schedule for s in before.schedules]
        assert served("udm-index/reindex").work_pool_name == "udm-pool"
        done = sh("prefect deployment run udm-index/reindex --watch --watch-timeout 240", timeout=300)
        assert "Completed" in done, done[-3000:]
        for line in schedules:
            sh(line)
    finally:
        for proc in background:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        subprocess.run(["bash", "-c", server[2]], cwd=project, env=env, capture_output=True, timeout=120)
