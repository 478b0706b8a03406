"""Attacker round 13: Docsify after round 11 (201f019 and later) and VuePress 1's YAML/TOML configs
(823e2ba). Each test either guards a behaviour that holds, or was written failing on a real bug
(marked `# FINDING`, with what happened and what should, checked against Docsify's source,
src/core/router and src/core/render, or VuePress 1's packages/@vuepress/core/lib/node/loadConfig.js).
Docsify's results quoted were computed by running its own `HashHistory.toURL`, `slugify` and
`getAndRemoveConfig` under Node. All 9 findings are fixed."""

from __future__ import annotations

import time
from pathlib import Path

from udm.site.docsify import docsify_slug
from udm.site.routes import _js_replacement, detect_site

from ..engine.conftest import DOCSIFY_PAGE, docsify_site, root_verdicts, write_tree

# --- findings ------------------------------------------------------------------------------------


def test_an_ignored_dot_slash_link_is_rewritten_by_docsify(tmp_path: Path) -> None:
    # FINDING: `[a](./guide.md ':ignore')` is reported as landing on guide.md. Docsify's link compiler
    # (src/core/render/compiler/link.js, the `else` branch for `:ignore`/noCompileLinks) still routes
    # an href starting `./`: `router.toURL(href, null, router.getCurrentPath()).replace(/^#\//, '/')`.
    # Node: toURL('./guide.md', null, '/') == '#/./guide', so the written href is `/./guide`: the
    # server path `/guide` (no `.md`, from the host's root), not the file guide.md. The link should be
    # read as that path (broken where no file `guide` is served), not as the Markdown file.
    root = docsify_site(
        tmp_path,
        "{}",
        {"docs/README.md": "# H\n\n[a](./guide.md ':ignore')\n", "docs/guide.md": "# G\n"},
    )
    assert root_verdicts(root, "README.md") == {"./guide.md": False}


def test_the_homepage_stays_readme_md_whatever_ext_is(tmp_path: Path) -> None:
    # FINDING: with `ext: '.markdown'` the project takes the home page to be README.markdown, so `[h](/)`
    # is broken where README.md exists. Docsify's default `homepage` is 'README.md' whatever `ext` is
    # (src/core/config.js: `homepage: 'README.md'`), and `getFile` (src/core/router/history/base.js)
    # swaps `/README${ext}` for `config.homepage || path`: `/` is `/README.markdown`, then README.md.
    root = docsify_site(
        tmp_path,
        "{ext: '.markdown'}",
        {"docs/README.md": "# H\n", "docs/guide.markdown": "# G\n\n[h](/) [g](guide.md)\n"},
    )
    assert root_verdicts(root, "guide.markdown") == {"/": True, "guide.md": True}


def test_a_coverpage_true_is_named_with_ext(tmp_path: Path) -> None:
    # FINDING: `coverpage: true` with `ext: '.markdown'` is read as `_coverpage.md`, so the cover's
    # `[s](#intro)` is taken as its own anchor and reported broken. Docsify names it with `ext`
    # (src/core/config.js: `config.coverpage = '_coverpage' + config.ext`), and a `#x` on the cover is
    # the home page's heading (toURL('#intro', null, '/') == '#/?id=intro'): README.md's `## Intro`.
    root = docsify_site(
        tmp_path,
        "{ext: '.markdown', homepage: 'README.md', coverpage: true}",
        {"docs/README.md": "# H\n\n## Intro\n", "docs/_coverpage.markdown": "# C\n\n[s](#intro)\n"},
    )
    assert root_verdicts(root, "_coverpage.markdown") == {"#intro": True}


def test_an_include_of_a_markdown_file_not_named_md_embeds_its_headings(tmp_path: Path) -> None:
    # FINDING: `[p](part.markdown ':include')` and `[n](notes.txt ':include :type=markdown')` embed
    # Markdown in the page, yet links to their headings (`#from-part`, `#from-notes`) are reported
    # broken: `_DOCSIFY_EMBED` (udm/site/anchors.py) reads only an href ending `.md` without `:type`.
    # Docsify's `compileEmbed` (src/core/render/compiler.js) embeds Markdown for `config.type` 'markdown'
    # (`compileMedia[config.type]`) and for any href matching `/\.(md|markdown)/` (unanchored: `.mdx`,
    # `x.md.txt` too); Node: getAndRemoveConfig("':include :type=markdown'") ==
    # {include: true, type: 'markdown'}. The page's ids should be unknown there, as for `part.md`.
    root = docsify_site(
        tmp_path,
        "{}",
        {
            "docs/README.md": "# H\n\n[p](part.markdown ':include')\n\n[n](notes.txt ':include :type=markdown')\n\n"
            "[a](#from-part) [b](#from-notes)\n",
            "docs/part.markdown": "## From part\n",
            "docs/notes.txt": "## From notes\n",
        },
    )
    verdicts = root_verdicts(root, "README.md")
    assert verdicts["#from-part"] is not False
    assert verdicts["#from-notes"] is not False


