"""Declarative pipelines: the YAML spec model, `${{ }}` expressions, and the compiler that checks a spec.

A spec names steps; each calls a tool (or a flow) with an input that may reference parameters,
earlier steps' outputs (`${{ steps.fetch.output.cleanedTextContent }}`) and, in a `for_each` step,
the current item (`${{ item.link }}`). Compiling builds a networkx DAG (edges from `needs` and from
references) and checks everything that can be checked before a run: unknown tools, flows and steps,
cycles, references to fields the tool's Output model does not have, and literal inputs the tool's
Input schema rejects. Every problem names its step. No Prefect import: flows/pipeline.py runs it.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tasks.registry import get_tool
from udm.datalimits import DataLimitError, check_yaml
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
]

# The flows a step may run (flows/pipeline.py maps them to Prefect flows and their schemas).
BUILTIN_FLOWS = ("research", "update", "verify", "index")
_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_STEP_NAME = r"^[A-Za-z_][A-Za-z0-9_-]*$"
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*$")
_UNITS = {"ms": 0.001, "s": 1, None: 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(value: float | int | str) -> float:
    """Seconds from a number or a string such as '90', '30s', '15m', '6h', '7d'."""
    if isinstance(value, int | float):
        return float(value)
    match = _DURATION.match(value)
    if not match:
        raise ValueError(f"'{value}' is not a duration (e.g. 30s, 15m, 6h, 7d)")
    return float(match.group(1)) * _UNITS[match.group(2)]


class CacheSpec(BaseModel):
    """Reuse a step's result while the listed input fields are unchanged, until it expires."""

    model_config = ConfigDict(extra="forbid")

    key: list[str] = Field(
        default_factory=list,
        description="Input fields whose values form the cache key (empty: the whole resolved input).",
    )
    expiration: str | float = Field(default="1d", description="How long a cached result is reused.")

    @field_validator("expiration")
    @classmethod
    def _duration(cls, value: str | float) -> str | float:
        parse_duration(value)
        return value


class StepSpec(BaseModel):
    """One step: a tool (or flow) call with its input and how it runs."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    tool: str | None = Field(default=None, description="The tool to call (see `udm tools list`).")
    flow: str | None = Field(default=None, description="Or a flow to run: research, update, verify, index.")
    input: dict[str, Any] = Field(
        default_factory=dict, description="The input; strings may hold ${{ }} expressions."
    )
    needs: list[str] = Field(
        default_factory=list,
        description="Steps that must finish first (steps referenced in expressions are added automatically).",
    )
    retries: int = Field(default=0, ge=0, le=10, description="Retries of transient failures.")
    retry_delay: float | list[float] | None = Field(
        default=None, description="Seconds between retries (one number or one per retry); default backoff."
    )
    cache: CacheSpec | None = Field(default=None, description="Reuse results across runs.")
    timeout: float | None = Field(default=None, gt=0, description="Seconds before the step fails.")
    when: str | None = Field(default=None, description="Run only when this condition holds.")
    for_each: str | list[Any] | None = Field(
        default=None, description="Run once per item of this list (an expression or a literal list)."
    )


class PipelineSpec(BaseModel):
    """A pipeline: named steps forming a DAG."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$", description="The pipeline's name.")
    description: str = Field(default="", description="What the pipeline does.")
    parameters: dict[str, Any] = Field(
        default_factory=dict, description="Parameters with defaults, referenced as ${{ params.NAME }}."
    )
    max_workers: int = Field(default=8, ge=1, le=256, description="Most steps running at once.")
    steps: dict[str, StepSpec] = Field(min_length=1, description="The steps, by name.")

    @field_validator("steps")
    @classmethod
    def _names(cls, steps: dict[str, StepSpec]) -> dict[str, StepSpec]:
        for name in steps:
            if not re.match(_STEP_NAME, name):
                raise ValueError(f"step name '{name}' must be letters, digits, '_' or '-'")
        return steps


def pipeline_json_schema() -> dict[str, Any]:
    """The published JSON Schema of pipeline specs."""
    schema = PipelineSpec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "UDM Pipelines pipeline spec"
    return schema


