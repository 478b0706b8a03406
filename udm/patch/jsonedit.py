"""Key edits of JSON and JSON5 texts in their own layout: a span splice for JSON, a minimal merge otherwise."""

from __future__ import annotations

import contextlib
import json
import re
import sys
import threading
from collections.abc import Iterator
from typing import Any

from udm.datalimits import check_json, current_limits
from udm.errors import DocumentError, UdmError
from udm.patch.keypath import TOO_DEEP, Action, Format, KeyPath, SerializationError, apply_edit
from udm.patch.splice import merge_minimal

__all__ = ["detect_json_style", "edit_json", "json_load"]


def detect_json_style(text: str) -> tuple[int | str | None, tuple[str, str]]:
    """(indent, separators) that reproduce this JSON text's layout as closely as `json.dumps` can."""
    indent: int | str | None = None
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            lead = line[: len(line) - len(stripped)]
            indent = "\t" if lead.startswith("\t") else len(lead)
            break
    colon = ": " if re.search(r'"\s*:\s', text) or indent is not None else ":"
    if re.search(r'"\s*:\S', text) and not re.search(r'"\s*:\s', text):
        colon = ":"
    comma = "," if indent is not None or not re.search(r",\s", text) else ", "
    return indent, (comma, colon)


# json5's parser spends about 23 Python frames per nesting level, so Python's default limit stops
# it near 40 levels; within the depth limit it gets the room it needs (Python-to-Python calls do not
# grow the C stack).
_JSON5_FRAMES_PER_LEVEL = 30
_ROOM_LOCK = threading.Lock()


def _stack_depth() -> int:
    frame: Any = sys._getframe()
    depth = 0
    while frame is not None:
        depth += 1
        frame = frame.f_back
    return depth


@contextlib.contextmanager
def _recursion_room(frames: int) -> Iterator[None]:
    """Run with at least `frames` more Python frames allowed than are in use now (one caller at a time)."""
    with _ROOM_LOCK:
        before = sys.getrecursionlimit()
        sys.setrecursionlimit(max(before, _stack_depth() + frames + 100))
        try:
            yield
        finally:
            sys.setrecursionlimit(before)


def json_load(text: str, fmt: Format) -> Any:
    """The JSON or JSON5 text as data; DocumentError when it does not parse or is nested too deeply."""
    check_json(text, what=fmt.upper(), json5=fmt == "json5")
    if fmt == "json5":
        import json5

        try:
            with _recursion_room(_JSON5_FRAMES_PER_LEVEL * current_limits().max_depth):
                return json5.loads(text, object_pairs_hook=dict)
        except ValueError as exc:
            raise DocumentError(f"JSON5 does not parse: {exc}") from exc
        except RecursionError as exc:
            raise DocumentError(TOO_DEEP.format(what="JSON5")) from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DocumentError(f"JSON does not parse: line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
    except RecursionError as exc:
        raise DocumentError(TOO_DEEP.format(what="JSON")) from exc


# String literals on one line, to tell which quote a JSON5 text writes its strings with.
_SINGLE_QUOTED = re.compile(r"'(?:[^'\\\n]|\\.)*'")
_DOUBLE_QUOTED = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def _json_dump(
    data: Any, fmt: Format, indent: int | str | None, separators: tuple[str, str], original: str
) -> str:
    if fmt == "json5":
        import json5

        # Follow the text's own habits: quoted or bare keys, trailing commas or not, and the quote it
        # writes strings with (requoting every string would make the merge rewrite the lines between,
        # comments among them).
        quote_keys = bool(re.search(r"""^\s*["'][^"']+["']\s*:""", original, re.M))
        trailing = bool(re.search(r",\s*(?://[^\n]*\s*)*[}\]]", original))
        single = len(_SINGLE_QUOTED.findall(original)) > len(_DOUBLE_QUOTED.findall(original))
        return str(
            json5.dumps(
                data,
                indent=indent,
                separators=separators,
                ensure_ascii=False,
                quote_keys=quote_keys,
                trailing_commas=trailing,
                quote_style=json5.QuoteStyle.PREFER_SINGLE if single else json5.QuoteStyle.ALWAYS_DOUBLE,
            )
        )
    return json.dumps(data, indent=indent, separators=separators, ensure_ascii=False)


def edit_json(text: str, tokens: KeyPath, action: Action, value: Any, fmt: Format) -> str:
    """The JSON/JSON5 text after one key edit, in its own layout, with only the edited lines changed."""
    data = json_load(text, fmt)
    indent, separators = detect_json_style(text)
    try:
        json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise SerializationError(f"value {value!r} cannot be written as JSON: {exc}") from exc
    trailing = text[len(text.rstrip()) :]
    baseline = _json_dump(data, fmt, indent, separators, text) + trailing
    data = apply_edit(data, tokens, action, value, lambda _old, new: new)
    if fmt == "json":
        # Rewrite only the edited value's characters; the merge below is the fallback.
        from udm.patch.jsonspan import edit_json_spans

        try:
            spliced = edit_json_spans(text, tokens, action, value, indent, separators)
            if json.loads(spliced) == data:
                return spliced
        except (UdmError, ValueError, IndexError):
            pass
    modified = _json_dump(data, fmt, indent, separators, text) + trailing
    return merge_minimal(text, baseline, modified)