def test_an_alias_replacement_reads_dollar_digits_as_javascript_does() -> None:
    # FINDING: `_js_replacement('/x/$10', 1)` keeps `$10` as written. JavaScript's `String.replace`
    # reads `$10` with one group as `$1` then `0` (Node: '/a'.replace(/^\/(a)$/, '/x/$10') == '/x/a0'),
    # and `` $` `` / `$'` as the text before / after the match (empty for Docsify's anchored `^key$`:
    # Node gives '' for both). So the alias `'/(a)': '/x/$10'` routes `/a` to x/a0.md, reported broken.
    assert _js_replacement("/x/$10", 1).replace("\\g<1>", "a") == "/x/a0"
    assert _js_replacement("$`$'", 0) == ""


def test_an_alias_with_dollar_ten_routes_as_docsify(tmp_path: Path) -> None:
    # FINDING: as above, end to end: `[a](/a)` with alias `'/(a)': '/x/$10'` is Docsify's x/a0.md
    # (History.#getAlias, src/core/router/history/base.js: `path.replace(this.#cached[match], alias[match])`).
    root = docsify_site(
        tmp_path,
        "{alias: {'/(a)': '/x/$10'}}",
        {"docs/README.md": "# H\n\n[a](/a)\n", "docs/x/a0.md": "# G\n"},
    )
    assert root_verdicts(root, "README.md") == {"/a": True}


def test_options_in_the_second_argument_of_object_assign_are_read(tmp_path: Path) -> None:
    # FINDING: `window.$docsify = Object.assign({}, {relativePath: true})` (a common way to merge a
    # shared base) is read as `{}`: `_ASSIGNED` takes the first literal object after `Object.assign(`,
    # the empty target, so relativePath is lost and `[b](b.md)` on zh/a.md is read from the root
    # (broken). Object.assign copies the later objects' keys into the target: `window.$docsify` has
    # relativePath true, and Docsify merges it over its defaults (src/core/config.js), so b.md is
    # zh/b.md (Node: toURL('b.md', null, '/zh/a') with relativePath == '#/zh/b').
    root = docsify_site(
        tmp_path,
        "{}",
        {"docs/README.md": "# H\n", "docs/zh/a.md": "# A\n\n[b](b.md)\n", "docs/zh/b.md": "# B\n"},
    )
    (root / "index.html").write_text(
        DOCSIFY_PAGE.format("window.$docsify = Object.assign({}, {relativePath: true});"), encoding="utf-8"
    )
    assert root_verdicts(root, "zh/a.md") == {"b.md": True}


def test_vuepress_1_never_reads_config_yaml(tmp_path: Path) -> None:
    # FINDING: `.vuepress/config.yaml` is read as VuePress 1's config (its base `/sub`). VuePress 1's
    # loadConfig (packages/@vuepress/core/lib/node/loadConfig.js) looks only for config.yml, config.ts,
    # config.toml and config.js (`path.resolve(vuepressDir, 'config.yml')`; `.yaml` appears only in
    # parseConfig's switch, never reached), and VuePress 2 reads no YAML: the base should be the default.
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {"docs/.vuepress/config.yaml": "base: /sub/\n", "docs/README.md": "# x\n"})
    site = detect_site(tmp_path / "docs", stop=tmp_path)
    assert site.base_path == ""


def test_a_deeply_nested_toml_config_is_refused_by_a_limit(tmp_path: Path) -> None:
    # FINDING: a `.vuepress/config.toml` nested 3,000 deep is contained only by Python's recursion limit:
    # the problem reads "maximum recursion depth exceeded" (tomllib recursing, caught by
    # `_read_site`'s broad except), not the limit the YAML reader states ("nested too deeply: more
    # than 100 levels"): `_read_site`/`_config_data` (udm/site/detect.py) measure JSON and YAML before
    # parsing, never TOML. It should be refused by the same depth limit, with that problem.
    (tmp_path / ".git").mkdir()
    deep = "base = {a = " + "{a = " * 3000 + "1" + "}" * 3001 + "\n"
    write_tree(tmp_path, {"docs/.vuepress/config.toml": deep, "docs/README.md": "# x\n"})
    site = detect_site(tmp_path / "docs", stop=tmp_path)
    assert site.problems
    assert "nested too deeply" in site.problems[0]


# --- guards --------------------------------------------------------------------------------------


def test_emoji_sequences_are_dropped_as_docsify_slugify_drops_them() -> None:
    # Node, Docsify's slugify: ZWJ sequences, skin tones, keycaps (the digit kept, U+20E3 too), flags,
    # variation selectors and a lone ZWJ give these ids.
    expected = {
        "👩\u200d💻 Dev": "-dev",
        "👍🏽 Yes": "-yes",
        "1\ufe0f\u20e3 One": "_1\u20e3-one",
        "#\ufe0f\u20e3 Hash": "\u20e3-hash",
        "❤\ufe0f Love": "-love",
        "a\u200db": "ab",
        "🇫🇷 France": "-france",
        "©\ufe0f c": "-c",
    }
    assert {t: docsify_slug(t) for t in expected} == expected


