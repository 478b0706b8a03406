"""Pipeline specs: loading, expressions and the compiler's checks (no Prefect)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.base import call_tool
from tasks.pipeline_spec import (
    ExpressionError,
    FlowInfo,
    PipelineCheckError,
    compile_pipeline,
    evaluate,
    load_spec,
    parse_duration,
    pipeline_json_schema,
    render,
)

GOOD = """
name: refresh-fts-appendix
parameters: {topic: duckdb full text search}
steps:
  search:
    tool: fakeSearchTool
    input: {query: "${{ params.topic }}", numResults: 3}
  fetch:
    tool: fakeFetchTool
    needs: [search]
    for_each: ${{ steps.search.output.results }}
    input: {url: "${{ item.link }}", maxLengthBytes: 200000}
    retries: 3
    retry_delay: [0.1, 0.2, 0.3]
    cache: {key: [url], expiration: 1d}
    timeout: 30
  summary:
    tool: echoTool
    when: ${{ len(steps.fetch.output) > 0 }}
    input: {text: "first: ${{ steps.fetch.output[0].cleanedTextContent }}", times: 1}
"""


def problems_of(spec: str, **kw) -> list[str]:
    with pytest.raises(PipelineCheckError) as info:
        compile_pipeline(spec, **kw)
    return info.value.problems


def test_good_spec_compiles_to_a_dag(test_tools) -> None:
    compiled = compile_pipeline(GOOD)
    assert compiled.order == ["search", "fetch", "summary"]
    assert set(compiled.graph.edges) == {("search", "fetch"), ("fetch", "summary")}
    assert compiled.upstream["summary"] == ["fetch"]  # inferred from the reference


def test_every_problem_is_reported_and_names_its_step(test_tools) -> None:
    spec = """
name: broken
steps:
  a:
    tool: fakeSearchTool
    input: {query: "", numResults: 99, colour: red}
  b:
    tool: nosuchTool
  c:
    tool: fakeFetchTool
    needs: [ghost]
    input: {url: "${{ steps.a.output.results[0].href }}"}
  d:
    tool: echoTool
    for_each: ${{ steps.a.output.results }}
    input: {text: "${{ item.url }}"}
  e:
    tool: echoTool
    input: {text: "${{ steps.f.output.echoed }}"}
  f:
    tool: echoTool
    input: {text: "${{ steps.e.output.echoed }}"}
  g:
    tool: echoTool
    input: {text: "${{ item }}", times: "${{ params.missing }}"}
