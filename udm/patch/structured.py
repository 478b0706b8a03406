"""Key-path edits of YAML (ruamel round trip) and JSON/JSON5 texts that change only the edited lines."""

from __future__ import annotations

import base64
import contextlib
import io
import itertools
import json
import math
import re
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, Literal

from udm.datalimits import check_alias_expansion, check_json, check_yaml, current_limits
from udm.errors import DocumentError, PatchError, TargetNotFoundError, UdmError
from udm.patch.splice import merge_minimal

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


def _walk(data: Any, tokens: KeyPath, upto: int | None = None) -> Any:
    node = data
    for depth, tok in enumerate(tokens[: len(tokens) if upto is None else upto]):
        node = _step(node, tok, tokens, depth)
    return node


def _apply(data: Any, tokens: KeyPath, action: Action, value: Any, wrap: Callable[[Any, Any], Any]) -> Any:
    """Edit `data` in place (returns the new root when the root itself is replaced)."""
    if action == "append":
        target = _walk(data, tokens)
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
    parent = _walk(data, tokens, len(tokens) - 1)
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
_TOO_DEEP = "{what} is nested too deeply to read (more levels than the parser's recursion limit)"

# ---------------------------------------------------------------- YAML


_KEY_LINE = re.compile(r"^(?P<indent> *)(?:- +)?(?:[^\s#'\"][^:#]*|'[^']*'|\"[^\"]*\"):(?:\s+#.*)?\s*$")
_ITEM_LINE = re.compile(r"^(?P<indent> *)- ")


