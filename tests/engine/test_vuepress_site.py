"""VuePress (1 and 2) conventions: `.vuepress/config.*` in the source folder, `README.md` a folder's page,
`x.md` at `/x.html`, `.vuepress/public` at the site root, nothing under a dot folder published, and
headings' ids by VuePress' slugify (`## Why can't x.styl?` is `#why-can-t-x-styl`, a leading digit
`_`). On VuePress' own docs lint said 55 errors before (24 anchors VuePress makes otherwise than
GitHub, 11 images of `.vuepress/public`), 20 after, all true (renamed headings, a missing image)."""

from __future__ import annotations

from pathlib import Path

import pytest

from udm.config import load_settings
from udm.site.detect import site_for
from udm.site.routes import detect_site

from .conftest import page_verdicts, write_tree


def test_a_vuepress_site(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "docs/.vuepress/config.ts": "import { defineConfig } from 'vuepress/config'\n"
            "export default defineConfig({ base: '/v/', locales: { '/zh/': { lang: 'zh-CN' } } })\n",
            "docs/.vuepress/components/Note.md": "# Note\n",
            "docs/.vuepress/public/logo.png": "png",
            "docs/README.md": (
                "# Home\n\n[zh](/zh/) [zh guide](/zh/guide.html#an-zhuang) [note](/.vuepress/components/Note.html)\n"
                "[logo](/logo.png) [rich](#rich-text-footer) [github's](#richtext-footer)\n\n## Rich-text footer\n"
            ),
            "docs/zh/README.md": "# 首页\n",
            "docs/zh/guide.md": "# 指南\n\n## An Zhuang\n",
        },
    )
    (tmp_path / ".git").mkdir()
    site = detect_site(tmp_path / "docs", stop=tmp_path)
    assert (site.generator, site.base_path, site.static) == ("vuepress", "/v", (".vuepress/public",))
    settings = load_settings(cwd=tmp_path, root=tmp_path / "docs", state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "README.md") == {
        "/zh/": True,
        "/zh/guide.html#an-zhuang": True,
        "/.vuepress/components/Note.html": False,  # a component, no page
        "/logo.png": True,
        "#rich-text-footer": True,  # VuePress keeps the hyphen
        "#richtext-footer": False,  # GitHub's id is no anchor there
    }


@pytest.mark.parametrize(
    ("files", "generator"),
    [
        ({".vuepress/config.js": "module.exports = {}\n"}, "vuepress"),
        ({".vuepress/styles/index.styl": "x\n"}, "none"),  # no config: not read as VuePress
        ({".vitepress/config.js": "export default {}\n"}, "vitepress"),
    ],
)
def test_vuepress_is_detected_by_its_config(tmp_path: Path, files: dict[str, str], generator: str) -> None:
    write_tree(tmp_path, {**files, "a.md": "# A\n"})
    (tmp_path / ".git").mkdir()
    assert detect_site(tmp_path, stop=tmp_path).generator == generator


def test_a_vue_page_added_to_a_vuepress_1_site_is_seen_at_once(tmp_path: Path) -> None:
    # The site is cached while its inputs stay the same: VuePress 1's `.vue` pages are inputs.
    write_tree(tmp_path, {"docs/.vuepress/config.js": "module.exports = {}\n", "docs/README.md": "# Home\n"})
    (tmp_path / ".git").mkdir()
    assert site_for(tmp_path / "docs", stop=tmp_path).html_pages == ()
    write_tree(tmp_path, {"docs/about.vue": "<template><p>About</p></template>\n"})
    assert site_for(tmp_path / "docs", stop=tmp_path).html_pages == (("about", "about.vue"),)


