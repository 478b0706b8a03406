"""The Dask task runner end to end: a real LocalCluster with 2 worker processes runs the verification
checks and the research fetch fan-out against loopback sites; results and final states are read back."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.loopback import loopback_server
from udm.config import Settings, load_settings
from udm.errors import ConfigError

PAGES = 6


class Handler(BaseHTTPRequestHandler):
    """/p/N: a page with a claim; /down: 503 (a transient failure); anything else: 404."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the access log."""

    def do_GET(self) -> None:
        """Serve one page."""
        if self.path == "/down":
            body = b"try later"
            self.send_response(503)
        elif self.path.startswith("/p/"):
            n = self.path.rsplit("/", 1)[-1]
            body = (
                f"<!DOCTYPE html><html><head><title>Page {n}</title></head><body><main><h1>Page {n}</h1>"
                f"<p class='claim'>Dask workers fetch page number {n} of the loopback site; each worker "
                "keeps its own browser and HTTP pool, and every result comes back to the flow.</p>"
                "</main></body></html>"
            ).encode()
            self.send_response(200)
        else:
            body = b"not here"
            self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    """The loopback site, served by threads of this process."""
    with loopback_server(Handler) as base:
        yield base


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """A real LocalCluster: 2 worker processes with 2 threads each."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True, dashboard_address=":0") as c:
        yield c


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _dask_settings(workspace: Path, **extra: Any) -> Settings:
    return load_settings(
        cwd=workspace, task_runner="dask", fetch_allow=["127.0.0.1"], fetch_host_delay_s=0.0, **extra
    )


def test_threads_is_the_default_and_a_bounded_pool(workspace: Path) -> None:
    from prefect.task_runners import ThreadPoolTaskRunner

    from flows.runners import task_runner_for

    runner = task_runner_for(load_settings(cwd=workspace), threads=7)
    assert isinstance(runner, ThreadPoolTaskRunner) and runner._max_workers == 7


def test_an_unknown_task_runner_is_a_config_error(workspace: Path) -> None:
    with pytest.raises(ConfigError, match="task_runner must be 'threads' or 'dask', not 'ray'"):
        load_settings(cwd=workspace, task_runner="ray")


@pytest.mark.parametrize(
    ("address", "said"),
    [
        ("tcp://127.0.0.1:{port}", "no Dask scheduler answers at dask_address 'tcp://127.0.0.1:{port}'"),
        ("127.0.0.1:{port}", "no Dask scheduler answers at dask_address '127.0.0.1:{port}'"),
        ("tcp://127.0.0.1", "dask_address 'tcp://127.0.0.1' is not a Dask scheduler address (missing port"),
        ("inproc://x", "dask_address 'inproc://x': only tcp:// and tls://"),
    ],
)
def test_a_wrong_scheduler_address_is_a_clear_error_naming_it(
    workspace: Path, address: str, said: str
) -> None:
    from flows.runners import task_runner_for

    port = _closed_port()
    settings = _dask_settings(workspace, dask_address=address.format(port=port), dask_connect_timeout_s=2)
    started = time.monotonic()
    with pytest.raises(ConfigError) as info:
        task_runner_for(settings, threads=4)
    assert said.format(port=port) in str(info.value)
    assert time.monotonic() - started < 5


def test_research_refuses_to_start_on_a_wrong_scheduler_address(workspace: Path) -> None:
    from flows.research import ResearchRequest, run_research

    address = f"tcp://127.0.0.1:{_closed_port()}"
    settings = _dask_settings(workspace, dask_address=address, dask_connect_timeout_s=2)
    with pytest.raises(ConfigError, match=f"dask_address '{address}'"):
        run_research(
            ResearchRequest(question="Where is it?", urls=["http://127.0.0.1:9/x"], write=False), settings
        )


def test_settings_and_tool_contexts_pickle() -> None:
    """Everything a fan-out task gets (settings, tool context, checks) travels to a worker process."""
    import cloudpickle

    from tasks.base import ToolContext, always_approve
    from udm.verify import Check

    settings = load_settings(fetch_allow=["127.0.0.1"], brave_api_key="k-123", task_runner="dask")
    ctx = ToolContext(settings=settings, approver=always_approve)
    back = cloudpickle.loads(cloudpickle.dumps(ctx))
    assert back.settings == settings and back.approver is always_approve
    assert (
        back.settings.brave_api_key is not None and back.settings.brave_api_key.get_secret_value() == "k-123"
    )
    check = Check(id="CHK-P-1", url="/p/1", expect=[{"exists": "h1"}])  # type: ignore[list-item]
    assert cloudpickle.loads(cloudpickle.dumps(check)) == check


def _worker_state() -> dict[str, Any]:
    """Run inside a Dask worker: which of this process's resources exist."""
    from flows import browser_verify
    from tasks.browser.session import MANAGER
    from udm.net import fetching

    browser = MANAGER._browser
    return {
        "pid": os.getpid(),
        "browser": id(browser) if browser is not None else None,
        "http": len(fetching._CLIENTS),
        "contexts": len(MANAGER.sessions),  # the run's reused contexts, closed when it ends
        "runs": len(browser_verify._SLOTS),
    }


