"""Attacker round 10: the site's own heading-id rule made exclusive (commit 9ba4b70). Where VitePress,
VuePress or Hugo (`autoHeadingIDType` github-ascii or blackfriday) make every heading id their own way,
`resolve_links` ignores the index's GitHub anchors and reads each linked page (`page_anchors`); a
config with its own `slugify` leaves ids other than GitHub's unknown (`_custom_slug`).

Evidence is the generators' source: VitePress (vuejs/vitepress, v1.6.3 and main: markdown.ts,
plugins/restoreEntities.ts, utils/processIncludes.ts, config.ts), markdown-it-anchor (8/9, VitePress 1
and VuePress 2; 5, VuePress 1), VuePress 1 (packages/@vuepress/markdown/index.js) and Hugo
(markup/goldmark/autoid.go, with goldmark's atx_heading.go). Tests marked `# FINDING:` were written
failing on a real bug (11 findings, all fixed: ids numbered as markdown-it-anchor and Hugo number them,
Hugo's `heading` for an empty id, emoji shortcodes and kept entities in VitePress ids, a spaced
`<!-- @include: -->`, `.vitepress/config/index.ts`, a narrower `_custom_slug`, and the patch validator
seeing a site id a patch takes away); the others guard behaviour that holds.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from udm.config import Settings, load_settings
from udm.patch import apply_patch, parse_patch
from udm.site.jsconfig import _custom_slug
from udm.site.routes import detect_site

from ..engine.conftest import link_verdicts, page_verdicts, write_tree

VITEPRESS = ".vitepress/config.ts"
VUEPRESS2 = ".vuepress/config.ts"
VITEPRESS1_PACKAGE = '{"devDependencies": {"vitepress": "^1.6.3"}}\n'
VUEPRESS1_PACKAGE = '{"devDependencies": {"vuepress": "^1.9.10"}}\n'


def _settings(tmp_path: Path, files: dict[str, str]) -> Settings:
    write_tree(tmp_path, files)
    (tmp_path / ".git").mkdir(exist_ok=True)
    return load_settings(
        cwd=tmp_path, root=tmp_path / "docs", state_dir=tmp_path / ".st", logs_dir=tmp_path / ".logs"
    )


def _links(*targets: str) -> str:
    return "# Home\n\n" + " ".join(f"[x]({t})" for t in targets) + "\n"


def _site(
    tmp_path: Path,
    guide: str,
    *targets: str,
    config: str = VITEPRESS,
    body: str = "export default {}\n",
    extra: dict[str, str] | None = None,
) -> dict[str, bool | None]:
    """The verdicts of index.md's links (`targets`) on a VitePress/VuePress site whose guide.md is `guide`."""
    files = {
        f"docs/{config}": body,
        "docs/index.md": _links(*targets),
        "docs/guide.md": guide,
        **(extra or {}),
    }
    return page_verdicts(_settings(tmp_path, files), "index.md")


def _hugo(tmp_path: Path, id_type: str, page: str, *targets: str) -> dict[str, bool | None]:
    write_tree(
        tmp_path,
        {
            "hugo.toml": f'baseURL = "https://x.example/"\n[markup.goldmark.parser]\nautoHeadingIDType = "{id_type}"\n',
            "content/_index.md": _links(*targets),
            "content/docs/page.md": page,
        },
    )
    (tmp_path / ".git").mkdir(exist_ok=True)
    settings = load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / ".st")
    return page_verdicts(settings, "content/_index.md")


# --- Repeated headings: the generators skip an id already taken --------------------------------------


def test_vitepress_explicit_id_takes_its_slug_so_a_repeat_is_numbered(tmp_path: Path) -> None:
    # FINDING: VitePress (markdown-it-attrs then markdown-it-anchor 8/9; @mdit/plugin-anchor in 2.x)
    # registers a heading's own `{#foo}` in the page's slugs (`uniqueSlug(slug, slugs, true, ...)`), so
    # the later `## Foo` gets `foo-1`. udm numbers only headings without an explicit id, gives the
    # second `foo` (which the explicit id hides) and reports `#foo-1` broken. Should: `#foo-1` True.
    verdicts = _site(tmp_path, "# G\n\n## Foo {#foo}\n\n## Foo\n", "/guide.md#foo", "/guide.md#foo-1")
    assert verdicts == {"/guide.md#foo": True, "/guide.md#foo-1": True}


