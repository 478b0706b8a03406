"""Files of the manual a site builds no page from: Docusaurus' `_` partials (React Native's
`_integration-with-existing-apps-ios.md`), MkDocs' `exclude_docs` and the exclude plugin with
pymdownx.snippets (Textual's and Knative's `snippets/`), Starlight's `_` files, VitePress'
`srcExclude`. A link to one is broken (no page serves it); a relative link written in one resolves
where it is rendered, so it is left unchecked unless it lands on a file beside it; a page that
includes a Markdown snippet has headings the file does not show. Conventions found on those sites,
re-created here in fixtures written by the tests."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from udm.index import lint
from udm.index.links import check_links
from udm.site.model import Site, glob_lines, unpublished_rule
from udm.site.routes import detect_site

from .conftest import page_verdicts, site_settings

DOCUSAURUS = "module.exports = {title: 'S', baseUrl: '/', presets: [['classic', {docs: {}}]]};\n"
PARTIAL = (
    "## From the partial\n\nSee [the API](../api/x) and ![shot](./shot.png) and ![gone](./gone.png).\n"
    "Also [here](#from-the-partial), [absolute](/docs/missing), [a doc](./install.mdx) and [none](./none.md).\n"
)
INSTALL = (
    "# Install\n\nimport Setup from './_setup.mdx';\n\n<Setup />\n\n## Linux\n\n"
    "[partial](./_setup.mdx) [route](/docs/_setup) [ok](/docs/install#linux) "
    "[note](./_parts/note.md) [a heading of the partial](#from-the-partial)\n"
)


def _docusaurus(tmp_path: Path, config: str = DOCUSAURUS) -> Path:
    site = tmp_path / "website"
    (site / "docs").mkdir(parents=True)
    (site / "docusaurus.config.js").write_text(config)
    (site / "docs" / "shot.png").write_bytes(b"png")
    return site


def test_docusaurus_partials_are_no_pages(tmp_path: Path) -> None:
    site = _docusaurus(tmp_path)
    settings = site_settings(
        site,
        {
            "docs/install.mdx": INSTALL,
            "docs/_setup.mdx": PARTIAL,
            "docs/_parts/note.md": "# Note\n\n[up](../elsewhere)\n",
            "docs/other.md": "# Other\n\n[see](./install.mdx#from-the-partial) [x](./install.mdx#nowhere)\n",
        },
    )
    assert page_verdicts(settings, "docs/install.mdx") == {
        "./_setup.mdx": False,  # a partial: Docusaurus serves no page of it
        "/docs/_setup": False,
        "/docs/install#linux": True,
        "./_parts/note.md": False,  # in a `_` folder
        "#from-the-partial": None,  # the page renders a partial: its headings are the page's
    }
    assert page_verdicts(settings, "docs/_setup.mdx") == {
        "../api/x": None,  # a URL relative to the page that renders the partial
        "./shot.png": True,  # a file beside the partial: bundled from there
        "./gone.png": None,  # not beside it: it may be a route of the rendering page
        "#from-the-partial": None,  # an anchor of the rendering page
        "/docs/missing": False,  # absolute: the same from every page
        "./install.mdx": True,  # a file link: Docusaurus resolves it from the partial's own folder
        "./none.md": False,  # ... and serves no Markdown as it is: from any page, broken
    }
    assert page_verdicts(settings, "docs/_parts/note.md") == {"../elsewhere": None}
    assert page_verdicts(settings, "docs/other.md") == {
        "./install.mdx#from-the-partial": None,
        "./install.mdx#nowhere": None,
    }
    messages = {(f.file, f.message) for f in lint(settings) if f.rule == "broken-link"}
    assert messages == {
        (
            "docs/install.mdx",
            "link target ./_setup.mdx is not published: the site builds no page from it (a partial, a "
            "snippet, a draft or an excluded file)",
        ),
        (
            "docs/install.mdx",
            "link target ./_parts/note.md is not published: the site builds no page from it (a "
            "partial, a snippet, a draft or an excluded file)",
        ),
        ("docs/install.mdx", "link target /docs/_setup does not exist"),
        ("docs/_setup.mdx", "link target /docs/missing does not exist"),
        ("docs/_setup.mdx", "link target ./none.md does not exist"),
    }
    results = check_links(settings, external=False).results
    skipped = {(r.file, r.target): r.reason for r in results if r.status == "skipped"}
    assert skipped[("docs/_setup.mdx", "../api/x")] == (
        "docs/_setup.mdx is no page of the site (a partial, a snippet, a draft or an excluded file): its "
        "relative links resolve where it is rendered, not checked"
    )
    broken = {(r.file, r.target): r.reason for r in results if r.status == "broken"}
    assert broken[("docs/install.mdx", "./_setup.mdx")] == (
        "docs/_setup.mdx is not published: the site builds no page from it (a partial, a snippet, a draft "
        "or an excluded file)"
    )


@pytest.mark.parametrize(
    ("exclude", "setup", "draft"),
    [
        # The plugin's `exclude` replaces the defaults...
        ("exclude: ['**/drafts/**']", True, False),
        # ... unless it spreads a list the config computes (the defaults, as sites write it).
        ("exclude: [...defaultExclude, '**/drafts/**']", False, False),
        # A value the config computes otherwise is not read: the defaults stand.
        ("exclude: excludes()", False, True),
    ],
)
def test_docusaurus_exclude_option(tmp_path: Path, exclude: str, setup: bool, draft: bool) -> None:
    config = (
        "const defaultExclude = ['**/_*.{js,jsx,ts,tsx,md,mdx}'];\n"
        f"module.exports = {{baseUrl: '/', presets: [['classic', {{docs: {{{exclude}}}}}]]}};\n"
    )
    site = _docusaurus(tmp_path, config)
    settings = site_settings(
        site,
        {
            "docs/index.md": "# Home\n\n[s](/docs/_setup) [d](/docs/drafts/wip)\n",
            "docs/_setup.md": "# Setup\n",
            "docs/drafts/wip.md": "# WIP\n",
        },
    )
    assert page_verdicts(settings, "docs/index.md") == {"/docs/_setup": setup, "/docs/drafts/wip": draft}


@pytest.mark.parametrize(
    ("files", "root", "page", "links"),
    [
        (  # Hugo: `draft: true` (YAML or TOML front matter)
            {
                "hugo.toml": 'baseURL = "https://example.org/"\n',
                "content/a.md": "---\ndraft: true\n---\n# A\n",
                "content/b.md": "+++\ndraft = true\n+++\n# B\n",
                "content/c.md": "---\ndraft: false\n---\n# C\n",
            },
            "",
            "content/_index.md",
            {"/a/": False, "/b/": False, "/c/": True},
        ),
        (  # Docusaurus: a draft doc
            {
                "docusaurus.config.js": "module.exports = {presets: [['classic', {docs: {}}]]};\n",
                "docs/a.md": "---\ndraft: true\n---\n# A\n",
                "docs/c.md": "# C\n",
            },
            "",
            "docs/_index.md",
            {"/docs/a": False, "a.md": False, "/docs/c": True},
        ),
        (  # Jekyll: `published: false`
            {
                "_config.yml": "baseurl: ''\npermalink: pretty\n",
                "a.md": "---\npublished: false\n---\n# A\n",
                "c.md": "---\ntitle: C\n---\n# C\n",
            },
            "",
            "_index.md",
            {"/a/": False, "/c/": True},
        ),
        (  # Starlight: `draft: true`
            {
                "astro.config.mjs": (
                    "import starlight from '@astrojs/starlight';\n"
                    "export default defineConfig({ integrations: [starlight({ title: 'x' })] });\n"
                ),
                "src/content/docs/a.md": "---\ntitle: A\ndraft: true\n---\n# A\n",
                "src/content/docs/c.md": "---\ntitle: C\n---\n# C\n",
            },
            "",
            "src/content/docs/index.md",
            {"/a/": False, "/c/": True},
        ),
    ],
    ids=["hugo", "docusaurus", "jekyll", "starlight"],
)
def test_a_draft_is_no_page_of_the_site(
    tmp_path: Path, files: dict[str, str], root: str, page: str, links: dict[str, bool]
) -> None:
    body = "# Links\n\n" + "\n".join(f"- [x]({t})" for t in links) + "\n"
    settings = site_settings(tmp_path, {**files, page: body})
    assert page_verdicts(settings, page) == links


MKDOCS = """site_name: S
exclude_docs: |
  snippets/
  *.draft.md
  !keep.draft.md
