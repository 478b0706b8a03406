"""Declarative pipelines: loading a spec and the compiler that checks it; the package's surface.

A spec names steps; each calls a tool (or a flow) with an input that may reference parameters,
earlier steps' outputs (`${{ steps.fetch.output.cleanedTextContent }}`) and, in a `for_each` step,
the current item (`${{ item.link }}`). Compiling builds a networkx DAG (edges from `needs` and from
references) and checks everything that can be checked before a run: unknown tools, flows and steps,
cycles, references to fields the tool's Output model does not have, and literal inputs the tool's
Input schema rejects. Every problem names its step. No Prefect import: flows/pipeline.py runs it.
The model lives in tasks/pipeline_model.py and the expressions in tasks/pipeline_expr.py; callers
import both from here.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
import yaml
from pydantic import BaseModel, ValidationError

from tasks.pipeline_expr import (
    EXPRESSION,
    ExpressionError,
    evaluate,
    expressions,
    references,
    render,
    strip_expression,
)
from tasks.pipeline_model import (
    BUILTIN_FLOWS,
    CacheSpec,
    CompiledPipeline,
    FlowInfo,
    PipelineSpec,
    StepSpec,
    parse_duration,
    pipeline_json_schema,
)
from tasks.registry import get_tool
from udm.datalimits import DataLimitError, check_yaml, read_utf8
from udm.errors import ToolError

__all__ = [
    "BUILTIN_FLOWS",
    "CacheSpec",
    "CompiledPipeline",
    "ExpressionError",
    "FlowInfo",
    "PipelineCheckError",
    "PipelineSpec",
    "StepSpec",
    "compile_pipeline",
    "evaluate",
    "load_spec",
    "parse_duration",
    "pipeline_json_schema",
    "references",
    "render",
    "strip_expression",
]


class PipelineCheckError(ToolError, ValueError):
    """A spec that cannot run; `problems` lists every problem, each naming its step."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def load_spec(source: str | Path | Mapping[str, Any]) -> PipelineSpec:
    """A spec from a file (Path), YAML/JSON text (str) or a dict; bad specs raise PipelineCheckError."""
    if isinstance(source, Mapping):
        raw: Any = dict(source)
    else:
        text = source
        if isinstance(source, Path):
            try:
                text = read_utf8(source)
            except OSError as exc:
                raise PipelineCheckError([f"cannot read {source}: {exc.strerror}"]) from exc
            except ValueError as exc:
                raise PipelineCheckError([str(exc)]) from exc
        try:
            check_yaml(str(text), what="the pipeline spec")
            raw = yaml.safe_load(str(text))
        except DataLimitError as exc:
            raise PipelineCheckError([str(exc)]) from exc
        except yaml.YAMLError as exc:
            raise PipelineCheckError([f"not valid YAML: {exc}"]) from exc
    if not isinstance(raw, dict):
        raise PipelineCheckError(["a pipeline spec must be a mapping with 'name' and 'steps'"])
    try:
        return PipelineSpec.model_validate(raw)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = [str(x) for x in err["loc"]]
            where = (
                f"step '{loc[1]}': field '{'.'.join(loc[2:]) or '(step)'}'"
                if loc[:1] == ["steps"] and len(loc) > 1
                else f"field '{'.'.join(loc) or '(spec)'}'"
            )
            problems.append(f"{where}: {err['msg']}")
        raise PipelineCheckError(problems) from exc


# Schema walking ------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def _schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """A model's JSON schema, built once (pydantic takes milliseconds per call); never mutated."""
    return model.model_json_schema(by_alias=True)


def _deref(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].split("/")[-1]
        schema = root.get("$defs", {}).get(name, {})
    for key in ("anyOf", "oneOf"):
        if key in schema:
            # Optional[X] is anyOf [X, null]: follow the non-null branch.
            branches = [b for b in schema[key] if b.get("type") != "null"]
            if len(branches) == 1:
                return _deref(branches[0], root)
            return {}
    return schema


def _field_schema(
    schema: dict[str, Any], root: dict[str, Any], path: list[str | int]
) -> tuple[dict[str, Any], str | None]:
    """Follow `path` in a JSON schema; (sub-schema, problem). An empty schema means 'anything'."""
    current = _deref(schema, root)
    for i, key in enumerate(path):
        if not current:
            return {}, None
        if current.get("type") == "array":
            items = _deref(current.get("items", {}), root)
            if isinstance(key, int):
                current = items
                continue
            # A field of a list maps over the elements (see _lookup).
            sub, problem = _field_schema(items, root, path[i:])
            return ({"type": "array", "items": sub} if not problem else {}), problem
        props = current.get("properties")
        if props is None:
            return {}, None
        if key not in props:
            shown = ".".join(str(p) for p in path[: i + 1])
            return {}, f"has no field '{shown}' (fields: {', '.join(sorted(props))})"
        current = _deref(props[str(key)], root)
    return current, None


