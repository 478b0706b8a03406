"""mkdocs.yml's `INHERIT`: a config (a translation's, fastapi's docs/<lang>/mkdocs.yml) takes its
parent's settings, merged as MkDocs merges them; what it names must stay in the repository."""

from __future__ import annotations

from pathlib import Path

from udm.config import load_settings
from udm.site import Site, settings_site

from .conftest import write_tree as _write

PARENT = (
    "site_name: Base\nmarkdown_extensions:\n  - admonition\n  - pymdownx.tabbed\n"
    "plugins:\n  - search\n  - autorefs\n"
    "theme:\n  name: material\n  features: [a, b]\n"
)


def _site(tmp_path: Path, files: dict[str, str], root: str = "docs/es") -> Site:
    (tmp_path / ".git").mkdir(parents=True, exist_ok=True)
    _write(tmp_path, files)
    where = tmp_path / root
    return settings_site(load_settings(cwd=where, root=where, state_dir=tmp_path / ".st"))


def test_a_translation_takes_its_parents_settings(tmp_path: Path) -> None:
    site = _site(
        tmp_path,
        {
            "docs/en/mkdocs.yml": PARENT,
            "docs/es/mkdocs.yml": "INHERIT: ../en/mkdocs.yml\nsite_name: Base (es)\ndocs_dir: pages\n",
            "docs/es/pages/index.md": "# Hola\n",
        },
    )
    assert site.generator == "mkdocs" and site.problems == ()
    assert site.indented == ("!!!", "===") and site.autorefs == "headings"
    # docs_dir is the child's, relative to the child's own folder.
    assert [m.folder for m in site.mounts] == ["pages"]


def test_a_child_list_replaces_the_parents_and_chains_are_followed(tmp_path: Path) -> None:
    site = _site(
        tmp_path,
        {
            "base.yml": PARENT,
            "docs/en/mkdocs.yml": "INHERIT: ../../base.yml\nplugins:\n  - search\n",
            "docs/es/mkdocs.yml": "INHERIT: ../en/mkdocs.yml\n",
        },
    )
    assert site.autorefs == ""  # the middle config's plugin list replaced the base's
    assert site.indented == ("!!!", "===")  # the base's extensions, two levels up


def test_what_inherit_names_must_be_a_readable_config_in_the_repository(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "mkdocs.yml"
    outside.parent.mkdir()
    outside.write_text(PARENT)
    repo = tmp_path / "repo"
    cases = {
        "../../../../elsewhere/mkdocs.yml": "outside the site's repository, not read",
        "../en/missing.yml": "no such file, not read",
        "../es/mkdocs.yml": "a loop, not followed",
        "../en/list.yml": "not a mapping, not read",
    }
    for n, (named, problem) in enumerate(cases.items()):
        site = _site(
            repo / str(n),
            {"docs/en/list.yml": "- a\n- b\n", "docs/es/mkdocs.yml": f"INHERIT: {named}\nsite_name: X\n"},
        )
        assert site.generator == "mkdocs"
        assert site.indented == () and site.autorefs == "", named
        assert any(problem in p for p in site.problems), (named, site.problems)


def test_a_config_of_another_name_is_named_by_a_setting(tmp_path: Path) -> None:
    # Textual's docs build with `mkdocs build --config-file mkdocs-online.yml`, which INHERITs the rest.
    (tmp_path / ".git").mkdir()
    _write(
        tmp_path,
        {
            "mkdocs-common.yml": PARENT,
            "mkdocs-online.yml": "INHERIT: mkdocs-common.yml\nsite_url: https://x.example/\n",
            "docs/index.md": "# Home\n",
        },
    )
    docs = tmp_path / "docs"

    def site(**fields: str) -> Site:
        return settings_site(load_settings(cwd=tmp_path, root=docs, state_dir=tmp_path / ".st", **fields))

    assert site().generator == "none"  # no mkdocs.yml: nothing to detect
    named = site(site_config="mkdocs-online.yml")
    assert named.generator == "mkdocs" and named.indented == ("!!!", "===")
    assert named.config_file == str(tmp_path / "mkdocs-online.yml")
    assert [m.folder for m in named.mounts] == [""]  # docs_dir: docs, the manual itself
    # Editing the parent config is noticed: the site is read again.
    (tmp_path / "mkdocs-common.yml").write_text(PARENT.replace("  - admonition\n", ""))
    assert site(site_config="mkdocs-online.yml").indented == ("===",)
    # A name that tells no generator, or no file, is a problem of the site, not an error.
    (tmp_path / "site.yml").write_text(PARENT)
    assert "set site_generator" in site(site_config="site.yml").problems[0]
    assert site(site_config="site.yml", site_generator="mkdocs").indented == ("!!!", "===")
    missing = site(site_config="nowhere/mkdocs.yml")
    assert missing.generator == "mkdocs" and "names no file" in missing.problems[0]


def test_an_inherited_config_that_cannot_be_read_or_merged_leaves_the_child(tmp_path: Path) -> None:
    import time

    bad = _site(
        tmp_path / "bad",
        {
            "docs/en/mkdocs.yml": "markdown_extensions: [admonition\n",
            "docs/es/mkdocs.yml": "INHERIT: ../en/mkdocs.yml\nmarkdown_extensions:\n  - pymdownx.tabbed\n",
        },
    )
    assert bad.indented == ("===",) and "cannot read it" in bad.problems[0]
    # Aliases that make two small configs a huge tree to merge: bounded, and the child is kept.
    laughs = "a: &a {x: 1, y: 1}\n" + "".join(
        f"{chr(98 + k)}: &{chr(98 + k)} {{p: *{chr(97 + k)}, q: *{chr(97 + k)}, r: *{chr(97 + k)}}}\n"
        for k in range(12)
    )
    start = time.perf_counter()
    big = _site(
        tmp_path / "big",
        {
            "docs/en/mkdocs.yml": laughs,
            "docs/es/mkdocs.yml": "INHERIT: ../en/mkdocs.yml\n"
            + laughs
            + "markdown_extensions: [admonition]\n",
        },
    )
    assert time.perf_counter() - start < 3
    assert big.indented == ("!!!",) and "keys to merge" in big.problems[0]
