"""Depth and size limits checked before any parser reads untrusted JSON, JSON5 or YAML.

The parsers recurse once or more per nesting level (PyYAML's C composer in C, so 100,000 levels
crash the process instead of raising), so no parser may see a text until a scan that does not
recurse has measured its nesting. JSON and JSON5 are measured by one linear pass over their
brackets outside strings and comments; YAML by libyaml's event stream, whose parser keeps its own
stack (block indentation and flow brackets alike), stopped as soon as the limit is passed. Data
within the limits is shallow enough for everything that walks it afterwards (ID collection, row
building, `orjson`'s 254-level cap). The limits are settings (`data_max_depth`, `data_max_bytes`);
`apply_settings` makes loaded settings the process's limits, so parsers with no settings object
at hand (the document model) use them too.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from typing import Any, Literal, cast

from udm.errors import DocumentError

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_DEPTH",
    "DEPTH_CEILING",
    "DataLimitError",
    "DataLimits",
    "apply_settings",
    "check_alias_expansion",
    "check_json",
    "check_size",
    "check_text",
    "check_yaml",
    "current_limits",
    "load_json",
    "load_yaml",
    "lone_surrogate",
    "read_utf8",
    "set_limits",
]

DEFAULT_MAX_DEPTH = 100
DEFAULT_MAX_BYTES = 8 * 1024 * 1024
# Beyond this even the parsers and walkers that stay within Python's recursion limit would not
# (ruamel gives up near 250 levels at an empty stack, orjson at 254): the setting's ceiling.
DEPTH_CEILING = 200

TextFormat = Literal["json", "json5", "yaml", "toml"]


class DataLimitError(DocumentError):
    """Structured data nested deeper, or larger, than the limits; `line` is 1-based in the text."""

    def __init__(self, reason: str, line: int) -> None:
        super().__init__(f"line {line}: {reason}")
        self.reason = reason
        self.line = line


@dataclass(frozen=True)
class DataLimits:
    """How deep (levels of lists and mappings) and how large (UTF-8 bytes) one text may be."""

    max_depth: int = DEFAULT_MAX_DEPTH
    max_bytes: int = DEFAULT_MAX_BYTES


_current = DataLimits()


_SURROGATE = re.compile("[\ud800-\udfff]")
# A path in the data as a chain of (parent, step): a key, or a one-item list holding an index.
_Where = tuple[Any, Any] | None


def lone_surrogate(data: Any, whole: str = "the data") -> str | None:
    """Where the first lone surrogate in parsed data sits (e.g. `operations[0].new`; `whole` when it is
    the data itself), or None."""
    # A lone surrogate (JSON "\ud800") is a str in Python but can never be written as UTF-8;
    # found here it is bad input, found at the commit it would be a traceback. Iterative: the
    # data's depth is the input's to choose. Each item carries a link to its parent's path, spelled
    # out only for the answer: building every item's path text would cost the depth squared.
    stack: list[tuple[_Where, Any]] = [(None, data)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            m = _SURROGATE.search(item)
            if m:
                return f"{_spell(where) or whole} (U+{ord(m.group()):04X} at character {m.start()})"
        elif isinstance(item, dict):
            for key, value in reversed(list(item.items())):
                if isinstance(key, str) and _SURROGATE.search(key):
                    return f"the key {key!r} of {_spell(where) or whole}"
                stack.append(((where, key), value))
        elif isinstance(item, list | tuple):
            stack.extend(((where, [i]), v) for i, v in reversed(list(enumerate(item))))
    return None


def _spell(where: _Where) -> str:
    """The path text of a chain, e.g. `operations[0].new`."""
    steps: list[Any] = []
    while where is not None:
        where, step = where
        steps.append(step)
    text = ""
    for step in reversed(steps):
        index = isinstance(step, list)
        text += f"[{step[0]}]" if index else f".{step}" if text else str(step)
    return text


def read_utf8(path: Any, what: str | None = None) -> str:
    """A file's text; OSError as reading raises it, ValueError naming the file (or `what`) and the first
    byte that is not UTF-8, for a file saved in another encoding."""
    with open(path, "rb") as fh:
        raw = fh.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what or path} is not UTF-8 text (byte {exc.start})") from None


def current_limits() -> DataLimits:
    """The process's limits (the defaults until settings are applied)."""
    return _current


