"""Attacks on "files of the manual a site builds no page from" (udm.site.model `glob_lines`,
`unpublished_rule`, `_unpublished`; udm.site.jsconfig Docusaurus `exclude`, Starlight `_` files,
VitePress `srcExclude`; udm.site.detect MkDocs `exclude_docs` and the exclude plugin; udm.site.anchors
pymdownx.snippets lines; udm.site.routes / udm.index.links for partials).

The site config files and the pages are untrusted: a hostile agent may write them. A crafted one
must not take seconds to read, must not crash, and must not hide a broken link. A file the site really
leaves out is legitimately unchecked (its relative links resolve where it is rendered), but a config
value the reader misparses (a comment, a string, a nested key, a blank in a glob) must not make a
published page "unpublished", which silently turns each of its broken relative links into "unknown".

Timing attacks run in a child process under a hard timeout, so a regression cannot stall the suite;
the child times the one operation attacked (not its imports) and the test asserts a bound on it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from udm.config import Settings
from udm.index import lint
from udm.index.links import check_links
from udm.site.model import Site, glob_lines, unpublished_rule
from udm.site.routes import detect_site

from ..engine.conftest import page_verdicts, site_settings

_ROOT = Path(__file__).resolve().parents[2]


def _op_seconds(setup: str, op: str, *, limit: float, hard: float) -> None:
    """Run `setup` then `op` in a fresh interpreter; fail when `op` takes `limit` seconds of CPU or
    more (the suite's other workers do not count), or the child does not finish within `hard` seconds
    of wall time (imports and setup included)."""
    code = (
        "import time\n"
        + textwrap.dedent(setup)
        + "\n_t0 = time.process_time()\n"
        + textwrap.dedent(op)
        + "\nprint('ELAPSED', time.process_time() - _t0)\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=_ROOT, timeout=hard, capture_output=True, text=True, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the child did not finish within {hard}s (the attacked operation took > {limit}s)")
    assert done.returncode == 0, done.stderr[-3000:]
    elapsed = float(done.stdout.rsplit("ELAPSED", 1)[1])
    assert elapsed < limit, f"took {elapsed:.2f}s, more than {limit}s"


# ----- fixtures written by the tests ---------------------------------------------------------------


def _docusaurus(tmp_path: Path, docs_options: str, files: dict[str, str], *, before: str = "") -> Settings:
    site = tmp_path / "website"
    site.mkdir(parents=True, exist_ok=True)
    (site / "docusaurus.config.js").write_text(
        f"{before}module.exports = {{\n  baseUrl: '/',\n  presets: [['classic', {{docs: {{{docs_options}}}}}]],\n}};\n"
    )
    return site_settings(site, files)


def _vitepress(tmp_path: Path, config: str, files: dict[str, str]) -> Settings:
    project = tmp_path / "site"
    (project / ".vitepress").mkdir(parents=True, exist_ok=True)
    (project / ".vitepress" / "config.mts").write_text(config)
    return site_settings(project, files)


def _mkdocs(tmp_path: Path, config: str, files: dict[str, str]) -> Settings:
    project = tmp_path / "project"
    project.mkdir(parents=True, exist_ok=True)
    (project / "mkdocs.yml").write_text(config)
    return site_settings(project / "docs", files)


# A published page with one broken relative link, and a `_` partial with one.
DOCS_PAGES = {
    "docs/index.md": "# Home\n\n[m](./missing.md) [i](./_intro.md)\n",
    "docs/_intro.md": "# Intro\n\n[g](./gone.md)\n",
}
ROOT_PAGES = {"index.md": "# Home\n\n[m](./missing.md) [g](./guide.md)\n", "guide.md": "# Guide\n"}
SNIPPETS = "site_name: S\nmarkdown_extensions:\n  - pymdownx.snippets\n"


# ===================================================================================================
# FAILING at the time of writing: each docstring says what was observed.
# ===================================================================================================

# ----- (a) time --------------------------------------------------------------------------------------


def test_brace_group_of_commas_quadratic_in_glob_lines(tmp_path: Path) -> None:
    """udm/site/model.py `_BRACES` (`\\{([^{}]*,[^{}]*)\\}`) in `glob_lines`: an unclosed `{` followed
    by commas makes the two `[^{}]*` try every split, quadratic in the glob's length. One 30 KB
    Docusaurus `exclude` glob `'{,,,,...'` took ~6 s of detect_site (8 KB: 0.44 s; the config may be
    1 MB: hours). The same applies to VitePress `srcExclude`. Expected: linear, well under a second."""
    site = tmp_path / "website"
    (site / "docs").mkdir(parents=True)
    glob = "{" + "," * 30_000
    (site / "docusaurus.config.js").write_text(
        f"module.exports = {{baseUrl: '/', presets: [['classic', {{docs: {{exclude: ['{glob}']}}}}]]}};\n"
    )
    _op_seconds(
        f"from pathlib import Path\nfrom udm.site.routes import detect_site\nroot = Path({str(site)!r})",
        "detect_site(root)",
        limit=1.0,
        hard=2.5,
    )


def test_snippet_line_of_blanks_quadratic() -> None:
    """udm/site/anchors.py `_SNIPPET_LINE`: `-{1,}8<-{1,}[ \\t]*(?:...)?[ \\t]*$` has two adjacent
    `[ \\t]*` around an optional group, so a line `--8<--` + 40,000 blanks + `x` tries every split:
    page_anchors took ~6.4 s on a 40 KB page (8,000 blanks: 0.25 s; a page may be 4 MB). Expected:
    linear, well under a second."""
    _op_seconds(
        "from udm.site.anchors import page_anchors\nfrom udm.site.model import Site\n"
        "site = Site(generator='mkdocs', snippets=True)\ntext = '# T\\n\\n--8<--' + ' ' * 40_000 + 'x\\n'",
        "page_anchors(site, 'x.md', text)",
        limit=1.0,
        hard=2.5,
    )


def test_snippet_lines_in_a_fence_times_every_fence() -> None:
    """udm/site/anchors.py `_includes_markdown_snippet`: each of up to 1,000 `--8<--` lines is looked
    up in a linear scan of every fence of the page (`any(a <= line <= b for a, b in fences)`): 50,000
    empty fences and then 1,000 snippet lines inside one fence (400 KB) took ~2.5-3 s of this check
    alone (4 MB page: ~25 s). Expected: bisect over the fences, well under a second."""
    _op_seconds(
        "from udm.markdown import parse_document\nfrom udm.site.anchors import _includes_markdown_snippet\n"
        "text = '# T\\n\\n' + '```\\n```\\n' * 50_000 + '```\\n' + '--8<-- \"a.md\"\\n' * 1000 + '```\\n'\n"
        "doc = parse_document(text, 'x.md')",
        "assert not _includes_markdown_snippet(doc)",
        limit=0.5,
        hard=3.0,
    )


def test_exclude_plugin_globs_compile_for_seconds(tmp_path: Path) -> None:
    """udm/site/model.py `excluded` / `_exclude_pattern` through the MkDocs exclude plugin's `glob`
    (style "fnmatch"): its patterns have no length cap (the `.gitignore` matcher caps one at 1,024
    characters), and fnmatch.translate makes a lookahead group per `*`: 200 globs of `*a*a*a...`
    (a 400 KB mkdocs.yml) took ~3.7 s to compile at the first lookup (1 MB, within the config limit:
    ~10 s, in every process that reads the site). Expected: bounded, well under a second."""
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    globs = "".join(f"        - '{'*a' * 1000}b{k}'\n" for k in range(200))
    (project / "mkdocs.yml").write_text(f"site_name: S\nplugins:\n  - exclude:\n      glob:\n{globs}")
    _op_seconds(
        f"from pathlib import Path\nfrom udm.site.routes import detect_site\n"
        f"site = detect_site(Path({str(project / 'docs')!r}))\nassert site.unpublished",
        "site.unpublished_page('index.md')",
        limit=1.0,
        hard=2.5,
    )


def test_many_docs_instances_and_versions_make_every_lookup_slow(tmp_path: Path) -> None:
    """udm/site/jsconfig.py `_docs_versions` / udm/site/model.py `_unpublished`: a rule per content
    folder, for each docs plugin instance x each released version (their `<id>_versions.json`, whose
    folders need not even exist; up to 50 x 100), and every lookup walks all the rules: with 50 x 100,
    5,153 rules, ~0.7 ms a lookup; 300 pages of 20 links to 300 more files indexed in 2.9 s (0.6 s with
    the lookup stubbed out; 7.3 s before Routes cached the answer per file), and a manual of many
    thousand files pays it per file. Here 30 x 100 (3,100 rules): 5,000 lookups took ~2 s. Expected:
    a lookup by folder, 5,000 well under half a second."""
    import json

    site = tmp_path / "website"
    site.mkdir()
    instances = "".join(
        f"['@docusaurus/plugin-content-docs', {{id: 'i{k}', path: 'd{k}', routeBasePath: 'd{k}'}}],\n"
        for k in range(30)
    )
    (site / "docusaurus.config.js").write_text(
        "module.exports = {baseUrl: '/', presets: [['classic', {docs: {}}]], plugins: [\n"
        + instances
        + "]};\n"
    )
    (site / "versions.json").write_text(json.dumps([f"v{j}" for j in range(100)]))
    for k in range(30):
        (site / f"i{k}_versions.json").write_text(json.dumps([f"v{j}" for j in range(100)]))
    _op_seconds(
        f"from pathlib import Path\nfrom udm.site.routes import detect_site\n"
        f"site = detect_site(Path({str(site)!r}))\nassert sum(len(r[1]) for r in site.unpublished) > 3000",
        "for i in range(5000):\n    site.unpublished_page(f'docs/p{i}.md')",
        limit=0.5,
        hard=3.0,
    )


# ----- (b) misparsed configs that hide broken links --------------------------------------------------


@pytest.mark.parametrize(
    "exclude",
    [
        # A commented-out entry is no glob: Docusaurus excludes only drafts.
        "exclude: [\n    // '**/*.md',\n    '**/drafts/**',\n  ]",
        "exclude: [/* 'index.md', */ '**/drafts/**']",
    ],
    ids=["line-comment", "block-comment"],
)
def test_docusaurus_commented_exclude_entry_is_read(tmp_path: Path, exclude: str) -> None:
    """udm/site/jsconfig.py `_excluded_globs`: `_js_strings(value)` reads the strings of the raw
    array, comments included, so `exclude: [ // '**/*.md'` (or `/* 'index.md' */`) makes
    docs/index.md "unpublished": its broken `./missing.md` came out unknown (None) instead of broken,
    and `./_intro.md` (a page, the config's list replacing the defaults) broken instead of found."""
    settings = _docusaurus(tmp_path, exclude, DOCS_PAGES)
    assert page_verdicts(settings, "docs/index.md") == {"./missing.md": False, "./_intro.md": True}
    assert page_verdicts(settings, "docs/_intro.md") == {"./gone.md": False}


def test_docusaurus_exclude_inside_a_string_is_read(tmp_path: Path) -> None:
    """udm/site/jsconfig.py `_own_value`: `_own_level` blanks comments and nested blocks but not
    strings, so a string value `"https://x/exclude: ['**/*']"` of the docs options is read as the
    plugin's `exclude`: every docs page became unpublished and docs/index.md's broken `./missing.md`
    came out unknown (None). Expected: broken (False); the defaults stand."""
    settings = _docusaurus(tmp_path, "editUrl: \"https://x/exclude: ['**/*']\"", DOCS_PAGES)
    assert page_verdicts(settings, "docs/index.md")["./missing.md"] is False


def test_docusaurus_commented_out_docs_block_is_read(tmp_path: Path) -> None:
    """udm/site/jsconfig.py `docusaurus` -> `_js_block(text, "docs")` matches `docs: {` inside a line
    comment before the real preset, and its `exclude` is now applied: `// docs: {exclude:
    ['**/*.md']},` made every docs page unpublished; docs/index.md's broken `./missing.md` came out
    unknown (None). Expected: broken (False)."""
    settings = _docusaurus(tmp_path, "", DOCS_PAGES, before="// docs: {exclude: ['**/*.md']},\n")
    assert page_verdicts(settings, "docs/index.md")["./missing.md"] is False


def test_docusaurus_spread_written_inside_a_string_keeps_the_defaults(tmp_path: Path) -> None:
    """udm/site/jsconfig.py `_excluded_globs`: `_SPREAD` is searched in the array with its strings,
    so a glob `'**/notes...md'` reads as a spread `...md` and the defaults are added. Docusaurus:
    the config's list replaces the defaults, so `_intro.md` is a page. Observed: `./_intro.md`
    broken and the broken `./gone.md` of `_intro.md` unknown (None). Expected: True and False."""
    settings = _docusaurus(tmp_path, "exclude: ['**/drafts/**', '**/notes...md']", DOCS_PAGES)
    assert page_verdicts(settings, "docs/index.md") == {"./missing.md": False, "./_intro.md": True}
    assert page_verdicts(settings, "docs/_intro.md") == {"./gone.md": False}


@pytest.mark.parametrize("generator", ["docusaurus", "vitepress"])
def test_glob_with_a_trailing_blank_matches_every_page(tmp_path: Path, generator: str) -> None:
    """udm/site/model.py `glob_lines` strips the glob: `'**/*.md '` (micromatch: names ending in a
    blank, none here) became `**/*.md`, every Markdown page unpublished, and the broken
    `./missing.md` of the home page came out unknown (None). Expected: broken (False)."""
    if generator == "docusaurus":
        settings = _docusaurus(tmp_path, "exclude: ['**/*.md ']", DOCS_PAGES)
        assert page_verdicts(settings, "docs/index.md")["./missing.md"] is False
    else:
        settings = _vitepress(tmp_path, "export default {\n  srcExclude: ['**/*.md '],\n}\n", ROOT_PAGES)
        assert page_verdicts(settings, "index.md") == {"./missing.md": False, "./guide.md": True}


def test_vitepress_src_exclude_inside_a_string_is_read(tmp_path: Path) -> None:
    """udm/site/jsconfig.py `vitepress`: `_js_block(_without_comments(text), "srcExclude")` skips
    comments but not strings: `description: "set srcExclude: ['**/*.md'] to hide"` made every page
    unpublished; index.md's broken `./missing.md` came out unknown (None) and `./guide.md` broken.
    Expected: False and True."""
    config = "export default {\n  description: \"set srcExclude: ['**/*.md'] to hide\",\n}\n"
    settings = _vitepress(tmp_path, config, ROOT_PAGES)
    assert page_verdicts(settings, "index.md") == {"./missing.md": False, "./guide.md": True}


def test_vitepress_nested_src_exclude_key_is_read(tmp_path: Path) -> None:
    """udm/site/jsconfig.py `vitepress`: the first `srcExclude:` anywhere is taken, not the top-level
    option VitePress reads: a Vite plugin's own option of that name (`vite: {plugins: [p({srcExclude:
    ['**/*.md']})]}`) made every page unpublished; `./missing.md` unknown (None). Expected: False."""
    config = "export default {\n  vite: { plugins: [thing({ srcExclude: ['**/*.md'] })] },\n}\n"
    settings = _vitepress(tmp_path, config, ROOT_PAGES)
    assert page_verdicts(settings, "index.md") == {"./missing.md": False, "./guide.md": True}


@pytest.mark.parametrize("glob", ["' *'", "['*.md ']"])
def test_exclude_plugin_glob_with_blanks_matches_every_page(tmp_path: Path, glob: str) -> None:
    """udm/site/model.py `excluded` strips both the pattern and the path before fnmatch: the
    mkdocs-exclude plugin matches `fnmatch.fnmatchcase(src_path, glob)` as written, so `' *'` and
    `'*.md '` leave out nothing, but here every page became unpublished: index.md's broken
    `./missing.md` unknown (None), `guide.md` broken. Expected: False and True."""
    config = f"site_name: S\nplugins:\n  - exclude:\n      glob: {glob}\n"
    settings = _mkdocs(
        tmp_path, config, {"index.md": "# Home\n\n[m](./missing.md) [g](guide.md)\n", "guide.md": "# G\n"}
    )
    assert page_verdicts(settings, "index.md") == {"./missing.md": False, "guide.md": True}


def test_mkdocs_exclude_docs_negation_inside_an_excluded_folder(tmp_path: Path) -> None:
    """udm/site/detect.py `_mkdocs_unpublished` matches `exclude_docs` with git's rule (a file in an
    ignored folder cannot be taken back), but MkDocs matches it with pathspec's GitIgnoreSpec, which
    takes it back: `snippets/` + `!snippets/keep.md` publishes snippets/keep.md (pathspec says so,
    asked here). Observed: a link to it broken and its broken `../gone.md` unknown (None). Expected:
    the link found (True) and `../gone.md` broken (False). Same for `!.well-known/x.md`."""
    pathspec = pytest.importorskip("pathspec")
    lines = ["snippets/", "!snippets/keep.md"]
    spec = pathspec.GitIgnoreSpec.from_lines([".*", "/templates/"]) + pathspec.GitIgnoreSpec.from_lines(lines)
    assert not spec.match_file("snippets/keep.md")  # what MkDocs builds from
    settings = _mkdocs(
        tmp_path,
        "site_name: S\nexclude_docs: |\n  snippets/\n  !snippets/keep.md\n",
        {"index.md": "# Home\n\n[k](snippets/keep.md)\n", "snippets/keep.md": "# Keep\n\n[x](../gone.md)\n"},
    )
    assert page_verdicts(settings, "index.md") == {"snippets/keep.md": True}
    assert page_verdicts(settings, "snippets/keep.md") == {"../gone.md": False}


def test_docs_exclude_leaks_into_the_blog_inside_the_docs_folder(tmp_path: Path) -> None:
    """udm/site/model.py `_unpublished`: any rule that matches a file makes it unpublished, whichever
    plugin the rule belongs to. Docs at the site folder (`path: '.'`) with `exclude: ['blog/**']`
    (so the docs plugin does not take the blog's posts as docs) also made the blog plugin's posts
    unpublished: a link to blog/2020-01-01-a.md came out broken and the post's own broken
    `./missing.md` unknown (None). Docusaurus builds the post with the blog plugin. Expected: the
    link found (True) and `./missing.md` broken (False)."""
    settings = _docusaurus(
        tmp_path,
        "path: '.', routeBasePath: 'docs', exclude: ['blog/**', 'src/**']",
        {
            "intro.md": "# Intro\n\n[b](./blog/2020-01-01-a.md)\n",
            "blog/2020-01-01-a.md": "# A post\n\n[m](./missing.md)\n",
        },
    )
    assert page_verdicts(settings, "intro.md") == {"./blog/2020-01-01-a.md": True}
    assert page_verdicts(settings, "blog/2020-01-01-a.md") == {"./missing.md": False}


@pytest.mark.parametrize(
    "body",
    [
        # pymdownx.snippets is a preprocessor: it writes the file into the comment, which renders nothing.
        '<!--\n--8<-- "part.md"\n-->\n',
        # It keeps the line's indentation on every included line: the text stays an indented code block.
        'Text.\n\n    --8<-- "part.md"\n\nMore.\n',
    ],
    ids=["html-comment", "indented-code"],
)
def test_snippet_line_that_renders_no_heading_hides_broken_anchors(tmp_path: Path, body: str) -> None:
    """udm/site/anchors.py `_includes_markdown_snippet` skips `--8<--` lines in fences only: one in an
    HTML comment or an indented code block includes text that renders no heading, yet every anchor of
    the page became unknown: `[n](#nowhere)` came out None. Expected: broken (False), as for a
    snippet line in a fence."""
    settings = _mkdocs(
        tmp_path, SNIPPETS, {"index.md": f"# Home\n\n{body}\n[n](#nowhere)\n", "part.md": "## Run\n"}
    )
    assert page_verdicts(settings, "index.md") == {"#nowhere": False}


# ===================================================================================================
# What held up: regression tests.
# ===================================================================================================

# ----- time ------------------------------------------------------------------------------------------


# Each a config of about half a megabyte (the limit is 1 MB, and the cost is linear): a huge array (200 globs are read), one never closed (the
# defaults), a brace bomb (more than 64 patterns: not read), one huge glob (past the matcher's cap).
MEGABYTE_EXCLUDES = {
    "huge-array": "exclude: [" + "'a'," * 100_000 + "]",
    "unclosed": "exclude: [" + "'a'," * 100_000,
    "brace-bomb": "exclude: ['" + "{a,b}" * 20_000 + "']",
    "huge-glob": "exclude: ['" + "**/" + "*a" * 200_000 + "b']",
}


def test_docusaurus_exclude_of_half_a_megabyte_is_read_quickly(tmp_path: Path) -> None:
    roots = []
    for name, exclude in MEGABYTE_EXCLUDES.items():
        site = tmp_path / name
        (site / "docs").mkdir(parents=True)
        (site / "docusaurus.config.js").write_text(
            f"module.exports = {{baseUrl: '/', presets: [['classic', {{docs: {{{exclude}}}}}]]}};\n"
        )
        roots.append(str(site))
    # One child for the four (~0.45 s each here, linear in the config's size); the bound is on the
    # slowest one: the op ends by moving the clock's start back by it. The bound leaves room for the
    # suite's load (1.06 s seen there); a quadratic read of half a megabyte takes minutes.
    _op_seconds(
        f"from pathlib import Path\nfrom udm.site.routes import detect_site\nroots = {roots!r}",
        "slowest = 0.0\n"
        "for root in roots:\n"
        "    started = time.process_time()\n"
        "    site = detect_site(Path(root))\n"
        "    site.unpublished_page('docs/' + 'a/' * 31 + 'a' * 200 + '.md')\n"
        "    slowest = max(slowest, time.process_time() - started)\n"
        "_t0 = time.process_time() - slowest",
        limit=2.5,
        hard=12.0,
    )


def test_star_globs_against_deep_paths_are_bounded() -> None:
    """`*a*a*a...b` in every style against a deep path of `a`s."""
    _op_seconds(
        "from pathlib import Path\nfrom udm.site.model import Site, glob_lines, unpublished_rule\n"
        "glob = '**/' + '*a' * 140 + 'b'\n"
        "assert glob_lines('**/' + '*a' * 500 + 'b') == []  # longer than a glob a site writes: not read\n"
        # Distinct patterns: a repeated one is read once (only its last place counts).
        "rules = (unpublished_rule('docs', Path('/m'), [Path('/m')], 'gitignore', [g for i in range(200) for g in glob_lines(glob + str(i))]),\n"
        "         unpublished_rule('docs', Path('/m'), [Path('/m')], 'name', ['*a' * 20 + 'b' + str(i) for i in range(200)]))\n"
        "assert all(rules)\n"
        "site = Site(generator='mkdocs', unpublished=rules)\n"
        "paths = ['/'.join(['a' * 40] * k) + '.md' for k in range(1, 33)]",
        "for p in paths:\n    assert not site.unpublished_page(p)",
        limit=1.5,
        hard=5.0,
    )


def test_many_snippet_lines_are_bounded() -> None:
    _op_seconds(
        "from udm.site.anchors import page_anchors\nfrom udm.site.model import Site\n"
        "site = Site(generator='mkdocs', snippets=True)\n"
        "outside = '# T\\n\\n' + '--8<-- \"a.md\"\\n' * 100_000\n"
        "inside = '# T\\n\\n```\\n' + '--8<-- \"a.md\"\\n' * 100_000 + '```\\n'\n"
        "long_name = '# T\\n\\n' + ('--8<-- \"' + 'a' * 5000 + '.md\"\\n') * 200",
        "for text in (outside, inside, long_name):\n    page_anchors(site, 'x.md', text)",
        limit=2.0,
        hard=6.0,
    )


def test_exclude_docs_of_a_megabyte_is_read_quickly(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    lines = "".join("  " + "**/a" * 200 + "/**\n" for _ in range(1200))
    (project / "mkdocs.yml").write_text(f"site_name: S\nexclude_docs: |\n{lines}")
    _op_seconds(
        f"from pathlib import Path\nfrom udm.site.routes import detect_site\nroot = Path({str(project / 'docs')!r})",
        "site = detect_site(root)\nfor k in range(1, 33):\n    site.unpublished_page('/'.join(['a'] * k) + '.md')",
        limit=1.5,
        hard=5.0,
    )


# ----- no crash on values of any type -----------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "5",
        "null",
        "true",
        "[1, 2]",
        "{a: b}",
        "[[1]]",
        "[null]",
        "[{a: [1, {b: 2}]}]",
        "'[a[b]*'",
        "['[[:alpha:]', '[z-a]*', '\\\\', '[!]', '[', '*', '**/../**']",
        "'" + "[" * 500 + "'",
        "[" * 90 + "]" * 90,
    ],
)
def test_mkdocs_exclude_values_of_any_type_do_not_crash(tmp_path: Path, value: str) -> None:
    config = (
        f"site_name: S\nexclude_docs: {value}\nmarkdown_extensions:\n  - pymdownx.snippets: {value}\n"
        f"plugins:\n  - exclude:\n      glob: {value}\n      regex: {value}\n"
    )
    settings = _mkdocs(
        tmp_path,
        config,
        {"index.md": '# Home\n\n[m](./missing.md) [g](guide.md)\n--8<-- "x.md"\n', "guide.md": "# G\n"},
    )
    site = detect_site(settings.root)
    site.describe()
    for rel in ("index.md", "a/[b]/c.md", "../x.md", "/abs.md", "", ".hidden/x.md"):
        assert site.unpublished_page(rel) in (True, False)
    verdicts = page_verdicts(settings, "index.md")
    assert verdicts.get("./missing.md") in (False, None)
    lint(settings)
    check_links(settings, external=False)


@pytest.mark.parametrize(
    "plugins",
    [
        "plugins: {exclude: 5}",
        "plugins: [{exclude: [1]}]",
        "plugins: {exclude: {glob: {a: 1}, regex: [[]]}}",
        "plugins: 7",
    ],
)
def test_mkdocs_odd_plugin_shapes_do_not_crash(tmp_path: Path, plugins: str) -> None:
    settings = _mkdocs(tmp_path, f"site_name: S\n{plugins}\n", {"index.md": "# Home\n\n[m](./missing.md)\n"})
    assert page_verdicts(settings, "index.md") == {"./missing.md": False}


def test_exclude_plugin_regex_is_never_run(tmp_path: Path) -> None:
    """A catastrophic regex of the exclude plugin is reported, not run, and excludes nothing."""
    config = "site_name: S\nplugins:\n  - exclude:\n      regex:\n        - '^(a+)+$'\n        - '.*'\n"
    name = "a" * 40 + "!.md"
    settings = _mkdocs(
        tmp_path, config, {"index.md": f"# Home\n\n[m](./missing.md) [a]({name})\n", name: "# A\n"}
    )
    assert page_verdicts(settings, "index.md") == {"./missing.md": False, name: True}
    assert any("regex patterns are not read (2)" in p for p in detect_site(settings.root).problems)


@pytest.mark.parametrize(
    "config",
    [
        "export default {\n  srcExclude: [\n",
        "export default {\n  srcExclude: 'drafts/**',\n}\n",
        "export default {\n  srcExclude: [`${x}/**`, `{a,{b,c}}`, '{,}', '!**'],\n}\n",
        "export default {\n  srcExclude: [\n  // '**/*.md',\n  'drafts/**'],\n}\n",
        "export default {\n  /* srcExclude: ['**/*.md'], */\n}\n",
    ],
)
def test_vitepress_odd_src_exclude_hides_nothing(tmp_path: Path, config: str) -> None:
    settings = _vitepress(tmp_path, config, ROOT_PAGES)
    assert page_verdicts(settings, "index.md") == {"./missing.md": False, "./guide.md": True}


def test_docusaurus_unclosed_or_computed_exclude_keeps_the_defaults(tmp_path: Path) -> None:
    for options in (
        "exclude: [",
        "exclude: computeIt()",
        "exclude: {a: ['**']}",
        "exclude: ['!**', '#x', '']",
    ):
        settings = _docusaurus(tmp_path, options, DOCS_PAGES)
        # The defaults stand (or an unread list excludes nothing): index.md is a page either way.
        assert page_verdicts(settings, "docs/index.md")["./missing.md"] is False, options


# ----- containment: a rule sees only its own content folder --------------------------------------------


def test_docusaurus_docs_exclude_stays_in_the_docs_folder(tmp_path: Path) -> None:
    files = {
        "docs/index.md": "# H\n\n[m](./missing.md)\n",
        "blog/2020-01-01-a.md": "# B\n\n[m](./missing.md)\n",
        "src/pages/p.md": "# P\n\n[m](./missing.md)\n",
        "notes.md": "# N\n\n[m](./missing.md)\n",
    }
    settings = _docusaurus(tmp_path, "exclude: ['**', '../**', '/**/*', '../../**']", files)
    for page in ("blog/2020-01-01-a.md", "src/pages/p.md", "notes.md"):
        assert page_verdicts(settings, page) == {"./missing.md": False}, page
    # Really excluded: a partial's Markdown file link is still resolved from its own folder (broken),
    # as Docusaurus' remark plugin does wherever the partial is rendered.
    assert detect_site(settings.root).unpublished_page("docs/index.md")
    assert page_verdicts(settings, "docs/index.md") == {"./missing.md": False}


def test_docusaurus_docs_folder_outside_the_manual_makes_no_rule(tmp_path: Path) -> None:
    """A docs `path` beside the manual, or outside every folder the site may read, makes no rule."""
    files = {"index.md": "# H\n\n[m](./missing.md)\n"}
    for path in ("../docs", "/etc", "/"):
        settings = _docusaurus(tmp_path, f"path: '{path}', exclude: ['**/*.md']", files)
        assert not detect_site(settings.root).unpublished_page("index.md"), path
        assert page_verdicts(settings, "index.md") == {"./missing.md": False}, path


def test_mkdocs_rules_stay_in_docs_dir_above_the_manual(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "mkdocs.yml").write_text("site_name: S\nexclude_docs: |\n  /*\n  *\n  ../**\n")
    settings = site_settings(
        project, {"README.md": "# R\n\n[m](./missing.md)\n", "docs/index.md": "# I\n\n[m](./missing.md)\n"}
    )
    assert page_verdicts(settings, "README.md") == {"./missing.md": False}


def test_dotdot_patterns_reach_nothing_outside() -> None:
    rule = unpublished_rule(
        "docs", Path("/m/docs/guide"), [Path("/m/docs")], "gitignore", ["/../**", "../**", "**/../*"]
    )
    site = Site(generator="vitepress", unpublished=(rule,) if rule else ())
    for rel in ("a.md", "../a.md", "../../a.md", "../guide/a.md", "/etc/a.md"):
        assert not site.unpublished_page(rel), rel


def test_starlight_underscore_rule_stays_in_its_content_folder(tmp_path: Path) -> None:
    project = tmp_path / "site"
    project.mkdir()
    (project / "astro.config.mjs").write_text(
        "import starlight from '@astrojs/starlight';\nexport default { integrations: [starlight({title: 'S'})] };\n"
    )
    settings = site_settings(
        project,
        {
            "src/content/docs/index.md": "# Home\n\n[m](./missing.md)\n",
            "_notes.md": "# N\n\n[m](./missing.md)\n",
            "src/_x.md": "# X\n\n[m](./missing.md)\n",
        },
    )
    site = detect_site(settings.root)
    assert not site.unpublished_page("_notes.md") and not site.unpublished_page("src/_x.md")
    assert site.unpublished_page("src/content/docs/_p.md")


# ----- links to and from unpublished files --------------------------------------------------------------


def test_partial_cannot_probe_outside_the_manual(tmp_path: Path) -> None:
    settings = _docusaurus(
        tmp_path,
        "",
        {
            "docs/index.md": "# H\n",
            "docs/_p.md": "# P\n\n[a](../../../../../../etc/passwd) [b](../../docusaurus.config.js) [c](/docs/none)\n",
        },
    )
    verdicts = page_verdicts(settings, "docs/_p.md")
    assert verdicts["../../../../../../etc/passwd"] is not True
    assert verdicts["/docs/none"] is False  # absolute: checked from a partial too


def test_links_to_unpublished_files_stay_broken_in_every_form(tmp_path: Path) -> None:
    settings = _docusaurus(
        tmp_path,
        "",
        {
            "docs/index.md": "# H\n\n[a](./_p.md) [b](/docs/_p) [c](_p.md#x) [d](./_dir/q.md) [e](/docs/_dir/q)\n",
            "docs/_p.md": "# P\n",
            "docs/_dir/q.md": "# Q\n",
        },
    )
    assert set(page_verdicts(settings, "docs/index.md").values()) == {False}
    messages = [f.message for f in lint(settings) if f.rule == "broken-link"]
    assert len(messages) == 5


def test_mkdocs_dot_and_templates_defaults(tmp_path: Path) -> None:
    settings = _mkdocs(
        tmp_path,
        "site_name: S\n",
        {
            "index.md": "# H\n\n[a](.hidden/x.md) [b](templates/t.md) [c](sub/templates/t.md) [d](sub/.x.md)\n",
            ".hidden/x.md": "# X\n",
            "templates/t.md": "# T\n",
            "sub/templates/t.md": "# T\n",
            "sub/.x.md": "# X\n",
        },
    )
    assert page_verdicts(settings, "index.md") == {
        ".hidden/x.md": False,
        "templates/t.md": False,
        "sub/templates/t.md": True,  # `/templates/` is anchored to docs_dir
        "sub/.x.md": False,
    }


def test_glob_lines_bounds() -> None:
    assert glob_lines("{a,b}" * 7) == []  # 128 patterns
    assert glob_lines("{" + "a," * 100 + "a}") == []  # 101 alternatives in one group
    assert len(glob_lines("{a,b}" * 4)) == 16
    assert len(glob_lines("{a,b,c,d}" * 3)) == 64
    assert glob_lines("{a,b}" * 5) == []  # a fifth group is left: not read
    assert glob_lines("#x") == [] and glob_lines("!x") == [] and glob_lines("   ") == []
