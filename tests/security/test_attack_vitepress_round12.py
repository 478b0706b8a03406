"""Attack round 12 on VitePress configs read from real sites (01366c3) and links told apart by their
form (bc08bb8, 201f019): modules a config imports (`local_imports`), the object a config exports by
name (`_named_config_object`), routes into folders the repository ignores (`_ignored_route`), and the
patch validator agreeing with the index on an image and a link of one file.

A test marked `# FINDING:` was written failing on a real bug and says what should happen (7 findings,
all fixed: the exported object found in linear time, through wrappers, at the file's top level; imports
followed three levels, `.js` written for `.ts`, real paths checked; a gitignored folder the generator
builds no page from is broken, not generated); the others guard behaviour that holds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from udm.config import Settings, load_settings
from udm.patch import apply_patch, parse_patch
from udm.site.routes import detect_site

from ..engine.conftest import index_rows, link_verdicts, page_verdicts, write_tree

REPO = Path(__file__).resolve().parents[2]
SLUGIFY_MODULE = "export const shared = { markdown: { anchor: { slugify: (s) => s } } }\n"
SIDEBAR = "themeConfig: { sidebar: [{ text: 'API', base: '/reference/', items: [] }] }"
RSPRESS = "import { defineConfig } from '@rspress/core';\nexport default defineConfig({ root: 'docs' });\n"


def _settings(tmp_path: Path, files: dict[str, str]) -> Settings:
    write_tree(tmp_path, files)
    (tmp_path / ".git").mkdir(exist_ok=True)
    return load_settings(
        cwd=tmp_path, root=tmp_path / "docs", state_dir=tmp_path / ".st", logs_dir=tmp_path / ".logs"
    )


def _heading_ids(tmp_path: Path, files: dict[str, str]) -> str:
    write_tree(tmp_path, {"docs/index.md": "# Home\n", **files})
    (tmp_path / ".git").mkdir(exist_ok=True)
    site = detect_site(tmp_path / "docs", stop=tmp_path)
    assert site.generator == "vitepress"
    return site.heading_ids


# --- _named_config_object -------------------------------------------------------------------------


def test_the_named_export_pattern_is_not_cubic_on_a_blanked_comment(tmp_path: Path) -> None:
    # FINDING: `_EXPORTED_NAME` ends in `\s*\)?\s*;?\s*$` (re.M) and runs on `_masked(text)`, where a
    # block comment is all blanks. `export default config /* 800 chars */ ;x` takes ~1 s, 1,600
    # ~10 s, each doubling ~12x (three `\s*` around two optional tokens, then the name backtracked):
    # a 20 kB comment in a 1 MiB config hangs detection, at every `udm index`. Other config patterns
    # here are written to be linear (`_JS_TOKEN`, `_TO_BRACKET`). Should: detection well under a second.
    config = "export default config /*" + "x" * 20_000 + "*/ ;x\nconst config = { base: '/kit/' }\n"
    write_tree(tmp_path, {"docs/.vitepress/config.ts": config, "docs/index.md": "# Home\n"})
    (tmp_path / ".git").mkdir()
    code = (
        "import sys; from pathlib import Path; from udm.site.routes import detect_site; "
        "detect_site(Path(sys.argv[1]) / 'docs', stop=Path(sys.argv[1]))"
    )
    started = time.perf_counter()
    try:
        subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=REPO, timeout=20, check=True)
    except subprocess.TimeoutExpired:
        pytest.fail("detection of a 20 kB config ran past 20 s")
    assert time.perf_counter() - started < 10


def test_a_wrapper_around_an_inline_config_keeps_a_sidebar_base_out(tmp_path: Path) -> None:
    # FINDING: `export default withMermaid(defineConfig({ ..., themeConfig: { sidebar: [{ base:
    # '/reference/' }] } }))` (vitepress-plugin-mermaid's documented form; withPwa the same) is neither
    # `_EXPORTED` (it wants `defineConfig({` or `{` right after `export default`) nor a name, so `own`
    # falls back to the whole text and the sidebar item's `base` becomes the site's: base_path
    # '/reference', and `/reference/guide` (no such page: VitePress' `base` is the user config's top-level
    # key, src/node/config.ts `resolveSiteData`) resolves to guide.md. Should: base '' and False.
    config = "import { withMermaid } from 'vitepress-plugin-mermaid'\n"
    config += f"export default withMermaid(defineConfig({{ title: 'x', {SIDEBAR} }}))\n"
    settings = _settings(
        tmp_path,
        {
            "docs/.vitepress/config.ts": config,
            "docs/index.md": "# Home\n\n[a](/reference/guide) [b](/guide)\n",
            "docs/guide.md": "# Guide\n",
        },
    )
    assert detect_site(tmp_path / "docs", stop=tmp_path).base_path == ""
    assert page_verdicts(settings, "index.md") == {"/reference/guide": False, "/guide": True}


def test_a_config_const_inside_a_function_is_not_the_exported_one(tmp_path: Path) -> None:
    # FINDING: `_named_config_object` takes the first `const config = {` anywhere in the file, so a helper
    # function's local `const config = { base: '/reference/' }` above the top-level
    # `const config = defineConfig({ title })` that `export default config` names gives base
    # '/reference' (JavaScript scoping: the export names the module-level binding). `/reference/guide`
    # then resolves to guide.md. Should: base '' and the link False.
    config = (
        "function sectionConfig() {\n  const config = { base: '/reference/' }\n  return config\n}\n"
        "const config = defineConfig({ title: 'x' })\nexport default config\n"
    )
    settings = _settings(
        tmp_path,
        {
            "docs/.vitepress/config.ts": config,
            "docs/index.md": "# Home\n\n[a](/reference/guide)\n",
            "docs/guide.md": "# Guide\n",
        },
    )
    assert detect_site(tmp_path / "docs", stop=tmp_path).base_path == ""
    assert page_verdicts(settings, "index.md") == {"/reference/guide": False}


def test_a_typed_named_export_keeps_a_sidebar_base_out(tmp_path: Path) -> None:
    # Guard: `const config: UserConfig = {...}` with a sidebar item's base is read at its own level.
    write_tree(
        tmp_path,
        {
            "docs/.vitepress/config.ts": f"const config: UserConfig = {{ title: 'x', {SIDEBAR} }}\n"
            "export default config\n",
            "docs/index.md": "# Home\n",
        },
    )
    (tmp_path / ".git").mkdir()
    assert detect_site(tmp_path / "docs", stop=tmp_path).base_path == ""


# --- local_imports --------------------------------------------------------------------------------


def test_a_js_suffixed_import_of_a_ts_module_is_read(tmp_path: Path) -> None:
    # FINDING: TypeScript ESM writes `import { shared } from './shared.js'` for `shared.ts`; Vite's
    # resolver maps a `.js`/`.mjs`/`.cjs` import to its TypeScript source (vite
    # packages/vite/src/node/plugins/resolve.ts `isPossibleTsOutput`: "try resolve .js, .mjs, .cjs or
    # .jsx import to typescript file"), and the bundlers loading the config (esbuild, rolldown) do the
    # same. `local_imports` only adds suffixes to `./shared.js`, finds no file and misses the slugify:
    # ids stay "github". Should: "custom".
    ids = _heading_ids(
        tmp_path,
        {
            "docs/.vitepress/config.ts": "import { shared } from './shared.js'\nexport default { ...shared }\n",
            "docs/.vitepress/shared.ts": SLUGIFY_MODULE,
        },
    )
    assert ids == "custom"


def test_a_slugify_two_imports_deep_is_the_configs(tmp_path: Path) -> None:
    # FINDING: only the config's direct imports are read. `./shared` importing `./markdown` (which sets
    # `anchor.slugify`) is bundled into the config as well (Vite's `bundleConfigFile` bundles every
    # relative import), so VitePress makes ids with that slugify, yet the ids stay "github" and a
    # GitHub-form anchor the custom slugify does not make is reported broken. Should: "custom".
    ids = _heading_ids(
        tmp_path,
        {
            "docs/.vitepress/config.ts": "import { shared } from './shared'\nexport default { ...shared }\n",
            "docs/.vitepress/shared.ts": "import { md } from './markdown'\nexport const shared = { markdown: md }\n",
            "docs/.vitepress/markdown.ts": "export const md = { anchor: { slugify: (s) => s } }\n",
        },
    )
    assert ids == "custom"


def test_a_symlinked_module_out_of_the_vitepress_folder_is_not_read(tmp_path: Path) -> None:
    # FINDING: `local_imports` checks the normalised path (`candidate.startswith(limit)`) but not the
    # real one, so `.vitepress/shared.ts -> ../../outside.ts` is read (and fingerprinted by
    # `vitepress_inputs`) although `../../outside` written directly is refused
    # (tests/engine/test_vitepress_config.py), and symlinked Docsify scripts are refused (round 11).
    # Should: the real path must stay inside `.vitepress`; ids "github".
    write_tree(tmp_path, {"outside.ts": SLUGIFY_MODULE})
    (tmp_path / "docs" / ".vitepress").mkdir(parents=True)
    os.symlink(tmp_path / "outside.ts", tmp_path / "docs" / ".vitepress" / "shared.ts")
    ids = _heading_ids(
        tmp_path,
        {"docs/.vitepress/config.ts": "import { shared } from './shared'\nexport default { ...shared }\n"},
    )
    assert ids == "github"


@pytest.mark.parametrize(
    ("config", "module"),
    [
        ("export * from './shared'\nexport default {}\n", "docs/.vitepress/shared.ts"),
        ("const s = await import('./shared')\nexport default {}\n", "docs/.vitepress/shared.ts"),
        ("import { shared } from '../theme/shared'\nexport default {}\n", "docs/.vitepress/theme/shared.ts"),
    ],
)
def test_import_forms_inside_the_vitepress_folder_are_read(tmp_path: Path, config: str, module: str) -> None:
    # Guard: `export * from`, a dynamic import and `..` that stays inside `.vitepress` are all read.
    path = "docs/.vitepress/config/index.ts" if config.startswith("import { shared } from '../") else None
    files = {path or "docs/.vitepress/config.ts": config, module: SLUGIFY_MODULE}
    assert _heading_ids(tmp_path, files) == "custom"


def test_a_commented_import_is_not_read(tmp_path: Path) -> None:
    # Guard: `// import ... from './shared'` imports nothing.
    files = {
        "docs/.vitepress/config.ts": "// import { shared } from './shared'\nexport default {}\n",
        "docs/.vitepress/shared.ts": SLUGIFY_MODULE,
    }
    assert _heading_ids(tmp_path, files) == "github"


@pytest.mark.parametrize("start", ["plain", "absent"])
def test_an_edit_to_an_imported_module_re_resolves(tmp_path: Path, start: str) -> None:
    # Guard: the site is read again when `./shared.ts` changes (or appears) after the index was built.
    files = {
        "docs/.vitepress/config.ts": "import { shared } from './shared'\nexport default { ...shared }\n",
        "docs/index.md": "# Home\n\n[a](/guide#gone)\n",
        "docs/guide.md": "# Guide\n\n## Here\n",
    }
    if start == "plain":
        files["docs/.vitepress/shared.ts"] = "export const shared = { title: 'x' }\n"
    settings = _settings(tmp_path, files)
    assert page_verdicts(settings, "index.md") == {"/guide#gone": False}
    (tmp_path / "docs/.vitepress/shared.ts").write_text(SLUGIFY_MODULE + "// edited\n", encoding="utf-8")
    settings = load_settings(cwd=tmp_path, root=tmp_path / "docs", state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "index.md") == {"/guide#gone": None}


# --- _ignored_route -------------------------------------------------------------------------------


def test_a_route_into_an_ignored_folder_vitepress_never_builds_pages_from_is_broken(tmp_path: Path) -> None:
    # FINDING: a route into a gitignored folder is taken as "generated" (None) even where VitePress can
    # build no page: its page glob is `**/*.md` under srcDir with `ignore: ['**/node_modules/**',
    # '**/dist/**', ...srcExclude]` (src/node/utils/glob.ts, plugins/dynamicRoutesPlugin.ts
    # `resolvePages`). With `.gitignore` holding `dist`, `node_modules` and `drafts/`, and
    # `srcExclude: ['**/drafts/**']`, `/dist/x`, `/node_modules/x` and `/drafts/x` are dead links in
    # the built site (the site's own `unpublished` rule already says so). Should: False.
    settings = _settings(
        tmp_path,
        {
            ".gitignore": "dist\nnode_modules\ndrafts/\n",
            "docs/.vitepress/config.ts": "export default { srcExclude: ['**/drafts/**'] }\n",
            "docs/index.md": "# Home\n\n[a](/dist/x) [b](/node_modules/x) [c](/drafts/x)\n",
        },
    )
    assert page_verdicts(settings, "index.md") == {
        "/dist/x": False,
        "/node_modules/x": False,
        "/drafts/x": False,
    }


def test_ignored_route_follows_gits_negation_and_anchoring(tmp_path: Path) -> None:
    # Guard: `reference/*` then `!reference/keep/` takes `keep` back (git re-includes it: its parent is
    # not excluded, only its contents); `/reference` in docs/.gitignore is anchored to docs/.
    settings = _settings(
        tmp_path,
        {
            "docs/.gitignore": "reference/*\n!reference/keep/\n/api\n",
            "docs/.vitepress/config.ts": "export default {}\n",
            "docs/index.md": "# Home\n\n[a](/reference/keep/x) [b](/reference/gen) [c](/api/x) [d](/guide/api/x)\n",
        },
    )
    assert page_verdicts(settings, "index.md") == {
        "/reference/keep/x": False,
        "/reference/gen": None,
        "/api/x": None,
        "/guide/api/x": False,
    }


def test_relative_and_absolute_routes_into_an_ignored_folder_agree(tmp_path: Path) -> None:
    # Guard: the generated typedoc page is unknown however it is written; a missing page elsewhere is
    # still broken.
    settings = _settings(
        tmp_path,
        {
            ".gitignore": "docs/reference\n",
            "docs/.vitepress/config.ts": "export default {}\n",
            "docs/index.md": "# Home\n\n[a](./reference/Function.build) [b](/reference/Function.build) [c](/nope)\n",
            "docs/guide/page.md": "# Page\n\n[d](../reference/Function.build)\n",
        },
    )
    assert page_verdicts(settings, "index.md") == {
        "./reference/Function.build": None,
        "/reference/Function.build": None,
        "/nope": False,
    }
    assert page_verdicts(settings, "guide/page.md") == {"../reference/Function.build": None}


# --- Link.form ------------------------------------------------------------------------------------


def test_docsify_title_options_change_nothing_on_vitepress(tmp_path: Path) -> None:
    # Guard: `':include'`/`':ignore'` is only a title off Docsify: the link resolves as any other.
    settings = _settings(
        tmp_path,
        {
            "docs/.vitepress/config.ts": "export default {}\n",
            "docs/index.md": "# Home\n\n[a](/guide ':include') [b](/nope ':ignore') [c](./guide.md ':include')\n",
            "docs/guide.md": "# Guide\n",
        },
    )
    assert page_verdicts(settings, "index.md") == {"/guide": True, "/nope": False, "./guide.md": True}


def test_rspress_index_tells_an_image_from_a_link_and_an_embed_title(tmp_path: Path) -> None:
    # Guard: on Rspress an image of a non-page file is bundled, a link (any title) to it is dead.
    settings = _settings(
        tmp_path,
        {
            "rspress.config.ts": RSPRESS,
            "docs/index.md": "# Home\n\n![i](./chart.png) [l](./chart.png ':include')\n",
            "docs/chart.png": "png",
        },
    )
    assert _forms(settings) == {("image", True), ("embed", False)}


def _forms(settings: Settings) -> set[tuple[str, bool | None]]:
    rows = index_rows(settings, "SELECT form, resolved FROM links WHERE target = './chart.png'")
    return {(f, r) for f, r in rows}


@pytest.mark.parametrize(
    ("existing", "added", "status"),
    [
        ("![i](./chart.png)", "[n](./chart.png)", "invalid"),
        ("![i](./chart.png)", "[n](./chart.png ':include')", "invalid"),
        ("[n](./chart.png)", "![i](./chart.png)", "committed"),
        ("", "![i](./chart.png#x)", "committed"),
    ],
)
def test_rspress_patch_validator_agrees_with_the_index_on_forms(
    tmp_path: Path, existing: str, added: str, status: str
) -> None:
    # Guard: a patch adding a link to a non-page file is refused even beside an image of it (the
    # validator's rows carry the form as the index's do); an image is accepted.
    settings = _settings(
        tmp_path,
        {
            "rspress.config.ts": RSPRESS,
            "docs/index.md": f"# Home\n\n## Usage\n\n{existing}\n",
            "docs/chart.png": "png",
        },
    )
    link_verdicts(settings)
    op = {"op": "append_to_section", "file": "index.md", "section": "Usage", "content": added}
    assert apply_patch(parse_patch({"description": "x", "operations": [op]}), settings).status == status