def set_limits(limits: DataLimits) -> None:
    """Make `limits` the process's limits."""
    global _current
    _current = limits


def apply_settings(settings: Any) -> None:
    """Take the limits from settings (`data_max_depth`, `data_max_bytes`)."""
    set_limits(DataLimits(max_depth=settings.data_max_depth, max_bytes=settings.data_max_bytes))


def _too_deep(what: str, limit: int) -> str:
    return f"{what} is nested too deeply: more than {limit} levels (limit data_max_depth); it was not parsed"


def check_size(text: str, *, what: str = "the text", limits: DataLimits | None = None) -> None:
    """DataLimitError when the text is more UTF-8 bytes than the size limit."""
    limits = limits or _current
    # A character is at most 4 UTF-8 bytes: encode only when the text could be over the limit.
    if len(text) * 4 > limits.max_bytes and len(text.encode("utf-8", "surrogatepass")) > limits.max_bytes:
        raise DataLimitError(
            f"{what} is {len(text.encode('utf-8', 'surrogatepass')):,} bytes, more than the limit of "
            f"{limits.max_bytes:,} bytes (data_max_bytes); it was not parsed",
            1,
        )


# What hides brackets from the bracket count: strings (and, in JSON5, comments). Unterminated ones
# match nothing, so their brackets count: the scan may only ever overestimate the depth.
_JSON_SKIP = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_JSON5_SKIP = re.compile(
    r'"[^"\\]*(?:\\.[^"\\]*)*"|\'[^\'\\]*(?:\\.[^\'\\]*)*\'|//[^\n\r\u2028\u2029]*|/\*.*?\*/', re.DOTALL
)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


# A TOML key (`a.b.c = 1`) or table header (`[a.b.c]`): the dotted names before `=` or inside `[...]`.
_TOML_KEY = re.compile(r"^[ \t]*(?:\[\[?([^\]\n]*)|([^=\n]*)=)", re.M)


def check_toml(text: str, *, what: str = "TOML", limits: DataLimits | None = None) -> None:
    """DataLimitError when the TOML text is too large, or a key or table header has more dotted
    parts than the depth limit (tomllib checks every prefix of a dotted key: its cost is the parts
    squared); linear. Brackets are measured as JSON's (tomllib recurses on a deep array)."""
    limits = limits or _current
    check_json(text, what=what, limits=limits)
    if text.count(".") <= limits.max_depth:
        return
    for m in _TOML_KEY.finditer(text):
        key = m.group(1) if m.group(1) is not None else m.group(2)
        if key.count(".") >= limits.max_depth:
            raise DataLimitError(_too_deep(what, limits.max_depth), text.count("\n", 0, m.start()) + 1)


def check_json(
    text: str, *, what: str = "JSON", json5: bool = False, limits: DataLimits | None = None
) -> None:
    """DataLimitError when the JSON (or JSON5) text is too large or nests too deeply; linear, no recursion."""
    limits = limits or _current
    check_size(text, what=what, limits=limits)
    skip = _JSON5_SKIP if json5 else _JSON_SKIP
    if text.count("[") + text.count("{") <= limits.max_depth:
        return  # fewer openers than the limit: nothing to measure
    brackets = _NOT_BRACKET.sub("", skip.sub("", text))
    deepest = max(itertools.accumulate(map(_STEP.__getitem__, brackets)), default=0)
    if deepest <= limits.max_depth:
        return
    # Only a refused text pays for finding the line where the limit was passed.
    depth = 0
    for m in re.finditer(rf"{skip.pattern}|[\[\]{{}}]", text, re.DOTALL):
        token = m.group(0)
        if token in _STEP:
            depth += _STEP[token]
            if depth > limits.max_depth:
                raise DataLimitError(_too_deep(what, limits.max_depth), text.count("\n", 0, m.start()) + 1)
    raise DataLimitError(_too_deep(what, limits.max_depth), 1)  # pragma: no cover - the scans agree


