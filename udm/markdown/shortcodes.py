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

from udm.markdown.lines import ByteOffsets

__all__ = ["HugoRef", "find_refs", "markdown_shortcodes_alone", "opaque_shortcodes", "parse_ref"]

# Where a ref starts (`{{<` or `{{%`, then `ref` or `relref`); the rest is read by `_args`.
_START = re.compile(r"\{\{([<%])[ \t]*(?:rel)?ref(?=[ \t\r\n])")
# One parameter: `name=value` or a value. No value holds a brace or a line break, so reading one
# stops at the next shortcode: a page of unclosed refs is read in one pass.
_ARG = re.compile(
    r"""[ \t\r\n]*(?:([A-Za-z][A-Za-z0-9_]*)[ \t]*=[ \t]*)?"""
    r"""("(?:[^"\\\r\n{}]|\\[^\r\n]){0,2000}"|`[^`\r\n{}]{0,2000}`|[^ \t\r\n"`>%}{=]{1,2000})"""
)
_MAX_ARGS = 8
# A paired shortcode's opening tag longer than this is not read.
_MAX_LENGTH = 4096
# After the shortcode, a fragment written outside it: `]({{< ref "x" >}}#setup)`.
_FRAGMENT_AFTER = re.compile(r"#[^\s()\[\]<>\"'`{}]{0,500}")


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
    """The ref whose parameters start at `pos`, and where its closer ends (-1 when it is not a ref).

    One positional path (a second positional is the output format), or named `path`, `lang`,
    `outputFormat` (Hugo refuses the two kinds mixed).
    """
    positional: list[str] = []
    named: dict[str, str] = {}
    for _ in range(_MAX_ARGS + 1):
        end = pos
        while end < len(text) and text[end] in " \t\r\n":
            end += 1
        if text.startswith(closer, end):
            path = named.get("path", positional[0] if positional else None)
            if path is None or len(positional) > 2 or (positional and named):
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


def _ref_at(text: str, start: re.Match[str]) -> tuple[HugoRef | None, int]:
    """The ref whose start `_START` matched, a fragment written right after it included, and its end."""
    ref, end = _args(text, start.end(), ">}}" if start.group(1) == "<" else "%}}")
    if ref is None:
        return None, -1
    path = ref.path
    after = _FRAGMENT_AFTER.match(text, end)
    if after is not None and "#" not in path:
        path, end = path + after.group(), after.end()
    return HugoRef(path, ref.lang, relative="relref" in start.group()), end


def parse_ref(text: str) -> HugoRef | None:
    """The ref a whole shortcode text names (`{{< relref "a.md#b" lang="fr" >}}`, a fragment written
    after it too: `{{< ref "a.md" >}}#b`), else None."""
    inner = text.strip()
    m = _START.match(inner)
    if m is None:
        return None
    ref, end = _ref_at(inner, m)
    return ref if end == len(inner) else None


def find_refs(text: str) -> list[tuple[int, int, str]]:
    """(character offset, UTF-8 byte offset, shortcode text) of every ref in `text`, a fragment
    written right after it included; one pass (a parser's source maps are in bytes)."""
    if "ref" not in text or "{{" not in text:
        return []
    found: list[tuple[int, int, str]] = []
    offsets = ByteOffsets(text)
    for m in _START.finditer(text):
        ref, end = _ref_at(text, m)
        if ref is None:
            continue
        start = m.start()
        found.append((start, offsets.at(start), text[start:end]))
    return found


# A paired shortcode's opening (`{{< name args >}}`, `{{% name %}}`) and any closing (`{{< /name >}}`).
_OPEN = re.compile(r"\{\{([<%])[ \t]*([A-Za-z0-9_][\w./-]{0,200})(?=[ \t\r\n>%])")
_CLOSE = re.compile(r"\{\{([<%])[ \t]*/[ \t]*([A-Za-z0-9_][\w./-]{0,200})[ \t]*[>%]\}\}")


# A `{{% name ... %}}` shortcode alone on its line (not a closing one, not a ref).
_MARKDOWN_ALONE = re.compile(
    r"^[ \t]{0,3}\{\{%[ \t]*(?!/|(?:rel)?ref[ \t])([\w./-]{1,200})[^\n]*%\}\}[ \t]*$", re.M
)


def markdown_shortcodes_alone(text: str) -> list[int]:
    """The character offsets of the `{{% name %}}` shortcodes standing alone on a line and not paired
    (no `{{% /name %}}` anywhere): Hugo renders what their templates write as Markdown."""
    if "{{%" not in text:
        return []
    closed = {m.group(2) for m in _CLOSE.finditer(text)}
    return [m.start() for m in _MARKDOWN_ALONE.finditer(text) if m.group(1) not in closed]


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
        if kind == "raw" and "{{%" in src[inner : ends[i][0]]:
            # A `{{% %}}` shortcode inside is rendered as Markdown (dapr's `{{< tabs >}}` around its
            # `{{% codetab %}}`s): the text stays Markdown.
            continue
        out.append((inner, ends[i][0], kind))
        pos = ends[i][1]
    return out
