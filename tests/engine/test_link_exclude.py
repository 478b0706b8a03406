"""`link_exclude`: link targets a site makes links of its own (Hugo's docs write `[term](g)`, which a
render hook turns into a glossary link) or that must not be fetched, left unchecked everywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from udm.config import ConfigError, load_settings
from udm.index.links import check_links
from udm.index.lint_rules import lint
from udm.patch import apply_patch, parse_patch
from udm.site import excluded

from .conftest import link_verdicts

PAGES = {
    "guide.md": "# Guide\n\nA [glob](g) and a [real miss](nowhere.md) and [intranet](http://127.0.0.1:9/wiki/x).\n",
}


def _manual(tmp_path: Path) -> None:
    for rel, text in PAGES.items():
        (tmp_path / rel).write_text(text, encoding="utf-8")


def test_excluded_targets_are_not_checked(tmp_path: Path) -> None:
    _manual(tmp_path)
    plain = load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / "st")
    assert {f.message for f in lint(plain) if f.rule == "broken-link"} == {
        "link target g does not exist",
        "link target nowhere.md does not exist",
    }
    settings = load_settings(
        cwd=tmp_path, root=tmp_path, state_dir=tmp_path / "st", link_exclude=["g", "http://127.0.0.1:9/*"]
    )
    # The setting changes the verdicts the index stored: it resolves the links again.
    assert link_verdicts(settings)[("guide.md", "g")] is None
    assert {f.message for f in lint(settings) if f.rule == "broken-link"} == {
        "link target nowhere.md does not exist"
    }
    report = check_links(settings)
    by_target = {r.target: (r.status, r.reason) for r in report.results}
    assert by_target["g"] == ("skipped", "excluded by link_exclude")
    assert by_target["http://127.0.0.1:9/wiki/x"] == ("skipped", "excluded by link_exclude")
    assert report.external_urls == 0  # never fetched
    assert by_target["nowhere.md"][0] == "broken"


def test_a_patch_writing_an_excluded_target_is_not_refused(tmp_path: Path) -> None:
    _manual(tmp_path)
    settings = load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / "st", link_exclude=["g"])
    patch = parse_patch(
        {
            "description": "term",
            "operations": [
                {"op": "append_to_section", "file": "guide.md", "section": "Guide", "content": "A [page](g)."}
            ],
        }
    )
    res = apply_patch(patch, settings)
    assert res.status == "committed", res.error


@pytest.mark.parametrize(
    ("target", "patterns", "hit"),
    [
        ("g", ("g",), True),
        (" g ", ("g",), True),
        ("gg", ("g",), False),
        ("https://x.org/a/b", ("https://x.org/*",), True),
        ("https://y.org/a", ("https://x.org/*",), False),
        ("a" * 10_000 + "b", ("*a*a*a*a*a*a*a*a*c",), False),  # no backtracking blow-up
        ("x", (), False),
    ],
)
def test_patterns(target: str, patterns: tuple[str, ...], hit: bool) -> None:
    assert excluded(target, patterns) is hit


def test_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UDM_LINK_EXCLUDE", "g, https://intranet/*")
    settings = load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / "st")
    assert settings.link_exclude == ["g", "https://intranet/*"]
    with pytest.raises(ConfigError, match="link_exclude"):
        load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / "st", link_exclude=5)
