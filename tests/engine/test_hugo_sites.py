"""Hugo sites as real ones are set up (found on public Hugo/Docsy sites, re-created here): a YAML or
JSON config, a config folder, a content folder per language, and heading ids of another type.

Each fixture is written by the test; each holds exactly the broken links it asserts.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from udm.config import load_settings
from udm.site.anchors import blackfriday_slug, github_ascii_slug
from udm.site.routes import detect_site

from .conftest import link_verdicts, site_settings
from .conftest import write_tree as _write

# A Docsy-style multilingual site: each language has its own content folder; English at the root.
MULTILINGUAL = {
    "content/en/_index.md": "# Home\n\n[Quick start](/docs/start/) [Chinese](/zh/docs/start/) [logo](/img/logo.png)\n",
    "content/en/docs/_index.md": "# Docs\n\n[start](start/) [missing](/docs/nope/)\n",
    "content/en/docs/start.md": "# Start\n\n## Install it\n\n[back](../) [up](/docs/) [here](#install-it)\n",
    "content/zh/docs/start.md": "# 开始\n\n[英文](/docs/start/)\n",
    "static/img/logo.png": "png",
}


@pytest.mark.parametrize(
    ("name", "config"),
    [
        (
            "config.yaml",
            "baseURL: https://fixture.example/\ndefaultContentLanguage: en\nlanguages:\n"
            "  en:\n    contentDir: content/en\n    weight: 1\n  zh:\n    contentDir: content/zh\n",
        ),
        (
            "hugo.json",
            '{"baseURL": "https://fixture.example/", "languages": {"en": {"contentDir": "content/en"},'
            ' "zh": {"contentDir": "content/zh"}}}',
        ),
        (
            "hugo.toml",
            'baseURL = "https://fixture.example/"\n[languages.en]\ncontentDir = "content/en"\n'
            '[languages.zh]\ncontentDir = "content/zh"\n',
        ),
    ],
)
def test_content_folder_per_language(tmp_path: Path, name: str, config: str) -> None:
    _write(tmp_path, {**MULTILINGUAL, name: config})
    site = detect_site(tmp_path, stop=tmp_path)
    assert site.generator == "hugo" and site.config_file == str(tmp_path / name)
    assert sorted((m.folder, m.prefix) for m in site.mounts) == [("content/en", ""), ("content/zh", "zh")]
    settings = load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / ".udm-state")
    broken = {k for k, ok in link_verdicts(settings).items() if ok is False}
    assert broken == {("content/en/docs/_index.md", "/docs/nope/")}


def test_a_language_content_folder_as_the_manual_root(tmp_path: Path) -> None:
    # The manual is content/en; the site config sits two folders up.
    _write(
        tmp_path,
        {
            **MULTILINGUAL,
            "config.yaml": "baseURL: /\nlanguages:\n  en:\n    contentDir: content/en\n",
        },
    )
    settings = load_settings(cwd=tmp_path, root=tmp_path / "content" / "en", state_dir=tmp_path / "st")
    verdicts = link_verdicts(settings)
    assert verdicts[("docs/start.md", "/docs/")] is True
    assert verdicts[("_index.md", "/img/logo.png")] is True
    assert verdicts[("docs/_index.md", "/docs/nope/")] is False


def test_module_mounts_per_language(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            **MULTILINGUAL,
            "hugo.yaml": "baseURL: /\ndefaultContentLanguage: en\nmodule:\n  mounts:\n"
            "    - {source: content/en, target: content, lang: en}\n"
            "    - {source: content/zh, target: content, lang: zh}\n",
        },
    )
    site = detect_site(tmp_path, stop=tmp_path)
    assert sorted((m.folder, m.prefix) for m in site.mounts) == [("content/en", ""), ("content/zh", "zh")]


def test_config_folder(tmp_path: Path) -> None:
    # Hugo's config folder: config/_default/hugo.toml plus one file per top-level key.
    _write(
        tmp_path,
        {
            **MULTILINGUAL,
            "config/_default/hugo.toml": 'baseURL = "https://fixture.example/guide/"\n',
            "config/_default/languages.toml": '[en]\ncontentDir = "content/en"\n[zh]\ncontentDir = "content/zh"\n',
            "config/_default/markup.yaml": "goldmark:\n  parser:\n    autoHeadingIDType: blackfriday\n",
            "config/_default/menus.en.toml": "[[main]]\nname = 'x'\n",
        },
    )
    site = detect_site(tmp_path, stop=tmp_path)
    assert site.generator == "hugo" and site.base_path == "/guide"
    assert sorted((m.folder, m.prefix) for m in site.mounts) == [("content/en", ""), ("content/zh", "zh")]
    assert site.heading_ids == "blackfriday"


def test_a_config_yaml_of_another_tool_is_not_hugo(tmp_path: Path) -> None:
    _write(tmp_path, {"config.yaml": "name: build\nsteps:\n  - run: make\n", "index.md": "# x\n"})
    assert detect_site(tmp_path, stop=tmp_path).generator == "none"


_ALIAS_BOMB = (
    "a: &l0 ["
    + ",".join(["x"] * 50)
    + "]\n"
    + "".join(f"l{i}: &l{i} [*l{i - 1}, *l{i - 1}]\n" for i in range(1, 30))
    + "baseURL: /\n"
)


@pytest.mark.parametrize(
    ("text", "generator"),
    [
        # Aliases are shared, never copied, and only top-level keys are read: Hugo's, read at once.
        (_ALIAS_BOMB, "hugo"),
        # Nesting past the limits and text that is no YAML: not Hugo's, quietly.
        ("baseURL: /\nx: " + "[" * 5000 + "]" * 5000 + "\n", "none"),
        ("baseURL: [\n", "none"),
    ],
)
def test_a_hostile_config_yaml_is_contained(tmp_path: Path, text: str, generator: str) -> None:
    _write(tmp_path, {"config.yaml": text, "index.md": "# x\n\n[a](/nope)\n"})
    started = time.monotonic()
    assert detect_site(tmp_path, stop=tmp_path).generator == generator
    assert time.monotonic() - started < 5
    settings = load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / ".st")
    assert link_verdicts(settings)[("index.md", "/nope")] is False


def test_blackfriday_heading_ids(tmp_path: Path) -> None:
    # Kubernetes' site sets autoHeadingIDType = "blackfriday": punctuation runs are one hyphen.
    _write(
        tmp_path,
        {
            "hugo.toml": 'baseURL = "/"\n[markup.goldmark.parser]\nautoHeadingIDType = "blackfriday"\n',
            "content/docs/upgrade.md": "# Upgrade\n\n## Upgrade to v1.2\n\n## The foo_bar flag\n\n"
            "## Pods & nodes\n\n## Pods & nodes\n",
            "content/_index.md": "[a](/docs/upgrade/#upgrade-to-v1-2) [b](/docs/upgrade/#the-foo-bar-flag) "
            "[c](/docs/upgrade/#pods-nodes) [d](/docs/upgrade/#pods-nodes-1) [e](/docs/upgrade/#upgrade-to-v12x)\n",
        },
    )
    settings = load_settings(cwd=tmp_path, root=tmp_path / "content", state_dir=tmp_path / ".st")
    broken = {k for k, ok in link_verdicts(settings).items() if ok is False}
    assert broken == {("_index.md", "/docs/upgrade/#upgrade-to-v12x")}


@pytest.mark.parametrize(
    ("text", "blackfriday", "ascii"),
    [
        ("Upgrade to v1.2", "upgrade-to-v1-2", "upgrade-to-v12"),
        ("The foo_bar flag", "the-foo-bar-flag", "the-foo_bar-flag"),
        ("  Pods & nodes!  ", "pods-nodes", "pods--nodes"),
        ("Café überall", "café-überall", "cafe-uberall"),
        ("日本語 docs", "日本語-docs", "-docs"),
    ],
)
def test_hugo_heading_id_rules(text: str, blackfriday: str, ascii: str) -> None:
    assert blackfriday_slug(text) == blackfriday
    assert github_ascii_slug(text) == ascii


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_blackfriday_ids_are_words_joined_by_one_hyphen(text: str) -> None:
    slug = blackfriday_slug(text)
    assert "--" not in slug and not slug.startswith("-") and not slug.endswith("-")
    assert slug == slug.lower() or any(ch.lower() != ch for ch in slug.lower())
    assert all(ch == "-" or ch.isalpha() or ch.isnumeric() for ch in slug)
    assert github_ascii_slug(text).isascii()


def test_a_shortcode_heading_leaves_the_page_anchors_unknown(tmp_path: Path) -> None:
    # Kubernetes' pages: `## {{% heading "prerequisites" %}}` renders as "Before you begin" through the
    # site's templates and translations; a link to #before-you-begin is not known to be broken.
    _write(
        tmp_path,
        {
            "hugo.toml": 'baseURL = "/"\n',
            "content/docs/task.md": '# Task\n\n## {{% heading "prerequisites" %}}\n\nText.\n\n## Steps\n',
            "content/docs/plain.md": "# Plain\n\n## Steps\n",
            "content/_index.md": "[a](/docs/task/#before-you-begin) [b](/docs/task/#steps) "
            "[c](/docs/plain/#before-you-begin) [d](/docs/task/)\n",
        },
    )
    settings = load_settings(cwd=tmp_path, root=tmp_path / "content", state_dir=tmp_path / ".st")
    verdicts = link_verdicts(settings)
    assert verdicts[("_index.md", "/docs/task/#before-you-begin")] is None
    assert verdicts[("_index.md", "/docs/task/#steps")] is True
    assert verdicts[("_index.md", "/docs/plain/#before-you-begin")] is False
    from udm.index import lint

    broken = [(f.file, f.message) for f in lint(settings) if f.rule in ("broken-link", "broken-anchor")]
    assert broken == [("_index.md", "no heading with anchor #before-you-begin in docs/plain.md")]


@pytest.mark.parametrize(
    ("config", "folders", "generator"),
    [
        ("theme: dark\nmodule: {x: 1}\n", [], "none"),  # another tool's words
        ("theme: docsy\n", ["content"], "hugo"),  # a Hugo site's folder
        ("theme: docsy\n", ["layouts"], "hugo"),
        ("languageCode: en-us\n", [], "hugo"),
    ],
)
def test_common_words_in_a_config_yaml(
    tmp_path: Path, config: str, folders: list[str], generator: str
) -> None:
    _write(tmp_path, {"config.yaml": config, "index.md": "# x\n"})
    for folder in folders:
        (tmp_path / folder).mkdir()
    assert detect_site(tmp_path, stop=tmp_path).generator == generator


@pytest.mark.parametrize(
    ("config", "root"),
    [
        ({"hugo.toml": 'baseURL = "/"\n'}, "content"),
        ({"mkdocs.yml": "site_name: x\nmarkdown_extensions:\n  - attr_list\n"}, "docs"),
    ],
)
def test_a_heading_attribute_list_is_no_text(tmp_path: Path, config: dict[str, str], root: str) -> None:
    # opentelemetry.io: `## `Easy CLA` {.notranslate lang=en}` is #easy-cla on the site.
    _write(
        tmp_path,
        {
            **config,
            f"{root}/checks.md": "# Checks\n\n## Spell check {.notranslate lang=en}\n\n## Setup { .note }\n\n"
            "## Named {#own-id .x}\n\n[a](#spell-check) [b](#setup) [c](#own-id) [d](#spell-check-notranslate-langen)"
            " [e](#nope)\n",
        },
    )
    settings = load_settings(cwd=tmp_path, root=tmp_path / root, state_dir=tmp_path / ".st")
    broken = {t for (f, t), ok in link_verdicts(settings).items() if ok is False}
    # The GitHub anchor of the whole line is still accepted, leniently.
    assert broken == {"#nope"}


def test_a_language_without_a_folder_has_the_sites_and_no_is_norwegian(tmp_path: Path) -> None:
    # Docsy's example site: English in the top-level contentDir, Norwegian under an unquoted `no:`.
    _write(
        tmp_path,
        {
            "hugo.yaml": (
                "baseURL: /\ncontentDir: content/en\nlanguages:\n  en:\n    title: T\n"
                "  no:\n    contentDir: content/no\n"
            ),
            "content/en/docs/a.md": "# A\n\n[b](/docs/b/) [norsk](/no/docs/c/)\n",
            "content/en/docs/b.md": "# B\n",
            "content/no/docs/c.md": "# C\n\n[a](/docs/a/) [gone](/no/docs/a/)\n",
        },
    )
    site = detect_site(tmp_path, stop=tmp_path)
    assert sorted((m.folder, m.prefix, m.lang) for m in site.mounts) == [
        ("content/en", "", "en"),
        ("content/no", "no", "no"),
    ]
    settings = load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / ".udm-state")
    broken = {k for k, ok in link_verdicts(settings).items() if ok is False}
    assert broken == {("content/no/docs/c.md", "/no/docs/a/")}


def test_pages_hugo_makes_without_a_content_file(tmp_path: Path) -> None:
    # flux's home page is no Markdown file; docsy.dev links its tag pages and feeds.
    settings = site_settings(
        tmp_path,
        {
            "hugo.toml": 'baseURL = "/"\n[taxonomies]\n  tag = "tags"\n  topic = "topics"\n',
            "content/blog/post.md": "# Post\n",
            "content/docs/deep/page.md": (
                "# Page\n\n[home](/) [home anchor](/#calendar) [blog](/blog/) [feed](/blog/index.xml)\n"
                "[site feed](/index.xml) [sitemap](/sitemap.xml) [topic](/topics/hugo/) [tags](/tags/)\n"
                "[deep section](/docs/deep/) [no such section](/nothing/) [categories](/categories/x/)\n"
            ),
        },
    )
    broken = {k[1] for k, ok in link_verdicts(settings).items() if ok is False}
    # A nested folder without `_index.md` makes no page; `categories` is not a taxonomy of this site.
    assert broken == {"/docs/deep/", "/nothing/", "/categories/x/"}


@pytest.mark.parametrize(
    "config",
    [
        # Hugo 0.112 and later, as linkerd.io writes it in config/_default/permalinks.yaml.
        'baseURL = "/"\n[permalinks.page]\n  blog = "/:year/:month/:day/:slug/"\n',
        # The older form: a section's pages.
        'baseURL = "/"\n[permalinks]\n  blog = "/:year/:month/:day/:slug/"\n',
    ],
)
def test_permalinks_route_dated_posts(tmp_path: Path, config: str) -> None:
    settings = site_settings(
        tmp_path,
        {
            "hugo.toml": config,
            "content/blog/2020/0217-multicluster/index.md": (
                "---\ndate: 2020-02-17T00:00:00Z\nslug: multicluster-kubernetes\ntitle: Multicluster\n---\n# M\n"
            ),
            "content/blog/2020/envoy.md": "---\ndate: 2020-12-03\ntitle: Why Linkerd doesn't use Envoy\n---\n# E\n",
            "content/docs/a.md": (
                "# A\n\n[mc](/2020/02/17/multicluster-kubernetes/) [envoy](/2020/12/03/why-linkerd-doesnt-use-envoy/)\n"
                "[old path](/blog/2020/envoy/)\n"
            ),
        },
    )
    broken = {k[1] for k, ok in link_verdicts(settings).items() if ok is False}
    assert broken == {"/blog/2020/envoy/"}


def test_a_permalink_token_not_modelled_leaves_the_path_route(tmp_path: Path) -> None:
    settings = site_settings(
        tmp_path,
        {
            "hugo.toml": 'baseURL = "/"\n[permalinks]\n  blog = "/:weekday/:slug/"\n',
            "content/blog/post.md": "---\ndate: 2020-12-03\ntitle: Post\n---\n# P\n",
            "content/a.md": "# A\n\n[post](/blog/post/)\n",
        },
    )
    assert link_verdicts(settings) == {("content/a.md", "/blog/post/"): True}
