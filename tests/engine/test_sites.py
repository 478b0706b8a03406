"""Site conventions (issue 18.4): on a fixture of each generator, links to existing pages resolve and
the real broken ones are reported, through the index (full and small refreshes), lint and the validator.

The fixtures under fixtures/sites/ were written for these tests; each holds exactly the broken links
listed in EXPECTED.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from udm.config import Settings, load_settings
from udm.config_types import SITE_GENERATORS
from udm.index import lint
from udm.site import LinkResolver, Routes, resolve_links
from udm.site.routes import detect_site

from .conftest import link_verdicts, page_verdicts, site_settings, write_tree

SITES = Path(__file__).parent / "fixtures" / "sites"

# generator -> (manual root inside the fixture, detected base path, broken findings as (file, rule, target))
EXPECTED: dict[str, tuple[str, str, set[tuple[str, str, str]]]] = {
    "docusaurus": (
        "website",
        "/handbook",
        {
            ("docs/intro.md", "broken-link", "/docs/guide/missing"),
            ("docs/guide/02-configure.md", "broken-anchor", "#nothing-here"),
        },
    ),
    "mkdocs": (
        "",
        "/manual",
        {
            ("docs/index.md", "broken-link", "user-guide/nothing.md"),
            ("docs/user-guide/styling.md", "broken-anchor", "writing.md#fonts"),
        },
    ),
    "mdbook": (
        "",
        "/book",
        {
            ("src/guide/creating.md", "broken-link", "../format/theme.html"),
            ("src/format/config.md", "broken-anchor", "#renderer"),
        },
    ),
    "hugo": (
        "",
        "/site",
        {
            ("content/_index.md", "broken-link", "/posts/nope/"),
            ("content/docs/setup/index.md", "broken-anchor", "#nope"),
        },
    ),
    "mintlify": (
        "",
        "",
        {
            ("index.mdx", "broken-link", "/guides/nope"),
            ("index.mdx", "broken-anchor", "/quickstart#nope"),
        },
    ),
    "jekyll": (
        "",
        "/proj",
        {
            ("_docs/install/other-linux.md", "broken-link", "/docs/missing/"),
            ("_docs/install/other-linux.md", "broken-anchor", "../ubuntu/#nope"),
        },
    ),
    "myst": (
        "",
        "",
        {
            ("index.md", "broken-link", "#nothing-here"),
            ("index.md", "broken-link", "missing-page"),
        },
    ),
    "fumadocs": (
        "web/content",
        "",
        {
            ("docs/index.mdx", "broken-link", "/docs/nope"),
            ("docs/index.mdx", "broken-anchor", "/docs/install#nope"),
        },
    ),
    "nextra": (
        "site",
        "/kb",
        {
            ("app/docs/page.mdx", "broken-link", "/docs/nope"),
            ("app/docs/start/page.mdx", "broken-anchor", "/docs/theming/layout#nope"),
        },
    ),
    "rspress": (
        "site",
        "/kit",
        {
            ("en/index.md", "broken-link", "/guide/nope"),
            ("en/guide/config.mdx", "broken-anchor", "./start#nope"),
        },
    ),
    "vuepress": (
        "docs",
        "/press",
        {
            ("README.md", "broken-link", "/guide/nope.html"),
            ("guide/README.md", "broken-anchor", "../config.md#nope"),
        },
    ),
    "docsify": (
        "docs",
        "",
        {
            ("guide/README.md", "broken-link", "guide/nope.md"),
            ("guide/install.md", "broken-anchor", "#2-setup"),
        },
    ),
    "none": (
        "plain",
        "",
        {
            ("README.md", "broken-link", "docs/nope"),
            ("README.md", "broken-anchor", "docs/guide.md#install"),
        },
    ),
}


def _site_copy(tmp_path: Path, generator: str, root: str | None = None) -> Settings:
    folder = "plain" if generator == "none" else generator
    shutil.copytree(SITES / folder, tmp_path / folder)
    manual = tmp_path / folder / (EXPECTED[generator][0] if root is None else root)
    if generator == "none":
        manual = tmp_path / folder
    return load_settings(cwd=tmp_path, root=manual, state_dir=tmp_path / "state")


def _broken(settings: Settings) -> set[tuple[str, str, str]]:
    found = set()
    for f in lint(settings):
        if f.rule in ("broken-link", "broken-anchor"):
            target = f.message.split("link target ", 1)[-1].split(" ", 1)[0]
            found.add((f.file, f.rule, target))
    return found


@pytest.mark.parametrize("generator", sorted(EXPECTED))
def test_every_link_to_an_existing_page_resolves(tmp_path: Path, generator: str) -> None:
    settings = _site_copy(tmp_path, generator)
    site = detect_site(settings.udm_root, stop=tmp_path)
    assert site.generator == generator and site.base_path == EXPECTED[generator][1]
    targets = link_verdicts(settings)
    broken = {(f, t) for (f, t), ok in targets.items() if ok is False}
    expected = EXPECTED[generator][2]
    # Lint's broken findings name the anchor's target by its fragment; compare by (file, target).
    assert broken == {(f, t) for f, _, t in expected}, broken
    rules = {(f, rule) for f, rule, _ in _broken(settings)}
    assert rules == {(f, rule) for f, rule, _ in expected}


def test_without_the_site_conventions_routes_are_broken(tmp_path: Path) -> None:
    # What the index reported before site conventions: the settings can switch them off.
    settings = _site_copy(tmp_path, "docusaurus")
    plain = settings.model_copy(update={"site_generator": "none"})
    broken_plain = {k for k, ok in link_verdicts(plain).items() if ok is False}
    assert ("docs/intro.md", "/docs/guide/install") in broken_plain
    assert len(broken_plain) > 10
    # The setting changed the site's fingerprint: the next refresh with detection resolves anew.
    assert {k for k, ok in link_verdicts(settings).items() if ok is False} == {
        ("docs/intro.md", "/docs/guide/missing"),
        ("docs/guide/02-configure.md", "#nothing-here"),
    }


def test_a_setting_names_the_generator_and_base_path(tmp_path: Path) -> None:
    settings = _site_copy(tmp_path, "none")
    (settings.udm_root / "docs" / "intro.md").write_text("---\nslug: /welcome\n---\n\n# Intro\n")
    (settings.udm_root / "link.md").write_text("[w](/x/docs/welcome) [p](/x/docs/guide) [i](/x/docs/intro)\n")
    forced = settings.model_copy(update={"site_generator": "docusaurus", "site_base_path": "/x/"})
    targets = link_verdicts(forced)
    assert targets[("link.md", "/x/docs/welcome")] is True
    assert targets[("link.md", "/x/docs/guide")] is True
    assert targets[("link.md", "/x/docs/intro")] is False  # its slug moved it


def test_small_refresh_follows_new_pages_and_slugs(tmp_path: Path) -> None:
    settings = _site_copy(tmp_path, "docusaurus")
    docs = settings.udm_root / "docs"
    assert link_verdicts(settings)[("docs/intro.md", "/docs/guide/missing")] is False
    (docs / "guide" / "03-missing.md").write_text("# Missing\n")
    assert link_verdicts(settings)[("docs/intro.md", "/docs/guide/missing")] is True
    # A slug moved: the links to the old route break, in a file the refresh did not parse.
    cfg = docs / "guide" / "02-configure.md"
    cfg.write_text(cfg.read_text().replace("slug: /custom-place", "slug: /elsewhere"))
    after = link_verdicts(settings)
    assert after[("docs/intro.md", "/docs/custom-place#options")] is False
    cfg.write_text(cfg.read_text().replace("slug: /elsewhere", "slug: /custom-place"))
    assert link_verdicts(settings)[("docs/intro.md", "/docs/custom-place#options")] is True


def test_manual_below_the_site_config_resolves_the_rest_of_the_site_on_disk(tmp_path: Path) -> None:
    settings = _site_copy(tmp_path, "docusaurus", root="website/docs")
    targets = link_verdicts(settings)
    # A post beside the manual, at the route its file's date makes (the blog is not indexed).
    assert targets[("intro.md", "/blog/2024/01/15/launch")] is True
    assert targets[("intro.md", "/about")] is True
    assert targets[("intro.md", "/img/logo.png")] is True
    assert targets[("intro.md", "/docs/guide/install")] is True
    assert targets[("intro.md", "/docs/guide/missing")] is False


@pytest.mark.parametrize(
    ("target", "file"),
    [
        ("/docs/guide/install", "docs/guide/01-install.md"),
        ("/docs/guide/install/", "docs/guide/01-install.md"),
        ("/docs/guide/install.html", "docs/guide/01-install.md"),
        ("/handbook/docs/introduction", "docs/intro.md"),
        ("/docs/old-install", "docs/guide/01-install.md"),
        ("/older/start", "docs/intro.md"),
        ("/docs/api", "docs/api/index.md"),
        ("/blog/2024/01/15/launch", "blog/2024-01-15-launch.md"),
        ("/about", "src/pages/about.md"),
        ("/img/logo.png", "static/img/logo.png"),
    ],
)
def test_docusaurus_routes(tmp_path: Path, target: str, file: str) -> None:
    root = SITES / "docusaurus" / "website"
    site = detect_site(root, stop=SITES)
    pages = [p.relative_to(root).as_posix() for p in root.rglob("*.md")]
    meta = {"docs/intro.md": {"id": "introduction"}, "docs/guide/02-configure.md": {"slug": "/custom-place"}}
    resolver = LinkResolver(Routes(site, pages, meta), lambda rel: (root / rel).is_file())
    assert resolver.locate("docs/intro.md", target).file == file


def test_hugo_module_mounts(tmp_path: Path) -> None:
    (tmp_path / "content" / "en" / "docs").mkdir(parents=True)
    (tmp_path / "hugo.toml").write_text(
        'baseURL = "https://x.example/"\n[module]\n  [[module.mounts]]\n    source = "content/en"\n'
        '    target = "content"\n  [[module.mounts]]\n    source = "assets/img"\n    target = "static/img"\n'
    )
    site = detect_site(tmp_path, stop=tmp_path)
    assert [m.folder for m in site.mounts] == ["content/en"] and "assets/img" in site.static
    routes = Routes(site, ["content/en/docs/setup.md", "content/en/_index.md"])
    resolver = LinkResolver(routes, lambda rel: False)
    assert resolver.locate("content/en/_index.md", "/docs/setup/").file == "content/en/docs/setup.md"


def test_unknown_generator_setting_is_refused(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="site_generator"):
        load_settings(cwd=tmp_path, site_generator="gatsby")


def test_explicit_anchors() -> None:
    from udm.site.routes import has_explicit_anchor

    text = "## macOS {#mac-os}\n\n<div id=\"setup-x\">\n<a name='old'></a>\n"
    assert has_explicit_anchor(text, "mac-os") and has_explicit_anchor(text, "setup-x")
    assert has_explicit_anchor(text, "old")
    assert not has_explicit_anchor(text, "setup") and not has_explicit_anchor(text, "mac")


def test_a_manual_read_on_github_matches_anchors_whatever_their_case(tmp_path: Path) -> None:
    """Kubernetes' community repository links `#Responsibilities-and-privileges`: GitHub's page script
    finds it; a generator's site leaves the match to the browser, which minds the case."""
    files = {
        "b.md": '# B\n\n## Responsibilities and privileges\n\n<a id="Old-Name"></a>\n',
        "index.md": (
            "# Home\n\n[a](b.md#Responsibilities-and-privileges) [b](b.md#old-name) [c](b.md#OLD-NAME)\n"
            "[d](b.md#Nope) [e](#HOME)\n"
        ),
    }
    on_github = site_settings(tmp_path / "plain", files)
    verdicts = page_verdicts(on_github, "index.md")
    assert {t for t, ok in verdicts.items() if ok is not True} == {"b.md#Nope"}
    on_a_site = site_settings(tmp_path / "site", {**files, "mkdocs.yml": "site_name: S\ndocs_dir: .\n"})
    verdicts = page_verdicts(on_a_site, "index.md")
    assert {t for t, ok in verdicts.items() if ok is not True} == {
        "b.md#Responsibilities-and-privileges",
        "b.md#old-name",
        "b.md#OLD-NAME",
        "b.md#Nope",
        "#HOME",
    }


