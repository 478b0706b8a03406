"""Key-path edits of YAML (ruamel round trip) and JSON/JSON5 texts that change only the edited lines.

The entry points; key paths are in `keypath`, the YAML edits in `yamledit`, the JSON ones in `jsonedit`.
"""

from __future__ import annotations

import base64
import math
from typing import Any

from udm.errors import DocumentError, PatchError
from udm.patch.jsonedit import detect_json_style, edit_json, json_load
from udm.patch.keypath import (
    TOO_DEEP,
    Action,
    Format,
    KeyPath,
    SerializationError,
    format_key_path,
    parse_key_path,
    walk,
)
from udm.patch.yamledit import detect_yaml_indent, edit_yaml, yaml_for, yaml_load

__all__ = [
    "Action",
    "Format",
    "KeyPath",
    "SerializationError",
    "detect_json_style",
    "detect_yaml_indent",
    "edit_text",
    "format_key_path",
    "get_value",
    "parse_key_path",
]


def get_value(text: str, fmt: Format, path: str | KeyPath) -> Any:
    """The value at a key path, as JSON-safe data (see `_plain` for infinities, NaN and binary)."""
    tokens = parse_key_path(path) if isinstance(path, str) else path
    data = yaml_load(text, yaml_for(text)) if fmt == "yaml" else json_load(text, fmt)
    try:
        return _plain(walk(data, tokens), fmt)
    except RecursionError as exc:
        raise DocumentError(TOO_DEEP.format(what=fmt.upper())) from exc


# How infinities and NaN read back: JSON has no such numbers, so they become the text's own spelling
# (YAML's canonical one, or JSON5's) rather than the null a JSON encoder would silently write.
_NON_FINITE = {
    "yaml": (".inf", "-.inf", ".nan"),
    "json": ("Infinity", "-Infinity", "NaN"),
    "json5": ("Infinity", "-Infinity", "NaN"),
}


def _plain(value: Any, fmt: Format) -> Any:
    if isinstance(value, dict):
        return {
            str(k) if not isinstance(k, str | int | float | bool) else k: _plain(v, fmt)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_plain(v, fmt) for v in value]
    if isinstance(value, str):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        pos, neg, nan = _NON_FINITE[fmt]
        return nan if math.isnan(value) else (pos if value > 0 else neg)
    if isinstance(value, bool | int | float) or value is None:
        return value
    if isinstance(value, bytes | bytearray):
        # YAML's !!binary: the base64 text, as the YAML spells it minus its line breaks.
        return base64.b64encode(value).decode("ascii")
    return str(value)


def edit_text(text: str, fmt: Format, action: Action, path: str | KeyPath, value: Any = None) -> str:
    """The text after one key edit (`set`, `delete`, `append`), with every other line left as it was."""
    tokens = parse_key_path(path) if isinstance(path, str) else path
    if fmt not in ("yaml", "json", "json5"):
        raise PatchError(f"unknown format {fmt!r} (expected yaml, json or json5)")
    try:
        if fmt == "yaml":
            return edit_yaml(text, tokens, action, value)
        return edit_json(text, tokens, action, value, fmt)
    except RecursionError as exc:
        # Reading is guarded where the text is parsed; what is left is writing a deeply nested value.
        raise SerializationError(f"value is nested too deeply to write as {fmt.upper()}") from exc