class PipelineCheckError(ToolError, ValueError):
    """A spec that cannot run; `problems` lists every problem, each naming its step."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class ExpressionError(ToolError, ValueError):
    """An expression that cannot be parsed or evaluated."""


@dataclass(frozen=True)
class FlowInfo:
    """What the compiler knows of a flow a step may run: its parameter schema and output schema."""

    parameters: dict[str, Any]
    output_schema: dict[str, Any] | None = None


@dataclass
class CompiledPipeline:
    """A checked spec: the DAG, a topological order, and each step's upstream steps."""

    spec: PipelineSpec
    graph: nx.DiGraph
    order: list[str]
    upstream: dict[str, list[str]] = field(default_factory=dict)


def load_spec(source: str | Path | Mapping[str, Any]) -> PipelineSpec:
    """A spec from a file (Path), YAML/JSON text (str) or a dict; bad specs raise PipelineCheckError."""
    if isinstance(source, Mapping):
        raw: Any = dict(source)
    else:
        text = source
        if isinstance(source, Path):
            try:
                text = source.read_text(encoding="utf-8")
            except OSError as exc:
                raise PipelineCheckError([f"cannot read {source}: {exc.strerror}"]) from exc
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


# Expressions ----------------------------------------------------------------------------------


def _expressions(value: Any) -> list[str]:
    if isinstance(value, str):
        return _EXPR.findall(value)
    if isinstance(value, dict):
        return [e for v in value.values() for e in _expressions(v)]
    if isinstance(value, list):
        return [e for v in value for e in _expressions(v)]
    return []


def _parse(expr: str) -> ast.expr:
    try:
        return ast.parse(expr, mode="eval").body
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse expression '{expr}': {exc.msg}") from exc


def _path(node: ast.expr) -> list[str | int] | None:
    """`steps.a.output.results[0].link` -> ['steps', 'a', 'output', 'results', 0, 'link']."""
    parts: list[str | int] = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            key = node.slice.value
            if not isinstance(key, str | int):
                return None
            parts.append(key)
            node = node.value
        elif isinstance(node, ast.Name):
            parts.append(node.id)
            return list(reversed(parts))
        else:
            return None


def references(expr: str) -> list[list[str | int]]:
    """Every name path an expression reads (e.g. ['steps', 'fetch', 'output', 'url'])."""
    found: list[list[str | int]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Call):
            # The function name (len, str ...) is not a reference; its arguments are.
            for arg in node.args:
                visit(arg)
            return
        path = _path(node) if isinstance(node, ast.expr) else None
        if path is not None:
            found.append(path)
            return
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(_parse(expr))
    return found


def _join(items: Any, sep: str = "\n") -> str:
    values = items if isinstance(items, list) else [items]
    return sep.join(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in values)


_ALLOWED_CALLS: dict[str, Callable[..., Any]] = {
    "len": len,
    "str": str,
    "int": int,
    "bool": bool,
    "join": _join,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


def _lookup(value: Any, key: str | int) -> Any:
    if isinstance(value, dict):
        if key not in value:
            raise ExpressionError(f"no field '{key}'")
        return value[key]
    if isinstance(value, list):
        if isinstance(key, int):
            if not -len(value) <= key < len(value):
                raise ExpressionError(f"index {key} out of range (length {len(value)})")
            return value[key]
        # A field of a list (a fan-out step's outputs) is that field of every element.
        return [_lookup(v, key) for v in value]
    raise ExpressionError(f"cannot read '{key}' of {type(value).__name__}")


def evaluate(expr: str, scope: Mapping[str, Any]) -> Any:
    """Evaluate a restricted expression over scope: paths, literals, comparisons, and/or/not, len/str/int/bool/join."""

    def ev(node: ast.expr) -> Any:
        path = _path(node)
        if path is not None:
            head = path[0]
            if head not in scope:
                raise ExpressionError(f"unknown name '{head}' (use steps, params, item or index)")
            value = scope[str(head)]
            for key in path[1:]:
                value = _lookup(value, key)
            return value
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.List | ast.Tuple):
            return [ev(e) for e in node.elts]
        if isinstance(node, ast.BoolOp):
            values = [ev(v) for v in node.values]
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not ev(node.operand)
        if isinstance(node, ast.Compare):
            left = ev(node.left)
            for op, comparator in zip(node.ops, node.comparators, strict=True):
                right = ev(comparator)
                if not _COMPARE[type(op)](left, right):
                    return False
                left = right
            return True
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _ALLOWED_CALLS
            and not node.keywords
            and 1 <= len(node.args) <= (2 if node.func.id == "join" else 1)
        ):
            return _ALLOWED_CALLS[node.func.id](*(ev(a) for a in node.args))
        raise ExpressionError(f"unsupported expression: {ast.unparse(node)}")

    try:
        return ev(_parse(expr))
    except ExpressionError as exc:
        raise ExpressionError(f"${{{{ {expr} }}}}: {exc}") from None
    except TypeError as exc:
        raise ExpressionError(f"${{{{ {expr} }}}}: {exc}") from None