def test_setext_closing_hashes_quoted_and_listed_headings_have_ids(tmp_path: Path) -> None:
    # marked gives every heading Docsify's renderer (blockquote and list ones too); `## Foo ##` is `Foo`.
    root = docsify_site(
        tmp_path,
        "{}",
        {
            "docs/README.md": "# H\n\n## Foo ##\n\nSetext\n------\n\n> ## In quote\n\n- ## In list\n\n"
            "[a](#foo) [b](#setext) [c](#in-quote) [d](#in-list) [e](#foo-)\n"
        },
    )
    assert root_verdicts(root, "README.md") == {
        "#foo": True,
        "#setext": True,
        "#in-quote": True,
        "#in-list": True,
        "#foo-": False,
    }


def test_a_vuepress_base_not_a_string_is_the_default(tmp_path: Path) -> None:
    for i, text in enumerate(["base: [1, 2]\n", "base: 5\n", "base: {a: 1}\n", "base:\n"]):
        project = tmp_path / str(i)
        (project / ".git").mkdir(parents=True)
        write_tree(project, {"docs/.vuepress/config.yml": text, "docs/README.md": "# x\n"})
        site = detect_site(project / "docs", stop=project)
        assert site.generator == "vuepress"
        assert site.base_path == ""


def test_yaml_anchors_are_read_and_an_alias_bomb_is_contained(tmp_path: Path) -> None:
    (tmp_path / "a" / ".git").mkdir(parents=True)
    write_tree(
        tmp_path / "a", {"docs/.vuepress/config.yml": "x: &a /sub/\nbase: *a\n", "docs/README.md": "# x\n"}
    )
    assert detect_site(tmp_path / "a" / "docs", stop=tmp_path / "a").base_path == "/sub"
    letters = "abcdefghij"
    bomb = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"{letters[i + 1]}: &{letters[i + 1]} [{', '.join(['*' + letters[i]] * 9)}]\n" for i in range(8)
    )
    (tmp_path / "b" / ".git").mkdir(parents=True)
    write_tree(tmp_path / "b", {"docs/.vuepress/config.yml": bomb + "base: /b/\n", "docs/README.md": "# x\n"})
    started = time.perf_counter()
    site = detect_site(tmp_path / "b" / "docs", stop=tmp_path / "b")
    assert time.perf_counter() - started < 10
    assert site.generator == "vuepress"


def test_a_yaml_python_tag_is_not_run(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    marker = tmp_path / "ran"
    text = f"base: !!python/object/apply:os.system ['touch {marker}']\n"
    write_tree(tmp_path, {"docs/.vuepress/config.yml": text, "docs/README.md": "# x\n"})
    site = detect_site(tmp_path / "docs", stop=tmp_path)
    assert not marker.exists()
    assert site.base_path == ""


def test_a_deeply_nested_yaml_config_is_refused_with_a_problem(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    text = "base: " + "[" * 50000 + "]" * 50000 + "\n"
    write_tree(tmp_path, {"docs/.vuepress/config.yml": text, "docs/README.md": "# x\n"})
    site = detect_site(tmp_path / "docs", stop=tmp_path)
    assert site.problems and "nested too deeply" in site.problems[0]


def test_a_changed_index_html_reroutes_on_refresh(tmp_path: Path) -> None:
    # The incremental index: index.html (relativePath added) and then a script file it loads
    # (relativePath taken away there) re-route zh/a.md's relative link.
    files = {"docs/README.md": "# H\n", "docs/zh/a.md": "# A\n\n[b](b.md)\n", "docs/zh/b.md": "# B\n"}
    root = docsify_site(tmp_path, "{}", files)
    assert root_verdicts(root, "zh/a.md") == {"b.md": False}
    (root / "index.html").write_text(
        DOCSIFY_PAGE.format("window.$docsify = { relativePath: true };"), encoding="utf-8"
    )
    assert root_verdicts(root, "zh/a.md") == {"b.md": True}
    (root / "config.js").write_text("window.$docsify = { relativePath: true };\n", encoding="utf-8")
    (root / "index.html").write_text(
        '<html><body><script src="config.js"></script><script src="//cdn.jsdelivr.net/npm/docsify@4">'
        "</script></body></html>\n",
        encoding="utf-8",
    )
    assert root_verdicts(root, "zh/a.md") == {"b.md": True}
    (root / "config.js").write_text(
        "window.$docsify = { relativePath: false, name: 'x' };\n", encoding="utf-8"
    )
    assert root_verdicts(root, "zh/a.md") == {"b.md": False}


def test_a_nested_index_html_added_later_reroutes(tmp_path: Path) -> None:
    files = {"docs/README.md": "# H\n", "docs/zh/a.md": "# A\n\n[b](b.md)\n", "docs/zh/b.md": "# B\n"}
    root = docsify_site(tmp_path, "{}", files)
    assert root_verdicts(root, "zh/a.md") == {"b.md": False}
    # zh/ becomes a Docsify site of its own: `b.md` is read from its root, zh/.
    (root / "zh" / "index.html").write_text(DOCSIFY_PAGE.format("window.$docsify = {};"), encoding="utf-8")
    assert root_verdicts(root, "zh/a.md") == {"b.md": True}