markdown_extensions:
  - pymdownx.snippets:
      base_path: docs/snippets
plugins:
  - exclude:
      glob:
        - old/*
      regex:
        - '.*\\.tmp$'
"""


def _mkdocs(tmp_path: Path, config: str = MKDOCS) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "mkdocs.yml").write_text(config)
    return project / "docs"


def test_mkdocs_excluded_files_and_snippets(tmp_path: Path) -> None:
    docs = _mkdocs(tmp_path)
    settings = site_settings(
        docs,
        {
            "index.md": (
                '# Home\n\n--8<-- "part.md"\n\n[part](snippets/part.md) [draft](a.draft.md) '
                "[kept](keep.draft.md) [old](old/deep/page.md) [tpl](templates/main.md) "
                "[from the snippet](#run-it) [none](#nowhere)\n"
            ),
            "plain.md": '# Plain\n\n```\n--8<-- "part.md"\n```\n\n[x](index.md#run-it) [y](plain.md#run-it)\n',
            "snippets/part.md": "## Run it\n\n[ref](../guide/setup.md) [abs](/elsewhere/)\n",
            "a.draft.md": "# Draft\n",
            "keep.draft.md": "# Kept\n",
            "old/deep/page.md": "# Old\n",
            "templates/main.md": "# A theme override folder\n",
        },
    )
    assert page_verdicts(settings, "index.md") == {
        "snippets/part.md": False,  # exclude_docs
        "a.draft.md": False,
        "keep.draft.md": True,  # taken back by `!`
        "old/deep/page.md": False,  # the exclude plugin: fnmatch's `*` crosses folders
        "templates/main.md": False,  # MkDocs' own rule: `/templates/`
        "#run-it": None,  # a heading of the snippet the page includes
        "#nowhere": None,
    }
    # A snippet line in a fence is code: the page includes nothing, its anchors are all known.
    assert page_verdicts(settings, "plain.md") == {"index.md#run-it": None, "plain.md#run-it": False}
    assert page_verdicts(settings, "snippets/part.md") == {"../guide/setup.md": None, "/elsewhere/": False}
    site = detect_site(docs)
    assert site.snippets
    assert any("regex patterns are not read" in p for p in site.problems)
    assert site.describe()["unpublished"] == [
        {
            "owner": "docs",
            "folders": ["."],
            "style": "pathspec",
            "patterns": [".*", "/templates/", "snippets/", "*.draft.md", "!keep.draft.md"],
        },
        {"owner": "docs", "folders": ["."], "style": "fnmatch", "patterns": ["old/*"]},
    ]


def test_without_the_snippets_extension_a_snippet_line_is_text(tmp_path: Path) -> None:
    docs = _mkdocs(tmp_path, "site_name: S\n")
    settings = site_settings(docs, {"index.md": '# Home\n\n--8<-- "part.md"\n\n[x](#run-it)\n'})
    assert page_verdicts(settings, "index.md") == {"#run-it": False}


def test_a_manual_below_the_docs_folder_matches_from_the_docs_folder(tmp_path: Path) -> None:
    # The exclude patterns are paths from docs_dir; the manual is docs/guide.
    docs = _mkdocs(tmp_path, "site_name: S\nexclude_docs: |\n  /guide/partials/\n")
    settings = site_settings(
        docs / "guide",
        {
            "index.md": "# Guide\n\n[p](partials/a.md) [q](other.md)\n",
            "partials/a.md": "# A\n",
            "other.md": "# O\n",
        },
    )
    assert page_verdicts(settings, "index.md") == {"partials/a.md": False, "other.md": True}


def test_starlight_underscore_files(tmp_path: Path) -> None:
    project = tmp_path / "site"
    project.mkdir()
    (project / "astro.config.mjs").write_text(
        "import starlight from '@astrojs/starlight';\nexport default { integrations: [starlight({title: 'S'})] };\n"
    )
    docs = project / "src" / "content" / "docs"
    settings = site_settings(
        docs,
        {
            "index.md": "# Home\n\n[a](/_partial/) [b](/_dir/page/) [c](/guide/)\n",
            "_partial.md": "# Partial\n",
            "_dir/page.md": "# A page in a folder named with `_`\n",
            "guide.md": "# Guide\n",
        },
    )
    assert page_verdicts(settings, "index.md") == {"/_partial/": False, "/_dir/page/": True, "/guide/": True}


def test_vitepress_src_exclude(tmp_path: Path) -> None:
    project = tmp_path / "site"
    (project / ".vitepress").mkdir(parents=True)
    (project / ".vitepress" / "config.mts").write_text(
        "export default {\n  // srcExclude: ['**/guide.md'],\n  srcExclude: ['**/README.md', 'drafts/**'],\n}\n"
    )
    settings = site_settings(
        project,
        {
            "index.md": "# Home\n\n[a](/api/) [b](/drafts/x) [c](/guide) [d](./api/README.md)\n",
            "api/README.md": "# API\n",
            "drafts/x.md": "# X\n",
            "guide.md": "# Guide\n",
        },
    )
    assert page_verdicts(settings, "index.md") == {
        "/api/": False,
        "/drafts/x": False,
        "/guide": True,  # only a comment names it
        "./api/README.md": False,
    }


def test_a_patch_linking_to_a_partial_is_refused(tmp_path: Path) -> None:
    from udm.config import load_settings
    from udm.patch import apply_patch, parse_patch

    site = _docusaurus(tmp_path)
    (site / "docs" / "index.md").write_text("# Home\n\n## More\n\nText.\n")
    (site / "docs" / "_setup.mdx").write_text("## Setup\n")
    for sub in ("state", "logs"):
        (tmp_path / sub).mkdir()
    settings = load_settings(cwd=tmp_path, root=site / "docs")
    ops = [
        {
            "op": "append_to_section",
            "file": "index.md",
            "section": "More",
            "content": "See [s](./_setup.mdx).",
        }
    ]
    res = apply_patch(parse_patch({"description": "t", "operations": ops}), settings)
    assert res.status == "invalid"
    assert "link to ./_setup.mdx would break (_setup.mdx is not published: the site builds no page" in (
        res.error or ""
    )


# ----- the rules themselves ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("glob", "lines"),
    [
        ("**/_*.{md,mdx}", ["**/_*.md", "**/_*.mdx"]),
        ("drafts/**", ["/drafts/**"]),
        ("./a/{b,c}/{d,e}.md", ["/a/b/d.md", "/a/b/e.md", "/a/c/d.md", "/a/c/e.md"]),
        ("!keep.md", []),  # a negation is not read
        ("", []),
        ("{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}.md", []),  # 128 patterns: more than a glob makes
        ("{{a,b}}", []),  # nested braces are not read
    ],
)
def test_glob_lines(glob: str, lines: list[str]) -> None:
    assert glob_lines(glob) == lines


