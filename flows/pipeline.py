"""The generic pipeline flow: a checked spec's DAG run as Prefect task runs, each as soon as its needs finish.

Each step (each item of a `for_each` step) is one task run named after the step (`fetch[3]`),
submitted to a bounded thread pool the moment every step it depends on has finished; its inputs are
rendered from those steps' outputs in the flow, and the upstream futures are passed as `wait_for`
so the Prefect UI draws the DAG. A failed step makes its dependants `skipped`; the run fails at the
end with a table artifact of every step. Flow steps run the built-in flows as subflows.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import queue
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from prefect import Task, flow, task
from prefect.futures import PrefectFuture
from prefect.states import Completed, Failed, State
from prefect.task_runners import ThreadPoolTaskRunner

import wiring
from flows.run_settings import check_run_file, check_scope, flow_settings, run_changed_parameters, run_policy
from flows.states import state_result
from tasks.base import (
    ApprovalRequest,
    ApprovalUnavailableError,
    Approver,
    ToolContext,
    always_approve,
    deny_all,
    own_settings,
)
from tasks.pipeline_spec import (
    CompiledPipeline,
    ExpressionError,
    FlowInfo,
    StepSpec,
    compile_pipeline,
    evaluate,
    load_spec,
    parse_duration,
    render,
    strip_expression,
)
from tasks.prefect_task import envelope_of, tool_task
from udm.config import Settings, load_settings
from udm.errors import FlowError

__all__ = ["FLOW_PATHS", "POOL_SIZE", "PipelineRunError", "flow_catalog", "pipeline_flow", "run_pipeline"]

# The flow's thread pool; a spec's max_workers (at most this) caps the steps in flight.
POOL_SIZE = 32

# The flows a pipeline step may run (wiring.PIPELINE_FLOWS), each loaded when first needed.
FLOW_PATHS: dict[str, str] = dict(wiring.PIPELINE_FLOWS)


class PipelineRunError(FlowError, RuntimeError):
    """A pipeline run in which some step failed; `summary` holds every step's outcome."""

    def __init__(self, message: str, summary: dict[str, Any]) -> None:
        super().__init__(message)
        self.summary = summary


def _load_flow(name: str) -> Any | None:
    module_name, _, attr = FLOW_PATHS[name].partition(":")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError):
        return None


def flow_catalog() -> dict[str, FlowInfo]:
    """The flows available in this installation, with their parameter schemas."""
    catalog: dict[str, FlowInfo] = {}
    for name in FLOW_PATHS:
        fl = _load_flow(name)
        if fl is not None:
            schema = fl.parameters.model_dump(mode="json")
            # The ToolContext-like internals are never given by a spec; only JSON-able parameters count.
            catalog[name] = FlowInfo(parameters=schema)
    return catalog


def _cache_key_fn(pipeline: str, step: str, tool: str, fields: list[str]) -> Callable[..., str]:
    def key(context: Any, parameters: dict[str, Any]) -> str:
        raw = parameters.get("raw_input", {})
        chosen = {f: raw.get(f) for f in fields} if fields else raw
        text = json.dumps([pipeline, step, tool, chosen], sort_keys=True, default=str)
        return "udm-pipeline-" + hashlib.sha256(text.encode()).hexdigest()[:32]

    return key


def _step_task(spec_name: str, name: str, step: StepSpec, state_path: Path) -> Task[..., Any]:
    """The Prefect task of one step (named per run after the step)."""
    options: dict[str, Any] = {"task_run_name": "{run_label}"}
    if step.timeout:
        options["timeout_seconds"] = step.timeout
    if step.cache and step.tool:
        options.update(
            cache_key_fn=_cache_key_fn(spec_name, name, step.tool, step.cache.key),
            cache_expiration=timedelta(seconds=parse_duration(step.cache.expiration)),
            persist_result=True,
            result_storage=state_path / "pipeline-cache",
            result_serializer="json",
        )
    if step.tool:
        return tool_task(
            step.tool,
            # A failed call (approval denied included) is a Failed task run, never a Completed one.
            fail_on_error=True,
            retries=step.retries,
            retry_delay=step.retry_delay,
            # Shared by steps of the same configuration; each run is still named after its step.
            task_name=f"{name}: {step.tool}" if step.cache else step.tool,
            **options,
        )
    fl: Any = _load_flow(step.flow or "")

    def run_flow(params: dict[str, Any], run_label: str = "") -> State[Any]:
        # The subflow's final state becomes this task run's (Completed "Rejected", Failed "Expired"...).
        state = fl(**params, return_state=True)
        value = state_result(state)
        data = value.model_dump(mode="json") if hasattr(value, "model_dump") else value
        kind = Completed if state.is_completed() else Failed
        return kind(data=data, name=state.name, message=state.message)

    options.update(name=f"{step.flow} flow", retries=step.retries)
    options["retry_delay_seconds"] = step.retry_delay or 0
    decorate: Any = task(**options)
    return decorate(run_flow)


