"""Anchors and links the way MkDocs (Python-Markdown), VitePress includes and mdBook's neighbouring
books make them (conventions found on mkdocs-material's, vitest's and the Rust book's docs, re-created
here in fixtures written by the test)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from udm.markdown import parse_document
from udm.site.anchors import mintlify_slug, python_markdown_slug

from .conftest import link_verdicts, page_verdicts, site_settings


def test_python_markdown_slugs() -> None:
    assert python_markdown_slug("Caret, Mark & Tilde") == "caret-mark-tilde"
    assert python_markdown_slug("Sub- and superscripts") == "sub-and-superscripts"
    assert python_markdown_slug("Café crème") == "cafe-creme"


def test_an_attribute_list_id_key_names_the_anchor() -> None:
    doc = parse_document(
        '## Navigation path <small>x</small> { id=navigation-path }\n\n## C { .x id="c-id" }\n'
    )
    assert [s.anchor for s in doc.sections if s.level] == ["navigation-path", "c-id"]


def test_mkdocs_anchors(tmp_path: Path) -> None:
    settings = site_settings(
        tmp_path,
        {
            "mkdocs.yml": "site_name: F\nmarkdown_extensions: [attr_list, footnotes, toc]\n",
            "docs/guide.md": (
                "# Guide\n\n## Caret, Mark & Tilde\n\n## Sub- and superscripts\n\n## Setup\n\n## Setup\n\n"
                "## Breadcrumbs <small>nav</small> { id=crumbs }\n\nText.[^1]\n\n[^1]: A note.\n"
            ),
            "docs/material.md": "# Material\n\n## Options\n\n<!-- md:setting config.blog_dir -->\n\n## Usage\n",
            "docs/index.md": (
                "# Home\n\n[a](guide.md#caret-mark-tilde) [b](guide.md#sub-and-superscripts) [c](guide.md#crumbs)\n"
                "[d](guide.md#fn:1) [e](guide.md#fnref:1) [f](guide.md#setup_1) [g](guide.md#nowhere)\n"
                "[h](material.md#config.blog_dir) [i](material.md#usage) [j](material.md#advanced-settings)\n"
            ),
        },
    )
    verdicts = page_verdicts(settings, "docs/index.md")
    assert {t for t, ok in verdicts.items() if ok is False} == {
        "guide.md#nowhere",
        "material.md#advanced-settings",
    }
    # A page whose ids a project hook writes: not known here.
    assert verdicts["material.md#config.blog_dir"] is None


def test_a_vitepress_include_leaves_the_page_anchors_unknown(tmp_path: Path) -> None:
    settings = site_settings(
        tmp_path,
        {
            ".vitepress/config.mts": "export default { title: 'F' }\n",
            "cli.md": "# CLI\n\n<!--@include: ./cli-options.md-->\n",
            "cli-options.md": "### watch\n",
            "index.md": "# Home\n\n[w](/cli#watch) [x](/cli-options#nothing)\n",
        },
    )
    verdicts = link_verdicts(settings)
    assert verdicts[("index.md", "/cli#watch")] is None
    assert verdicts[("index.md", "/cli-options#nothing")] is False


def test_a_vitepress_page_rendering_a_vue_component_has_unknown_anchors(tmp_path: Path) -> None:
    """Vue's docs: the API index is `<ApiIndex />`; an inline component (`<MoonPhase />`) renders no
    headings, so that page's missing anchors stay broken."""
    settings = site_settings(
        tmp_path,
        {
            ".vitepress/config.mts": "export default { title: 'F' }\n",
            "api.md": "<script setup>\nimport ApiIndex from './ApiIndex.vue'\n</script>\n\n<ApiIndex />\n",
            "moon.md": (
                "<script setup>\nimport MoonPhase from './MoonPhase.vue'\n</script>\n\n# Moon\n\n"
                "The phase of the moon <MoonPhase />\n"
            ),
            "plain.md": "# Plain\n\n<Badge text='x' />\n",
            "index.md": "# Home\n\n[a](/api#composition-api) [b](/moon#how-it-works) [c](/plain#nope)\n",
        },
    )
    verdicts = link_verdicts(settings)
    assert verdicts[("index.md", "/api#composition-api")] is None
    assert verdicts[("index.md", "/moon#how-it-works")] is False
    assert verdicts[("index.md", "/plain#nope")] is False  # a component, but none imported from a .vue file


def test_an_mdbook_link_above_the_book_is_another_books(tmp_path: Path) -> None:
    settings = site_settings(
        tmp_path,
        {
            "book.toml": '[book]\ntitle = "F"\n',
            "src/SUMMARY.md": "- [Intro](intro.md)\n",
            "src/intro.md": "# Intro\n\n[S](../std/string/struct.String.html) [bad](nope.md) [ok](intro.md)\n",
        },
    )
    verdicts = link_verdicts(settings)
    assert verdicts[("src/intro.md", "../std/string/struct.String.html")] is None
    assert verdicts[("src/intro.md", "nope.md")] is False


def test_mintlify_anchor_ids(tmp_path: Path) -> None:
    settings = site_settings(
        tmp_path,
        {
            "docs.json": '{"name": "F", "theme": "mint", "navigation": {"pages": ["index", "guide"]}}\n',
            "guide.mdx": (
                "# Guide\n\n## Config.json options\n\n"
                '<Accordion title="Deployment branch">x</Accordion>\n\n<Tab title="OAuth 2.0">x</Tab>\n'
            ),
            "index.mdx": (
                "# Home\n\n[a](/guide#config-json-options) [b](/guide#deployment-branch) [c](/guide#oauth-2-0)\n"
                "[d](/guide#missing)\n"
            ),
        },
    )
    broken = {t for (f, t), ok in link_verdicts(settings).items() if ok is False}
    assert broken == {"/guide#missing"}


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Getting started", "getting-started"),
        ("Config.json options", "config-json-options"),
        ("What's new", "what\u2019s-new"),
        ("Rate limits (per minute)", "rate-limits-per-minute"),
        ("Read/write access", "read/write-access"),
        ("Fees & billing", "fees-&-billing"),
        ("OAuth", "oauth"),
        ("Example: connect the server", "example:-connect-the-server"),
    ],
)
def test_mintlify_slug_follows_mintlifys_documented_rules(heading: str, anchor: str) -> None:
    assert mintlify_slug(heading) == anchor


