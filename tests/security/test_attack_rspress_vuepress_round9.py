"""Attacker round 9: Rspress sites (commit b0cbda3, 439c209) and VuePress sites (commit 6d5fe3a). Each
test either guards a behaviour that holds, or was written failing on a real bug (marked `# FINDING`,
with what happened and what should, checked against Rspress' source (packages/core/src/node/route,
mdx/remarkPlugins/link.ts) and VuePress 1's (packages/@vuepress/*)). All twelve findings are fixed (two
later: GitHub's repeat id on VuePress 1, with the site's heading rule made exclusive, and a relative
link to a file that is no page on Rspress, with images told from links)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from udm.config import load_settings
from udm.site.anchors import vitepress_slug
from udm.site.routes import detect_site

from ..engine.conftest import link_verdicts, page_verdicts, write_tree

RSPRESS_I18N = """\
import { defineConfig } from '@rspress/core';
export default defineConfig({ root: 'docs', lang: 'en', locales: [{ lang: 'en' }, { lang: 'zh' }] });
"""
RSPRESS_PLAIN = (
    "import { defineConfig } from '@rspress/core';\nexport default defineConfig({ root: 'docs' });\n"
)
# VuePress 1: `module.exports` config and `vuepress@1` in package.json (markdown-it-anchor ^5, its own
# slugify in @vuepress/shared-utils, `.vue` pages, frontmatter permalinks).
VUEPRESS1_PACKAGE = '{"devDependencies": {"vuepress": "^1.9.10"}}\n'


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    write_tree(tmp_path, files)
    (tmp_path / ".git").mkdir(exist_ok=True)
    return tmp_path


def _verdicts(project: Path, page: str, root: Path | None = None) -> dict[str, bool | None]:
    settings = load_settings(cwd=project, root=root or project, state_dir=project / ".st")
    return page_verdicts(settings, page)


def _vuepress1(tmp_path: Path, files: dict[str, str]) -> Path:
    return _project(
        tmp_path,
        {
            "package.json": VUEPRESS1_PACKAGE,
            "docs/.vuepress/config.js": "module.exports = { title: 'x' }\n",
            **files,
        },
    )


# --- Rspress: wrong verdicts ----------------------------------------------------------------------


def test_rspress_manual_rooted_at_the_default_language_folder_serves_it_at_the_root(tmp_path: Path) -> None:
    # FINDING: with the manual root at `docs/en` (the default language's folder), the mount is
    # ('', prefix 'en') and the rewrite `en/:rest*` is matched against the path below the mount
    # (`guide/x.md`), so it never applies: the page's route is `en/guide/x`, and `/guide/x` (where
    # Rspress serves docs/en/guide/x.md: normalizeRoutePath drops the default language) is reported
    # broken. From the project root the same link resolves. Should: True from either root.
    files = {
        "rspress.config.ts": RSPRESS_I18N,
        "docs/en/index.md": "# Home\n\n[x](/guide/x)\n",
        "docs/en/guide/x.md": "# X\n",
        "docs/zh/guide/x.md": "# X\n",
    }
    project = _project(tmp_path, files)
    assert _verdicts(project, "docs/en/index.md") == {"/guide/x": True}  # guard: from the project root
    assert _verdicts(project, "index.md", root=project / "docs" / "en") == {"/guide/x": True}


def test_rspress_tsx_page_is_a_route(tmp_path: Path) -> None:
    # FINDING: Rspress' DEFAULT_PAGE_EXTENSIONS are .js .jsx .ts .tsx .md .mdx (shared/constants.ts):
    # `docs/playground.tsx` is the page /playground, but the link is reported broken.
    project = _project(
        tmp_path,
        {
            "rspress.config.ts": RSPRESS_PLAIN,
            "docs/index.md": "# Home\n\n[play](/playground)\n",
            "docs/playground.tsx": "export default function Playground() { return null; }\n",
        },
    )
    assert _verdicts(project, "docs/index.md") == {"/playground": True}


def test_rspress_relative_link_to_a_non_page_file_is_dead(tmp_path: Path) -> None:
    # FINDING: `[data](./data.json)` from docs/index.md is accepted because docs/data.json exists.
    # Rspress turns a relative link into a route (absolutePathToRoutePath -> /data.json), finds no route
    # and reports "Dead links found" (a production build fails); the file is not in <root>/public, so
    # the built site does not serve it either. Should: False (a file under public/ stays True).
    project = _project(
        tmp_path,
        {
            "rspress.config.ts": RSPRESS_PLAIN,
            "docs/index.md": "# Home\n\n[data](./data.json) [logo](/logo.png)\n",
            "docs/data.json": "{}\n",
            "docs/public/logo.png": "png",
        },
    )
    assert _verdicts(project, "docs/index.md") == {"./data.json": False, "/logo.png": True}


def test_rspress_relative_link_out_of_the_root_is_dead(tmp_path: Path) -> None:
    # FINDING: `[readme](../../README.md)` on docs/en/index.md names the repository's README, outside
    # Rspress' root: udm counts it (the file exists in the manual). Rspress resolves it to the route
    # of `../README` relative to docs/, no page: a dead link, the build fails. Should: False.
    project = _project(
        tmp_path,
        {
            "rspress.config.ts": RSPRESS_I18N,
            "README.md": "# Repository\n",
            "docs/en/index.md": "# Home\n\n[readme](../../README.md) [guide](./guide.md)\n",
            "docs/en/guide.md": "# Guide\n",
        },
    )
    assert _verdicts(project, "docs/en/index.md") == {"../../README.md": False, "./guide.md": True}


def test_rspress_readme_is_no_folder_index(tmp_path: Path) -> None:
    # FINDING: udm's generic INDEX_NAMES (index, readme, _index) make docs/guide/README.md the page
    # /guide/. Rspress only folds `index` (normalizeRoutePath: `/index$` -> `/`): README.md is
    # /guide/README, and `/guide/` is a dead link. Should: `/guide/` False, `/guide/README` True.
    project = _project(
        tmp_path,
        {
            "rspress.config.ts": RSPRESS_PLAIN,
            "docs/index.md": "# Home\n\n[folder](/guide/) [readme](/guide/README)\n",
            "docs/guide/README.md": "# Readme\n",
        },
    )
    assert _verdicts(project, "docs/index.md") == {"/guide/": False, "/guide/README": True}


# --- Rspress: unbounded time ----------------------------------------------------------------------


def test_rspress_function_config_with_nested_returned_objects_is_fast(tmp_path: Path) -> None:
    # FINDING: `_called_object` calls `_balanced` (a scan to the matching brace) for each of the first
    # 200 `return {` / `=> ({` in the function: nested arrows make each scan run to the end of the
    # file, 200 x the config's length. Measured (detect_site): 375 KB 14.8 s, 750 KB 29.9 s, so a
    # config under the 1 MiB limit stalls detection ~40 s (a flat 1 MiB config takes ~1 s). Here 90 KB:
    # ~3.5 s. Should: one pass (or a budget), well under a second.
    k = 6000
    config = "import { define } from 'rstack';\ndefine.doc(() => (" + "{a: () => ({" * k + "})}" * k + "));\n"
    project = _project(tmp_path, {"rstack.config.ts": config, "docs/index.md": "# A\n"})
    started = time.process_time()
    site = detect_site(project, stop=project)
    elapsed = time.process_time() - started
    assert site.generator == "rspress"
    assert elapsed < 1.0, f"{elapsed:.2f}s for {len(config)} bytes"


# --- VuePress: wrong verdicts ---------------------------------------------------------------------


def test_vuepress1_slug_turns_en_and_em_dashes_into_hyphens(tmp_path: Path) -> None:
    # FINDING: VuePress 1's slugify (@vuepress/shared-utils/src/slugify.ts) lists `–` and `—` among
    # the special characters: `## A – B` is `#a-b`, `## A — C` is `#a-c`. udm uses VitePress'
    # (@mdit-vue) rule for VuePress 1 too, which keeps them: it accepts `#a-–-b` and reports `#a-b`
    # broken. Should (on a VuePress 1 site): `#a-b` and `#a-c` True, `#a-–-b` False.
    project = _vuepress1(
        tmp_path,
        {"docs/README.md": "# Home\n\n## A – B\n\n## A — C\n\n[1](#a-b) [2](#a-c) [3](#a-–-b)\n"},
    )
    assert _verdicts(project, "README.md", root=project / "docs") == {
        "#a-b": True,
        "#a-c": True,
        "#a-–-b": False,
    }


def test_vuepress1_repeated_heading_ids_start_at_2(tmp_path: Path) -> None:
    # FINDING: VuePress 1 pins markdown-it-anchor ^5.0.2, whose uniqueSlug starts at 2 (6.0.0 changed
    # the start to 1): two `## Foo` headings are #foo and #foo-2. udm gives #foo-1 (VitePress' rule)
    # and reports #foo-2 broken. Should (on a VuePress 1 site): #foo-2 True, #foo-1 False.
    project = _vuepress1(
        tmp_path, {"docs/README.md": "# Home\n\n## Foo\n\n## Foo\n\n[a](#foo-2) [b](#foo-1) [c](#foo)\n"}
    )
    verdicts = _verdicts(project, "README.md", root=project / "docs")
    assert (verdicts["#foo-2"], verdicts["#foo"]) == (True, True)


def test_vuepress1_githubs_repeat_id_is_no_anchor(tmp_path: Path) -> None:
    project = _vuepress1(tmp_path, {"docs/README.md": "# Home\n\n## Foo\n\n## Foo\n\n[b](#foo-1)\n"})
    assert _verdicts(project, "README.md", root=project / "docs") == {"#foo-1": False}


def test_vuepress1_vue_files_are_pages(tmp_path: Path) -> None:
    # FINDING: VuePress 1 reads `**/*.md` and `**/*.vue` from its source folder (core/lib/node/App.js:
    # patterns ['**/*.md', '**/*.vue']): docs/about.vue is the page /about.html (and /about redirects
    # there). Both links are reported broken. Should: True.
    project = _vuepress1(
        tmp_path,
        {
            "docs/README.md": "# Home\n\n[a](/about.html) [b](/about)\n",
            "docs/about.vue": "<template><div>About</div></template>\n",
        },
    )
    assert _verdicts(project, "README.md", root=project / "docs") == {"/about.html": True, "/about": True}


def test_vuepress_frontmatter_permalink_moves_the_page(tmp_path: Path) -> None:
    # FINDING: a page's front matter `permalink: /custom/path/` is its route in VuePress (1: Page.js
    # buildPermalink sets `path`, routes.js adds the file's regular path as a redirect to it; 2: the
    # same `permalink` front matter). udm ignores it: `/custom/path/` is reported broken. Should: True
    # (the regular path `/guide/x.html` stays True through the redirect).
    project = _vuepress1(
        tmp_path,
        {
            "docs/README.md": "# Home\n\n[moved](/custom/path/) [file](/guide/x.html)\n",
            "docs/guide/x.md": "---\npermalink: /custom/path/\n---\n# X\n",
        },
    )
    assert _verdicts(project, "README.md", root=project / "docs") == {
        "/custom/path/": True,
        "/guide/x.html": True,
    }


def test_vuepress_page_link_written_with_the_base_is_dead(tmp_path: Path) -> None:
    # FINDING: with `base: '/v/'`, `[c](/v/config.html)` is accepted (udm strips the base from every
    # absolute link). VuePress turns a `.html`/`.md`/`/` link into a <RouterLink to="/v/config.html">;
    # the router (base '/v/') matches its routes without the base, finds no `/v/config.html` and
    # renders the 404 page (the href is /v/v/config.html). Should: `/v/config.html` False,
    # `/config.html` True.
    project = _project(
        tmp_path,
        {
            "docs/.vuepress/config.js": "module.exports = { base: '/v/' }\n",
            "docs/README.md": "# Home\n\n[with base](/v/config.html) [without](/config.html)\n",
            "docs/config.md": "# Config\n",
        },
    )
    assert _verdicts(project, "README.md", root=project / "docs") == {
        "/v/config.html": False,
        "/config.html": True,
    }


def test_vuepress_files_under_the_vuepress_folder_are_not_served(tmp_path: Path) -> None:
    # FINDING: `/.vuepress/config.js` and `/.vuepress/public/logo.png` are accepted because the files
    # exist under the source folder (the generic "a file of the mount is served" fallback). VuePress
    # publishes nothing of `.vuepress/` at its path (public/ is copied to the site root: /logo.png):
    # both are 404. Should: False, False, and /logo.png True. (VitePress' `/.vitepress/config.js`
    # behaves the same.)
    project = _project(
        tmp_path,
        {
            "docs/.vuepress/config.js": "module.exports = {}\n",
            "docs/.vuepress/public/logo.png": "png",
            "docs/README.md": "# Home\n\n[c](/.vuepress/config.js) [p](/.vuepress/public/logo.png) [l](/logo.png)\n",
        },
    )
    assert _verdicts(project, "README.md", root=project / "docs") == {
        "/.vuepress/config.js": False,
        "/.vuepress/public/logo.png": False,
        "/logo.png": True,
    }


# --- guards ---------------------------------------------------------------------------------------


def test_guard_symlinked_public_and_content_folders_stay_inside(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write_tree(outside, {"secret.txt": "s", "p.md": "# P\n"})
    rs = _project(
        tmp_path / "rs",
        {"rspress.config.ts": RSPRESS_I18N, "docs/en/index.md": "[s](/secret.txt) [p](/x/p)\n"},
    )
    os.symlink(outside, rs / "docs" / "public")
    os.symlink(outside, rs / "docs" / "en" / "x")
    assert _verdicts(rs, "docs/en/index.md") == {"/secret.txt": False, "/x/p": False}
    vp = _project(
        tmp_path / "vp",
        {
            "docs/.vuepress/config.js": "module.exports = {}\n",
            "docs/README.md": "[s](/secret.txt) [p](/x/p.html)\n",
        },
    )
    os.symlink(outside, vp / "docs" / ".vuepress" / "public")
    os.symlink(outside, vp / "docs" / "x")
    assert _verdicts(vp, "README.md", root=vp / "docs") == {"/secret.txt": False, "/x/p.html": False}


def test_guard_hostile_rspress_roots_raise_nothing_and_stay_inside(tmp_path: Path) -> None:
    roots = [
        "'docs\\x00'",
        "'//etc'",
        "path.resolve(__dirname, '/etc')",
        "path.join(__dirname, '..', 'x')",
        "'docs/../..'",
        "'" + "a" * 5000 + "'",
        "`${'..'}`",
    ]
    for i, root in enumerate(roots):
        config = (
            "import { defineConfig } from '@rspress/core';\n"
            f"export default defineConfig({{ root: {root}, lang: 'en', locales: [{{lang:'en'}},{{lang:'zh'}}] }});\n"
        )
        project = _project(
            tmp_path / f"p{i}", {"rspress.config.ts": config, "docs/en/a.md": "# A\n\n[a](/a)\n"}
        )
        site = detect_site(project, stop=project)
        for mount in site.mounts:
            assert not mount.folder.startswith(("/", "..")), (root, mount)
        link_verdicts(load_settings(cwd=project, root=project, state_dir=project / ".st"))


def test_guard_rspress_autoprefix_and_relative_links(tmp_path: Path) -> None:
    project = _project(
        tmp_path,
        {
            "rspress.config.ts": RSPRESS_I18N,
            "docs/en/guide/x.md": "# X\n",
            "docs/en/guide/y.md": "# Y\n",
            "docs/zh/guide/x.md": "# X\n",
            "docs/zh/index.md": "# Z\n\n[x](/guide/x) [y](/guide/y) [en y](/en/guide/y) [rel](../en/guide/y.md) [html](/guide/x.html)\n",
        },
    )
    assert _verdicts(project, "docs/zh/index.md") == {
        "/guide/x": True,  # /zh/guide/x
        "/guide/y": False,  # /zh/guide/y: no such page, no fallback
        "/en/guide/y": True,
        "../en/guide/y.md": True,
        "/guide/x.html": True,
    }


def test_guard_vuepress_slug_rules_shared_by_both_versions(tmp_path: Path) -> None:
    assert vitepress_slug("1. Intro") == "_1-intro"
    assert vitepress_slug("Café au lait") == "cafe-au-lait"
    assert vitepress_slug("中文 标题") == "中文-标题"
    project = _project(
        tmp_path,
        {
            "docs/.vuepress/config.js": "module.exports = {}\n",
            "docs/README.md": (
                '# Home\n\n## Bar <Badge text="beta"/>\n\n## 🎉 Party\n\n## `code` here\n\n'
                "[1](#bar) [2](#🎉-party) [3](#code-here) [4](#bar-badge-text-beta)\n"
            ),
        },
    )
    assert _verdicts(project, "README.md", root=project / "docs") == {
        "#bar": True,
        "#🎉-party": True,
        "#code-here": True,
        "#bar-badge-text-beta": False,
    }


def test_guard_flat_megabyte_configs_are_bounded(tmp_path: Path) -> None:
    header = "import { defineConfig } from '@rspress/core';\n"
    configs = [
        header + "defineConfig({" * 60000,
        header + "export default defineConfig({lang:'en', locales:[" + "{lang:'en'}," * 60000 + "]})",
        header + "define.doc(() => {" + "return {a:1};" * 60000 + "})",
    ]
    for i, config in enumerate(configs):
        project = _project(tmp_path / f"p{i}", {"rspress.config.ts": config, "docs/index.md": "# A\n"})
        started = time.process_time()
        detect_site(project, stop=project)
        assert time.process_time() - started < 3.0
