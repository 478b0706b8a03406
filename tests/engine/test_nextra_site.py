"""Nextra (Next.js) conventions, on sites written here: the App Router's `page.mdx` files, the content
folder under `contentDirBasePath`, the Pages Router with translations as suffixes, Next's URLs (no
trailing `/`, so a relative link starts from the page's parent route), Next's redirects, pages under a
parameter, `## Title [#id]`. On Nextra's own docs (51 pages) lint said 45 broken links before, 1 after (a
redirected link to an anchor the new page lacks); on its i18n example 13, all true."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from udm.config import load_settings
from udm.site.routes import detect_site

from .conftest import page_verdicts, write_tree

NEXT_CONFIG = """\
import nextra from 'nextra'

const withNextra = nextra({ contentDirBasePath: '/docs' })

export default withNextra({
  // redirects: () => [{ source: '/commented', destination: '/docs' }],
  redirects: () => [
    { source: '/docs/guide/:slug(latex|mermaid)', destination: '/docs/advanced/:slug' },
    { source: '/docs/guide/:slug((?!x).*)', destination: '/docs/advanced/:slug' },
    { source: '/old/:path*', destination: '/docs/:path*' },
  ],
})
"""


def _app_site(tmp_path: Path, config: str = NEXT_CONFIG) -> Path:
    write_tree(
        tmp_path,
        {
            "next.config.mjs": config,
            "app/page.tsx": "export default function Home() {}\n",
            "app/docs/[[...mdxPath]]/page.jsx": "export { default } from 'x'\n",
            "app/api/[name]/page.tsx": "export default function Api() {}\n",
            "app/showcase/(overview)/page.tsx": "export default function Showcase() {}\n",
            "app/about/page.mdx": (
                "# About\n\n[docs](/docs) [team](./team) [team file](./team/page.mdx) [showcase](/showcase)\n"
                "[api](/api/use-config) [api root](/api) [latex](/docs/guide/latex#maths) "
                "[tables](/docs/guide/tables) [old](/old/advanced/latex) [draft](/about/_drafts)\n"
            ),
            "app/about/team/page.mdx": "# Team\n\n[about](../about) [up](./) [self](./team) [not a sibling](./about)\n",
            "app/about/_drafts/page.mdx": "# Draft\n",
            "app/about/notes.mdx": "# Notes\n",
            "content/index.mdx": (
                "# Docs\n\n[next](./advanced/latex) [next file](./advanced/latex.mdx) "
                "[from docs](./docs/advanced/latex) [abs](/docs/advanced/latex#equations) [id](#custom)\n\n"
                "## A long heading [#custom]\n"
            ),
            "content/advanced/latex.mdx": "# LaTeX\n\n## Maths\n\n## Equations\n\n[index](../) [self](./latex#maths) [no index](./)\n",
        },
    )
    (tmp_path / ".git").mkdir()
    return tmp_path


def test_the_app_router_content_folder_and_config_are_read(tmp_path: Path) -> None:
    site = detect_site(_app_site(tmp_path), stop=tmp_path)
    assert site.generator == "nextra"
    assert {(m.folder, m.prefix, m.kind) for m in site.mounts} == {
        ("app", "", "nextra-app"),
        ("content", "docs", "nextra"),
    }
    # The catch-all at contentDirBasePath is the content's; `[name]` makes the build's pages.
    assert site.generated == ("api/*",)  # one segment below /api
    assert ("showcase", "app/showcase/(overview)/page.tsx") in site.html_pages
    # Only the literal words of `:slug(a|b)` are read; another expression is a redirect not followed.
    assert ("/old/:path*", "/docs/:path*") in site.redirects


def test_links_land_where_nextra_publishes_the_pages(tmp_path: Path) -> None:
    settings = load_settings(cwd=tmp_path, root=_app_site(tmp_path), state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "app/about/page.mdx") == {
        "/docs": True,  # content/index.mdx under contentDirBasePath
        # /about has no trailing slash: `./team` is /team, a page Next does not have.
        "./team": False,
        "./team/page.mdx": False,
        "/showcase": True,  # the app's page.tsx, its route group no segment
        "/api/use-config": None,  # under app/api/[name]: the build's page
        "/api": False,  # `[name]` is one segment: no page at /api itself
        "/docs/guide/latex#maths": True,  # redirected by `:slug(latex|mermaid)`
        "/docs/guide/tables": False,  # the `(?!x).*` expression is not read
        "/old/advanced/latex": True,
        "/about/_drafts": False,  # a private folder is no route
    }
    assert page_verdicts(settings, "app/about/team/page.mdx") == {
        "../about": True,  # from /about/team: /about
        "./": True,  # /about
        "./team": True,
        "./about": False,  # /about/about
    }


def test_an_index_pages_relative_links_start_at_its_parent_route(tmp_path: Path) -> None:
    settings = load_settings(cwd=tmp_path, root=_app_site(tmp_path), state_dir=tmp_path / ".st")
    # content/index.mdx is /docs, a URL without a trailing `/`: `./advanced/latex` is /advanced/latex.
    assert page_verdicts(settings, "content/index.mdx") == {
        "./advanced/latex": False,
        "./advanced/latex.mdx": False,  # the suffix is dropped, then the same URL
        "./docs/advanced/latex": True,
        "/docs/advanced/latex#equations": True,
        "#custom": True,  # `## A long heading [#custom]`
    }
    # /docs/advanced/latex: `../` is /docs, `./` is /docs/advanced (no page there).
    assert page_verdicts(settings, "content/advanced/latex.mdx") == {
        "../": True,
        "./latex#maths": True,
        "./": False,
    }


def test_trailing_slash_makes_every_url_a_folders(tmp_path: Path) -> None:
    config = "import nextra from 'nextra'\nexport default nextra({ contentDirBasePath: '/docs' })({ trailingSlash: true })\n"
    settings = load_settings(cwd=tmp_path, root=_app_site(tmp_path, config), state_dir=tmp_path / ".st")
    verdicts = page_verdicts(settings, "content/index.mdx")
    assert verdicts["./advanced/latex"] is True and verdicts["./docs/advanced/latex"] is False
    assert page_verdicts(settings, "app/about/page.mdx")["./team"] is True


def test_private_folders_and_other_markdown_of_the_app_are_no_pages(tmp_path: Path) -> None:
    settings = load_settings(cwd=tmp_path, root=_app_site(tmp_path), state_dir=tmp_path / ".st")
    write_tree(
        tmp_path, {"app/about/links.mdx": "# Links\n\n[notes](./notes.mdx) [draft](./_drafts/page.mdx)\n"}
    )
    verdicts = page_verdicts(settings, "app/about/links.mdx")
    assert verdicts == {"./notes.mdx": False, "./_drafts/page.mdx": False}


I18N_CONFIG = """\
const withNextra = require('nextra')({ theme: 'nextra-theme-docs' })
module.exports = withNextra({ i18n: { locales: ['en', 'es', 'zh-CN'], defaultLocale: 'en' } })
"""


def test_a_link_in_the_content_folder_with_i18n_leads_to_the_pages_language(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "next.config.js": I18N_CONFIG,
            "app/[lang]/[[...mdxPath]]/page.jsx": "export default function Page() {}\n",
            "app/[lang]/remote/[[...slug]]/page.jsx": "export default function Remote() {}\n",
            "content/en/index.mdx": "# Home\n\n[options](/docs/options#revalidate) [blog](/blog) [remote](/remote/x)\n",
            "content/en/blog.mdx": "# Blog\n",
            "content/en/docs/options.mdx": "# Options\n\n## Revalidate\n",
            "content/es/index.mdx": (
                "# Inicio\n\n[options](/docs/options#revalidate) [blog](/blog) [en](/en/blog) [remote](/es/remote/y)\n"
            ),
            "content/es/docs/options.mdx": "# Opciones\n\n## Revalidar\n",
        },
    )
    (tmp_path / ".git").mkdir()
    site = detect_site(tmp_path, stop=tmp_path)
    assert ("content", "", "nextra-i18n:en:es,zh-CN") in {(m.folder, m.prefix, m.kind) for m in site.mounts}
    settings = load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "content/en/index.mdx") == {
        "/docs/options#revalidate": True,  # /en/docs/options
        "/blog": True,
        "/remote/x": None,  # app/[lang]/remote/[[...slug]]: the build's pages
    }
    assert page_verdicts(settings, "content/es/index.mdx") == {
        "/docs/options#revalidate": False,  # the Spanish page's heading is #revalidar: a stale anchor
        "/blog": False,  # no Spanish blog: /es/blog is not found
        "/en/blog": True,
        "/es/remote/y": None,
    }


def test_the_pages_router_with_translations_as_suffixes(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "next.config.js": I18N_CONFIG,
            "pages/_app.mdx": "# App\n",
            "pages/api/hello.md": "# Not a page\n",
            "pages/index.en.mdx": "# Home\n\n[intro](/introduction#basics) [api](/api/hello) [zh](/zh-CN/introduction)\n",
            "pages/index.zh-CN.mdx": "# 首页\n\n[intro](/introduction#基础) [english](/introduction#basics)\n",
            "pages/introduction.en.mdx": "# Introduction\n\n## Basics\n",
            "pages/introduction.zh-CN.mdx": "# 介绍\n\n## 基础\n",
            "guides/README.md": "# Guides\n\n[intro](/pages/introduction.en.mdx) [none](/pages/none.md)\n",
        },
    )
    (tmp_path / ".git").mkdir()
    settings = load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "pages/index.en.mdx") == {
        "/introduction#basics": True,
        "/api/hello": False,  # pages/api/ holds API routes, no pages
        "/zh-CN/introduction": True,
    }
    assert page_verdicts(settings, "pages/index.zh-CN.mdx") == {
        "/introduction#基础": True,  # the Chinese page's heading
        "/introduction#basics": False,  # only the English page has it
    }
    # A file no folder of the site publishes is read on GitHub: `/x` is the repository's file.
    assert page_verdicts(settings, "guides/README.md") == {
        "/pages/introduction.en.mdx": True,
        "/pages/none.md": False,
    }


@pytest.mark.parametrize(
    ("config", "generator"),
    [
        ("module.exports = { reactStrictMode: true }\n", "none"),
        ("// import nextra from 'nextra'\nexport default {}\n", "none"),
        ("import nextra from 'nextra'\nexport default nextra({})({})\n", "nextra"),
        ('const withNextra = require("nextra")({})\nmodule.exports = withNextra({})\n', "nextra"),
    ],
)
def test_a_next_config_is_nextra_only_when_it_uses_nextra(
    tmp_path: Path, config: str, generator: str
) -> None:
    write_tree(tmp_path, {"next.config.js": config, "pages/a.mdx": "# A\n"})
    (tmp_path / ".git").mkdir()
    assert detect_site(tmp_path, stop=tmp_path).generator == generator


def test_hostile_nextra_projects_are_contained(tmp_path: Path) -> None:
    # A base path climbing out, thousands of redirects and of page files, an unclosed call, a regular
    # expression in a redirect, an app folder linked out of the project: detection stays bounded, nothing
    # outside the project is read, nothing raises.
    outside = tmp_path / "outside"
    write_tree(outside, {"secret/page.mdx": "# Secret\n", "leak/[x]/page.tsx": "x\n"})
    project = tmp_path / "project"
    choice = "|".join("x" * 90 for _ in range(60))
    redirects = ",".join(
        f"{{ source: '/r{i}/:a({choice if i == 0 else 'b'})', destination: '/d' }}" for i in range(3000)
    )
    config = (
        "import nextra from 'nextra'\n"
        "const withNextra = nextra({ contentDirBasePath: '../../etc' })\n"
        f"export default withNextra({{ redirects: () => [{redirects}], i18n: {{ locales: ['en', '../x'], "
        "defaultLocale: 'en' }, basePath: '" + "/" * 5000 + "' })\n" + "nextra(" * 5000
    )
    pages = {f"app/p{i}/page.tsx": "x\n" for i in range(2500)}
    write_tree(
        project, {"next.config.mjs": config, **pages, "content/a.mdx": "# A\n\n[a](/a) [s](/secret)\n"}
    )
    (project / ".git").mkdir()
    os.symlink(outside, project / "src")
    started = time.perf_counter()
    site = detect_site(project, stop=project)
    assert time.perf_counter() - started < 10
    assert site.generator == "nextra"
    assert {m.prefix for m in site.mounts if m.kind.startswith("nextra")} == {""}  # the base path not taken
    assert len(site.redirects) <= 500
    assert all("secret" not in rel and "leak" not in rel for _, rel in site.html_pages)
    assert site.generated == ()
    settings = load_settings(cwd=project, root=project, state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "content/a.mdx") == {"/a": True, "/secret": False}


@pytest.mark.parametrize(
    "redirects",
    [
        "async redirects() { return OLD.map((r) => ({ source: r.from, destination: r.to, permanent: true })) }",
        "redirects: async () => [...OLD, { source: '/x', destination: '/docs' }]",
    ],
)
def test_redirects_from_an_array_constant_the_config_maps_or_spreads(tmp_path: Path, redirects: str) -> None:
    # dRPC's docs (Pages Router) keep their redirects in a constant of `{ from, to }` that `redirects()`
    # maps: 2,198 lint errors before Nextra was read, 82 with literal pairs only, 17 now.
    config = (
        "import nextra from 'nextra'\n"
        "const OLD = [\n  { from: '/bartio-api/:slug*', to: '/berachain-api/:slug*' },\n  { from: '/old', to: '/x' },\n]\n"
        f"export default nextra({{}})({{ {redirects} }})\n"
    )
    write_tree(
        tmp_path,
        {
            "next.config.mjs": config,
            "pages/index.mdx": "# Home\n\n[moved](/bartio-api/accounts/balance) [gone](/bartio-api/nothing)\n",
            "pages/berachain-api/accounts/balance.mdx": "# Balance\n",
        },
    )
    (tmp_path / ".git").mkdir()
    site = detect_site(tmp_path, stop=tmp_path)
    assert ("/bartio-api/:slug*", "/berachain-api/:slug*") in site.redirects
    settings = load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "pages/index.mdx") == {
        "/bartio-api/accounts/balance": True,
        "/bartio-api/nothing": False,
    }
