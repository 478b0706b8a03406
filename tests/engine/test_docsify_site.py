"""Docsify conventions (`udm/site/docsify.py`): an `index.html` whose script sets `window.$docsify` (or
loads Docsify, its options in a script file of the folder); `/guide` is `guide.md`, `/guide/` is
`guide/README.md`, `/` the `homepage`; a relative link read from the site root unless `relativePath`;
an image from the page's folder; `#x` and `?id=x` the heading id Docsify's `slugify` makes; `alias`
rewriting a route; a folder with a Docsify page of its own another site. On Docsify's own docs lint said
9 broken links before, 3 after (all true: anchors of another page); on docsify-themeable's 2 before,
0 after (an alias to a remote changelog, and the home page of a nested test site)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from udm.site.docsify import alias_pattern, docsify_heading_id, docsify_slug, route_file
from udm.site.routes import detect_site

from .conftest import DOCSIFY_PAGE, docsify_site, root_verdicts, write_tree


def test_relative_links_are_read_from_the_site_root(tmp_path: Path) -> None:
    root = docsify_site(
        tmp_path,
        "{ name: 'x' }",
        {
            "docs/README.md": "# Home\n",
            "docs/quickstart.md": "# Quick start\n",
            "docs/zh-cn/README.md": "# 首页\n",
            "docs/zh-cn/quickstart.md": "# 快速开始\n",
            "docs/zh-cn/guide.md": (
                "# 指南\n\n[a](zh-cn/quickstart.md) [b](quickstart.md) [c](zh-cn/) [d](/) "
                "[e](zh-cn/quickstart) [f](../quickstart.md) [g](missing.md) [h](./quickstart.md)\n"
            ),
        },
    )
    assert root_verdicts(root, "zh-cn/guide.md") == {
        "zh-cn/quickstart.md": True,  # the Chinese page, written from the root as Docsify's docs do
        "quickstart.md": True,  # the root's page, not zh-cn/quickstart.md
        "zh-cn/": True,  # zh-cn/README.md
        "/": True,
        "zh-cn/quickstart": True,
        "../quickstart.md": True,  # above the root is the root
        "missing.md": False,
        "./quickstart.md": True,
    }


def test_relative_path_option_reads_links_from_the_page_folder(tmp_path: Path) -> None:
    root = docsify_site(
        tmp_path,
        "{ relativePath: true }",
        {
            "docs/README.md": "# Home\n",
            "docs/guide/README.md": "# Guide\n\n[a](install.md) [b](../README.md) [c](guide/install.md) [d](/guide/install)\n",
            "docs/guide/install.md": "# Install\n",
        },
    )
    assert root_verdicts(root, "guide/README.md") == {
        "install.md": True,
        "../README.md": True,
        "guide/install.md": False,  # guide/guide/install.md
        "/guide/install": True,
    }


def test_folder_routes_and_the_homepage(tmp_path: Path) -> None:
    root = docsify_site(
        tmp_path,
        "{ homepage: 'intro.md' }",
        {
            "docs/intro.md": "# Intro\n\n[a](/) [b](guide/) [c](guide) [d](/guide/index) [e](README.md)\n",
            "docs/guide/README.md": "# Guide\n",
            "docs/guide/index.md": "# Index\n",
        },
    )
    assert root_verdicts(root, "intro.md") == {
        "/": True,  # intro.md
        "guide/": True,  # guide/README.md (index.md is no folder's page on Docsify)
        "guide": False,  # guide.md
        "/guide/index": True,
        "README.md": True,  # /README.md is the homepage's route: intro.md
    }


def test_heading_ids_are_docsifys(tmp_path: Path) -> None:
    root = docsify_site(
        tmp_path,
        "{}",
        {
            "docs/README.md": (
                "# Home\n\n## Über uns\n\n## 2. Setup\n\n## Setup\n\n## Setup\n\n## Options :id=opts\n\n"
                "[a](#Über-uns) [b](#über-uns) [c](#_2-setup) [d](#2-setup) [e](#setup-1) [f](#opts)\n"
                "[g](?id=setup) [h](README?id=_2-setup) [i](README.md#Setup) [j](#/README?id=opts)\n\n"
                '<a href="#/?id=opts">k</a>\n'
            ),
        },
    )
    assert root_verdicts(root, "README.md") == {
        "#Über-uns": True,  # only ASCII capitals are lowered
        "#über-uns": False,  # GitHub's form
        "#_2-setup": True,
        "#2-setup": False,
        "#setup-1": True,
        "#opts": True,
        "?id=setup": True,
        "README?id=_2-setup": True,
        "README.md#Setup": True,  # Docsify lower-cases a link's query (ASCII only)
        "#/README?id=opts": False,  # a Markdown link: the open page's heading `/readme?id` (none)
        "#/?id=opts": True,  # a raw HTML link to Docsify's own URL: that route's heading
    }


def test_images_are_read_from_the_page_folder(tmp_path: Path) -> None:
    root = docsify_site(
        tmp_path,
        "{}",
        {
            "docs/README.md": "# Home\n",
            "docs/logo.png": "png",
            "docs/guide/README.md": "# Guide\n\n![a](img/a.png) ![b](/logo.png) ![c](../logo.png) [d](logo.png ':ignore')\n",
            "docs/guide/img/a.png": "png",
        },
    )
    assert root_verdicts(root, "guide/README.md") == {
        "img/a.png": True,
        "/logo.png": False,  # Docsify joins it to the page's folder: guide/logo.png
        "../logo.png": True,
        "logo.png": True,  # a link left as written is the file itself, from the root
    }


def test_aliases_cover_and_sidebar(tmp_path: Path) -> None:
    root = docsify_site(
        tmp_path,
        "{ coverpage: true, alias: { '.*?/changelog': 'https://example.com/CHANGELOG.md', "
        "'/old/(.*)': '/new/$1', '/x': '/y/$5' } }",
        {
            "docs/README.md": "# Kit\n\n[a](changelog) [b](old/page) [c](/old/page?id=part) [d](x)\n",
            "docs/new/page.md": "# Page\n\n## Part\n",
            "docs/_coverpage.md": "# Kit\n\n[go](#kit) [no](#nothing)\n",
            "docs/_sidebar.md": "- [top](#top)\n- [home](/)\n",
        },
    )
    assert root_verdicts(root, "README.md") == {
        "changelog": None,  # another site's file
        "old/page": True,
        "/old/page?id=part": True,
        "x": False,  # `/y/$5`: no fifth group, so the route stays `/y/$5`, as JavaScript leaves it
    }
    assert root_verdicts(root, "_coverpage.md") == {"#kit": True, "#nothing": False}  # the home page's
    assert root_verdicts(root, "_sidebar.md") == {"#top": None, "/": True}  # whichever page is open


def test_options_in_a_script_file_and_a_nested_site(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "docs/index.html": '<script src="js/config.js"></script><script src="https://unpkg.com/docsify"></script>\n',
            "docs/js/config.js": "window.$docsify = { homepage: 'intro.md', relativePath: false };\n",
            "docs/intro.md": "# Intro\n\n[demo](demo/) [home](/)\n",
            "docs/demo/index.html": DOCSIFY_PAGE.format("window.$docsify = { homepage: 'start.md' };"),
            "docs/demo/start.md": "# Start\n\n[home](/) [page](page.md) [up](../intro.md)\n",
            "docs/demo/page.md": "# Page\n",
        },
    )
    (tmp_path / ".git").mkdir()
    root = tmp_path / "docs"
    site = detect_site(root, stop=tmp_path)
    assert site.generator == "docsify" and site.docsify is not None
    assert site.docsify.homepage == "intro.md"
    assert [(f, o.homepage) for f, o in site.docsify.nested] == [("demo", "start.md")]
    assert root_verdicts(root, "intro.md") == {"demo/": False, "/": True}  # demo/README.md: none
    assert root_verdicts(root, "demo/start.md") == {"/": True, "page.md": True, "../intro.md": True}


@pytest.mark.parametrize(
    ("page", "generator"),
    [
        (DOCSIFY_PAGE.format("window.$docsify = {};"), "docsify"),
        ('<script src="//cdn.jsdelivr.net/npm/docsify/lib/docsify.min.js"></script>\n', "docsify"),
        ("<!-- window.$docsify = {} -->\n<html><body>plain</body></html>\n", "none"),
        ("<html><body>A page that is no Docsify page.</body></html>\n", "none"),
    ],
)
def test_detected_by_its_page(tmp_path: Path, page: str, generator: str) -> None:
    write_tree(tmp_path, {"index.html": page, "README.md": "# A\n"})
    (tmp_path / ".git").mkdir()
    assert detect_site(tmp_path, stop=tmp_path).generator == generator


def test_route_file() -> None:
    assert route_file("/guide", ".md", "README.md") == "guide.md"
    assert route_file("/guide/", ".md", "README.md") == "guide/README.md"
    assert route_file("/", ".md", "home.md") == "home.md"
    assert route_file("/x.html", ".md", "README.md") == "x.html"


def test_slug() -> None:
    assert docsify_slug("Hello World!") == "hello-world"
    assert docsify_slug("a  b") == "a--b"  # each blank its own hyphen
    assert docsify_slug("`code` and <b>bold</b>") == "code-and-bold"
    assert docsify_slug("🎉 Party") == "-party"
    assert docsify_heading_id("Options :id=my-opts") == "my-opts"


# --- hostile input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pattern",
    ["(a+)+$", "(a|aa)*", "(.*a){10}", "((a))", "(?=a)b", "\\1", "a.*b.*c.*d", "x" * 300, "(a", "a)", "*a"],
)
def test_unsafe_alias_patterns_are_not_read(pattern: str) -> None:
    assert alias_pattern(pattern) is None


@pytest.mark.parametrize(
    "pattern", [".*?/awesome", "/zh-cn/(.*)", "/.*/_sidebar.md", "/changelog", "/a/([^/]+)/b"]
)
def test_docsifys_usual_alias_patterns_are_read(pattern: str) -> None:
    assert alias_pattern(pattern) is not None


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="a.*+?()[]{}|\\^$/-,0123456789:", max_size=40))
def test_any_alias_pattern_read_matches_a_crafted_route_quickly(pattern: str) -> None:
    compiled = alias_pattern(pattern)
    if compiled is None:
        return
    started = time.process_time()
    for route in ("/" + "a" * 299, "/" + "a/" * 149, "/" + "aaaaaaaaaa-" * 27):
        compiled.match(route)
    assert time.process_time() - started < 1.0


def test_a_hostile_config_is_contained(tmp_path: Path) -> None:
    root = docsify_site(
        tmp_path,
        "{ basePath: 'https://evil.example/', alias: { '(a+)+$': '/x', '/loop': '/loop2', '/loop2': '/loop' } }",
        {
            "docs/README.md": "# Home\n\n[a]("
            + "a" * 5000
            + ") [b](loop) [c](aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!)\n"
        },
    )
    site = detect_site(root, stop=tmp_path)
    assert any("basePath" in p for p in site.problems) and any("(a+)+$" in p for p in site.problems)
    started = time.perf_counter()
    verdicts = root_verdicts(root, "README.md")
    assert time.perf_counter() - started < 10
    assert verdicts["loop"] is False and verdicts["aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"] is False


def test_a_query_id_is_read_as_docsifys_parse_query_reads_it(tmp_path: Path) -> None:
    # `parseQuery` splits a parameter at every `=` (`id=A=B` is `a` once lower-cased), and a later `id` wins.
    root = docsify_site(
        tmp_path, "{}", {"docs/README.md": "# Home\n\n## A\n\n[x](?id=A=B) [y](?id=b&id=a) [z](?x=1)\n"}
    )
    assert root_verdicts(root, "README.md") == {"?id=A=B": True, "?id=b&id=a": True, "?x=1": True}


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="<>ab ", max_size=30))
def test_tags_are_dropped_as_docsifys_regex_drops_them(text: str) -> None:
    from udm.site.docsify import _without_tags

    assert _without_tags(text) == re.sub(r"<[^>]+>", "", text)


def test_a_heading_of_unclosed_tags_is_slugged_in_linear_time() -> None:
    started = time.process_time()
    docsify_slug("<" * 200_000)
    assert time.process_time() - started < 1.0


def test_options_are_the_objects_own_keys_and_strings_are_unescaped(tmp_path: Path) -> None:
    # A plugin's nested `ext` or `basePath` is no option of the site; `noCompileLinks` holds JavaScript
    # strings, so `'/api\\.html'` is the pattern `/api\.html`.
    root = docsify_site(
        tmp_path,
        "{ search: { basePath: 'elsewhere/', ext: '.txt' }, noCompileLinks: ['/api\\\\.html'] }",
        {
            "docs/README.md": "# Home\n\n[g](guide) [a](/api.html)\n",
            "docs/guide.md": "# G\n",
            "docs/api.html": "x",
        },
    )
    site = detect_site(root, stop=tmp_path)
    assert (
        site.docsify is not None and site.docsify.ext == ".md" and site.docsify.verbatim == ("/api\\.html",)
    )
    assert root_verdicts(root, "README.md") == {"guide": True, "/api.html": True}
