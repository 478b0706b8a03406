"""The parse's shortcuts find what the long way finds.

The scanner walks into a node only when its source holds a mark every link, image, autolink, HTML
tag or fence needs; the field scan tries `_FIELD_ANY` only at the starts of lines holding `**`. Here
both are compared with the plain way (every node walked; the regex's own scan) on generated text,
non-ASCII (byte offsets differ from character offsets) and MDX included.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from udm.markdown.definitions import _FIELD_ANY, _field_matches
from udm.markdown.lines import split_lines
from udm.markdown.scanner import _Where, parse_markdown

# Lines that make containers, links of every form, HTML, fences and plain prose, some non-ASCII.
LINE = st.sampled_from(
    [
        "plain words here\n",
        "café crème — naïve\n",
        "\n",
        "- item\n",
        "  - nested [x](a.md)\n",
        "1. first <https://example.org>\n",
        "> quote www.example.com and me@example.org\n",
        "| a | b |\n",
        "| --- | --- |\n",
        "| [t][r] | ![i](p.png) |\n",
        "[r]: target.md\n",
        "```\n",
        "~~~yaml\n",
        "  ```\n",
        "   - ```js\n",
        "> ```\n",
        "    indented [no](code.md)\n",
        '<a href="x.html">x</a>\n',
        "<div>\n",
        "`[in](code)` and https://x.org/path\n",
        "# Heading [h](h.md)\n",
        "text with [wrapped\n",
        "link](w.md) end\n",
        "Ünïcode [ü](ü.md) ✓\n",
        '<Card href="/guide" />\n',
        "import X from './x'\n",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(LINE, max_size=30), st.booleans())
def test_the_walk_finds_what_walking_every_node_finds(lines: list[str], mdx: bool) -> None:
    text = split_lines("".join(lines))
    shortcut = parse_markdown(text, 0, mdx=mdx)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_Where, "marked", lambda self, span: True)
        everything = parse_markdown(text, 0, mdx=mdx)
    assert shortcut == everything


# Field lines and near misses: indentation, bullets, `**ID:**` spelled in every way, IDs and noise.
FIELD_PART = st.sampled_from(
    ["**", "ID", ":", "`", "- ", "* ", " ", "\t", "\n", "\r", "*", "Task ", "COMP-001", "x", "é", "**ID:** "]
)
FIELD_TEXT = st.lists(FIELD_PART, max_size=40).map("".join)


@settings(max_examples=500, deadline=None)
@given(FIELD_TEXT)
def test_the_field_scan_equals_the_regex_scan(text: str) -> None:
    ours = [(m.start(), m.end(), m.group(1)) for m in _field_matches(text)]
    plain = [(m.start(), m.end(), m.group(1)) for m in _FIELD_ANY.finditer(text)]
    assert ours == plain
