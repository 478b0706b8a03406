"""Python-Markdown's indented blocks on a MkDocs site: the bodies of admonitions (`!!! note`),
pymdownx.details (`??? tip`) and pymdownx.tabbed (`=== "Tab"`) are Markdown, so their links, fences
and headings count (conventions of Material for MkDocs and pydantic's docs, re-created here in
fixtures written by the test). Python-Markdown itself, with those extensions, is the reference."""

from __future__ import annotations

import re
import time
from pathlib import Path

import markdown
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from udm.config import Settings
from udm.markdown import parse_document
from udm.markdown.indented import MAX_DEPTH, unindent
from udm.patch import apply_patch, parse_patch
from udm.site import settings_site

from .conftest import link_verdicts, site_settings

ALL = ("!!!", "===", "???")
_EXTENSIONS = ["admonition", "pymdownx.details", "pymdownx.tabbed", "pymdownx.superfences"]
_HREF = re.compile(r'<(?:a href|img alt="[^"]*" src)="([^"]*)"')


def _reference(text: str) -> list[str]:
    """The targets Python-Markdown (with the MkDocs extensions) renders as links and images, in order."""
    return _HREF.findall(markdown.markdown(text, extensions=_EXTENSIONS))


def _ours(text: str, markers: tuple[str, ...] = ALL) -> list[str]:
    return [link.target for link in parse_document(text, "docs/p.md", indented=markers).links]


FIXTURES = {
    "blank line after the marker": '!!! note "Title"\n\n    Body [a](a.md).\n\n    Second [b](b.md).\n',
    "body right below the marker": "!!! warning\n    Body [a](a.md) and ![img](i.png).\n",
    "nested in a list item": "- item\n\n    !!! tip\n\n        In a list [a](a.md).\n",
    "nested blocks": (
        "!!! note\n\n    Outer [a](a.md).\n\n    ??? info\n\n        Inner [b](b.md).\n\n"
        '        === "Tab"\n\n            Deepest [c](c.md).\n'
    ),
    "tabs": '=== "One"\n\n    [a](a.md)\n\n=== "Two"\n\n    [b](b.md)\n',
    "details open": '???+ example "Open"\n    [a](a.md)\n',
    "a fence in a body": (
        "!!! example\n\n    ```md\n    [code](code.md) is shown, not linked\n    ```\n\n    [after](a.md)\n"
    ),
    "a marker inside a fence is an example": (
        "```md\n!!! note\n\n    [shown](shown.md)\n```\n\n[real](r.md)\n"
    ),
    "indented code inside a body": "!!! note\n\n    Text.\n\n        [code](code.md)\n",
    "a list in a body": "!!! note\n\n    - [a](a.md)\n    - [b](b.md)\n\n        [c](c.md) in the item\n",
    "tab-indented body": "!!! note\n\n\tTabbed [a](a.md).\n",
    "body ends where the indent ends": "!!! note\n\n    [a](a.md)\n\n[b](b.md)\n\n    [code](c.md)\n",
    "reference link defined in the body": "!!! note\n\n    See [a][x].\n\n    [x]: a.md\n",
    "a marker indented by less than four opens no block": (
        "  !!! note\n\n      [a](a.md)\n\n !!! note\n         Text [t](t.md)\n"
    ),
}


def test_links_in_the_bodies_agree_with_python_markdown() -> None:
    for name, text in FIXTURES.items():
        assert _ours(text) == _reference(text), name


def test_without_the_extensions_a_body_is_indented_code() -> None:
    text = FIXTURES["blank line after the marker"]
    assert _ours(text, ()) == []
    # Only the markers the site turns on open blocks.
    assert _ours(FIXTURES["tabs"], ("!!!",)) == []
    assert _ours(FIXTURES["tabs"], ("===",)) == ["a.md", "b.md"]


def test_lines_stay_the_files_lines() -> None:
    text = FIXTURES["nested blocks"]
    doc = parse_document(text, "docs/p.md", indented=ALL)
    lines = text.split("\n")
    for link in doc.links:
        assert f"]({link.target})" in lines[link.line]
    out = unindent(text, ALL)
    assert out.count("\n") == text.count("\n")


_WORD = st.sampled_from(["alpha", "beta", "gamma", "delta"])


def _paragraph(n: int) -> list[str]:
    return [f"Text [{n}](p{n}.md) more."]


