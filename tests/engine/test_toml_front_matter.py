"""TOML front matter between `+++` lines (Hugo's and Zola's): read as the page's front matter, never as
Markdown; a block that does not parse is an error at its line. Fixtures written by the tests."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from udm.markdown import parse_document

from .conftest import link_verdicts, site_settings


def test_toml_front_matter_is_data_and_its_lines_are_no_markdown() -> None:
    text = (
        '+++\ntitle = "Install"\n# a TOML comment, no heading\nslug = "setup"\n'
        'aliases = ["/old/"]\nstarts = 07:32:00\n[extra]\nlevel = 2\n+++\n# Install\n\n## Linux\n'
    )
    doc = parse_document(text, "p.md")
    assert doc.front_matter == {
        "title": "Install",
        "slug": "setup",
        "aliases": ["/old/"],
        "starts": "07:32:00",  # a time of day as its text, as YAML's loader gives one
        "extra": {"level": 2},
    }
    assert doc.front_matter_range == (0, 9)
    assert [(s.title, s.heading_start) for s in doc.sections] == [("Install", 9), ("Linux", 11)]
    assert doc.errors == []


def test_toml_that_does_not_parse_is_an_error_at_its_line() -> None:
    doc = parse_document('+++\ntitle = "a"\ntitle = \n+++\n# T\n', "p.md")
    assert doc.front_matter is None and [s.title for s in doc.sections] == ["T"]
    assert doc.errors == ["p.md:3: invalid TOML: Invalid value"]
    deep = parse_document("+++\na = " + "[" * 500 + "]" * 500 + "\n+++\n# T\n", "p.md")
    assert deep.front_matter is None and "nested too deeply" in deep.errors[0], deep.errors
    huge = parse_document("+++\na = " + "1" * 5000 + "\n+++\n# T\n", "p.md")
    assert huge.front_matter is None and huge.errors[0].startswith("p.md:2: invalid TOML: a number"), (
        huge.errors
    )


def test_an_unclosed_block_is_markdown_as_written() -> None:
    doc = parse_document('+++\ntitle = "a"\n\n# T\n', "p.md")
    assert doc.front_matter is None and doc.errors == [] and [s.title for s in doc.sections] == ["T"]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="+=[]{}\"'#\n abc1.:-\\", max_size=60))
def test_any_block_between_plus_lines_parses_or_is_named(body: str) -> None:
    doc = parse_document(f"+++\n{body}\n+++\n# T\n", "p.md")
    assert isinstance(doc.front_matter, dict) or doc.front_matter is None
    assert all(e.startswith("p.md:") for e in doc.errors), doc.errors


def test_a_hugo_pages_toml_slug_and_aliases_move_its_route(tmp_path: Path) -> None:
    settings = site_settings(
        tmp_path,
        {
            "hugo.toml": 'baseURL = "https://example.org/"\n',
            "content/docs/install.md": '+++\ntitle = "Install"\nslug = "setup"\naliases = ["/old-install/"]\n+++\n# I\n',
            "content/_index.md": "# Home\n\n[a](/docs/setup/) [b](/old-install/) [c](/docs/install/)\n",
        },
    )
    verdicts = link_verdicts(settings)
    assert verdicts[("content/_index.md", "/docs/setup/")] is True
    assert verdicts[("content/_index.md", "/old-install/")] is True
    assert verdicts[("content/_index.md", "/docs/install/")] is False