"""
    problems = problems_of(spec)
    text = "\n".join(problems)
    assert "step 'a': input has unknown field 'colour'" in text
    assert "step 'a': input field 'query'" in text
    assert "step 'a': input field 'numResults'" in text
    assert "step 'b': unknown tool 'nosuchTool'" in text
    assert "step 'c': needs unknown step 'ghost'" in text
    assert "step 'c': input.url: output of step 'a' has no field 'results.0.href'" in text
    assert "step 'd': input.text: item has no field 'url'" in text
    assert "dependency cycle" in text and ("e -> f -> e" in text or "f -> e -> f" in text)
    assert "step 'g': input.text: 'item' is only defined in a for_each step" in text
    assert "step 'g': input.times: 'params.missing' is not a declared parameter" in text
    assert all(p.startswith("step '") for p in problems)


def test_required_fields_missing_only_when_not_given_by_expression(test_tools) -> None:
    spec = "name: p\nsteps:\n  a:\n    tool: fakeFetchTool\n    input: {maxLengthBytes: 5}\n"
    assert problems_of(spec) == ["step 'a': input field 'url': Field required"]


def test_structural_errors_are_named(test_tools) -> None:
    assert "field 'steps'" in problems_of("name: p\nsteps: {}\n")[0]
    problems = problems_of("name: p\nsteps:\n  a:\n    tool: echoTool\n    retries: 50\n    colour: 1\n")
    assert any("step 'a': field 'retries'" in p for p in problems)
    assert any("step 'a': field 'colour'" in p for p in problems)
    assert problems_of("name: p\nsteps:\n  a:\n    input: {}\n") == [
        "step 'a': give exactly one of 'tool' or 'flow'"
    ]
    assert "not valid YAML" in problems_of("name: [\n")[0]


def test_flow_steps_check_names_and_parameters(test_tools) -> None:
    flows = {"index": FlowInfo(parameters={"properties": {"root": {}, "full": {}}, "required": ["root"]})}
    spec = "name: p\nsteps:\n  a:\n    flow: index\n    input: {fast: true}\n  b:\n    flow: research\n"
    text = "\n".join(problems_of(spec, flows=flows))
    assert "step 'a': flow 'index' has no parameter 'fast'" in text
    assert "step 'a': flow 'index' needs parameter 'root'" in text
    assert "step 'b': unknown flow 'research' (known: index)" in text


def test_expressions_render_and_evaluate() -> None:
    scope = {
        "steps": {"s": {"output": {"results": [{"link": "u1"}, {"link": "u2"}], "n": 2}}},
        "params": {"k": "v"},
    }
    assert render("${{ steps.s.output.results }}", scope) == [{"link": "u1"}, {"link": "u2"}]
    assert render("${{ steps.s.output.results.link }}", scope) == ["u1", "u2"]
    assert render("n=${{ steps.s.output.n }} k=${{ params.k }}", scope) == "n=2 k=v"
    assert render({"a": ["${{ item.link }}"]}, {**scope, "item": {"link": "x"}}) == {"a": ["x"]}
    assert evaluate("steps.s.output.n >= 2 and params.k == 'v'", scope) is True
    assert evaluate("not len(steps.s.output.results) > 5", scope) is True
    with pytest.raises(ExpressionError, match="no field 'nope'"):
        evaluate("steps.s.output.nope", scope)
    with pytest.raises(ExpressionError, match="unsupported"):
        evaluate("__import__('os')", scope)
    with pytest.raises(ExpressionError, match="unsupported"):
        evaluate("steps.s.output.n + 1", scope)


def test_durations_and_schema() -> None:
    assert parse_duration("15m") == 900 and parse_duration("1d") == 86400 and parse_duration(5) == 5
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration("soon")
    schema = pipeline_json_schema()
    assert schema["required"] == ["name", "steps"]
    step = schema["$defs"]["StepSpec"]["properties"]
    assert {
        "tool",
        "flow",
        "input",
        "needs",
        "retries",
        "retry_delay",
        "cache",
        "timeout",
        "when",
        "for_each",
    } <= set(step)
    published = Path(__file__).resolve().parents[2] / "examples" / "pipelines" / "pipeline.schema.json"
    assert json.loads(published.read_text()) == json.loads(json.dumps(schema)), (
        "run: udm pipeline schema > " + str(published)
    )


def test_pipeline_check_tool(test_tools, ctx) -> None:
    from tasks.pipeline_check import PipelineCheckTool

    ok = call_tool(PipelineCheckTool(), {"spec": GOOD}, ctx).envelope
    assert ok.success and ok.data["valid"] and ok.data["order"] == ["search", "fetch", "summary"]
    bad = call_tool(PipelineCheckTool(), {"spec": "name: p\nsteps:\n  a: {tool: zzz}\n"}, ctx).envelope
    assert (
        bad.success
        and not bad.data["valid"]
        and bad.data["problems"] == ["step 'a': unknown tool 'zzz' (see `udm tools list`)"]
    )


def test_example_specs_compile_against_the_real_tools_and_flows() -> None:
    from flows.pipeline import flow_catalog

    folder = Path(__file__).resolve().parents[2] / "examples" / "pipelines"
    names = sorted(p.name for p in folder.glob("*.yaml"))
    assert {"research.yaml", "update.yaml", "verify.yaml"} <= set(names)
    catalog = flow_catalog()
    for path in folder.glob("*.yaml"):
        compiled = compile_pipeline(load_spec(path), catalog)
        assert compiled.order, path


def test_cli_check_and_graph(test_tools, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from flows.cli import run

    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    assert run(["pipeline", "check", str(good)]) == 0
    assert "ok, 3 steps" in capsys.readouterr().out
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: b\nsteps:\n  a: {tool: zzz}\n  b: {tool: echoTool, needs: [nope]}\n")
    assert run(["pipeline", "check", str(bad)]) == 1
    err = capsys.readouterr().err
    assert (
        "error: step 'a': unknown tool 'zzz'" in err and "error: step 'b': needs unknown step 'nope'" in err
    )
    assert "3 problem(s)" in err and "input field 'text': Field required" in err
    assert run(["pipeline", "check", str(tmp_path / "missing.yaml")]) == 1
    assert "cannot read" in capsys.readouterr().err
    assert run(["pipeline", "graph", str(good)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("flowchart TD") and "search --> fetch" in out and "(for each)" in out
    assert run(["pipeline", "graph", str(good), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["edges"] == [["search", "fetch"], ["fetch", "summary"]]
    assert run(["pipeline", "graph", str(good), "--format", "dot"]) == 0
    assert '"search" -> "fetch";' in capsys.readouterr().out
