"""Docusaurus versioned docs: `versions.json` and `versioned_docs/version-<v>/`, routed as Docusaurus
routes them (the last version at the route base, the others under `/<version>`, the current docs under
`/next` unless they are the last version). The fixtures are written by the tests.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from udm.config import Settings, load_settings
from udm.site.routes import detect_site

from .conftest import link_verdicts, page_verdicts, write_tree

LINKS = {
    "/docs/intro": "the last version (2.0)",
    "/docs/intro#setup-in-two": "an anchor of 2.0's page",
    "/docs/1.0/intro#setup-in-one": "an anchor of 1.0's page",
    "/docs/1.0/intro#setup-in-two": "2.0's anchor, missing in 1.0",
    "/docs/next/intro": "the current docs",
    "/docs/next/fresh": "a page only the current docs have",
    "/docs/fresh": "that page, not released",
    "/docs/3.0/intro": "a version that is not released",
}


def _site(tmp_path: Path, config_docs: str = "{}", versions: object = ("2.0", "1.0")) -> Path:
    files = {
        "docusaurus.config.js": f"module.exports = {{ baseUrl: '/', presets: [['classic', {{ docs: {config_docs} }}]] }};\n",
        "docs/intro.md": "# Intro\n\n## Setup in three\n",
        "docs/fresh.md": "# Fresh\n",
        "versioned_docs/version-2.0/intro.md": "# Intro\n\n## Setup in two\n",
        "versioned_docs/version-1.0/intro.md": "# Intro\n\n## Setup in one\n",
        "docs/links.md": "# Links\n\n" + "\n".join(f"- [x]({t})" for t in LINKS) + "\n",
    }
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "versions.json").write_text(
        json.dumps(list(versions) if isinstance(versions, tuple) else versions)
    )
    return tmp_path


def _broken(root: Path, manual: Path) -> set[str]:
    settings = load_settings(cwd=root, root=manual, state_dir=root / ".st")
    links = "links.md" if manual.name == "docs" else "docs/links.md"
    return {t for (f, t), ok in link_verdicts(settings).items() if f == links and ok is False}


def test_versions_route_as_docusaurus_routes_them(tmp_path: Path) -> None:
    root = _site(tmp_path)
    site = detect_site(root, stop=root)
    assert [(m.folder, m.prefix) for m in site.mounts if m.kind == "docs"] == [
        ("docs", "docs/next"),
        ("versioned_docs/version-2.0", "docs"),
        ("versioned_docs/version-1.0", "docs/1.0"),
    ]
    assert _broken(root, root) == {"/docs/1.0/intro#setup-in-two", "/docs/fresh", "/docs/3.0/intro"}


def test_last_version_current(tmp_path: Path) -> None:
    root = _site(tmp_path, "{ lastVersion: 'current', versions: { current: { label: 'v3' } } }")
    broken = _broken(root, root)
    # The current docs at /docs, 2.0 under /docs/2.0: 2.0's anchor is not the current page's.
    assert broken == {
        "/docs/intro#setup-in-two",
        "/docs/1.0/intro#setup-in-two",
        "/docs/next/intro",
        "/docs/next/fresh",
        "/docs/3.0/intro",
    }


def test_current_path_from_the_config(tmp_path: Path) -> None:
    root = _site(tmp_path, "{ versions: { current: { path: 'unreleased' } } }")
    site = detect_site(root, stop=root)
    assert ("docs", "docs/unreleased") in [(m.folder, m.prefix) for m in site.mounts]


def test_versions_beside_a_docs_manual(tmp_path: Path) -> None:
    # The manual is docs/: the released versions are published beside it, checked on disk.
    root = _site(tmp_path)
    broken = _broken(root, root / "docs")
    assert "/docs/1.0/intro" not in broken and "/docs/intro" not in broken
    assert "/docs/3.0/intro" in broken and "/docs/fresh" in broken


def test_without_versions_json_the_docs_are_the_route_base(tmp_path: Path) -> None:
    root = _site(tmp_path)
    (root / "versions.json").unlink()
    site = detect_site(root, stop=root)
    assert [(m.folder, m.prefix) for m in site.mounts if m.kind == "docs"] == [("docs", "docs")]


@pytest.mark.parametrize(
    "versions",
    [
        {"2.0": True},  # not a list
        ["../../etc", "a/b", "", 7, None],  # names that are no folder name
        "[" * 100_000,  # past the data limits
    ],
)
def test_a_hostile_versions_json_is_ignored(tmp_path: Path, versions: object) -> None:
    root = _site(tmp_path)
    (root / "versions.json").write_text(versions if isinstance(versions, str) else json.dumps(versions))
    site = detect_site(root, stop=root)
    assert not site.problems
    assert [(m.folder, m.prefix) for m in site.mounts if m.kind == "docs"] == [("docs", "docs")]


def test_a_new_versions_json_is_seen_by_a_running_process(tmp_path: Path) -> None:
    root = _site(tmp_path)
    (root / "versions.json").unlink()
    from udm.site.detect import site_for

    assert [m.prefix for m in site_for(root, stop=root).mounts if m.kind == "docs"] == ["docs"]
    (root / "versions.json").write_text('["2.0"]')
    assert [m.prefix for m in site_for(root, stop=root).mounts if m.kind == "docs"] == ["docs/next", "docs"]


def test_a_relative_link_climbs_through_the_base_path(tmp_path: Path) -> None:
    # Ionic: baseUrl '/docs/', docs at the route base; api/text's URL is /docs/api/text, so
    # `../../docs/theming/colors` is /docs/theming/colors, a page of the site.
    files = {
        "docusaurus.config.js": "module.exports = { baseUrl: '/docs/', presets: [['classic', "
        "{ docs: { routeBasePath: '/' } }]] };\n",
        "docs/api/text.md": "# Text\n\n[c](../../docs/theming/colors) [d](../theming/colors) "
        "[out](../../../theming/colors) [gone](../../docs/theming/nope)\n",
        "docs/theming/colors.md": "# Colors\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    settings = load_settings(cwd=tmp_path, root=tmp_path / "docs", state_dir=tmp_path / ".st")
    verdicts = page_verdicts(settings, "api/text.md")
    assert verdicts["../../docs/theming/colors"] is True
    assert verdicts["../theming/colors"] is True
    assert verdicts["../../docs/theming/nope"] is False


def test_doc_ids_are_unique_per_folder_not_across_the_manual(tmp_path: Path) -> None:
    # jest's docs: `id: cli` in docs/ and in each versioned_docs/version-*/ is one doc per version;
    # Docusaurus refuses two docs of one id in one folder, and a manual's own ID family stays global.
    root = _site(tmp_path)
    for rel, text in {
        "docs/guides/setup.md": "---\nid: setup\n---\n# Setup\n",
        "docs/api/setup.md": "---\nid: setup\n---\n# Setup API\n",
        "versioned_docs/version-2.0/setup.md": "---\nid: setup\n---\n# Setup\n",
        "docs/guides/other.md": "---\nid: setup\n---\n# Same folder\n",
        "docs/a.md": "---\nid: COMP-001\n---\n# A\n",
        "docs/api/b.md": "---\nid: COMP-001\n---\n# B\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    settings = load_settings(cwd=root, root=root, state_dir=root / ".st")
    from udm.index import lint

    dups = sorted((f.file, f.message.split(" is ")[0]) for f in lint(settings) if f.rule == "duplicate-id")
    assert dups == [("docs/api/b.md", "COMP-001"), ("docs/guides/setup.md", "setup")]
    plain = settings.model_copy(update={"site_generator": "none"})
    assert len([f for f in lint(plain) if f.rule == "duplicate-id"]) == 4


def test_further_docs_plugin_instances_are_mounted_with_their_versions(tmp_path: Path) -> None:
    """React Native's site: `['content-docs', {id: 'architecture', path, routeBasePath}]` in `plugins`
    publishes another docs folder; an instance's versions are `<id>_versions.json`."""
    write_tree(
        tmp_path,
        {
            "docusaurus.config.ts": (
                "export default {\n  baseUrl: '/',\n  presets: [['classic', {docs: {path: 'docs'}}]],\n"
                "  plugins: [\n    ['content-docs', {id: 'architecture', path: 'architecture',"
                " routeBasePath: '/architecture'}],\n"
                "    ['@docusaurus/plugin-content-docs', {id: 'community', path: 'community',"
                " routeBasePath: 'community', ...common}],\n"
                "    ['@docusaurus/plugin-pwa', {debug: true, path: 'nothing'}],\n  ],\n};\n"
            ),
            "community_versions.json": '["1.0"]\n',
            "docs/intro.md": (
                "# Intro\n\n[a](/architecture/overview#layers) [b](/community/next/support) [c](/community/support)\n"
                "[d](/architecture/missing) [e](/community/1.0/support)\n"
            ),
            "architecture/overview.md": "# Overview\n\n## Layers\n",
            "community/support.md": "# Support (next)\n",
            "community_versioned_docs/version-1.0/support.md": "# Support\n",
        },
    )
    site = detect_site(tmp_path, stop=tmp_path)
    assert {(m.folder, m.prefix) for m in site.mounts if m.kind == "docs"} == {
        ("docs", "docs"),
        ("architecture", "architecture"),
        ("community", "community/next"),
        ("community_versioned_docs/version-1.0", "community"),
    }
    found = page_verdicts(
        load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / ".st"), "docs/intro.md"
    )
    assert found == {
        "/architecture/overview#layers": True,
        "/community/next/support": True,
        "/community/support": True,
        "/architecture/missing": False,
        "/community/1.0/support": False,
    }