def test_rules_see_only_the_folder_they_name(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    assert unpublished_rule("o", root, [root / "x"], "name", ["_*"]) == ("o", (("x", ""),), "name", ("_*",))
    assert unpublished_rule("o", root / "a" / "b", [root], "name", ["_*"]) == (
        "o",
        (("", "a/b"),),
        "name",
        ("_*",),
    )
    assert unpublished_rule("o", root, [tmp_path / "blog"], "name", ["_*"]) is None  # beside the manual
    assert unpublished_rule("o", root, [root], "name", ["", "  ", 3]) is None
    both = unpublished_rule("o", root, [root / "v1", tmp_path / "blog", root / "v2"], "name", ["_*"])
    assert both == ("o", (("v1", ""), ("v2", "")), "name", ("_*",))
    site = Site(generator="starlight", unpublished=(("x", (("x", ""),), "name", ("_*",)),))
    assert site.unpublished_page("x/_a.md") and site.unpublished_page("x/y/_a.mdx")
    assert not site.unpublished_page("_a.md")  # outside the rule's folder
    assert not site.unpublished_page("x/_a.png")  # not a page: bundled with the page that uses it
    assert not site.unpublished_page("../x/_a.md") and not site.unpublished_page("/x/_a.md")


@hsettings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    patterns=st.lists(st.text(alphabet="*?[]!{},/._a-\\", max_size=40), max_size=8),
    path=st.lists(st.text(alphabet="_a.*[]{}", min_size=1, max_size=12), min_size=1, max_size=12),
    style=st.sampled_from(["gitignore", "fnmatch", "name"]),
)
def test_any_pattern_and_path_give_an_answer_quickly(
    patterns: list[str], path: list[str], style: str
) -> None:
    lines = [line for p in patterns for line in glob_lines(p)] if style == "gitignore" else patterns
    rule = unpublished_rule("o", Path("/m"), [Path("/m")], style, lines)
    site = Site(generator="mkdocs", unpublished=(rule,) if rule else ())
    started = time.process_time()
    assert site.unpublished_page("/".join(path) + ".md") in (True, False)
    assert time.process_time() - started < 0.5


