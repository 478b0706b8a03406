"""Docusaurus links to Markdown files (`x.md`, `/x.md`, `@site/x.md`) resolve as its remark plugin
resolves them, and a dated blog post beside the manual is found at its route. Conventions found on the
Home Assistant developer docs, re-created here in fixtures written by the test."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from udm.site import LinkResolver, Routes
from udm.site.routes import detect_site

from .conftest import page_verdicts, site_settings, write_tree

CONFIG = "module.exports = {title: 'S', baseUrl: '/', presets: [['classic', {docs: {}, blog: {}}]]};\n"

PAGES = {
    "docusaurus.config.js": CONFIG,
    "docs/auth_api.md": "# Auth\n\n## Making requests\n",
    "docs/api/rest.md": "# REST\n\n## Get config\n",
    "docs/api/native/setup.md": "# Setup\n",
    "docs/api/native/sending.md": "# Sending\n\n## Encryption\n",
    "docs/guide/auth_api.md": "# A page of the same name in the guide\n",
    "blog/2024-03-01-launch.md": "# Launch\n",
    "blog/2024-04-02-bundle/index.md": "# Bundle\n",
}


@pytest.mark.parametrize(
    ("source", "target", "lands"),
    [
        # A bare path: the page's folder first, then the docs folder, then the site's folder.
        ("docs/api/native/setup.md", "auth_api.md", "docs/auth_api.md"),
        ("docs/api/native/setup.md", "sending.md#encryption", "docs/api/native/sending.md"),
        ("docs/guide/auth_api.md", "auth_api.md", "docs/guide/auth_api.md"),
        ("docs/api/native/setup.md", "api/rest.md", "docs/api/rest.md"),
        ("docs/api/native/setup.md", "docs/api/rest.md", "docs/api/rest.md"),
        # From the root: the docs folder, then the site's folder.
        ("docs/api/native/setup.md", "/api/rest.md#get-config", "docs/api/rest.md"),
        ("docs/api/native/setup.md", "/docs/auth_api.md", "docs/auth_api.md"),
        ("docs/api/native/setup.md", "@site/docs/api/rest.md", "docs/api/rest.md"),
        # ./ and ../ are from the page's folder only.
        ("docs/api/native/setup.md", "./auth_api.md", None),
        ("docs/api/native/setup.md", "../rest.md", "docs/api/rest.md"),
        ("docs/api/native/setup.md", "../../auth_api.md", "docs/auth_api.md"),
        # A blog post is no doc: a doc's link to its file does not resolve.
        ("docs/api/native/setup.md", "/blog/2024-03-01-launch.md", None),
        ("docs/api/native/setup.md", "missing.md", None),
    ],
)
def test_markdown_file_links_resolve_as_docusaurus_does(
    tmp_path: Path, source: str, target: str, lands: str | None
) -> None:
    write_tree(tmp_path, PAGES)
    site = detect_site(tmp_path, stop=tmp_path)
    assert site.site_folder == ("", "")
    pages = [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.md")]
    resolver = LinkResolver(Routes(site, pages), lambda rel: (tmp_path / rel).is_file())
    assert resolver.locate(source, target).file == lands


def test_a_manual_rooted_at_the_docs_folder_resolves_file_links_and_blog_routes(tmp_path: Path) -> None:
    write_tree(tmp_path, PAGES)
    settings = site_settings(
        tmp_path / "docs",
        {
            "api/native/links.md": (
                "# Links\n\n[a](auth_api.md) [b](/api/rest.md#get-config) [c](/auth_api.md#making-requests)\n"
                "[d](@site/docs/api/native/sending.md#encryption) [e](/api/rest.md#nope) [f](nothing.md)\n"
                "[g](/blog/2024/03/01/launch) [h](/blog/2024/04/02/bundle) [i](/blog/2024/05/05/unwritten)\n"
            ),
        },
    )
    verdicts = page_verdicts(settings, "api/native/links.md")
    assert verdicts == {
        "auth_api.md": True,
        "/api/rest.md#get-config": True,
        "/auth_api.md#making-requests": True,
        "@site/docs/api/native/sending.md#encryption": True,
        "/api/rest.md#nope": False,
        "nothing.md": False,
        "/blog/2024/03/01/launch": True,
        "/blog/2024/04/02/bundle": True,
        "/blog/2024/05/05/unwritten": False,
    }


def test_docs_beside_the_site_folder_resolve_file_links(tmp_path: Path) -> None:
    """Redux's layout: the config in `website/`, the docs in `../docs`, the manual root the docs."""
    write_tree(
        tmp_path,
        {
            "website/docusaurus.config.js": (
                "module.exports = {title: 'R', baseUrl: '/', presets: [['classic', {docs: {path: '../docs'}}]]};\n"
            ),
        },
    )
    settings = site_settings(
        tmp_path / "docs",
        {
            "api/Store.md": "# Store\n\n## dispatch(action)\n",
            "faq/Glossary.md": (
                "# Glossary\n\n[a](api/Store.md#dispatchaction) [b](/api/Store.md) [c](@site/../docs/api/Store.md)\n"
                "[d](./api/Store.md) [e](api/Nope.md)\n"
            ),
        },
    )
    verdicts = page_verdicts(settings, "faq/Glossary.md")
    assert verdicts == {
        "api/Store.md#dispatchaction": True,
        "/api/Store.md": True,
        "@site/../docs/api/Store.md": True,
        "./api/Store.md": False,
        "api/Nope.md": False,
    }


