"""VitePress `rewrites`: a page is served at its rewritten path, and its links are written against that
path (VitePress's routing guide). Two conventions found on public VitePress sites, re-created here:
English pages kept in `en/` but served from the root, and package docs mapped out of `packages/`.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from udm.config import load_settings
from udm.site.routes import Routes, detect_site

from .conftest import link_verdicts, site_settings
from .conftest import write_tree as _write

I18N = {
    ".vitepress/config.mts": (
        "import { defineConfig } from 'vitepress'\n\nexport default defineConfig({\n"
        "  // English lives in en/ but is served from /\n"
        "  rewrites: {\n    'en/:rest*': ':rest*'\n  },\n  cleanUrls: true,\n})\n"
    ),
    "en/index.md": "# Home\n\n[start](/guide/start) [Chinese](/zh/guide/start)\n",
    "en/guide/start.md": (
        "# Start\n\n[other](./other) [other, absolute](/guide/other#setup) [home](/)\n"
        "[the source path](/en/guide/other)\n"
    ),
    "en/guide/other.md": "# Other\n\n## Setup\n",
    "zh/guide/start.md": "# 开始\n\n[English](/guide/start)\n",
}


def test_i18n_rewrites_serve_english_from_the_root(tmp_path: Path) -> None:
    _write(tmp_path, I18N)
    site = detect_site(tmp_path, stop=tmp_path)
    assert site.generator == "vitepress" and site.rewrites == (("en/:rest*", ":rest*"),)
    routes = Routes(site, [p for p in I18N if p.endswith(".md")])
    assert routes.page_route("en/guide/start.md") == "guide/start"
    assert routes.page_route("en/index.md") == ""
    assert routes.page_route("zh/guide/start.md") == "zh/guide/start"
    settings = load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / ".udm-state")
    broken = {key for key, ok in link_verdicts(settings).items() if ok is False}
    # /en/... is where the file lies, not where the page is served.
    assert broken == {("en/guide/start.md", "/en/guide/other")}


def test_package_docs_rewritten_out_of_their_folders(tmp_path: Path) -> None:
    settings = site_settings(
        tmp_path,
        {
            ".vitepress/config.js": (
                "export default {\n  rewrites: {\n"
                "    'packages/:pkg/src/(.*)': ':pkg/index.md',\n"
                "    'old/intro.md': 'intro.md',\n  },\n}\n"
            ),
            "packages/alpha/src/alpha-docs.md": "# Alpha\n\n[beta](../beta/) [intro](/intro) [gamma](/gamma/)\n",
            "packages/beta/src/beta-docs.md": "# Beta\n\n[alpha](/alpha/)\n",
            "old/intro.md": "# Intro\n\n[alpha](./alpha/)\n",
        },
    )
    broken = {key for key, ok in link_verdicts(settings).items() if ok is False}
    assert broken == {("packages/alpha/src/alpha-docs.md", "/gamma/")}


@pytest.mark.parametrize(
    "config",
    [
        # A rewrite function is code: not read.
        "export default { rewrites(id) { return id.replace(/^en\\//, '') } }\n",
        # A group that is a regular expression of its own (catastrophic backtracking) is not taken.
        "export default { rewrites: { '(a+)+b/:x': ':x', 'en/:p/:p': ':p' } }\n",
        # Commented out.
        "export default {\n  // rewrites: { 'en/:rest*': ':rest*' },\n}\n",
    ],
)
def test_rewrites_that_are_not_read(tmp_path: Path, config: str) -> None:
    _write(tmp_path, {".vitepress/config.js": config, "en/a.md": "# A\n"})
    site = detect_site(tmp_path, stop=tmp_path)
    assert Routes(site, ["en/a.md"]).page_route("en/a.md") == "en/a"


def test_hostile_rewrites_route_in_bounded_time(tmp_path: Path) -> None:
    rules = ",".join(f"'x{i % 3}/:a*/(.*)/y': ':a'" for i in range(2_000))
    _write(tmp_path, {".vitepress/config.js": f"export default {{ rewrites: {{ {rules} }} }}\n"})
    site = detect_site(tmp_path, stop=tmp_path)
    pages = [f"x1/{'a/' * 100}{i}.md" for i in range(300)]
    started = time.perf_counter()
    routes = Routes(site, pages)
    for page in pages:
        routes.page_route(page)
    assert time.perf_counter() - started < 5