def test_vitepress_repeat_skips_an_id_another_heading_has(tmp_path: Path) -> None:
    # FINDING: markdown-it-anchor's uniqueSlug loops `while (hasOwnProperty(slugs, uniq)) uniq =
    # slug-i++`: `## Foo 1`, `## Foo`, `## Foo` are `foo-1`, `foo`, `foo-2` (and `## Foo`, `## Foo`,
    # `## Foo 1` are `foo`, `foo-1`, `foo-1-1`). udm's `_numbered` counts per slug and never checks
    # for a taken id: it makes `foo-1` twice and reports the real `#foo-2` / `#foo-1-1` broken.
    verdicts = _site(
        tmp_path,
        "# G\n\n## Foo 1\n\n## Foo\n\n## Foo\n\n## Bar\n\n## Bar\n\n## Bar 1\n",
        "/guide.md#foo-2",
        "/guide.md#bar-1-1",
    )
    assert verdicts == {"/guide.md#foo-2": True, "/guide.md#bar-1-1": True}


@pytest.mark.parametrize("id_type", ["github-ascii", "blackfriday"])
def test_hugo_own_rule_repeat_skips_taken_ids(tmp_path: Path, id_type: str) -> None:
    # FINDING: Hugo's idFactory.Generate (markup/goldmark/autoid.go) appends -1, -2, ... until the id
    # is not in `vals`, and goldmark Puts a heading's explicit `{#foo}` there (atx_heading.go Close:
    # `pc.IDs().Put(id)`). So `## Foo {#foo}` then `## Foo` is `foo-1`, and `## Foo 1`, `## Foo`,
    # `## Foo` are `foo-1`, `foo`, `foo-2`. With the default `github` type udm accepts both (the
    # index's anchors); with the own rule it reports both broken.
    page = "# P\n\n## Foo {#foo}\n\n## Foo\n\n## Bar 1\n\n## Bar\n\n## Bar\n"
    verdicts = _hugo(tmp_path, id_type, page, "/docs/page/#foo-1", "/docs/page/#bar-2")
    assert verdicts == {"/docs/page/#foo-1": True, "/docs/page/#bar-2": True}


def test_hugo_github_ascii_heading_without_ascii_is_heading(tmp_path: Path) -> None:
    # FINDING: under `autoHeadingIDType = "github-ascii"` a heading with no ASCII letter or digit
    # (`## 安装`, any Chinese or Japanese manual) sanitizes to nothing, and Hugo's hook in
    # idFactory.Generate writes `heading` for an empty heading id (then `heading-1`, ...). udm's
    # github_ascii_slug gives "" and "-1" and reports `#heading` and `#heading-1` broken.
    verdicts = _hugo(
        tmp_path,
        "github-ascii",
        "# P\n\n## 安装\n\n## 配置\n",
        "/docs/page/#heading",
        "/docs/page/#heading-1",
    )
    assert verdicts == {"/docs/page/#heading": True, "/docs/page/#heading-1": True}


def test_vuepress1_repeats_are_counted_per_slug_from_2(tmp_path: Path) -> None:
    # Guard: VuePress 1's markdown-it-anchor 5 counts each slug (`slugs[slug] += 1`, `slug-<count>`)
    # without looking for a taken id: `## Foo`, `## Foo`, `## Foo 2` are foo, foo-2, foo-2.
    files = {
        "package.json": VUEPRESS1_PACKAGE,
        "docs/.vuepress/config.js": "module.exports = { title: 'x' }\n",
        "docs/README.md": _links("/guide.html#foo-2", "/guide.html#foo-3", "/guide.html#foo-1"),
        "docs/guide.md": "# G\n\n## Foo\n\n## Foo\n\n## Foo 2\n",
    }
    assert page_verdicts(_settings(tmp_path, files), "README.md") == {
        "/guide.html#foo-2": True,
        "/guide.html#foo-3": False,
        "/guide.html#foo-1": False,
    }


