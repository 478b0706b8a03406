"""`${{ }}` expressions of pipeline specs: the paths an expression reads (for the compiler's checks),
and a restricted evaluator (paths, literals, comparisons, and/or/not, len/str/int/bool/join) that
renders a step's input from parameters, earlier steps' outputs and the current item."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from udm.errors import ToolError

__all__ = [
    "EXPRESSION",
    "ExpressionError",
    "evaluate",
    "expressions",
    "references",
    "render",
    "strip_expression",
]

# One `${{ ... }}` in a string; group 1 is the expression inside.
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


class ExpressionError(ToolError, ValueError):
    """An expression that cannot be parsed or evaluated."""


def expressions(value: Any) -> list[str]:
    """Every `${{ }}` expression in a value (strings, and those inside dicts and lists)."""
    if isinstance(value, str):
        return EXPRESSION.findall(value)
    if isinstance(value, dict):
        return [e for v in value.values() for e in expressions(v)]
    if isinstance(value, list):
        return [e for v in value for e in expressions(v)]
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
        whole = EXPRESSION.fullmatch(value.strip())
        if whole:
            return evaluate(whole.group(1), scope)

        def text(match: re.Match[str]) -> str:
            result = evaluate(match.group(1), scope)
            return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)

        return EXPRESSION.sub(text, value)
    if isinstance(value, dict):
        return {k: render(v, scope) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v, scope) for v in value]
    return value


def strip_expression(value: str) -> str:
    """The inner expression of '${{ x }}', or the text itself for a bare condition."""
    match = EXPRESSION.fullmatch(value.strip())
    return match.group(1) if match else value.strip()
