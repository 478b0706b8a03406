"""Hugo's paired shortcodes whose inner text is no Markdown (kind's `{{< codeFromInline >}}`, Hugo's
`{{< highlight >}}`, a site's `{{< comment >}}`): how the site's templates use the inner text decides
whether it is parsed as Markdown, so a `# comment` in highlighted code is no heading.

Each fixture is written by the test, re-creating the conventions found on public Hugo sites.
"""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from udm.index import UdmIndex
from udm.index.lint_rules import lint
from udm.markdown import parse_document
from udm.markdown.shortcodes import opaque_shortcodes
from udm.patch import apply_patch, parse_patch
from udm.site.routes import detect_site

from .conftest import link_verdicts, site_settings
from .conftest import write_tree as _write

KINDS = (("code", "code"), ("highlight", "code"), ("raw", "raw"))

TEMPLATES = {
    "hugo.toml": 'baseURL = "https://fixture.example/"\ntheme = "t"\n',
    # Highlights its inner text (kind's codeFromInline does so inside a table).
    "layouts/shortcodes/code.html": '<table><tr><td>{{ highlight (trim .Inner "\\n") "bash" "" }}</td></tr></table>\n',
    "layouts/shortcodes/md.html": '<div class="md">{{ .Inner | markdownify }}</div>\n',
    "layouts/shortcodes/note.html": "<aside>{{ .Inner | .Page.RenderString }}</aside>\n",
    "layouts/shortcodes/raw.html": "<div>{{ .Inner }}</div>\n",
    "layouts/shortcodes/docs/box.en.html": "<pre>{{ .Inner }}</pre>\n",
    "layouts/shortcodes/alone.html": "<span>{{ .Get 0 }}</span>\n",
    # Handed to a partial (Hugo's docs' deprecated-in renders it there with RenderString): Markdown.
    "layouts/shortcodes/badge.html": '{{ partial "badge.html" (dict\n  "inner" (strings.TrimSpace $.Inner)) }}\n',
    # Both written out and handed on: not known, Markdown.
    "layouts/shortcodes/mixed.html": "{{ .Inner }}{{ $x := .Inner | upper }}\n",
    # The theme's note writes its text out raw; the site's own note template wins.
    "themes/t/layouts/shortcodes/note.html": "{{ .Inner }}\n",
    "themes/t/layouts/_shortcodes/comment.html": "{{ $_ := .Inner }}\n",
}


def test_the_templates_say_which_shortcodes_hold_no_markdown(tmp_path: Path) -> None:
    _write(tmp_path, TEMPLATES)
    assert detect_site(tmp_path, stop=tmp_path).shortcodes == (
        ("code", "code"),
        ("comment", "raw"),
        ("docs/box", "code"),
        ("highlight", "code"),
        ("raw", "raw"),
    )


def _headings(text: str, kinds: tuple[tuple[str, str], ...] = KINDS) -> list[str]:
    return [s.title for s in parse_document(text, "p.md", shortcodes=kinds).sections if s.level]


def test_code_and_raw_inner_text_is_no_markdown() -> None:
    text = (
        "# Page\n\n"
        '{{< code lang="bash" >}}\n# install it\nmake\n{{< /code >}}\n\n'
        "{{% highlight bash %}}\n## build\n{{% /highlight %}}\n\n"
        '{{< raw >}}\n# not rendered\n<a href="/kept/">kept</a> [no](link.md)\n{{< /raw >}}\n\n'
        "{{% raw %}}\n## Rendered by Markdown\n{{% /raw %}}\n\n"
        "{{< other >}}\n## Unknown template, Markdown\n{{< /other >}}\n\n"
        "{{< code />}}\n## After a self-closing one\n\n"
        "{{< code >}}\n## Never closed\n"
    )
    assert _headings(text) == [
        "Page",
        "Rendered by Markdown",
        "Unknown template, Markdown",
        "After a self-closing one",
        "Never closed",
    ]
    links = [
        (link.target, link.form, link.line) for link in parse_document(text, "p.md", shortcodes=KINDS).links
    ]
    assert links == [("/kept/", "html", 13)]
    # Without the site's kinds the page parses as before.
    assert "install it" in _headings(text, ())


