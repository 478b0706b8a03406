"""The generic pipeline flow on the session Prefect server: parallelism, fan-out, retries, caching, approval."""

from __future__ import annotations

import time
from typing import Any

import pytest

pytestmark = pytest.mark.prefect


def run(spec: str, settings, **kw: Any) -> dict[str, Any]:
    from flows.pipeline import pipeline_flow

    return pipeline_flow(spec=spec, project=str(settings.project_root), artifact=False, **kw)


def task_runs_of(flow_run_id) -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.client.schemas.sorting import TaskRunSort

    with get_client(sync_client=True) as client:
        return client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])),
            sort=TaskRunSort.EXPECTED_START_TIME_ASC,
            limit=200,
        )


def test_fan_out_names_and_outputs(prefect_server, test_tools, settings) -> None:
    spec = """
name: fan
parameters: {topic: duckdb fts}
steps:
  search:
    tool: fakeSearchTool
    input: {query: "${{ params.topic }}", numResults: 3}
  fetch:
    tool: fakeFetchTool
    for_each: ${{ steps.search.output.results }}
    input: {url: "${{ item.link }}", maxLengthBytes: 200000}
  summary:
    tool: echoTool
    when: ${{ len(steps.fetch.output) == 3 }}
    input: {text: "${{ steps.fetch.output[2].cleanedTextContent }}"}
  never:
    tool: echoTool
    when: params.topic == 'other'
    input: {text: x}
  after_never:
    tool: echoTool
    needs: [never]
    input: {text: y}
"""
    result = run(spec, settings)
    steps = result["steps"]
    assert steps["fetch"]["items"] == 3
    assert [o["url"] for o in steps["fetch"]["output"]] == [
        f"http://127.0.0.1:9/duckdb-fts/{i}" for i in range(3)
    ]
    assert steps["summary"]["output"]["echoed"] == ["text of http://127.0.0.1:9/duckdb-fts/2"]
    assert steps["never"]["status"] == "skipped" and "condition false" in steps["never"]["reason"]
    assert steps["after_never"]["status"] == "skipped"
    assert result["status"] == "completed"


def test_a_step_starts_as_soon_as_its_needs_finish(prefect_server, test_tools, settings) -> None:
    spec = """
name: par
max_workers: 4
steps:
  slow: {tool: fakeFetchTool, input: {url: slow, delay: 1.5}}
  quick: {tool: fakeFetchTool, input: {url: quick, delay: 0.1}}
  after_quick: {tool: fakeFetchTool, needs: [quick], input: {url: "${{ steps.quick.output.url }}-2", delay: 0.1}}
  w1: {tool: fakeFetchTool, input: {url: w1, delay: 0.5}}
  w2: {tool: fakeFetchTool, input: {url: w2, delay: 0.5}}
"""
    started = time.perf_counter()
    result = run(spec, settings)
    elapsed = time.perf_counter() - started
    assert result["steps"]["after_quick"]["output"]["url"] == "quick-2"
    wanted = {"slow", "quick", "after_quick", "w1", "w2"}
    deadline = time.monotonic() + 20
    while True:  # task-run states reach the server asynchronously (events), so wait for them
        runs = {r.name: r for r in task_runs_of(result["flow_run_id"]) if r.name in wanted and r.end_time}
        if set(runs) == wanted or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert set(runs) == wanted  # each task run named after its step
    # after_quick finished while slow was still running: it did not wait for an unrelated step.
    assert runs["after_quick"].end_time < runs["slow"].end_time
    assert elapsed < 1.5 + 0.5 + 0.5 + 0.2 + 3.0  # steps overlapped (serial: 2.7 s of sleeping + overhead)


def test_retries_failures_and_skips(prefect_server, test_tools, settings) -> None:
    from flows.pipeline import PipelineRunError

    ok = run(
        "name: r\nsteps:\n  f: {tool: flakyTool, input: {key: a, failures: 2}, retries: 2, retry_delay: 0.05}\n",
        settings,
    )
    assert ok["steps"]["f"]["output"]["attempts"] == 3
    spec = """
name: r2
steps:
  f: {tool: flakyTool, input: {key: b, failures: 3}, retries: 1, retry_delay: 0.05}
  g: {tool: echoTool, input: {text: "${{ steps.f.output.status }}"}}
  h: {tool: echoTool, input: {text: independent}}
"""
    with pytest.raises(PipelineRunError) as info:
        run(spec, settings)
    steps = info.value.summary["steps"]
    assert steps["f"]["status"] == "failed" and "ERROR_TIMEOUT" in steps["f"]["error"]
    assert steps["g"]["status"] == "skipped" and "f did not complete" in steps["g"]["reason"]
    assert steps["h"]["status"] == "completed"


def test_cache_reuses_results_across_runs(prefect_server, test_tools, settings) -> None:
    spec = "name: c\nsteps:\n  f: {tool: flakyTool, input: {key: cached, failures: 0}, cache: {key: [key], expiration: 1h}}\n"
    first = run(spec, settings)["steps"]["f"]["output"]["attempts"]
    second = run(spec, settings)["steps"]["f"]["output"]["attempts"]
    assert first == second == 1  # the tool ran once; the second run read the cached result
    assert (settings.state_path / "flaky-cached.count").read_text() == "1"


def test_approval_is_enforced_in_pipelines(prefect_server, test_tools, settings) -> None:
    from flows.pipeline import PipelineRunError

    spec = "name: a\nsteps:\n  n: {tool: noteTool, input: {name: pipe, text: hi}}\n"
    with pytest.raises(PipelineRunError, match="approval denied"):
        run(spec, settings)
    assert not (settings.state_path / "notes" / "pipe.txt").exists()
    run(spec, settings, approve=True)
    assert (settings.state_path / "notes" / "pipe.txt").read_text() == "hi"


def test_a_bad_spec_fails_before_any_step_runs(prefect_server, test_tools, settings) -> None:
    from tasks.pipeline_spec import PipelineCheckError

    spec = "name: b\nsteps:\n  n: {tool: noteTool, input: {name: x, text: hi}}\n  m: {tool: nope}\n"
    with pytest.raises(PipelineCheckError, match="unknown tool 'nope'"):
        run(spec, settings, approve=True)
    assert not (settings.state_path / "notes").exists()


def test_a_flow_step_runs_the_flow_as_a_subflow(prefect_server, test_tools, settings) -> None:
    spec = """
name: with-flow
parameters: {root: "", state: ""}
steps:
  index:
    flow: index
    input: {root: "${{ params.root }}", state_dir: "${{ params.state }}"}
  report:
    tool: echoTool
    input: {text: "indexed: ${{ steps.index.output }}"}
"""
    out = run(spec, settings, params={"root": str(settings.udm_root), "state": str(settings.state_path)})
    assert out["steps"]["index"]["status"] == "completed"
    assert isinstance(out["steps"]["index"]["output"], dict) and out["steps"]["index"]["output"]
    assert out["steps"]["report"]["output"]["echoed"][0].startswith("indexed: {")
    assert (settings.state_path / "index.duckdb").exists()
