"""Jekyll (GitHub Pages) conventions, on a site fixture written here: pages where they lie, collections
under their permalinks, posts by date and category, a page's own `permalink` and `redirect_from`,
`baseurl`, HTML pages with front matter, URL-relative links, and the files Jekyll builds no page from.
On Jekyll's own docs 157 lint errors were false before (collections and `../x/` links), 1 after."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from udm.config import load_settings
from udm.site.routes import detect_site

from .conftest import page_verdicts, write_tree

CONFIG = """\
title: A Jekyll site
baseurl: /proj
permalink: pretty
collections:
  docs:
    output: true
    permalink: /:collection/:path/
  hidden:
    output: false
exclude:
  - notes/
plugins:
  - jekyll-redirect-from
"""

OTHER = """\
# Other Linux

[u](../ubuntu/) [abs](/docs/install/ubuntu/) [based](/proj/docs/install/ubuntu/)
[anchor](../ubuntu/#setup) [no anchor](../ubuntu/#nope) [file](ubuntu.md)
[home](/) [showcase](/showcase/) [about](/about/) [about html](/about.html)
[post](/2024/01/02/hello/) [categorised](/blog/2024/03/04/cat/) [tagged](/news/2024/05/06/tagged/)
[moved](/old-about/) [own](/custom/place/) [hidden](../../_hidden/x.md) [gone](/docs/missing/)
[stylesheet](/assets/site.css)
"""


def _site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    write_tree(
        site,
        {
            "_config.yml": CONFIG,
            "index.html": "---\nlayout: home\n---\n<h1>Home</h1>\n",
            "pages/showcase.html": "---\npermalink: /showcase/\n---\n<p>Showcase</p>\n",
            "about.md": "---\nredirect_from:\n  - /old-about/\n---\n# About\n",
            "_docs/install/ubuntu.md": "# Ubuntu\n\n## Setup\n",
            # What `../ubuntu/` would name from the page's folder: not where its URL leads.
            "_docs/ubuntu.md": "# Another Ubuntu\n",
            "_docs/install/other-linux.md": OTHER,
            "_docs/placed.md": "---\npermalink: /custom/place/\n---\n# Placed\n",
            "_posts/2024-01-02-hello.md": "# Hello\n",
            "blog/_posts/2024-03-04-cat.md": "# Cat\n",
            "_posts/2024-05-06-tagged.md": "---\ncategories: [News]\n---\n# Tagged\n",
            "_hidden/x.md": "# Hidden\n",
            "_includes/part.md": "# Part\n",
            "notes/todo.md": "# Todo\n\n[about](../about.md) [part](../_includes/part.md)\n",
            "assets/site.css": "body {}\n",
        },
    )
    (tmp_path / ".git").mkdir()
    return site


def test_the_config_is_read_as_jekyll(tmp_path: Path) -> None:
    site = detect_site(_site(tmp_path), stop=tmp_path)
    assert site.generator == "jekyll" and site.base_path == "/proj"
    assert ("collection:docs", "/:collection/:path/") in site.permalinks
    assert ("", "index.html") in site.html_pages and ("showcase", "pages/showcase.html") in site.html_pages


def test_links_land_where_jekyll_writes_the_pages(tmp_path: Path) -> None:
    site = _site(tmp_path)
    settings = load_settings(cwd=tmp_path, root=site, state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "_docs/install/other-linux.md") == {
        "../ubuntu/": True,  # relative to the page's URL /docs/install/other-linux/
        "/docs/install/ubuntu/": True,
        "/proj/docs/install/ubuntu/": True,  # under the baseurl
        "../ubuntu/#setup": True,
        "../ubuntu/#nope": False,
        "ubuntu.md": True,  # a Markdown file, as GitHub and jekyll-relative-links read it
        "/": True,  # index.html
        "/showcase/": True,  # an HTML page's own permalink
        "/about/": True,
        "/about.html": True,
        "/2024/01/02/hello/": True,  # a post, by the `pretty` style
        "/blog/2024/03/04/cat/": True,  # the folder above `_posts` is its category
        "/news/2024/05/06/tagged/": True,  # front matter categories, lower-cased
        "/old-about/": True,  # redirect_from
        "/custom/place/": True,  # the page's own permalink
        "../../_hidden/x.md": False,  # a collection not written out
        "/docs/missing/": False,
        "/assets/site.css": True,  # copied as it is
    }


def test_an_excluded_file_is_read_on_github_and_a_partial_is_no_page(tmp_path: Path) -> None:
    site = _site(tmp_path)
    settings = load_settings(cwd=tmp_path, root=site, state_dir=tmp_path / ".st")
    # notes/ is excluded: its links name the repository's files, as GitHub shows them.
    assert page_verdicts(settings, "notes/todo.md") == {"../about.md": True, "../_includes/part.md": True}


def test_a_page_linked_by_its_file_path_in_a_collection_is_found(tmp_path: Path) -> None:
    site = _site(tmp_path)
    (site / "about.md").write_text("# About\n\n[placed](/custom/place/) [x](_docs/install/ubuntu.md)\n")
    settings = load_settings(cwd=tmp_path, root=site, state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "about.md") == {"/custom/place/": True, "_docs/install/ubuntu.md": True}


@pytest.mark.parametrize(
    ("files", "generator"),
    [
        ({"_config.yml": "title: A book\n", "_toc.yml": "format: jb-book\n"}, "none"),  # Jupyter Book
        ({"_config.yml": "title: Just a title\n"}, "none"),  # nothing Jekyll's
        ({"_config.yml": "title: T\n", "_layouts/default.html": "x"}, "jekyll"),
        ({"_config.yml": "theme: minima\n"}, "jekyll"),
        ({"_config.yml": "remote_theme: pages-themes/cayman\n"}, "jekyll"),
        ({"_config.yml": "[not: yaml\n"}, "none"),
    ],
    ids=["jupyter-book", "title-only", "layouts", "theme", "remote-theme", "invalid"],
)
def test_a_config_named_like_jekylls_is_jekylls_only_when_it_reads_so(
    tmp_path: Path, files: dict[str, str], generator: str
) -> None:
    write_tree(tmp_path / "site", {**files, "index.md": "# Home\n"})
    (tmp_path / ".git").mkdir()
    assert detect_site(tmp_path / "site", stop=tmp_path).generator == generator


def test_hostile_collections_and_permalinks_are_contained(tmp_path: Path) -> None:
    # Collection names that climb out, a huge list, tokens Jekyll does not have: no folder outside
    # the site is read as a collection, an unknown token leaves the page at its path.
    names = "".join(f"  c{i}:\n    output: true\n" for i in range(200))
    config = (
        "baseurl: /b\ncollections:\n  ../../etc:\n    output: true\n  ok:\n    output: true\n"
        "    permalink: /:nonsense/:path/\n" + names
    )
    site = tmp_path / "site"
    write_tree(site, {"_config.yml": config, "_ok/a.md": "# A\n", "index.md": "[a](/ok/a)\n"})
    (tmp_path / ".git").mkdir()
    detected = detect_site(site, stop=tmp_path)
    assert all(".." not in m.folder for m in detected.mounts)
    assert len(detected.mounts) <= 51
    settings = load_settings(cwd=tmp_path, root=site, state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "index.md") == {"/ok/a": True}


def test_an_html_page_added_or_moved_is_read_again(tmp_path: Path) -> None:
    site = _site(tmp_path)
    (site / "about.md").write_text("# About\n\n[n](/news/) [s](/showcase/)\n")
    settings = load_settings(cwd=tmp_path, root=site, state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "about.md") == {"/news/": False, "/showcase/": True}
    (site / "pages/news.html").write_text("---\npermalink: /news/\n---\n<p>News</p>\n")
    (site / "pages/showcase.html").write_text("---\npermalink: /shown/\n---\n<p>Showcase</p>\n")
    assert page_verdicts(settings, "about.md") == {"/news/": True, "/showcase/": False}


def test_two_pages_of_one_folder_resolve_a_relative_url_each_from_its_own_route(tmp_path: Path) -> None:
    # `../setup/#only-in-guide` from a.md (at /docs/install/a/) finds no URL /docs/install/setup/ and
    # falls back to the file it names from its folder, _docs/setup.md; from b.md, whose permalink is
    # /guides/b/, the URL /guides/setup/ is the guide page holding the heading. What a.md found must
    # not answer for b.md.
    site = _site(tmp_path)
    write_tree(
        site,
        {
            "_docs/install/a.md": "# A\n\n[s](../setup/#only-in-guide)\n",
            "_docs/install/b.md": "---\npermalink: /guides/b/\n---\n# B\n\n[s](../setup/#only-in-guide)\n",
            "_docs/setup.md": "# Setup\n",
            "pages/guide-setup.md": "---\npermalink: /guides/setup/\n---\n# Guide\n\n## Only in guide\n",
        },
    )
    settings = load_settings(cwd=tmp_path, root=site, state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "_docs/install/a.md") == {"../setup/#only-in-guide": False}
    assert page_verdicts(settings, "_docs/install/b.md") == {"../setup/#only-in-guide": True}


DEFAULTS = """\
permalink: pretty
defaults:
  - scope: {path: "", type: posts}
    values: {permalink: "/blog/:year/:title/"}
  - scope: {path: guides}
    values: {permalink: "/g/:basename/", layout: guide}
  - scope: {path: guides/special}
    values: {permalink: "/s/:basename/"}
  - scope: {path: "guides/*.md", type: pages}
    values: {layout: no-permalink-here}
  - scope: {path: "", type: docs}
    values: {layout: doc}
  - scope: {path: notes}
    values: {permalink: "/first/:basename/"}
  - scope: {path: notes}
    values: {permalink: "/second/:basename/"}
  - not a scope
  - scope: {path: ["a list"]}
    values: {permalink: "/never/"}
"""


def test_front_matter_defaults_set_permalinks_by_scope(tmp_path: Path) -> None:
    # Jekyll's `defaults` are front matter for a scope (a path from the site's folder, a type): the
    # most specific scope's permalink is a page's, a later one of a scope as specific wins, and the
    # page's own permalink beats them all. Before, such pages were looked for at their paths.
    site = tmp_path / "site"
    write_tree(
        site,
        {
            "_config.yml": DEFAULTS,
            "guides/a.md": "# A\n",
            "guides/special/b.md": "# B\n",
            "guides/own.md": "---\npermalink: /own/\n---\n# Own\n",
            "notes/n.md": "# N\n",
            "_posts/2024-01-02-hello.md": "# Hello\n",
            "other.md": "# Other\n",
            "index.md": (
                "# Home\n\n[a](/g/a/) [b](/s/b/) [own](/own/) [n](/second/n/) [hello](/blog/2024/hello/)\n"
                "[other](/other/) [old a](/guides/a/) [first n](/first/n/)\n"
            ),
        },
    )
    (tmp_path / ".git").mkdir()
    settings = load_settings(cwd=tmp_path, root=site, state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "index.md") == {
        "/g/a/": True,
        "/s/b/": True,  # guides/special is more specific than guides
        "/own/": True,
        "/second/n/": True,  # the later of two scopes as specific
        "/blog/2024/hello/": True,
        "/other/": True,  # no scope: the site's style
        "/guides/a/": False,  # where the page would be without its scope's permalink
        "/first/n/": False,
    }
    # The manual is the site's guides/ folder: its pages keep the routes the site's scopes give them.
    (site / "guides" / "links.md").write_text("# L\n\n[a](/g/a/) [b](/s/b/)\n")
    settings = load_settings(cwd=tmp_path, root=site / "guides", state_dir=tmp_path / ".st2")
    assert page_verdicts(settings, "links.md") == {"/g/a/": True, "/s/b/": True}


def test_hostile_front_matter_defaults_are_bounded(tmp_path: Path) -> None:
    # Thousands of scopes, globs of stars that backtrack in a naive matcher, scope paths past any real
    # path, values of the wrong types: read in bounded time, nothing raised, the sane scope applied.
    entries = "".join(
        f'  - scope: {{path: "{"*" * 150}x{i}"}}\n    values: {{permalink: "/p{i}/:basename/"}}\n'
        for i in range(2000)
    )
    config = (
        "defaults:\n"
        + entries
        + '  - scope: {path: "'
        + "a/" * 400
        + '"}\n    values: {permalink: "/long/"}\n'
        + "  - scope: {path: 7, type: [x]}\n    values: {permalink: 9}\n"
        + '  - scope: {path: "docs"}\n    values: {permalink: "/d/:basename/"}\n'
    )
    site = tmp_path / "site"
    pages = {f"docs/p{i}.md": f"# P{i}\n" for i in range(200)}
    write_tree(site, {"_config.yml": config, **pages, "index.md": "[p](/d/p7/) [q](/docs/p7/)\n"})
    (tmp_path / ".git").mkdir()
    settings = load_settings(cwd=tmp_path, root=site, state_dir=tmp_path / ".st")
    started = time.perf_counter()
    verdicts = page_verdicts(settings, "index.md")
    assert time.perf_counter() - started < 20
    # Only the first 200 entries are read (star globs matching no page): the `docs` scope after them
    # is not, so the page stays at its path.
    assert verdicts == {"/d/p7/": False, "/docs/p7/": True}