def detect_yaml_indent(text: str) -> tuple[int, int, int]:
    """(mapping, sequence, offset) indentation this YAML text uses, for ruamel's `indent()`."""
    lines = [ln.rstrip("\n") for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    mapping: int | None = None
    sequence: int | None = None
    offset: int | None = None
    for here, nxt in itertools.pairwise(lines):
        m = _KEY_LINE.match(here)
        if not m:
            continue
        # A "- key:" line's own key sits after the dash; its children are indented from the key.
        base = len(m.group("indent"))
        dash = re.match(r"^( *)(- +)", here)
        if dash:
            base = len(dash.group(1)) + len(dash.group(2))
        n_indent = len(nxt) - len(nxt.lstrip(" "))
        item = _ITEM_LINE.match(nxt)
        if item:
            if offset is None and n_indent >= base:
                offset = n_indent - base
                after_dash = len(re.match(r"^ *- +", nxt).group(0)) - n_indent  # type: ignore[union-attr]
                sequence = offset + after_dash
        elif n_indent > base and mapping is None:
            mapping = n_indent - base
        if mapping is not None and offset is not None:
            break
    mapping = mapping or 2
    if offset is None:
        offset = 2 if mapping >= 2 else 0
        sequence = offset + 2
    assert sequence is not None
    # ruamel needs room for the dash and its space.
    sequence = max(sequence, offset + 2)
    return mapping, sequence, offset


_LOCAL = threading.local()


def _yaml(text: str) -> Any:
    """A round-trip YAML instance set up for this text's indentation (cached per thread and style)."""
    from ruamel.yaml import YAML

    mapping, sequence, offset = detect_yaml_indent(text)
    explicit = text.lstrip().startswith("---")
    cache: dict[tuple[int, int, int, bool], Any] = _LOCAL.__dict__.setdefault("yaml", {})
    key = (mapping, sequence, offset, explicit)
    if key not in cache:
        # Building a YAML instance costs about a millisecond; a thread reuses its own.
        yaml = YAML(typ="rt")
        yaml.preserve_quotes = True
        yaml.width = 4096
        yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
        yaml.explicit_start = explicit
        cache[key] = yaml
    return cache[key]


def _yaml_load(text: str, yaml: Any) -> Any:
    from ruamel.yaml.error import YAMLError

    # ruamel's composer recurses per level: the depth is measured first, without recursion.
    check_yaml(text, what="YAML", ruamel=True)
    try:
        docs = list(yaml.load_all(text))
    except YAMLError as exc:
        raise DocumentError(f"YAML does not parse: {' '.join(str(exc).split())}") from exc
    except RecursionError as exc:
        _forget_yaml(yaml)  # as in `_yaml_dump`: never reuse an instance stopped midway
        raise DocumentError(_TOO_DEEP.format(what="YAML")) from exc
    if len(docs) > 1:
        raise DocumentError("YAML text holds several documents; key edits need exactly one")
    data = docs[0] if docs else None
    check_alias_expansion(data, len(text))
    return data


def _forget_yaml(yaml: Any) -> None:
    cache: dict[tuple[int, int, int, bool], Any] = _LOCAL.__dict__.get("yaml", {})
    for key in [k for k, v in cache.items() if v is yaml]:
        del cache[key]


def _yaml_dump(data: Any, yaml: Any) -> str:
    buf = io.StringIO()
    try:
        yaml.dump(data, buf)
    except BaseException:
        # A dump stopped midway (a RecursionError, say) leaves the instance's serializer mid-document,
        # and the next dump would then write nothing new; the next call builds a fresh instance.
        _forget_yaml(yaml)
        raise
    return buf.getvalue()


def _yaml_wrap(old: Any, value: Any) -> Any:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.scalarstring import ScalarString

    # A new string keeps the quoting style of the string it replaces.
    if isinstance(old, ScalarString) and isinstance(value, str) and not isinstance(value, ScalarString):
        return type(old)(value)
    # A new list or mapping keeps the flow style (`[a, b]`, `{k: v}`) of the one it replaces: the
    # author wrote it on one line, and a block form would turn a one-line edit into many.
    if isinstance(old, CommentedSeq | CommentedMap) and old.fa.flow_style():
        if isinstance(value, list) and not isinstance(value, CommentedSeq):
            value = CommentedSeq(value)
            value.fa.set_flow_style()
        elif isinstance(value, dict) and not isinstance(value, CommentedMap):
            value = CommentedMap(value)
            value.fa.set_flow_style()
    return value


# A flat block ruamel writes back exactly as it reads it: ASCII, no trailing spaces, one space
# after each colon, top-level `key: scalar` lines (plain, quoted without escapes, or decimal
# integers), `key:` lines with `  - scalar` lists, comment lines at the margin and empty lines
# between entries. Within it, a scalar set is a one-line splice (see `_splice_yaml_scalar`).
_CANON_PLAIN = r"[A-Za-z][A-Za-z0-9_.\-/]*(?: [A-Za-z0-9_.\-/]+)*"
_CANON_VALUE = (
    rf"(?:\"[\x20\x21\x23-\x5b\x5d-\x7e]*\"|'[\x20-\x26\x28-\x7e]*'|{_CANON_PLAIN}|-?(?:0|[1-9][0-9]*))"
)
_CANON_TAIL = r"(?: +#(?:[\x20-\x7e]*[\x21-\x7e])?)?\n"
_CANON_KEY = r"[A-Za-z_][A-Za-z0-9_\-]*"
_CANON_BLOCK = re.compile(
    rf"(?:{_CANON_KEY}: {_CANON_VALUE}{_CANON_TAIL}|{_CANON_KEY}:{_CANON_TAIL}(?:(?P<ind> *)- {_CANON_VALUE}{_CANON_TAIL}"
    rf"(?:(?P=ind)- {_CANON_VALUE}{_CANON_TAIL})*)?)"
    rf"(?:\n|#(?:[\x20-\x7e]*[\x21-\x7e])?\n|{_CANON_KEY}: {_CANON_VALUE}{_CANON_TAIL}"
    rf"|{_CANON_KEY}:{_CANON_TAIL}(?:(?P<ind2> *)- {_CANON_VALUE}{_CANON_TAIL}(?:(?P=ind2)- {_CANON_VALUE}{_CANON_TAIL})*)?)*"
)
_CANON_ITEM_INDENT = re.compile(r"^( *)- ", re.MULTILINE)
_CANON_KEYS = re.compile(rf"^({_CANON_KEY}):", re.MULTILINE)
_CANON_PLAIN_STR = re.compile(_CANON_PLAIN)
# Plain scalars ruamel writes back otherwise (null as nothing, True as true): a block holding one
# is not reproduced line for line, so the round trip decides.
_REWRITTEN = re.compile(r"(?::|^ *-) (?:null|Null|NULL|True|TRUE|False|FALSE)(?= |\n)", re.MULTILINE)
# Words a YAML 1.1 or 1.2 reader may take for a boolean or null: never spliced as plain keys or text.
_KEYWORDS = frozenset(["yes", "no", "true", "false", "on", "off", "null", "y", "n"])


def _splice_scalar_text(value: Any, style: str) -> str | None:
    """How ruamel writes `value` in place of a scalar of this style ('"', "'" or ''), or None."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if not isinstance(value, str) or len(value) > 200:
        return None
    if style == '"':
        ok = all("\x20" <= ch <= "\x7e" and ch not in '"\\' for ch in value)
        return f'"{value}"' if ok else None
    if style == "'":
        ok = all("\x20" <= ch <= "\x7e" and ch != "'" for ch in value)
        return f"'{value}'" if ok and value.strip() == value else None
    if _CANON_PLAIN_STR.fullmatch(value) and value.lower() not in _KEYWORDS:
        return value
    return None


def _splice_yaml_scalar(text: str, tokens: KeyPath, action: Action, value: Any) -> str | None:
    """`set` of a top-level scalar in a flat block as a one-line splice; None when the full round trip must decide.

    Gives what the round trip gives (a property test compares them): in such a block ruamel
    reproduces every line, so its output differs only in the edited line, whose scalar it writes as
    `_splice_scalar_text` does and whose comment it keeps at its column, or one space after a longer
    value.
    """
    if action != "set" or len(tokens) != 1 or not isinstance(tokens[0], str):
        return None
    key = tokens[0]
    if not text.endswith("\n") or not text.isascii() or _CANON_BLOCK.fullmatch(text) is None:
        return None
    if _REWRITTEN.search(text):
        return None
    if len(set(_CANON_ITEM_INDENT.findall(text))) > 1 or not re.fullmatch(_CANON_KEY, key):
        return None
    keys = [k.lower() for k in _CANON_KEYS.findall(text)]
    if key.lower() in _KEYWORDS or len(set(keys)) != len(keys) or not _KEYWORDS.isdisjoint(keys):
        return None  # a repeated key is an error the round trip reports; keywords may not be strings
    found = list(re.finditer(rf"^{re.escape(key)}:(.*)\n", text, re.MULTILINE))
    if len(found) != 1:
        return None  # a new key or a repeated one: the round trip adds it or reports it
    m = re.fullmatch(rf" ({_CANON_VALUE})(?:( +)(#.*))?", found[0].group(1))
    if m is None:
        return None  # null or a list
    old, comment = m.group(1), m.group(3)
    new = _splice_scalar_text(value, old[0] if old[0] in "\"'" else "")
    if new is None:
        return None
    line = f"{key}: {new}"
    if comment is not None:
        column = len(key) + 2 + len(old) + len(m.group(2))
        line += " " * max(1, column - len(line)) + comment
    return text[: found[0].start()] + line + "\n" + text[found[0].end() :]


def _edit_yaml(text: str, tokens: KeyPath, action: Action, value: Any) -> str:
    spliced = _splice_yaml_scalar(text, tokens, action, value)
    return spliced if spliced is not None else _edit_yaml_round_trip(text, tokens, action, value)


def _edit_yaml_round_trip(text: str, tokens: KeyPath, action: Action, value: Any) -> str:
    yaml = _yaml(text)
    data = _yaml_load(text, yaml)
    if data is None:
        if action == "set" and tokens and isinstance(tokens[0], str):
            data = {}
            baseline = ""
        else:
            raise TargetNotFoundError(
                f"key path {format_key_path(tokens)!r} not found: the YAML text is empty"
            )
    else:
        baseline = _yaml_dump(data, yaml)
    data = _apply(data, tokens, action, value, _yaml_wrap)
    try:
        modified = _yaml_dump(data, yaml)
    except Exception as exc:  # ruamel raises several unrelated types for values it cannot represent
        raise SerializationError(f"value {value!r} cannot be written as YAML: {exc}") from exc
    if not baseline:
        # Only comments (or nothing) before: keep them and add the new mapping below.
        return (text if not text or text.endswith("\n") else text + "\n") + modified
    return merge_minimal(text, baseline, modified)


# ---------------------------------------------------------------- JSON / JSON5


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


def _json_load(text: str, fmt: Format) -> Any:
    check_json(text, what=fmt.upper(), json5=fmt == "json5")
    if fmt == "json5":
        import json5

        try:
            with _recursion_room(_JSON5_FRAMES_PER_LEVEL * current_limits().max_depth):
                return json5.loads(text, object_pairs_hook=dict)
        except ValueError as exc:
            raise DocumentError(f"JSON5 does not parse: {exc}") from exc
        except RecursionError as exc:
            raise DocumentError(_TOO_DEEP.format(what="JSON5")) from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DocumentError(f"JSON does not parse: line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
    except RecursionError as exc:
        raise DocumentError(_TOO_DEEP.format(what="JSON")) from exc


def _json_dump(
    data: Any, fmt: Format, indent: int | str | None, separators: tuple[str, str], original: str
) -> str:
    if fmt == "json5":
        import json5

        # Follow the text's own habits: quoted or bare keys, trailing commas or not.
        quote_keys = bool(re.search(r"""^\s*["'][^"']+["']\s*:""", original, re.M))
        trailing = bool(re.search(r",\s*(?://[^\n]*\s*)*[}\]]", original))
        return str(
            json5.dumps(
                data,
                indent=indent,
                separators=separators,
                ensure_ascii=False,
                quote_keys=quote_keys,
                trailing_commas=trailing,
            )
        )
    return json.dumps(data, indent=indent, separators=separators, ensure_ascii=False)


def _edit_json(text: str, tokens: KeyPath, action: Action, value: Any, fmt: Format) -> str:
    data = _json_load(text, fmt)
    indent, separators = detect_json_style(text)
    try:
        json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise SerializationError(f"value {value!r} cannot be written as JSON: {exc}") from exc
    trailing = text[len(text.rstrip()) :]
    baseline = _json_dump(data, fmt, indent, separators, text) + trailing
    data = _apply(data, tokens, action, value, lambda _old, new: new)
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


# ---------------------------------------------------------------- entry points


def get_value(text: str, fmt: Format, path: str | KeyPath) -> Any:
    """The value at a key path, as JSON-safe data (see `_plain` for infinities, NaN and binary)."""
    tokens = parse_key_path(path) if isinstance(path, str) else path
    data = _yaml_load(text, _yaml(text)) if fmt == "yaml" else _json_load(text, fmt)
    try:
        return _plain(_walk(data, tokens), fmt)
    except RecursionError as exc:
        raise DocumentError(_TOO_DEEP.format(what=fmt.upper())) from exc


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
            return _edit_yaml(text, tokens, action, value)
        return _edit_json(text, tokens, action, value, fmt)
    except RecursionError as exc:
        # Reading is guarded where the text is parsed; what is left is writing a deeply nested value.
        raise SerializationError(f"value is nested too deeply to write as {fmt.upper()}") from exc
