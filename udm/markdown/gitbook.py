"""GitBook's blocks that link: what a page synced from GitBook writes as `{% embed url="..." %}` (an
embedded page or video, shown as a card that links to it), `{% content-ref url="page.md" %}` (a card
linking to a page of the space) and `{% file src="..." %}` (a file to download).

CommonMark reads such a block as text, and GitHub shows it so; on the GitBook site each is a link a
reader clicks. `find_gitbook_links` finds their destinations. GitBook writes a content-ref's link
twice, as the tag's `url` and as a Markdown link inside the block: the second is the one reported.
"""

from __future__ import annotations

import bisect
import re

__all__ = ["find_gitbook_links"]

# The whole tag: its name, its attributes (quoted values: GitBook writes `fullWidth="false"`), the
# one that links among them, and its closing `%}` (an unclosed tag is text). Each attribute is read
# one way (a name, `=`, a quoted value on the line), so a line of thousands of unclosed tags costs a
# bounded scan each.
_ATTR = r"""[A-Za-z][\w-]{0,50}=(?:"[^"\n]{0,2000}"|'[^'\n]{0,2000}')"""
_TAG = re.compile(
    rf"""\{{%-?[ \t]*(embed|content-ref|file)[ \t]+(?:{_ATTR}[ \t]+){{0,20}}?"""
    r"""(url|src)=(?:"([^"\n]{1,2000})"|'([^'\n]{1,2000})')"""
    rf"""(?:[ \t]+{_ATTR}){{0,20}}[ \t]*-?%\}}"""
)
_END_CONTENT_REF = re.compile(r"\{%-?[ \t]*endcontent-ref[ \t]*-?%\}")


def find_gitbook_links(src: str) -> list[tuple[int, str, str, int]]:
    """(index of the destination, tag name, destination, index where the block's body ends) of each
    GitBook block that links, in text order. The body's end is a content-ref's `{% endcontent-ref %}`
    (the tag's own end for the others, or with none: then nothing inside it is a second link)."""
    if "{%" not in src:
        return []
    ends = [m.start() for m in _END_CONTENT_REF.finditer(src)] if "endcontent-ref" in src else []
    found: list[tuple[int, str, str, int]] = []
    for m in _TAG.finditer(src):
        value = m.group(3) if m.group(3) is not None else m.group(4)
        at = m.start(3) if m.group(3) is not None else m.start(4)
        end = m.end()
        if m.group(1) == "content-ref":
            i = bisect.bisect_left(ends, end)
            end = ends[i] if i < len(ends) else end
        if value.strip():
            found.append((at, m.group(1), value.strip(), end))
    return found