def _step_tasks(spec_name: str, steps: Mapping[str, StepSpec], state_path: Path) -> dict[str, Task[..., Any]]:
    """One task per distinct step configuration: building a Prefect task costs ~1-2 ms, and runs are
    named per step through `run_label` anyway (steps with a cache keep their own, keyed by step)."""
    shared: dict[str, Task[..., Any]] = {}
    out: dict[str, Task[..., Any]] = {}
    for name, step in steps.items():
        if step.cache is not None:
            out[name] = _step_task(spec_name, name, step, state_path)
            continue
        key = json.dumps(
            [step.tool, step.flow, step.retries, step.retry_delay, step.timeout], sort_keys=True, default=str
        )
        if key not in shared:
            shared[key] = _step_task(spec_name, name, step, state_path)
        out[name] = shared[key]
    return out


def _notify(done: queue.SimpleQueue[Any], name: str, index: int) -> Callable[[PrefectFuture[Any]], None]:
    def callback(fut: PrefectFuture[Any]) -> None:
        done.put((name, index, fut))

    return callback


def _outcome(step: StepSpec, fut: PrefectFuture[Any]) -> tuple[bool, Any, str | None, str]:
    """(ok, output, error, state name) of one finished task run."""
    if step.tool:
        env = envelope_of(fut)
        return bool(env.get("success")), env.get("data"), env.get("error"), fut.state.name or ""
    state = fut.state
    value = state_result(state)
    if state.is_completed():
        return True, value, None, state.name or "Completed"
    return False, value, state.message or f"the flow ended {state.name}", state.name or "Failed"


@dataclass
class _Items:
    """The runs of one started step (one, or one per `for_each` item): how many are still open, and
    each one's output, errors and notable state names."""

    open: int
    values: list[Any]
    errors: list[str] = field(default_factory=list)
    states: set[str] = field(default_factory=set)


