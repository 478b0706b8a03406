"""Benchmark of the pipeline engine: a 500-step spec against the same tasks hand-coded as a Prefect flow.

Both run in this process against one local Prefect server (started in a temporary state folder),
alternating, three times each; the figure is the ratio of medians (target <= 1.2). Also times
compiling and checking a 500-step spec (target <= 200 ms). Run: ./run bench pipeline [--steps N]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ["DO_NOT_TRACK"] = "1"
os.environ.setdefault("PREFECT_CLIENT_MAX_RETRIES", "10")

from pydantic import BaseModel, Field  # noqa: E402

from tasks import registry  # noqa: E402
from tasks.base import Permission, Tool, ToolContext, ToolInput, always_approve  # noqa: E402


class AddIn(ToolInput):
    """Two numbers."""

    a: int = Field(description="First.")
    b: int = Field(default=1, description="Second.")


class AddOut(BaseModel):
    """Their sum."""

    status: str = Field(description="SUCCESS.")
    total: int = Field(description="a + b.")


class AddTool(Tool[AddIn, AddOut]):
    """A trivial step: add two numbers."""

    name = "benchAddTool"
    description = "Add two numbers (benchmark step)."
    Input = AddIn
    Output = AddOut
    permission = Permission.SAFE

    def execute(self, data: AddIn, ctx: ToolContext) -> AddOut:
        """a + b."""
        return AddOut(status="SUCCESS", total=data.a + data.b)


def register_tool() -> None:
    """Put the benchmark tool in the registry (as the tests do)."""
    registry._CACHE["bench:AddTool"] = AddTool()
    registry.TOOL_PATHS.append("bench:AddTool")


def make_spec(steps: int, width: int) -> dict[str, Any]:
    """Layers of `width` steps; each step needs one step of the layer before (a DAG, not a chain)."""
    spec: dict[str, Any] = {"name": f"bench-{steps}", "max_workers": 32, "steps": {}}
    for i in range(steps):
        layer, col = divmod(i, width)
        step: dict[str, Any] = {"tool": "benchAddTool", "input": {"a": i}}
        if layer:
            up = f"s{(layer - 1) * width + (col * 7) % width}"
            step["input"] = {"a": f"${{{{ steps.{up}.output.total }}}}", "b": 1}
        spec["steps"][f"s{i}"] = step
    return spec


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--width", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    register_tool()

    from tasks.pipeline_spec import compile_pipeline

    spec = make_spec(args.steps, args.width)
    compile_pipeline(spec)  # warm up: loading the tool modules is not the compiler's cost
    compile_times = []
    for _ in range(7):
        started = time.perf_counter()
        compiled = compile_pipeline(spec)
        compile_times.append((time.perf_counter() - started) * 1000)
    compile_ms = statistics.median(compile_times)
    print(f"compile+check {args.steps}-step spec: {compile_ms:.1f} ms median of 7 (target <= 200 ms)")

    from flows.local_server import start_server, stop_server
    from udm.config import load_settings

    work = Path(tempfile.mkdtemp(prefix="udm-bench-pipeline-"))
    for sub in ("docs/udm", "state", "logs"):
        (work / sub).mkdir(parents=True)
    settings = load_settings(work)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    info = start_server(settings, port=port, timeout=240)
    os.environ["PREFECT_API_URL"] = info.api_url
    try:
        from prefect import flow, task
        from prefect.cache_policies import NO_CACHE
        from prefect.task_runners import ThreadPoolTaskRunner

        from flows.pipeline import POOL_SIZE, pipeline_flow
        from tasks.base import call_tool
        from tasks.prefect_task import tool_task

        ctx = ToolContext(settings=settings, approver=always_approve)
        first_task = tool_task("benchAddTool")
        order = compiled.order
        upstream = compiled.upstream

        @task(name="benchAddTool-next", cache_policy=NO_CACHE, task_run_name="{run_label}")
        def next_task(up: dict[str, Any], ctx: ToolContext, run_label: str = "") -> dict[str, Any]:
            # The same call_tool per step; the upstream envelope arrives resolved by Prefect.
            raw = {"a": up["data"]["total"], "b": 1}
            return call_tool("benchAddTool", raw, ctx).envelope.model_dump(mode="json")

        @flow(name="bench-hand-coded", task_runner=ThreadPoolTaskRunner(max_workers=POOL_SIZE))  # type: ignore[arg-type]
        def hand_coded() -> int:
            futures: dict[str, Any] = {}
            for name in order:
                ups = upstream[name]
                if ups:
                    futures[name] = next_task.submit(futures[ups[0]], ctx, run_label=name)
                else:
                    futures[name] = first_task.submit({"a": int(name[1:])}, ctx, run_label=name)
            return sum(f.result()["data"]["total"] for f in futures.values())

        def engine() -> None:
            out = pipeline_flow(spec=spec, project=str(work), artifact=False)
            assert out["status"] == "completed", out["status"]

        # Warm up (imports, first API round trips). A new server's SQLite database can answer "locked"
        # (503) for a while as its services finish starting under load: retry until it answers.
        deadline = time.monotonic() + 180
        while True:
            try:
                hand_coded()
                break
            except Exception as exc:
                if time.monotonic() > deadline:
                    raise
                print(f"server not ready yet ({type(exc).__name__}); retrying", file=sys.stderr)
                time.sleep(5)
        hand, ours = [], []
        for _ in range(args.repeat):
            started = time.perf_counter()
            hand_coded()
            hand.append(time.perf_counter() - started)
            started = time.perf_counter()
            engine()
            ours.append(time.perf_counter() - started)
        # Task-run events go to the server asynchronously: flush them before the server stops.
        from prefect.events.worker import EventsWorker

        EventsWorker.drain_all(timeout=120)
        h, o = statistics.median(hand), statistics.median(ours)
        print(
            f"hand-coded Prefect flow, {args.steps} tasks: {h:.2f} s median of {args.repeat} ({', '.join(f'{x:.2f}' for x in hand)})"
        )
        print(
            f"pipeline engine, {args.steps} steps:        {o:.2f} s median of {args.repeat} ({', '.join(f'{x:.2f}' for x in ours)})"
        )
        print(
            f"ratio engine / hand-coded: {o / h:.2f} of medians, {min(ours) / min(hand):.2f} of minima (target <= 1.2)"
        )
    finally:
        stop_server(settings)


if __name__ == "__main__":
    main()
