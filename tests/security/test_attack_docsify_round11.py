"""Attacker round 11: Docsify sites (commit 5967579, `udm/site/docsify.py`, `LinkResolver._locate_docsify`).
Each test either guards a behaviour that holds, or was written failing on a real bug (marked
`# FINDING`, with what happened and what should, checked against Docsify's source: src/core/router,
src/core/render, src/core/fetch, src/core/config.js, src/core/event). Where Docsify's result is quoted,
it was computed by running Docsify's own `slugify` and `HashHistory.toURL` under Node. All 18 findings
are fixed (commit after 5967579)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from udm.config import load_settings
from udm.site.docsify import alias_pattern, docsify_inputs, docsify_slug
from udm.site.routes import detect_site

from ..engine.conftest import DOCSIFY_PAGE, docsify_site, page_verdicts, root_verdicts, write_tree

REPO = Path(__file__).resolve().parents[2]


def _in_child(code: str, timeout: float) -> tuple[bool, str]:
    """Run `code` in a fresh interpreter (the repository's modules importable); whether it finished in
    `timeout` seconds with exit status 0, and its output. A hang is killed, never waited out."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])}
    try:
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return False, "timed out"
    return done.returncode == 0, done.stdout + done.stderr


# --- anchors: ids and how a link names them ---------------------------------------------------------


def test_an_anchor_written_in_capitals_is_lowercased_by_docsify(tmp_path: Path) -> None:
    # FINDING: `[a](#Setup)`, `[b](?id=SETUP)` and `[c](guide.md#Setup)` are reported broken. Docsify's
    # router writes every link's query lowercased: `stringifyQuery` (src/core/router/util.js,
    # `${encode(key)}=${encode(obj[key])}`.toLowerCase()) is applied by `History.toURL`
    # (src/core/router/history/base.js, `path = route.path + stringifyQuery(route.query)`), so
    # `#Setup` becomes `#/?id=setup` (Node: toURL('#SETUP', null, '/') == '#/?id=setup') and lands on
    # `## Setup` (id `setup`). Only ASCII capitals are affected (`%C3%9C` lowercased still decodes to
    # `Ü`), so `#über-uns` for `## Über uns` stays dead: that part holds.
    root = docsify_site(
        tmp_path,
        "{}",
        {
            "docs/README.md": "# Home\n\n## Setup\n\n## Über uns\n\n[a](#Setup) [b](?id=SETUP) [c](guide.md#Setup)\n[d](#über-uns) [e](#Über-uns)\n",
            "docs/guide.md": "# Guide\n\n## Setup\n",
        },
    )
    assert root_verdicts(root, "README.md") == {
        "#Setup": True,
        "?id=SETUP": True,
        "guide.md#Setup": True,
        "#über-uns": False,
        "#Über-uns": True,
    }


def test_a_markdown_link_to_a_hash_route_is_mangled_by_docsify(tmp_path: Path) -> None:
    # FINDING: a Markdown link `[x](#/guide)` (and `[y](#/guide?id=part)`) is reported as landing on
    # guide.md. Docsify compiles every Markdown link that is not absolute (src/core/render/compiler/
    # link.js: `router.toURL(href, null, router.getCurrentPath())`); toURL treats a `#...` href as a
    # local anchor (base.js: `const local = currentRoute && path[0] === '#'`), `replaceSlug` turns the
    # first `#` into `?id=` (util.js), so the href becomes the current page with the heading id
    # `/guide`: Node gives toURL('#/guide', null, '/') == '#/?id=%2fguide' and
    # toURL('#/README?id=setup', null, '/') == '#/?id=%2freadme%3fid'. No heading has that id: the
    # link never leaves the page. Only a raw HTML `<a href="#/guide">` (not compiled) is a hash route,
    # as udm's README itself says ("as HTML links write it"); that part holds.
    root = docsify_site(
        tmp_path,
        "{}",
        {
            "docs/README.md": '# Home\n\n[x](#/guide) [y](#/guide?id=part)\n\n<a href="#/guide/">z</a>\n',
            "docs/guide.md": "# Guide\n\n## Part\n",
            "docs/guide/README.md": "# Guide folder\n",
        },
    )
    assert root_verdicts(root, "README.md") == {"#/guide": False, "#/guide?id=part": False, "#/guide/": True}


def test_a_heading_id_is_made_from_the_headings_markdown_source(tmp_path: Path) -> None:
    # FINDING: udm slugs a heading's rendered text; Docsify slugs the heading token's raw Markdown:
    # src/core/render/compiler/heading.js `slugify(config.id || text)` where `text` is marked's
    # heading token text (the source, `[API](api.md)`, `_Note_`, `&amp;`), not `parsedText`. Node:
    # slugify('_Note_ here') == '_note_-here' (udm: `note-here`), slugify('[API](api.md)') ==
    # 'apiapimd' (udm: `api`), slugify('A &amp; B') == 'a-amp-b' (udm: `a--b`). udm reports the
    # ids Docsify gives as broken and the ones it does not give as fine.
    root = docsify_site(
        tmp_path,
        "{}",
        {
            "docs/README.md": (
                "# Home\n\n## _Note_ here\n\n## [API](api.md)\n\n## A &amp; B\n\n"
                "[a](#_note_-here) [b](#note-here) [c](#apiapimd) [d](#api) [e](#a-amp-b) [f](#a--b)\n"
            ),
            "docs/api.md": "# API\n",
        },
    )
    assert root_verdicts(root, "README.md") == {
        "api.md": True,
        "#_note_-here": True,
        "#note-here": False,
        "#apiapimd": True,
        "#api": False,
        "#a-amp-b": True,
        "#a--b": False,
    }


def test_a_docsify_ignore_comment_leaves_a_trailing_hyphen_in_the_id(tmp_path: Path) -> None:
    # FINDING: `## Setup <!-- {docsify-ignore} -->` (the form Docsify's docs teach for keeping a
    # heading out of the sidebar) gets the id `setup-`: slugify trims first, then drops the tag,
    # leaving the blank that becomes `-` (src/core/render/slugify.js order: trim ... `<[^>]+>` ...
    # `\s` -> `-`). Docsify's own unit test pins it: test/unit/render-util.test.js expects
    # slugify('Ignore Heading <!-- {docsify-ignore} -->') toBe 'ignore-heading-'. udm says `#setup`
    # lands and `#setup-` is broken: the reverse.
    root = docsify_site(
        tmp_path,
        "{}",
        {"docs/README.md": "# Home\n\n## Setup <!-- {docsify-ignore} -->\n\n[a](#setup-) [b](#setup)\n"},
    )
    assert root_verdicts(root, "README.md") == {"#setup-": True, "#setup": False}


def test_slug_keeps_symbols_that_are_no_emoji() -> None:
    # FINDING: docsify_slug drops every Unicode "So" (other symbol) character as if it were an emoji;
    # Docsify drops only `[\p{Emoji_Presentation}\p{Extended_Pictographic}]` (src/core/render/
    # slugify.js). Node: slugify('100°C') == '_100°c', slugify('✓ Done') == '✓-done',
    # slugify('★ Star') == '★-star', slugify('⌘ Key') == '⌘-key'; udm gives `_100c`, `-done`,
    # `-star`, `-key`. (Real pictographs are dropped by both: '♥ love' -> '-love', '🎉 Party' ->
    # '-party'.)
    assert docsify_slug("♥ love") == "-love"
    assert docsify_slug("🎉 Party") == "-party"
    assert [docsify_slug(t) for t in ("100°C", "✓ Done", "★ Star", "⌘ Key")] == [
        "_100°c",
        "✓-done",
        "★-star",
        "⌘-key",
    ]


def test_slug_prefixes_an_underscore_only_before_an_ascii_digit() -> None:
    # FINDING: docsify_slug puts `_` before any character `str.isdigit()` accepts (Arabic-Indic `١`,
    # Persian `۱`, superscript `²`); Docsify's `.replace(/^(\d)/, '_$1')` (src/core/render/
    # slugify.js) uses JavaScript's `\d`, ASCII 0-9 only. Node: slugify('١. مقدمة') == '١-مقدمة',
    # slugify('۱ شروع') == '۱-شروع', slugify('² x') == '²-x'. Numbered headings of Arabic and
    # Persian manuals get ids udm never finds.
    assert docsify_slug("2. Setup") == "_2-setup"
    assert [docsify_slug(t) for t in ("١. مقدمة", "۱ شروع", "² x")] == ["١-مقدمة", "۱-شروع", "²-x"]


def test_an_html_anchor_that_is_no_heading_is_dead(tmp_path: Path) -> None:
    # FINDING: `<a id="legacy"></a>` and `<a name="old"></a>` count as anchors. On Docsify the URL is
    # `#/?id=legacy`, never `#legacy`, so the browser scrolls to nothing; Docsify itself scrolls only
    # to a heading: src/core/event/index.js onNavigate, `dom.find(`.markdown-section :where(h1, h2,
    # h3, h4, h5, h6)[id="${query.id}"]`)`. A raw `<h2 id="raw">` is a heading and holds.
    root = docsify_site(
        tmp_path,
        "{}",
        {
            "docs/README.md": (
                '# Home\n\n<a id="legacy"></a>\n\n<a name="old"></a>\n\n<h2 id="raw">Raw</h2>\n\n'
                "[a](#legacy) [b](#old) [c](#raw)\n"
            )
        },
    )
    assert root_verdicts(root, "README.md") == {"#legacy": False, "#old": False, "#raw": True}


def test_repeated_ids_count_only_the_base_slug(tmp_path: Path) -> None:
    # Guard: slugify counts repeats per base slug (src/core/render/slugify.js `cache[slug]`), so
    # `Setup`, `Setup`, `Setup-1` give `setup`, `setup-1`, `setup-1` (no `setup-2`); a `:id=` repeat
    # is numbered the same way, and `:id=` shares the count with a heading's own slug.
    root = docsify_site(
        tmp_path,
        "{}",
        {
            "docs/README.md": (
                "# Home\n\n## Setup\n\n## Setup\n\n## Setup-1\n\n## A :id=x\n\n## B :id=x\n\n## opts\n\n"
                "## Options :id=opts\n\n## :tada: Party\n\n## New <span>x</span> API\n\n"
                "[a](#setup-1) [b](#setup-2) [c](#x-1) [d](#opts-1) [e](#tada-party) [f](#new-x-api)\n"
            )
        },
    )
    assert root_verdicts(root, "README.md") == {
        "#setup-1": True,
        "#setup-2": False,
        "#x-1": True,
        "#opts-1": True,
        "#tada-party": True,
        "#new-x-api": True,
    }


# --- routes and files -------------------------------------------------------------------------------


def test_an_include_embed_is_read_from_the_pages_folder(tmp_path: Path) -> None:
    # FINDING: `[part](part.md ':include')` on guide/README.md is reported broken although
    # guide/part.md is there. An `:include` link is no route: Docsify fetches the file from the
    # page's folder, src/core/render/compiler.js compileEmbed: `href = getPath(this.contentBase,
    # getParentPath(this.router.getCurrentPath()), href)` (like an image). udm reads it as a route
    # from the site root (root's part.md: missing).
    root = docsify_site(
        tmp_path,
        "{}",
        {
            "docs/README.md": "# Home\n",
            "docs/guide/README.md": "# Guide\n\n[part](part.md ':include')\n",
            "docs/guide/part.md": "## In part\n",
        },
    )
    assert root_verdicts(root, "guide/README.md") == {"part.md": True}


def test_an_included_files_headings_are_anchors_of_the_page(tmp_path: Path) -> None:
    # FINDING: `#in-part` names a heading of the embedded file, rendered into the page's
    # `.markdown-section` (src/core/render/embed.js: an `:include`d `.md` is lexed and its tokens
    # spliced into the page's), where onNavigate finds it (src/core/event/index.js). udm says it is
    # broken; it lands (or, if udm does not follow embeds, it is at least unknown, never broken).
    root = docsify_site(
        tmp_path,
        "{}",
        {
            "docs/README.md": "# Home\n\n[part](part.md ':include')\n\n[go](#in-part)\n",
            "docs/part.md": "## In part\n",
        },
    )
    assert root_verdicts(root, "README.md")["#in-part"] is not False


def test_a_virtual_route_is_no_missing_file(tmp_path: Path) -> None:
    # FINDING: with `routes: { '/changelog': '# Changelog ...' }` a link `[c](/changelog)` is reported
    # broken. Docsify renders a virtual route's content without fetching a file: src/core/fetch/
    # index.js `_fetch` calls `this.matchVirtualRoute(path)` first and only fetches the file when it
    # gives no string (src/core/virtual-routes/index.js; `routes` in src/core/config.js). The link
    # should land (or be unknown), never be broken.
    root = docsify_site(
        tmp_path,
        "{ routes: { '/changelog': '# Changelog', '/items/(.+)': '# Item' } }",
        {"docs/README.md": "# Home\n\n[c](/changelog) [d](items/42) [e](missing)\n"},
    )
    verdicts = root_verdicts(root, "README.md")
    assert verdicts["missing"] is False
    assert verdicts["/changelog"] is not False and verdicts["items/42"] is not False


def test_a_sidebar_file_named_by_load_sidebar_has_the_open_pages_anchors(tmp_path: Path) -> None:
    # FINDING: udm treats only files named `_sidebar.md`/`_navbar.md` as shown beside every page; with
    # `loadSidebar: 'summary.md'` and `loadNavbar: 'nav.md'` (a string names the file: src/core/
    # config.js keeps a string, turns `true` into `'_sidebar' + config.ext`; src/core/fetch/index.js
    # `#loadNested(path, qs, loadSidebar, ...)` fetches it) an anchor there is the open page's, unknown,
    # but udm reads it against summary.md's own headings and reports it broken.
    root = docsify_site(
        tmp_path,
        "{ loadSidebar: 'summary.md', loadNavbar: 'nav.md' }",
        {
            "docs/README.md": "# Home\n",
            "docs/summary.md": "- [top](#top)\n- [home](/)\n",
            "docs/nav.md": "- [top](#top)\n",
        },
    )
    assert root_verdicts(root, "summary.md") == {"#top": None, "/": True}
    assert root_verdicts(root, "nav.md") == {"#top": None}


def test_a_raw_html_image_is_read_from_the_html_pages_url(tmp_path: Path) -> None:
    # Guard: Docsify rewrites only Markdown images (src/core/render/compiler/image.js); a raw
    # `<img src="img/flow.png">` is resolved by the browser against index.html's folder (docs/img/
    # flow.png: there), while a Markdown image is read from the page's folder (guide/img: missing).
    root = docsify_site(
        tmp_path,
        "{}",
        {
            "docs/README.md": "# Home\n",
            "docs/img/flow.png": "png",
            "docs/guide/README.md": '# Guide\n\n<img src="img/flow.png">\n\n![m](./img/flow.png)\n',
        },
    )
    assert root_verdicts(root, "guide/README.md") == {"img/flow.png": True, "./img/flow.png": False}


def test_a_link_to_a_file_that_is_no_page_without_ignore_is_dead(tmp_path: Path) -> None:
    # FINDING: `[zip](files/app.zip)` (no `':ignore'` title, no `noCompileLinks`) is reported fine
    # because files/app.zip exists. Docsify compiles it as a route (src/core/render/compiler/link.js:
    # not absolute, not ignored -> `router.toURL`) to `#/files/app.zip`, and `History.#getFileName`
    # (src/core/router/history/base.js) appends the ext to anything not `.md`/`.html`: it fetches
    # `files/app.zip.md`, a 404. udm's fallback for "a link Docsify leaves as written" is taken for
    # every link, with or without `':ignore'`. With `noCompileLinks` matching it (or `':ignore'`) the
    # link is left as written and lands: that part holds.
    root = docsify_site(
        tmp_path,
        "{ noCompileLinks: ['/dl/.*'] }",
        {
            "docs/README.md": "# Home\n\n[zip](files/app.zip) [kept](/dl/app.zip)\n",
            "docs/files/app.zip": "zip",
            "docs/dl/app.zip": "zip",
        },
    )
    assert root_verdicts(root, "README.md") == {"files/app.zip": False, "/dl/app.zip": True}


def test_routes_match_docsifys_router(tmp_path: Path) -> None:
    # Guard: with relativePath `?id=x` without a path is the page folder's README (toURL('?id=x', null,
    # '/guide/x') == '#/guide/?id=x'); `./`, `..` and a bare name resolve from the page's folder (base.js resolvePath);
    # `.html` is fetched as written; `ext` replaces `.md` after `.md` is dropped (toURL strips `.md`
    # whatever the ext); percent-escapes are the file's name.
    root = docsify_site(
        tmp_path,
        "{ relativePath: true, ext: '.markdown' }",
        {
            "docs/README.markdown": "# Home\n\n## Setup\n",
            "docs/guide/x.markdown": (
                "# X\n\n[a](?id=setup) [b](./y.md) [c](../README.md#setup) [d](y) [e](../../../z.md) "
                "[f](page.html) [g](my%20page.md) [h](/guide/y.markdown)\n"
            ),
            "docs/guide/y.markdown": "# Y\n",
            "docs/guide/page.html": "<p>x</p>\n",
            "docs/guide/my page.markdown": "# M\n",
            "docs/z.markdown": "# Z\n",
        },
    )
    assert root_verdicts(root, "guide/x.markdown") == {
        "?id=setup": False,  # relativePath: '/guide/?id=setup' is guide/README.markdown: missing
        "./y.md": True,
        # `/README` is `/README.markdown`, the homepage's route: README.md whatever `ext` is (config.js
        # `homepage: 'README.md'`; round 13), and this site has none.
        "../README.md#setup": False,
        "y": True,
        "../../../z.md": True,  # resolvePath never climbs above the root
        "page.html": True,
        "my page.md": True,
        "/guide/y.markdown": True,
    }


# --- detection and the options read -----------------------------------------------------------------


def test_a_config_inside_an_html_comment_is_not_read(tmp_path: Path) -> None:
    # FINDING: an index.html that keeps an old config commented out (`<!-- <script>window.$docsify =
    # { homepage: 'old.md' }</script> -->`) above the live one is routed by the comment's options:
    # `_options` searches the raw page, HTML comments and all (only `is_docsify_page` strips them).
    # The browser runs no script inside a comment; Docsify reads `window.$docsify` as the live script
    # set it (src/core/config.js `Object.assign(defaultDocsifyConfig(), window.$docsify, ...)`). Here
    # `[home](/)` lands on home.md, and udm says broken (looks for old.md).
    write_tree(
        tmp_path,
        {
            "docs/index.html": (
                "<!-- <script>window.$docsify = { homepage: 'old.md' }</script> -->\n"
                "<script>window.$docsify = { homepage: 'home.md' };</script>\n"
                '<script src="//cdn.jsdelivr.net/npm/docsify@4"></script>\n'
            ),
            "docs/home.md": "# Home\n\n[home](/)\n",
        },
    )
    (tmp_path / ".git").mkdir()
    site = detect_site(tmp_path / "docs", stop=tmp_path)
    assert site.docsify is not None and site.docsify.homepage == "home.md"
    assert root_verdicts(tmp_path / "docs", "home.md") == {"/": True}


def test_a_landing_page_that_mentions_docsify_is_no_docsify_site(tmp_path: Path) -> None:
    # FINDING: a plain index.html at the repository root that only links Docsify's repository in its
    # text (`<a href="https://github.com/docsifyjs/docsify/">`) makes the manual in docs/ a Docsify
    # site: the `DOCSIFY` pattern is searched in the whole page, and `/docsify/` in an href matches.
    # udm's README says the page is taken when "its script (not an HTML comment) sets
    # `window.$docsify` or loads Docsify"; this page has no script at all. The manual is then routed
    # by Docsify's rules: on sub/a.md `[b](b.md)` is read from the site root and reported broken,
    # although GitHub (no generator) shows sub/b.md.
    write_tree(
        tmp_path,
        {
            "index.html": (
                "<html><body><h1>Kit</h1><p>The docs are plain Markdown; we moved off "
                '<a href="https://github.com/docsifyjs/docsify/">docsify</a> last year.</p></body></html>\n'
            ),
            "docs/README.md": "# Home\n",
            "docs/sub/a.md": "# A\n\n[b](b.md)\n",
            "docs/sub/b.md": "# B\n",
        },
    )
    (tmp_path / ".git").mkdir()
    assert detect_site(tmp_path / "docs", stop=tmp_path).generator == "none"
    assert root_verdicts(tmp_path / "docs", "sub/a.md", tmp_path) == {"b.md": True}


def test_detected_by_a_real_docsify_page(tmp_path: Path) -> None:
    # Guard: the usual pages are taken (a CDN script of several spellings; options in a script file
    # loaded with a query string and a `./`), and a page whose only mention is in a comment is not.
    cases = {
        "a": '<script src="//unpkg.com/docsify/lib/docsify.min.js"></script>\n',
        "b": '<script src="./js/conf.js?v=2"></script><script src="https://cdn.jsdelivr.net/npm/docsify@4.13.0"></script>\n',
        "c": "<!-- <script src='//unpkg.com/docsify'></script> -->\n<p>plain</p>\n",
    }
    found = {}
    for name, page in cases.items():
        write_tree(
            tmp_path / name,
            {
                "index.html": page,
                "README.md": "# A\n",
                "js/conf.js": "window.$docsify = { homepage: 'h.md' };\n",
            },
        )
        (tmp_path / name / ".git").mkdir()
        site = detect_site(tmp_path / name, stop=tmp_path / name)
        found[name] = (site.generator, site.docsify.homepage if site.docsify else None)
    assert found == {"a": ("docsify", "README.md"), "b": ("docsify", "h.md"), "c": ("none", None)}


# --- hostile configs and files ----------------------------------------------------------------------


def test_a_config_script_symlinked_outside_the_repository_is_not_read(tmp_path: Path) -> None:
    # FINDING: docs/js/config.js, a symlink to a file outside the repository, is read and its options
    # route the site (`homepage: 'intro.md'` taken; no problem listed). `_scripts` checks the path as
    # written (`os.path.normpath`), never its real path, and `read_head` follows the link. Elsewhere
    # udm reads a config's other files only inside the repository (README: an INHERIT parent "outside
    # the repository ... is not read and is listed as a problem of the site"; jsconfig.py resolves a
    # path and checks it `within` the folder). It should not be read (default homepage), or be a
    # problem of the site.
    outside = tmp_path / "outside"
    write_tree(
        tmp_path,
        {
            "outside/config.js": "window.$docsify = { homepage: 'intro.md' };\n",
            "repo/docs/index.html": '<script src="js/config.js"></script><script src="//unpkg.com/docsify"></script>\n',
            "repo/docs/intro.md": "# Intro\n",
        },
    )
    (tmp_path / "repo" / ".git").mkdir()
    (tmp_path / "repo/docs/js").mkdir()
    os.symlink(outside / "config.js", tmp_path / "repo/docs/js/config.js")
    site = detect_site(tmp_path / "repo/docs", stop=tmp_path / "repo")
    assert site.docsify is not None
    assert site.docsify.homepage == "README.md" or any("config.js" in p for p in site.problems)
    assert all(outside not in p.parents for p in docsify_inputs(tmp_path / "repo/docs/index.html"))


def test_a_script_outside_the_sites_folder_is_not_read(tmp_path: Path) -> None:
    # Guard: a script the page names above its folder (`../../etc/x.js`, `/../x.js`) is not read.
    write_tree(
        tmp_path,
        {
            "x.js": "window.$docsify = { homepage: 'evil.md' };\n",
            "docs/index.html": (
                '<script src="../x.js"></script><script src="/../x.js"></script>'
                '<script src="../../../../../../etc/x.js"></script><script src="//unpkg.com/docsify"></script>\n'
            ),
            "docs/README.md": "# Home\n",
        },
    )
    (tmp_path / ".git").mkdir()
    site = detect_site(tmp_path / "docs", stop=tmp_path)
    assert site.docsify is not None and site.docsify.homepage == "README.md"
    assert docsify_inputs(tmp_path / "docs/index.html") == [tmp_path / "docs/index.html"]


def test_a_base_path_escaping_the_repository_is_a_problem(tmp_path: Path) -> None:
    # Guard: `basePath: '../../outside/'` names a folder outside the repository: a problem of the site,
    # and no link asks whether a file there exists.
    write_tree(
        tmp_path,
        {
            "outside/secret.md": "# Secret\n",
            "repo/docs/index.html": DOCSIFY_PAGE.format("window.$docsify = { basePath: '../../outside/' };"),
            "repo/docs/README.md": "# R\n\n[s](secret.md) [t](/secret) [u](../../outside/secret.md)\n",
        },
    )
    (tmp_path / "repo/.git").mkdir()
    site = detect_site(tmp_path / "repo/docs", stop=tmp_path / "repo")
    assert any("outside" in p for p in site.problems)
    verdicts = root_verdicts(tmp_path / "repo/docs", "README.md", tmp_path / "repo")
    assert not any(verdicts.values())


def _hostile_alias_run(pattern: str, link: str) -> str:
    page = (
        f"<script>window.$docsify = {{ alias: {{ '{pattern}': '/x' }} }};</script>"
        '<script src="//unpkg.com/docsify"></script>'
    )
    files = {"docs/index.html": page, "docs/README.md": f"# R\n\n[a]({link})\n"}
    return f"""
        import tempfile
        from pathlib import Path
        from engine.conftest import page_verdicts, write_tree
        from udm.config import load_settings
        tmp = Path(tempfile.mkdtemp())
        write_tree(tmp, {files!r})
        (tmp / ".git").mkdir()
        settings = load_settings(cwd=tmp, root=tmp / "docs", state_dir=tmp / ".st")
        print(page_verdicts(settings, "README.md"))
    """


def test_an_alias_of_many_optional_repeats_is_refused_or_matched_quickly(tmp_path: Path) -> None:
    # FINDING: `alias_pattern` counts only `*`, `+` and `{n,}` as repeats; `?` and `{n,m}` are
    # unlimited. `/a?a?...a?aa...a` (40 of each, 121 characters: under the 200 allowed) is the
    # textbook exponential pattern: matched against a link's route `/aaaa...` (40 `a`) by Python's
    # backtracking `re`, it takes 2^40 steps (measured: n=20 0.03 s, n=22 0.12 s, n=24 0.56 s: x4.5
    # per 2). Docsify runs every alias against every route (src/core/router/history/base.js
    # `#getAlias`), and so does udm at every refresh: one line of an untrusted config hangs `udm
    # index`/`udm lint` for ever. The same holds for bounded ranges: `.{0,99}` eight times against a
    # 300-character route is O(n^8). Either pattern should be refused as a problem of the site (or
    # matched in bounded time).
    n = 40
    ok, out = _in_child(_hostile_alias_run("/" + "a?" * n + "a" * n, "a" * n), timeout=30)
    assert ok, f"the index of a site with an exponential alias did not finish in 30 s: {out[-300:]}"


def test_an_alias_of_bounded_ranges_is_refused_or_matched_quickly() -> None:
    # FINDING: see above; `{0,99}` is read as bounded, so eight of them pass `alias_pattern`
    # (the limit of two concerns unbounded repeats only) and the match is polynomial of degree 8.
    pattern = "/" + ".{0,99}" * 8 + "x"
    code = f"""
        from udm.site.docsify import alias_pattern
        compiled = alias_pattern({pattern!r})
        if compiled is not None:
            compiled.match("/" + "a" * 299)
    """
    ok, out = _in_child(code, timeout=20)
    assert ok, f"an alias pattern read as safe took over 20 s on a 300-character route: {out[-300:]}"


def test_usual_alias_patterns_still_read() -> None:
    # Guard: the patterns Docsify's docs show stay readable (a fix must not refuse them).
    for pattern in ("/.*/_sidebar.md", "/zh-cn/(.*)", ".*?/changelog", "/changelog", "/v1/([^/]+)/(.*)"):
        assert alias_pattern(pattern) is not None, pattern


def test_an_alias_loop_ends(tmp_path: Path) -> None:
    # Guard: `/a` -> `/b` -> `/a` would recurse until Docsify's stack overflows (base.js `#getAlias`
    # only skips the route it came from); udm stops after a few steps, at once.
    root = docsify_site(
        tmp_path,
        "{ alias: { '/a': '/b', '/b': '/a', '/c(.*)': '/c$1$1' } }",
        {"docs/README.md": "# R\n\n[a](a) [c](c" + "x" * 40 + ")\n"},
    )
    started = time.perf_counter()
    verdicts = root_verdicts(root, "README.md")
    assert time.perf_counter() - started < 20
    assert verdicts == {"a": False, "c" + "x" * 40: False}


def test_many_script_tags_in_index_html_are_read_in_linear_time(tmp_path: Path) -> None:
    # FINDING: `_SCRIPT_SRC` (`<script\b[^>]*?\bsrc...`) scans from every `<script` to the next `>`;
    # a page of unclosed `<script a` tags makes it quadratic. Measured: 18 KB 0.4 s, 36 KB 1.6 s,
    # 72 KB 6.2 s; the page is read up to 1 MiB (`_MAX_PAGE`), about 20 minutes, at every refresh
    # (`docsify_inputs` lists a page's scripts whether or not its options are inline, and each of up
    # to 200 nested pages is read the same way). An index.html in the repository is untrusted input;
    # it should be read in time linear in its size.
    page = '<script src="//cdn.jsdelivr.net/npm/docsify@4"></script>' + "<script a" * 8000
    write_tree(tmp_path, {"docs/index.html": page, "docs/README.md": "# R\n"})
    (tmp_path / ".git").mkdir()
    started = time.process_time()
    docsify_inputs(tmp_path / "docs/index.html")
    assert time.process_time() - started < 1.5


def test_a_huge_index_html_is_contained(tmp_path: Path) -> None:
    # Guard: an index.html over the 1 MiB a config is read to, with unbalanced braces after the
    # options, is detected or not at once and never crashes.
    page = "<script>window.$docsify = { alias: {" + "{'a" * 400_000 + "</script>"
    write_tree(tmp_path, {"docs/index.html": page, "docs/README.md": "# R\n\n[x](y)\n"})
    (tmp_path / ".git").mkdir()
    started = time.perf_counter()
    detect_site(tmp_path / "docs", stop=tmp_path)
    root_verdicts(tmp_path / "docs", "README.md")
    assert time.perf_counter() - started < 20


def test_thousands_of_nested_docsify_pages_are_bounded(tmp_path: Path) -> None:
    # Guard: 3,000 nested Docsify pages: at most 200 read as nested sites, in bounded time.
    files = {
        "docs/index.html": DOCSIFY_PAGE.format("window.$docsify = {};"),
        "docs/README.md": "# R\n\n[a](d0/)\n",
    }
    for i in range(3000):
        files[f"docs/d{i}/index.html"] = DOCSIFY_PAGE.format("window.$docsify = { alias: { '/x': '/y' } };")
    write_tree(tmp_path, files)
    (tmp_path / ".git").mkdir()
    started = time.perf_counter()
    site = detect_site(tmp_path / "docs", stop=tmp_path)
    assert site.docsify is not None and len(site.docsify.nested) <= 200
    assert root_verdicts(tmp_path / "docs", "README.md") == {"d0/": False}
    assert time.perf_counter() - started < 30


# --- the incremental index --------------------------------------------------------------------------


def test_a_refresh_reroutes_after_the_config_script_or_a_nested_page_changes(tmp_path: Path) -> None:
    # Guard: changing js/config.js, creating it after the first index, and adding or removing a nested
    # index.html each re-route the links at the next refresh.
    write_tree(
        tmp_path,
        {
            "docs/index.html": '<script src="js/config.js"></script><script src="//unpkg.com/docsify"></script>\n',
            "docs/a.md": "# A\n\n[h](/)\n",
            "docs/demo/start.md": "# S\n\n[p](page.md)\n",
            "docs/demo/page.md": "# P\n",
        },
    )
    (tmp_path / ".git").mkdir()
    root = tmp_path / "docs"
    settings = load_settings(cwd=tmp_path, root=root, state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "a.md") == {"/": False}  # README.md: missing
    time.sleep(1.1)
    write_tree(tmp_path, {"docs/js/config.js": "window.$docsify = { homepage: 'a.md' };\n"})
    assert page_verdicts(settings, "a.md") == {"/": True}
    assert page_verdicts(settings, "demo/start.md") == {"page.md": False}  # the root's page.md
    time.sleep(1.1)
    write_tree(
        tmp_path,
        {
            "docs/js/config.js": "window.$docsify = { homepage: 'gone.md' };\n",
            "docs/demo/index.html": DOCSIFY_PAGE.format("window.$docsify = {};"),
        },
    )
    assert page_verdicts(settings, "a.md") == {"/": False}
    assert page_verdicts(settings, "demo/start.md") == {"page.md": True}
    time.sleep(1.1)
    (root / "demo/index.html").unlink()
    assert page_verdicts(settings, "demo/start.md") == {"page.md": False}
