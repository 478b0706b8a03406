"""The validator refuses what a patch breaks, not what was broken; reverts and overrides (issue 18.7)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flows.cli import run
from udm.config import Settings, load_settings
from udm.patch import PatchResult, apply_patch, parse_patch, revert_patch


def _root(tmp_path: Path, files: dict[str, str]) -> Settings:
    root = tmp_path / "docs" / "udm"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    for sub in ("state", "logs"):
        (tmp_path / sub).mkdir()
    return load_settings(cwd=tmp_path)


def _apply(settings: Settings, *ops: dict[str, Any], **fields: Any) -> PatchResult:
    return apply_patch(parse_patch({"description": "test", "operations": list(ops), **fields}), settings)


GUIDE = "# Guide\n\nSee [a missing part](#missing) and [setup](setup.md).\n\n## Usage\n\nUse it.\n"
SETUP = "# Setup\n\n## Install\n\nRun it.\n"


@pytest.fixture
def manual(tmp_path: Path) -> Settings:
    return _root(tmp_path, {"guide.md": GUIDE, "setup.md": SETUP})


def test_a_link_broken_before_does_not_block_an_unrelated_edit(manual: Settings) -> None:
    res = _apply(
        manual, {"op": "append_to_section", "file": "guide.md", "section": "Usage", "content": "More."}
    )
    assert res.status == "committed", res.error


def test_a_link_the_patch_writes_must_resolve(manual: Settings) -> None:
    res = _apply(
        manual,
        {
            "op": "append_to_section",
            "file": "guide.md",
            "section": "Usage",
            "content": "See [x](nowhere.md).",
        },
    )
    assert res.status == "invalid"
    assert "link to nowhere.md would break (nowhere.md does not exist)" in (res.error or "")


def test_removing_an_anchor_another_file_links_to_is_refused(tmp_path: Path) -> None:
    s = _root(tmp_path, {"guide.md": "# Guide\n\n[install](setup.md#install)\n", "setup.md": SETUP})
    res = _apply(s, {"op": "rename_heading", "file": "setup.md", "section": "Install", "to": "Installing"})
    assert res.status == "invalid"
    assert "guide.md: link to setup.md#install would break (no heading #install in setup.md)" in (
        res.error or ""
    )


def test_revert_of_a_patch_that_fixed_a_broken_anchor_is_accepted(manual: Settings) -> None:
    fixed = _apply(manual, {"op": "replace_text", "file": "guide.md", "old": "(#missing)", "new": "(#usage)"})
    assert fixed.status == "committed", fixed.error
    undone = revert_patch(fixed.patch_id, manual)
    assert undone.status == "committed", undone.error
    assert (manual.udm_root / "guide.md").read_text(encoding="utf-8") == GUIDE


def test_removing_a_referenced_id_is_refused(tmp_path: Path) -> None:
    s = _root(
        tmp_path,
        {
            "tasks.md": "# Tasks\n\n## One\n\n- **ID:** `REQ-1`\n\nText.\n\n## Two\n\nOther.\n",
            "plan.md": "# Plan\n\nThis satisfies REQ-1.\n",
        },
    )
    res = _apply(s, {"op": "delete_section", "file": "tasks.md", "section": "One"})
    assert res.status == "invalid"
    assert "ID REQ-1 would no longer be defined, but plan.md:3 refers to it" in (res.error or "")


def test_override_records_who_and_why_and_the_findings(manual: Settings) -> None:
    op = {"op": "delete_file", "file": "setup.md"}
    refused = _apply(manual, op)
    assert refused.status == "invalid"
    assert "an override (who and why) may apply it" in (refused.error or "")
    forced = _apply(manual, op, override={"by": "ann", "reason": "setup moves to the wiki"})
    assert forced.status == "committed", forced.error
    assert forced.problems == ["guide.md: link to setup.md would break (setup.md does not exist)"]
    record = json.loads((manual.state_path / "patches" / f"{forced.patch_id}.json").read_text())
    assert record["override"] == {
        "by": "ann",
        "reason": "setup moves to the wiki",
        "problems": forced.problems,
    }


def test_override_does_not_pass_a_block_that_stops_parsing(tmp_path: Path) -> None:
    s = _root(tmp_path, {"c.md": "# C\n\n```yaml udm\na: 1\n```\n"})
    res = _apply(
        s,
        {"op": "replace_text", "file": "c.md", "old": "a: 1", "new": "a: [1"},
        override={"by": "ann", "reason": "try"},
    )
    assert res.status == "invalid" and "does not parse" in (res.error or "")
    assert "override" not in (res.error or "")


def test_override_needs_who_and_why(manual: Settings) -> None:
    with pytest.raises(Exception, match="by"):
        parse_patch({"operations": [{"op": "delete_file", "file": "setup.md"}], "override": {"reason": "x"}})


def test_cli_apply_override_options(
    manual: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    patch = tmp_path / "p.json"
    patch.write_text(
        json.dumps({"id": "drop-setup", "operations": [{"op": "delete_file", "file": "setup.md"}]})
    )
    base = [
        "--root",
        str(manual.udm_root),
        "--state-dir",
        str(manual.state_path),
        "patch",
        "apply",
        str(patch),
    ]
    assert run([*base, "--yes"]) == 1
    assert run([*base, "--yes", "--override-by", "ann"]) == 1
    assert "go together" in capsys.readouterr().err
    assert run([*base, "--yes", "--override-by", "ann", "--override-reason", "moved", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["status"] == "committed"
    record = json.loads((manual.state_path / "patches" / "drop-setup.json").read_text())
    assert record["override"]["by"] == "ann" and record["override"]["reason"] == "moved"


DOCUSAURUS = (
    "module.exports = {\n  baseUrl: '/',\n  presets: [['classic', {docs: {routeBasePath: 'docs'}}]],\n};\n"
)


def test_a_correct_site_route_link_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "website" / "docs" / "guide").mkdir(parents=True)
    (tmp_path / "website" / "docusaurus.config.js").write_text(DOCUSAURUS)
    docs = tmp_path / "website" / "docs"
    (docs / "intro.md").write_text("# Intro\n\n## Next\n\nText.\n")
    (docs / "guide" / "01-install.md").write_text("# Install\n\n## Linux\n\nText.\n")
    for sub in ("state", "logs"):
        (tmp_path / sub).mkdir()
    s = load_settings(cwd=tmp_path, root=docs)
    ok = _apply(
        s,
        {
            "op": "append_to_section",
            "file": "intro.md",
            "section": "Next",
            "content": "See [install](/docs/guide/install#linux) and [again](guide/install).",
        },
    )
    assert ok.status == "committed", ok.error
    bad = _apply(
        s,
        {
            "op": "append_to_section",
            "file": "intro.md",
            "section": "Next",
            "content": "See [x](/docs/guide/nope).",
        },
    )
    assert bad.status == "invalid" and "link to /docs/guide/nope would break" in (bad.error or "")
    anchor = _apply(
        s,
        {
            "op": "append_to_section",
            "file": "intro.md",
            "section": "Next",
            "content": "See [x](/docs/guide/install#mac).",
        },
    )
    assert anchor.status == "invalid" and "no heading #mac in guide/01-install.md" in (anchor.error or "")


def test_a_slug_route_and_moving_it(tmp_path: Path) -> None:
    (tmp_path / "website" / "docs").mkdir(parents=True)
    (tmp_path / "website" / "docusaurus.config.js").write_text(DOCUSAURUS)
    docs = tmp_path / "website" / "docs"
    (docs / "conf.md").write_text("---\nslug: /custom\n---\n\n# Conf\n\n## Keys\n\nText.\n")
    (docs / "intro.md").write_text("# Intro\n\nSee [the keys](/docs/custom#keys).\n")
    for sub in ("state", "logs"):
        (tmp_path / sub).mkdir()
    s = load_settings(cwd=tmp_path, root=docs)
    moved = _apply(
        s, {"op": "replace_text", "file": "conf.md", "old": "slug: /custom", "new": "slug: /other"}
    )
    assert moved.status == "invalid"
    assert "intro.md: link to /docs/custom#keys would break" in (moved.error or "")
    ok = _apply(s, {"op": "replace_text", "file": "conf.md", "old": "Text.", "new": "Text, again."})
    assert ok.status == "committed", ok.error


def test_a_route_to_a_page_beside_the_manual_goes_by_its_id(tmp_path: Path) -> None:
    # React Native's website: the manual is website/, the current docs `../docs` beside it, where
    # `id: turbo-intro` gives turbo.md the route /docs/next/turbo-intro (and none at its file name).
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "turbo.md").write_text("---\nid: turbo-intro\n---\n# Turbo\n\n## Build\n")
    site = tmp_path / "website"
    (site / "versioned_docs" / "version-1.0").mkdir(parents=True)
    (site / "docusaurus.config.js").write_text(
        "module.exports = { presets: [['classic', { docs: { path: '../docs' } }]] };\n"
    )
    (site / "versions.json").write_text('["1.0"]')
    (site / "versioned_docs" / "version-1.0" / "intro.md").write_text("# Intro\n\n## Next\n\nText.\n")
    for sub in ("state", "logs"):
        (tmp_path / sub).mkdir()
    s = load_settings(cwd=tmp_path, root=site)
    page = "versioned_docs/version-1.0/intro.md"
    ok = _apply(
        s,
        {
            "op": "append_to_section",
            "file": page,
            "section": "Next",
            "content": "[t](/docs/next/turbo-intro#build)",
        },
    )
    assert ok.status == "committed", ok.error
    bad = _apply(
        s, {"op": "append_to_section", "file": page, "section": "Next", "content": "[t](/docs/next/turbo)"}
    )
    assert bad.status == "invalid" and "link to /docs/next/turbo would break" in (bad.error or "")
    # The page beside the manual is read for its anchors, as the index reads it.
    anchor = _apply(
        s,
        {
            "op": "append_to_section",
            "file": page,
            "section": "Next",
            "content": "[t](/docs/next/turbo-intro#nope)",
        },
    )
    assert anchor.status == "invalid" and "#nope" in (anchor.error or "")


def test_an_anchor_of_a_page_beside_a_plain_manual_is_checked(tmp_path: Path) -> None:
    s = _root(tmp_path, {"guide.md": GUIDE, "setup.md": SETUP})
    (tmp_path / ".git").mkdir()  # a repository: a link may climb out of the manual into it
    (tmp_path / "docs" / "README.md").write_text("# Readme\n\n## Install\n")
    good = _apply(
        s,
        {
            "op": "append_to_section",
            "file": "guide.md",
            "section": "Usage",
            "content": "[r](../README.md#install)",
        },
    )
    assert good.status == "committed", good.error
    bad = _apply(
        s,
        {
            "op": "append_to_section",
            "file": "guide.md",
            "section": "Usage",
            "content": "[r](../README.md#nope)",
        },
    )
    assert bad.status == "invalid" and "#nope" in (bad.error or "")


def test_a_page_beside_the_manual_past_4_mb_leaves_its_anchors_unknown(tmp_path: Path) -> None:
    # Read for anchors only as far as a page the index parses (4,000,000 bytes, not characters: the
    # index and the validator share one reader); past it, an anchor there is neither known nor broken.
    s = _root(tmp_path, {"guide.md": GUIDE, "setup.md": SETUP})
    (tmp_path / ".git").mkdir()
    (tmp_path / "docs" / "README.md").write_text("# Readme\n\n## Install\n\n" + "é" * 1_999_990 + "\n")
    link = {
        "op": "append_to_section",
        "file": "guide.md",
        "section": "Usage",
        "content": "[r](../README.md#nope)",
    }
    res = _apply(s, link)
    assert res.status == "committed", res.error
    from udm.index import UdmIndex

    index = UdmIndex(s)
    index.ensure_fresh()
    with index.connect() as con:
        rows = con.execute("SELECT resolved FROM links WHERE target = '../README.md#nope'").fetchall()
    index.close()
    assert rows == [(None,)]


def test_a_larger_max_file_bytes_reads_a_page_beside_the_manual_that_far(tmp_path: Path) -> None:
    # The same 4 MB page, with the manual's max_file_bytes raised to 5 MB: the index and the validator
    # both read it, so its missing anchor is broken for both.
    _root(tmp_path, {"guide.md": GUIDE, "setup.md": SETUP})
    s = load_settings(cwd=tmp_path, max_file_bytes=5_000_000)
    (tmp_path / ".git").mkdir()
    (tmp_path / "docs" / "README.md").write_text("# Readme\n\n## Install\n\n" + "é" * 1_999_990 + "\n")
    res = _apply(
        s,
        {
            "op": "append_to_section",
            "file": "guide.md",
            "section": "Usage",
            "content": "[r](../README.md#nope)",
        },
    )
    assert res.status == "invalid" and "#nope" in (res.error or ""), res
    (tmp_path / "docs" / "udm" / "guide.md").write_text(GUIDE + "\n[r](../README.md#nope)\n")
    from udm.index import UdmIndex

    index = UdmIndex(s)
    index.ensure_fresh()
    with index.connect() as con:
        rows = con.execute("SELECT resolved FROM links WHERE target = '../README.md#nope'").fetchall()
    index.close()
    assert rows == [(False,)]


def test_renaming_a_heading_of_a_numbered_page_linked_by_route(tmp_path: Path) -> None:
    (tmp_path / "website" / "docs").mkdir(parents=True)
    (tmp_path / "website" / "docusaurus.config.js").write_text(DOCUSAURUS)
    docs = tmp_path / "website" / "docs"
    (docs / "01-install.md").write_text("# Install\n\n## Linux\n\nText.\n")
    (docs / "intro.md").write_text("# Intro\n\nSee [Linux](/docs/install#linux).\n")
    for sub in ("state", "logs"):
        (tmp_path / sub).mkdir()
    s = load_settings(cwd=tmp_path, root=docs)
    res = _apply(s, {"op": "rename_heading", "file": "01-install.md", "section": "Linux", "to": "GNU/Linux"})
    assert res.status == "invalid" and "intro.md: link to /docs/install#linux would break" in (
        res.error or ""
    )


def _starlight(tmp_path: Path) -> Settings:
    """Settings over a copy of the Starlight site fixture (its content folder as the manual)."""
    import shutil

    site = tmp_path / "site"
    shutil.copytree(Path(__file__).parents[1] / "engine" / "fixtures" / "sites" / "starlight", site)
    (tmp_path / "state").mkdir()
    return load_settings(cwd=tmp_path, root=site / "src" / "content" / "docs", state_dir=tmp_path / "state")


def test_a_new_page_that_takes_a_served_route_must_keep_the_links_into_it(tmp_path: Path) -> None:
    # Starlight serves an untranslated page at /fr/... with the English page; a French page created
    # there takes the route, and the French links to English anchors land on it.
    settings = _starlight(tmp_path)
    bare = {
        "op": "create_file",
        "file": "fr/getting-started.mdx",
        "content": "---\ntitle: Démarrer\n---\n\nBientôt.\n",
    }
    res = apply_patch(parse_patch({"description": "fr", "operations": [bare]}), settings, dry_run=True)
    assert res.status == "invalid"
    assert "fr/index.mdx: link to /guide/fr/getting-started/#install-the-cli would break" in (res.error or "")
    # The same page with the heading the links name is fine.
    full = dict(bare, content="---\ntitle: Démarrer\n---\n\n## Installer la CLI {#install-the-cli}\n")
    ok = apply_patch(parse_patch({"description": "fr", "operations": [full]}), settings, dry_run=True)
    assert ok.status == "planned", ok.error


def test_renaming_a_page_linked_by_its_slugged_name_is_refused(tmp_path: Path) -> None:
    # Starlight links `Reference/Config Options.md` as /reference/config-options/: the scan for links
    # into a moved page looks for that name too (it looked for "Config Options" only).
    settings = _starlight(tmp_path)
    move = {"op": "rename_file", "file": "en/Reference/Config Options.md", "to": "en/Reference/Options.md"}
    res = apply_patch(parse_patch({"description": "mv", "operations": [move]}), settings, dry_run=True)
    assert res.status == "invalid"
    assert "en/getting-started.mdx: link to ../reference/config-options/ would break" in (res.error or "")
    assert "fr/index.mdx: link to /guide/fr/reference/config-options/#base-path would break" in (
        res.error or ""
    )