class _Scheduler:
    """One pipeline run: steps start when all their needs have finished, their runs are submitted
    while fewer than `max_workers` are in flight, and each finished run is collected as it ends."""

    def __init__(
        self, compiled: CompiledPipeline, params: Mapping[str, Any] | None, ctx: ToolContext
    ) -> None:
        spec = self.spec = compiled.spec
        self.upstream = compiled.upstream
        self.ctx = ctx
        self.scope: dict[str, Any] = {"params": {**spec.parameters, **dict(params or {})}, "steps": {}}
        self.tasks = _step_tasks(spec.name, spec.steps, ctx.settings.state_path)
        self.results: dict[str, dict[str, Any]] = {}
        self.futures: dict[str, list[PrefectFuture[Any]]] = {}
        self.waiting = {n: set(compiled.upstream[n]) for n in compiled.order}
        self.dependants: dict[str, list[str]] = {n: [] for n in compiled.order}
        for n, ups in compiled.upstream.items():
            for u in ups:
                self.dependants[u].append(n)
        self.done: queue.SimpleQueue[tuple[str, int, PrefectFuture[Any]]] = queue.SimpleQueue()
        self.items: dict[str, _Items] = {}
        self.queued: deque[tuple[str, int, dict[str, Any], str, list[PrefectFuture[Any]]]] = deque()
        self.cap = min(spec.max_workers, POOL_SIZE)
        self.in_flight = 0

    def finish(self, name: str, record: dict[str, Any]) -> list[str]:
        """Record a step's outcome; the steps that were waiting only for it."""
        self.results[name] = record
        self.scope["steps"][name] = {"output": record.get("output"), "status": record["status"]}
        ready = []
        for d in self.dependants[name]:
            self.waiting[d].discard(name)
            if not self.waiting[d]:
                ready.append(d)
        return ready

    def _inputs(self, step: StepSpec) -> list[Any] | None:
        """The rendered input of each of the step's runs; None when its condition is false
        (ExpressionError when an expression fails)."""
        if step.when is not None and not evaluate(strip_expression(step.when), self.scope):
            return None
        if step.for_each is None:
            items: list[Any] = [None]
        else:
            found = render(step.for_each, self.scope)
            if not isinstance(found, list):
                raise ExpressionError(f"for_each gave a {type(found).__name__}, not a list")
            items = found
        return [render(step.input, {**self.scope, "item": it, "index": i}) for i, it in enumerate(items)]

    def start(self, name: str) -> list[str]:
        """Queue a ready step's runs; returns steps that became ready because this one finished at once."""
        step = self.spec.steps[name]
        started = time.perf_counter()
        bad = [u for u in self.upstream[name] if self.results[u]["status"] != "completed"]
        if bad:
            return self.finish(
                name, {"status": "skipped", "reason": f"needs {', '.join(bad)} did not complete"}
            )
        try:
            inputs = self._inputs(step)
        except ExpressionError as exc:
            return self.finish(name, {"status": "failed", "error": str(exc)})
        if inputs is None:
            return self.finish(name, {"status": "skipped", "reason": f"condition false: {step.when}"})
        if not inputs:
            return self.finish(name, {"status": "completed", "output": [], "items": 0})
        wait_for = [f for u in self.upstream[name] for f in self.futures.get(u, [])]
        self.futures[name] = []
        self.items[name] = _Items(open=len(inputs), values=[None] * len(inputs))
        self.results[name] = {"status": "running", "started": started}
        for i, raw in enumerate(inputs):
            label = name if step.for_each is None else f"{name}[{i}]"
            self.queued.append((name, i, raw, label, wait_for))
        return []

    def pump(self) -> None:
        """Submit queued step runs while fewer than max_workers are in flight."""
        while self.queued and self.in_flight < self.cap:
            name, i, raw, label, wait_for = self.queued.popleft()
            task_obj = self.tasks[name]
            if self.spec.steps[name].tool:
                fut = task_obj.submit(raw, self.ctx, run_label=label, wait_for=wait_for)
            else:
                fut = task_obj.submit(raw, run_label=label, wait_for=wait_for)
            fut.add_done_callback(_notify(self.done, name, i))
            self.futures[name].append(fut)
            self.in_flight += 1

    def collect(self, name: str, index: int, fut: PrefectFuture[Any]) -> dict[str, Any] | None:
        """Take one finished run; the step's record once it was the step's last open run."""
        self.in_flight -= 1
        step = self.spec.steps[name]
        items = self.items[name]
        try:
            fut.wait()
            ok, output, error, state_name = _outcome(step, fut)
        except Exception as exc:  # a crashed or timed-out task run is this step's failure
            ok, output, error, state_name = False, None, f"{type(exc).__name__}: {exc}", "Crashed"
        if state_name not in ("", "Completed", "Cached", "Failed"):
            items.states.add(state_name)
        items.values[index] = output
        if not ok:
            items.errors.append(f"[{index}] {error}" if step.for_each is not None else str(error))
        items.open -= 1
        if items.open:
            return None
        record: dict[str, Any] = {
            "status": "failed" if items.errors else "completed",
            "output": items.values if step.for_each is not None else items.values[0],
            "seconds": round(time.perf_counter() - self.results[name]["started"], 3),
        }
        if step.for_each is not None:
            record["items"] = len(items.values)
        if items.states:
            # A flow step that ended Completed "Rejected" or "Unchanged", or Failed "Expired".
            record["state"] = ", ".join(sorted(items.states))
        if items.errors:
            record["error"] = "; ".join(items.errors)
        return record

    def run(self, order: list[str]) -> dict[str, dict[str, Any]]:
        """Run every step (in `order` where several are ready at once); each step's record."""
        pending_starts = [n for n in order if not self.waiting[n]]
        running = 0
        while pending_starts or running:
            while pending_starts:
                name = pending_starts.pop(0)
                newly = self.start(name)
                if name in self.items and self.results[name]["status"] == "running":
                    running += 1
                pending_starts += newly
            self.pump()
            if not running:
                break
            name, index, fut = self.done.get()
            record = self.collect(name, index, fut)
            if record is not None:
                running -= 1
                pending_starts += self.finish(name, record)
        for rec in self.results.values():
            rec.pop("started", None)
        return self.results


def run_pipeline(
    compiled: CompiledPipeline,
    params: Mapping[str, Any] | None = None,
    ctx: ToolContext | None = None,
) -> dict[str, Any]:
    """Run a compiled pipeline inside the current flow; returns {step: {status, output, error, ...}}."""
    scheduler = _Scheduler(compiled, params, ctx or ToolContext(settings=load_settings()))
    return scheduler.run(list(compiled.order))


def _summary_table(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "step": name,
            "status": rec["status"],
            "state": rec.get("state", ""),
            "items": rec.get("items", ""),
            "seconds": rec.get("seconds", ""),
            "detail": rec.get("error") or rec.get("reason") or "",
        }
        for name, rec in results.items()
    ]


