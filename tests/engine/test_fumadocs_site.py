"""Fumadocs (Next.js) conventions, on a site written here: collections from `source.config.ts` published
under their loaders' `baseUrl`, route groups, `index.mdx`, custom heading ids (`## Title [#id]`),
translations as `x.cn.mdx` (i18n's "dot" parser) with a link from a translated page leading to its
language's page, the app's own pages and `public/`. On SWR's site (240 `.mdx` pages, 8 languages) lint
said 353 errors before (277 anchors that `[#id]` gives, the app's images), 30 after (stale anchors of
translations, three missing pages)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from udm.config import load_settings
from udm.site.routes import detect_site

from .conftest import page_verdicts, write_tree

SOURCE_CONFIG = """\
import { defineConfig, defineDocs, defineCollections } from 'fumadocs-mdx/config';

// export const ignored = defineDocs({ dir: 'content/commented' });
export const docs = defineDocs({
  dir: 'content/docs',
  docs: { schema: frontmatterSchema },
});
export const blog = defineDocs({ dir: "content/blog" });
export const guides = defineDocs({ dir: 'content/guides' });

export default defineConfig();
"""

LOADERS = """\
import { loader } from 'fumadocs-core/source';
import { docs, blog } from '@/.source';
import { i18n } from './i18n';

export const source = loader({
  i18n,
  baseUrl: '/docs',
  source: docs.toFumadocsSource(),
});
export const blogSource = loader({ baseUrl: '/news', source: blog.toFumadocsSource() });
"""

INDEX = """\
# Docs

