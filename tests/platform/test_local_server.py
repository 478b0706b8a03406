"""Against one real `prefect server start` (udm server start) for the whole module: CLI, schedules,
`prefect deployment run`, two process workers, the update flow in the Prefect UI, pause and resume."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from flows.cli import run as cli_run
from flows.local_server import api_url_if_running, server_status, start_server, stop_server
from tasks.base import ToolContext, always_approve, call_tool
from tasks.browser.session import CHROMIUM_ARGS, find_browser
from udm.config import load_settings

REPO = Path(__file__).resolve().parents[2]
SAMPLE_UDM = REPO / "examples" / "udm"
# One real server per module costs 12-80 s to start (new database, machine load): the module is slow.
pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    """One local server for this module, its data under the project's state/prefect."""
    base = tmp_path_factory.mktemp("project")
    shutil.copytree(SAMPLE_UDM, base / "docs" / "udm")
    for sub in ("state", "logs", "prompts"):
        (base / sub).mkdir()
    settings = load_settings(base)
    info = start_server(settings, port=_free_port(), timeout=240)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UDM_", "PREFECT_"))}
    env.update(
        PREFECT_API_URL=info.api_url,
        PREFECT_HOME=str(base / "state" / "client-home"),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        DO_NOT_TRACK="1",
        PREFECT_LOGGING_LEVEL="WARNING",
        PREFECT_CLIENT_MAX_RETRIES="10",
        PYTHONPATH=str(REPO),
    )
    try:
        yield SimpleNamespace(base=base, settings=settings, info=info, env=env)
    finally:
        assert stop_server(settings) is True
        assert server_status(settings)[0] == "stopped"


def api(server: SimpleNamespace) -> Any:
    """Settings context pointing this process's Prefect client at the module's server."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    return temporary_settings(updates={PREFECT_API_URL: server.info.api_url})


def udm(server: SimpleNamespace, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    """Run the udm CLI in a subprocess inside the module's project."""
    cmd = [sys.executable, "-c", "from flows.cli import main; main()", *args]
    return subprocess.run(
        cmd, cwd=server.base, env=kw.pop("env", server.env), capture_output=True, text=True, **kw
    )