def test_mintlify_snippets_mintignore_and_its_own_list(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "docs.json").write_text('{"name": "S"}')
    (site / ".mintignore").write_text("# drafts\ndrafts/\n*.draft.mdx\n!keep.draft.mdx\n")
    settings = site_settings(
        site,
        {
            "index.mdx": (
                "# Home\n\n[a](/snippets/setup) [b](/drafts/x) [c](/a.draft) [d](/keep.draft) "
                "[e](guide/README.md) [f](/guide) [g](/tmp/x)\n"
            ),
            "snippets/setup.mdx": "## Setup\n\n[rel](../guide) [abs](/nowhere)\n",
            "drafts/x.mdx": "# X\n",
            "a.draft.mdx": "# A\n",
            "keep.draft.mdx": "# Kept\n",
            "guide/README.md": "# The guide's readme\n",
            "guide/index.mdx": "# Guide\n",
            "tmp/x.mdx": "# Tmp\n",
        },
    )
    assert page_verdicts(settings, "index.mdx") == {
        "/snippets/setup": False,
        "/drafts/x": False,
        "/a.draft": False,
        "/keep.draft": True,
        "guide/README.md": False,  # Mintlify leaves every README.md out
        "/guide": True,
        "/tmp/x": False,
    }
    assert page_verdicts(settings, "snippets/setup.mdx") == {"../guide": None, "/nowhere": False}
    # A changed .mintignore is read at the next refresh.
    (site / ".mintignore").write_text("")
    assert page_verdicts(settings, "index.mdx")["/drafts/x"] is True