@flow(
    name="udm-pipeline",
    description="Run a declarative pipeline spec (YAML) as a DAG of task runs.",
    task_runner=ThreadPoolTaskRunner(max_workers=POOL_SIZE),  # type: ignore[arg-type]
    validate_parameters=True,
)
def pipeline_flow(
    spec: str | dict[str, Any],
    params: dict[str, Any] | None = None,
    project: str | None = None,
    root: str | None = None,
    state_dir: str | None = None,
    approve: bool = False,
    artifact: bool = True,
    approval_timeout_s: int = 3600,
) -> State[Any]:
    """Run a pipeline spec (file path, YAML text or dict); every step's status and output, as the data
    of the final state (Completed, Completed "Rejected" when a step's review was rejected; a failed
    step raises PipelineRunError, so the run ends Failed).

    Tool calls the approval policy asks about: in a run started from a deployment, the run pauses for
    a reviewer in the Prefect UI (`approve` is ignored there: whoever triggers a deployment is not the
    reviewer); in a run started in-process, `approve=True` approves them (the person starting it is
    the approver), otherwise they fail with "approval denied".
    `project` is the folder settings are read from (default: the working directory); `root` and
    `state_dir` override the manual's and the state folder.
    """
    source: Any = (
        Path(spec)
        if isinstance(spec, str) and "\n" not in spec and spec.endswith((".yaml", ".yml", ".json"))
        else spec
    )
    overrides = {k: v for k, v in {"root": root, "state_dir": state_dir}.items() if v}
    settings = flow_settings(project, overrides)
    if isinstance(source, Path):
        check_run_file("spec", source, settings, project)
    compiled = compile_pipeline(load_spec(source), flow_catalog(), params)
    results = run_pipeline(compiled, params, _context(settings, approve, approval_timeout_s))
    if artifact:
        from prefect.artifacts import create_table_artifact

        create_table_artifact(
            table=_summary_table(results),
            key=f"pipeline-{compiled.spec.name.lower().replace('_', '-').replace('.', '-')}"[:100],
            description=f"Steps of pipeline {compiled.spec.name}",
        )
    return _final_state(compiled.spec.name, results)


def _context(settings: Settings, approve: bool, approval_timeout_s: int) -> ToolContext:
    """The steps' tool context: in a deployment run, settings only narrowing the process's and a
    reviewer in the UI; in-process, `approve` approves or denies what needs approval."""
    from prefect.runtime import deployment

    if not deployment.id:
        return ToolContext(settings=settings, approver=always_approve if approve else deny_all)
    # A safe (unreviewed) tool step reads anywhere under the root: a trigger may only narrow it.
    changed = run_changed_parameters(("project", "root", "state_dir"))
    if changed:
        check_scope(settings, own_settings(), changed)
    # `project` is a run parameter: its folder's udm.toml must not lower the process's own policy.
    settings = settings.model_copy(update={"approval_policy": run_policy(settings)})
    return ToolContext(settings=settings, approver=_review_approver(approval_timeout_s, settings))


def _final_state(name: str, results: dict[str, Any]) -> State[Any]:
    """Completed (or Completed "Rejected") with every step's outcome; PipelineRunError when a step failed."""
    from prefect.runtime import flow_run

    failed = [n for n, r in results.items() if r["status"] == "failed"]
    summary = {
        "pipeline": name,
        "status": "failed" if failed else "completed",
        "flow_run_id": str(flow_run.id),
        "steps": results,
    }
    if failed:
        details = "; ".join(f"{n}: {results[n].get('error')}" for n in failed)
        raise PipelineRunError(f"pipeline {name}: {len(failed)} step(s) failed: {details}", summary)
    rejected = [n for n, r in results.items() if "Rejected" in r.get("state", "")]
    if rejected:
        return Completed(
            data=summary, name="Rejected", message=f"rejected by the reviewer: {', '.join(rejected)}"
        )
    return Completed(data=summary, message=f"{len(results)} step(s) done")


def _review_approver(timeout_s: int, settings: Settings) -> Approver:
    """An approver that pauses this run (and any run above it) until a reviewer answers in the UI."""

    def approve(request: ApprovalRequest) -> bool:
        from flows.approval import Approval, ApprovalExpiredError, PausedRun, wait_for_approval
        from flows.notify import notify_review_waiting

        prompt = Approval.with_initial_data(
            description=f"Approve {request.tool} ({request.permission.value}): {request.summary}",
            approve=False,
        )

        def tell(runs: list[PausedRun]) -> None:
            what = {"tool": request.tool, "permission": request.permission.value, "summary": request.summary}
            subject = f"Review waiting: {request.tool} ({request.permission.value})"
            notify_review_waiting(settings, runs, subject=subject, what=what, timeout_s=timeout_s)

        try:
            answer = wait_for_approval(prompt, timeout_s=timeout_s, poll_interval_s=10, on_paused=tell)
        except ApprovalExpiredError as exc:
            raise ApprovalUnavailableError(str(exc)) from exc
        return bool(answer is not None and answer.approve)

    return approve
