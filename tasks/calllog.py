"""The tool-call log: one JSON line per call in `<logs>/tool-calls.jsonl`, written by `call_tool` and the CLI's fast path.

Standard library only: `flows/entry.py` answers `udm query id` without importing pydantic and logs
through these same functions, so a fast-path line and a full-path line cannot drift apart.
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import UTC, datetime

TYPE_CHECKING = False

if TYPE_CHECKING:  # runtime imports stay minimal: the CLI's fast paths import this module
    from typing import Any

__all__ = ["CALL_LOG_NAME", "call_record", "input_digest", "write_call_record"]

CALL_LOG_NAME = "tool-calls.jsonl"


class _Close:
    """A closing bracket on the walk's stack (never a value of the data)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _walk_text(raw: Any) -> str:
    """A canonical rendering walked without recursion, for data nested past the interpreter's limit."""
    parts: list[str] = []
    stack: list[Any] = [raw]
    while stack:
        item = stack.pop()
        if isinstance(item, _Close):
            parts.append(item.text)
        elif isinstance(item, dict):
            parts.append("{")
            stack.append(_Close("}"))
            for key in sorted(item, key=str, reverse=True):
                stack += [item[key], _Close(json.dumps(str(key), ensure_ascii=False) + ":")]
        elif isinstance(item, list | tuple):
            parts.append("[")
            stack += [_Close("]"), *reversed(item)]
        else:
            parts.append(json.dumps(item, default=str, ensure_ascii=False) + ",")
    return "".join(parts)


def input_digest(raw: Any) -> str:
    """A stable digest of a call's input: logged instead of the input itself."""
    try:
        text = json.dumps(raw, sort_keys=True, default=str, ensure_ascii=False)
    except RecursionError:
        # The input's depth is the caller's to choose; the log line must not fail the call.
        text = _walk_text(raw)
    except (TypeError, ValueError):
        text = repr(raw)
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


# A caller chooses its input's field names: an invalid input's names are logged too, so the line
# holds at most this many, each cut to this length (the digest still covers the whole input).
_MAX_FIELDS = 64
_MAX_FIELD_CHARS = 100


def _field_names(raw: dict[Any, Any]) -> list[str]:
    """The input's field names for the log: sorted, as text, bounded in number and length."""
    names = sorted(str(name) for name in raw)
    shown = [n if len(n) <= _MAX_FIELD_CHARS else n[:_MAX_FIELD_CHARS] + "…" for n in names[:_MAX_FIELDS]]
    if len(names) > _MAX_FIELDS:
        shown.append(f"… ({len(names) - _MAX_FIELDS} more)")
    return shown


def call_record(tool: str, raw: Any) -> dict[str, Any]:
    """The start of a call's log line: when, which tool, the input's digest and field names (never values)."""
    return {
        "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "tool": tool,
        "input_digest": input_digest(raw),
        "input_fields": _field_names(raw) if isinstance(raw, dict) else None,
    }


def write_call_record(logs_dir: str | os.PathLike[str], record: dict[str, Any]) -> None:
    """Append one record to the call log; losing a log line never fails the call it describes."""
    try:
        os.makedirs(logs_dir, exist_ok=True)
        # ASCII only: a field name holding U+2028, U+0085 or another separator some readers end a
        # line at (str.splitlines does) stays escaped inside its string, so every record is one line.
        line = json.dumps(record, ensure_ascii=True) + "\n"
        # One write() of one line on an O_APPEND file: concurrent writers never interleave lines.
        with open(os.path.join(logs_dir, CALL_LOG_NAME), "a", encoding="utf-8") as fh:
            fh.write(line)
    except OSError:
        pass
