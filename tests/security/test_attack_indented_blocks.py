"""Attack on the rewrite of MkDocs' indented blocks (`udm.markdown.indented`): a page is text anyone
with write access controls. Whatever it holds, the rewrite keeps the file's lines, a parse either
works or names the line it refuses, and crafted markers cost a bounded amount of time."""

from __future__ import annotations

import time

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from udm.markdown import MarkdownParseError, parse_document
from udm.markdown.indented import unindent

from ..engine.conftest import cpu_seconds

ALL = ("!!!", "===", "???")
# The characters the markers, titles, fences, containers and links are made of.
_ALPHABET = st.sampled_from(
    [
        " ",
        "    ",
        "\t",
        "\n",
        "!!! ",
        "??? ",
        "???+",
        '=== "',
        '"',
        "note",
        "`",
        "```",
        "~~~",
        ">",
        "- ",
        "1. ",
        "[a](b.md)",
        "<",
        "\r\n",
        "\ufeff",
        "é",
    ]
)


@hsettings(max_examples=300, deadline=None)
@given(st.lists(_ALPHABET, max_size=80).map("".join))
def test_any_text_keeps_its_lines_and_parses_or_says_where(text: str) -> None:
    src = text.replace("\r\n", "\n")
    out = unindent(src, ALL)
    assert out.count("\n") == src.count("\n")
    try:
        doc = parse_document(text, "docs/p.md", indented=ALL)
    except MarkdownParseError as exc:
        assert "docs/p.md:" in str(exc)
        return
    for link in doc.links:
        assert 0 <= link.line < max(len(doc.lines), 1)
    for block in doc.blocks:
        assert 0 <= block.start < block.end <= len(doc.lines)


def test_deep_nesting_is_refused_with_its_line_not_a_crash() -> None:
    # 600 blocks, each four columns deeper: what is left past the rewrite's depth is as deep as the
    # file was, and the parser's own limit names the line.
    text = "".join(" " * (4 * i) + "!!! note\n" for i in range(600)) + " " * 2400 + "[x](y.md)\n"
    try:
        parse_document(text, "docs/deep.md", indented=ALL)
    except MarkdownParseError as exc:
        assert str(exc).startswith("docs/deep.md:601:")
    else:
        raise AssertionError("a page nested 1,200 containers deep parsed")


def test_many_blocks_cost_linear_time() -> None:
    def seconds(n: int) -> float:
        text = '!!! note "t"\n\n    [a](b.md)\n\n' * n
        docs = []
        seconds = cpu_seconds(lambda: docs.append(parse_document(text, "docs/p.md", indented=ALL)))
        assert len(docs[0].links) == n
        return seconds

    small, large = seconds(5_000), seconds(40_000)
    assert large < 8 * small * 2.5, (small, large)


def test_an_unclosed_fence_hides_the_rest_as_commonmark_does() -> None:
    text = "```\n!!! note\n\n    [a](a.md)\n"
    assert parse_document(text, "docs/p.md", indented=ALL).links == []


def test_crafted_id_forms_are_read_in_linear_time() -> None:
    from udm.site import explicit_anchors

    for unit in ("{#", "{/*", "<!--", 'id="', "{ #", "`<!--` "):
        text = unit * 20_000 + '\n<a id="end"></a>\n'
        start = time.process_time()
        explicit_anchors(text)
        assert time.process_time() - start < 2, unit