def test_vitepress_headings_in_containers_are_numbered_with_the_page(tmp_path: Path) -> None:
    # Guard: a heading inside `::: tip` gets an id and counts toward the repeat numbering.
    verdicts = _site(
        tmp_path,
        "# G\n\n::: tip\n## Foo\n:::\n\n## Foo\n\n> ## Quoted\n\n- ## Listed\n",
        "/guide.md#foo",
        "/guide.md#foo-1",
        "/guide.md#foo-2",
        "/guide.md#quoted",
        "/guide.md#listed",
    )
    assert verdicts == {
        "/guide.md#foo": True,
        "/guide.md#foo-1": True,
        "/guide.md#foo-2": False,
        "/guide.md#quoted": True,
        "/guide.md#listed": True,
    }


# --- What a heading's text is: the tokens the anchor plugin reads -------------------------------------


@pytest.mark.parametrize(
    "files",
    [
        {"package.json": VITEPRESS1_PACKAGE, f"docs/{VITEPRESS}": "export default {}\n"},
        {"package.json": VUEPRESS1_PACKAGE, "docs/.vuepress/config.js": "module.exports = { title: 'x' }\n"},
    ],
    ids=["vitepress", "vuepress1"],
)
def test_an_emoji_shortcode_is_no_part_of_the_id(tmp_path: Path, files: dict[str, str]) -> None:
    # FINDING: VitePress 1 (markdown-it-emoji `full`) and VuePress 1 (markdown-it-emoji) turn `:tada:`
    # into an `emoji` token, and the anchor plugin's title is only the `text` and `code_inline`
    # tokens (markdown-it-anchor's getTokensText; v5's filter in VuePress 1; VitePress 2 filters out
    # `emoji` outright): `## :tada: Hello` is `#hello`. udm slugs the shortcode's name too, accepts
    # GitHub's `#tada-hello` (a dead anchor there) and reports the real `#hello` broken.
    files = {
        **files,
        "docs/README.md": _links("/guide.html#hello", "/guide.html#tada-hello"),
        "docs/guide.md": "# G\n\n## :tada: Hello\n",
    }
    assert page_verdicts(_settings(tmp_path, files), "README.md") == {
        "/guide.html#hello": True,
        "/guide.html#tada-hello": False,
    }


def test_vitepress_keeps_a_character_reference_in_the_id(tmp_path: Path) -> None:
    # FINDING: since VitePress 1.2 (d5dbd704, plugins/restoreEntities.ts) text_join writes an entity
    # back as its markup (`getContent`: `token.info === 'entity' ? token.markup`) into the text the
    # anchor plugin slugs (main's markdown.ts even undoes the double `&amp;` for the toc, "encoded
    # twice because of restoreEntities"): `## Result&lt;T&gt;` is `#result-lt-t-gt`, `## A &amp; B`
    # `#a-amp-b`. udm decodes the references first and reports the real ids broken, accepting
    # `#result-t` and `#a-b`, which no heading has. Should: the real ids not broken.
    verdicts = _site(
        tmp_path,
        "# G\n\n## Result&lt;T&gt;\n\n## A &amp; B\n",
        "/guide.md#result-lt-t-gt",
        "/guide.md#a-amp-b",
        extra={"package.json": VITEPRESS1_PACKAGE},
    )
    assert False not in verdicts.values(), verdicts


def test_vitepress_inline_html_and_code_in_headings(tmp_path: Path) -> None:
    # Guard: html_inline is left out of the title, the text inside tags and code spans kept.
    verdicts = _site(
        tmp_path,
        '# G\n\n## Foo <Badge type="tip" text="beta" />\n\n## Bar <sup>new</sup>\n\n## `useX()` hook\n'
        "\n## See [the API](/api) now\n\n## 🎉 Party\n",
        "/guide.md#foo",
        "/guide.md#foo-beta",
        "/guide.md#bar-new",
        "/guide.md#usex-hook",
        "/guide.md#see-the-api-now",
        "/guide.md#🎉-party",
    )
    assert verdicts == {
        "/guide.md#foo": True,
        "/guide.md#foo-beta": False,
        "/guide.md#bar-new": True,
        "/guide.md#usex-hook": True,
        "/guide.md#see-the-api-now": True,
        "/guide.md#🎉-party": True,
    }