def test_lines_and_non_ascii_text_keep_their_places() -> None:
    text = "# Ü\n\n{{< code >}}\n# ü ä ö\n{{< /code >}}\n\n## Später\n[x](y.md)\n"
    doc = parse_document(text, "p.md", shortcodes=KINDS)
    assert [(s.title, s.start) for s in doc.sections if s.level] == [("Ü", 0), ("Später", 6)]
    assert [(link.target, link.line) for link in doc.links] == [("y.md", 7)]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='{}<>%/# \nabcoderaw"ü', max_size=400))
def test_any_text_parses_with_the_same_lines(text: str) -> None:
    spans = opaque_shortcodes(text, KINDS)
    for start, end, _kind in spans:
        assert 0 <= start <= end <= len(text)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    doc = parse_document(text, "p.md", shortcodes=KINDS)
    assert len(doc.lines) == len(parse_document(text, "p.md").lines)


def test_a_crafted_template_is_classified_in_linear_time(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {**TEMPLATES, "layouts/shortcodes/big.html": "{{ partial dict " * 10_000 + "}}\n{{ .Inner }}"},
    )
    started = time.perf_counter()
    assert ("big", "raw") in detect_site(tmp_path, stop=tmp_path).shortcodes
    assert time.perf_counter() - started < 5


def test_many_unclosed_shortcodes_read_in_linear_time() -> None:
    for text in (
        "{{< code >}}\n" * 40_000 + "{{< /code >}}\n",
        "{{< code " * 40_000,
        "{{< /code >}}" * 40_000,
    ):
        started = time.perf_counter()
        opaque_shortcodes(text, KINDS)
        parse_document(text, "p.md", shortcodes=KINDS)
        assert time.perf_counter() - started < 5


def test_lint_sees_no_heading_in_code(tmp_path: Path) -> None:
    settings = site_settings(
        tmp_path,
        {
            **TEMPLATES,
            "content/docs/setup.md": (
                "# Setup\n\n## Install\n\n{{< code >}}\n#### the script\n./install.sh\n{{< /code >}}\n\n"
                "[usage](#usage) [script](#the-script)\n\n## Usage\n\nRun it.\n"
            ),
        },
    )
    found = {(f.rule, f.line) for f in lint(settings)}
    assert ("heading-skip", 6) not in found
    assert ("broken-anchor", 10) in found  # the code's comment makes no anchor
    assert link_verdicts(settings)[("content/docs/setup.md", "#usage")] is True


