"""What the user is told about the site the links resolve by: problems reading its config, and a site
config below the manual root that is not applied (`udm index`, `udm index --json`, `udm lint`)."""

from __future__ import annotations

import json
import os
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flows.cli import run
from udm.config import load_settings
from udm.index.lint_rules import lint
from udm.site import settings_site, site_notes
from udm.site.detect import _visible, configs_below

from .conftest import link_verdicts, site_settings, write_tree

DOCUSAURUS = "module.exports = { presets: [['classic', { docs: { routeBasePath: '/' } }]] };\n"
HUGO = 'baseURL = "https://example.org/"\ncontentDir = "content"\n'
PAGE = "# Install\n\n[setup](/setup)\n"


def _repo_with_site_below(tmp_path: Path) -> Path:
    """A repository taken for the manual whose Docusaurus site lives in `site/`."""
    write_tree(
        tmp_path,
        {
            "README.md": "# Repo\n\n[install](site/docs/install.md)\n",
            "site/docusaurus.config.js": DOCUSAURUS,
            "site/docs/install.md": PAGE,
            "site/docs/setup.md": "# Setup\n",
        },
    )
    (tmp_path / ".git").mkdir()
    return tmp_path


def test_configs_below_the_root_are_found_two_levels_down_nearest_first(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "a/b/mkdocs.yml": "site_name: deep\n",
            "web/config/_default/hugo.toml": HUGO,
            "z/docusaurus.config.ts": DOCUSAURUS,
            # Not a site's: a plain Astro config, a `config.toml` of another tool, a folder's name.
            "astro/astro.config.mjs": "export default {};\n",
            "tool/config.toml": "[tool]\nname = 'x'\n",
            "dir/book.toml/x.md": "# x\n",
            # Never looked in: dot folders, dependencies, three levels down.
            ".hidden/mkdocs.yml": "site_name: h\n",
            "node_modules/pkg/mkdocs.yml": "site_name: n\n",
            "a/b/c/docs.json": "{}",
        },
    )
    assert configs_below(tmp_path) == [
        ("web/config/_default/hugo.toml", "hugo", "web"),
        ("z/docusaurus.config.ts", "docusaurus", "z"),
        ("a/b/mkdocs.yml", "mkdocs", "a/b"),
    ]


def test_a_symlinked_folder_and_a_fifo_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write_tree(outside, {"mkdocs.yml": "site_name: o\n"})
    root = tmp_path / "root"
    root.mkdir()
    (root / "linked").symlink_to(outside, target_is_directory=True)
    (root / "pipe").mkdir()
    os.mkfifo(root / "pipe" / "mkdocs.yml")  # read, it would block
    (root / "loop").symlink_to(root, target_is_directory=True)
    assert configs_below(root) == []


def test_the_search_below_stops_after_its_folder_budget(tmp_path: Path) -> None:
    import time

    for i in range(3000):
        (tmp_path / f"f{i:04d}").mkdir()
    write_tree(tmp_path, {"f2999/mkdocs.yml": "site_name: late\n"})
    started = time.process_time()
    found = configs_below(tmp_path)
    # The budget counts folders: a root of thousands is looked over in bounded time, not all of it.
    assert found == [] and time.process_time() - started < 1.0


def test_a_repository_taken_for_the_manual_names_its_site_below(tmp_path: Path) -> None:
    root = _repo_with_site_below(tmp_path)
    settings = load_settings(cwd=root, root=root, state_dir=root / ".udm-state")
    notes = site_notes(settings)
    assert notes == [
        (
            "site/docusaurus.config.js",
            "a site config of docusaurus below the manual root is not applied: links are read as "
            "plain Markdown (set site_config to site/docusaurus.config.js, "
            "or make site the manual root)",
        )
    ]
    # Following the note: the route resolves as the site resolves it, and nothing more is noted.
    assert link_verdicts(settings)[("site/docs/install.md", "/setup")] is False
    named = load_settings(
        cwd=root, root=root, state_dir=root / ".udm-state", site_config="site/docusaurus.config.js"
    )
    assert link_verdicts(named)[("site/docs/install.md", "/setup")] is True
    assert site_notes(named) == []
    # A generator turned off on purpose is not second-guessed.
    off = load_settings(cwd=root, root=root, state_dir=root / ".udm-state", site_generator="none")
    assert site_notes(off) == []