# Compiling -----------------------------------------------------------------------------------


class _Tools:
    """Tool lookups memoised for one compile (the registry's lookup is a linear scan)."""

    def __init__(self) -> None:
        self._found: dict[str, Any] = {}

    def get(self, name: str) -> Any:
        if name not in self._found:
            self._found[name] = get_tool(name)
        return self._found[name]


def _output_schema(step: StepSpec, flows: Mapping[str, FlowInfo], tools: _Tools) -> dict[str, Any] | None:
    if step.tool:
        tool = tools.get(step.tool)
        return _schema_of(tool.Output) if tool else None
    info = flows.get(step.flow or "")
    return info.output_schema if info else None


def _check_fields(
    name: str,
    step: StepSpec,
    spec: PipelineSpec,
    flows: Mapping[str, FlowInfo],
    tools: _Tools,
    graph: nx.DiGraph,
) -> list[str]:
    """Problems with a step's tool or flow, needs, retry delay and cache key; each need an edge."""
    where = f"step '{name}'"
    problems: list[str] = []
    if step.tool and tools.get(step.tool) is None:
        problems.append(f"{where}: unknown tool '{step.tool}' (see `udm tools list`)")
    if step.flow and step.flow not in flows:
        known = ", ".join(sorted(flows)) or "none available"
        problems.append(f"{where}: unknown flow '{step.flow}' (known: {known})")
    for need in step.needs:
        if need not in spec.steps:
            problems.append(f"{where}: needs unknown step '{need}'")
        elif need == name:
            problems.append(f"{where}: needs itself")
        else:
            graph.add_edge(need, name)
    if step.retry_delay is not None and isinstance(step.retry_delay, list) and not step.retry_delay:
        problems.append(f"{where}: retry_delay list is empty")
    if step.cache:
        tool = tools.get(step.tool) if step.tool else None
        fields = set(_schema_of(tool.Input).get("properties", {})) if tool else set()
        for key in step.cache.key:
            if tool and key not in fields:
                problems.append(f"{where}: cache key '{key}' is not an input field of {tool.name}")
    return problems


@dataclass
class _References:
    """Checks the references of one step's expressions: each adds an edge to the step it reads and
    must name an existing field of that step's output (or of the `for_each` item)."""

    name: str
    step: StepSpec
    spec: PipelineSpec
    flows: Mapping[str, FlowInfo]
    tools: _Tools
    graph: nx.DiGraph
    problems: list[str] = field(default_factory=list)
    # The schema `item` is checked against, once the for_each expression fixed it.
    item_schema: dict[str, Any] | None = None
    item_root: dict[str, Any] = field(default_factory=dict)

    @property
    def where(self) -> str:
        """How the step's problems begin."""
        return f"step '{self.name}'"

    def _sources(self) -> list[tuple[str, str]]:
        """(origin, expression) of the step's expressions, for_each first."""
        sources: list[tuple[str, str]] = []
        if isinstance(self.step.for_each, str):
            each = EXPRESSION.fullmatch(self.step.for_each.strip())
            if not each:
                self.problems.append(f"{self.where}: for_each must be a ${{{{ }}}} expression or a list")
            else:
                sources.append(("for_each", each.group(1)))
        sources += [(f"input.{k}", e) for k, v in self.step.input.items() for e in expressions(v)]
        if self.step.when:
            sources.append(("when", strip_expression(self.step.when)))
        return sources

    def check(self) -> list[str]:
        """Every problem with the step's references."""
        for origin, expr in self._sources():
            try:
                paths = references(expr)
            except ExpressionError as exc:
                self.problems.append(f"{self.where}: {origin}: {exc}")
                continue
            for path in paths:
                self._path(origin, path)
        return self.problems

    def _path(self, origin: str, path: list[str | int]) -> None:
        """Check one path an expression reads."""
        head, where = path[0], self.where
        shown = ".".join(str(p) for p in path)
        if head == "params":
            if len(path) < 2 or path[1] not in self.spec.parameters:
                self.problems.append(f"{where}: {origin}: '{shown}' is not a declared parameter")
        elif head in ("item", "index"):
            if self.step.for_each is None:
                self.problems.append(f"{where}: {origin}: '{head}' is only defined in a for_each step")
            elif head == "item" and origin != "for_each" and self.item_schema and len(path) > 1:
                _, problem = _field_schema(self.item_schema, self.item_root, path[1:])
                if problem:
                    self.problems.append(f"{where}: {origin}: item {problem}")
        elif head == "steps":
            self._step_output(origin, path, shown)
        else:
            self.problems.append(
                f"{where}: {origin}: unknown name '{head}' (use steps, params, item or index)"
            )

    def _step_output(self, origin: str, path: list[str | int], shown: str) -> None:
        """Check a `steps.NAME.output[.FIELD]` path; a for_each over it fixes the item's schema."""
        where = self.where
        if len(path) < 3 or path[2] != "output":
            self.problems.append(f"{where}: {origin}: write steps.NAME.output[.FIELD], not '{shown}'")
            return
        ref = str(path[1])
        if ref not in self.spec.steps:
            self.problems.append(f"{where}: {origin}: references unknown step '{ref}'")
            return
        if ref == self.name:
            self.problems.append(f"{where}: {origin}: references its own output")
            return
        self.graph.add_edge(ref, self.name)
        target = self.spec.steps[ref]
        schema = _output_schema(target, self.flows, self.tools)
        if schema is None:
            return
        if target.for_each is not None:
            schema = {"type": "array", "items": schema, "$defs": schema.get("$defs", {})}
        sub, problem = _field_schema(schema, schema, path[3:])
        if problem:
            self.problems.append(f"{where}: {origin}: output of step '{ref}' {problem}")
        elif origin == "for_each":
            if sub and sub.get("type") not in (None, "array"):
                self.problems.append(f"{where}: for_each: '{shown}' is a {sub.get('type')}, not a list")
            elif sub.get("type") == "array":
                self.item_schema, self.item_root = _deref(sub.get("items", {}), schema), schema


