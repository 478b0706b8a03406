"""Attacks on the Hugo shortcode change (commits 4071f45 and 2ee0def). Each test fails on that code.

The pages and templates are written by the test; every input is ordinary content a Hugo manual holds.
"""

from __future__ import annotations

import time
from pathlib import Path

from udm.config import load_settings
from udm.index.lint_rules import lint
from udm.markdown import parse_document
from udm.patch import apply_patch, parse_patch

from ..engine.conftest import site_settings
from ..engine.conftest import write_tree as _write

KINDS = (("code", "code"), ("highlight", "code"), ("raw", "raw"))


def test_a_long_line_in_a_highlighted_shortcode_does_not_make_the_page_unreadable() -> None:
    """A code/raw shortcode's inner text is blanked to spaces before the parse; a blanked line of more
    than ~2,000 characters (minified JSON, a long command, an inline SVG) then looks to the nesting guard
    like 1,000+ levels of indentation, and the whole page fails with MarkdownParseError: `udm lint`
    reports it as `unreadable-file` and the index loses its headings, IDs and links. The same page
    parsed fine before the change (and parses fine without the site's kinds)."""
    text = (
        "# API\n\n## Response\n\n{{< highlight json >}}\n"
        + '{"items":['
        + ",".join(['"item"'] * 300)
        + "]}\n"
        + "{{< /highlight >}}\n\n## Next\n"
    )
    assert [s.title for s in parse_document(text, "api.md").sections if s.level] == [
        "API",
        "Response",
        "Next",
    ]
    doc = parse_document(text, "api.md", shortcodes=KINDS)
    assert [s.title for s in doc.sections if s.level] == ["API", "Response", "Next"]


def test_a_raw_shortcodes_html_link_is_on_its_own_line_after_non_ascii_text() -> None:
    """`blank_spans` reports the href of a raw shortcode at a byte offset of the ORIGINAL text, but the
    parse (and `line_of`) runs on the blanked text, where each non-ASCII character became one space:
    every href after non-ASCII inner text is reported lines too late (here line 10, not 7) and sorts
    after links that follow it. Any non-English raw block shifts the lines lint and `udm links` print."""
    text = (
        "# P\n\n{{< raw >}}\n"
        + "Überschrift für die Seite, äöü äöü äöü äöü\n" * 3
        + '<a href="x.md">x</a>\n{{< /raw >}}\n\n[after](y.md)\n'
    )
    links = [(link.target, link.line) for link in parse_document(text, "p.md", shortcodes=KINDS).links]
    assert links == [("x.md", 6), ("y.md", 9)]


def test_moving_a_section_to_a_new_level_leaves_its_highlighted_code_alone(tmp_path: Path) -> None:
    """The workspace parses with the site's kinds, so section 'Build' includes its `{{< code >}}`
    block; but `move_section` with `level` re-levels the moved text with `relevel()`, which calls
    `parse_document(fragment)` WITHOUT the kinds: the shell comment `# install the deps` inside the
    highlighted block is taken for a heading and rewritten to `## install the deps`. The patch commits
    and silently changes the code sample (the validator, which parses with the kinds, sees no heading
    change)."""
    settings = site_settings(
        tmp_path,
        {
            "hugo.toml": 'baseURL = "https://fixture.example/"\n',
            "layouts/shortcodes/code.html": '<div>{{ highlight (trim .Inner "\\n") "bash" "" }}</div>\n',
            "content/tool.md": (
                "# Tool\n\n## Build\n\n{{< code >}}\n# install the deps\nmake deps\n{{< /code >}}\n\n"
                "## Usage\n\nRun it.\n"
            ),
        },
    )
    patch = parse_patch(
        {
            "description": "Build becomes a subsection of Usage",
            "operations": [
                {
                    "op": "move_section",
                    "file": "content/tool.md",
                    "section": "Build",
                    "to": "Usage",
                    "position": "after",
                    "level": 3,
                }
            ],
        }
    )
    res = apply_patch(patch, settings)
    text = (tmp_path / "content/tool.md").read_text(encoding="utf-8")
    if res.status == "committed":
        assert "\n# install the deps\n" in text, text


def test_ref_syntax_in_a_manual_that_is_no_hugo_site_is_no_broken_link(tmp_path: Path) -> None:
    """Refs are read in every Markdown page, whatever the generator: a manual with no Hugo config
    (plain, MkDocs, Docusaurus) that mentions the syntax in prose now fails `udm lint` with a
    broken-link error for text no renderer makes a link. Before the change it passed."""
    (tmp_path / ".git").mkdir()
    _write(
        tmp_path,
        {"udm/index.md": '# Home\n\nHugo pages write {{< ref "install.md" >}} to link a page.\n'},
    )
    settings = load_settings(cwd=tmp_path, root="udm", state_dir=tmp_path / ".udm-state")
    assert [(f.rule, f.line) for f in lint(settings) if f.rule == "broken-link"] == []


def test_ref_scanning_stays_close_to_the_parse_in_time() -> None:
    """`find_refs` re-reads a 4,096-character window from EVERY `{{<ref`/`{{%ref` start, and an
    unterminated escaped string makes each read ~2,000 regex steps with backtracking: ~15-20 s per MB
    (the parse of 1 MB of prose takes ~0.05 s). A 3.9 MB page (under max_file_bytes) made `udm lint`
    take 58 s instead of 3 s, in any manual (not only Hugo ones), on every parse of the page."""
    text = "# Big\n\n" + '{{%ref \\"' * 40_000 + "\n"  # 400 kB
    started = time.perf_counter()
    parse_document(text, "big.md")
    assert time.perf_counter() - started < 2.0
