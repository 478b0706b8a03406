"""JSON edits by source span: only the characters of the edited value (or member) change, layout stays."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

from udm.errors import PatchError, TargetNotFoundError

__all__ = ["JsonNode", "edit_json_spans", "parse_spans"]

_WS = re.compile(r"[ \t\n\r]*")
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")


@dataclass
class JsonNode:
    """A value's span [start, end) in the text, with its members or items."""

    kind: str  # "object" | "array" | "scalar"
    start: int
    end: int
    keys: list[tuple[str, int]] = field(default_factory=list)  # object: (key, key start)
    children: list[JsonNode] = field(default_factory=list)


def _ws(text: str, i: int) -> int:
    m = _WS.match(text, i)
    return m.end() if m else i


def _value(text: str, i: int) -> JsonNode:
    i = _ws(text, i)
    c = text[i]
    if c == "{":
        node = JsonNode("object", i, i)
        i = _ws(text, i + 1)
        if text[i] == "}":
            node.end = i + 1
            return node
        while True:
            i = _ws(text, i)
            key, after = scanstring(text, i + 1)
            node.keys.append((key, i))
            i = _ws(text, after)
            child = _value(text, i + 1)  # past the ':'
            node.children.append(child)
            i = _ws(text, child.end)
            if text[i] == "}":
                node.end = i + 1
                return node
            i += 1  # the ','
    if c == "[":
        node = JsonNode("array", i, i)
        i = _ws(text, i + 1)
        if text[i] == "]":
            node.end = i + 1
            return node
        while True:
            child = _value(text, i)
            node.children.append(child)
            i = _ws(text, child.end)
            if text[i] == "]":
                node.end = i + 1
                return node
            i += 1
    if c == '"':
        _, end = scanstring(text, i + 1)
        return JsonNode("scalar", i, end)
    m = _SCALAR.match(text, i)
    if not m:
        raise PatchError(f"unexpected {text[i : i + 10]!r} at offset {i}")
    return JsonNode("scalar", i, m.end())


def parse_spans(text: str) -> JsonNode:
    """The span tree of a valid JSON text (check validity with json.loads first)."""
    return _value(text, 0)


def _line_indent(text: str, pos: int) -> str:
    line_start = text.rfind("\n", 0, pos) + 1
    line = text[line_start:pos]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _render(value: Any, indent: int | str | None, separators: tuple[str, str], base: str) -> str:
    out = json.dumps(value, indent=indent, separators=separators, ensure_ascii=False)
    return out.replace("\n", "\n" + base) if indent is not None else out


def _index(node: JsonNode, tok: str | int, path: str) -> int:
    if node.kind == "object":
        for n, (key, _) in enumerate(node.keys):
            if key == str(tok):
                return n
        raise TargetNotFoundError(f"key path {path!r} not found: no key {tok!r}")
    if node.kind == "array":
        k = int(tok) if isinstance(tok, int) or re.fullmatch(r"-?\d+", str(tok)) else None
        if k is None or not -len(node.children) <= k < len(node.children):
            raise TargetNotFoundError(
                f"key path {path!r} not found: index {tok} outside a list of {len(node.children)}"
            )
        return k % len(node.children)
    raise TargetNotFoundError(f"key path {path!r} not found: {tok!r} is under a scalar")


def _member_start(node: JsonNode, n: int) -> int:
    return node.keys[n][1] if node.kind == "object" else node.children[n].start


def _inline_separators(inner: str, fallback: tuple[str, str] = (", ", ": ")) -> tuple[str, str]:
    """The separators a one-line container uses; `fallback` (the document's) where it shows none."""
    comma = ("," if ", " not in inner else ", ") if "," in inner else fallback[0]
    if re.search(r'"\s*:\s', inner):
        colon = ": "
    elif re.search(r'"\s*:\S', inner):
        colon = ":"
    else:
        colon = fallback[1]
    return comma, colon


def _insert_last(
    text: str, node: JsonNode, value: Any, key: str | None, sep: tuple[str, str], indent: int | str | None
) -> str:
    """Add a member (`key` set) or an item at the end of an object or array, in its own layout."""
    inner = text[node.start : node.end]
    if node.children and "\n" in inner:
        member_indent = _line_indent(text, _member_start(node, len(node.children) - 1))
        name = f"{json.dumps(key, ensure_ascii=False)}{sep[1]}" if key is not None else ""
        piece = _render(value, indent, sep, member_indent)
        last = node.children[-1]
        return text[: last.end] + ",\n" + member_indent + name + piece + text[last.end :]
    # A one-line (or empty) container stays on one line.
    comma, colon = _inline_separators(inner, sep if indent is None else (", ", ": "))
    name = f"{json.dumps(key, ensure_ascii=False)}{colon}" if key is not None else ""
    piece = json.dumps(value, separators=(comma, colon), ensure_ascii=False)
    if not node.children:
        return text[: node.start + 1] + name + piece + text[node.end - 1 :]
    last = node.children[-1]
    return text[: last.end] + comma + name + piece + text[last.end :]


def edit_json_spans(
    text: str,
    tokens: list[str | int],
    action: str,
    value: Any,
    indent: int | str | None,
    separators: tuple[str, str],
) -> str:
    """The JSON text after one edit that rewrites only the edited span; raises TargetNotFoundError/PatchError."""
    path = ".".join(str(t) for t in tokens) or "(document)"
    root = parse_spans(text)
    node = root
    for tok in tokens[:-1]:
        node = node.children[_index(node, tok, path)]
    if not tokens:
        if action == "append":
            if root.kind != "array":
                raise PatchError("cannot append: the document is not a list")
            return _insert_last(text, root, value, None, separators, indent)
        if action == "delete":
            raise PatchError("cannot delete the whole document with a key edit; use delete_file")
        return text[: root.start] + _render(value, indent, separators, "") + text[root.end :]
    last = tokens[-1]
    if action == "append":
        target = node.children[_index(node, last, path)]
        if target.kind != "array":
            raise PatchError(f"cannot append at {path!r}: it is not a list")
        return _insert_last(text, target, value, None, separators, indent)
    try:
        n = _index(node, last, path)
    except TargetNotFoundError:
        if action == "set" and node.kind == "object":
            return _insert_last(text, node, value, str(last), separators, indent)
        raise
    child = node.children[n]
    if action == "set":
        if "\n" not in text[node.start : node.end]:
            # Inside a one-line container the new value stays on that line.
            inline = json.dumps(
                value, separators=_inline_separators(text[node.start : node.end]), ensure_ascii=False
            )
            return text[: child.start] + inline + text[child.end :]
        base = _line_indent(text, _member_start(node, n))
        return text[: child.start] + _render(value, indent, separators, base) + text[child.end :]
    # delete: take the member with the comma on one side, keeping the layout of the rest.
    start = _member_start(node, n)
    if n + 1 < len(node.children):
        return text[:start] + text[_member_start(node, n + 1) :]
    if n > 0:
        return text[: node.children[n - 1].end] + text[child.end :]
    return text[: node.start + 1] + text[node.end - 1 :]
