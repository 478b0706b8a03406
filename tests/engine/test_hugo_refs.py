"""Hugo's `ref` and `relref` shortcodes as links (the forms public Hugo and Docsy sites write, re-created
here): recorded wherever Hugo expands them (not in code, not in the escaped `{{</* */>}}` form),
resolved the way Hugo's page lookup resolves them, a missing page reported as broken.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from udm.config import load_settings
from udm.markdown import parse_document
from udm.markdown.shortcodes import HugoRef, find_refs, parse_ref
from udm.site.routes import detect_site

from .conftest import link_verdicts, site_settings
from .conftest import write_tree as _write


@pytest.mark.parametrize(
    ("text", "ref"),
    [
        ('{{< ref "install.md" >}}', HugoRef("install.md")),
        # Hugo's shortcode lexer quotes with " or backticks only: the quotes are part of the path.
        ("{{< relref 'x' >}}", HugoRef("'x'", relative=True)),
        ('{{% relref "/docs/a#b" %}}', HugoRef("/docs/a#b", relative=True)),
        ('{{<ref "a">}}', HugoRef("a")),
        ("{{< ref `a b.md` >}}", HugoRef("a b.md")),
        ("{{< ref install >}}", HugoRef("install")),
        ('{{< ref path="a.md" lang="fr" >}}', HugoRef("a.md", "fr")),
        ('{{< relref path="a.md" outputFormat="amp" >}}', HugoRef("a.md", relative=True)),
        ('{{< ref "a\\"b" >}}', HugoRef('a"b')),
        ('{{< ref "a" "amp" >}}', HugoRef("a")),  # a second positional is the output format
        ('{{< ref "a" "amp" "x" >}}', None),
        ('{{< ref "a" lang="fr" >}}', None),  # Hugo refuses positional and named mixed
        ('{{< ref "a" >}}#b', HugoRef("a#b")),  # a fragment written after it
        ('{{< ref "a#b" >}}#c', None),
        ('{{< ref "a" %}}', None),  # mismatched closer
        ("{{< ref >}}", None),
        ('{{</* ref "a" */>}}', None),  # the escaped form shows the syntax
        ('{{< reference "a" >}}', None),
    ],
)
def test_ref_forms(text: str, ref: HugoRef | None) -> None:
    assert parse_ref(text) == ref


def test_refs_are_links_outside_code() -> None:
    doc = parse_document(
        "# Page\n\n"
        'See [the guide]({{< ref "guide.md#setup" >}}) and {{% relref path="/docs/b" %}} there.\n\n'
        '`{{< ref "in-code-span" >}}`\n\n'
        '    {{< ref "in-indented-code" >}}\n\n'
        '```\n{{< ref "in-fence" >}}\n```\n\n'
        '<a href=\'{{< relref "c.md" >}}\'>c</a> {{</* ref "escaped" */>}} ü [ä\nwrapped]({{< ref `d.md` >}})\n',
        "docs/page.md",
        shortcodes=(),
    )
    refs = [(link.line, link.text, link.target, link.form, link.kind) for link in doc.links]
    assert refs == [
        (2, "the guide", '{{< ref "guide.md#setup" >}}', "ref", "internal"),
        (2, "", '{{% relref path="/docs/b" %}}', "ref", "internal"),
        # The HTML attribute's value is the ref itself: one link, not two.
        (12, "", '{{< relref "c.md" >}}', "ref", "internal"),
        (13, "ä wrapped", "{{< ref `d.md` >}}", "ref", "internal"),
    ]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='{}<>%/*"`= \n\\abrefl.#ü', max_size=300))
def test_any_text_is_read_without_error(text: str) -> None:
    for char, byte, raw in find_refs(text):
        assert text[char : char + len(raw)] == raw and parse_ref(raw) is not None
        assert byte == len(text[:char].encode("utf-8"))
    parse_document(text, "x.md", shortcodes=())


def test_a_long_unclosed_ref_reads_in_linear_time() -> None:
    texts = [
        '{{< ref "' + "\\" * 200_000,
        "{{< ref " + "a=" * 100_000,
        "{{< ref " * 50_000,
        '{{%ref "' * 100_000,  # each unclosed string stops at the next shortcode
        "]({{<ref a>}}" * 80_000,
    ]
    for text in texts:
        started = time.perf_counter()
        parse_document(text, "x.md", shortcodes=())
        assert time.perf_counter() - started < 5, text[:20]


SITE = {
    "hugo.toml": 'baseURL = "https://fixture.example/"\ntitle = "t"\n',
    "content/_index.md": '# Home\n\n[docs]({{< ref "/docs" >}}) [Install]({{< ref "docs/Install.md" >}})\n',
    "content/docs/_index.md": (
        "# Docs\n\n"
        '[install]({{< ref "install.md" >}}) [guide]({{< relref "/docs/guide" >}})\n'
        '[setup]({{< ref "install.md#setup" >}}) [by name]({{< ref "deep" >}}) [self]({{< ref "#docs" >}})\n'
        '[missing]({{< ref "nope.md" >}}) [no anchor]({{< ref "install#nothing" >}})\n'
        '[ambiguous]({{< ref "notes" >}}) [bundle]({{< ref "tour" >}}) [up and out]({{< ref "../../x.md" >}})\n'
    ),
    "content/docs/install.md": '# Install\n\n## Setup\n\n[docs]({{% relref "../docs" %}}) [deep]({{< ref "guide/deep.md" >}})\n',
    "content/docs/guide/_index.md": "# Guide\n",
    "content/docs/guide/deep.md": '# Deep\n\n[up]({{< ref "../install.md" >}}) [sibling]({{< ref "notes.md" >}})\n',
    "content/docs/guide/notes.md": "# Notes\n",
    "content/blog/notes.md": "# Notes\n",
    "content/blog/tour/index.md": "# Tour\n",
}


def test_refs_resolve_as_hugo_finds_pages(tmp_path: Path) -> None:
    settings = site_settings(tmp_path, SITE)
    verdicts = {key: ok for key, ok in link_verdicts(settings).items() if "{{" in key[1]}
    broken = sorted(key for key, ok in verdicts.items() if ok is False)
    assert broken == [
        ("content/docs/_index.md", '{{< ref "../../x.md" >}}'),
        # Two pages are called notes: Hugo refuses to guess.
        ("content/docs/_index.md", '{{< ref "install#nothing" >}}'),
        ("content/docs/_index.md", '{{< ref "nope.md" >}}'),
        ("content/docs/_index.md", '{{< ref "notes" >}}'),
    ]
    assert all(ok is True for key, ok in verdicts.items() if key not in broken)
    assert len(verdicts) == 16


def test_lint_and_links_name_the_missing_page(tmp_path: Path) -> None:
    from udm.index.links import check_links
    from udm.index.lint_rules import lint

    settings = site_settings(tmp_path, SITE)
    messages = {(f.file, f.rule, f.message) for f in lint(settings) if f.rule.startswith("broken")}
    assert (
        "content/docs/_index.md",
        "broken-link",
        'link target {{< ref "nope.md" >}} does not exist',
    ) in messages
    assert (
        "content/docs/_index.md",
        "broken-anchor",
        "no heading with anchor #nothing in content/docs/install.md",
    ) in messages
    report = check_links(settings, external=False)
    reasons = {r.reason for r in report.results if r.status == "broken"}
    assert "no such file nope.md" in reasons


def test_refs_follow_the_language(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "config.yaml": (
                "baseURL: https://fixture.example/\ndefaultContentLanguage: en\nlanguages:\n"
                "  en:\n    contentDir: content/en\n  fr:\n    contentDir: content/fr\n"
            ),
            "content/en/docs/a.md": '# A\n\n[b]({{< ref "b.md" >}}) [fr]({{< ref path="/docs/only-fr.md" lang="fr" >}})\n',
            "content/en/docs/b.md": '# B\n\n[fr only]({{< ref "/docs/only-fr.md" >}})\n',
            "content/fr/docs/a.md": '# A\n\n[b]({{< ref "b.md" >}}) [fr]({{< ref "/docs/only-fr" >}})\n',
            "content/fr/docs/only-fr.md": "# Seulement\n",
        },
    )
    site = detect_site(tmp_path, stop=tmp_path)
    assert sorted((m.folder, m.prefix, m.lang) for m in site.mounts) == [
        ("content/en", "", "en"),
        ("content/fr", "fr", "fr"),
    ]
    settings = load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / ".udm-state")
    broken = {key for key, ok in link_verdicts(settings).items() if ok is False}
    # English has no only-fr page and French has no b.md: a ref stays in its page's language.
    assert broken == {
        ("content/en/docs/b.md", '{{< ref "/docs/only-fr.md" >}}'),
        ("content/fr/docs/a.md", '{{< ref "b.md" >}}'),
    }


def test_module_mounts_give_content_paths(tmp_path: Path) -> None:
    # `source = "docs"`, `target = "content/docs"`: a ref names /docs/... whatever folder holds it.
    settings = site_settings(
        tmp_path,
        {
            "hugo.toml": (
                'baseURL = "/"\n[[module.mounts]]\nsource = "docs"\ntarget = "content/docs"\n'
                '[[module.mounts]]\nsource = "site"\ntarget = "content"\n'
            ),
            "docs/intro.md": '# Intro\n\n[home]({{< ref "/" >}}) [more]({{< ref "/docs/more" >}})\n',
            "docs/more.md": "# More\n",
            "site/_index.md": '# Home\n\n[intro]({{< ref "/docs/intro.md" >}}) [gone]({{< ref "/intro" >}})\n',
        },
    )
    verdicts = link_verdicts(settings)
    assert verdicts == {
        ("docs/intro.md", '{{< ref "/" >}}'): True,
        ("docs/intro.md", '{{< ref "/docs/more" >}}'): True,
        ("site/_index.md", '{{< ref "/docs/intro.md" >}}'): True,
        ("site/_index.md", '{{< ref "/intro" >}}'): False,
    }


def test_a_patch_that_removes_a_refd_page_is_refused(tmp_path: Path) -> None:
    from udm.patch import apply_patch, parse_patch

    settings = site_settings(tmp_path, SITE)
    patch = parse_patch(
        {"description": "tidy", "operations": [{"op": "delete_file", "file": "content/docs/guide/deep.md"}]}
    )
    res = apply_patch(patch, settings)
    assert res.status == "invalid"
    assert 'link to {{< ref "guide/deep.md" >}} would break (guide/deep.md does not exist)' in (
        res.error or ""
    )
    assert (tmp_path / "content/docs/guide/deep.md").exists()


def test_hugo_lookup_details(tmp_path: Path) -> None:
    # As Hugo 0.168 resolves them (checked against the hugo binary on a copy of this tree).
    _write(
        tmp_path,
        {
            "hugo.toml": 'baseURL = "/"\n',
            "content/docs/b.md": "# B\n\n## Part\n",
            "content/docs/bundle/index.md": (
                "# Bundle\n\n"
                '[sibling]({{< ref "./b" >}}) [own folder]({{< ref "../bundle/index.md" >}})\n'
                '[dot stops]({{< ref "./nowhere/b" >}}) [fragment after]({{< ref "b" >}}#part)\n'
                '[bad fragment after]({{< ref "b" >}}#gone) [section without index]({{< ref "/commands" >}})\n'
                '[unknown language]({{< ref path="/docs/b" lang="de" >}})\n'
            ),
            "content/commands/set.md": "# SET\n",
            # Too large for the index, but Hugo has the page.
            "content/docs/huge.md": "# Huge\n" + "x" * 2000,
            "content/docs/links.md": '# Links\n\n[huge]({{< ref "huge" >}})\n',
        },
    )
    settings = load_settings(
        cwd=tmp_path, root=tmp_path, state_dir=tmp_path / ".udm-state", max_file_bytes=1000
    )
    verdicts = link_verdicts(settings)
    page = "content/docs/bundle/index.md"
    assert verdicts[(page, '{{< ref "./b" >}}')] is True
    assert verdicts[(page, '{{< ref "../bundle/index.md" >}}')] is True
    assert verdicts[(page, '{{< ref "./nowhere/b" >}}')] is False
    assert verdicts[(page, '{{< ref "b" >}}#part')] is True
    assert verdicts[(page, '{{< ref "b" >}}#gone')] is False
    assert verdicts[(page, '{{< ref "/commands" >}}')] is True
    # A site with no languages of its own: `lang` asks nothing of it.
    assert verdicts[(page, '{{< ref path="/docs/b" lang="de" >}}')] is True
    assert verdicts[("content/docs/links.md", '{{< ref "huge" >}}')] is True


def test_an_unknown_language_finds_nothing(tmp_path: Path) -> None:
    settings = site_settings(
        tmp_path,
        {
            "config.yaml": "baseURL: /\nlanguages:\n  en:\n    contentDir: content/en\n  'no':\n    contentDir: content/no\n",
            "content/en/a.md": '# A\n\n[de]({{< ref path="/a" lang="de" >}}) [no]({{< ref path="/b" lang="no" >}})\n',
            "content/no/b.md": "# B\n",
        },
    )
    verdicts = link_verdicts(settings)
    assert verdicts[("content/en/a.md", '{{< ref path="/a" lang="de" >}}')] is False
    assert verdicts[("content/en/a.md", '{{< ref path="/b" lang="no" >}}')] is True


def test_ref_syntax_outside_a_hugo_site_is_text(tmp_path: Path) -> None:
    settings = site_settings(
        tmp_path, {"index.md": '# Docs\n\nHugo pages write {{< ref "install.md" >}} to link a page.\n'}
    )
    assert link_verdicts(settings) == {}