@st.composite
def _blocks(draw: st.DrawFn, depth: int = 0) -> list[str]:
    """Lines of a few blocks: paragraphs with links, fences with link-like text, indented blocks."""
    out: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["para", "fence", "block"] if depth < 3 else ["para", "fence"]))
        if out:
            out.append("")
        if kind == "para":
            out += _paragraph(draw(st.integers(0, 99)))
        elif kind == "fence":
            out += ["```text", f"[code](c{draw(st.integers(0, 9))}.md)", "```"]
        else:
            marker = draw(
                st.sampled_from(
                    ["!!! note", '!!! tip "A title"', "??? info", '???+ warning "T"', '=== "Tab"']
                )
            )
            out.append(marker)
            if draw(st.booleans()):
                out.append("")
            out += ["    " + line if line else "" for line in draw(_blocks(depth + 1))]
    return out


@hsettings(max_examples=150, deadline=None)
@given(_blocks())
def test_any_nesting_agrees_with_python_markdown(lines: list[str]) -> None:
    text = "\n".join(lines) + "\n"
    assert _ours(text) == _reference(text)


def _site(tmp_path: Path, extensions: str) -> Settings:
    return site_settings(
        tmp_path,
        {
            "mkdocs.yml": f"site_name: S\nmarkdown_extensions:\n{extensions}",
            "docs/index.md": (
                "# Home\n\n"
                '!!! note "Read on"\n\n'
                "    The [guide](guide.md) and a [gone](missing.md) page.\n\n"
                '=== "Shell"\n\n'
                "    See [inner](guide.md#inside-a-tip) and [the example](#example).\n\n"
                "??? example\n\n"
                "    ``` { .sh #example }\n"
                "    make\n"
                "    ```\n"
            ),
            "docs/guide.md": "# Guide\n\n!!! tip\n\n    ## Inside a tip\n\n    Text.\n",
            # Outside docs_dir: GitHub shows it, where an indented body is code.
            "README.md": "# Readme\n\n!!! note\n\n    [not a link](nowhere.md)\n",
        },
    )


EXTENSIONS = "  - admonition\n  - pymdownx.details\n  - pymdownx.tabbed:\n      alternate_style: true\n"


def test_the_extensions_choose_the_markers(tmp_path: Path) -> None:
    cases = {
        EXTENSIONS: ("!!!", "===", "???"),
        "  - markdown.extensions.admonition\n": ("!!!",),
        "  admonition: {}\n  pymdownx.tabbed: {alternate_style: true}\n": ("!!!", "==="),
        "  - pymdownx.blocks.admonition\n  - toc\n": (),
    }
    for n, (extensions, markers) in enumerate(cases.items()):
        assert settings_site(_site(tmp_path / str(n), extensions)).indented == markers, extensions


def test_a_site_with_the_extensions_checks_the_links_in_its_blocks(tmp_path: Path) -> None:
    settings = _site(tmp_path, EXTENSIONS)
    verdicts = link_verdicts(settings)
    assert verdicts[("docs/index.md", "guide.md")] is True
    assert verdicts[("docs/index.md", "missing.md")] is False
    # A heading inside a block has an id; a fence's attribute list names one too.
    assert verdicts[("docs/index.md", "guide.md#inside-a-tip")] is True
    assert verdicts[("docs/index.md", "#example")] is True
    assert not any(f == "README.md" for f, _ in verdicts)
    from udm.index.lint_rules import lint

    broken = [f for f in lint(settings) if f.rule == "broken-link"]
    assert [(f.file, f.line) for f in broken] == [("docs/index.md", 5)]


def test_a_site_without_them_sees_code(tmp_path: Path) -> None:
    settings = _site(tmp_path, "  - toc\n")
    assert not any(f == "docs/index.md" for f, _ in link_verdicts(settings))


def test_a_patch_sees_the_blocks_as_the_index_does(tmp_path: Path) -> None:
    settings = _site(tmp_path, EXTENSIONS)
    page = tmp_path / "docs" / "config.md"
    page.write_text(
        "# Config\n\n## Server\n\n!!! example\n\n    ```yaml\n    server:\n      port: 80\n    ```\n",
        encoding="utf-8",
    )
    res = apply_patch(
        parse_patch(
            {
                "description": "port",
                "operations": [
                    {
                        "op": "set_yaml_key",
                        "file": "docs/config.md",
                        "section": "Server",
                        "key": "server.port",
                        "value": 8080,
                    }
                ],
            }
        ),
        settings,
    )
    assert res.status == "committed", res.error
    assert page.read_text(encoding="utf-8").endswith("    ```yaml\n    server:\n      port: 8080\n    ```\n")
    # The validator protects a link inside a block: removing the heading it names is refused.
    res = apply_patch(
        parse_patch(
            {
                "description": "drop",
                "operations": [{"op": "delete_section", "file": "docs/guide.md", "section": "Guide"}],
            }
        ),
        settings,
    )
    assert res.status == "invalid"
    assert "guide.md#inside-a-tip" in (res.error or ""), res.error