# React Native's website: the manual is website/, the current docs are `../docs` beside it, and a
# page there is routed by its front matter `id` or `slug` as Docusaurus routes it.
BESIDE = {
    "/docs/next/turbo-intro": True,  # `id: turbo-intro` of docs/turbo.md
    "/docs/next/turbo-intro#build-and-run": True,
    "/docs/next/turbo-intro#nope": False,
    "/docs/next/turbo": False,  # its id moved it: no page at its file name
    "/docs/next/install": True,  # `slug: /install` of docs/guide/setup.mdx
    "/docs/next/guide/setup": False,
    "/docs/next/basics": True,  # 01-basics/index.md: the number prefix and the index dropped
    "/docs/next/plain": True,  # no front matter: its path
    "/docs/next/partial": False,  # `_partial.md`: Docusaurus makes no page of it
    "/docs/next/draft": False,  # in `_drafts/`
    "/docs/next/pkg": False,  # in node_modules/
    "/docs/next/nope": False,
    "/docs/intro": True,  # the released version, inside the manual
}


def _beside_site(tmp_path: Path) -> Settings:
    write_tree(
        tmp_path,
        {
            "website/docusaurus.config.js": (
                "module.exports = { presets: [['classic', { docs: { path: '../docs' } }]] };\n"
            ),
            "website/versions.json": '["1.0"]',
            "website/versioned_docs/version-1.0/intro.md": "# Intro\n",
            "website/blog/post.md": "# Post\n\n" + "\n".join(f"- [x]({t})" for t in BESIDE) + "\n",
            "docs/turbo.md": "---\nid: turbo-intro\ntitle: Turbo\n---\n# Turbo\n\n## Build and run\n",
            "docs/guide/setup.mdx": "---\nslug: /install\n---\n# Setup\n",
            "docs/01-basics/index.md": "# Basics\n",
            "docs/plain.md": "# Plain\n",
            "docs/_partial.md": "---\nid: partial\n---\n# Partial\n",
            "docs/_drafts/draft.md": "---\nid: draft\n---\n# Draft\n",
            "docs/node_modules/pkg/readme.md": "---\nid: pkg\n---\n# Pkg\n",
        },
    )
    (tmp_path / ".git").mkdir()
    return load_settings(cwd=tmp_path, root=tmp_path / "website", state_dir=tmp_path / ".st")