@pytest.mark.prefect
@pytest.mark.slow
def test_verification_checks_run_on_dask_workers(
    prefect_server: None, site: str, cluster: Any, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from distributed import Client

    from flows.browser_verify import POOL_SIZE, browser_verification_flow
    from flows.runners import on_runner

    spec = workspace / "checks.yaml"
    lines = ["checks:"]
    for n in range(PAGES):
        lines.append(
            f"  - {{id: CHK-DASK-{n}, url: /p/{n}, expect: [{{text: {{selector: .claim, contains: 'page number {n} '}}}}]}}"
        )
    lines.append(
        "  - {id: CHK-DASK-BAD, url: /p/9, timeout: 1, expect: [{text: {selector: h1, equals: Nope}}]}"
    )
    spec.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setenv("UDM_FETCH_ALLOW", "127.0.0.1")
    settings = _dask_settings(workspace, dask_address=cluster.scheduler_address)

    def run() -> Any:
        return on_runner(browser_verification_flow, settings, POOL_SIZE)(
            specs=[str(spec)],
            inline=False,
            base_url=site,
            root=str(settings.udm_root),
            state_dir=str(settings.state_path),
            artifacts=False,
            return_state=True,
        )

    from tasks.browser.session import MANAGER

    browser_before = MANAGER._browser
    state = run()
    # The failing check fails the run; every result came back from the workers.
    assert state.is_failed() and "1 check(s) failed: CHK-DASK-BAD" in (state.message or "")
    summary = state.result(raise_on_failure=False)
    by_id = {r["id"]: r for r in summary["results"]}
    assert set(by_id) == {f"CHK-DASK-{n}" for n in range(PAGES)} | {"CHK-DASK-BAD"}
    assert all(by_id[f"CHK-DASK-{n}"]["status"] == "PASS" for n in range(PAGES)), summary["results"]
    assert by_id["CHK-DASK-BAD"]["status"] == "FAIL" and "Page 9" in by_id["CHK-DASK-BAD"]["reason"]
    assert summary["counts"] == {"PASS": PAGES, "FAIL": 1, "WARNING": 0, "SKIPPED": 0}
    assert summary["recorded"] == PAGES + 1

    with Client(cluster.scheduler_address, timeout="10s") as client:
        first = client.run(_worker_state)
        # Each worker process started its own browser (the flow's process started none).
        assert len(first) == 2 and all(w["browser"] is not None for w in first.values()), first
        # Each worker reused its own contexts for the run and closed them when the run ended.
        assert all(w["contexts"] == 0 and w["runs"] == 0 for w in first.values()), first
        assert all(w["pid"] != os.getpid() for w in first.values())
        assert MANAGER._browser is browser_before  # the flow's process launched none
        # A second run on the same workers keeps their browsers (registering the plugin again closes nothing).
        assert run().is_failed()
        assert client.run(_worker_state) == first


@pytest.mark.prefect
@pytest.mark.slow
def test_pipeline_parallel_steps_run_on_dask_workers(
    prefect_server: None, site: str, cluster: Any, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from distributed import Client

    from flows.pipeline import POOL_SIZE, pipeline_flow
    from flows.runners import on_runner

    monkeypatch.setenv("UDM_FETCH_ALLOW", "127.0.0.1")
    spec = workspace / "fan.yaml"
    spec.write_text(
        "name: dask-fan\n"
        "parameters: {urls: []}\n"
        "steps:\n"
        "  fetch:\n"
        "    tool: documentFetchingParsingTool\n"
        "    for_each: ${{ params.urls }}\n"
        '    input: {url: "${{ item }}"}\n'
        "  lookup:\n"
        "    tool: udmQueryTool\n"
        "    input: {query_type: find_by_id, udm_path_or_id: TASK-P0-M0.1-T001}\n",
        encoding="utf-8",
    )
    settings = _dask_settings(workspace, dask_address=cluster.scheduler_address)
    urls = [f"{site}/p/{n}" for n in range(PAGES)]
    state = on_runner(pipeline_flow, settings, POOL_SIZE)(
        spec=str(spec), params={"urls": urls}, project=str(workspace), artifact=False, return_state=True
    )
    assert state.is_completed(), state.message
    steps = state.result()["steps"]
    assert steps["fetch"]["status"] == "completed" and steps["fetch"]["items"] == PAGES
    texts = [o["cleanedTextContent"] for o in steps["fetch"]["output"]]
    assert all(f"page number {n} " in text for n, text in enumerate(texts)), texts
    assert steps["lookup"]["status"] == "completed", steps["lookup"]
    with Client(cluster.scheduler_address, timeout="10s") as client:
        # The fetches ran in the workers, each on its own process-wide HTTP client.
        assert sum(w["http"] for w in client.run(_worker_state).values()) >= 1


@pytest.mark.prefect
@pytest.mark.slow
def test_research_fan_out_runs_on_a_local_dask_cluster(
    prefect_server: None, site: str, workspace: Path
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    from flows.research import ResearchRequest, run_research

    # No address: the runner starts a LocalCluster of 2 worker processes for the run. Batches of 2
    # sources: 8 sources are 4 task runs on the workers.
    settings = _dask_settings(
        workspace, dask_workers=2, dask_threads_per_worker=2, fetch_retries=0, research_batch_size=2
    )
    urls = [f"{site}/p/{n}" for n in range(PAGES)] + [f"{site}/gone", f"{site}/down"]
    request = ResearchRequest(
        question="Which page number do the Dask workers fetch?",
        urls=urls,
        write=False,
        max_cache_age_s=0,
        max_sources=len(urls),
    )
    result = run_research(request, settings)
    assert result.status == "reported", result.message
    by_url = {s["url"]: s for s in result.sources}
    assert all(by_url[f"{site}/p/{n}"]["status"] == "ok" for n in range(PAGES)), result.sources
    assert by_url[f"{site}/gone"]["status"] != "ok" and "404" in by_url[f"{site}/gone"]["reason"]
    # The transient failure came back from its worker inside the batch's (pickled) exception.
    assert by_url[f"{site}/down"]["status"] != "ok" and "503" in by_url[f"{site}/down"]["reason"]
    assert result.sources_ok == PAGES and result.sources_failed == 2
    assert result.findings > 0 and "page number" in result.markdown

    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[result.flow_run_id]))
        )
    batches = {r.name: r.state_name for r in runs if r.name.startswith("fetch batch ")}
    assert len(batches) == 4, batches
    # The batch holding /down failed (never cached); the others completed.
    assert sorted(batches.values()) == ["Completed", "Completed", "Completed", "Failed"], batches


