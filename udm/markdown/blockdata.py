"""Parsing of fenced data blocks and front matter, and the IDs their data defines."""

from __future__ import annotations

import datetime
import json
import re
import tomllib
from typing import Any

import yaml

from udm.datalimits import (
    DataLimitError,
    check_alias_expansion,
    check_json,
    check_size,
    check_toml,
    check_yaml,
    current_limits,
)
from udm.errors import DocumentError
from udm.markdown.ids import DEFINING_KEYS
from udm.markdown.simple_yaml import NOT_SIMPLE, parse_simple_yaml

__all__ = ["DATA_LANGS", "collect_ids", "front_ids", "parse_data", "parse_front_matter"]

_SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
DATA_LANGS = frozenset({"yaml", "yml", "json", "verify"})
# Below this many bits an integer has fewer than 4,000 decimal digits, which Python always turns into
# text; past Python's digit limit (4,300 by default) a row, a message or a route holding it would raise.
_PRINTABLE_BITS = 13_000
_TOO_LONG = "a number with more digits than Python prints (4,300 by default)"


def _value_error(exc: ValueError | OverflowError) -> str:
    """What a loader's ValueError says in a data block's error (a date past the calendar, a number
    past 4,300 digits), on one line."""
    text = " ".join(str(exc).split())
    if "integer string conversion" in text:
        return _TOO_LONG
    return text[:200] or type(exc).__name__


def _unprintable(value: Any) -> bool:
    """Whether `value` is an integer too long for Python to turn into text (its digit limit)."""
    if not isinstance(value, int) or value.bit_length() <= _PRINTABLE_BITS:
        return False
    try:
        str(value)
    except ValueError:
        return True
    return False


def _made(construct: Any) -> Any:
    """A constructor of values YAML allows but Python may not make (`2001-02-30`, 5,000 digits) that
    fails as a YAML error at the value's own line, and refuses an integer too long to print."""

    def wrapped(loader: Any, node: Any) -> Any:
        try:
            value = construct(loader, node)
        except (ValueError, OverflowError) as exc:
            raise yaml.constructor.ConstructorError(None, None, _value_error(exc), node.start_mark) from None
        if _unprintable(value):
            raise yaml.constructor.ConstructorError(None, None, _TOO_LONG, node.start_mark)
        return value

    return wrapped


class _YamlLoader(_SafeLoader):
    """The safe loader, with integers and timestamps made as `_made` makes them."""


_YamlLoader.add_constructor(
    "tag:yaml.org,2002:int", _made(yaml.constructor.SafeConstructor.construct_yaml_int)
)
_YamlLoader.add_constructor(
    "tag:yaml.org,2002:timestamp", _made(yaml.constructor.SafeConstructor.construct_yaml_timestamp)
)


def collect_ids(data: Any, out: list[str]) -> None:
    """Append the IDs `data` defines: stripped, space-free string values of the defining keys, at any depth."""
    if isinstance(data, dict):
        for key in DEFINING_KEYS:
            value = data.get(key)
            if isinstance(value, str) and value.strip() and " " not in value.strip():
                out.append(value.strip())
        for value in data.values():
            if isinstance(value, (dict, list)):
                collect_ids(value, out)
    elif isinstance(data, list):
        for item in data:
            collect_ids(item, out)


def parse_data(
    lang: str, text: str, path: str, first_line: int, what: str | None = None
) -> tuple[Any, str | None]:
    """Parse a data block; errors are 'path:line: message' with the 1-based file line."""
    where = path or "<string>"
    # Parsers report end-of-input problems one line past the text; keep the line inside the block.
    last = first_line + max(1, text.count("\n"))
    if lang == "json":
        try:
            check_json(text, what=what or "JSON block")
            return json.loads(text), None
        except DataLimitError as exc:
            return None, f"{where}:{min(first_line + exc.line, last)}: {exc.reason}"
        except json.JSONDecodeError as exc:
            return None, f"{where}:{min(first_line + exc.lineno, last)}: invalid JSON: {exc.msg}"
        except (ValueError, OverflowError) as exc:
            return None, f"{where}:{first_line + 1}: invalid JSON: {_value_error(exc)}"
    try:
        check_size(text, what=what or "YAML block")
        simple = parse_simple_yaml(text)
        if simple is not NOT_SIMPLE:
            return simple, None
        check_yaml(text, what=what or "YAML block")
        data = yaml.load(text, Loader=_YamlLoader)
        if "*" in text:
            # Aliases load as shared values; ID collection and the index's rows would walk them expanded.
            check_alias_expansion(data, len(text))
        return data, None
    except (ValueError, OverflowError) as exc:
        # The flat-YAML fast path's number past Python's digit limit (the loader reports its line).
        return None, f"{where}:{first_line + 1}: invalid YAML: {_value_error(exc)}"
    except DataLimitError as exc:
        return None, f"{where}:{min(first_line + exc.line, last)}: {exc.reason}"
    except DocumentError as exc:
        return None, f"{where}:{first_line + 1}: {exc}"
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = min(first_line + (mark.line + 1 if mark is not None else 1), last)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return None, f"{where}:{line}: invalid YAML: {problem}"


