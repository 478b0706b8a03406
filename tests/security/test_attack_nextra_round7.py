"""Attacker round 7: Nextra (Next.js) sites, commit 84bb44d. Each test either guards a behaviour that
holds, or was written failing on a real bug (marked `# FINDING`, with what happened and what should);
all 14 findings are fixed (rules 17)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from udm.config import load_settings
from udm.site.nextra import nextra
from udm.site.routes import detect_site

from ..engine.conftest import cpu_seconds, link_verdicts, page_verdicts, write_tree
from .nextra_sites import I18N, PLAIN
from .nextra_sites import project as _project
from .nextra_sites import verdicts as _verdicts

PAGES_I18N = (
    "const withNextra = require('nextra')({ theme: 'nextra-theme-docs' })\n"
    "module.exports = withNextra({ i18n: { locales: ['en', 'es'], defaultLocale: 'en' } })\n"
)


# --- wrong verdicts: the App Router -------------------------------------------------------------


def test_source_files_of_the_app_and_content_folders_are_no_urls(tmp_path: Path) -> None:
    # FINDING: `_locate_absolute` looks a link up as a file of each mount's folder, so `/about/page.mdx`
    # (app/about/page.mdx), `/layout.tsx` (app/layout.tsx) and `/_meta.js` (content/_meta.js) are
    # reported resolved ("static"). Next serves none of them (Nextra turns `/about/page.mdx` into
    # `/about/page`, no route; `app/` and `content/` are source, not `public/`): all 404. Broken.
    verdicts = _verdicts(
        tmp_path,
        {
            "next.config.mjs": PLAIN,
            "app/layout.tsx": "export default function L() {}\n",
            "app/[[...mdxPath]]/page.jsx": "export { default } from 'x'\n",
            "app/about/page.mdx": "# About\n\n[a](/about/page.mdx) [b](/layout.tsx) [c](/_meta.js) [ok](/guide)\n",
            "content/_meta.js": "export default {}\n",
            "content/guide.mdx": "# Guide\n",
        },
        "app/about/page.mdx",
    )
    assert verdicts == {"/about/page.mdx": False, "/layout.tsx": False, "/_meta.js": False, "/guide": True}


def test_a_private_folders_page_tsx_is_no_route(tmp_path: Path) -> None:
    # FINDING: `app/_components/page.tsx` is listed in `html_pages` at `_components` (`_app_pages`
    # skips route groups, not private folders), so `/_components` is reported resolved. Next: "a
    # private folder `_folder` opts it and its children out of routing": 404. Broken, as the
    # private folder's page.mdx already is.
    verdicts = _verdicts(
        tmp_path,
        {
            "next.config.mjs": PLAIN,
            "app/_components/page.tsx": "export default function X() {}\n",
            "app/about/page.mdx": "# About\n\n[c](/_components)\n",
        },
        "app/about/page.mdx",
    )
    assert verdicts == {"/_components": False}


def test_a_parallel_route_slot_is_no_url_segment(tmp_path: Path) -> None:
    # FINDING: `app/docs/@sidebar/page.tsx` is routed at `docs/@sidebar`, so `/docs/@sidebar` is
    # reported resolved. Next's normalizeAppPath drops `@slot` segments (the slot renders inside
    # /docs): no URL `/docs/@sidebar` exists, 404. Broken; `/docs` (app/docs/page.tsx) stays resolved.
    verdicts = _verdicts(
        tmp_path,
        {
            "next.config.mjs": PLAIN,
            "app/docs/page.tsx": "export default function D() {}\n",
            "app/docs/@sidebar/page.tsx": "export default function S() {}\n",
            "app/about/page.mdx": "# About\n\n[s](/docs/@sidebar) [d](/docs)\n",
        },
        "app/about/page.mdx",
    )
    assert verdicts == {"/docs/@sidebar": False, "/docs": True}


def test_pages_under_the_language_parameter_are_served_in_each_language(tmp_path: Path) -> None:
    # FINDING: with Next's i18n, `app/[lang]/about/page.tsx` is listed at `about` only and
    # `app/[lang]/guide/page.mdx` is routed at the literal `[lang]/guide`: `/en/about`, `/es/about`,
    # `/en/guide`, `/es/guide` are all reported broken. Next serves each at every locale
    # (`[lang]` = en, es): resolved.
    verdicts = _verdicts(
        tmp_path,
        {
            "next.config.mjs": I18N,
            "app/[lang]/[[...mdxPath]]/page.jsx": "export default function P() {}\n",
            "app/[lang]/about/page.tsx": "export default function A() {}\n",
            "app/[lang]/guide/page.mdx": "# Guide\n",
            "content/en/index.mdx": "# Home\n\n[a](/en/about) [b](/es/about) [c](/en/guide) [d](/es/guide)\n",
        },
        "content/en/index.mdx",
    )
    assert verdicts == {"/en/about": True, "/es/about": True, "/en/guide": True, "/es/guide": True}


def test_a_manual_inside_a_route_group_keeps_the_group_out_of_its_routes(tmp_path: Path) -> None:
    # FINDING: with the manual root at `app/(marketing)`, `under()` makes the mount's prefix
    # `(marketing)` and the route-group filter only sees the parts below it: the pages are routed at
    # `(marketing)/docs...`, so `/docs/guide` and `/docs` are broken and `/(marketing)/docs/guide`
    # resolves. The same pages checked from the project root resolve `/docs/guide`. Next: `/docs/guide`.
    verdicts = _verdicts(
        tmp_path,
        {
            "next.config.mjs": PLAIN,
            "app/(marketing)/docs/page.mdx": "# Docs\n\n[g](/docs/guide) [grp](/(marketing)/docs/guide)\n",
            "app/(marketing)/docs/guide/page.mdx": "# Guide\n\n[d](/docs)\n",
        },
        "docs/page.mdx",
        root="app/(marketing)",
    )
    assert verdicts == {"/docs/guide": True, "/(marketing)/docs/guide": False}


def test_a_manual_inside_a_language_folder_of_the_content(tmp_path: Path) -> None:
    # FINDING: with Next's i18n and the manual root at `content/en`, the mount gets prefix `en` and
    # the route builder then takes the page's first folder as its language: content/en/docs/x.mdx is
    # routed at `docs/en/x`. `/en/docs/x` and `/docs/x` (both resolved when the manual is the whole
    # project) are reported broken. Next serves it at /en/docs/x.
    files = {
        "next.config.mjs": I18N,
        "app/[lang]/[[...mdxPath]]/page.jsx": "export default function P() {}\n",
        "content/en/index.mdx": "# Home\n\n[a](/en/docs/x) [b](/docs/x)\n",
        "content/en/docs/x.mdx": "# X\n",
    }
    assert _verdicts(tmp_path, files, "content/en/index.mdx") == {"/en/docs/x": True, "/docs/x": True}
    manual = tmp_path / "content" / "en"
    settings = load_settings(cwd=manual, root=manual, state_dir=tmp_path / ".st2")
    assert page_verdicts(settings, "index.mdx") == {"/en/docs/x": True, "/docs/x": True}


# --- wrong verdicts: basePath --------------------------------------------------------------------


def test_with_a_base_path_the_home_pages_relative_link_leaves_it(tmp_path: Path) -> None:
    # FINDING: with `basePath: '/b'` the home page's URL is `/b` (Next redirects `/b/` to `/b`): from
    # there `./x` and `x` are `/x`, outside the base path, a 404. `_relative_url` joins the base path
    # with dirname('/') = '/', so they resolve as /b/x. Broken (as `./x` is from any other page at /b/y).
    verdicts = _verdicts(
        tmp_path,
        {
            "next.config.mjs": "import nextra from 'nextra'\nexport default nextra({})({ basePath: '/b' })\n",
            "content/index.mdx": "# Home\n\n[a](./x) [b](x) [c](/x)\n",
            "content/x.mdx": "# X\n",
        },
        "content/index.mdx",
    )
    assert verdicts == {"./x": False, "x": False, "/x": True}


def test_with_a_base_path_an_absolute_link_that_repeats_it_is_broken(tmp_path: Path) -> None:
    # FINDING: Nextra renders an internal link with next/link, which prefixes every `/...` href with
    # the base path (addBasePath): `[a](/b/x)` with `basePath: '/b'` is /b/b/x, a 404. It is reported
    # resolved (`_locate_absolute` strips a leading base path). Only `/x` reaches the page.
    verdicts = _verdicts(
        tmp_path,
        {
            "next.config.mjs": "import nextra from 'nextra'\nexport default nextra({})({ basePath: '/b' })\n",
            "content/index.mdx": "# Home\n\n[a](/b/x) [c](/x)\n",
            "content/x.mdx": "# X\n",
        },
        "content/index.mdx",
    )
    assert verdicts == {"/b/x": False, "/x": True}


# --- wrong verdicts: the Pages Router ------------------------------------------------------------


def _pages_router(tmp_path: Path) -> dict[str, bool | None]:
    return _verdicts(
        tmp_path,
        {
            "next.config.js": PAGES_I18N,
            "pages/index.en.mdx": "# Home\n\n[a](/showcase) [b](/blog/post-1) [c](/en/intro) [d](/intro) [e](/es/intro)\n",
            "pages/intro.en.mdx": "# Intro\n",
            "pages/intro.es.mdx": "# Intro\n",
            "pages/showcase.tsx": "export default function Showcase() {}\n",
            "pages/blog/[slug].tsx": "export default function Post() {}\n",
        },
        "pages/index.en.mdx",
    )


def test_the_pages_routers_component_pages_are_routes(tmp_path: Path) -> None:
    # FINDING: `pages/showcase.tsx` is a Next page at /showcase, but `/showcase` is reported broken:
    # only the App Router's page files become `html_pages`, and the `_beside` fallback tries code
    # suffixes only for mounts of kind "pages", not "nextra-pages". Resolved.
    assert _pages_router(tmp_path)["/showcase"] is True


def test_the_pages_routers_dynamic_routes_are_the_builds(tmp_path: Path) -> None:
    # FINDING: `pages/blog/[slug].tsx` makes /blog/<anything>; `/blog/post-1` is reported broken.
    # The App Router's `app/blog/[slug]/page.tsx` makes it unknown (`generated`); the Pages Router's
    # equivalent should too (None).
    assert _pages_router(tmp_path)["/blog/post-1"] is None


def test_the_pages_router_serves_the_default_locale_with_its_prefix(tmp_path: Path) -> None:
    # FINDING: Next's i18n (Pages Router) serves the default locale's page both at /intro and at
    # /en/intro (the locale prefix is stripped by normalizeLocalePath for every locale, the default
    # included); `/en/intro` is reported broken. Resolved.
    verdicts = _pages_router(tmp_path)
    assert (verdicts["/intro"], verdicts["/es/intro"]) == (True, True)  # guard
    assert verdicts["/en/intro"] is True


def test_an_unpublished_readme_in_a_sub_folder_manual_links_from_the_repository_root(
    tmp_path: Path,
) -> None:
    # FINDING: `_unrouted_file` reads `/pages/a.mdx` in docs/README.md (a file GitHub shows) from the
    # manual root (docs/), so it resolves; GitHub resolves a README's `/x` from the repository's root,
    # where repo/pages/a.mdx does not exist (404) and `/docs/pages/a.mdx` is the file, reported broken.
    project = _project(
        tmp_path,
        {
            "docs/next.config.mjs": PLAIN,
            "docs/README.md": "# R\n\n[a](/pages/a.mdx) [b](/docs/pages/a.mdx)\n",
            "docs/pages/a.mdx": "# A\n",
        },
    )
    manual = project / "docs"
    settings = load_settings(cwd=manual, root=manual, state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "README.md") == {"/pages/a.mdx": False, "/docs/pages/a.mdx": True}


# --- unbounded time ---------------------------------------------------------------------------


def test_generated_prefixes_times_locales_times_links_is_bounded(tmp_path: Path) -> None:
    # FINDING: `_generated` lists one prefix per parameter page per language (2,000 page files under
    # app/[lang]/pN/[x]/ and 100 locales make 202,000 prefixes), and `_locate_absolute` scans them all,
    # linearly, for every distinct unresolved link (twice on a translated page). 50 links took ~3.5 s,
    # 200 ~12 s, 400 ~23 s (~30 ms per lookup). A lookup should not depend on the number of prefixes
    # (a set of prefixes, probed per segment of the route): 150 links (~10 s then) well under 3 s,
    # which leaves room for a loaded machine (the build of 2,001 files is timed too).
    locales = ["en", *(f"{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(1, 100))]
    config = (
        "import nextra from 'nextra'\nexport default nextra({})({ i18n: { locales: ["
        + ",".join(f"'{x}'" for x in locales)
        + "], defaultLocale: 'en' } })\n"
    )
    files = {"next.config.mjs": config}
    files.update({f"app/[lang]/p{i}/[x]/page.tsx": "x\n" for i in range(2000)})
    files["content/en/index.mdx"] = "# Home\n\n" + " ".join(f"[l](/zz{i})" for i in range(150)) + "\n"
    project = _project(tmp_path, files)
    assert len(detect_site(project, stop=project).generated) == 5000  # capped; a lookup per segment
    settings = load_settings(cwd=project, root=project, state_dir=tmp_path / ".st")
    started = time.process_time()
    verdicts = page_verdicts(settings, "content/en/index.mdx")
    elapsed = time.process_time() - started
    assert len(verdicts) == 150
    assert elapsed < 3.0, f"{elapsed:.2f}s"


def test_choice_redirect_loops_cost_is_bounded(tmp_path: Path) -> None:
    # FINDING: a 775 KB next.config with 150 redirects `/r/:a(<51 words of 100 chars>)/:b` -> `/r/:a/:b`
    # (a loop) and one `/r/:a(w)/:b`: every distinct link `/r/w/zN` is matched against all 150 patterns
    # on each of 10 hops, and `_match` re-runs `_CHOICE_PARAM.fullmatch` on each 5 KB segment every
    # time (nothing is compiled once). ~72 ms per link: 50 links 3.9 s, 100 links 7.5 s. Bounded:
    # patterns parsed once, 50 links well under 1.5 s.
    choice = "|".join("x" * 99 + str(j % 10) for j in range(51))
    reds = ",".join(f"{{ source: '/r/:a({choice})/:b', destination: '/r/:a/:b' }}" for _ in range(149))
    reds += ",{ source: '/r/:a(w)/:b', destination: '/r/w/:b' }"
    config = f"import nextra from 'nextra'\nexport default nextra({{}})({{ redirects: () => [{reds}] }})\n"
    project = _project(
        tmp_path,
        {
            "next.config.mjs": config,
            "content/index.mdx": "# H\n\n" + " ".join(f"[l](/r/w/z{i})" for i in range(50)) + "\n",
        },
    )
    assert len(detect_site(project, stop=project).redirects) == 150
    settings = load_settings(cwd=project, root=project, state_dir=tmp_path / ".st")
    started = time.process_time()
    verdicts = page_verdicts(settings, "content/index.mdx")
    elapsed = time.process_time() - started
    assert set(verdicts.values()) == {False}  # a redirect loop lands nowhere
    assert elapsed < 1.5, f"{elapsed:.2f}s"


# --- guards ------------------------------------------------------------------------------------


def test_guard_symlinks_out_of_the_project_are_not_read(tmp_path: Path) -> None:
    # A page, a folder of pages, the whole app/ and a folder of public/ linked out of the project, and
    # a README's link to a root file linked out: nothing outside counts.
    outside = tmp_path / "outside"
    write_tree(
        outside,
        {
            "secret.mdx": "# Secret\n\n## Token\n",
            "dir/s2.mdx": "# S2\n",
            "page.mdx": "# P\n",
            "logo.svg": "<svg/>",
        },
    )
    project = _project(
        tmp_path / "p",
        {
            "next.config.mjs": PLAIN,
            "content/index.mdx": "# H\n\n[a](/leak#token) [b](/sub/s2) [c](/ext) [d](/pub/logo.svg)\n",
            "README.md": "# R\n\n[x](/content/leak.mdx#token) [y](/out.mdx#token)\n",
            "public/keep.txt": "x",
        },
    )
    os.symlink(outside / "secret.mdx", project / "content/leak.mdx")
    os.symlink(outside / "dir", project / "content/sub")
    os.symlink(outside, project / "app")
    os.symlink(outside, project / "public/pub")
    os.symlink(outside / "secret.mdx", project / "out.mdx")
    site = detect_site(project, stop=project)
    assert [m.folder for m in site.mounts] == ["content"] and site.html_pages == () and site.generated == ()
    settings = load_settings(cwd=project, root=project, state_dir=tmp_path / ".st")
    verdicts = link_verdicts(settings)
    assert verdicts and not any(verdicts.values()), verdicts


def test_guard_config_reading_is_linear(tmp_path: Path) -> None:
    # Odd next.config texts at 1x and 2x: nested `nextra({`, unclosed braces in redirects, thousands
    # of locales and of redirect objects, the word `redirects` again and again.
    def texts(n: int) -> list[str]:
        head = "import nextra from 'nextra'\n"
        return [
            head + "nextra({" * n,
            head + "nextra({})({redirects: () => [" + "{source:'/a',destination:'/b',x:{y:1}}," * n + "]})",
            head + "nextra({})({redirects: () => [" + "{ " * n + "]})",
            head + "nextra({})({i18n: {locales: [" + "'en'," * n + "], defaultLocale: 'en'}})",
            head + "redirects [ " * n,
        ]

    def seconds(n: int) -> float:
        return cpu_seconds(lambda: [nextra(tmp_path, tmp_path, text) for text in texts(n)])

    small, large = seconds(10_000), seconds(20_000)
    assert large < 2.0 and large < 4 * small + 0.2, (small, large)


def test_guard_odd_links_raise_nothing_and_escape_nothing(tmp_path: Path) -> None:
    config = (
        "import nextra from 'nextra'\nexport default nextra({contentDirBasePath: '/docs'})"
        "({ basePath: '/b', redirects: async () => [{source: '/loop', destination: '/loop2'}, "
        "{source: '/loop2', destination: '/loop'}, {source: '/x/:y(', destination: '/'}] })\n"
    )
    odd = ["/a%00b", "/%2e%2e/%2e%2e/etc/passwd", "/loop", "/x/y", "/%ff", "/../outside.md", "/.git/config"]
    body = "# R\n\n" + " ".join(f"[l]({o})" for o in odd) + "\n"
    project = _project(
        tmp_path / "p",
        {"next.config.mjs": config, "README.md": body, "content/index.mdx": body, "app/x/page.mdx": body},
    )
    (tmp_path / "outside.md").write_text("# Out\n")
    settings = load_settings(cwd=project, root=project, state_dir=tmp_path / ".st")
    verdicts = link_verdicts(settings)
    assert len(verdicts) == 3 * len(odd) and not any(verdicts.values()), verdicts