@given(st.text(max_size=80))
def test_mintlify_slug_is_settled_and_holds_no_whitespace_periods_or_parentheses(text: str) -> None:
    slug = mintlify_slug(text)
    assert mintlify_slug(slug) == slug
    assert not any(c.isspace() for c in slug) and not set(".()'") & set(slug)


def test_mintlify_ids_of_headings_components_and_partials(tmp_path: Path) -> None:
    settings = site_settings(
        tmp_path,
        {
            "docs.json": '{"name": "F", "theme": "mint", "navigation": {"pages": ["index", "ref"]}}\n',
            "ref.mdx": (
                "# Reference\n\n## What's new\n\n## Read/write access\n\n## Example: connect\n\n"
                "## Overview\n\n## Overview\n\n## Split configuration with `$ref`\n\n"
                '<Update label="March 2026">x</Update>\n\n<Tab title="Ignored" id="custom-tab">x</Tab>\n\n'
                '<Step title="One" id="step-one">x</Step>\n\n'
                '<ResponseField name="thumbnails.background" type="string">x</ResponseField>\n\n'
                '<ParamField path="user_id" type="string">x</ParamField>\n'
            ),
            "with-partial.mdx": "import Setup from '/snippets/setup.mdx';\n\n# With a partial\n\n<Setup />\n",
            "imports-only.mdx": (
                "import Setup from '/snippets/setup.mdx';\n\n# Imports only\n\n<SetupGuide />\n"
                '<Tab data-id="not-an-id" title="Shown">x</Tab>\n'
            ),
            "snippets/setup.mdx": "## Setup steps\n",
            "index.mdx": (
                "# Home\n\n[a](/ref#what’s-new) [b](/ref#read/write-access) [c](/ref#example:-connect)\n"
                "[d](/ref#overview-2) [e](/ref#split-configuration-with-$ref) [f](/ref#march-2026)\n"
                "[g](/ref#custom-tab) [h](/ref#step-one) [i](/ref#param-thumbnails-background)\n"
                "[j](/ref#param-user_id) [k](/ref#whats-new) [l](/ref#missing)\n"
                "[m](/with-partial#setup-steps) [n](/imports-only#setup-steps) [o](/imports-only#not-an-id)\n"
                "[p](/imports-only#shown)\n"
            ),
        },
    )
    verdicts = page_verdicts(settings, "index.mdx")
    # `<SetupGuide />` renders no `Setup`; `data-id` is no `id`.
    assert {t for t, ok in verdicts.items() if ok is False} == {
        "/ref#missing",
        "/imports-only#setup-steps",
        "/imports-only#not-an-id",
    }
    # A rendered partial's headings are the page's, but only the partial knows them: unknown, not broken.
    assert verdicts["/with-partial#setup-steps"] is None
    assert sum(ok is True for ok in verdicts.values()) == 12


def test_a_cli_reference_rendered_from_the_code_has_unknown_anchors(tmp_path: Path) -> None:
    """Hatch's docs: `::: mkdocs-click` renders a heading per command (`#hatch-test`) from the code."""
    settings = site_settings(
        tmp_path,
        {
            "mkdocs.yml": "site_name: S\nmarkdown_extensions:\n  - mkdocs-click\n",
            "docs/cli.md": "::: mkdocs-click\n    :module: hatch.cli\n    :command: hatch\n",
            "docs/plain.md": "# Plain\n\n    ::: mkdocs-click\n",
            "docs/index.md": "# Home\n\n[a](cli.md#hatch-test) [b](plain.md#hatch-test)\n",
        },
    )
    verdicts = page_verdicts(settings, "docs/index.md")
    assert verdicts == {"cli.md#hatch-test": None, "plain.md#hatch-test": False}


def test_mkdocs_static_i18n_folders_fall_back_to_the_default_language(tmp_path: Path) -> None:
    """The OpenAI Agents SDK's docs: `i18n` with `docs_structure: folder`; `ja/testing.md` links
    `ref/testing.md`, which only English has: the site builds `/ja/ref/testing/` from it."""
    config = (
        "site_name: S\nplugins:\n  - i18n:\n      docs_structure: folder\n      languages:\n"
        "        - locale: en\n          default: true\n        - locale: ja\n"
    )
    files = {
        "docs/ref/testing.md": "# Testing\n\n## Fakes\n",
        "docs/ja/testing.md": "# テスト\n\n[a](ref/testing.md#fakes) [b](ref/missing.md) [c](../ref/testing.md)\n",
    }
    settings = site_settings(tmp_path / "folder", {"mkdocs.yml": config, **files})
    assert page_verdicts(settings, "docs/ja/testing.md") == {
        "ref/testing.md#fakes": True,
        "ref/missing.md": False,
        "../ref/testing.md": True,
    }
    # Without the fallback (or with suffix files, the plugin's default) nothing stands in.
    plain = site_settings(
        tmp_path / "off", {"mkdocs.yml": config + "      fallback_to_default: false\n", **files}
    )
    assert page_verdicts(plain, "docs/ja/testing.md")["ref/testing.md#fakes"] is False