@pytest.mark.parametrize("config", [".vitepress/config.ts", ".vuepress/config.ts"])
def test_githubs_form_of_an_id_the_site_makes_otherwise_is_broken(tmp_path: Path, config: str) -> None:
    # VitePress and VuePress 2 make `## markdown.links.internalTag` `#markdown-links-internaltag`;
    # GitHub's `#markdownlinksinternaltag` is a dead anchor there (VuePress 2's own docs wrote it twice).
    write_tree(
        tmp_path,
        {
            f"docs/{config}": "export default {}\n",
            "docs/index.md": "# Home\n\n[a](/guide.md#markdown-links-internaltag) [b](/guide.md#markdownlinksinternaltag)\n"
            "[c](/guide.md#same-1) [d](/guide.md#own)\n",
            "docs/guide.md": "# Guide\n\n## markdown.links.internalTag\n\n## Same\n\n## Same\n\n## Named {#own}\n",
        },
    )
    (tmp_path / ".git").mkdir()
    settings = load_settings(cwd=tmp_path, root=tmp_path / "docs", state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "index.md") == {
        "/guide.md#markdown-links-internaltag": True,
        "/guide.md#markdownlinksinternaltag": False,
        "/guide.md#same-1": True,
        "/guide.md#own": True,
    }


@pytest.mark.parametrize(
    ("config", "body"),
    [
        (
            ".vitepress/config.ts",
            "export default { markdown: { anchor: { slugify: (s) => s.toLowerCase() } } }\n",
        ),
        (
            ".vitepress/config.ts",
            "import { slugify } from './slug'\nexport default { markdown: { anchor: { slugify } } }\n",
        ),
        (".vuepress/config.js", "module.exports = { markdown: { slugify: require('./slug') } }\n"),
    ],
)
def test_a_config_with_its_own_slugify_leaves_other_ids_unknown(
    tmp_path: Path, config: str, body: str
) -> None:
    write_tree(
        tmp_path,
        {
            f"docs/{config}": body,
            "docs/index.md": "# Home\n\n[a](/guide.md#markdownlinksinternaltag) [b](/guide.md#markdown.links.internaltag)\n",
            "docs/guide.md": "# Guide\n\n## markdown.links.internalTag\n",
        },
    )
    (tmp_path / ".git").mkdir()
    assert detect_site(tmp_path / "docs", stop=tmp_path).heading_ids == "custom"
    settings = load_settings(cwd=tmp_path, root=tmp_path / "docs", state_dir=tmp_path / ".st")
    # Every id is the config's code to tell, GitHub's form too: unknown, not broken.
    assert page_verdicts(settings, "index.md") == {
        "/guide.md#markdownlinksinternaltag": None,
        "/guide.md#markdown.links.internaltag": None,
    }


def test_a_slugify_in_a_comment_is_no_option(tmp_path: Path) -> None:
    write_tree(
        tmp_path, {"docs/.vitepress/config.ts": "// markdown: { anchor: { slugify } }\nexport default {}\n"}
    )
    (tmp_path / ".git").mkdir()
    assert detect_site(tmp_path / "docs", stop=tmp_path).heading_ids == "github"


@pytest.mark.parametrize(
    ("name", "config"),
    [
        ("config.yml", "base: /press/\ntitle: Kit\n"),
        ("config.toml", 'base = "/press/"\ntitle = "Kit"\n'),
    ],
)
def test_vuepress_1_reads_a_yaml_or_toml_config(tmp_path: Path, name: str, config: str) -> None:
    write_tree(
        tmp_path,
        {
            f"docs/.vuepress/{name}": config,
            "docs/README.md": "# Home\n\n[g](/guide.html#foo-2) [h](/guide.html#foo-1) [v](/about.html)\n",
            "docs/guide.md": "# Guide\n\n## Foo\n\n## Foo\n",
            "docs/about.vue": "<template><p>About</p></template>\n",
        },
    )
    (tmp_path / ".git").mkdir()
    site = detect_site(tmp_path / "docs", stop=tmp_path)
    assert (site.generator, site.base_path, site.heading_ids) == ("vuepress", "/press", "vuepress1")
    settings = load_settings(cwd=tmp_path, root=tmp_path / "docs", state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "README.md") == {
        "/guide.html#foo-2": True,  # VuePress 1 numbers a repeat from -2
        "/guide.html#foo-1": False,
        "/about.html": True,  # a .vue page
    }


def test_a_vuepress_yaml_config_that_is_no_mapping_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    write_tree(tmp_path, {"docs/.vuepress/config.yml": "- a\n- [b\n", "docs/README.md": "# Home\n"})
    (tmp_path / ".git").mkdir()
    site = detect_site(tmp_path / "docs", stop=tmp_path)
    assert site.generator == "vuepress" and any("cannot read the site config" in p for p in site.problems)
