"""Jekyll's Liquid links: what a Jekyll page writes as `[t]({{ '/docs/x/' | relative_url }})`,
`[t]({{ site.baseurl }}/docs/x/)`, `[t]({% link _docs/x.md %})` or `[t]({% post_url 2024-01-02-x %})`.

Jekyll renders Liquid before Markdown sees the text, so such a destination is a link on the site, but
CommonMark reads none where the Liquid holds a space (`({{ '/x' | relative_url }})`), nor a reference
definition. `find_liquid_links` finds those destinations; `liquid_target` says what one names: a URL
of the site (`relative_url`, `absolute_url`, `prepend: site.baseurl`, `site.baseurl` before a path), a
source file (`link`, whose missing file fails Jekyll's build) or a post (`post_url`). Anything else
in Liquid (a variable, another filter) is computed at build time: no target.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

__all__ = ["LiquidTarget", "find_liquid_links", "liquid_target", "raw_spans"]

# One Liquid output (`{{ ... }}`) or tag (`{% ... %}`) on one line; no brace inside, so a page of
# unclosed ones is read in one pass.
_PIECE = r"\{\{[^{}\n]{0,500}\}\}|\{%[^{}\n]{0,500}%\}"
# A destination that starts with Liquid, then Liquid or URL characters (no space, bracket or brace).
_DEST = rf"(?:{_PIECE})(?:{_PIECE}|[^\s(){{}}<>\\])*"
_TITLE = r"""(?:[ \t]+(?:"[^"\n]{0,500}"|'[^'\n]{0,500}'|\([^()\n]{0,500}\)))?"""
# `](DEST)`, `](<DEST>)`, with an optional title; a reference definition `[label]: DEST`.
_INLINE = re.compile(rf"\]\([ \t]*(<?)({_DEST})>?{_TITLE}[ \t]*\)")
_DEFINITION = re.compile(rf"^[ ]{{0,3}}\[[^\]\n]{{1,999}}\]:[ \t]*<?({_DEST})>?", re.M)

# `{{ site.baseurl }}`, `{{ site.url }}`: the site's own prefix, dropped (routes are read from the root).
_SITE_PREFIX = re.compile(r"\{\{-?\s*site\.(?:baseurl|url)\s*-?\}\}")
# `{{ 'path' | relative_url }}` (or `absolute_url`, or `prepend: site.baseurl`, or no filter).
_LITERAL = re.compile(
    r"""\{\{-?\s*(['"])([^'"\n]{0,500})\1\s*"""
    r"""((?:\|\s*(?:relative_url|absolute_url|prepend:\s*site\.baseurl)\s*)?)-?\}\}"""
)
# `{% link path %}` and `{% post_url name %}` with one literal argument (a variable is not read).
_TAG = re.compile(r"\{%-?\s*(link|post_url)\s+([^\s{}%'\"]{1,500})\s*-?%\}")


_RAW = re.compile(r"\{%-?\s*raw\s*-?%\}")
_ENDRAW = re.compile(r"\{%-?\s*endraw\s*-?%\}")
_MAX_RAW = 10_000


@dataclass(frozen=True, slots=True)
class LiquidTarget:
    """What a Liquid destination names: `url` (a path of the site, from its root, with any fragment),
    `link` (a source file from the site's folder) or `post_url` (a post's name); `fragment` for the last
    two (written after the tag), or None."""

    kind: str
    value: str
    fragment: str | None = None


def find_liquid_links(src: str) -> list[tuple[int, int, str]]:
    """(index of the link's `]` or the definition's start, index of its destination, destination) of the
    Markdown destinations that start with Liquid, inline links' and reference definitions', in the
    order of their destinations."""
    if "{{" not in src and "{%" not in src:
        return []
    found = [(m.start(), m.start(2), m.group(2)) for m in _INLINE.finditer(src)]
    # A definition whose Liquid holds no space is CommonMark's own: its references are the links.
    found += [(m.start(), m.start(1), m.group(1)) for m in _DEFINITION.finditer(src) if " " in m.group(1)]
    found.sort(key=lambda hit: hit[1])
    raw = raw_spans(src)
    if raw:
        # Liquid between `{% raw %}` and `{% endraw %}` is shown as written: no link is made of it.
        starts = [start for start, _ in raw]
        found = [hit for hit in found if not _inside(raw, starts, hit[1])]
    return found


def _inside(spans: list[tuple[int, int]], starts: list[int], at: int) -> bool:
    i = bisect.bisect_right(starts, at) - 1
    return i >= 0 and spans[i][0] <= at < spans[i][1]


def raw_spans(src: str) -> list[tuple[int, int]]:
    """The (start, end) indexes of the text between each `{% raw %}` and its `{% endraw %}` (to the end
    of the text when one is not closed, as Jekyll fails the build then)."""
    spans: list[tuple[int, int]] = []
    pos = 0
    while len(spans) < _MAX_RAW and (opening := _RAW.search(src, pos)) is not None:
        closing = _ENDRAW.search(src, opening.end())
        end = closing.start() if closing else len(src)
        spans.append((opening.end(), end))
        if closing is None:
            break
        pos = closing.end()
    return spans


def liquid_target(text: str) -> LiquidTarget | None:
    """What the destination `text` names once Jekyll renders it, or None when Liquid computes it."""
    rest = text.strip()
    prefixed = False
    while (m := _SITE_PREFIX.match(rest)) is not None:
        rest, prefixed = rest[m.end() :], True
    tag = _TAG.match(rest)
    if tag is not None:
        after = rest[tag.end() :]
        if (after and not after.startswith("#")) or "{" in after:
            return None
        return LiquidTarget(tag.group(1), tag.group(2), after[1:] if after else None)
    literal = _LITERAL.match(rest)
    if literal is not None:
        if (not literal.group(3) and not prefixed) or ":" in literal.group(2):
            return None  # `{{ 'x' }}`: a string, no URL filter; a URL stays as it is (not checked)
        rest = "/" + literal.group(2).lstrip("/") + rest[literal.end() :]
    elif not prefixed:
        return None
    if "{{" in rest or "{%" in rest or ":" in rest.partition("#")[0] or rest.startswith("//"):
        return None
    return LiquidTarget("url", rest if rest.startswith("/") else "/" + rest)
