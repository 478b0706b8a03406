"""A site generator's config file in the manual is untrusted input: a bad one is a problem, not an outage.

The manual's site conventions come from a config file found in the UDM root or above it (`docs.json`,
`mkdocs.yml`, `hugo.toml`...), which a tool may write when it lies in the root. On `main` before this,
one approved `writeFile` of `docs/udm/docs.json` holding 5,000 nested lists (or `hugo.toml` with
nested arrays, or `mkdocs.yml` with a NUL byte) made every later query, search and SQL call of the
whole manual an internal error (RecursionError, yaml.ReaderError), as #17.4's deep data block once did.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.base import ToolContext, call_tool
from udm.config import Settings
from udm.site.detect import detect_site

DEEP = "[" * 5000 + "]" * 5000
CASES = {
    "docs.json": DEEP,
    "mint.json": '{"redirects": ' + DEEP + "}",
    "hugo.json": "{" + '"a":{' * 5000 + "}" * 5001,
    "hugo.toml": "a = " + DEEP + "\n",
    "mkdocs.yml": "site_name: x\nnav: \x00\n",
    "mkdocs.yaml": "nav: " + DEEP + "\n",
    "book.toml": "[book\ntitle = ",
    "config.toml": "baseURL = 'x'\na = " + DEEP + "\n",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_hostile_site_config_leaves_the_manual_answering(settings: Settings, name: str) -> None:
    ctx = ToolContext(settings=settings, log=False)
    (settings.udm_root / name).write_text(CASES[name], encoding="utf-8")
    for tool, raw in (
        ("udmQueryTool", {"query_type": "find_by_id", "udm_path_or_id": "COMP-001"}),
        ("udmSqlQueryTool", {"sql": "SELECT count(*) FROM sections"}),
    ):
        env = call_tool(tool, raw, ctx).envelope
        assert env.data is not None and env.data["status"] == "SUCCESS", (tool, env)
    site = detect_site(settings.udm_root)
    if name == "config.toml":  # a config.toml is Hugo's only when it reads as Hugo's: this one is ignored
        assert site.generator != "hugo", site
    else:
        assert site.problems and name in site.problems[0], site


def test_the_file_tool_write_that_did_it(settings: Settings, tmp_path: Path) -> None:
    from tasks.base import always_approve

    ctx = ToolContext(settings=settings, approver=always_approve, log=False)
    wrote = call_tool(
        "fileSystemAccessTool",
        {"action": "writeFile", "filePath": "docs/udm/docs.json", "content": DEEP},
        ctx,
    ).envelope.data
    assert wrote is not None and wrote["status"] == "SUCCESS"
    env = call_tool("udmQueryTool", {"query_type": "search", "udm_path_or_id": "search"}, ctx).envelope
    assert env.data is not None and env.data["status"] == "SUCCESS", env


@pytest.mark.parametrize(
    ("name", "text", "generator"),
    [
        ("astro.config.mjs", "import s from '@astrojs/starlight';\ns({" + "locales: {" * 60000, "starlight"),
        ("docusaurus.config.js", "module.exports = {" + "docs: {" * 60000, "docusaurus"),
        (".vitepress/config.mts", "export default {" + "srcDir: {" * 60000, "vitepress"),
    ],
)
def test_a_javascript_config_full_of_unclosed_blocks_is_read_in_linear_time(
    tmp_path: Path, name: str, text: str, generator: str
) -> None:
    # Each unclosed `key: {` was scanned to the end of the file: 60,000 of them took minutes at every
    # detection (every index refresh and lint). A tool may write such a file into the manual.
    import time

    (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / name).write_text(text, encoding="utf-8")
    started = time.perf_counter()
    site = detect_site(tmp_path, stop=tmp_path)
    assert site.generator == generator
    assert time.perf_counter() - started < 5