def test_pages_beside_the_manual_are_routed_by_their_front_matter(tmp_path: Path) -> None:
    assert page_verdicts(_beside_site(tmp_path), "blog/post.md") == BESIDE


def test_released_versions_beside_a_docs_manual_are_routed_by_id(tmp_path: Path) -> None:
    # Jest's layout: the manual is docs/ (the current docs), the released versions beside it in
    # website/versioned_docs; `/docs/x` is the last version's page whose id is x.
    write_tree(
        tmp_path,
        {
            "website/docusaurus.config.js": (
                "module.exports = { presets: [['classic', { docs: { path: '../docs' } }]] };\n"
            ),
            "website/versions.json": '["2.0", "1.0"]',
            "website/versioned_docs/version-2.0/TutorialReactNative.md": (
                "---\nid: tutorial-react-native\n---\n# React Native\n\n## Setup\n"
            ),
            "website/versioned_docs/version-1.0/Old.md": "---\nid: old-page\n---\n# Old\n",
            "docs/links.md": (
                "# Links\n\n[a](/docs/tutorial-react-native#setup) [b](/docs/TutorialReactNative) "
                "[c](/docs/1.0/old-page) [d](/docs/old-page) [e](/docs/tutorial-react-native#nope)\n"
            ),
        },
    )
    (tmp_path / ".git").mkdir()
    settings = load_settings(cwd=tmp_path, root=tmp_path / "docs", state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "links.md") == {
        "/docs/tutorial-react-native#setup": True,
        "/docs/TutorialReactNative": False,
        "/docs/1.0/old-page": True,
        "/docs/old-page": False,
        "/docs/tutorial-react-native#nope": False,
    }


