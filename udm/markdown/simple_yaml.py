"""A fast path for the flat YAML blocks the UDM is full of (task and mode records).

`parse_simple_yaml` accepts only a small, unambiguous subset — top-level `key: scalar`, flow lists
of scalars and block lists of scalars — and returns `NOT_SIMPLE` for anything else, so the caller
falls back to PyYAML. Within the subset the result equals `yaml.safe_load` (a property test checks
it); every scalar YAML 1.1 could read as something other than a plain string or decimal integer
(booleans, null, floats, octal, dates, anchors, tags) is left to PyYAML. Comments are dropped only
where YAML reads them as comments (a `#` at a line start or after a space, with no quote before it).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["NOT_SIMPLE", "parse_simple_yaml", "simple_yaml_ids"]

NOT_SIMPLE: Any = object()

_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_\-]*):(?: +(.*?))? *$")
_ITEM = re.compile(r"( *)- +(.*?) *$")
_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_.\-/ ]*")
_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_SPECIAL = frozenset(
    ["yes", "no", "true", "false", "on", "off", "null", "y", "n"]
)  # any case: YAML 1.1 booleans/null (y/n are strings in PyYAML, but not worth the risk)


def _scalar(text: str) -> Any:
    if not text:
        return NOT_SIMPLE
    c = text[0]
    if c == '"':
        if len(text) >= 2 and text[-1] == '"' and '"' not in text[1:-1] and "\\" not in text:
            return text[1:-1]
        return NOT_SIMPLE
    if c == "'":
        if len(text) >= 2 and text[-1] == "'" and "'" not in text[1:-1]:
            return text[1:-1]
        return NOT_SIMPLE
    if _INT.fullmatch(text):
        # Past 4,000 digits Python may refuse the number: the full loader names its line.
        return int(text) if len(text) <= 4000 else NOT_SIMPLE
    if _PLAIN.fullmatch(text) and text.lower() not in _SPECIAL and not text.endswith(" "):
        return text
    return NOT_SIMPLE


def _value(text: str | None) -> Any:
    if text is None or text == "":
        return None
    if text[0] == "[":
        if text[-1] != "]":
            return NOT_SIMPLE
        inner = text[1:-1].strip()
        if not inner:
            return []
        if any(ch in inner for ch in "[]{}\"'"):
            return NOT_SIMPLE
        items = [_scalar(part.strip()) for part in inner.split(",")]
        return NOT_SIMPLE if any(item is NOT_SIMPLE for item in items) else items
    return _scalar(text)


_COMMENT = re.compile(r"(?:^|[ ])#.*$")


def _strip_comments(text: str) -> str | None:
    """Text with `# comments` removed, or None when a `#` might be inside a quoted scalar."""
    out = []
    for line in text.split("\n"):
        if "#" in line:
            m = _COMMENT.search(line)
            if m is None or any(q in line[: m.start()] for q in "\"'"):
                return None  # a '#' inside a scalar, or a comment after a quoted one: PyYAML decides
            line = line[: m.start()].rstrip(" ")
        out.append(line)
    return "\n".join(out)


def parse_simple_yaml(text: str) -> Any:
    """The block's value when it is in the simple subset, else NOT_SIMPLE."""
    if "#" in text:
        # Hand-written task blocks carry trailing comments ("status: todo  # set by the flow");
        # a comment is dropped only where YAML itself would read one (after a space, no quotes before).
        stripped = _strip_comments(text)
        if stripped is None:
            return NOT_SIMPLE
        text = stripped
    if "\t" in text or "&" in text or "*" in text or "!" in text or "---" in text:
        return NOT_SIMPLE
    out: dict[str, Any] = {}
    lines = text.split("\n")
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        m = _KEY.match(line)
        if m is None:
            return NOT_SIMPLE
        key, raw = m.group(1), m.group(2)
        if key in out or key.lower() in _SPECIAL:
            return NOT_SIMPLE
        i += 1
        if raw is None or raw == "":
            items: list[Any] = []
            indent: int | None = None
            while i < n and lines[i].strip():
                im = _ITEM.fullmatch(lines[i])
                if im is None:
                    break
                if indent is None:
                    indent = len(im.group(1))
                elif len(im.group(1)) != indent:
                    return NOT_SIMPLE
                value = _scalar(im.group(2))
                if value is NOT_SIMPLE:
                    return NOT_SIMPLE
                items.append(value)
                i += 1
            if i < n and lines[i].strip() and lines[i][0] == " ":
                return NOT_SIMPLE  # a nested mapping or an odd continuation
            out[key] = items if indent is not None else None
            continue
        value = _value(raw)
        if value is NOT_SIMPLE:
            return NOT_SIMPLE
        if i < n and lines[i][:1] == " " and lines[i].strip():
            return NOT_SIMPLE  # a multi-line scalar
        out[key] = value
    return out if out else NOT_SIMPLE