def test_lint_reports_the_missing_anchor_of_a_file_link_at_the_right_page(tmp_path: Path) -> None:
    from udm.index import lint

    write_tree(tmp_path, PAGES)
    settings = site_settings(tmp_path, {"docs/x.md": "# X\n\n[a](/api/rest.md#nope)\n"})
    findings = [(f.file, f.rule, f.message) for f in lint(settings) if f.file == "docs/x.md"]
    assert findings == [("docs/x.md", "broken-anchor", "no heading with anchor #nope in docs/api/rest.md")]


@hsettings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    target=st.one_of(
        st.text(alphabet="./@site-_abcdx%", max_size=40).map(lambda t: t + ".md"),
        st.sampled_from(
            [
                "@site/../../etc/passwd.md",
                "/../../../etc/hosts.md",
                "../../../../outside.md",
                "@site/" + "../" * 50 + "x.md",
                "/" + "a/" * 500 + "x.md",
                "%2e%2e/%2e%2e/outside.md",
            ]
        ),
    )
)
def test_a_file_link_never_lands_outside_the_manuals_pages(tmp_path: Path, target: str) -> None:
    """Hostile targets: whatever the link says, it lands on a file of the site or nowhere."""
    root = tmp_path / "site"
    if not root.exists():
        write_tree(root, PAGES)
        write_tree(tmp_path, {"outside.md": "# Out\n", "site/../x.md": "# X\n"})
    site = detect_site(root / "docs", stop=tmp_path)
    pages = [p.relative_to(root / "docs").as_posix() for p in (root / "docs").rglob("*.md")]
    resolver = LinkResolver(Routes(site, pages), lambda rel: (root / "docs" / rel).is_file())
    found = resolver.locate("api/native/setup.md", target)
    assert found.file is None or (root / "docs" / found.file).resolve().is_relative_to(root)


_WORD = st.text(alphabet="abcxyz_", min_size=1, max_size=6)


@given(
    folders=st.lists(_WORD, max_size=3),
    date=st.tuples(st.integers(1000, 9999), st.integers(1, 12), st.integers(1, 31), st.booleans()),
    seps=st.tuples(st.sampled_from("-/"), st.sampled_from("-/")),
    text=st.lists(_WORD, min_size=1, max_size=3),
    index=st.booleans(),
    suffix=st.sampled_from([".md", ".mdx"]),
)
def test_each_dated_post_is_among_the_files_its_route_is_looked_for_in(
    folders: list[str],
    date: tuple[int, int, int, bool],
    seps: tuple[str, str],
    text: list[str],
    index: bool,
    suffix: str,
) -> None:
    """The resolver's fallback for a post the index does not hold inverts Docusaurus' own rule."""
    from udm.site.routes import _blog_files, _blog_slug

    year, month, day, padded = date
    written = f"{month:02}{seps[0]}{day:02}" if padded else f"{month}{seps[0]}{day}"
    rel = "".join(f"{f}/" for f in folders) + f"{year}{seps[0]}{written}{seps[1]}" + "/".join(text)
    rel += ("/index" if index else "") + suffix
    route = _blog_slug(rel)
    assert rel in _blog_files(route), (rel, route)
    assert all(_blog_slug(other) == route for other in _blog_files(route))


def test_a_dated_post_the_index_skipped_is_found_at_its_route(tmp_path: Path) -> None:
    """Posts the index does not hold (a file it skipped) are looked for at each path Docusaurus routes
    to their route: a one-digit month, a folder before the date, the date as folders."""
    posts = {
        "blog/2021-5-1-x.md": "/blog/2021/5/1/x",
        "blog/releases/2021-05-01-v1.md": "/blog/2021/05/01/releases/v1",
        "blog/2022/01/02/deep/index.mdx": "/blog/2022/01/02/deep",
        "blog/2026-04-02-name/index.md": "/blog/2026/04/02/name/",
    }
    write_tree(tmp_path, {**PAGES, **dict.fromkeys(posts, "# Post\n")})
    site = detect_site(tmp_path, stop=tmp_path)
    docs = [p.relative_to(tmp_path).as_posix() for p in (tmp_path / "docs").rglob("*.md")]
    resolver = LinkResolver(Routes(site, docs), lambda rel: (tmp_path / rel).is_file())
    for post, route in posts.items():
        assert resolver.locate("docs/auth_api.md", route).file == post, route
    # A post in a folder Docusaurus leaves out (`_drafts`) is no page at its route.
    write_tree(tmp_path, {"blog/_drafts/2021-01-01-x.md": "# X\n"})
    missing = (
        "/blog/2021/05/01/v1",
        "/blog/2021/5/1/y",
        "/blog/2021/05/01/v1/releases",
        "/blog/2021/01/01/_drafts/x",
    )
    for route in missing:
        assert resolver.locate("docs/auth_api.md", route).file is None, route