def test_a_template_change_reparses_the_pages(tmp_path: Path) -> None:
    settings = site_settings(
        tmp_path, {**TEMPLATES, "content/a.md": "# A\n\n{{< raw >}}\n## Inside\n{{< /raw >}}\n"}
    )

    def titles() -> list[str]:
        index = UdmIndex(settings)
        try:
            index.ensure_fresh()
            with index.connect() as con:
                return [
                    r[0] for r in con.execute("SELECT title FROM sections ORDER BY start_line").fetchall()
                ]
        finally:
            index.close()

    assert "Inside" not in titles()
    template = tmp_path / "layouts/shortcodes/raw.html"
    template.write_text("<div>{{ .Inner | markdownify }}</div>\n", encoding="utf-8")
    os.utime(template, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    assert "Inside" in titles()


def test_a_patch_sees_the_sections_the_index_sees(tmp_path: Path) -> None:
    page = "# Tool\n\n## Usage\n\n{{< highlight bash >}}\n# install\nmake\n{{< /highlight >}}\n\n## Next\n\nDone.\n"
    settings = site_settings(tmp_path, {**TEMPLATES, "content/tool.md": page})
    patch = parse_patch(
        {
            "description": "note",
            "operations": [
                {
                    "op": "append_to_section",
                    "file": "content/tool.md",
                    "section": "Usage",
                    "content": "See also make.",
                }
            ],
        }
    )
    res = apply_patch(patch, settings)
    assert res.status == "committed", res.error
    text = (tmp_path / "content/tool.md").read_text(encoding="utf-8")
    assert text.index("{{< /highlight >}}") < text.index("See also make.") < text.index("## Next")


def test_a_theme_outside_the_site_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "layouts" / "shortcodes"
    outside.mkdir(parents=True)
    (outside / "sneaky.html").write_text("{{ .Inner }}\n", encoding="utf-8")
    site = tmp_path / "site"
    _write(
        site, {"hugo.toml": 'baseURL = "/"\ntheme = ["linked", "../../elsewhere"]\n', "content/a.md": "# A\n"}
    )
    (site / "themes").mkdir()
    (site / "themes" / "linked").symlink_to(tmp_path / "elsewhere")
    assert detect_site(site, stop=site).shortcodes == (("comment", "raw"), ("highlight", "code"))


def test_anchors_a_shortcode_renders_are_unknown_not_broken(tmp_path: Path) -> None:
    from udm.index.links import check_links

    settings = site_settings(
        tmp_path,
        {
            **TEMPLATES,
            # Hugo's docs: a page's last section comes from another file; kind's: a file read into a fence.
            "content/store.md": '# Store\n\nSee [scope](#scope).\n\n{{% include "_common/scope.md" %}}\n',
            "content/ingress.md": '# Ingress\n\n[setup](#setting-up)\n\n```yaml\n{{% readFile "x.yaml" %}}\n```\n',
            "content/tabs.md": "# Tabs\n\n[missing](#nowhere)\n\n{{% tab %}}\nText.\n{{% /tab %}}\n",
        },
    )
    verdicts = link_verdicts(settings)
    assert verdicts[("content/store.md", "#scope")] is None
    assert verdicts[("content/ingress.md", "#setting-up")] is False  # the fence's output is code
    assert verdicts[("content/tabs.md", "#nowhere")] is False  # a paired shortcode is the page's own text
    report = check_links(settings, external=False)
    skipped = [r.reason for r in report.results if r.target == "#scope"]
    assert skipped == ["#scope is not known: content/store.md has headings only its site's templates render"]


def test_terms_and_headings_share_numbered_ids(tmp_path: Path) -> None:
    # Hugo's deployment page: the term `targets` is #targets, the heading after it #targets-1.
    settings = site_settings(
        tmp_path,
        {
            "hugo.toml": 'baseURL = "/"\n[markup.goldmark.parser]\nautoDefinitionTermID = true\n',
            "content/deploy.md": (
                "# Deploy\n\n`targets`\n: A slice of [targets](#targets-1), see [term](#targets).\n\n"
                "[not numbered that far](#targets-2)\n\n## Targets\n\nThe list.\n"
            ),
        },
    )
    verdicts = link_verdicts(settings)
    assert verdicts[("content/deploy.md", "#targets-1")] is True
    assert verdicts[("content/deploy.md", "#targets")] is True
    assert verdicts[("content/deploy.md", "#targets-2")] is False


def test_markdown_shortcodes_inside_a_raw_one_stay_markdown() -> None:
    # dapr's `{{< tabs >}}` around `{{% codetab %}}`s: Hugo renders the inner `{{% %}}` as Markdown.
    text = "# P\n\n{{< raw >}}\n{{% tab %}}\n## Inside a tab\n[x](y.md)\n{{% /tab %}}\n{{< /raw >}}\n"
    doc = parse_document(text, "p.md", shortcodes=KINDS)
    assert [s.title for s in doc.sections if s.level] == ["P", "Inside a tab"]
    assert [link.target for link in doc.links] == ["y.md"]


def test_theme_paths_order_and_parameters(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "hugo.toml": 'baseURL = "/"\ntheme = ["docsy/theme", "other", "other"]\n',
            # Docsy's tab reads a "highlight" parameter and hands its text on: not code, Markdown.
            "themes/docsy/theme/layouts/_shortcodes/tab.html": (
                '{{ with $.Get "highlight" }}{{ $tab = merge $tab (dict "highlight" .) }}{{ end }}\n'
                '{{ with $.Inner }}{{ $tab = merge $tab (dict "content" .) }}{{ end }}\n'
            ),
            "themes/docsy/theme/layouts/_shortcodes/box.html": "<pre>{{ .Inner }}</pre>\n",
            # Highlighted unless `text=true` asks for the text as it is: raw (Markdown under {{% %}}).
            "themes/docsy/theme/layouts/_shortcodes/dtab.html": (
                '{{ if .Get "text" }}{{ .Inner }}{{ else }}{{ highlight .Inner (.Get "lang") "" }}{{ end }}\n'
            ),
            # The first theme named wins over the second.
            "themes/other/layouts/shortcodes/box.html": "{{ .Inner | markdownify }}\n",
            "themes/other/layouts/shortcodes/plain.html": "<div>{{ .Inner }}</div>\n",
            # The site's own template wins over every theme's.
            "layouts/shortcodes/plain.html": "{{ .Inner | markdownify }}\n",
        },
    )
    assert detect_site(tmp_path, stop=tmp_path).shortcodes == (
        ("box", "code"),
        ("comment", "raw"),
        ("dtab", "raw"),
        ("highlight", "code"),
    )
