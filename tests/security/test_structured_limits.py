"""Hostile structured data: nesting and size limits on every parse of JSON, JSON5 and YAML (#17.4).

1,500 levels raised RecursionError in `udm index` and broke every later call for the whole manual;
100,000 levels crashed `udm index` and `udm patch apply` with a segmentation fault (PyYAML's C
composer recurses in C). Each case here is refused with a message naming the limit and the line,
and the rest of the manual keeps answering.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from tasks.base import ToolContext, call_tool
from tasks.knowledge_graph import KnowledgeGraphQueryTool
from tasks.udm_query import UdmQueryTool
from tasks.udm_sql import UdmSqlQueryTool
from tasks.yaml_editor import YamlJsonParserEditorTool
from udm.config import Settings, load_settings
from udm.datalimits import DataLimitError, DataLimits, check_json, check_text, check_yaml
from udm.errors import PatchError
from udm.index import UdmQuery, lint
from udm.patch import edit_text, get_value
from udm.patch.loading import loads_patch

REPO = Path(__file__).resolve().parents[2]
LIMIT = 100  # the default of data_max_depth


def json_lists(depth: int) -> str:
    return "[" * depth + "]" * depth


def json_objects(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


def yaml_flow(depth: int) -> str:
    return "a: " + "[" * depth + "]" * depth + "\n"


def yaml_block(depth: int) -> str:
    # Each level one key deeper, one space more: block style, no brackets at all.
    return "".join(" " * i + "k:\n" for i in range(depth)) + " " * depth + "k: 1\n"


def yaml_dashes(depth: int) -> str:
    # Compact nested sequences, all on one line: "- - - - x".
    return "- " * depth + "x\n"


DEEP_TEXTS = {
    "json-lists": ("json", json_lists),
    "json-objects": ("json", json_objects),
    "json5-lists": ("json5", json_lists),
    "yaml-flow": ("yaml", yaml_flow),
    "yaml-block": ("yaml", yaml_block),
    "yaml-dashes": ("yaml", yaml_dashes),
}


# ------------------------------------------------------------------------- the pre-scan itself


@pytest.mark.parametrize("depth", [1_500, 100_000])
@pytest.mark.parametrize("shape", sorted(DEEP_TEXTS))
def test_deep_text_is_refused_before_parsing(shape: str, depth: int) -> None:
    fmt, make = DEEP_TEXTS[shape]
    if shape == "yaml-block" and depth > 1_500:
        depth = 3_000  # 100,000 levels of indentation would be 5 GB of spaces; the size limit answers
    text = make(depth)
    with pytest.raises(DataLimitError) as err:
        check_text(text, fmt)
    message = str(err.value)
    assert f"more than {LIMIT} levels" in message and "data_max_depth" in message
    if shape == "yaml-block":
        assert err.value.line == LIMIT + 1  # the line of the level past the limit
    else:
        assert err.value.line == 1


@pytest.mark.parametrize("shape", sorted(DEEP_TEXTS))
def test_data_at_the_limit_parses(shape: str) -> None:
    fmt, make = DEEP_TEXTS[shape]
    # YAML counts the top mapping of `a: [...]` and `k:` as a level of its own.
    depth = LIMIT - 1 if shape in ("yaml-flow", "yaml-block") else LIMIT
    text = make(depth)
    check_text(text, fmt)
    assert get_value(text, fmt, "") is not None  # ruamel and json5 get there without RecursionError
    with pytest.raises(DataLimitError):
        check_text(make(depth + 1), fmt)


def test_brackets_in_strings_and_comments_do_not_count() -> None:
    deep_string = json.dumps({"a": "[" * 5_000, "b": "]" * 5_000, "c": '\\"[[[['})
    check_json(deep_string)
    check_json("// [[[[[[\n{/* [[[[[[[ */ a: '[[[[[', b: \"]]]]\"}\n" + "// " + "[" * 500, json5=True)
    check_yaml("a: '[[[[[[[[[['\nb: \"{{{{{{{{\"\n# [[[[[[[[[[[[[[\nc: |\n  [[[[[[[[[[[[[[[[[[\n" * 30)
    # Fake closers inside strings cannot hide real depth.
    sneaky = '["]]]]]]]]]]", ' * 150 + "1" + "]" * 150
    with pytest.raises(DataLimitError):
        check_json(sneaky)
    sneaky_yaml = "a: " + "['it''s ]]]]', " * 150 + "1" + "]" * 150 + "\n"
    with pytest.raises(DataLimitError):
        check_yaml(sneaky_yaml)


def test_size_limit_names_the_setting() -> None:
    small = DataLimits(max_depth=LIMIT, max_bytes=1_024)
    with pytest.raises(DataLimitError, match=r"more than the limit of 1,024 bytes \(data_max_bytes\)"):
        check_json('"' + "x" * 2_000 + '"', limits=small)
    with pytest.raises(DataLimitError, match="data_max_bytes"):
        check_yaml("a: " + "é" * 600 + "\n", limits=small)  # 1,200 bytes in 600 characters


def test_settings_set_the_limits(tmp_path: Path) -> None:
    try:
        load_settings(tmp_path, data_max_depth=5)
        with pytest.raises(DataLimitError, match="more than 5 levels"):
            check_json(json_lists(6))
        with pytest.raises(Exception, match="data_max_depth"):
            load_settings(tmp_path, data_max_depth=10_000)  # past what the walkers after parsing take
    finally:
        load_settings(tmp_path)  # the defaults again for the rest of the session
    check_json(json_lists(6))


# -------------------------------------------------------------------------------- property tests


def _depth(value: Any) -> int:
    stack = [(value, 1)]
    deepest = 0
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


_TRICKY = st.text(alphabet="[]{}\"'\\#:,- \n/*ab", max_size=12)
_SCALARS = st.one_of(st.integers(-5, 5), st.booleans(), st.none(), _TRICKY)
_NESTED = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.text("abk", min_size=1, max_size=3), inner, max_size=3),
    ),
    max_leaves=40,
)


@hsettings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_NESTED, limit=st.integers(1, 8), style=st.sampled_from(["json", "flow", "block"]))
def test_the_scan_measures_exactly_what_the_parser_builds(value: Any, limit: int, style: str) -> None:
    limits = DataLimits(max_depth=limit)
    if style == "json":
        text = json.dumps(value, indent=None if limit % 2 else 1)
        fmt = "json"
    else:
        text = yaml.safe_dump(value, default_flow_style=style == "flow", allow_unicode=True)
        fmt = "yaml"
    depth = _depth(value)
    if depth > limit:
        with pytest.raises(DataLimitError):
            check_text(text, fmt, limits=limits)  # type: ignore[arg-type]
    else:
        check_text(text, fmt, limits=limits)  # type: ignore[arg-type]


@hsettings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="[]{}\"'\\#:,- \n\t|>&*!ab1", max_size=400))
def test_no_text_that_passes_the_scan_makes_a_parser_recurse_past_the_limit(text: str) -> None:
    # With a limit of 3, a parser that then sees the text never nests more than 3 levels; a text the
    # scan refuses is refused with DataLimitError, never anything else.
    limits = DataLimits(max_depth=3)
    for fmt, parse in (
        ("json", json.loads),
        ("yaml", lambda t: yaml.load(t, Loader=yaml.CSafeLoader)),
    ):
        try:
            check_text(text, fmt, limits=limits)  # type: ignore[arg-type]
        except DataLimitError:
            continue
        try:
            data = parse(text)
        except (ValueError, yaml.YAMLError):
            continue
        assert _depth(data) <= 3


# ------------------------------------------------------------------- the manual keeps answering


def _write_hostile_manual(root: Path, depth: int) -> None:
    (root / "90-deep-json.md").write_text(
        f"# Deep JSON\n\nSee TASK-P0-M0.1-T001.\n\n```json udm\n{json_lists(depth)}\n```\n", encoding="utf-8"
    )
    (root / "91-deep-yaml.md").write_text(
        f"# Deep YAML\n\n```yaml udm\n{yaml_flow(depth)}```\n\n## Block\n\n```yaml udm\n{yaml_block(1_500)}```\n",
        encoding="utf-8",
    )
    (root / "92-deep-front.md").write_text(
        f"---\ntitle: deep\ntags: {json_lists(depth)}\n---\n# Front matter\n\nText.\n", encoding="utf-8"
    )
    (root / "93-deep.yaml").write_text(yaml_flow(depth), encoding="utf-8")
    # An example fence (not marked as data) is never an error, however deep: it must not break anything.
    (root / "96-deep-example.md").write_text(
        f"# Deep example\n\n```json\n{json_lists(depth)}\n```\n\n```yaml\n{yaml_flow(depth)}```\n",
        encoding="utf-8",
    )


@pytest.mark.parametrize("depth", [1_500, 100_000])
def test_deep_blocks_become_lint_findings_and_the_manual_still_answers(
    settings: Settings, depth: int
) -> None:
    _write_hostile_manual(settings.udm_root, depth)
    ctx = ToolContext(settings=settings, log=False)
    query = UdmQuery(settings)
    try:
        query.fresh()
        findings = [f for f in lint(settings, query) if f.rule == "bad-block"]
        where = {(f.file, f.line): f.message for f in findings}
        assert "nested too deeply: more than 100 levels" in where[("90-deep-json.md", 6)]
        assert "JSON block" in where[("90-deep-json.md", 6)]
        assert "YAML block" in where[("91-deep-yaml.md", 4)]
        # The block-style block: its content starts on line 10, level 101 is its 101st line.
        assert "more than 100 levels (limit data_max_depth)" in where[("91-deep-yaml.md", 110)], where
        assert "front matter" in where[("92-deep-front.md", 3)]
        assert not [key for key in where if key[0] == "96-deep-example.md"], where
    finally:
        query.close()
    # Query, search, SQL and the graph answer for the rest of the manual.
    found = call_tool(
        UdmQueryTool(), {"query_type": "find_by_id", "udm_path_or_id": "TASK-P0-M0.1-T001"}, ctx
    )
    assert found.envelope.data is not None and found.envelope.data["status"] == "SUCCESS"
    search = call_tool(UdmQueryTool(), {"query_type": "search", "udm_path_or_id": "repository"}, ctx)
    assert search.envelope.data is not None and search.envelope.data["status"] == "SUCCESS"
    sql = call_tool(UdmSqlQueryTool(), {"sql": "SELECT count(*) FROM files"}, ctx).envelope.data
    assert sql is not None and sql["status"] == "SUCCESS" and sql["rows"][0][0] >= 12
    graph = call_tool(
        KnowledgeGraphQueryTool(),
        {
            "queryLanguage": "cypher",
            "query": "MATCH (a {id: 'TASK-P0-M0.1-T002'})-[:depends_on]->(b) RETURN b.id",
        },
        ctx,
    ).envelope.data
    assert graph is not None and graph["results"] == [{"b.id": "TASK-P0-M0.1-T001"}]


def test_data_at_the_limit_indexes_and_walks(settings: Settings) -> None:
    # Everything that walks parsed data afterwards (IDs, rows, orjson's 254 levels) takes the limit.
    (settings.udm_root / "94-at-limit.md").write_text(
        "# At the limit\n\n```json\n"
        + '{"id": "CFG-901", "v": ' * 50
        + json_lists(LIMIT - 50)
        + "}" * 50
        + "\n```\n\n```yaml\n"
        + yaml_block(LIMIT - 1)
        + "```\n",
        encoding="utf-8",
    )
    query = UdmQuery(settings)
    try:
        query.fresh()
        assert not [f for f in lint(settings, query) if f.file == "94-at-limit.md" and f.rule == "bad-block"]
    finally:
        query.close()


# ------------------------------------------------------------------ crashes, in a child process


def _udm(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UDM_")}
    return subprocess.run(
        [sys.executable, "-c", "from flows.cli import main; main()", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(workspace),
        timeout=120,
    )


def test_udm_index_of_100000_levels_does_not_crash(workspace: Path) -> None:
    (workspace / "docs" / "udm" / "95-crash.md").write_text(
        f"# Crash\n\n```yaml udm\n{yaml_flow(100_000)}```\n", encoding="utf-8"
    )
    (workspace / "docs" / "udm" / "96-example.md").write_text(
        f"# Example\n\n```json\n{json_lists(100_000)}\n```\n", encoding="utf-8"
    )
    done = _udm(workspace, "index")
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "95-crash.md:4: YAML block is nested too deeply: more than 100 levels" in done.stdout + done.stderr
    lint_run = _udm(workspace, "lint")
    assert "95-crash.md:4" in lint_run.stdout and "[bad-block]" in lint_run.stdout


def test_udm_patch_apply_refuses_a_100000_level_block(workspace: Path) -> None:
    target = workspace / "docs" / "udm" / "05-roadmap.md"
    before = target.read_bytes()
    patch = {
        "id": "deep-block",
        "description": "adds a block nested 100,000 levels deep",
        "author": "mallory",
        "operations": [
            {
                "op": "append_to_section",
                "file": "05-roadmap.md",
                "section": "TASK-P0-M0.1-T001",
                "content": f"```yaml udm\n{yaml_flow(100_000)}```\n",
            }
        ],
    }
    (workspace / "deep.json").write_text(json.dumps(patch), encoding="utf-8")
    done = _udm(workspace, "patch", "apply", "--yes", "deep.json")
    assert done.returncode not in (0, -11, 139), done.returncode
    assert "validation failed" in done.stderr and "nested too deeply: more than 100 levels" in done.stderr
    assert "Traceback" not in done.stderr
    assert target.read_bytes() == before
    # The same nesting as an example fence is text to the engine: it commits and nothing crashes.
    patch["operations"][0]["content"] = f"```yaml\n{yaml_flow(100_000)}```\n"
    (workspace / "deep.json").write_text(json.dumps(patch), encoding="utf-8")
    done = _udm(workspace, "patch", "apply", "--yes", "deep.json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, (done.returncode, done.stderr[-2000:])


# ------------------------------------------------------------------ patches, files, the editor


@pytest.mark.parametrize("depth", [1_500, 100_000])
def test_a_deep_patch_file_is_refused(depth: int) -> None:
    as_json = '{"id": "x", "operations": ' + json_lists(depth) + "}"
    with pytest.raises(PatchError, match="the patch file is nested too deeply: more than 100 levels"):
        loads_patch(as_json, "deep.json")
    as_yaml = "id: x\noperations: " + json_lists(depth) + "\n"
    with pytest.raises(PatchError, match="the patch file is nested too deeply: more than 100 levels"):
        loads_patch(as_yaml, "deep.yaml")


@pytest.mark.parametrize("depth", [1_500, 100_000])
def test_a_patch_that_creates_a_deep_data_file_is_refused(ctx: ToolContext, depth: int) -> None:
    from udm.patch import apply_patch

    for name, text in (("deep.yaml", yaml_flow(depth)), ("deep.json", json_lists(depth))):
        patch = loads_patch(
            json.dumps(
                {
                    "id": f"create-{name}",
                    "description": "a deep data file",
                    "author": "mallory",
                    "operations": [{"op": "create_file", "file": name, "content": text}],
                }
            )
        )
        result = apply_patch(patch, ctx.settings)
        assert result.status == "invalid" and not result.committed, result
        assert "nested too deeply: more than 100 levels" in (result.error or ""), result.error
        assert not (ctx.settings.udm_root / name).exists()


@pytest.mark.parametrize("depth", [1_500, 100_000])
def test_key_edits_of_a_deep_file_in_the_manual_are_refused(ctx: ToolContext, depth: int) -> None:
    from udm.patch import apply_patch

    (ctx.settings.udm_root / "deep.yaml").write_text(yaml_flow(depth), encoding="utf-8")
    patch = loads_patch(
        json.dumps(
            {
                "id": "edit-deep",
                "description": "edit a deep file",
                "author": "mallory",
                "operations": [{"op": "set_yaml_key", "file": "deep.yaml", "key": "b", "value": 1}],
            }
        )
    )
    before = (ctx.settings.udm_root / "deep.yaml").read_bytes()
    result = apply_patch(patch, ctx.settings)
    # The same status as a target file that does not parse: the file, not the patch, is wrong.
    assert result.status == "error" and not result.committed, result
    assert "deep.yaml: line 1: YAML is nested too deeply: more than 100 levels" in (result.error or ""), (
        result.error
    )
    assert (ctx.settings.udm_root / "deep.yaml").read_bytes() == before


@pytest.mark.parametrize("fmt", ["yaml", "json", "json5"])
@pytest.mark.parametrize("depth", [1_500, 100_000])
def test_the_editor_tool_answers_a_status(ctx: ToolContext, fmt: str, depth: int) -> None:
    text = yaml_flow(depth) if fmt == "yaml" else json_lists(depth)
    for action in ("get_value", "set_value"):
        raw: dict[str, Any] = {"action": action, "format": fmt, "textContent": text, "keyPath": "a"}
        if action == "set_value":
            raw["newValue"] = 1
        out = call_tool(YamlJsonParserEditorTool(), raw, ctx).envelope.data
        assert out is not None and out["status"] == "ERROR_PARSING", out
        assert "nested too deeply: more than 100 levels" in out["errorDetails"]
    with pytest.raises(DataLimitError):
        edit_text(text, fmt, "set", "a", 1)  # type: ignore[arg-type]


# ------------------------------------------------------------------------- the other readers


def test_specs_step_files_cli_json_and_llm_arguments_are_refused(tmp_path: Path, ctx: ToolContext) -> None:
    from flows.cli import run
    from tasks.llm_tools import ToolUseExecutor
    from tasks.pipeline_spec import PipelineCheckError, load_spec
    from udm.errors import DocumentError
    from udm.verify.spec import load_spec_file

    deep_yaml = "name: p\nsteps: " + json_lists(1_500) + "\n"
    with pytest.raises(PipelineCheckError, match="the pipeline spec is nested too deeply"):
        load_spec(deep_yaml)
    spec = tmp_path / "verify.yaml"
    spec.write_text(f"checks: {json_lists(100_000)}\n", encoding="utf-8")
    with pytest.raises(DocumentError, match=r"verify\.yaml is nested too deeply"):
        load_spec_file(spec)
    spec_json = tmp_path / "verify.json"
    spec_json.write_text(json_lists(1_500), encoding="utf-8")
    with pytest.raises(DocumentError, match=r"verify\.json is nested too deeply"):
        load_spec_file(spec_json)
    assert run(["tools", "call", "udmSqlQueryTool", "--json", json_lists(1_500)]) == 2

    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "udmSqlQueryTool", "arguments": json_lists(1_500)},
    }
    messages = ToolUseExecutor(ctx).openai({"role": "assistant", "tool_calls": [call]})
    assert "invalid input: the arguments JSON is nested too deeply" in messages[0]["content"]


def test_a_deep_browser_cache_file_is_unreadable_not_a_crash(ctx: ToolContext) -> None:
    from tasks.browser.memory import PersistentCacheTool, cache_file

    path = cache_file(ctx)
    path.parent.mkdir(parents=True)
    path.write_text('{"k": ' + json_lists(100_000) + "}", encoding="utf-8")
    out = call_tool(PersistentCacheTool(), {"action": "get"}, ctx).envelope.data
    assert out is not None and out["status"] == "ERROR_CACHE_UNREADABLE", out
    assert "cache.json is nested too deeply" in out["errorDetails"]