def test_every_tool_task_pickles_for_a_worker() -> None:
    """A tool's Prefect task travels to a Dask worker by value (it is built per flow): it must pickle,
    without the process's locks, for every registered tool."""
    import cloudpickle

    from tasks.prefect_task import tool_task
    from tasks.registry import all_tools

    tools = all_tools()
    assert len(tools) > 5
    for tool in tools:
        task_obj = tool_task(tool, retries=2, fail_on_final=True)
        back = cloudpickle.loads(cloudpickle.dumps(task_obj))
        assert back.name == task_obj.name


def test_the_errors_a_task_run_raises_come_back_from_a_worker() -> None:
    """A worker pickles a task's exception back to the flow: errors with their own constructor
    arguments must survive that (a failed step read as a TypeError before)."""
    import pickle

    from flows.research_fetch import _BatchIncomplete
    from tasks.base import TransientToolError
    from tasks.documents import FetchOutput
    from tasks.prefect_task import ToolFailedError

    failed = pickle.loads(pickle.dumps(ToolFailedError("ERROR_ID_NOT_FOUND: no RM-9", {"success": False})))
    assert str(failed) == "ERROR_ID_NOT_FOUND: no RM-9" and failed.envelope == {"success": False}
    output = FetchOutput(status="ERROR_FETCH_FAILED")
    transient = pickle.loads(pickle.dumps(TransientToolError("503 from host", output, retry_after=2.0)))
    assert str(transient) == "503 from host" and transient.result == output and transient.retry_after == 2.0
    batch = pickle.loads(pickle.dumps(_BatchIncomplete([{"success": False}, {"success": True}], 1)))
    assert batch.envelopes == [{"success": False}, {"success": True}] and batch.failed == 1


