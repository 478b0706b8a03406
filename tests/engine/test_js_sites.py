"""Sites configured in JavaScript beyond Docusaurus: Astro Starlight and VitePress (read, never run).

The fixtures under fixtures/sites/starlight and fixtures/sites/vitepress were written for these tests;
each holds exactly the broken links listed here. Without the conventions, a Starlight manual in 14
languages reported every link of a translated page to an untranslated one as broken.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from udm.config import Settings, load_settings
from udm.index import lint
from udm.site import LinkResolver, Routes
from udm.site.routes import detect_site

from .conftest import link_verdicts, page_verdicts, write_tree

SITES = Path(__file__).parent / "fixtures" / "sites"


def _copy(tmp_path: Path, name: str, root: str) -> Settings:
    shutil.copytree(SITES / name, tmp_path / name)
    return load_settings(cwd=tmp_path, root=tmp_path / name / root, state_dir=tmp_path / "state")


def _lint_broken(settings: Settings) -> set[tuple[str, str]]:
    return {(f.file, f.rule) for f in lint(settings) if f.rule in ("broken-link", "broken-anchor")}


@pytest.mark.parametrize(
    ("name", "root", "base", "broken"),
    [
        (
            "starlight",
            "src/content/docs",
            "/guide",
            {("en/index.mdx", "#nope"), ("fr/index.mdx", "/guide/fr/nothing/")},
        ),
        (
            "vitepress",
            "docs",
            "/vp",
            {("index.md", "/guide/missing"), ("index.md", "/guide/getting-started#nope")},
        ),
    ],
)
def test_links_to_existing_pages_resolve_and_the_broken_ones_are_found(
    tmp_path: Path, name: str, root: str, base: str, broken: set[tuple[str, str]]
) -> None:
    settings = _copy(tmp_path, name, root)
    site = detect_site(settings.udm_root, stop=tmp_path)
    assert (site.generator, site.base_path) == (name, base)
    targets = link_verdicts(settings)
    assert {k for k, ok in targets.items() if ok is False} == broken
    assert len(targets) >= 8
    rules = {
        (f, "broken-anchor" if "#" in t and "nothing" not in t and "missing" not in t else "broken-link")
        for f, t in broken
    }
    assert _lint_broken(settings) == rules


def _starlight_resolver(root: Path) -> LinkResolver:
    site = detect_site(root, stop=SITES)
    pages = [p.relative_to(root).as_posix() for p in root.rglob("*.md*")]
    meta = {"en/custom.md": {"slug": "en/moved"}}
    return LinkResolver(Routes(site, pages, meta), lambda rel: (root / rel).is_file())


@pytest.mark.parametrize(
    ("target", "file"),
    [
        ("/guide/en/getting-started/", "en/getting-started.mdx"),
        ("/en/getting-started", "en/getting-started.mdx"),
        ("/guide/en/", "en/index.mdx"),
        ("/guide/en/reference/config-options/", "en/Reference/Config Options.md"),  # segments slugged
        ("/guide/en/moved/", "en/custom.md"),  # front matter slug
        ("/guide/fr/getting-started/", "en/getting-started.mdx"),  # untranslated: the default locale's
        ("/guide/pt-br/getting-started/", "pt-br/getting-started.md"),  # translated: its own
        ("/guide/pt-br/", "en/index.mdx"),
        ("/guide/old-start", "en/getting-started.mdx"),  # Astro's redirects
        ("/guide/favicon.svg", "../../../public/favicon.svg"),  # public/ at the site root
    ],
)
def test_starlight_routes(target: str, file: str) -> None:
    resolver = _starlight_resolver(SITES / "starlight" / "src" / "content" / "docs")
    assert resolver.locate("fr/index.mdx", target).file == file


def test_starlight_locales_from_the_folders_when_the_config_imports_them(tmp_path: Path) -> None:
    docs = tmp_path / "src" / "content" / "docs"
    for folder in ("en", "de", "zh-cn", "assets"):
        (docs / folder).mkdir(parents=True)
    (docs / "en" / "intro.md").write_text("# Intro\n")
    (tmp_path / "astro.config.ts").write_text(
        "import starlight from '@astrojs/starlight';\nimport { localesConfig } from './config/locales';\n"
        "export default { integrations: [starlight({ defaultLocale: 'en', locales: localesConfig })] };\n"
    )
    site = detect_site(docs, stop=tmp_path)
    assert site.generator == "starlight"
    assert sorted(site.redirects) == [("/de/:slug*", "/en/:slug*"), ("/zh-cn/:slug*", "/en/:slug*")]
    # A root locale: other locales fall back to the unprefixed pages.
    (tmp_path / "astro.config.ts").write_text(
        "import starlight from '@astrojs/starlight';\nexport default { integrations: [starlight({\n"
        "  locales: { root: { label: 'English', lang: 'en' }, /* comment: x */ de: { label: 'Deutsch' } },\n"
        "})] };\n"
    )
    assert detect_site(docs, stop=tmp_path).redirects == (("/de/:slug*", "/:slug*"),)


def test_an_astro_config_without_starlight_is_not_a_manual_site(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "astro.config.mjs").write_text(
        "import { defineConfig } from 'astro/config';\nexport default defineConfig({});\n"
    )
    assert detect_site(tmp_path / "docs", stop=tmp_path).generator == "none"


def test_an_index_written_by_another_schema_version_is_rebuilt_before_any_answer(tmp_path: Path) -> None:
    # Upgrading udm changed how anchors are made; an index of unchanged files written by the old
    # version must not answer (before: `query section` by anchor failed until a file changed).
    import duckdb

    from udm.index import UdmQuery

    settings = _copy(tmp_path, "starlight", "src/content/docs")
    link_verdicts(settings)
    con = duckdb.connect(str(settings.state_path / "index.duckdb"))
    con.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    con.execute("UPDATE sections SET anchor = 'stale'")
    con.close()
    query = UdmQuery(settings)
    try:
        _, section = query.section("en/getting-started.mdx", "install-the-cli")
        assert section is not None and section.title == "Install the CLI"
    finally:
        query.close()
    assert link_verdicts(settings)[("fr/index.mdx", "/guide/fr/getting-started/#install-the-cli")] is True


def test_vitepress_heading_anchors_are_made_as_vitepress_makes_them() -> None:
    from udm.site.routes import vitepress_slug

    assert vitepress_slug("What's new in 2.0?") == "what-s-new-in-2-0"
    assert vitepress_slug("1. First step") == "_1-first-step"
    assert vitepress_slug("Été & “quotes”") == "ete-quotes"
    assert vitepress_slug("`v-model` arguments") == "v-model-arguments"


@pytest.mark.parametrize(
    ("config", "base"),
    [
        # Ionic's docs build baseUrl from a constant: every `/docs/...` link was broken.
        (
            "const BASE_URL = '/manual';\nmodule.exports = { baseUrl: `${BASE_URL}/`, title: 'x' };\n",
            "/manual",
        ),
        ("const BASE = '/manual/';\nexport default { baseUrl: BASE, title: 'x' };\n", "/manual"),
        ("const A = '/man';\nconst B = `${A}ual`;\nmodule.exports = {\n  baseUrl: B,\n};\n", "/manual"),
        # Computed at build time: unset (the site root), never the expression's text.
        ("module.exports = { baseUrl: `${process.env.BASE}/`, title: 'x' };\n", ""),
        ("const B = process.env.BASE;\nmodule.exports = { baseUrl: B, title: 'x' };\n", ""),
    ],
)
def test_docusaurus_values_from_constants(tmp_path: Path, config: str, base: str) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docusaurus.config.js").write_text(config)
    (tmp_path / "docs" / "a.md").write_text("# A\n\n[B](/manual/docs/b) [C](/docs/b)\n")
    (tmp_path / "docs" / "b.md").write_text("# B\n")
    site = detect_site(tmp_path, stop=tmp_path)
    assert site.generator == "docusaurus" and site.base_path == base
    settings = load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / ".st")
    verdicts = link_verdicts(settings)
    assert verdicts[("docs/a.md", "/manual/docs/b")] is (base == "/manual")
    assert verdicts[("docs/a.md", "/docs/b")] is True


def test_route_base_from_a_constant(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docusaurus.config.ts").write_text(
        "const ROUTE = 'guide';\nexport default {\n  baseUrl: '/',\n  presets: [['classic', {docs: "
        "{routeBasePath: ROUTE, path: 'docs'}}]],\n};\n"
    )
    (tmp_path / "docs" / "a.md").write_text("# A\n\n[B](/guide/b) [old](/docs/b)\n")
    (tmp_path / "docs" / "b.md").write_text("# B\n")
    settings = load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / ".st")
    verdicts = link_verdicts(settings)
    assert verdicts[("docs/a.md", "/guide/b")] is True and verdicts[("docs/a.md", "/docs/b")] is False


@pytest.mark.parametrize(
    ("declarations", "base"),
    [
        # Each constant twice the one before: 2**200 characters if templates were expanded blindly.
        (
            "const C0 = 'ab';\n"
            + "".join(f"const C{i} = `${{C{i - 1}}}${{C{i - 1}}}`;\n" for i in range(1, 200)),
            "",
        ),
        # Many constants, each one longer: quadratic if all were kept (the first 200 are read).
        (
            "const C0 = 'x';\n" + "".join(f"const C{i} = `${{C{i - 1}}}x`;\n" for i in range(1, 30_000)),
            "/" + "x" * 200,
        ),
        # An unclosed template at the end.
        ("const Z = `${" * 20_000, ""),
    ],
)
def test_hostile_constants_are_contained(tmp_path: Path, declarations: str, base: str) -> None:
    import time

    # A tool may write the config (under the 1 MiB a config may have): read in bounded time and memory.
    (tmp_path / "docusaurus.config.js").write_text(declarations + "\nmodule.exports = { baseUrl: C199 };\n")
    started = time.monotonic()
    site = detect_site(tmp_path, stop=tmp_path)
    assert time.monotonic() - started < 5
    assert site.generator == "docusaurus" and not site.problems
    assert site.base_path == base


def test_starlight_root_locale_with_imported_locales(tmp_path: Path) -> None:
    # tauri's docs: `defaultLocale: 'root'` and the locales imported; a page not translated to fr is
    # served at /fr/... with the root page.
    docs = tmp_path / "src" / "content" / "docs"
    for folder in ("fr", "zh-cn", "api", "guides"):
        (docs / folder).mkdir(parents=True)
    (docs / "guides" / "a.md").write_text("# A\n")
    (docs / "fr" / "index.md").write_text("# Accueil\n\n[a](/fr/guides/a/) [b](/fr/guides/nope/)\n")
    (tmp_path / "astro.config.mjs").write_text(
        "import starlight from '@astrojs/starlight';\nimport locales from './locales.json';\n"
        "export default { redirects: {\n  // '/gone': '/guides/a',\n  /* '/old': '/guides/a', */\n"
        "  '/moved': '/guides/a',\n}, integrations: [starlight({ title: 'T', defaultLocale: 'root', locales })] };\n"
    )
    site = detect_site(docs, stop=tmp_path)
    assert sorted(site.redirects) == [
        ("/fr/:slug*", "/:slug*"),
        ("/moved", "/guides/a"),
        ("/zh-cn/:slug*", "/:slug*"),
    ]
    settings = load_settings(cwd=tmp_path, root=docs, state_dir=tmp_path / ".st")
    verdicts = link_verdicts(settings)
    assert verdicts[("fr/index.md", "/fr/guides/a/")] is True
    assert verdicts[("fr/index.md", "/fr/guides/nope/")] is False


def test_a_sites_own_pages_and_generated_blog_pages(tmp_path: Path) -> None:
    # jest: `/help` and `/` are React pages in src/pages, `/blog/` the list Docusaurus makes.
    files = {
        "docusaurus.config.js": "module.exports = { baseUrl: '/' };\n",
        "src/pages/help.js": "export default function Help() {}\n",
        "src/pages/index.tsx": "export default function Home() {}\n",
        "blog/2024-01-15-launch.md": "# Launch\n",
        "docs/intro.md": "# Intro\n\n[h](/help) [home](/) [b](/blog/) [t](/blog/tags/release) [a](/blog/archive) "
        "[p](/blog/page/2) [x](/nope) [bx](/blog/nope)\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    for root in (tmp_path, tmp_path / "docs"):
        settings = load_settings(cwd=tmp_path, root=root, state_dir=root / ".st")
        broken = {t for (f, t), ok in link_verdicts(settings).items() if ok is False}
        assert broken == {"/nope", "/blog/nope"}, root


def test_astro_endpoints_in_src_pages(tmp_path: Path) -> None:
    # tauri: `/feed.xml` is served by src/pages/feed.xml.ts.
    docs = tmp_path / "src" / "content" / "docs"
    docs.mkdir(parents=True)
    (tmp_path / "src" / "pages").mkdir()
    (tmp_path / "src" / "pages" / "feed.xml.ts").write_text("export function GET() {}\n")
    (tmp_path / "src" / "pages" / "about.astro").write_text("---\n---\n<h1>About</h1>\n")
    (docs / "index.md").write_text("# Home\n\n[f](/feed.xml) [a](/about/) [n](/nope.xml)\n")
    (tmp_path / "astro.config.mjs").write_text(
        "import starlight from '@astrojs/starlight';\nexport default { integrations: [starlight({ title: 'T' })] };\n"
    )
    settings = load_settings(cwd=tmp_path, root=docs, state_dir=tmp_path / ".st")
    broken = {t for (f, t), ok in link_verdicts(settings).items() if ok is False}
    assert broken == {"/nope.xml"}


def test_astro_import_aliases_from_tsconfig(tmp_path: Path) -> None:
    # tauri: `![d](@assets/security/d.svg)` through tsconfig `"@assets/*": ["src/assets/*"]`.
    docs = tmp_path / "src" / "content" / "docs"
    docs.mkdir(parents=True)
    (tmp_path / "src" / "assets" / "security").mkdir(parents=True)
    (tmp_path / "src" / "assets" / "security" / "d.svg").write_text("<svg/>")
    (tmp_path / "tsconfig.json").write_text(
        '{\n  // TypeScript reads comments and trailing commas\n  "extends": "astro/tsconfigs/strict",\n'
        '  "compilerOptions": { "paths": { "@assets/*": ["src/assets/*"], "@x": ["y"], }, },\n}\n'
    )
    (tmp_path / "astro.config.mjs").write_text(
        "import starlight from '@astrojs/starlight';\nexport default { integrations: [starlight({ title: 'T' })] };\n"
    )
    (docs / "index.mdx").write_text("# Home\n\n![d](@assets/security/d.svg) ![n](@assets/nope.svg) [p](@x)\n")
    site = detect_site(docs, stop=tmp_path)
    assert site.aliases == (("@assets/", "../../assets"),)
    settings = load_settings(cwd=tmp_path, root=docs, state_dir=tmp_path / ".st")
    verdicts = link_verdicts(settings)
    assert verdicts[("index.mdx", "@assets/security/d.svg")] is True
    assert verdicts[("index.mdx", "@assets/nope.svg")] is False


@pytest.mark.parametrize(
    "text",
    [
        "{",
        '{"compilerOptions": {"paths": "x"}}',
        "[" * 50_000,
        '{"compilerOptions": 3}',
        # Aliases out of the site's folder: a link could ask whether any file of the machine exists.
        '{"compilerOptions": {"paths": {"@etc/*": ["/etc/*"], "@up/*": ["../../*"]}}}',
        '{"compilerOptions": {"baseUrl": "/", "paths": {"@r/*": ["etc/*"]}}}',
    ],
)
def test_a_broken_tsconfig_gives_no_aliases(tmp_path: Path, text: str) -> None:
    from udm.site.jsconfig import ts_aliases

    (tmp_path / "tsconfig.json").write_text(text)
    assert ts_aliases(tmp_path, tmp_path) == ()


def test_starlight_locales_imported_from_a_json_file(tmp_path: Path) -> None:
    # tauri: `import locales from './locales.json'` and `starlight({ locales })`, no defaultLocale: the
    # file's keys are the locales, its `root` the default.
    docs = tmp_path / "src" / "content" / "docs"
    for folder in ("fr", "it", "guides"):
        (docs / folder).mkdir(parents=True)
    (tmp_path / "locales.json").write_text('{"root": {"label": "English"}, "fr": {"label": "Français"}}')
    (tmp_path / "astro.config.mjs").write_text(
        "import starlight from '@astrojs/starlight';\nimport locales from './locales.json';\n"
        "export default { integrations: [starlight({ title: 'T', locales })] };\n"
    )
    assert detect_site(docs, stop=tmp_path).redirects == (("/fr/:slug*", "/:slug*"),)
    # A file outside the site's folder is not read.
    (tmp_path / "astro.config.mjs").write_text(
        "import starlight from '@astrojs/starlight';\nimport locales from '../../etc/locales.json';\n"
        "export default { integrations: [starlight({ title: 'T', locales })] };\n"
    )
    assert detect_site(docs, stop=tmp_path).redirects == ()


def test_starlight_locales_from_a_constant_of_the_config(tmp_path: Path) -> None:
    """Starlight's own docs: `export const locales = {root: {...}, de: {...}}` and `starlight({ locales })`:
    an untranslated page is served at `/de/...` with the root locale's content."""
    write_tree(
        tmp_path,
        {
            "astro.config.mjs": (
                "import starlight from '@astrojs/starlight';\n"
                "export const locales = {\n  root: { label: 'English', lang: 'en' },\n"
                "  de: { label: 'Deutsch', lang: 'de' },\n  'zh-cn': { label: 'Chinese', lang: 'zh-CN' },\n};\n"
                "export default { integrations: [starlight({ title: 'T', locales, sidebar: [] })] };\n"
            ),
            "src/content/docs/guides/css.mdx": "# CSS\n\n## Theming\n",
            "src/content/docs/de/index.mdx": "# Start\n\n[a](/de/guides/css/#theming) [b](/de/guides/nope/)\n",
        },
    )
    site = detect_site(tmp_path, stop=tmp_path)
    assert site.redirects == (("/de/:slug*", "/:slug*"), ("/zh-cn/:slug*", "/:slug*"))
    verdicts = page_verdicts(
        load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / ".st"),
        "src/content/docs/de/index.mdx",
    )
    assert verdicts == {"/de/guides/css/#theming": True, "/de/guides/nope/": False}


def test_quoted_keys_are_read_as_keys(tmp_path: Path) -> None:
    """pnpm's config quotes its keys (`"docs": {"path": "./docs", "routeBasePath": "/"}`)."""
    write_tree(
        tmp_path,
        {
            "docusaurus.config.ts": (
                'export default {\n  "baseUrl": "/",\n  "presets": [["classic", {\n    "docs": {\n'
                '      "path": "./manual",\n      \'routeBasePath\': "/",\n    },\n'
                '    "blog": { "path": "news", "routeBasePath": "updates" },\n  }]],\n};\n'
            ),
            "manual/settings.md": "# Settings\n\n## Store\n",
            "news/2024-01-02-hello.md": "# Hello\n\n[s](/settings#store) [old](/docs/settings)\n",
        },
    )
    site = detect_site(tmp_path, stop=tmp_path)
    assert {(m.folder, m.prefix) for m in site.mounts if m.kind != "pages"} == {
        ("manual", ""),
        ("news", "updates"),
    }
    verdicts = link_verdicts(load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / ".st"))
    assert verdicts[("news/2024-01-02-hello.md", "/settings#store")] is True
    assert verdicts[("news/2024-01-02-hello.md", "/docs/settings")] is False