@pytest.mark.parametrize(
    ("line", "unknown"),
    [
        ('--8<-- "part.md:intro"', True),  # a section of the file
        ('--8<-- "part.md:3:10"', True),  # lines of it
        ("--8<--", True),  # a block of names follows
        (';--8<-- "part.md"', False),  # turned off: the line is text
        ('--8<--"part.md"', False),  # no blank between: not a snippet line
        ('--8<-- "code.py"', False),  # not Markdown
        ('<!--\n--8<-- "part.md"\n-->', False),  # in an HTML comment: no heading renders
        ('    --8<-- "part.md"', False),  # indented code
        ('!!! note\n    --8<-- "part.md"', True),  # an admonition's body is Markdown
    ],
)
def test_which_snippet_lines_include_headings(tmp_path: Path, line: str, unknown: bool) -> None:
    docs = _mkdocs(tmp_path, "site_name: S\nmarkdown_extensions:\n  - admonition\n  - pymdownx.snippets\n")
    settings = site_settings(docs, {"index.md": f"# Home\n\nText.\n\n{line}\n\n[x](#run-it)\n"})
    assert page_verdicts(settings, "index.md") == {"#run-it": None if unknown else False}


@pytest.mark.parametrize(
    ("config", "line", "unknown"),
    [
        ("hooks:\n  - docs/plugins/main.py\n", "{{ pydantic_settings }}", True),  # a hook renders it
        ("plugins:\n  - macros\n", "{% include 'part.md' %}", True),  # mkdocs-macros
        ("plugins:\n  - macros\n", "Version {{ version }} here.", False),  # a value in a sentence
        ("plugins:\n  - search\n", "{{ pydantic_settings }}", False),  # nothing renders it: text
    ],
)
def test_a_templated_line_may_render_headings(tmp_path: Path, config: str, line: str, unknown: bool) -> None:
    # Pydantic's settings page is `{{ pydantic_settings }}`, replaced by another project's README by a hook.
    docs = _mkdocs(tmp_path, f"site_name: S\n{config}")
    settings = site_settings(
        docs, {"index.md": f"# Home\n\n{line}\n\n[x](#customise-sources) [y](#nope-here)\n"}
    )
    verdict = None if unknown else False
    assert page_verdicts(settings, "index.md") == {"#customise-sources": verdict, "#nope-here": verdict}


