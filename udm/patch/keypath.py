"""Key paths over parsed YAML/JSON data (`a.b[0]["x.y"]`): parse, walk, and set, delete or append in place."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Literal

from udm.errors import PatchError, TargetNotFoundError

__all__ = [
    "TOO_DEEP",
    "Action",
    "Format",
    "KeyPath",
    "SerializationError",
    "apply_edit",
    "format_key_path",
    "parse_key_path",
    "walk",
]

Format = Literal["yaml", "json", "json5"]
Action = Literal["set", "delete", "append"]
KeyPath = list[str | int]

_MISSING = object()


class SerializationError(PatchError):
    """A value that cannot be written in the text's format."""


_TOKEN = re.compile(
    r"""\[\s*(?:(?P<int>-?\d+)|"(?P<dq>(?:[^"\\]|\\.)*)"|'(?P<sq>(?:[^'\\]|\\.)*)')\s*\]|(?P<plain>[^.\[\]]+)"""
)


def parse_key_path(path: str) -> KeyPath:
    """`a.b[0]["x.y"]` -> ['a', 'b', 0, 'x.y']; an empty path is the document itself."""
    tokens: KeyPath = []
    pos = 0
    text = path.strip()
    while pos < len(text):
        if text[pos] == "." and tokens and pos + 1 < len(text):
            pos += 1
        m = _TOKEN.match(text, pos)
        if m is None:
            raise PatchError(
                f"invalid key path {path!r}: unexpected {text[pos : pos + 10]!r} at column {pos + 1}"
            )
        if m.group("int") is not None:
            tokens.append(int(m.group("int")))
        elif m.group("plain") is not None:
            tokens.append(m.group("plain").strip())
        else:
            raw = m.group("dq") if m.group("dq") is not None else m.group("sq")
            tokens.append(re.sub(r"\\(.)", r"\1", raw))
        pos = m.end()
    return tokens


def format_key_path(tokens: KeyPath) -> str:
    """The readable form of a parsed key path (for messages)."""
    out = ""
    for tok in tokens:
        if isinstance(tok, int):
            out += f"[{tok}]"
        elif re.fullmatch(r"[^.\[\]'\"]+", tok):
            out += ("." if out else "") + tok
        else:
            out += f"[{json.dumps(tok)}]"
    return out or "(document)"


def _describe_keys(container: Any) -> str:
    if isinstance(container, dict):
        keys = [str(k) for k in container]
        shown = ", ".join(keys[:12]) + (" ..." if len(keys) > 12 else "")
        return f"keys: {shown}" if keys else "an empty mapping"
    if isinstance(container, list):
        return f"a list of {len(container)} items"
    return f"a {type(container).__name__} value"


def _step(container: Any, tok: str | int, tokens: KeyPath, depth: int) -> Any:
    where = format_key_path(tokens[:depth])
    if isinstance(container, dict):
        key = _match_key(container, tok)
        if key is _MISSING:
            raise TargetNotFoundError(
                f"key path {format_key_path(tokens)!r} not found: no key {tok!r} under {where} "
                f"({_describe_keys(container)})"
            )
        return container[key]
    if isinstance(container, list):
        if not isinstance(tok, int):
            if isinstance(tok, str) and re.fullmatch(r"-?\d+", tok):
                tok = int(tok)
            else:
                raise TargetNotFoundError(
                    f"key path {format_key_path(tokens)!r} not found: {where} is {_describe_keys(container)}, "
                    f"not a mapping with key {tok!r}"
                )
        if not -len(container) <= tok < len(container):
            raise TargetNotFoundError(
                f"key path {format_key_path(tokens)!r} not found: index {tok} outside {where} "
                f"({_describe_keys(container)})"
            )
        return container[tok]
    raise TargetNotFoundError(
        f"key path {format_key_path(tokens)!r} not found: {where} is {_describe_keys(container)}"
    )


def _match_key(mapping: dict[Any, Any], tok: str | int) -> Any:
    if tok in mapping:
        return tok
    # YAML keys may be ints or bools while a path spells them as text.
    for key in mapping:
        if str(key) == str(tok):
            return key
    return _MISSING


def walk(data: Any, tokens: KeyPath, upto: int | None = None) -> Any:
    """The value at the key path (or at its first `upto` steps); TargetNotFoundError naming what is there."""
    node = data
    for depth, tok in enumerate(tokens[: len(tokens) if upto is None else upto]):
        node = _step(node, tok, tokens, depth)
    return node


def apply_edit(
    data: Any, tokens: KeyPath, action: Action, value: Any, wrap: Callable[[Any, Any], Any]
) -> Any:
    """Edit `data` in place (returns the new root when the root itself is replaced)."""
    if action == "append":
        target = walk(data, tokens)
        if not isinstance(target, list):
            raise PatchError(
                f"cannot append at {format_key_path(tokens)!r}: it is {_describe_keys(target)}, not a list"
            )
        target.append(wrap(None, value))
        return data
    if not tokens:
        if action == "delete":
            raise PatchError("cannot delete the whole document with a key edit; use delete_file")
        return wrap(data, value)
    parent = walk(data, tokens, len(tokens) - 1)
    last = tokens[-1]
    if isinstance(parent, dict):
        key = _match_key(parent, last)
        if action == "delete":
            if key is _MISSING:
                _step(parent, last, tokens, len(tokens) - 1)
            del parent[key]
        elif key is _MISSING:
            parent[last] = wrap(None, value)
        else:
            parent[key] = wrap(parent[key], value)
        return data
    if isinstance(parent, list):
        _step(parent, last, tokens, len(tokens) - 1)
        index = int(last)
        if action == "delete":
            del parent[index]
        else:
            parent[index] = wrap(parent[index], value)
        return data
    raise TargetNotFoundError(
        f"key path {format_key_path(tokens)!r} not found: {format_key_path(tokens[:-1])} is "
        f"{_describe_keys(parent)}"
    )


# The parsers recurse once (or more) per nesting level, so a text like "[" * 100000 exhausts the stack.
TOO_DEEP = "{what} is nested too deeply to read (more levels than the parser's recursion limit)"