def compile_pipeline(
    spec: PipelineSpec | str | Path | Mapping[str, Any],
    flows: Mapping[str, FlowInfo] | None = None,
    params: Mapping[str, Any] | None = None,
) -> CompiledPipeline:
    """Check a spec completely and build its DAG; raises PipelineCheckError listing every problem."""
    if not isinstance(spec, PipelineSpec):
        spec = load_spec(spec)
    flows = flows or {}
    tools = _Tools()
    problems: list[str] = []
    graph: nx.DiGraph = nx.DiGraph()
    graph.add_nodes_from(spec.steps)
    unknown_params = set(params or {}) - set(spec.parameters)
    problems += [f"parameter '{p}' is not declared in the spec's parameters" for p in sorted(unknown_params)]
    for name, step in spec.steps.items():
        if bool(step.tool) == bool(step.flow):
            problems.append(f"step '{name}': give exactly one of 'tool' or 'flow'")
            continue
        problems += _check_fields(name, step, spec, flows, tools, graph)
        problems += _References(name, step, spec, flows, tools, graph).check()
        problems += _check_literal_input(name, step, flows, tools)
    if nx.is_directed_acyclic_graph(graph):
        order = list(nx.topological_sort(graph))
    else:
        cycle = nx.find_cycle(graph)
        chain = " -> ".join([u for u, _ in cycle] + [cycle[0][0]])
        problems.append(f"step '{cycle[0][0]}': dependency cycle {chain}")
        order = []
    if problems:
        raise PipelineCheckError(problems)
    upstream = {n: sorted(graph.predecessors(n)) for n in graph.nodes}
    return CompiledPipeline(spec=spec, graph=graph, order=order, upstream=upstream)


def _check_literal_input(
    name: str, step: StepSpec, flows: Mapping[str, FlowInfo], tools: _Tools
) -> list[str]:
    """Validate the literal part of a step's input against the tool's Input model (or flow parameters)."""
    where = f"step '{name}'"
    dynamic = {k for k, v in step.input.items() if expressions(v)}
    if step.tool:
        tool = tools.get(step.tool)
        if tool is None:
            return []
        allowed = set(_schema_of(tool.Input).get("properties", {}))
        problems = [
            f"{where}: input has unknown field '{k}' for {tool.name}"
            for k in sorted(set(step.input) - allowed)
        ]
        literal = {k: v for k, v in step.input.items() if k not in dynamic and k in allowed}
        try:
            tool.Input.model_validate(literal)
        except ValidationError as exc:
            for err in exc.errors():
                loc = [str(x) for x in err["loc"]]
                if loc and (loc[0] in dynamic or err["type"] == "extra_forbidden"):
                    continue
                if not loc and dynamic:
                    # A whole-input rule (e.g. "one of url or filePath") cannot be judged before the
                    # expression-valued fields have values; call_tool checks it at run time.
                    continue
                problems.append(f"{where}: input field '{'.'.join(loc) or '(input)'}': {err['msg']}")
        return problems
    info = flows.get(step.flow or "")
    if info is None or info.parameters.get("properties") is None:
        return []
    props = info.parameters["properties"]
    problems = [
        f"{where}: flow '{step.flow}' has no parameter '{k}'" for k in sorted(set(step.input) - set(props))
    ]
    problems += [
        f"{where}: flow '{step.flow}' needs parameter '{r}'"
        for r in info.parameters.get("required", [])
        if r not in step.input
    ]
    return problems