def _event_depth(events: Any, what: str, limit: int, start: tuple[type, ...], end: tuple[type, ...]) -> None:
    depth = 0
    for event in events:
        if isinstance(event, start):
            depth += 1
            if depth > limit:
                raise DataLimitError(_too_deep(what, limit), cast(Any, event).start_mark.line + 1)
        elif isinstance(event, end):
            depth -= 1


def check_yaml(
    text: str, *, what: str = "YAML", limits: DataLimits | None = None, ruamel: bool = False
) -> None:
    """DataLimitError when the YAML text is too large or nests too deeply (flow or block style).

    Measured on libyaml's event stream (its parser keeps its own stack, it never recurses). A text
    libyaml cannot parse is left to the loader, which stops at the same error, unless the loader is
    ruamel's (`ruamel=True`): its YAML 1.2 may read on, so its own (iterative) parser measures then.
    """
    limits = limits or _current
    check_size(text, what=what, limits=limits)
    import yaml

    parser: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    collection_start = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
    collection_end = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
    try:
        _event_depth(
            yaml.parse(text, Loader=parser), what, limits.max_depth, collection_start, collection_end
        )
        return
    except yaml.YAMLError:
        if not ruamel:
            return
    from ruamel.yaml import YAML
    from ruamel.yaml import events as rev
    from ruamel.yaml.error import YAMLError

    try:
        _event_depth(
            YAML(typ="rt").parse(text),
            what,
            limits.max_depth,
            (rev.SequenceStartEvent, rev.MappingStartEvent),
            (rev.SequenceEndEvent, rev.MappingEndEvent),
        )
    except YAMLError:
        return  # the loader reports the syntax error itself


def check_text(
    text: str, fmt: TextFormat, *, what: str | None = None, limits: DataLimits | None = None
) -> None:
    """check_json / check_yaml / check_toml by format name."""
    label = what or fmt.upper()
    if fmt == "yaml":
        check_yaml(text, what=label, limits=limits)
    elif fmt == "toml":
        check_toml(text, what=label, limits=limits)
    else:
        check_json(text, what=label, json5=fmt == "json5", limits=limits)


def load_json(text: str, *, what: str = "JSON", limits: DataLimits | None = None) -> Any:
    """json.loads after the limits check (DataLimitError, or json.JSONDecodeError as usual)."""
    check_json(text, what=what, limits=limits)
    return json.loads(text)


def load_yaml(text: str, *, what: str = "YAML", limits: DataLimits | None = None) -> Any:
    """A safe YAML load (libyaml when present) after the limits check; aliases may not expand past it."""
    import yaml

    check_yaml(text, what=what, limits=limits)
    data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    if "*" in text:
        check_alias_expansion(data, len(text))
    return data


# A text without aliases holds fewer values than characters; only aliases can push a document past
# this many values, and a YAML "billion laughs" of a few hundred bytes names a billion of them.
_EXPANSION_FLOOR = 1_000_000


def _children(node: Any) -> list[Any] | None:
    if isinstance(node, dict):
        return [*node.keys(), *node.values()]
    if isinstance(node, list | tuple | set | frozenset):
        return list(node)
    return None


def check_alias_expansion(data: Any, text_size: int) -> None:
    """DocumentError when shared (aliased) values would expand past max(1,000,000, text size) values or loop."""
    limit = max(_EXPANSION_FLOOR, text_size)
    # Sizes are counted once per container (by identity), so the count itself never expands anything;
    # the walk uses its own stack because the data may be nested as deeply as the parser allowed.
    sizes: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[Any, bool]] = [(data, False)]
    while stack:
        node, done = stack.pop()
        children = _children(node)
        if children is None:
            continue
        key = id(node)
        if done:
            open_.discard(key)
            sizes[key] = 1 + sum(sizes.get(id(child), 1) for child in children)
            if sizes[key] > limit:
                raise DocumentError(
                    f"alias expansion exceeded the limit: the aliases expand to more than {limit:,} values"
                )
            continue
        if key in sizes:
            continue
        if key in open_:
            raise DocumentError(
                "alias expansion exceeded the limit: an alias refers to a value that contains it"
            )
        open_.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children)
