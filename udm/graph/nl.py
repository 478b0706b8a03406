"""The natural-language translator: a fixed, documented set of question forms mapped to structured queries.

Deterministic (regular expressions, no language model). Each form becomes either a Cypher query (run on
the Cypher engine, shown verbatim) or a graph operation (shown as `operation(arguments)`). Anything else
is refused with the list of supported forms.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from udm.errors import GraphQueryError

__all__ = ["NL_FORMS", "Translation", "cypher_literal", "supported_forms", "translate"]


@dataclass(frozen=True)
class Translation:
    """A question turned into a structured query: Cypher text, or a graph operation with arguments."""

    language: str  # "cypher" | "operation"
    text: str  # the structured query as shown to the user
    operation: str | None = None
    args: dict[str, Any] = field(default_factory=dict)


def cypher_literal(value: str) -> str:
    """A Cypher string literal (single-quoted, escaped)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _op(name: str, **args: Any) -> Translation:
    shown = ", ".join(f"{k}={v!r}" for k, v in args.items())
    return Translation("operation", f"{name}({shown})", name, args)


_ID = r"[`'\"]?(?P<{name}>[A-Za-z0-9][\w.\-/#]*?)[`'\"]?"


def _id(name: str) -> str:
    return _ID.format(name=name)


def _sections_mentioning(m: re.Match[str]) -> Translation:
    x = cypher_literal(m["x"])
    return Translation(
        "cypher",
        f"MATCH (s:section)-[:references]->(x {{id: {x}}}) "
        "RETURN s.id AS section, s.title AS title, s.file AS file, s.line AS line ORDER BY file, line",
    )


def _tasks_of(m: re.Match[str]) -> Translation:
    where = []
    if m.groupdict().get("mode"):
        where.append(f"t.mode = {cypher_literal(m['mode'])}")
    if m.groupdict().get("status"):
        where.append(f"lower(t.status) = {cypher_literal(m['status'].lower())}")
    return Translation(
        "cypher",
        "MATCH (t:task) WHERE "
        + " AND ".join(where)
        + " RETURN t.id AS id, t.title AS title, t.status AS status, t.mode AS mode ORDER BY id",
    )


# (example shown to users, pattern, builder); tried in order, the whole question must match.
NL_FORMS: list[tuple[str, str, Callable[[re.Match[str]], Translation]]] = [
    (
        "what depends on X",
        rf"(?:what|which \w+|who) (?:depends|depend) on {_id('x')}",
        lambda m: _op("dependents", id=m["x"]),
    ),
    (
        "what is affected if X changes  (also: impact of X, dependents of X)",
        rf"(?:what is affected if {_id('x')} changes|(?:the )?impact of {_id('x2')}|dependents of {_id('x3')})",
        lambda m: _op("dependents", id=m["x"] or m["x2"] or m["x3"]),
    ),
    (
        "what does X depend on  (also: dependencies of X)",
        rf"(?:what does {_id('x')} depend on|(?:the )?(?:transitive )?dependencies of {_id('x2')})",
        lambda m: _op("dependencies", id=m["x"] or m["x2"]),
    ),
    (
        "which sections mention X  (also: where is X mentioned)",
        rf"(?:which|what) sections (?:mention|reference|refer to) {_id('x')}",
        _sections_mentioning,
    ),
    (
        "where is X mentioned",
        rf"where is {_id('x')} (?:mentioned|referenced)",
        _sections_mentioning,
    ),
    (
        "tasks of mode M with status S  (either part may be left out)",
        rf"(?:list |show )?(?:the |all )?tasks (?:of|for|owned by) (?:mode )?{_id('mode')}"
        r"(?: (?:with|in|having) status [`'\"]?(?P<status>[\w-]+)[`'\"]?)?",
        _tasks_of,
    ),
    (
        "tasks with status S",
        r"(?:list |show )?(?:the |all )?tasks (?:with|in|having) status [`'\"]?(?P<status>[\w-]+)[`'\"]?",
        _tasks_of,
    ),
    (
        "path from X to Y  (also: shortest path between X and Y)",
        rf"(?:the )?(?:shortest )?path (?:from {_id('x')} to {_id('y')}|between {_id('x2')} and {_id('y2')})",
        lambda m: _op("path", source=m["x"] or m["x2"], target=m["y"] or m["y2"]),
    ),
    (
        "topological order of tasks  (also: task order)",
        r"(?:the )?(?:topological |build |execution )?order of (?:the |all )?tasks|task order",
        lambda m: _op("order"),
    ),
    (
        "dependency cycles  (also: cycles)",
        r"(?:are there |find |show |list )?(?:any )?(?:dependency )?cycles",
        lambda m: _op("cycles"),
    ),
    (
        "orphans  (IDs defined but never referenced)",
        r"(?:show |list |find )?(?:the |all )?(?:orphans|orphaned ids|unreferenced ids)",
        lambda m: _op("orphans"),
    ),
]

_COMPILED = [
    (example, re.compile(rf"^\s*{pattern}\s*[?.!]*\s*$", re.IGNORECASE), build)
    for example, pattern, build in NL_FORMS
]


def supported_forms() -> list[str]:
    """The question forms the translator understands, as shown in error messages."""
    return [example for example, _, _ in NL_FORMS]


def translate(question: str) -> Translation:
    """The structured query for a supported question; GraphQueryError listing the forms otherwise."""
    for _, pattern, build in _COMPILED:
        match = pattern.match(question)
        if match:
            return build(match)
    raise GraphQueryError(
        "cannot translate this question; supported forms (X, Y are IDs such as TASK-P0-M0.1-T002, M a mode "
        "ID, S a status): " + "; ".join(f'"{f}"' for f in supported_forms())
    )
