"""Patches see the manual as the index does: `.mdx` pages take section operations, and a fence in a
section named by `data_sections` is data to the validator (an invalid one is refused)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from udm.config import Settings, load_settings
from udm.patch import apply_patch, parse_patch

MDX = """---
title: Install
---
import { Card } from "@site/components";

# Install

<Card href="/guide/setup" title="Setup">
  Read the setup guide first.
</Card>

## Steps

Run the installer.
"""


def _root(tmp_path: Path, **settings: Any) -> Settings:
    (tmp_path / "docs" / "udm").mkdir(parents=True)
    for sub in ("state", "logs"):
        (tmp_path / sub).mkdir()
    return load_settings(cwd=tmp_path, **settings)


def test_a_section_operation_on_an_mdx_page_commits_and_keeps_its_jsx(tmp_path: Path) -> None:
    settings = _root(tmp_path)
    page = tmp_path / "docs" / "udm" / "install.mdx"
    page.write_text(MDX, encoding="utf-8")
    op = {"op": "append_to_section", "file": "install.mdx", "section": "Steps", "content": "Then restart."}
    res = apply_patch(parse_patch({"operations": [op]}), settings)
    assert res.status == "committed", (res.status, res.error, res.problems)
    text = page.read_text(encoding="utf-8")
    assert text == MDX.replace("Run the installer.\n", "Run the installer.\n\nThen restart.\n")


def test_a_page_of_another_suffix_is_refused_naming_the_setting(tmp_path: Path) -> None:
    settings = _root(tmp_path)
    (tmp_path / "docs" / "udm" / "notes.txt").write_text("# Notes\n\n## A\n\nx\n", encoding="utf-8")
    op = {"op": "append_to_section", "file": "notes.txt", "section": "A", "content": "y"}
    res = apply_patch(parse_patch({"operations": [op]}), settings)
    assert res.status != "committed"
    assert "markdown_suffixes" in (res.error or "") + " ".join(r.message for r in res.operations)


def test_a_bad_block_in_a_data_section_is_refused_and_an_example_elsewhere_is_not(tmp_path: Path) -> None:
    settings = _root(tmp_path, data_sections=["Configuration"])
    page = tmp_path / "docs" / "udm" / "config.md"
    page.write_text("# Config\n\n## Configuration\n\nKeys.\n\n## Examples\n\nSnippets.\n", encoding="utf-8")
    bad = "```yaml\nkey: [unclosed\n```"
    into_data = {"op": "append_to_section", "file": "config.md", "section": "Configuration", "content": bad}
    res = apply_patch(parse_patch({"operations": [into_data]}), settings)
    assert res.status == "invalid", (res.status, res.error)
    assert "does not parse" in (res.error or "") + " ".join(res.problems)
    into_examples = {**into_data, "section": "Examples"}
    res = apply_patch(parse_patch({"operations": [into_examples]}), settings)
    assert res.status == "committed", (res.status, res.error, res.problems)