def render(value: Any, scope: Mapping[str, Any]) -> Any:
    """Substitute expressions: a string that is one whole expression keeps the value's type."""
    if isinstance(value, str):
        whole = _EXPR.fullmatch(value.strip())
        if whole:
            return evaluate(whole.group(1), scope)

        def text(match: re.Match[str]) -> str:
            result = evaluate(match.group(1), scope)
            return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)

        return _EXPR.sub(text, value)
    if isinstance(value, dict):
        return {k: render(v, scope) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v, scope) for v in value]
    return value


def strip_expression(value: str) -> str:
    """The inner expression of '${{ x }}', or the text itself for a bare condition."""
    match = _EXPR.fullmatch(value.strip())
    return match.group(1) if match else value.strip()


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
        where = f"step '{name}'"
        if bool(step.tool) == bool(step.flow):
            problems.append(f"{where}: give exactly one of 'tool' or 'flow'")
            continue
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

        # References: each adds an edge and must name an existing field.
        item_schema: dict[str, Any] | None = None
        item_root: dict[str, Any] = {}
        sources: list[tuple[str, str]] = []
        # for_each first: it fixes the schema `item` is checked against.
        if isinstance(step.for_each, str):
            each = _EXPR.fullmatch(step.for_each.strip())
            if not each:
                problems.append(f"{where}: for_each must be a ${{{{ }}}} expression or a list")
            else:
                sources.append(("for_each", each.group(1)))
        sources += [(f"input.{k}", e) for k, v in step.input.items() for e in _expressions(v)]
        if step.when:
            sources.append(("when", strip_expression(step.when)))
        for origin, expr in sources:
            try:
                paths = references(expr)
            except ExpressionError as exc:
                problems.append(f"{where}: {origin}: {exc}")
                continue
            for path in paths:
                head = path[0]
                shown = ".".join(str(p) for p in path)
                if head == "params":
                    if len(path) < 2 or path[1] not in spec.parameters:
                        problems.append(f"{where}: {origin}: '{shown}' is not a declared parameter")
                elif head in ("item", "index"):
                    if step.for_each is None:
                        problems.append(f"{where}: {origin}: '{head}' is only defined in a for_each step")
                    elif head == "item" and origin != "for_each" and item_schema and len(path) > 1:
                        _, problem = _field_schema(item_schema, item_root, path[1:])
                        if problem:
                            problems.append(f"{where}: {origin}: item {problem}")
                elif head == "steps":
                    if len(path) < 3 or path[2] != "output":
                        problems.append(f"{where}: {origin}: write steps.NAME.output[.FIELD], not '{shown}'")
                        continue
                    ref = str(path[1])
                    if ref not in spec.steps:
                        problems.append(f"{where}: {origin}: references unknown step '{ref}'")
                        continue
                    if ref == name:
                        problems.append(f"{where}: {origin}: references its own output")
                        continue
                    graph.add_edge(ref, name)
                    target = spec.steps[ref]
                    schema = _output_schema(target, flows, tools)
                    if schema is None:
                        continue
                    if target.for_each is not None:
                        schema = {"type": "array", "items": schema, "$defs": schema.get("$defs", {})}
                    sub, problem = _field_schema(schema, schema, path[3:])
                    if problem:
                        problems.append(f"{where}: {origin}: output of step '{ref}' {problem}")
                    elif origin == "for_each":
                        if sub and sub.get("type") not in (None, "array"):
                            problems.append(
                                f"{where}: for_each: '{shown}' is a {sub.get('type')}, not a list"
                            )
                        elif sub.get("type") == "array":
                            item_schema, item_root = _deref(sub.get("items", {}), schema), schema
                else:
                    problems.append(
                        f"{where}: {origin}: unknown name '{head}' (use steps, params, item or index)"
                    )
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
    dynamic = {k for k, v in step.input.items() if _expressions(v)}
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
