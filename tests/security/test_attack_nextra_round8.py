"""Attacker round 8: Nextra (Next.js) sites after the round 7 fixes (commit e80b3e8). Each test either
guards a behaviour that holds, or was written failing on a real bug (marked `# FINDING`, with what
happened and what should); all 8 findings are fixed."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

from udm.config import load_settings
from udm.index.lint_rules import lint
from udm.site.routes import detect_site

from ..engine.conftest import cpu_seconds, link_verdicts, page_verdicts, write_tree
from .nextra_sites import I18N, PLAIN
from .nextra_sites import project as _project
from .nextra_sites import verdicts as _verdicts


def _locales(n: int) -> list[str]:
    return ["en", *(f"{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(1, n))]


def _i18n_config(locales: list[str]) -> str:
    return (
        "import nextra from 'nextra'\nexport default nextra({})({ i18n: { locales: ["
        + ",".join(f"'{x}'" for x in locales)
        + "], defaultLocale: 'en' } })\n"
    )


# --- unbounded time ----------------------------------------------------------------------------


def test_language_page_redirects_times_links_is_bounded(tmp_path: Path) -> None:
    # FINDING: `_language_pages` adds one redirect per `app/[lang]/<x>/page.mdx` per other locale, with
    # no cap (the config's own redirects are capped at 500): 600 pages and 100 locales make 59,400
    # redirects, and `Routes.redirect` matches every one, linearly, for each distinct link that is no
    # route (twice on a translated page: `/en/zzN`, then `/zzN`). Measured: the same site with 2
    # locales 0.41 s; with 100 locales 40 links 2.99 s, 80 links 5.26 s (~65 ms a link; pages x
    # locales x links). The language redirects are one pattern (`/:lang(es|...)/<rest>`) or a lookup by
    # the route below the language: 40 links well under 1.5 s.
    files = {"next.config.mjs": _i18n_config(_locales(100))}
    files.update({f"app/[lang]/p{i}/page.mdx": "# P\n" for i in range(600)})
    files["content/en/index.mdx"] = "# Home\n\n" + " ".join(f"[l](/zz{i})" for i in range(40)) + "\n"
    project = _project(tmp_path, files)
    assert (
        len(detect_site(project, stop=project).redirects) == 0
    )  # fixed: routes in each language, no redirects
    settings = load_settings(cwd=project, root=project, state_dir=tmp_path / ".st")
    started = time.process_time()
    verdicts = page_verdicts(settings, "content/en/index.mdx")
    elapsed = time.process_time() - started
    assert len(verdicts) == 40 and not any(verdicts.values())
    assert elapsed < 1.5, f"{elapsed:.2f}s"


# --- wrong verdicts: i18n and the [lang] parameter -------------------------------------------


def test_a_manual_rooted_at_app_serves_the_lang_component_pages_in_each_language(tmp_path: Path) -> None:
    # FINDING: with Next's i18n and the manual root at `app/`, `app/[lang]/about/page.tsx` is listed in
    # `html_pages` at `about` only: `_UNDER_LANGUAGE` looks for `app/[lang]/` in the path from the
    # manual root, which is `[lang]/about/page.tsx` here. `/en/about` and `/es/about` are reported
    # broken; checked from the project root both resolve (round 7's fix), and Next serves
    # /en/about and /es/about either way. Resolved.
    files = {
        "next.config.mjs": I18N,
        "app/[lang]/about/page.tsx": "export default function A() {}\n",
        "app/[lang]/guide/page.mdx": "# G\n\n[a](/en/about) [b](/es/about) [c](/es/guide)\n",
    }
    assert _verdicts(tmp_path / "p", files, "app/[lang]/guide/page.mdx") == {
        "/en/about": True,
        "/es/about": True,
        "/es/guide": True,
    }  # guard: from the project root
    assert _verdicts(tmp_path / "m", files, "[lang]/guide/page.mdx", root="app") == {
        "/en/about": True,
        "/es/about": True,
        "/es/guide": True,
    }


def _lang_site() -> dict[str, str]:
    return {
        "next.config.mjs": I18N,
        "app/[lang]/[[...mdxPath]]/page.jsx": "export default function P() {}\n",
        "app/[lang]/guide/page.mdx": "# G\n\n[a](/about) [b](/en/about) [d](/es/about)\n",
        "app/[lang]/tool/page.tsx": "export default function T() {}\n",
        "content/en/about.mdx": "# A\n\n[g](/guide) [t](/tool)\n",
        "content/es/about.mdx": "# A\n\n[g](/guide) [t](/tool) [ge](/es/guide)\n",
    }


def test_a_translated_pages_link_without_language_reaches_a_lang_page(tmp_path: Path) -> None:
    # FINDING: on content/es/about.mdx, `/guide` is reported broken while `/es/guide` and `/tool` on the
    # same page, and `/guide` on content/en/about.mdx, resolve. Nextra's middleware sends `/guide` to
    # the reader's language, /es/guide, which app/[lang]/guide/page.mdx serves. The fix of round 7
    # modelled `/es/guide` as a redirect to `/en/guide`, and `_locate` drops a translated hit whose
    # `how` is "redirect", then `/guide` alone is no route. Resolved.
    files = _lang_site()
    assert _verdicts(tmp_path / "en", files, "content/en/about.mdx") == {"/guide": True, "/tool": True}
    assert _verdicts(tmp_path / "es", files, "content/es/about.mdx") == {
        "/guide": True,
        "/tool": True,
        "/es/guide": True,
    }


def test_a_lang_app_pages_link_without_language_is_the_readers_language(tmp_path: Path) -> None:
    # FINDING: app/[lang]/guide/page.mdx (served at /en/guide and /es/guide) links `/about`; it is
    # reported broken. `_language_of` gives a page of the `nextra-app` mount no language (only the
    # content folder's pages get one), so `/about` is looked up bare, where no page is. Nextra's
    # middleware sends `/about` to /<reader's language>/about (content/en/about.mdx and
    # content/es/about.mdx): resolved, as the same link on content/en/about.mdx is (`/guide` there).
    assert _verdicts(tmp_path, _lang_site(), "app/[lang]/guide/page.mdx") == {
        "/about": True,
        "/en/about": True,
        "/es/about": True,
    }


# --- wrong verdicts: dynamic routes -----------------------------------------------------------


def test_a_parallel_route_slot_above_a_parameter_is_no_segment_of_the_generated_prefix(
    tmp_path: Path,
) -> None:
    # FINDING: round 7 drops `@slot` segments in `_app_pages`, `_language_pages` and the route of a
    # page.mdx, not in `_generated`: `app/@modal/x/[id]/page.tsx` (the route /x/[id]; Next's
    # normalizeAppPath drops `@modal`) makes the prefix `@modal/x`. `/x/123` is reported broken and
    # `/@modal/x/1` unknown; `app/y/[id]/page.tsx` makes `/y/123` unknown. Should: `/x/123` None (a page
    # the build makes), `/@modal/x/1` False (no such URL).
    verdicts = _verdicts(
        tmp_path,
        {
            "next.config.mjs": PLAIN,
            "app/@modal/x/[id]/page.tsx": "export default function M() {}\n",
            "app/y/[id]/page.tsx": "export default function Y() {}\n",
            "app/about/page.mdx": "# A\n\n[a](/x/123) [b](/y/123) [c](/@modal/x/1)\n",
        },
        "app/about/page.mdx",
    )
    assert verdicts == {"/x/123": None, "/y/123": None, "/@modal/x/1": False}


def test_a_pages_router_single_dynamic_segment_covers_one_segment_only(tmp_path: Path) -> None:
    # FINDING: `_pages_params` turns `pages/[slug].tsx` into the prefix "" and `pages/blog/[slug].tsx`
    # into "blog", and `_below_generated` then calls every route below them the build's: `/a/b/c`
    # (every route of the site) and `/blog/a/b` are reported unknown, hiding any broken absolute link.
    # Next's `[slug]` matches exactly one segment (only `[...slug]`/`[[...slug]]` match more), and a
    # file `[slug].tsx` has nothing below it: /a/b/c and /blog/a/b are 404. Broken; `/x` and
    # `/blog/x` stay unknown.
    verdicts = _verdicts(
        tmp_path,
        {
            "next.config.js": PLAIN,
            "pages/index.mdx": "# H\n\n[a](/a/b/c) [b](/x) [c](/blog/a/b) [d](/blog/x)\n",
            "pages/[slug].tsx": "export default function P() {}\n",
            "pages/blog/[slug].tsx": "export default function B() {}\n",
        },
        "pages/index.mdx",
    )
    assert verdicts == {"/a/b/c": False, "/x": None, "/blog/a/b": False, "/blog/x": None}


# --- wrong verdicts: a README read on GitHub ----------------------------------------------------


def _readme_project(tmp_path: Path) -> Path:
    project = _project(
        tmp_path,
        {
            "docs/next.config.mjs": PLAIN,
            "docs/content/x.mdx": "# X\n",
            "docs/README.md": (
                "# R\n\n[a](/.git/config) [b](/build/out.md) [c](../.git/config) [d](../build/out.md) "
                "[e](/src/a.ts) [f](../src/a.ts) [g](/src) [h](../src)\n"
            ),
            ".gitignore": "build/\n",
            "build/out.md": "generated\n",
            "src/a.ts": "export {}\n",
        },
    )
    (project / ".git" / "config").write_text("[core]\n")
    return project / "docs"


def test_a_readmes_absolute_link_into_git_or_ignored_files_is_broken(tmp_path: Path) -> None:
    # FINDING: round 7 made `_unrouted_file` read `/x` in docs/README.md from the repository's root
    # (`../x`), but without `_locate_relative`'s checks for a path above the manual: git's own folder
    # and the files the repository ignores are no files GitHub shows. `/.git/config` and
    # `/build/out.md` (build/ ignored) are reported resolved, while the same files written `../.git/config`
    # and `../build/out.md` are broken. Both 404 on GitHub: broken.
    manual = _readme_project(tmp_path)
    settings = load_settings(cwd=manual, root=manual, state_dir=tmp_path / ".st")
    verdicts = page_verdicts(settings, "README.md")
    assert (verdicts["../.git/config"], verdicts["../build/out.md"]) == (False, False)  # guard
    assert (verdicts["/.git/config"], verdicts["/build/out.md"]) == (False, False)


def test_a_readmes_absolute_link_to_a_repository_folder(tmp_path: Path) -> None:
    # FINDING: in docs/README.md, `../src` (a folder of the repository) resolves but `/src`, the same
    # folder from the repository root, is reported broken: `_unrouted_file` asks for a file only.
    # GitHub shows the folder's tree for both: resolved.
    manual = _readme_project(tmp_path)
    settings = load_settings(cwd=manual, root=manual, state_dir=tmp_path / ".st")
    verdicts = page_verdicts(settings, "README.md")
    assert (verdicts["/src/a.ts"], verdicts["../src/a.ts"], verdicts["../src"]) == (True, True, True)  # guard
    assert verdicts["/src"] is True


# --- guards ------------------------------------------------------------------------------------


def test_guard_a_readme_link_climbing_or_through_a_symlink_out_of_the_repository(tmp_path: Path) -> None:
    # A manual in docs/ whose README links climb out with `..` or reach a repository-root symlink to a
    # folder outside the repository: nothing outside counts.
    outside = tmp_path / "outside"
    write_tree(outside, {"secret.md": "# S\n", "repo/x.md": "# X\n"})
    project = _project(
        tmp_path / "repo",
        {
            "docs/next.config.mjs": PLAIN,
            "docs/content/x.mdx": "# X\n",
            "docs/README.md": (
                "# R\n\n[a](/../outside/secret.md) [b](/evil/secret.md) [c](/a/../../outside/secret.md) "
                "[d](/%2e%2e/outside/secret.md) [e](/evilfile.md)\n"
            ),
        },
    )
    os.symlink(outside, project / "evil")
    os.symlink(outside / "secret.md", project / "evilfile.md")
    manual = project / "docs"
    settings = load_settings(cwd=manual, root=manual, state_dir=tmp_path / ".st")
    verdicts = page_verdicts(settings, "README.md")
    assert len(verdicts) >= 4 and not any(verdicts.values()), verdicts


def test_guard_deep_and_wide_pages_trees_of_parameters_are_linear(tmp_path: Path) -> None:
    def seconds(n: int, where: Path) -> float:
        files = {"next.config.js": PLAIN, "pages/index.mdx": "# H\n\n[a](/zz/q)\n"}
        deep = "/".join(f"d{i}" for i in range(n // 20))
        for i in range(n):
            files[f"pages/w{i}/[p{i}].tsx"] = "x"
        files[f"pages/{deep}/[x].tsx"] = "x"
        project = _project(where, files)
        return cpu_seconds(lambda: detect_site(project, stop=project))

    small, large = seconds(400, tmp_path / "a"), seconds(800, tmp_path / "b")
    assert large < 2.0 and large < 4 * small + 0.2, (small, large)


def test_guard_odd_trees_raise_nothing(tmp_path: Path) -> None:
    # Random trees of odd names (`[`, `[..]`, `(.)x`, `@`, `_`, `x.es.mdx`, `[x].tsx`) under app/,
    # content/ and pages/, with odd configs and links, checked from the project and from folders
    # inside it: detect_site, the index and lint raise nothing.
    names = ["[", "]", "[]", "[..]", "[[...]]", "()", "@", "_", "(.)x", "[lang]", "[[...mdxPath]]", "a", "en"]
    leaves = ["index.mdx", "page.mdx", "page.tsx", "x.en.mdx", "x.es.mdx", ".mdx", "[x].mdx", "[x].tsx"]
    configs = [
        PLAIN,
        I18N,
        "import nextra from 'nextra'\nexport default nextra({contentDirBasePath: '/(g)/[x]'})({ basePath: '/b',"
        " trailingSlash: true, i18n: { locales: ['en', 'es', 'x-'], defaultLocale: 'en' }, redirects: () =>"
        " [{source:'/:a*', destination:'/:a*'},{source:'/:(a', destination: ':'},{source:'/:*', destination:'https://:x'}] })\n",
    ]
    links = [
        "/",
        "/en",
        "/es/",
        "./",
        "../",
        "../../..",
        "/a/../..",
        "/[lang]",
        "/@",
        "#x",
        "/x.mdx",
        "//x",
        "/b/",
    ]
    rng = random.Random(8)
    for trial in range(6):
        files = {"next.config.mjs": configs[trial % len(configs)]}
        for _ in range(10):
            top = rng.choice(["app", "content", "pages", "src/app", "content/en", "app/[lang]"])
            parts = [rng.choice(names) for _ in range(rng.randint(0, 3))]
            path = "/".join([top, *parts, rng.choice(leaves)])
            files[path] = "# T\n\n" + " ".join(f"[l]({rng.choice(links)})" for _ in range(5)) + "\n"
        files["README.md"] = "# R\n\n" + " ".join(f"[l]({link})" for link in links) + "\n"
        project = _project(tmp_path / f"t{trial}", files)
        for manual in [
            project,
            *(project / r for r in ("app", "content", "content/en") if (project / r).is_dir()),
        ]:
            detect_site(manual, stop=project)
            settings = load_settings(cwd=manual, root=manual, state_dir=tmp_path / f".st{trial}{manual.name}")
            link_verdicts(settings)
            lint(settings)
