"""Field lines found through the `**` prefilter are exactly those a scan of every line finds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from udm.index.datarows import _field_values, _starred_lines
from udm.markdown import parse_document

_LINES = st.sampled_from(
    [
        "# Tool: `alpha`\n",
        "## Section two\n",
        "- **Name:** `beta`\n",
        '* **description**: "does things"\n',
        "+ **`input schema`** plain\n",
        "text with ** stars ** inside\n",
        "*\n",
        "*not bold*\n",
        "```\n",
        "- **ID:** `COMP-001`\r\n",
        "\u2028**x**: y\n",
        "\n",
    ]
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_LINES, max_size=30))
def test_starred_prefilter_finds_the_same_fields(lines: list[str]) -> None:
    doc = parse_document("".join(lines), "t.md")
    starred = _starred_lines(doc)
    assert starred == sorted(set(starred))
    for section in doc.sections:
        assert _field_values(doc, section, starred) == _field_values(doc, section)