def test_vitepress_explicit_ids_and_named_elements_resolve(tmp_path: Path) -> None:
    # Guard: `{#id}`, `{ #id .cls }`, `<a id>`, `<span id>` and `<h2 id>` are the page's anchors; the
    # text of a heading with its own id makes none.
    verdicts = _site(
        tmp_path,
        '# G\n\n## Named {#own}\n\n## Spaced { #spaced .wide }\n\n<a id="anchor"></a>\n\n'
        'Text <span id="inline">here</span>.\n\n<h2 id="raw">Raw</h2>\n',
        "/guide.md#own",
        "/guide.md#named",
        "/guide.md#spaced",
        "/guide.md#anchor",
        "/guide.md#inline",
        "/guide.md#raw",
    )
    assert verdicts == {
        "/guide.md#own": True,
        "/guide.md#named": False,
        "/guide.md#spaced": True,
        "/guide.md#anchor": True,
        "/guide.md#inline": True,
        "/guide.md#raw": True,
    }


def test_vitepress_fragment_forms(tmp_path: Path) -> None:
    # Guard: CJK ids (percent-encoded or not), case kept (the browser matches ids exactly), a page
    # under `rewrites` checked against its file's headings.
    verdicts = _site(
        tmp_path,
        "# G\n\n## 中文 标题\n\n## What's new\n",
        "/g/intro#%E4%B8%AD%E6%96%87-%E6%A0%87%E9%A2%98",
        "/g/intro#What-s-new",
        "/g/intro#what-s-new",
        "/g/intro#whats-new",
        body="export default { rewrites: { 'guide.md': 'g/intro.md' } }\n",
    )
    assert verdicts == {
        "/g/intro#中文-标题": True,  # the index keeps the target decoded
        "/g/intro#What-s-new": False,
        "/g/intro#what-s-new": True,
        "/g/intro#whats-new": False,
    }


# --- Pages whose headings come from elsewhere ---------------------------------------------------------


def test_vitepress_include_with_blanks_is_an_include(tmp_path: Path) -> None:
    # FINDING: VitePress' processIncludes (src/node/utils/processIncludes.ts, 1.x; include.ts in 2.x)
    # matches `/<!--\s*@include:\s*(.*?)\s*-->/g`, so `<!-- @include: ./part.md -->` writes part.md's
    # headings into the page. udm looks only for `<!--@include:` and reports `#included` broken;
    # without the blanks the same link is unknown (None). Should: not broken.
    extra = {"docs/part.md": "## Included\n"}
    spaced = _site(tmp_path / "a", "# G\n\n<!-- @include: ./part.md -->\n", "/guide.md#included", extra=extra)
    tight = _site(tmp_path / "b", "# G\n\n<!--@include: ./part.md-->\n", "/guide.md#included", extra=extra)
    assert tight == {"/guide.md#included": None}
    assert spaced["/guide.md#included"] is not False


def test_vitepress_config_folder_index_is_a_vitepress_site(tmp_path: Path) -> None:
    # FINDING: VitePress' resolveUserConfig (src/node/config.ts) takes `.vitepress/config/index.{js,ts,
    # mjs,mts}` before `.vitepress/config.*`. udm's detection lists only `.vitepress/config.<ext>`: the
    # site is read as plain GitHub Markdown, VitePress' real `#markdown-links-internaltag` is reported
    # broken and GitHub's dead `#markdownlinksinternaltag` accepted.
    verdicts = _site(
        tmp_path,
        "# G\n\n## markdown.links.internalTag\n",
        "/guide.md#markdown-links-internaltag",
        "/guide.md#markdownlinksinternaltag",
        config=".vitepress/config/index.ts",
    )
    assert detect_site(tmp_path / "docs", stop=tmp_path).generator == "vitepress"
    assert verdicts == {
        "/guide.md#markdown-links-internaltag": True,
        "/guide.md#markdownlinksinternaltag": False,
    }


