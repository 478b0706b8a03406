"""Zola sites: `config.toml` (or `zola.toml`) with `base_url`, pages routed as Zola routes them, the
internal links `@/path.md#anchor`, and heading ids made by Zola's slugify. Fixtures written by the tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from udm.config import load_settings
from udm.site.routes import detect_site

from .conftest import page_verdicts, write_tree

CONFIG = (
    'base_url = "https://example.org/"\ntitle = "Z"\ntaxonomies = [{name = "tags"}]\n'
    '[languages.fr]\ntitle = "Z fr"\ntaxonomies = [{name = "Catégories"}]\n'
)

LINKS = {
    "@/docs/install.md": True,
    "@/docs/install.md#node-npm": True,  # Zola's slug of `Node & npm`
    "@/docs/install.md#node--npm": False,  # GitHub's form is no id on a Zola site
    "@/docs/install.md#custom": True,  # `{#custom}`
    "@/docs/_index.md": True,
    "@/docs/missing.md": False,
    "@/blog/bundle/index.md#setup": True,
    "@/../config.toml": False,
    "/docs/install/": True,
    "/docs/": True,
    "/blog/launch/": True,  # the file name's date is no part of the route
    "/blog/2024-01-15-launch/": False,
    "/blog/bundle/": True,  # a folder with index.md and its assets is one page
    "/blog/bundle/shot.png": True,
    "/blog/moved-here/": True,  # front matter slug
    "/blog/my-draft/": False,
    "/about-us/": True,  # front matter path
    "/about/": False,
    "/old-about/": True,  # front matter aliases
    "/fr/guide/": True,  # guide.fr.md, fr one of the site's languages
    "/guide/": False,
    "/hello-world/": True,  # `Hello World.md`, slugified
    "/fr/contact/": True,  # a translation's front matter path, as written
    "/fr/fr/contact/": False,
    "/tags/": True,  # a taxonomy's list and term pages, Zola makes them
    "/tags/rust/": True,
    "/fr/categories/": True,  # a language's own taxonomy, its name slugified
    "/topics/": False,
    "/atom.xml": True,
    "/blog/atom.xml": True,
}


def _site(tmp_path: Path, config: str = CONFIG, name: str = "config.toml") -> Path:
    write_tree(
        tmp_path,
        {
            name: config,
            "static/logo.png": "x",
            "content/_index.md": "+++\ntitle = 'Home'\n+++\n# Home\n\n"
            + "\n".join(f"- [x]({t})" for t in LINKS)
            + "\n",
            "content/docs/_index.md": "+++\ntitle = 'Docs'\n+++\n# Docs\n",
            "content/docs/install.md": "+++\ntitle = 'Install'\n+++\n# Install\n\n## Node & npm\n\n## Other {#custom}\n",
            "content/blog/_index.md": "# Blog\n",
            "content/blog/2024-01-15-launch.md": "# Launch\n",
            "content/blog/bundle/index.md": "# Bundle\n\n## Setup\n",
            "content/blog/bundle/shot.png": "png",
            "content/blog/old-name.md": "+++\nslug = 'moved-here'\n+++\n# Moved\n",
            "content/about.md": "+++\npath = '/about-us'\naliases = ['/old-about/']\n+++\n# About\n",
            "content/guide.fr.md": "# Guide\n",
            "content/Hello World.md": "# Hello\n",
            "content/contact.fr.md": "+++\npath = '/fr/contact'\n+++\n# Contact\n",
        },
    )
    (tmp_path / ".git").mkdir()
    return tmp_path


def test_zola_links_resolve_as_zola_builds_them(tmp_path: Path) -> None:
    root = _site(tmp_path)
    settings = load_settings(cwd=root, root=root, state_dir=root / ".st")
    assert page_verdicts(settings, "content/_index.md") == LINKS


def test_a_manual_rooted_at_the_content_folder_or_below_it(tmp_path: Path) -> None:
    root = _site(tmp_path)
    settings = load_settings(cwd=root, root=root / "content", state_dir=root / ".st")
    assert page_verdicts(settings, "_index.md") == LINKS
    write_tree(
        root, {"content/docs/links.md": "# L\n\n[a](@/docs/install.md#node-npm) [b](@/blog/nope.md)\n"}
    )
    below = load_settings(cwd=root, root=root / "content" / "docs", state_dir=root / ".st2")
    assert page_verdicts(below, "links.md") == {"@/docs/install.md#node-npm": True, "@/blog/nope.md": False}


@pytest.mark.parametrize(
    ("files", "generator"),
    [
        ({"config.toml": CONFIG}, "zola"),
        ({"zola.toml": 'title = "no base_url needed in zola.toml"\n'}, "zola"),
        ({"config.toml": 'base_url = "/"\ntheme = "t"\n', "themes/t/theme.toml": ""}, "zola"),
        ({"config.toml": 'baseURL = "https://example.org/"\n'}, "hugo"),
        ({"config.toml": "base_url = [1\n"}, "none"),
        ({"config.toml": 'title = "some other tool"\n'}, "none"),
    ],
)
def test_zola_is_told_from_hugo_by_its_config(tmp_path: Path, files: dict[str, str], generator: str) -> None:
    write_tree(tmp_path, {**files, "content/_index.md": "# H\n"})
    assert detect_site(tmp_path / "content", stop=tmp_path).generator == generator


def test_heading_ids_zola_cannot_be_told_here_are_unknown(tmp_path: Path) -> None:
    # Zola transliterates (`日本` is `ri-ben`); on a page with such a heading an id not found is unknown.
    root = _site(tmp_path)
    write_tree(
        root,
        {
            "content/cjk.md": "# 日本\n\n## Plain\n",
            "content/links.md": "# L\n\n[a](@/cjk.md#ri-ben) [b](@/cjk.md#plain) [c](@/docs/install.md#nope)\n",
        },
    )
    settings = load_settings(cwd=root, root=root, state_dir=root / ".st")
    assert page_verdicts(settings, "content/links.md") == {
        "@/cjk.md#ri-ben": None,
        "@/cjk.md#plain": True,  # an ASCII heading's id is known
        "@/docs/install.md#nope": False,
    }


def test_safe_anchors_keep_the_heading_text(tmp_path: Path) -> None:
    root = _site(
        tmp_path, config=CONFIG.replace("[languages.fr]", '[slugify]\nanchors = "safe"\n[languages.fr]')
    )
    write_tree(
        root,
        {"content/links.md": "# L\n\n[a](@/docs/install.md#Node_&_npm) [b](@/docs/install.md#node-npm)\n"},
    )
    settings = load_settings(cwd=root, root=root, state_dir=root / ".st")
    assert page_verdicts(settings, "content/links.md") == {
        "@/docs/install.md#Node_&_npm": True,
        "@/docs/install.md#node-npm": False,
    }


@pytest.mark.parametrize(
    "target",
    [
        "@/" + "a/" * 3000 + "x.md",
        "@/%2e%2e/%2e%2e/etc/passwd.md",
        "@/../../x.md",
        "@/",
        "@//etc/x.md",
        "@/x.md\x00",
    ],
)
def test_hostile_internal_links_land_nowhere(tmp_path: Path, target: str) -> None:
    root = _site(tmp_path)
    (tmp_path / "x.md").write_text("# outside the content\n")
    write_tree(root, {"content/links.md": f"# L\n\n[a](<{target}>)\n"})
    settings = load_settings(cwd=root, root=root / "content", state_dir=root / ".st")
    assert set(page_verdicts(settings, "links.md").values()) <= {False}


def test_a_patch_that_changes_zolas_id_of_a_linked_heading_is_refused(tmp_path: Path) -> None:
    # `What's new` and `Whats new` are one id for GitHub (`whats-new`), two for Zola.
    from udm.patch import apply_patch, parse_patch

    root = _site(tmp_path)
    write_tree(
        root,
        {
            "content/news.md": "+++\n+++\n# News\n\n## What's new\n\nText.\n",
            "content/links.md": "# L\n\n[n](@/news.md#what-s-new)\n",
        },
    )
    (root / "state").mkdir()
    settings = load_settings(cwd=root, root=root / "content", state_dir=root / "state")
    rename = {"op": "rename_heading", "file": "news.md", "section": "What's new", "to": "Whats new"}
    result = apply_patch(parse_patch({"description": "t", "operations": [rename]}), settings)
    assert result.status == "invalid" and "@/news.md#what-s-new would break" in (result.error or ""), result