def test_crafted_nesting_and_openers_cost_little() -> None:
    # Nesting deeper than MAX_DEPTH is left as CommonMark reads it; the cost stays a few passes.
    depth = MAX_DEPTH + 8
    nested = "".join(" " * (4 * i) + "!!! note\n" for i in range(depth))
    text = nested + "\n".join(" " * (4 * depth) + "[x](y.md)" for _ in range(20_000)) + "\n"
    start = time.process_time()
    out = unindent(text, ALL)
    assert time.process_time() - start < 5
    assert out.count("\n") == text.count("\n")
    assert out.split("\n")[depth].startswith("> " * MAX_DEPTH)
    # Openers that almost match, on very long lines: one pass each.
    for line in ("!!! " + "a " * 100_000 + '"' + "x" * 50_000, "??? " + "a " * 100_000 + ' "x' * 50_000):
        start = time.process_time()
        assert unindent(line + "\n    body\n", ALL).endswith("    body\n")
        assert time.process_time() - start < 1
    # A fence's text is what the file holds, whatever markers it shows.
    fence = "```md\n!!! note\n\n    [shown](x.md)\n```\n"
    doc = parse_document(fence, "docs/p.md", indented=ALL)
    assert doc.blocks[0].text == "!!! note\n\n    [shown](x.md)\n"


TABS = (
    "# Tabs\n\n## Anchor links\n\n"
    '=== "First tab"\n\n    a\n\n=== "... or me"\n\n    b\n\n'
    '```md\n=== "Shown"\n```\n\n'
    '## Other {#custom}\n\n=== "Third"\n\n    c\n\n'
    # A repeated heading and repeated tab titles are numbered; a title's markup is not its text.
    "## Anchor links\n\n"
    '=== "pip"\n\n    p\n\n=== "_Rich_ `Docs` A &amp; B"\n\n    r\n\n=== "pip"\n\n    again\n\n'
    "[1](#anchor-links-first-tab) [2](#anchor-links--or-me) [3](#anchor-links-shown) [4](#first-tab)\n"
    "[5](#custom-third) [6](#third)\n"
)


def _tabbed_site(tmp_path: Path, options: str) -> Settings:
    return site_settings(
        tmp_path,
        {
            "mkdocs.yml": "site_name: S\nmarkdown_extensions:\n  - attr_list\n  - toc\n"
            f"  - pymdownx.tabbed:\n      alternate_style: true\n{options}",
            "docs/tabs.md": TABS,
        },
    )


SLUGIFY = (
    "      slugify: !!python/object/apply:pymdownx.slugs.slugify\n        kwds:\n          case: lower\n"
)


def test_tab_ids_follow_the_slugify_option(tmp_path: Path) -> None:
    combined = link_verdicts(_tabbed_site(tmp_path / "c", SLUGIFY + "      combine_header_slug: true\n"))
    assert {t: ok for (_, t), ok in combined.items()} == {
        "#anchor-links-first-tab": True,
        "#anchor-links--or-me": True,  # the title's slug starts with its separator
        "#anchor-links-shown": False,  # a tab shown in a fence is an example
        "#first-tab": False,
        "#custom-third": True,  # the heading's own id
        "#third": False,
    }
    alone = link_verdicts(_tabbed_site(tmp_path / "s", SLUGIFY))
    assert alone[("docs/tabs.md", "#first-tab")] is True and alone[("docs/tabs.md", "#third")] is True
    numbered = link_verdicts(_tabbed_site(tmp_path / "n", ""))
    assert numbered[("docs/tabs.md", "#first-tab")] is False


def test_tab_ids_are_the_ones_pymdownx_makes() -> None:
    from pymdownx.slugs import slugify

    from udm.site import Site
    from udm.site.anchors import page_anchors

    html = markdown.markdown(
        TABS,
        extensions=["attr_list", "toc", "pymdownx.superfences", "pymdownx.tabbed"],
        extension_configs={
            "pymdownx.tabbed": {
                "alternate_style": True,
                "slugify": slugify(case="lower"),
                "combine_header_slug": True,
            }
        },
    )
    made = set(re.findall(r'<input[^>]* id="([^"]+)"', html))
    # Rendered titles, numbered repeats of tabs and of the heading above them.
    assert {"anchor-links_1-pip", "anchor-links_1-pip_1", "anchor-links_1-rich-docs-a--b"} <= made
    site = Site(generator="mkdocs", indented=("===",), tab_ids="combined")
    assert made <= page_anchors(site, "tabs.md", TABS)[0]