# --- `_custom_slug`: what counts as the config's own slugify ------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        # A slugify package building sidebar links: no heading id changes.
        "import slugify from '@sindresorhus/slugify'\nconst pages = ['Getting Started']\n"
        "export default { themeConfig: { sidebar: pages.map((p) => ({ text: p, link: `/g/${slugify(p)}` })) } }\n",
        # VitePress' own slugify imported for a page-data hook, not passed as an option.
        "import { slugify } from '@mdit-vue/shared'\n"
        "export default { transformPageData(page) { page.frontmatter.key = slugify(page.title) } }\n",
        # The word in a string.
        "export default { description: 'How to slugify: names, ids and more' }\n",
    ],
    ids=["call", "import", "string"],
)
def test_a_slugify_that_makes_no_heading_id_keeps_the_rule(tmp_path: Path, body: str) -> None:
    # FINDING: `_SLUGIFY` (`\bslugify\s*(?::|,|\}|\(|=>)`) matches any call `slugify(p)`, an import
    # `{ slugify }` and `slugify:` in a string, and marks the config `custom`: GitHub's form of every
    # id is then accepted, so `#markdownlinksinternaltag` (dead on the site: VitePress makes
    # `#markdown-links-internaltag` while `markdown.anchor.slugify` is unset, markdown.ts:
    # `options.anchor?.slugify ?? defaultSlugify`) resolves. Should: the rule kept, that link broken.
    verdicts = _site(
        tmp_path,
        "# G\n\n## markdown.links.internalTag\n",
        "/guide.md#markdownlinksinternaltag",
        "/guide.md#markdown-links-internaltag",
        body=body,
    )
    assert verdicts == {
        "/guide.md#markdownlinksinternaltag": False,
        "/guide.md#markdown-links-internaltag": True,
    }


def test_a_quoted_slugify_key_is_the_configs_slugify(tmp_path: Path) -> None:
    # FINDING: `markdown: { anchor: { 'slugify': (s) => ... } }` is the same option (a quoted key), yet
    # `_SLUGIFY` wants the word then `:`: the site keeps VitePress' rule and the config's own ids are
    # reported broken. Should: heading_ids "custom", ids other than GitHub's unknown.
    assert _custom_slug("export default { markdown: { anchor: { 'slugify': (s) => s.toLowerCase() } } }\n")


@pytest.mark.parametrize(
    "body",
    [
        "export default { markdown: { anchor: { slugify :\n  (s) => s.toLowerCase() } } }\n",
        "export default { markdown: { anchor: { slugify(s) { return s.toLowerCase() } } } }\n",
        "import anchor from 'markdown-it-anchor'\n"
        "export default { markdown: { config(md) { md.use(anchor, { slugify: (s) => s }) } } }\n",
        "module.exports = { markdown: { slugify: (s) => s } }\n",
    ],
)
def test_a_slugify_option_written_otherwise_is_found(body: str) -> None:
    # Guard: blanks and a newline before the colon, a method, a plugin's option, VuePress 1's key.
    assert _custom_slug(body)


def test_a_config_gaining_a_slugify_rereads_the_verdicts(tmp_path: Path) -> None:
    # Guard: the site's heading rule is part of what the index depends on.
    files = {
        f"docs/{VITEPRESS}": "export default {}\n",
        "docs/index.md": _links("/guide.md#markdown.links.internaltag", "/guide.md#markdownlinksinternaltag"),
        "docs/guide.md": "# G\n\n## markdown.links.internalTag\n",
    }
    settings = _settings(tmp_path, files)
    first = page_verdicts(settings, "index.md")
    time.sleep(1.1)
    write_tree(
        tmp_path, {f"docs/{VITEPRESS}": "export default { markdown: { anchor: { slugify: (s) => s } } }\n"}
    )
    second = page_verdicts(settings, "index.md")
    assert first == {
        "/guide.md#markdown.links.internaltag": False,
        "/guide.md#markdownlinksinternaltag": False,
    }
    assert second == {  # every id the config's code to tell (GitHub's form too, since round 10's fixes)
        "/guide.md#markdown.links.internaltag": None,
        "/guide.md#markdownlinksinternaltag": None,
    }


# --- The index's refresh and the patch validator ------------------------------------------------------


def test_an_edit_that_moves_only_the_sites_id_is_seen_by_a_refresh(tmp_path: Path) -> None:
    # Guard: `## What's new` -> `## Whats new` keeps GitHub's `whats-new` but moves VitePress' id
    # from `what-s-new`; a refresh re-resolves the links into the edited page.
    files = {
        f"docs/{VITEPRESS}": "export default {}\n",
        "docs/index.md": _links("/guide.md#what-s-new", "/guide.md#whats-new"),
        "docs/guide.md": "# G\n\n## What's new\n",
    }
    settings = _settings(tmp_path, files)
    assert page_verdicts(settings, "index.md") == {"/guide.md#what-s-new": True, "/guide.md#whats-new": False}
    time.sleep(1.1)
    write_tree(tmp_path, {"docs/guide.md": "# G\n\n## Whats new\n"})
    assert page_verdicts(settings, "index.md") == {"/guide.md#what-s-new": False, "/guide.md#whats-new": True}