def test_a_site_detected_at_the_root_is_not_noted_for_configs_below(tmp_path: Path) -> None:
    settings = site_settings(
        tmp_path,
        {
            "mkdocs.yml": "site_name: S\n",
            "docs/index.md": "# Home\n",
            "docs/sub/mkdocs.yml": "site_name: x\n",
        },
    )
    assert site_notes(settings) == []


def test_problems_name_the_config_from_the_manual_root(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {"mkdocs.yml": "nav: [unclosed\n", "docs/index.md": "# Home\n"})
    settings = load_settings(cwd=tmp_path, root=tmp_path / "docs", state_dir=tmp_path / ".st")
    [(where, message)] = site_notes(settings)
    assert where == "../mkdocs.yml"
    assert message.startswith("../mkdocs.yml: cannot read the site config: "), message
    assert str(tmp_path) not in message
    # A site_config naming no file says so, with the path the user wrote it from (the project root).
    missing = load_settings(
        cwd=tmp_path, root=tmp_path / "docs", state_dir=tmp_path / ".st", site_config="x/mkdocs.yml"
    )
    assert site_notes(missing) == [("../x/mkdocs.yml", "../x/mkdocs.yml: site_config names no file")]


def test_a_named_config_still_reads_the_gitignore_rules(tmp_path: Path) -> None:
    root = _repo_with_site_below(tmp_path)
    write_tree(root, {".gitignore": "site/build/\n", "site/docs/api.md": "[ref](../build/api/ref.html)\n"})
    named = load_settings(
        cwd=root, root=root, state_dir=root / ".st", site_config="site/docusaurus.config.js"
    )
    assert settings_site(named).ignores  # before, a named config dropped the `.gitignore` files
    assert link_verdicts(named)[("site/docs/api.md", "../build/api/ref.html")] is None


def test_lint_reports_site_notes_as_a_rule_a_team_can_tune(tmp_path: Path) -> None:
    root = _repo_with_site_below(tmp_path)
    settings = load_settings(cwd=root, root=root, state_dir=root / ".st")
    [finding] = [f for f in lint(settings) if f.rule == "site-config"]
    assert (finding.file, finding.line, finding.severity) == ("site/docusaurus.config.js", 1, "warning")
    assert "make site the manual root" in finding.message
    for field, value in (
        ("lint_rules", {"site-config": "off"}),
        ("lint_ignore", {"site/*.js": ["site-config"]}),
    ):
        tuned = load_settings(cwd=root, root=root, state_dir=root / ".st", **{field: value})
        assert not [f for f in lint(tuned) if f.rule == "site-config"], field
    raised = load_settings(cwd=root, root=root, state_dir=root / ".st", lint_rules={"site-config": "error"})
    assert [f.severity for f in lint(raised) if f.rule == "site-config"] == ["error"]


def test_a_huge_unreadable_config_is_never_read_whole_by_lint(tmp_path: Path) -> None:
    # A config past the size limit is a problem; lint must not read it for disable comments.
    big = "site_name: x\n" + "# <!-- udm-lint-disable -->\n" * 60000
    settings = site_settings(tmp_path, {"mkdocs.yml": big, "docs/index.md": "# Home\n"})
    [finding] = [f for f in lint(settings) if f.rule == "site-config"]
    assert finding.file == "mkdocs.yml" and "larger than" in finding.message


