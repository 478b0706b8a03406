"""Key edits of YAML texts: a ruamel round trip set up for the text's own indentation, merged back so only
the edited lines change, and a one-line splice for a scalar in a flat block."""

from __future__ import annotations

import io
import itertools
import re
import threading
from typing import Any

from udm.datalimits import check_alias_expansion, check_yaml
from udm.errors import DocumentError, TargetNotFoundError
from udm.patch.keypath import TOO_DEEP, Action, KeyPath, SerializationError, apply_edit, format_key_path
from udm.patch.splice import merge_minimal

__all__ = ["detect_yaml_indent", "edit_yaml", "yaml_for", "yaml_load"]


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


def yaml_for(text: str) -> Any:
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


def yaml_load(text: str, yaml: Any) -> Any:
    """The one YAML document of the text (None when empty); DocumentError when it does not parse or is too deep."""
    from ruamel.yaml.error import YAMLError

    # ruamel's composer recurses per level: the depth is measured first, without recursion.
    check_yaml(text, what="YAML", ruamel=True)
    try:
        docs = list(yaml.load_all(text))
    except YAMLError as exc:
        raise DocumentError(f"YAML does not parse: {' '.join(str(exc).split())}") from exc
    except RecursionError as exc:
        _forget_yaml(yaml)  # as in `_yaml_dump`: never reuse an instance stopped midway
        raise DocumentError(TOO_DEEP.format(what="YAML")) from exc
    except (ValueError, OverflowError) as exc:
        # A value the grammar allows but Python cannot make: `date: 2001-02-30`, 5,000 digits.
        _forget_yaml(yaml)
        raise DocumentError(f"YAML does not parse: {' '.join(str(exc).split())[:200]}") from exc
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


def edit_yaml(text: str, tokens: KeyPath, action: Action, value: Any) -> str:
    """The YAML text after one key edit: a one-line splice where it gives the same, else the round trip."""
    spliced = _splice_yaml_scalar(text, tokens, action, value)
    return spliced if spliced is not None else _edit_yaml_round_trip(text, tokens, action, value)


def _edit_yaml_round_trip(text: str, tokens: KeyPath, action: Action, value: Any) -> str:
    yaml = yaml_for(text)
    data = yaml_load(text, yaml)
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
    data = apply_edit(data, tokens, action, value, _yaml_wrap)
    try:
        modified = _yaml_dump(data, yaml)
    except Exception as exc:  # ruamel raises several unrelated types for values it cannot represent
        raise SerializationError(f"value {value!r} cannot be written as YAML: {exc}") from exc
    if not baseline:
        # Only comments (or nothing) before: keep them and add the new mapping below.
        return (text if not text or text.endswith("\n") else text + "\n") + modified
    return merge_minimal(text, baseline, modified)
