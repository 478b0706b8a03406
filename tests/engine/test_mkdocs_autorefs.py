"""mkdocs-autorefs cross-references (`[title][identifier]`, `[title][]` that no reference definition
defines) are links on a MkDocs site with the autorefs or mkdocstrings plugin, resolved against every
page's anchors (conventions found on pydantic's docs, re-created here in fixtures written by the test)."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from udm.config import Settings
from udm.index import UdmIndex
from udm.markdown import parse_document
from udm.site import autoref_ids, settings_site

from .conftest import link_verdicts, parse_seconds, site_settings

_PAGES = {
    "docs/guide.md": (
        "# Guide\n\n## Hello, world!\n\n## Setup { #custom-setup }\n\nAn anchor: [](){#markdown-anchor}\n"
    ),
    "docs/other.md": "# Other\n\n## Hello, world!\n",
    "docs/index.md": (
        "# Home\n\n"
        "[hi][hello-world] [set][custom-setup] [md][markdown-anchor] [Hello, world!][]\n"
        "[`hello-world`][] [gone][no-such-heading] [api][pkg.Model.dump] [defined][d]\n"
        "![img][hello-world] `[code][hello-world]` \\[esc][hello-world] [wrapped\ntitle][hello-world]\n\n"
        "    [indented][hello-world]\n\n"
        "[d]: guide.md\n"
    ),
}


def _site(tmp_path: Path, plugins: str) -> Settings:
    return site_settings(tmp_path, {"mkdocs.yml": f"site_name: F\nplugins:\n{plugins}", **_PAGES})


def _home(verdicts: dict[tuple[str, str], bool | None]) -> dict[str, bool | None]:
    return {t: ok for (f, t), ok in verdicts.items() if f == "docs/index.md"}


def test_the_plugins_choose_how_cross_references_resolve(tmp_path: Path) -> None:
    cases = {
        "  - search\n": "",
        "  - search\n  - autorefs\n": "headings",
        "  - search\n  - mkdocstrings:\n      handlers: {python: {}}\n": "objects",
    }
    for n, (plugins, mode) in enumerate(cases.items()):
        settings = _site(tmp_path / str(n), plugins)
        assert settings_site(settings).autorefs == mode
    # MkDocs' other form: one mapping of plugin names to their options.
    settings = _site(tmp_path / "map", "  search: {}\n  autorefs: {}\n")
    assert settings_site(settings).autorefs == "headings"


def test_autorefs_alone_resolve_headings_and_anchors_of_any_page(tmp_path: Path) -> None:
    home = _home(link_verdicts(_site(tmp_path, "  - autorefs\n")))
    assert home == {
        "[hello-world]": True,  # a heading of two pages: autorefs picks one
        "[custom-setup]": True,  # an attribute list's id
        "[markdown-anchor]": True,  # a Markdown anchor `[](){#id}`
        "[Hello, world!][]": True,  # the title's slug
        "[`hello-world`][]": True,  # a code title is the identifier itself
        "[no-such-heading]": False,
        "[pkg.Model.dump]": False,  # no mkdocstrings: only the site's anchors can be meant
        "guide.md": True,  # [defined][d]: an ordinary reference link
    }


def test_with_mkdocstrings_an_identifier_no_page_holds_is_unknown(tmp_path: Path) -> None:
    plugins = "  - mkdocstrings\n"
    home = _home(link_verdicts(_site(tmp_path, plugins)))
    assert home["[hello-world]"] is True
    assert home["[no-such-heading]"] is None
    assert home["[pkg.Model.dump]"] is None
    assert home["guide.md"] is True


def test_without_the_plugin_a_missing_reference_is_text(tmp_path: Path) -> None:
    home = _home(link_verdicts(_site(tmp_path, "  - search\n")))
    assert home == {"guide.md": True}


def test_cross_references_are_found_where_python_markdown_finds_them() -> None:
    doc = parse_document(_PAGES["docs/index.md"], "docs/index.md", autorefs=True)
    found = [(link.line, link.text, link.target, link.form) for link in doc.links]
    assert found == [
        (2, "hi", "[hello-world]", "autoref"),
        (2, "set", "[custom-setup]", "autoref"),
        (2, "md", "[markdown-anchor]", "autoref"),
        (2, "Hello, world!", "[Hello, world!][]", "autoref"),
        (3, "`hello-world`", "[`hello-world`][]", "autoref"),
        (3, "gone", "[no-such-heading]", "autoref"),
        (3, "api", "[pkg.Model.dump]", "autoref"),
        (3, "defined", "guide.md", "reference"),
        (4, "wrapped title", "[hello-world]", "autoref"),
    ]


def test_identifiers_of_a_target() -> None:
    assert autoref_ids("[pkg.Model]") == ("pkg.Model",)
    assert autoref_ids("[Hello, world!][]") == ("Hello, world!", "hello-world")
    assert autoref_ids("[`Foo.bar`][]") == ("Foo.bar",)
    assert autoref_ids("guide.md") == ()
    assert autoref_ids("[]") == ()
    assert autoref_ids("[a]b]") == ()


def test_lint_and_links_say_what_a_cross_reference_is(tmp_path: Path) -> None:
    from udm.index.links import check_links
    from udm.index.lint_rules import lint

    settings = _site(tmp_path, "  - mkdocstrings\n")
    results = {r.target: r for r in check_links(settings, external=False).results}
    assert results["[hello-world]"].status == "ok"
    skipped = results["[pkg.Model.dump]"]
    assert skipped.status == "skipped" and "API object" in (skipped.reason or "")
    strict = _site(tmp_path / "strict", "  - autorefs\n")
    broken = {r.target: r for r in check_links(strict, external=False).results}
    assert broken["[no-such-heading]"].status == "broken"
    assert broken["[no-such-heading]"].reason == "no heading or anchor #no-such-heading on the site"
    messages = [f.message for f in lint(strict) if f.rule == "broken-link"]
    assert "cross-reference [no-such-heading]: no heading or anchor #no-such-heading on the site" in messages


def test_small_refreshes_follow_the_anchors_a_cross_reference_names(tmp_path: Path) -> None:
    settings = _site(tmp_path, "  - autorefs\n")
    assert _home(link_verdicts(settings))["[no-such-heading]"] is False
    # The heading appears on a page the link does not name: the next query sees the link resolve.
    late = tmp_path / "docs" / "other.md"
    late.write_text(late.read_text() + "\n## No such heading\n")
    os.utime(late, ns=(1, 1))
    home = _home(link_verdicts(settings))
    assert home["[no-such-heading]"] is True
    # ... and break again when it goes; the other page's copy of a shared heading still serves.
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n")
    late.write_text("# Other\n")
    home = _home(link_verdicts(settings))
    assert home["[no-such-heading]"] is False and home["[hello-world]"] is False
    index = UdmIndex(settings)
    try:
        index.ensure_fresh()
        with index.connect() as con:
            small = con.execute(
                "SELECT file, target, target_file, resolved FROM links ORDER BY ALL"
            ).fetchall()
        index.refresh(full=True)
        with index.connect() as con:
            full = con.execute(
                "SELECT file, target, target_file, resolved FROM links ORDER BY ALL"
            ).fetchall()
    finally:
        index.close()
    assert small == full


_TEXT = st.text(alphabet="[]()!`\\ \nab#-.*<>:", max_size=80)


@hsettings(max_examples=300, deadline=None)
@given(_TEXT)
def test_any_text_parses_and_every_cross_reference_is_well_formed(text: str) -> None:
    doc = parse_document(text, "x.md", autorefs=True)
    for link in doc.links:
        if link.form == "autoref":
            assert autoref_ids(link.target), link
            assert 0 <= link.line < max(1, len(doc.lines))


def test_crafted_brackets_parse_in_time_linear_in_their_length() -> None:
    for unit in ("][", "[a][b] ", "[" * 150 + "]" * 150 + "[x]", "]" * 299 + "]["):
        small = parse_seconds(unit * (20_000 // len(unit)), autorefs=True)
        large = parse_seconds(unit * (80_000 // len(unit)), autorefs=True)
        # Four times the text, at most about four times the time (the bracket search is bounded).
        assert large < 8 * small + 0.05, (unit[:20], small, large)


# --- The patch validator -------------------------------------------------------------------------


def _patched(settings: Settings, *ops: dict[str, object]) -> tuple[str, str]:
    from udm.patch import apply_patch, parse_patch

    res = apply_patch(parse_patch({"description": "t", "operations": list(ops)}), settings)
    return res.status, res.error or ""


def _xref_site(tmp_path: Path, plugins: str, other: str = "# Other\n") -> Settings:
    return site_settings(
        tmp_path,
        {
            "mkdocs.yml": f"site_name: X\nplugins:\n{plugins}",
            "docs/guide.md": "# Guide\n\n## Hello, world!\n\nText.\n\n## Setup\n\nMore.\n",
            "docs/other.md": other,
            "docs/index.md": "# Home\n\n[hi][hello-world] and [Setup][]\n",
        },
    )


RENAME = {"op": "replace_text", "file": "docs/guide.md", "old": "## Hello, world!", "new": "## Greetings"}


def test_a_patch_that_breaks_a_cross_reference_is_refused(tmp_path: Path) -> None:
    settings = _xref_site(tmp_path, "  - autorefs\n")
    status, error = _patched(settings, RENAME)
    assert status == "invalid"
    assert (
        "docs/index.md: link to [hello-world] would break (no heading or anchor #hello-world on the site)"
        in error
    )
    # The collapsed form names the title's slug: removing that heading is refused too.
    status, error = _patched(settings, {"op": "delete_section", "file": "docs/guide.md", "section": "Setup"})
    assert status == "invalid" and "link to [Setup][]" in error
    status, error = _patched(settings, {"op": "delete_file", "file": "docs/guide.md"})
    assert status == "invalid" and "[hello-world]" in error


def test_a_cross_reference_another_page_still_holds_lets_the_patch_through(tmp_path: Path) -> None:
    settings = _xref_site(tmp_path, "  - autorefs\n", other="# Other\n\nA [](){#hello-world} anchor.\n")
    status, error = _patched(settings, RENAME)
    assert status == "committed", error


def test_a_cross_reference_the_patch_writes_must_resolve_where_only_anchors_can_be_meant(
    tmp_path: Path,
) -> None:
    write = {
        "op": "append_to_section",
        "file": "docs/other.md",
        "section": "Other",
        "content": "See [it][nowhere] and [hi][hello-world].",
    }
    status, error = _patched(_xref_site(tmp_path / "a", "  - autorefs\n"), write)
    assert status == "invalid" and "link to [nowhere] would break" in error
    assert "[hello-world]" not in error
    # With mkdocstrings the identifier may be an API object's: unknown, so not refused.
    status, error = _patched(_xref_site(tmp_path / "m", "  - mkdocstrings\n"), write)
    assert status == "committed", error


def test_written_cross_references_keep_their_brackets(tmp_path: Path) -> None:
    # mdformat-gfm escapes `[x]` at a paragraph's start (a task box to it): `\[x\][hello-world]` is
    # the same to CommonMark, but autorefs would pair `[hello-world] [y]` instead.
    settings = _xref_site(tmp_path, "  - autorefs\n")
    content = "[x][hello-world] and [Setup][]"
    status, error = _patched(
        settings, {"op": "append_to_section", "file": "docs/other.md", "section": "Other", "content": content}
    )
    assert status == "committed", error
    assert content in (tmp_path / "docs" / "other.md").read_text(encoding="utf-8")


def test_an_object_page_holds_its_members_anchors_unknown(tmp_path: Path) -> None:
    # mkdocstrings renders `::: pkg.Model` with the id `pkg.Model`; its members' and its docstring
    # headings' ids (`pkg.Model.dump`, `pkg.Model--usage`) only the Python code tells.
    settings = site_settings(
        tmp_path,
        {
            "mkdocs.yml": "site_name: A\nplugins:\n  - mkdocstrings\n",
            "docs/api.md": "# API\n\n::: pkg.Model\n    options:\n      members: true\n",
            "docs/index.md": (
                "# Home\n\n[a](api.md#pkg.Model) [b](api.md#pkg.Model.dump) [c](api.md#pkg.Model--usage)\n"
                "[d](api.md#pkg.Modeller) [e](api.md#other)\n"
            ),
        },
    )
    home = _home(link_verdicts(settings))
    assert home == {
        "api.md#pkg.Model": True,
        "api.md#pkg.Model.dump": None,
        "api.md#pkg.Model--usage": None,
        "api.md#pkg.Modeller": False,
        "api.md#other": False,
    }


def test_the_validator_and_the_index_agree_on_ids_a_page_names_or_numbers(tmp_path: Path) -> None:
    site = "site_name: X\nplugins:\n  - autorefs\nmarkdown_extensions:\n  - admonition\n"
    settings = site_settings(
        tmp_path,
        {
            "mkdocs.yml": site,
            "docs/guide.md": (
                "# Guide\n\n## Setup\n\nA.\n\n## Setup\n\nB.\n\n!!! note\n    ## In a note\n\n    C.\n\n"
                "An [](){#own-id} anchor and ## 安装 below.\n\n## 安装\n"
            ),
            "docs/index.md": "# Home\n\n[a][setup_1] [b][in-a-note] [c][own-id] [d][安装]\n",
        },
    )
    assert set(_home(link_verdicts(settings)).values()) == {True}
    # The validator lets the same cross-references be written, and refuses the patch that removes
    # an id one of them names, though it is no heading.
    write = {
        "op": "append_to_section",
        "file": "docs/index.md",
        "section": "Home",
        "content": "[a][setup_1] [b][in-a-note] [c][own-id] [d][安装]",
    }
    status, error = _patched(settings, write)
    assert status == "committed", error
    drop = {"op": "replace_text", "file": "docs/guide.md", "old": "[](){#own-id} ", "new": ""}
    status, error = _patched(settings, drop)
    assert status == "invalid" and "link to [own-id] would break" in error