def test_a_symbolic_link_out_of_the_folder_beside_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    write_tree(outside, {"secret.md": "---\nid: secret\n---\n# Secret\n"})
    settings = _beside_site(tmp_path / "repo")
    (tmp_path / "repo" / "docs" / "linked.md").symlink_to(outside / "secret.md")
    (tmp_path / "repo" / "docs" / "folder").symlink_to(outside, target_is_directory=True)
    post = tmp_path / "repo" / "website" / "blog" / "post.md"
    post.write_text("# Post\n\n[s](/docs/next/secret) [l](/docs/next/linked) [f](/docs/next/folder/secret)\n")
    assert page_verdicts(settings, "blog/post.md") == {
        "/docs/next/secret": False,
        "/docs/next/linked": False,
        "/docs/next/folder/secret": False,
    }


def test_reading_a_folder_beside_is_bounded(tmp_path: Path) -> None:
    from udm.site.routes import _BESIDE_PAGES, beside_meta

    write_tree(
        tmp_path, {f"docs/p{k:05d}.md": f"---\nid: page-{k}\n---\n# P\n" for k in range(_BESIDE_PAGES + 5)}
    )
    (tmp_path / "docs" / "huge.md").write_text("---\nid: huge\n" + "x: y\n" * 200_000 + "---\n# Huge\n")
    (tmp_path / "manual").mkdir()
    pages, complete = beside_meta(tmp_path / "manual")("../docs")
    assert len(pages) == _BESIDE_PAGES and not complete
    # Only its first 16 KiB are read: a front matter that does not close there moves no route.
    assert pages[0] == ("../docs/huge.md", {})
    assert pages[1] == ("../docs/p00000.md", {"id": "page-0"})
    # Read again only when a page changes (each small refresh walks the folder anew).
    (tmp_path / "docs" / "p00000.md").write_text("---\nid: moved-page\n---\n# P\n")
    assert beside_meta(tmp_path / "manual")("../docs").pages[1] == ("../docs/p00000.md", {"id": "moved-page"})


