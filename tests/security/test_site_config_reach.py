"""Site config files are untrusted input (a tool may write them in the manual): what they name must
stay in the site's repository, a named pipe must not block a read, and no crafted text may take more
than linear time. Each case was an attack that worked (an existence oracle, a hang) before the fix."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from udm.config import load_settings
from udm.site.jsconfig import _consts, _js_string
from udm.site.routes import detect_site

from ..engine.conftest import link_verdicts
from ..engine.conftest import write_tree as _write


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file of the machine outside the site, whose existence no link may learn."""
    secret = tmp_path / "elsewhere" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("x")
    return secret


def _verdicts(site: Path, root: Path) -> dict[str, bool | None]:
    settings = load_settings(cwd=site, root=root, state_dir=site / ".st")
    return {t: ok for (f, t), ok in link_verdicts(settings).items()}


def test_an_alias_link_cannot_climb_out_of_its_folder(tmp_path: Path, outside: Path) -> None:
    site = tmp_path / "site"
    _write(
        site,
        {
            "astro.config.mjs": "import starlight from '@astrojs/starlight';\nexport default { integrations: [starlight({})] };\n",
            "tsconfig.json": '{"compilerOptions": {"paths": {"@assets/*": ["src/assets/*"]}}}',
            "src/assets/a.svg": "<svg/>",
            "src/content/docs/index.md": "![a](@assets/a.svg) ![s](@assets/../../../../elsewhere/secret.txt)\n",
        },
    )
    verdicts = _verdicts(site, site / "src" / "content" / "docs")
    assert verdicts["@assets/a.svg"] is True
    assert verdicts["@assets/../../../../elsewhere/secret.txt"] is False


@pytest.mark.parametrize(
    "config",
    [
        {
            "hugo.toml": 'baseURL = "/"\n[languages.en]\ncontentDir = "content"\n[languages.fr]\ncontentDir = "../elsewhere"\n'
        },
        {
            "hugo.toml": 'baseURL = "/"\n[[module.mounts]]\nsource = "content"\ntarget = "content"\n'
            '[[module.mounts]]\nsource = "../elsewhere"\ntarget = "content"\nlang = "fr"\n'
        },
        {
            "hugo.toml": 'baseURL = "/"\n[[module.mounts]]\nsource = "content"\ntarget = "content"\n'
            '[[module.mounts]]\nsource = "../elsewhere"\ntarget = "static/fr"\n'
        },
    ],
)
def test_hugo_folders_outside_the_site_are_not_read(
    tmp_path: Path, outside: Path, config: dict[str, str]
) -> None:
    site = tmp_path / "site"
    _write(site, {**config, "content/_index.md": "[s](/fr/secret.txt) [t](/fr/nope.txt)\n", ".git/HEAD": "x"})
    detected = detect_site(site, stop=site)
    assert all("elsewhere" not in m.folder for m in detected.mounts)
    assert any("outside" in p for p in detected.problems)
    verdicts = _verdicts(site, site)
    assert verdicts["/fr/secret.txt"] is False and verdicts["/fr/nope.txt"] is False


@pytest.mark.parametrize("name", ["versions.json", "tsconfig.json", "locales.json"])
def test_a_named_pipe_beside_the_config_does_not_block(tmp_path: Path, name: str) -> None:
    config = (
        ("docusaurus.config.js", "module.exports = { baseUrl: '/' };\n")
        if name == "versions.json"
        else (
            "astro.config.mjs",
            "import starlight from '@astrojs/starlight';\nimport locales from './locales.json';\n"
            "export default { integrations: [starlight({ locales })] };\n",
        )
    )
    _write(tmp_path, {config[0]: config[1], "docs/a.md": "# A\n", "src/content/docs/a.md": "# A\n"})
    os.mkfifo(tmp_path / name)
    started = time.monotonic()
    site = detect_site(tmp_path / ("docs" if name == "versions.json" else "src/content/docs"), stop=tmp_path)
    assert time.monotonic() - started < 5
    assert site.generator in ("docusaurus", "starlight")


@pytest.mark.parametrize("n", [60, 5000, 200_000])
def test_unclosed_strings_of_backslashes_read_in_linear_time(n: int) -> None:
    started = time.monotonic()
    assert _js_string("baseUrl: '" + "\\" * n + "\n};", "baseUrl") is None
    assert _consts("const BASE = '" + "\\" * n + "\n") == {}
    assert time.monotonic() - started < 2


def test_crafted_text_reads_in_linear_time(tmp_path: Path) -> None:
    from udm.markdown import parse_document
    from udm.site.anchors import _strip_attributes
    from udm.site.jsconfig import _astro_redirects, _imported_locales

    cases = [
        # 131,000 unclosed <script tags in one HTML block (1 min 37 s in `udm lint` before).
        lambda: parse_document("# A\n\n" + "<script " * 131_000 + " href=x\n", "a.md").links,
        # A heading attribute list that never closes, or holds a `#` at its end (quadratic before).
        lambda: _strip_attributes("T {.a" + "a" * 600_000 + "#}"),
        lambda: _strip_attributes("T {k" + "a" * 600_000 + "x}"),
        # A run of spaces after `locales` (10 s for 40,000 before).
        lambda: _imported_locales("x", "starlight({ locales" + " " * 400_000 + "x })", tmp_path),
        # One redirect object holding 40,000 destinations and a nested block.
        lambda: _astro_redirects("redirects: { '/a': { " + "destination:'x' " * 40_000 + " {} } }"),
    ]
    for case in cases:
        started = time.monotonic()
        case()
        assert time.monotonic() - started < 3