[install](/docs/install) [setup anchor](/docs/install#setup) [custom id](/docs/install#set-up-fast)
[grouped](/docs/api/client) [group folder](/docs/(reference)/api/client) [news](/news/hello)
[guides by folder](/guides/first) [home](/) [pricing](/pricing) [image](/img/logo.png)
[missing](/docs/missing) [bad anchor](/docs/install#nope) [translated](/cn/docs/install)
[fallback](/cn/docs/api/client) [unknown language](/xx/docs/install)
"""


def _site(tmp_path: Path) -> Path:
    site = tmp_path / "web"
    write_tree(
        site,
        {
            "source.config.ts": SOURCE_CONFIG,
            "lib/source.ts": LOADERS,
            "lib/i18n.ts": "export const i18n = defineI18n({ defaultLanguage: 'en', languages: ['en', 'cn'] });\n",
            "app/[lang]/(home)/page.tsx": "export default function Home() {}\n",
            "app/[lang]/pricing/page.tsx": "export default function Pricing() {}\n",
            "app/[lang]/docs/[[...slug]]/page.tsx": "export default function Page() {}\n",
            "public/img/logo.png": "png",
            "content/docs/index.mdx": INDEX,
            "content/docs/install.mdx": "# Install\n\n## Setup\n\n## Set up quickly [#set-up-fast]\n",
            "content/docs/install.cn.mdx": (
                "# 安装\n\n## 设置 [#setup]\n\n[self](/docs/install#setup) [english only](/docs/install#set-up-fast)\n"
                "[api](/docs/api/client) [logo](/img/logo.png)\n"
            ),
            "content/docs/(reference)/api/client.mdx": "# Client\n",
            "content/blog/hello.mdx": "# Hello\n",
            "content/guides/first.mdx": "# First\n",
        },
    )
    (tmp_path / ".git").mkdir()
    return site


def test_the_config_and_its_loaders_are_read(tmp_path: Path) -> None:
    site = detect_site(_site(tmp_path) / "content", stop=tmp_path)
    assert site.generator == "fumadocs"
    mounts = {(m.folder, m.prefix, m.kind) for m in site.mounts}
    assert mounts == {
        ("docs", "docs", "fumadocs-i18n:en:cn"),  # lib/i18n.ts: default en, and cn
        ("blog", "news", "fumadocs"),  # this loader has no i18n
        ("guides", "guides", "fumadocs-i18n:en:cn"),  # no loader names it: its folder's name
    }
    assert ("/cn/:slug*", "/:slug*") in site.redirects
    assert ("", "../app/[lang]/(home)/page.tsx") in site.html_pages
    assert ("pricing", "../app/[lang]/pricing/page.tsx") in site.html_pages


def test_links_land_where_fumadocs_publishes_the_pages(tmp_path: Path) -> None:
    site = _site(tmp_path)
    settings = load_settings(cwd=tmp_path, root=site / "content", state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "docs/index.mdx") == {
        "/docs/install": True,
        "/docs/install#setup": True,
        "/docs/install#set-up-fast": True,  # `## Set up quickly [#set-up-fast]`
        "/docs/api/client": True,  # the route group (reference) is no segment
        "/docs/(reference)/api/client": False,
        "/news/hello": True,
        "/guides/first": True,
        "/": True,  # the app's home page, in a route group under [lang]
        "/pricing": True,
        "/img/logo.png": True,  # public/
        "/docs/missing": False,
        "/docs/install#nope": False,
        "/cn/docs/install": True,
        "/cn/docs/api/client": True,  # not translated: the default language's page
        "/xx/docs/install": False,
    }


def test_a_link_on_a_translated_page_leads_to_its_languages_page(tmp_path: Path) -> None:
    site = _site(tmp_path)
    settings = load_settings(cwd=tmp_path, root=site / "content", state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "docs/install.cn.mdx") == {
        "/docs/install#setup": True,  # the Chinese page's own `[#setup]`
        "/docs/install#set-up-fast": False,  # only the English page has it: a stale translation
        "/docs/api/client": True,  # no Chinese page: the English one
        "/img/logo.png": True,
    }


@pytest.mark.parametrize(
    ("config", "generator"),
    [
        ("export const docs = defineDocs({ dir: 'content/docs' });\n", "none"),  # no fumadocs import
        ("import { defineDocs } from 'fumadocs-mdx/config';\n", "fumadocs"),
    ],
)
def test_a_source_config_is_fumadocs_only_when_it_imports_fumadocs(
    tmp_path: Path, config: str, generator: str
) -> None:
    write_tree(tmp_path, {"source.config.ts": config, "content/docs/a.mdx": "# A\n"})
    (tmp_path / ".git").mkdir()
    assert detect_site(tmp_path / "content", stop=tmp_path).generator == generator


def test_hostile_fumadocs_projects_are_contained(tmp_path: Path) -> None:
    # Collections that climb out or are absolute, unclosed calls, thousands of loaders and script
    # files, a heading id of brackets: nothing outside the project is a collection, detection stays
    # bounded, nothing raises.
    config = (
        "import { defineDocs } from 'fumadocs-mdx/config';\n"
        "export const a = defineDocs({ dir: '../../etc' });\n"
        "export const b = defineDocs({ dir: '/etc' });\n"
        "export const c = defineDocs({ dir: 'content/docs' });\n"
        "export const d = defineDocs({ dir: " + "(" * 5000 + "\n"
    )
    scripts = {
        f"lib/s{i}.ts": "loader({ baseUrl: '/x', source: c.toFumadocsSource() " * 50 for i in range(600)
    }
    write_tree(
        tmp_path,
        {
            "source.config.ts": config,
            **scripts,
            "content/docs/a.mdx": "# A [#" + "]" * 5000 + "\n\n## B [#b]\n\n[b](#b) [a](/docs/a)\n",
        },
    )
    (tmp_path / ".git").mkdir()
    started = time.perf_counter()
    site = detect_site(tmp_path / "content", stop=tmp_path)
    assert time.perf_counter() - started < 10
    assert {m.folder for m in site.mounts} == {"docs"}
    settings = load_settings(cwd=tmp_path, root=tmp_path / "content", state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "docs/a.mdx") == {"#b": True, "/docs/a": True}


def test_collections_defined_by_the_macro_and_the_two_argument_loader(tmp_path: Path) -> None:
    # fumadocs-mdx's macro defines the collections in a script (`dir` by default content/docs), and a
    # loader may take the source first and its options second, or several sources at once. A page that
    # `<include>`s another file has the other's headings: its anchors are unknown, not broken.
    write_tree(
        tmp_path,
        {
            "source.config.ts": "import { defineConfig } from 'fumadocs-mdx/config';\nexport default defineConfig();\n",
            "lib/source/index.tsx": (
                "import { defineCollections, defineDocs } from 'fumadocs-mdx/macro';\n"
                "const docs = defineDocs({ docs: { schema: pageSchema.extend({ baseDir: 'x' }) } });\n"
                "const blog = defineCollections({ type: 'doc', dir: 'content/blog' });\n"
                "export const source = loader({ docs: docs.toFumadocsSource(), other: x }, { baseUrl: '/docs' });\n"
                "export const blogLoader = loader(blog.toFumadocsSource(), {\n  baseUrl: '/blog',\n});\n"
            ),
            "content/docs/(framework)/conventions.mdx": "---\ntitle: C\n---\n\n<include>../shared/conv.mdx</include>\n",
            "content/docs/shared/conv.mdx": "# Conventions\n\n## Meta\n",
            "content/docs/index.mdx": "# D\n\n[c](/docs/conventions#meta) [p](/blog/post) [s](/docs/shared/conv#meta)\n",
            "content/blog/post.mdx": "# Post\n",
        },
    )
    (tmp_path / ".git").mkdir()
    site = detect_site(tmp_path / "content", stop=tmp_path)
    assert {(m.folder, m.prefix) for m in site.mounts} == {("docs", "docs"), ("blog", "blog")}
    settings = load_settings(cwd=tmp_path, root=tmp_path / "content", state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "docs/index.mdx") == {
        "/docs/conventions#meta": None,  # its headings are an included file's: unknown
        "/blog/post": True,
        "/docs/shared/conv#meta": True,
    }