def test_docs_and_blog_routes_follow_docusaurus_rules(tmp_path: Path) -> None:
    # getSlug: a category index (index, README, or the folder's name as written, any case) is its
    # folder's route whatever its id; a number prefix is dropped from folders and the file name, not
    # when telling an index. parseBlogFileName: a date anywhere in the path, one-digit months kept,
    # the folder before it kept, only `/index` dropped (`post/README.md` is no `/blog/post`).
    write_tree(
        tmp_path,
        {
            "docusaurus.config.js": "module.exports = { presets: [['classic', { docs: {} }]] };\n",
            "docs/guide/index.md": "---\nid: overview\n---\n# Guide\n",
            "docs/01-intro/intro.md": "# Intro\n",
            "docs/Guide2/guide2.md": "# Guide 2\n",
            "docs/rel/page.md": "---\nslug: custom\n---\n# Page\n",
            "blog/releases/2021-05-01-v1.md": "# v1\n",
            "blog/2021-5-1-x.md": "# x\n",
            "blog/post/README.md": "# Post\n",
            "blog/2026-04-02-name/index.md": "# Name\n",
            "docs/links.md": "# Links\n\n"
            + "\n".join(
                f"- [x]({t})"
                for t in [
                    "/docs/guide",
                    "/docs/guide/overview",
                    "/docs/intro/intro",
                    "/docs/intro",
                    "/docs/Guide2",
                    "/docs/rel/custom",
                    "/blog/2021/05/01/releases/v1",
                    "/blog/2021/05/01/v1",
                    "/blog/2021/5/1/x",
                    "/blog/post",
                    "/blog/2026/04/02/name",
                ]
            )
            + "\n",
        },
    )
    settings = load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "docs/links.md") == {
        "/docs/guide": True,
        "/docs/guide/overview": False,
        "/docs/intro/intro": True,
        "/docs/intro": False,
        "/docs/Guide2": True,
        "/docs/rel/custom": True,
        "/blog/2021/05/01/releases/v1": True,
        "/blog/2021/05/01/v1": False,
        "/blog/2021/5/1/x": True,
        "/blog/post": False,
        "/blog/2026/04/02/name": True,
    }


def test_a_route_is_looked_up_by_the_key_its_page_is_filed_under(tmp_path: Path) -> None:
    """Docusaurus drops `/index` only: a blog post `post/README.md` is /blog/post/README, a docs
    README is its folder's route and no other, and a doc whose `id` is `index` is /docs/y/index."""
    write_tree(
        tmp_path,
        {
            "docusaurus.config.js": "module.exports = { presets: [['classic', { docs: {}, blog: {} }]] };\n",
            "blog/post/README.md": "# Post\n",
            "blog/other/index.md": "# Other\n",
            "docs/guide/README.md": "# Guide\n",
            "docs/y/page.md": "---\nid: index\n---\n# Y\n",
            "src/pages/foo/README.md": "# Foo\n",
            "docs/links.md": "# Links\n\n"
            + "\n".join(
                f"- [x]({t})"
                for t in [
                    "/blog/post/README",
                    "/blog/post",
                    "/blog/other",
                    "/docs/guide",
                    "/docs/guide/README",
                    "/docs/y/index",
                    "/foo/README",
                    "/foo",
                ]
            )
            + "\n",
        },
    )
    settings = load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "docs/links.md") == {
        "/blog/post/README": True,
        "/blog/post": False,
        "/blog/other": True,
        "/docs/guide": True,
        "/docs/guide/README": False,
        "/docs/y/index": True,
        "/foo/README": True,  # a page of src/pages: fileToPath folds `index` only
        "/foo": False,
    }


@pytest.mark.parametrize(
    ("files", "root", "page", "verdicts"),
    [
        (
            {
                "next.config.js": "const withNextra = require('nextra')({});\nmodule.exports = withNextra({});\n",
                "pages/index.mdx": "# L\n\n[a](/guide/README) [b](/guide)\n",
                "pages/guide/README.mdx": "# G\n",
            },
            "",
            "pages/index.mdx",
            {"/guide/README": True, "/guide": False},
        ),
        (
            {
                "astro.config.mjs": (
                    "import starlight from '@astrojs/starlight';\n"
                    "export default defineConfig({ integrations: [starlight({ title: 'x' })] });\n"
                ),
                "src/content/docs/index.md": "# L\n\n[a](/guide/readme/) [b](/guide/)\n",
                "src/content/docs/guide/README.md": "# G\n",
            },
            "src/content/docs",
            "index.md",
            {"/guide/readme/": True, "/guide/": False},
        ),
    ],
    ids=["nextra", "starlight"],
)
def test_a_readme_is_its_own_route_where_only_index_is_a_folders_page(
    tmp_path: Path, files: dict[str, str], root: str, page: str, verdicts: dict[str, bool]
) -> None:
    write_tree(tmp_path, files)
    (tmp_path / ".git").mkdir()
    settings = load_settings(cwd=tmp_path, root=tmp_path / root, state_dir=tmp_path / ".st")
    assert page_verdicts(settings, page) == verdicts
