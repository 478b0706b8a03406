"""Rspress conventions, on sites written here: pages under `root` (a literal or `path.join(__dirname,
...)`), each language in a folder with the default one served at the site root, an absolute link
given the page's own language first (Rspress' `autoPrefix`: a page missing in it is a dead link),
relative links from the page's file, `_` partials and `route.exclude` no pages, `<root>/public`,
`llms.txt`. On Rspress' own docs lint said 514 errors before, 2 after (stale anchors); on Rsbuild's
(`rstack.config.ts`, locales in `themeConfig`) 2,272 before, 1 after; on Rspack's (a function returning
the config) 1,926 before, 0 after."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from udm.config import load_settings
from udm.site.routes import detect_site

from .conftest import page_verdicts, write_tree

CONFIG = """\
import path from 'node:path';
import { defineConfig } from '@rspress/core';

export default defineConfig({
  root: path.join(__dirname, 'docs'),
  lang: 'en',
  llms: true,
  locales: [{ lang: 'en', label: 'English' }, { lang: 'zh', label: '中文' }],
  route: { exclude: ['**/snippets/**', 'en/draft.md'] },
});
"""


def _site(tmp_path: Path, config: str = CONFIG, name: str = "rspress.config.ts") -> Path:
    write_tree(
        tmp_path,
        {
            name: config,
            "docs/en/index.md": (
                "# Home\n\n[guide](/guide/intro#setup) [zh guide](/zh/guide/intro) [en](/en/guide/intro)\n"
                "[only english](/guide/only-en) [logo](/logo.png) [llms](/llms-full.txt) [draft](/draft)\n"
                "[snippet](/snippets/a) [partial](./_part) [dunder](/__kept)\n"
            ),
            "docs/en/__kept.md": "# Kept\n",
            "docs/en/_part.mdx": "# Partial\n",
            "docs/en/draft.md": "# Draft\n",
            "docs/en/snippets/a.md": "# Snippet\n",
            "docs/en/guide/intro.mdx": "# Intro\n\n## Setup\n\n[bare](only-en) [up](../) [file](./only-en.md#more)\n",
            "docs/en/guide/only-en.md": "# Only English\n\n## More\n",
            "docs/zh/index.md": "# 首页\n\n[guide](/guide/intro#设置) [stale](/guide/intro#setup) [logo](/logo.png)\n",
            "docs/zh/guide/intro.mdx": (
                "# 介绍\n\n## 设置\n\n[missing in zh](/guide/only-en) [english page](/en/guide/only-en) [home](/)\n"
            ),
            "docs/public/logo.png": "png",
        },
    )
    (tmp_path / ".git").mkdir()
    return tmp_path


def test_the_config_is_read(tmp_path: Path) -> None:
    site = detect_site(_site(tmp_path), stop=tmp_path)
    assert site.generator == "rspress"
    assert [(m.folder, m.prefix, m.kind) for m in site.mounts] == [("docs", "", "rspress-i18n:en:zh")]
    assert site.rewrites == (("en/:rest*", ":rest*"),)
    assert site.static == ("docs/public",)
    assert set(site.generated) == {"llms.txt", "llms-full.txt"}


def test_the_default_language_is_served_at_the_root(tmp_path: Path) -> None:
    settings = load_settings(cwd=tmp_path, root=_site(tmp_path), state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "docs/en/index.md") == {
        "/guide/intro#setup": True,  # docs/en/guide/intro.mdx
        "/zh/guide/intro": True,
        "/en/guide/intro": True,  # the default language named
        "/guide/only-en": True,
        "/logo.png": True,  # docs/public/
        "/llms-full.txt": None,  # written by `llms: true` at build time
        "/draft": False,  # route.exclude
        "/snippets/a": False,
        "./_part": False,  # a `_` file is a partial
        "/__kept": True,  # `__x` is a page
    }
    # Relative links are read from the page's file, with or without a suffix.
    assert page_verdicts(settings, "docs/en/guide/intro.mdx") == {
        "only-en": True,
        "../": True,
        "./only-en.md#more": True,
    }


def test_a_link_on_a_translated_page_leads_to_its_languages_page(tmp_path: Path) -> None:
    settings = load_settings(cwd=tmp_path, root=_site(tmp_path), state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "docs/zh/index.md") == {
        "/guide/intro#设置": True,  # /zh/guide/intro
        "/guide/intro#setup": False,  # the English heading: stale on the Chinese page
        "/logo.png": True,  # a static file has no language
    }
    assert page_verdicts(settings, "docs/zh/guide/intro.mdx") == {
        "/guide/only-en": False,  # /zh/guide/only-en: Rspress reports a dead link
        "/en/guide/only-en": True,
        "/": True,  # /zh/
    }


def test_rstack_configs_and_locales_in_theme_config(tmp_path: Path) -> None:
    config = (
        "import { define } from 'rstack';\n"
        "define.doc({\n  root: 'content',\n  base: '/b/',\n  lang: 'en',\n"
        "  themeConfig: { locales: [{ lang: 'en' }, { lang: 'zh' }] },\n});\n"
    )
    write_tree(
        tmp_path,
        {
            "rstack.config.ts": config,
            "content/en/a.md": "# A\n\n[b](/b) [zh b](/zh/b)\n",
            "content/en/b.md": "# B\n",
            "content/zh/b.md": "# B\n",
        },
    )
    (tmp_path / ".git").mkdir()
    site = detect_site(tmp_path, stop=tmp_path)
    assert (site.generator, site.base_path) == ("rspress", "/b")
    assert [m.kind for m in site.mounts] == ["rspress-i18n:en:zh"]
    settings = load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "content/en/a.md") == {"/b": True, "/zh/b": True}


@pytest.mark.parametrize(
    ("name", "config", "generator"),
    [
        ("rspress.config.ts", "export default { root: 'docs' };\n", "none"),
        (
            "rspress.config.ts",
            "// import { defineConfig } from '@rspress/core';\nexport default {};\n",
            "none",
        ),
        (
            "rspress.config.mjs",
            "import { defineConfig } from 'rspress/config';\nexport default {};\n",
            "rspress",
        ),
        ("rstack.config.ts", "import { define } from 'rstack';\ndefine.lib({});\n", "none"),
    ],
)
def test_a_config_is_rspress_only_when_it_uses_rspress(
    tmp_path: Path, name: str, config: str, generator: str
) -> None:
    write_tree(tmp_path, {name: config, "docs/a.md": "# A\n"})
    (tmp_path / ".git").mkdir()
    assert detect_site(tmp_path, stop=tmp_path).generator == generator


def test_without_locales_pages_are_routed_by_their_path(tmp_path: Path) -> None:
    config = "import { defineConfig } from '@rspress/core';\nexport default defineConfig({ root: 'docs' });\n"
    write_tree(
        tmp_path,
        {
            "rspress.config.ts": config,
            "docs/index.md": "# Home\n\n[en folder](/en/a) [a](/a)\n",
            "docs/a.md": "# A\n",
            "docs/en/a.md": "# Also A\n",
        },
    )
    (tmp_path / ".git").mkdir()
    settings = load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "docs/index.md") == {"/en/a": True, "/a": True}


def test_hostile_rspress_configs_are_contained(tmp_path: Path) -> None:
    # A root climbing out of the project, thousands of locales, an unclosed call, a huge exclude list:
    # the root stays the project's, detection stays bounded, nothing raises.
    locales = ", ".join(f"{{ lang: 'l{i:04d}' }}" for i in range(5000))
    config = (
        "import { defineConfig } from '@rspress/core';\n"
        "export default defineConfig({\n  root: path.join(__dirname, '..', '..', 'etc'),\n  lang: 'en',\n"
        f"  locales: [{{ lang: 'en' }}, {locales}],\n"
        "  route: { exclude: ["
        + ", ".join("'**/x/**'" for _ in range(3000))
        + "] },\n});\n"
        + "defineConfig({" * 3000
    )
    write_tree(tmp_path / "project", {"rspress.config.ts": config, "docs/en/a.md": "# A\n\n[a](/a)\n"})
    (tmp_path / "project" / ".git").mkdir()
    started = time.perf_counter()
    site = detect_site(tmp_path / "project", stop=tmp_path / "project")
    assert time.perf_counter() - started < 10
    assert [m.folder for m in site.mounts] == ["docs"]  # `..` in the root: the default folder
    assert len(site.mounts[0].kind) < 1000  # at most a hundred languages
    settings = load_settings(cwd=tmp_path / "project", root=tmp_path / "project", state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "docs/en/a.md") == {"/a": True}


def test_a_config_function_returning_the_object(tmp_path: Path) -> None:
    # Rspack's `rstack.config.ts`: `define.doc(async () => { ...; return { ... } })`, whose object holds
    # callbacks returning objects of their own; the largest object returned is the config.
    config = (
        "import { define } from 'rstack';\n"
        "define.doc(async () => {\n  const { plugin } = await import('x');\n"
        "  return {\n    root: 'content',\n    lang: 'en',\n"
        "    route: { exclude: ['**/hidden.md'] },\n"
        "    og: (page) => ({ image: page.title }),\n"
        "    themeConfig: { locales: [{ lang: 'en' }, { lang: 'zh' }], footer: () => { return { a: 1 }; } },\n"
        "  };\n});\n"
    )
    write_tree(
        tmp_path,
        {
            "rstack.config.ts": config,
            "content/en/a.md": "# A\n\n[b](/b) [zh b](/zh/b) [hidden](/hidden)\n",
            "content/en/b.md": "# B\n",
            "content/en/hidden.md": "# Hidden\n",
            "content/zh/b.md": "# B\n",
        },
    )
    (tmp_path / ".git").mkdir()
    assert [m.kind for m in detect_site(tmp_path, stop=tmp_path).mounts] == ["rspress-i18n:en:zh"]
    settings = load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "content/en/a.md") == {"/b": True, "/zh/b": True, "/hidden": False}