def test_vitepress_and_starlight_leave_out_dot_files(tmp_path: Path) -> None:
    project = tmp_path / "vp"
    (project / ".vitepress").mkdir(parents=True)
    (project / ".vitepress" / "config.mts").write_text("export default { title: 'S' }\n")
    settings = site_settings(
        project,
        {
            "index.md": "# Home\n\n[a](/.drafts/x) [b](/node_modules/p/readme) [c](/dist/y) [d](/x)\n",
            ".drafts/x.md": "# X\n",
            "node_modules/p/readme.md": "# R\n",
            "dist/y.md": "# Y\n",
            "x.md": "# X\n",
        },
    )
    assert page_verdicts(settings, "index.md") == {
        "/.drafts/x": False,
        "/node_modules/p/readme": False,
        "/dist/y": False,
        "/x": True,
    }
    star = tmp_path / "star"
    star.mkdir()
    (star / "astro.config.mjs").write_text("import starlight from '@astrojs/starlight';\nstarlight({});\n")
    site = detect_site(star / "src" / "content" / "docs")
    assert site.unpublished_page(".hidden.md") and site.unpublished_page(".dir/page.md")
    assert not site.unpublished_page("dir/page.md")


def test_mintlify_leaves_out_every_file_of_an_ignored_folder(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "docs.json").write_text('{"name": "S"}')
    (site / ".mintignore").write_text("drafts/\n")
    (site / "drafts").mkdir()
    (site / "drafts" / "diagram.png").write_bytes(b"png")
    (site / "shot.png").write_bytes(b"png")
    settings = site_settings(site, {"index.mdx": "# Home\n\n![d](drafts/diagram.png) ![s](shot.png)\n"})
    assert page_verdicts(settings, "index.mdx") == {"drafts/diagram.png": False, "shot.png": True}


@hsettings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(
        st.builds(
            lambda neg, lead, parts, slash: (
                ("!" if neg else "") + ("/" if lead else "") + "/".join(parts) + slash
            ),
            st.booleans(),
            st.booleans(),
            st.lists(st.sampled_from(["a", "b", "*", "a*", "**", "x.md", "*.md"]), min_size=1, max_size=3),
            st.sampled_from(["", "/"]),
        ),
        min_size=1,
        max_size=5,
    ),
    path=st.lists(st.sampled_from(["a", "b", "ab", "x.md", "y.md"]), min_size=1, max_size=4),
)
def test_exclude_docs_matches_as_pathspec_does(lines: list[str], path: list[str]) -> None:
    # MkDocs reads `exclude_docs` with pathspec's GitIgnoreSpec: checked against the library itself.
    pathspec = pytest.importorskip("pathspec")
    from udm.site.gitignore import last_match_ignored

    rel = "/".join(path)
    assert last_match_ignored(tuple(lines), rel) == pathspec.GitIgnoreSpec.from_lines(lines).match_file(rel)


def test_a_repeated_pattern_counts_at_its_last_place() -> None:
    rule = unpublished_rule(
        "o", Path("/m"), [Path("/m")], "pathspec", ["a.md", "!a.md", "a.md", "b.md", "b.md"]
    )
    assert rule is not None and rule[3] == ("!a.md", "a.md", "b.md")
    assert Site(generator="mkdocs", unpublished=(rule,)).unpublished_page("a.md")
