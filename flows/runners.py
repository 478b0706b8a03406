"""The task runner of a run's fan-out, picked from settings: threads (default) or Dask (prefect-dask).

`task_runner_for(settings, threads=N)` is what a flow's call site passes to
`flow.with_options(task_runner=...)`:

- `task_runner = "threads"`: a `ThreadPoolTaskRunner` with at most `threads` workers, in the flow's
  own process.
- `task_runner = "dask"` with `dask_address`: the tasks go to the Dask scheduler there (a cluster on
  Kubernetes, a batch system, `dask scheduler` on another machine). The address is checked before
  the run starts, so a wrong one is a `ConfigError` naming it rather than a hung or failed run.
- `task_runner = "dask"` without an address: a `LocalCluster` of `dask_workers` processes with
  `dask_threads_per_worker` threads each, started for the run and closed after it.

Each Dask worker process keeps its own browser and HTTP clients: they are process-global and created
on first use (`tasks.browser.session.MANAGER`, `udm.net.fetching.guarded_client`,
`udm.net.api_clients.api_client`), and `ProcessResources`, a worker plugin the runner registers, closes
them when the worker shuts down.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import distributed
from distributed.comm.addressing import parse_address, parse_host_port
from distributed.core import Status
from prefect import Flow
from prefect.context import FlowRunContext
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner
from prefect_dask import DaskTaskRunner

from udm.config import Settings
from udm.errors import ConfigError

__all__ = [
    "ProcessResources",
    "UdmDaskTaskRunner",
    "check_scheduler",
    "close_process_resources",
    "on_dask_workers",
    "on_runner",
    "task_runner_for",
]

PLUGIN_NAME = "udm-process-resources"
P = ParamSpec("P")
R = TypeVar("R")


async def close_process_resources() -> None:
    """Close this process's browser and HTTP clients (each is created again on its next use)."""
    from tasks.base import _LOOP
    from tasks.browser.session import MANAGER
    from udm.net import clear_fetch_state, close_api_clients

    if MANAGER._browser is not None or MANAGER._playwright is not None:
        # The browser lives on the process's tool loop, never on the caller's.
        future = asyncio.run_coroutine_threadsafe(MANAGER.shutdown(), _LOOP.loop())
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.wrap_future(future), timeout=30)
    clear_fetch_state()
    close_api_clients()


class ProcessResources(distributed.WorkerPlugin):
    """Closes a Dask worker's browser and HTTP clients when the worker shuts down."""

    async def teardown(self, worker: distributed.Worker) -> None:
        """At worker shutdown only: a later run registering the plugin again must not close them."""
        if worker.status in (Status.closing, Status.closing_gracefully, Status.closed):
            await close_process_resources()


def on_dask_workers(fn: Callable[..., Any], *args: Any) -> None:
    """Call `fn(*args)` in every worker process of the current flow run's Dask cluster (nothing on
    another runner): per-process clean-up at the end of a run. A failure is logged, never raised."""
    run_ctx = FlowRunContext.get()
    runner = run_ctx.task_runner if run_ctx else None
    if not isinstance(runner, DaskTaskRunner):
        return
    try:
        runner.client.run(fn, *args)
    except Exception as exc:  # a worker that died took its resources with it
        logging.getLogger(__name__).warning("clean-up on the Dask workers failed: %s", exc)


def check_scheduler(address: str, timeout_s: float) -> None:
    """Raise ConfigError naming `address` unless it is a Dask address something listens on."""
    try:
        scheme, location = parse_address(address)
        if scheme not in ("tcp", "tls"):
            raise ConfigError(f"dask_address {address!r}: only tcp:// and tls:// schedulers are supported")
        host, port = parse_host_port(location)
    except ValueError as exc:
        raise ConfigError(f"dask_address {address!r} is not a Dask scheduler address ({exc})") from None
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            pass
    except OSError as exc:
        raise ConfigError(f"no Dask scheduler answers at dask_address {address!r}: {exc}") from None


class UdmDaskTaskRunner(DaskTaskRunner):
    """prefect-dask's runner that connects on start, names a scheduler it cannot reach, and registers
    `ProcessResources` on the workers."""

    def __enter__(self) -> UdmDaskTaskRunner:
        """Start the runner; outside a Dask worker, connect and register the worker plugin now."""
        super().__enter__()
        try:
            distributed.get_worker()
            return self  # a task's nested submissions reuse the worker's own client
        except ValueError:
            pass
        try:
            client = self.client
        except (OSError, TimeoutError) as exc:
            self.__exit__(None, None, None)
            where = f"dask_address {self.address!r}" if self.address else "the local Dask cluster"
            raise ConfigError(f"cannot connect to {where}: {exc}") from None
        client.register_plugin(ProcessResources(), name=PLUGIN_NAME)
        return self


def task_runner_for(settings: Settings, threads: int) -> TaskRunner[Any]:
    """The task runner these settings ask for; `threads` bounds the thread pool of the default runner."""
    if settings.task_runner == "threads":
        return ThreadPoolTaskRunner(max_workers=threads)
    timeout = settings.dask_connect_timeout_s
    if settings.dask_address:
        check_scheduler(settings.dask_address, timeout)
        return UdmDaskTaskRunner(address=settings.dask_address, client_kwargs={"timeout": f"{timeout}s"})
    return UdmDaskTaskRunner(
        cluster_kwargs={
            "n_workers": settings.dask_workers,
            "threads_per_worker": settings.dask_threads_per_worker,
            "processes": True,
            # Any free port for the scheduler's HTTP endpoints: the fixed 8787 collides between runs.
            "dashboard_address": ":0",
        },
        client_kwargs={"timeout": f"{timeout}s"},
    )


def on_runner(flow: Flow[P, R], settings: Settings, threads: int) -> Flow[P, R]:
    """`flow` with the task runner these settings ask for (what a call site runs)."""
    return flow.with_options(task_runner=task_runner_for(settings, threads))