def test_udm_index_prints_the_site_and_its_notes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _repo_with_site_below(tmp_path)
    base = ["--root", str(root), "--state-dir", str(tmp_path / "state")]
    assert run([*base, "index"]) == 0
    out, err = capsys.readouterr()
    assert "site:" not in out  # no site detected: nothing claimed
    assert "site config: site/docusaurus.config.js: a site config of docusaurus below the manual root" in err
    assert run([*base, "index", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["site"]["generator"] == "none"
    assert [n["path"] for n in data["site"]["notes"]] == ["site/docusaurus.config.js"]

    site_root = root / "site"
    assert run(["--root", str(site_root), "--state-dir", str(tmp_path / "state2"), "index"]) == 0
    out, err = capsys.readouterr()
    assert f"site: docusaurus ({site_root / 'docusaurus.config.js'})" in out
    assert "site config" not in err


def test_udm_links_says_why_its_verdicts_may_be_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _repo_with_site_below(tmp_path)
    base = ["--root", str(root), "--state-dir", str(tmp_path / "state")]
    assert run([*base, "links", "--no-external"]) == 1  # /setup, read as plain Markdown
    out, err = capsys.readouterr()
    assert "broken   site/docs/install.md:3  /setup" in out
    assert "site config: site/docusaurus.config.js: a site config of docusaurus" in err
    # Only external links checked: no site note, since no verdict came from the site.
    assert run([*base, "links", "--no-internal"]) == 0
    assert "site config" not in capsys.readouterr().err


def test_a_hostile_config_cannot_write_control_sequences_to_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The INHERIT name comes from the config's text, and the note used to be printed as written.
    (tmp_path / ".git").mkdir()
    # YAML's escapes write them in a valid file: ESC ] 0 ; owned BEL, ESC [ 2 J, a right-to-left override.
    inherit = "\\e]0;owned\\a\\e[2J\\u202egnp.yml"
    write_tree(tmp_path, {"mkdocs.yml": f'INHERIT: "{inherit}"\nsite_name: x\n', "docs/index.md": "# Home\n"})
    base = ["--root", str(tmp_path / "docs"), "--state-dir", str(tmp_path / "state")]
    assert run([*base, "index"]) == 0
    err = capsys.readouterr().err
    assert "site config: ../mkdocs.yml: INHERIT \\x1b]0;owned\\x07\\x1b[2J\\u202egnp.yml" in err, err
    assert "\x1b" not in err and "\x07" not in err and "\u202e" not in err


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_every_note_is_one_visible_bounded_line(text: str) -> None:
    shown = _visible(text)
    assert "\n" not in shown and len(shown) <= 600
    assert not any(
        unicodedata.category(c) == "Cc"
        or c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f"
        for c in shown
    )


def test_mkdocs_configs_of_other_names_are_named_not_guessed(tmp_path: Path) -> None:
    # Textual's layout: the docs build with `--config-file mkdocs-online.yml`, which INHERITs a common file.
    (tmp_path / ".git").mkdir()
    write_tree(
        tmp_path,
        {
            "mkdocs-common.yml": "site_name: T\ndocs_dir: docs\n",
            "mkdocs-online.yml": "INHERIT: mkdocs-common.yml\n",
            "mkdocs-offline.yml": "INHERIT: mkdocs-common.yml\n",
            "docs/index.md": "# Home\n",
            "docs/guide/mkdocs-notes.yml": "not: a config in a folder below\n",
        },
    )
    settings = load_settings(cwd=tmp_path, root=tmp_path / "docs", state_dir=tmp_path / ".st")
    assert settings_site(settings).generator == "none"  # which one the site builds from is the build's choice
    assert site_notes(settings) == [
        (
            "../mkdocs-common.yml",
            "site configs of mkdocs by their names, not applied unless named: mkdocs-common.yml, "
            "mkdocs-offline.yml, mkdocs-online.yml (set site_config to the one the site builds from)",
        )
    ]
    named = load_settings(
        cwd=tmp_path, root=tmp_path / "docs", state_dir=tmp_path / ".st", site_config="mkdocs-online.yml"
    )
    assert settings_site(named).generator == "mkdocs" and site_notes(named) == []
    # A plain mkdocs.yml is detected, and then the others are not mentioned.
    write_tree(tmp_path, {"mkdocs.yml": "site_name: T\n"})
    assert site_notes(settings) == []


def test_a_named_config_of_no_known_generator_leaves_the_plain_repository_rules(tmp_path: Path) -> None:
    # As with no config at all: the manual reads its repository's files; the setting is noted.
    (tmp_path / ".git").mkdir()
    write_tree(
        tmp_path, {"README.md": "# Repo\n", "site.txt": "x", "docs/index.md": "[readme](../README.md)\n"}
    )
    named = load_settings(
        cwd=tmp_path, root=tmp_path / "docs", state_dir=tmp_path / ".st", site_config="site.txt"
    )
    plain = load_settings(cwd=tmp_path, root=tmp_path / "docs", state_dir=tmp_path / ".st2")
    assert settings_site(named).repository == settings_site(plain).repository == ".."
    assert link_verdicts(named)[("index.md", "../README.md")] is True
    assert link_verdicts(plain)[("index.md", "../README.md")] is True
    assert [m for _, m in site_notes(named)] == [
        "../site.txt: cannot tell the site generator from its name; set site_generator"
    ]