def wait_for(predicate: Any, timeout: float, what: str, every: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def test_server_is_found_by_the_cli(server: SimpleNamespace, capsys: pytest.CaptureFixture[str]) -> None:
    assert api_url_if_running(server.settings) == server.info.api_url
    assert (server.base / "state" / "prefect" / "prefect.db").exists()  # the database lives in state/
    code = cli_run(["--state-dir", str(server.base / "state"), "server", "status"])
    assert code == 0 and "running" in capsys.readouterr().out
    # Starting again finds the running one instead of starting a second.
    assert start_server(server.settings, port=server.info.port).pid == server.info.pid


def test_schedule_tools_create_list_pause_resume(server: SimpleNamespace) -> None:
    from flows.pipeline import pipeline_flow

    ctx = ToolContext(settings=server.settings, approver=always_approve)
    with api(server):
        pipeline_flow.to_deployment(name="sched-test", parameters={"spec": "x.yaml"}).apply()
        dep = "udm-pipeline/sched-test"
        made = call_tool(
            "scheduleCreateTool", {"name": "every-15", "deployment": dep, "schedule": "every 15 minutes"}, ctx
        )
        assert made.envelope.success, made.envelope.error
        assert made.envelope.data["type"] == "recurring" and made.envelope.data["interval_seconds"] == 900
        cron = call_tool(
            "scheduleCreateTool",
            {
                "name": "mondays",
                "deployment": dep,
                "schedule": "every monday at 2pm",
                "parameters": {"spec": "y.yaml"},
            },
            ctx,
        )
        assert cron.envelope.data["cron_expression"] == "0 14 * * 1"
        once = call_tool(
            "scheduleCreateTool", {"name": "soon", "deployment": dep, "schedule": "in 2 hours"}, ctx
        )
        assert once.envelope.data["type"] == "one_time" and once.envelope.data["run_at"]
        missing = call_tool(
            "scheduleCreateTool", {"name": "n", "deployment": "nope/nope", "schedule": "every hour"}, ctx
        )
        assert missing.envelope.data["status"] == "ERROR_DEPLOYMENT_NOT_FOUND"
        bad = call_tool("scheduleCreateTool", {"name": "n", "deployment": dep, "schedule": "whenever"}, ctx)
        assert (
            bad.envelope.data["status"] == "ERROR_INVALID_SCHEDULE"
            and "every 15 minutes" in bad.envelope.error
        )

        listed = call_tool("scheduleListTool", {"deployment": dep}, ctx).envelope.data["tasks"]
        by_name = {t["name"]: t for t in listed}
        assert {"every-15", "mondays", "soon"} <= set(by_name)
        assert by_name["mondays"]["schedule"].startswith("cron 0 14 * * 1")
        assert by_name["soon"]["type"] == "one_time" and by_name["soon"]["next_run"]

        paused = call_tool("schedulePauseTool", {"schedule_id": "every-15", "deployment": dep}, ctx).envelope
        assert paused.success and paused.data["active"] is False
        now_paused = call_tool("scheduleListTool", {"filter": "paused"}, ctx).envelope.data["tasks"]
        assert [t["name"] for t in now_paused] == ["every-15"]
        resumed = call_tool("scheduleResumeTool", {"schedule_id": paused.data["schedule_id"]}, ctx).envelope
        assert resumed.success and resumed.data["active"] is True
        assert call_tool("scheduleListTool", {"filter": "paused"}, ctx).envelope.data["tasks"] == []
        gone = call_tool("schedulePauseTool", {"schedule_id": "no-such"}, ctx).envelope.data
        assert gone["status"] == "ERROR_SCHEDULE_NOT_FOUND"


def _check_spec(server: SimpleNamespace, name: str) -> Path:
    """A tiny real spec: pipelineCheckTool checks a spec, a second step checks the first's order."""
    path = server.base / f"{name}.yaml"
    path.write_text(
        f"name: {name}\n"
        "steps:\n"
        "  check:\n"
        "    tool: pipelineCheckTool\n"
        "    input:\n"
        "      spec: |\n"
        "        name: inner\n"
        "        steps:\n"
        "          a: {tool: pipelineCheckTool, input: {spec: x}}\n"
        "  again:\n"
        "    tool: pipelineCheckTool\n"
        "    input: {spec: \"${{ join(steps.check.output.order, ',') }}\"}\n"
    )
    return path


@pytest.mark.slow
def test_prefect_deployment_run_against_udm_serve(server: SimpleNamespace) -> None:
    spec = _check_spec(server, "served")
    serve = subprocess.Popen(
        [sys.executable, "-c", "from flows.cli import main; main()", "serve", "--only", "run-pipeline"],
        cwd=server.base,
        env=server.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        from prefect.client.orchestration import get_client

        def deployed() -> bool:
            with api(server), get_client(sync_client=True) as client:
                try:
                    client.read_deployment_by_name("udm-pipeline/run-pipeline-served")
                except Exception:
                    return False
                return True

        wait_for(deployed, 120, "udm serve to register run-pipeline-served")
        prefect = Path(sys.executable).with_name("prefect")
        done = subprocess.run(
            [
                str(prefect),
                "deployment",
                "run",
                "udm-pipeline/run-pipeline-served",
                "--param",
                f"spec={spec}",
                "--param",
                f"project={server.base}",
                "--watch",
                "--watch-timeout",
                "180",
            ],
            cwd=server.base,
            env=server.env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Completed" in done.stdout + done.stderr
    finally:
        os.killpg(serve.pid, signal.SIGINT)
        try:
            serve.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(serve.pid, signal.SIGKILL)
            serve.wait()


@pytest.mark.slow
def test_two_process_workers_share_one_pool(server: SimpleNamespace) -> None:
    pool = "udm-test-pool"
    env = {**server.env, "UDM_PROJECT_DIR": str(REPO), "PREFECT_WORKER_QUERY_SECONDS": "2"}
    prefect = str(Path(sys.executable).with_name("prefect"))
    made = subprocess.run(
        [prefect, "work-pool", "create", pool, "--type", "process"], env=env, capture_output=True, text=True
    )
    assert made.returncode == 0, made.stdout + made.stderr
    deployed = subprocess.run(
        [prefect, "--no-prompt", "deploy", "--name", "run-pipeline", "--pool", pool],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    workers = [
        subprocess.Popen(
            [prefect, "worker", "start", "--pool", pool, "--type", "process", "--name", name, "--limit", "1"],
            cwd=server.base,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for name in ("worker-a", "worker-b")
    ]
    try:
        from prefect.client.orchestration import get_client
        from prefect.client.schemas.actions import DeploymentUpdate

        spec = _check_spec(server, "pooled")
        with api(server), get_client(sync_client=True) as client:
            dep = client.read_deployment_by_name("udm-pipeline/run-pipeline")
            # The project is the deployment's parameter: a run setting it beyond the worker's own
            # folders would be refused (flows/run_settings.py check_scope).
            client.update_deployment(
                dep.id, DeploymentUpdate(parameters={**dep.parameters, "project": str(server.base)})
            )
            ids = [
                client.create_flow_run_from_deployment(dep.id, parameters={"spec": str(spec)}).id
                for _ in range(4)
            ]

            def finished() -> list[Any] | None:
                runs = [client.read_flow_run(i) for i in ids]
                return runs if all(r.state and r.state.is_final() for r in runs) else None

            runs = wait_for(finished, 240, "4 runs on two workers", every=2)
        assert all(r.state.is_completed() for r in runs), [r.state for r in runs]
        by_worker = {r.labels.get("prefect.worker.name") for r in runs}
        assert by_worker == {"worker-a", "worker-b"}  # each worker completed runs
    finally:
        for w in workers:
            os.killpg(w.pid, signal.SIGINT)
        for w in workers:
            try:
                w.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(w.pid, signal.SIGKILL)
                w.wait()


def _read_udm_update_runs(server: SimpleNamespace, state_type: Any) -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowFilter,
        FlowFilterName,
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.sorting import FlowRunSort

    with api(server), get_client(sync_client=True) as client:
        return client.read_flow_runs(
            flow_filter=FlowFilter(name=FlowFilterName(any_=["udm-update"])),
            flow_run_filter=FlowRunFilter(
                state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[state_type]))
            ),
            sort=FlowRunSort.START_TIME_DESC,
            limit=10,
        )


@pytest.mark.slow
@pytest.mark.browser
def test_update_flow_shows_completed_with_its_diff_in_the_ui(server: SimpleNamespace) -> None:
    env = {**server.env, "UDM_APPROVAL_POLICY": "full_auto"}
    patch = REPO / "examples" / "patches" / "mark-t001-done.yaml"
    done = udm(server, "run", "update", str(patch), "--json", env=env, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "committed"
    run_id = result["flow_run_id"]
    assert run_id, "the CLI ran the flow against the local server"
    assert "reviewed_by: ann" in (server.base / "docs" / "udm" / "05-roadmap.md").read_text()

    from playwright.sync_api import sync_playwright

    shot = server.base / "state" / "ui-update-flow-run.png"
    with sync_playwright() as pw:
        executable = find_browser(load_settings(cwd=server.base))
        browser = pw.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(
                f"{server.info.ui_url}/runs/flow-run/{run_id}", wait_until="domcontentloaded", timeout=60_000
            )
            page.get_by_text("Completed").first.wait_for(timeout=60_000)
            page.get_by_text("udm-update").first.wait_for(timeout=30_000)
            page.screenshot(path=str(shot), full_page=True)
            page.get_by_text("Artifacts", exact=True).first.click(timeout=30_000)
            page.get_by_text("Diff of patch mark-t001-done").first.wait_for(timeout=30_000)
            page.get_by_text("Diff of patch mark-t001-done").first.click(timeout=30_000)
            # The artifact's page renders the unified diff the reviewer reads before approving.
            page.get_by_text("+reviewed_by: ann").first.wait_for(timeout=30_000)
            page.screenshot(path=str(shot.with_name("ui-update-diff-artifact.png")), full_page=True)
        finally:
            browser.close()
    assert shot.stat().st_size > 10_000
    print(f"screenshots: {shot} and {shot.with_name('ui-update-diff-artifact.png')}")


@pytest.mark.slow
def test_update_flow_pauses_for_approval_and_resumes_through_the_api(server: SimpleNamespace) -> None:
    from prefect.client.schemas.objects import StateType
    from prefect.flow_runs import resume_flow_run

    env = {**server.env, "UDM_APPROVAL_POLICY": "ask_always"}
    patch = server.base / "approve-me.yaml"
    patch.write_text(
        "id: approve-t002\ndescription: Start T002\nauthor: tester\noperations:\n"
        "  - {op: set_yaml_key, file: 05-roadmap.md, section: TASK-P0-M0.1-T002, key: status, value: in_progress}\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", "from flows.cli import main; main()", "run", "update", str(patch), "--json"],
        cwd=server.base,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        paused = wait_for(lambda: _read_udm_update_runs(server, StateType.PAUSED), 180, "the run to pause")
        roadmap = server.base / "docs" / "udm" / "05-roadmap.md"
        assert "status: in_progress" not in roadmap.read_text().split("TASK-P0-M0.1-T002")[1][:400]
        with api(server):
            resume_flow_run(
                paused[0].id, run_input={"approve": True, "reviewer": "tester", "comment": "looks right"}
            )
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out + err
    result = json.loads(out)
    assert result["status"] == "committed"
    assert result["approval"] == {"approve": True, "reviewer": "tester", "comment": "looks right"}