def parse_front_matter(
    lines: list[str], path: str
) -> tuple[dict[str, Any] | None, tuple[int, int] | None, str | None]:
    """(data, line range, error) of a leading `---` (YAML) or `+++` (TOML: Hugo, Zola) front matter
    block; all None when there is none."""
    opening = toml_opening(lines)
    if opening is not None:
        for j in range(opening + 1, len(lines)):
            if lines[j].rstrip() == "+++":
                data, error = _toml_front("".join(lines[opening + 1 : j]), path, opening + 2)
                return (data or None) if error is None else None, (0, j + 1), error
        return None, None, None
    if not lines or lines[0].rstrip("\r\n") != "---":
        return None, None, None
    for j in range(1, len(lines)):
        if lines[j].rstrip("\r\n") in ("---", "..."):
            body = "".join(lines[1:j])
            data, error = parse_data("yaml", body, path, 1, "front matter")
            if error is None and data is not None and not isinstance(data, dict):
                # `---` then prose then `---` is two thematic breaks around Markdown, not front matter.
                return None, None, None
            return (data or None) if error is None else None, (0, j + 1), error
    return None, None, None


_TOML_LINE = re.compile(r"\(at line (\d+), column \d+\)")


def toml_opening(lines: list[str]) -> int | None:
    """The line of a TOML front matter's opening `+++` (after blank lines only, as Zola and Hugo
    read it), or None."""
    for i, line in enumerate(lines[:1000]):
        if line.strip() == "+++":
            return i
        if line.strip():
            return None
    return None


def _toml_front(text: str, path: str, first: int) -> tuple[dict[str, Any] | None, str | None]:
    """A TOML front matter block's table, or the error at its line (`first`: the block's first line)."""
    where = path or "<string>"
    try:
        check_toml(text, what="front matter")
        data = tomllib.loads(text)
        _check_toml_data(data)
    except DataLimitError as exc:
        return None, f"{where}:{first - 1 + exc.line}: {exc.reason}"
    except tomllib.TOMLDecodeError as exc:
        at = _TOML_LINE.search(str(exc))
        problem = _TOML_LINE.sub("", str(exc)).strip()[:200]
        return None, f"{where}:{first - 1 + int(at.group(1)) if at else first}: invalid TOML: {problem}"
    except (ValueError, RecursionError) as exc:
        # A number past Python's digit limit; arrays nested past the interpreter's recursion.
        reason = _value_error(exc) if isinstance(exc, ValueError) else "nested too deeply"
        return None, f"{where}:{first}: invalid TOML: {reason}"
    return _toml_plain(data), None


def _check_toml_data(data: Any) -> None:
    """DataLimitError when TOML data nests deeper than the data limit; ValueError for an int Python
    cannot print (walked without recursion)."""
    limit = current_limits().max_depth
    stack = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            raise DataLimitError(f"front matter is nested too deeply: more than {limit} levels", 1)
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        for child in children:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
            elif _unprintable(child):
                # TOML's `0x` integers are made without Python's digit limit: a route read from one
                # would raise where it is printed.
                raise ValueError(_TOO_LONG)


def _toml_plain(data: Any) -> Any:
    """TOML values as YAML's loader would give them: a time of day (no date) as its text."""
    if isinstance(data, dict):
        return {k: _toml_plain(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_toml_plain(v) for v in data]
    return data.isoformat() if isinstance(data, datetime.time) else data


# ---------------------------------------------------------------------------------------------
# Parsing


def front_ids(front: dict[str, Any]) -> list[str]:
    """The IDs front matter defines (top-level defining keys only)."""
    out: list[str] = []
    for key in DEFINING_KEYS:
        value = front.get(key)
        if isinstance(value, str) and value.strip() and " " not in value.strip():
            out.append(value.strip())
    return out