def test_a_manual_read_on_github_links_to_the_rest_of_its_repository(tmp_path: Path) -> None:
    """Electron's docs/ link `../../shell/x/README.md` and `../../DEPS`: GitHub shows every file of the
    repository, so a file above the manual but in it lands; one beyond it is out of reach."""
    (tmp_path / "outside.txt").write_text("x\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    write_tree(repo, {"DEPS": "deps\n", "shell/api/README.md": "# Shell\n", "src/app.ts": "x\n"})
    settings = site_settings(
        repo / "docs",
        {
            "api/page.md": (
                "# Page\n\n[a](../../DEPS) [b](../../shell/api/README.md) [c](../../src) [d](../../missing.gn)\n"
                "[e](../../../outside.txt) [f](../../../../../../etc/passwd)\n"
            ),
        },
    )
    assert detect_site(repo / "docs").repository == ".."
    verdicts = page_verdicts(settings, "api/page.md")
    assert verdicts == {
        "../../DEPS": True,
        "../../shell/api/README.md": True,
        "../../src": True,
        "../../missing.gn": False,
        "../../../outside.txt": False,
        "../../../../../../etc/passwd": False,
    }
    messages = {f.message for f in lint(settings) if f.file == "api/page.md"}
    assert messages == {
        "link target ../../missing.gn does not exist in the repository",
        "link target ../../../outside.txt is outside the UDM root",
        "link target ../../../../../../etc/passwd is outside the UDM root",
    }
    # Climbing to the repository's parent folder itself, or a name holding `..`, is counted right.
    site = detect_site(repo / "docs")
    assert not site.in_repository("../..") and site.in_repository("../a../b")
    # A generator's site publishes only its pages: the same link is broken there.
    write_tree(repo / "docs", {"mkdocs.yml": "site_name: S\ndocs_dir: .\n"})
    assert page_verdicts(site_settings(repo / "docs", {}), "api/page.md")["../../DEPS"] is False


def test_a_text_fragment_is_no_anchor(tmp_path: Path) -> None:
    """Argo CD's docs link `argocd-cm-yaml.md#:~:text=timeout.reconciliation:` (a browser's text
    fragment): the page must exist; an element id before `:~:` is still checked."""
    settings = site_settings(
        tmp_path,
        {
            "cm.md": "# CM\n\n## Setup\n\ntimeout.reconciliation: 180s\n",
            "index.md": (
                "# Home\n\n[a](cm.md#:~:text=timeout.reconciliation:) [b](cm.md#setup:~:text=x)\n"
                "[c](cm.md#nope:~:text=x) [d](gone.md#:~:text=x) [e](#:~:text=Home)\n"
            ),
        },
    )
    verdicts = page_verdicts(settings, "index.md")
    assert verdicts == {
        "cm.md#:~:text=timeout.reconciliation:": True,
        "cm.md#setup:~:text=x": True,
        "cm.md#nope:~:text=x": False,
        "gone.md#:~:text=x": False,
        "#:~:text=Home": True,
    }


def test_an_attributes_character_references_are_decoded() -> None:
    from udm.site.anchors import explicit_anchors, has_explicit_anchor

    # typedoc's HTML in MCP's schema pages: `id="result-&#x5F;meta"` is the anchor #result-_meta.
    text = '<div id="result-&#x5F;meta">x</div> <a name=\'a&amp;b\'></a> <p id="&#58;x&colon;">y</p>\n'
    assert explicit_anchors(text) == {"result-_meta", "a&b", ":x:"}
    assert has_explicit_anchor(text, "result-_meta") and not has_explicit_anchor(text, "result-&#x5F;meta")
    # An id written as `{#...}` is no HTML attribute: its text is the anchor as it stands.
    assert explicit_anchors("## T {#a&amp;b}\n") == {"a&amp;b"}


def test_an_anchor_shown_as_an_example_is_none() -> None:
    from udm.site.routes import has_explicit_anchor

    shown = {
        "fence": '```html\n<a id="x"></a>\n```\n',
        "tilde fence in a list": "- item\n\n  ~~~md\n  ## T {#x}\n  ~~~\n",
        "code span": 'Write `<a name="x">` so.\n',
        "comment": "<!-- {#x} -->\n",
    }
    for name, text in shown.items():
        assert not has_explicit_anchor(text, "x"), name
    written = {
        "a fence's attribute list": "``` { .sh #x }\nmake\n```\n",
        "indented JSX in MDX": '<Tabs>\n    <h2 id="x">T</h2>\n</Tabs>\n',
        "after a code span": '`code` then <a id="x"></a>\n',
        "non-ASCII before it": '`é` ```x``` <span id="x">é</span>\n',
    }
    for name, text in written.items():
        assert has_explicit_anchor(text, "x"), name


def test_mdx_comment_heading_ids(tmp_path: Path) -> None:
    # react.dev writes each heading's id as an MDX comment after it; its build makes that the anchor.
    manual = tmp_path / "content"
    (manual / "learn").mkdir(parents=True)
    (manual / "learn" / "state.md").write_text(
        "## Updates to Strict Mode {/*updates-to-strict-mode*/}\n\n"
        "### Fixing bugs {/* fixing-bugs */}\n\n[here](#updates-to-strict-mode) [gone](#strict-mode)\n"
    )
    (manual / "index.md").write_text("[a](/learn/state#fixing-bugs) [b](learn/state.md#fixing)\n")
    settings = load_settings(cwd=tmp_path, root=manual, state_dir=tmp_path / "state")
    broken = {k for k, ok in link_verdicts(settings).items() if ok is False}
    assert broken == {("learn/state.md", "#strict-mode"), ("index.md", "learn/state.md#fixing")}


def test_bare_hash_is_the_top_of_the_page(tmp_path: Path) -> None:
    settings = _site_copy(tmp_path, "none")
    assert link_verdicts(settings).get(("README.md", "#"), True) is True
    resolver = LinkResolver(Routes(detect_site(settings.udm_root, "none"), ["README.md"]), lambda rel: False)
    verdicts = resolve_links(resolver, [(0, "README.md", "#", "inline")], lambda pairs: set())
    assert verdicts == [(0, "README.md", None, True)]


_SEGMENT = st.from_regex(r"(?:\d{2}-)?[a-z][a-z0-9-]{0,8}", fullmatch=True)


@settings(max_examples=60, deadline=None)
@given(
    paths=st.lists(
        st.tuples(st.lists(_SEGMENT, max_size=3), _SEGMENT, st.sampled_from([".md", ".mdx"])),
        min_size=1,
        max_size=12,
    ),
    generator=st.sampled_from(["none", "docusaurus", "mintlify", "mkdocs", "mdbook", "hugo"]),
)
def test_every_page_is_reached_by_its_route_and_its_path(
    paths: list[tuple[list[str], str, str]], generator: str
) -> None:
    site = detect_site(Path("/nonexistent-site-root"), generator)
    folder = site.mounts[0].folder  # docs/, src/, content/: the generator's own content folder
    pages = sorted(
        {"/".join([*([folder] if folder else []), *dirs, name + suffix]) for dirs, name, suffix in paths}
    )
    routes = Routes(site, pages)
    resolver = LinkResolver(routes, lambda rel: rel in pages)
    owners: dict[str | None, list[str]] = {}
    for page in pages:
        owners.setdefault(routes.page_route(page), []).append(page)
    source = pages[0]
    for page in pages:
        up = "/".join([".."] * source.count("/"))
        assert resolver.locate(source, f"{up}/{page}" if up else page).file == page
        route = routes.page_route(page)
        assert route is not None
        if len(owners[route]) == 1:
            # A route two pages share (a.md and a/index.md) reaches one of them; any other reaches its own.
            assert resolver.locate(source, "/" + route).file == page, (route, page)


def test_headings_in_block_quotes_and_list_items_have_anchors(tmp_path: Path) -> None:
    # MkDocs' configuration page documents options as `> #### custom_dir` inside block quotes; such
    # headings start no section, but every renderer gives them an id a link may name.
    manual = tmp_path / "docs"
    manual.mkdir()
    (manual / "config.md").write_text(
        "# Configuration\n\n### theme\n\n> #### custom_dir\n>\n> A folder of overrides.\n\n"
        "- #### In a list item\n\n  Text.\n\n> Setext in a quote\n> ---\n"
    )
    (manual / "index.md").write_text(
        "[a](config.md#custom_dir) [b](config.md#in-a-list-item) [c](config.md#setext-in-a-quote)\n"
        "[d](config.md#theme) [e](config.md#custom-dir)\n"
    )
    settings = load_settings(cwd=tmp_path, root=manual, state_dir=tmp_path / "state")
    targets = link_verdicts(settings)
    assert {t for (f, t), ok in targets.items() if f == "index.md" and ok is False} == {
        "config.md#custom-dir"
    }
    assert {f.message for f in lint(settings) if f.rule == "broken-anchor"} == {
        "no heading with anchor #custom-dir in config.md"
    }


def test_a_plain_manual_may_link_a_folder_as_github_lists_it(tmp_path: Path) -> None:
    manual = tmp_path / "repo"
    (manual / "guides" / "templates").mkdir(parents=True)
    (manual / "guides" / "templates" / "alias.md").write_text("# Alias\n")
    (manual / "README.md").write_text(
        "[templates](guides/templates) [slash](guides/templates/) [none](guides/nothing/)\n"
    )
    settings = load_settings(cwd=tmp_path, root=manual, state_dir=tmp_path / "state")
    targets = link_verdicts(settings)
    assert targets[("README.md", "guides/templates")] is True
    assert targets[("README.md", "guides/templates/")] is True
    assert targets[("README.md", "guides/nothing/")] is False
    # A generator publishes no folder listing: there the same link is broken.
    (manual / "mkdocs.yml").write_text("site_name: x\ndocs_dir: .\n")
    assert link_verdicts(settings)[("README.md", "guides/templates")] is False


def test_new_link_rules_re_resolve_an_index_of_unchanged_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The verdicts are stored: an upgrade that resolves some link otherwise must not keep the old ones.
    import udm.site.model as model

    manual = tmp_path / "repo"
    (manual / "guides").mkdir(parents=True)
    (manual / "README.md").write_text("[guides](guides)\n")
    settings = load_settings(cwd=tmp_path, root=manual, state_dir=tmp_path / "state")
    assert link_verdicts(settings)[("README.md", "guides")] is True
    monkeypatch.setattr(model, "RULES_VERSION", model.RULES_VERSION + 1)
    (manual / "guides").rmdir()  # a folder: no file the index holds changed
    assert link_verdicts(settings)[("README.md", "guides")] is False


def test_hugo_definition_terms_have_ids_when_its_config_says(tmp_path: Path) -> None:
    # autoDefinitionTermID (hugoDocs sets it): `publishDir` then `: ...` is a <dt id="publishdir">.
    settings = _site_copy(tmp_path, "hugo")
    assert detect_site(settings.udm_root, stop=tmp_path).term_ids
    (settings.udm_root / "content" / "posts" / "first-post.md").write_text(
        "# First\n\n[dir](/about-us/#publishdir) [url](/about-us/#baseurl) [no](/about-us/#nodir)\n"
    )
    targets = link_verdicts(settings)
    assert targets[("content/about.md", "#publishdir")] is True
    assert targets[("content/posts/first-post.md", "/about-us/#publishdir")] is True
    assert targets[("content/posts/first-post.md", "/about-us/#baseurl")] is True
    assert targets[("content/posts/first-post.md", "/about-us/#nodir")] is False
    config = settings.udm_root / "hugo.toml"
    config.write_text(
        config.read_text().replace("autoDefinitionTermID = true", "autoDefinitionTermID = false")
    )
    assert link_verdicts(settings)[("content/about.md", "#publishdir")] is False


def test_own_ids_read_as_the_generators_read_them() -> None:
    from udm.site import explicit_anchors

    # `{#sec .cls}` gives the id `sec` (attr_list); a `<!--` shown in code starts no comment.
    assert explicit_anchors("## Head {#sec .cls}\n") == {"sec"}
    text = 'Write `<!--` to open one.\n\n<a id="real"></a>\n\n```mermaid\nA --> B\n```\n'
    assert explicit_anchors(text) == {"real"}
    assert explicit_anchors("<!-- <a id='gone'></a> -->\n<a id='kept'></a>\n") == {"kept"}


@pytest.mark.parametrize("generator", SITE_GENERATORS)
def test_every_generator_is_a_setting_and_its_conventions_apply(tmp_path: Path, generator: str) -> None:
    # The setting's choices and the generators the site reads are one list: naming any applies it.
    write_tree(tmp_path / "docs", {"index.md": "# Home\n\n[a](a.md)\n", "a.md": "# A\n"})
    settings = load_settings(cwd=tmp_path, root="docs", state_dir="state", site_generator=generator)
    site = detect_site(settings.udm_root, generator, stop=tmp_path)
    assert site.generator == ("none" if generator == "auto" else generator)
    assert page_verdicts(settings, "index.md") == {"a.md": True}
