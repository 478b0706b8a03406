"""Hugo's `ref` and `relref` shortcodes: the links a Hugo page writes as `[t]({{< ref "p.md#a" >}})`.

Hugo expands shortcodes before Markdown sees the text, so a ref is a link wherever it is written (a
link destination, an HTML attribute, plain text); Markdown would not parse `({{< ref "x" >}})` as a
link destination at all (it holds spaces). The escaped form `{{</* ref "x" */>}}` shows the syntax
without running it. Parameters are Hugo's: one positional path, or named `path`, `lang` and
`outputFormat`, each quoted with `"` (backslash escapes), with backticks (raw), or bare.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["HugoRef", "find_refs", "parse_ref"]

# Where a ref starts (`{{<` or `{{%`, then `ref` or `relref`); the rest is read by `_args`.
_START = re.compile(r"\{\{([<%])[ \t]*(?:rel)?ref(?=[ \t\r\n])")
_START_BYTES = re.compile(rb"\{\{([<%])[ \t]*(?:rel)?ref(?=[ \t\r\n])")
# One parameter: `name=value` or a value; each alternative is bounded, so the scan is linear.
_ARG = re.compile(
    r"""[ \t\r\n]*(?:([A-Za-z][A-Za-z0-9_]*)[ \t]*=[ \t]*)?"""
    r"""("(?:[^"\\\r\n]|\\.){0,2000}"|`[^`]{0,2000}`|[^ \t\r\n"`>%}=]{1,2000})"""
)
_MAX_ARGS = 8
# A shortcode is one tag: a ref longer than this is not read (no page path is that long).
_MAX_LENGTH = 4096


@dataclass(frozen=True, slots=True)
class HugoRef:
    """One `ref`/`relref` call: the page path (with any `#fragment`) and the language asked for."""

    path: str
    lang: str | None = None
    relative: bool = False  # relref (a URL relative to the site) rather than ref (a permalink)


def _value(token: str) -> str:
    if token.startswith('"'):
        return re.sub(r"\\(.)", r"\1", token[1:-1])
    if token.startswith("`"):
        return token[1:-1]
    return token


def _args(text: str, pos: int, closer: str) -> tuple[HugoRef | None, int]:
    """The ref whose parameters start at `pos`, and where its closer ends (-1 when it is not a ref)."""
    positional: list[str] = []
    named: dict[str, str] = {}
    for _ in range(_MAX_ARGS + 1):
        end = pos
        while end < len(text) and text[end] in " \t\r\n":
            end += 1
        if text.startswith(closer, end):
            path = named.get("path", positional[0] if positional else None)
            if path is None or len(positional) > 1:
                return None, -1
            return HugoRef(path, named.get("lang")), end + len(closer)
        m = _ARG.match(text, pos)
        if m is None:
            return None, -1
        if m.group(1):
            named[m.group(1)] = _value(m.group(2))
        else:
            positional.append(_value(m.group(2)))
        pos = m.end()
    return None, -1


def parse_ref(text: str) -> HugoRef | None:
    """The ref a whole shortcode text names (`{{< relref "a.md#b" lang="fr" >}}`), else None."""
    m = _START.match(text.strip())
    if m is None:
        return None
    inner = text.strip()
    ref, end = _args(inner, m.end(), ">}}" if m.group(1) == "<" else "%}}")
    if ref is None or end != len(inner):
        return None
    return HugoRef(ref.path, ref.lang, relative="relref" in inner[: m.end()])


def find_refs(data: str | bytes) -> list[tuple[int, int, str]]:
    """(start, end, shortcode text) of every ref in `data`; offsets in `data`'s own units (characters
    of a str, bytes of UTF-8 bytes), so a parser's byte source maps apply to bytes."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    if "ref" not in text or "{{" not in text:
        return []
    found: list[tuple[int, int, str]] = []
    if isinstance(data, bytes):
        for start in (m.start() for m in _START_BYTES.finditer(data)):
            window = data[start : start + _MAX_LENGTH].decode("utf-8", "replace")
            got = _one(window)
            if got is not None:
                found.append((start, start + len(window[:got].encode("utf-8")), window[:got]))
    else:
        for start in (m.start() for m in _START.finditer(text)):
            window = text[start : start + _MAX_LENGTH]
            got = _one(window)
            if got is not None:
                found.append((start, start + got, window[:got]))
    return found


def _one(window: str) -> int | None:
    """The length of the ref shortcode at the start of `window`, or None when it is not a whole one."""
    m = _START.match(window)
    if m is None:
        return None
    ref, end = _args(window, m.end(), ">}}" if m.group(1) == "<" else "%}}")
    return end if ref is not None else None


# A paired shortcode's opening (`{{< name args >}}`, `{{% name %}}`) and any closing (`{{< /name >}}`).
_OPEN = re.compile(r"\{\{([<%])[ \t]*([A-Za-z0-9_][\w./-]{0,200})(?=[ \t\r\n>%])")
_CLOSE = re.compile(r"\{\{([<%])[ \t]*/[ \t]*([A-Za-z0-9_][\w./-]{0,200})[ \t]*[>%]\}\}")


def opaque_shortcodes(src: str, kinds: tuple[tuple[str, str], ...]) -> list[tuple[int, int, str]]:
    """(start, end, kind) of the inner text of each paired shortcode that is no Markdown.

    `kinds` names them (`udm.site` reads the site's templates): "code" is never Markdown; "raw"
    only with `{{< >}}`, since `{{% %}}` hands the template's output to the Markdown renderer.
    Offsets are characters of `src`; the scan is linear (closings are found once, by name).
    """
    if not kinds or "{{" not in src:
        return []
    kind_of = dict(kinds)
    closings: dict[str, list[tuple[int, int]]] = {}
    for m in _CLOSE.finditer(src):
        if m.group(2) in kind_of:
            closings.setdefault(m.group(2), []).append((m.start(), m.end()))
    if not closings:
        return []
    taken = dict.fromkeys(closings, 0)  # the first closing of each name not yet passed
    out: list[tuple[int, int, str]] = []
    pos = 0
    for m in _OPEN.finditer(src):
        name, delim = m.group(2), m.group(1)
        kind = kind_of.get(name)
        if m.start() < pos or kind is None or name not in closings or (kind == "raw" and delim == "%"):
            continue
        closer = ">}}" if delim == "<" else "%}}"
        tag_end = src.find(closer, m.end(), m.end() + _MAX_LENGTH)
        if tag_end < 0 or src[tag_end - 1] == "/":
            continue  # unclosed, or self-closing (`{{< name />}}`)
        inner = tag_end + len(closer)
        ends = closings[name]
        i = taken[name]
        while i < len(ends) and ends[i][0] < inner:
            i += 1
        taken[name] = i
        if i == len(ends):
            continue
        out.append((inner, ends[i][0], kind))
        pos = ends[i][1]
    return out
