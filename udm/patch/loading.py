"""Reading patches: from a file, YAML/JSON text or parsed data, with every problem named (PatchError)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from udm.datalimits import DataLimitError, check_alias_expansion, check_text, read_utf8
from udm.errors import DocumentError, PatchError
from udm.patch.format import OPERATION_TYPES, Patch, _lone_surrogate, _surrogate_message

__all__ = ["describe_validation_error", "load_patch", "loads_patch", "parse_patch"]


def describe_validation_error(exc: ValidationError, prefix: str = "") -> str:
    """A pydantic error as short lines naming the operation and field, e.g. `operations[2] (replace_text): ...`."""
    lines = []
    for err in exc.errors():
        loc = list(err.get("loc", ()))
        where = prefix
        if len(loc) >= 2 and loc[0] == "operations" and isinstance(loc[1], int):
            where += f"operations[{loc[1]}]"
            rest = loc[2:]
            if rest and isinstance(rest[0], str) and rest[0] in OPERATION_TYPES:
                where += f" ({rest[0]})"
                rest = rest[1:]
            if rest:
                where += ": field '" + ".".join(str(x) for x in rest) + "'"
        elif loc:
            where += "field '" + ".".join(str(x) for x in loc) + "'"
        msg = err.get("msg", "invalid")
        if err.get("type") == "union_tag_invalid":
            ctx = err.get("ctx") or {}
            msg = f"unknown operation {ctx.get('tag')!r}; expected one of: {', '.join(OPERATION_TYPES)}"
        elif err.get("type") == "union_tag_not_found":
            msg = "missing 'op' (the operation's name)"
        lines.append(f"{where or 'patch'}: {msg}")
    return "; ".join(lines)


def parse_patch(data: Any, origin: str = "patch") -> Patch:
    """A Patch from already-parsed data; PatchError naming every problem otherwise."""
    if not isinstance(data, dict):
        raise PatchError(f"{origin}: a patch is a mapping with 'operations', not {type(data).__name__}")
    where = _lone_surrogate(data)
    if where is not None:
        raise PatchError(f"{origin}: invalid patch: {_surrogate_message(where)}")
    try:
        return Patch.model_validate(data)
    except ValidationError as exc:
        raise PatchError(f"{origin}: invalid patch: {describe_validation_error(exc)}") from exc


def load_patch(path: Path | str) -> Patch:
    """Read a patch file (YAML, or JSON which is YAML too); PatchError for unreadable or invalid files."""
    p = Path(path)
    try:
        text = read_utf8(p, f"patch file {p}")
    except OSError as exc:
        raise PatchError(f"cannot read patch file {p}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise PatchError(str(exc)) from exc
    return loads_patch(text, str(p))


def loads_patch(text: str, origin: str = "patch") -> Patch:
    """A Patch from YAML or JSON text."""
    import yaml

    # The patch file's nesting and size are measured before any parser (all of them recurse) sees it.
    try:
        check_text(text, "json" if text.lstrip().startswith("{") else "yaml", what="the patch file")
    except DataLimitError as exc:
        raise PatchError(f"{origin} is refused: {exc}") from exc
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PatchError(
                f"{origin} is not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}"
            ) from exc
        except RecursionError as exc:
            raise PatchError(f"{origin} is nested too deeply to read") from exc
    else:
        try:
            data = yaml.safe_load(text)
            # Aliases load as shared objects; the patch's values are later written out whole
            # (JSON edits, the patch record), which would expand a "billion laughs" for real.
            check_alias_expansion(data, len(text))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"line {mark.line + 1} column {mark.column + 1}: " if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc)
            raise PatchError(f"{origin} is not valid YAML: {where}{problem}") from exc
        except DocumentError as exc:
            raise PatchError(f"{origin}: {exc}") from exc
        except RecursionError as exc:
            raise PatchError(f"{origin} is nested too deeply to read") from exc
    return parse_patch(data, origin)