@pytest.mark.parametrize("config", [VITEPRESS, VUEPRESS2])
def test_a_patch_that_moves_only_the_sites_id_is_refused(tmp_path: Path, config: str) -> None:
    # FINDING: the validator re-checks other pages' links only when the changed page loses one of its
    # GitHub anchors (`lost = _anchors(old_doc) - _anchors(new_doc)` in _check_file). Renaming
    # `## What's new` to `## Whats new` keeps GitHub's `whats-new`, so index.md's link to the site's
    # `#what-s-new` (VitePress/VuePress 2 slugify: `'` is a separator) is not looked at: the patch
    # commits, and the next index build reports that link broken. A GitHub anchor lost the same way
    # is refused (tests/patch/test_validate_breaks.py). Should: status "invalid".
    settings = _settings(
        tmp_path,
        {
            f"docs/{config}": "export default {}\n",
            "docs/index.md": _links("/guide.md#what-s-new"),
            "docs/guide.md": "# G\n\n## What's new\n\nText.\n",
        },
    )
    assert page_verdicts(settings, "index.md") == {"/guide.md#what-s-new": True}
    op = {"op": "rename_heading", "file": "guide.md", "section": "What's new", "to": "Whats new"}
    result = apply_patch(parse_patch({"description": "rename", "operations": [op]}), settings)
    after = page_verdicts(settings, "index.md")
    assert result.status == "invalid", (result.status, after)


def test_a_patch_link_gets_the_index_verdict(tmp_path: Path) -> None:
    # Guard: a link a patch writes is checked with the site's rule, as the index checks it.
    settings = _settings(
        tmp_path,
        {
            f"docs/{VITEPRESS}": "export default {}\n",
            "docs/index.md": "# Home\n\n## Usage\n",
            "docs/guide.md": "# G\n\n## markdown.links.internalTag\n",
        },
    )

    def append(link: str) -> str:
        op = {"op": "append_to_section", "file": "index.md", "section": "Usage", "content": f"[x]({link})"}
        return apply_patch(parse_patch({"description": "link", "operations": [op]}), settings).status

    assert append("/guide.md#markdownlinksinternaltag") == "invalid"
    assert append("/guide.md#markdown-links-internaltag") == "committed"


# --- Cost ---------------------------------------------------------------------------------------------


def test_a_big_page_linked_thousands_of_times_is_read_once(tmp_path: Path) -> None:
    # Guard: each linked page is parsed once however many of its anchors are asked for.
    big = "# Big\n\n" + "".join(f"## Same\n\n::: tip\n### Inner {k}\n:::\n\n" for k in range(3000))
    index = "# Home\n\n" + "\n".join(f"[a](/big.md#same-{k}) [b](/big.md#inner-{k})" for k in range(2000))
    settings = _settings(
        tmp_path, {f"docs/{VITEPRESS}": "export default {}\n", "docs/index.md": index, "docs/big.md": big}
    )
    started = time.perf_counter()
    verdicts = link_verdicts(settings)
    assert time.perf_counter() - started < 30
    assert sum(ok is True for ok in verdicts.values()) == 3999  # `same-0` is no id: the first is `same`


def test_a_patch_taking_a_site_id_away_behind_a_github_form_is_refused(tmp_path: Path) -> None:
    # Review of the session: `## ab` to `## a.b` takes VitePress' `ab` away (the heading's id is now
    # `a-b`), while GitHub's form of the new heading is still `ab`: the site's ids alone are compared.
    settings = _settings(
        tmp_path,
        {
            f"docs/{VITEPRESS}": "export default {}\n",
            "docs/index.md": _links("/guide.md#ab"),
            "docs/guide.md": "# G\n\n## ab\n\nText.\n",
        },
    )
    assert page_verdicts(settings, "index.md") == {"/guide.md#ab": True}
    op = {"op": "rename_heading", "file": "guide.md", "section": "ab", "to": "a.b"}
    result = apply_patch(parse_patch({"description": "rename", "operations": [op]}), settings)
    assert result.status == "invalid"