# ---------------------------------------------------------------------------------------------
# IDs of a flat block without parsing it: a whole-text grammar check plus one regex pass.

# Printable non-ASCII YAML accepts as ordinary text (no line or paragraph separators, no BOM).
_NA = "\u00a0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd"
_PLAIN_START = rf"A-Za-z0-9_./({_NA}"
_PLAIN_CHAR = rf"A-Za-z0-9_.\-/()+,{_NA}"
_VALUE = (
    rf"(?:\"[\x20\x21\x23-\x5b\x5d-\x7e{_NA}]*\""  # double-quoted, no escapes
    rf"|'[\x20-\x26\x28-\x7e{_NA}]*'"  # single-quoted, no doubled quotes
    rf"|[{_PLAIN_START}][{_PLAIN_CHAR}]*(?: +[{_PLAIN_CHAR}]+)*"  # plain: never ': ', ' #' or a quote
    r"|-[0-9]+(?:\.[0-9]+)?)"
)
_TAIL = rf"(?: +#[\x20-\x7e{_NA}]*)? *\n"  # an optional comment, then the end of the line
_FLAT_BLOCK = re.compile(
    rf"(?: *\n| *#[\x20-\x7e{_NA}]*\n"  # blank and comment lines
    rf"|[A-Za-z_][A-Za-z0-9_\-]*: +{_VALUE}{_TAIL}"  # key: scalar
    rf"|[A-Za-z_][A-Za-z0-9_\-]*:{_TAIL}"  # key: (null, or a list of scalars below)
    rf"(?:(?P<ind> *)- +{_VALUE}{_TAIL}(?:(?P=ind)- +{_VALUE}{_TAIL})*)?)*"
)
_KEY_LINE_CACHE: dict[tuple[str, ...], re.Pattern[str]] = {}


def simple_yaml_ids(text: str, keys: tuple[str, ...]) -> list[str] | None:
    """The IDs `keys` define in a flat YAML block, without parsing it; None when unsure.

    Agrees with collecting, in `keys` order, the stripped space-free string values of those keys
    from the block's parsed data (a property test checks it): the block must be a flat mapping of
    scalars and scalar lists in a strict subset of YAML, and each defining value a quoted scalar or
    a plain one that starts with a letter and is no YAML 1.1 boolean or null.
    """
    if not text.endswith("\n"):
        text += "\n"
    if _FLAT_BLOCK.fullmatch(text) is None:
        return None
    pattern = _KEY_LINE_CACHE.get(keys)
    if pattern is None:
        names = "|".join(re.escape(k) for k in keys)
        pattern = re.compile(rf"^({names}):(?: +({_VALUE}))?", re.MULTILINE)
        _KEY_LINE_CACHE[keys] = pattern
    values: dict[str, str | None] = {}
    for key, raw in pattern.findall(text):
        if key in values:
            return None  # a repeated key: the last one wins in YAML; not worth following here
        if not raw:
            values[key] = None  # null or a list of scalars: defines nothing
        elif raw[0] in "\"'":
            values[key] = raw[1:-1]
        elif raw[0].isascii() and raw[0].isalpha() and raw.lower() not in _SPECIAL:
            values[key] = raw
        else:
            return None  # a number, date or keyword: its type needs the real parser
    out: list[str] = []
    for key in keys:
        value = values.get(key)
        if value is not None and value.strip() and " " not in value.strip():
            out.append(value.strip())
    return out
