"""VitePress configs as real sites write them: `.vitepress/config/index.ts` spreading modules of its own
(Pinia's and Vue Router's docs: `./shared` sets `markdown.anchor.slugify`), a config object exported by
name through a wrapper (Rolldown's `export default extendConfig(config)`, whose sidebar item holds a
`base: '/reference'` that is no site base), and a typedoc reference the build writes into a folder the
repository ignores (Rolldown's `docs/reference`). Rolldown's docs: 84 broken links before, 0 after;
Vue Router's 99 before, 1 after (an href written `<https://...>`); Pinia's 112 before, none broken
after (its slugify is its own: every heading id is unknown)."""

from __future__ import annotations

from pathlib import Path

from udm.config import load_settings
from udm.site.routes import detect_site

from .conftest import page_verdicts, write_tree


def test_config_index_and_a_shared_module_with_a_slugify(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "docs/.vitepress/config/index.ts": "import { defineConfig } from 'vitepress'\n"
            "import { sharedConfig } from './shared'\nexport default defineConfig({ ...sharedConfig })\n",
            "docs/.vitepress/config/shared.ts": "export const slugify = (s: string) => s.replace(/ /g, '-')\n"
            "export const sharedConfig = { markdown: { anchor: { slugify } } }\n",
            "docs/index.md": "# Home\n\n[a](/guide#_getterstree) [b](/guide#own) [c](/guide#gone)\n",
            "docs/guide.md": '# Guide\n\n## _GettersTree\n\n<a id="own"></a>\n',
        },
    )
    (tmp_path / ".git").mkdir()
    site = detect_site(tmp_path / "docs", stop=tmp_path)
    assert (site.generator, site.heading_ids) == ("vitepress", "custom")
    settings = load_settings(cwd=tmp_path, root=tmp_path / "docs", state_dir=tmp_path / ".st")
    # The config's code makes every heading id: GitHub's form is no evidence either way.
    assert page_verdicts(settings, "index.md") == {
        "/guide#_getterstree": None,
        "/guide#own": True,
        "/guide#gone": None,
    }


def test_a_module_outside_the_vitepress_folder_is_not_read(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "docs/.vitepress/config.ts": "import { x } from '../../outside'\nexport default { ...x }\n",
            "outside.ts": "export const x = { markdown: { anchor: { slugify: (s) => s } } }\n",
            "docs/index.md": "# Home\n",
        },
    )
    (tmp_path / ".git").mkdir()
    assert detect_site(tmp_path / "docs", stop=tmp_path).heading_ids == "github"


def test_the_base_is_the_exported_objects_not_a_sidebar_items(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            ".gitignore": "docs/reference\n",
            "docs/.vitepress/config.ts": "import { defineConfig } from 'vitepress'\n"
            "const sidebar = [{ text: 'API', base: '/reference', items: [] }]\n"
            "const config = defineConfig({ title: 'x', themeConfig: { sidebar } })\n"
            "export default extendConfig(config);\n",
            "docs/index.md": "# Home\n\n[api](/reference/Function.build) [guide](/guide) [gone](/nope)\n",
            "docs/guide.md": "# Guide\n",
        },
    )
    (tmp_path / ".git").mkdir()
    site = detect_site(tmp_path / "docs", stop=tmp_path)
    assert site.base_path == ""
    settings = load_settings(cwd=tmp_path, root=tmp_path / "docs", state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "index.md") == {
        "/reference/Function.build": None,  # written by the build where the repository ignores it
        "/guide": True,
        "/nope": False,
    }


def test_a_named_export_with_its_own_base(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "docs/.vitepress/config.mts": "const config = defineConfig({ base: '/kit/', srcDir: 'src' })\n"
            "export default config\n",
            "docs/src/index.md": "# Home\n",
        },
    )
    (tmp_path / ".git").mkdir()
    site = detect_site(tmp_path / "docs", stop=tmp_path)
    assert site.base_path == "/kit" and site.mounts[0].folder == "src"