def _launch_browser() -> list[int]:
    """Run inside a Dask worker: launch this process's browser; the pids of its process tree."""
    import psutil

    from tasks.base import run_coroutine
    from tasks.browser.session import MANAGER

    run_coroutine(MANAGER.browser(load_settings()), timeout=60)
    return [p.pid for p in psutil.Process().children(recursive=True)]


def _children() -> list[int]:
    import psutil

    return [p.pid for p in psutil.Process().children(recursive=True)]


def _gone(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.slow
@pytest.mark.parametrize("plugin", [True, False])
def test_a_worker_closes_its_browser_when_it_shuts_down(plugin: bool) -> None:
    """The worker plugin closes the worker's browser and driver when the worker shuts down, and not
    when a later run registers it again. (Workers in this process, so that the process's browser
    manager can be read after the shutdown.)"""
    from distributed import Client, LocalCluster

    from flows.runners import PLUGIN_NAME, ProcessResources
    from tasks.base import run_coroutine
    from tasks.browser.session import MANAGER

    run_coroutine(MANAGER.shutdown(), timeout=30)  # another test's browser; relaunched on demand
    cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0")
    try:
        with cluster, Client(cluster, timeout="10s") as client:
            if plugin:
                client.register_plugin(ProcessResources(), name=PLUGIN_NAME)
            others = _children()
            client.run(_launch_browser)
            pids = sorted(set(_children()) - set(others))  # the browser's and its driver's processes
            browser = MANAGER._browser
            assert pids and browser is not None and not any(_gone(p) for p in pids)
            if plugin:
                client.register_plugin(ProcessResources(), name=PLUGIN_NAME)  # a later run: closes nothing
                assert MANAGER._browser is browser and browser.is_connected()
        if plugin:
            assert MANAGER._browser is None and MANAGER._playwright is None
            deadline = time.monotonic() + 15
            while not all(_gone(p) for p in pids) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert all(_gone(p) for p in pids)
        else:
            assert MANAGER._browser is browser and browser.is_connected()
    finally:
        run_coroutine(MANAGER.shutdown(), timeout=30)
