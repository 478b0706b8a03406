"""What the Nextra attack rounds share: configs, a project written on disk, a page's link verdicts."""

from __future__ import annotations

from pathlib import Path

from udm.config import load_settings

from ..engine.conftest import page_verdicts, write_tree

PLAIN = "import nextra from 'nextra'\nexport default nextra({})({})\n"
I18N = (
    "import nextra from 'nextra'\n"
    "export default nextra({})({ i18n: { locales: ['en', 'es'], defaultLocale: 'en' } })\n"
)


def project(tmp_path: Path, files: dict[str, str]) -> Path:
    """The files written under `tmp_path`, made a git repository's root."""
    write_tree(tmp_path, files)
    (tmp_path / ".git").mkdir(exist_ok=True)
    return tmp_path


def verdicts(tmp_path: Path, files: dict[str, str], page: str, root: str = "") -> dict[str, bool | None]:
    """Each link of `page` and whether it resolves, the manual being `root` of the written project."""
    manual = project(tmp_path, files)
    if root:
        manual = manual / root
    settings = load_settings(cwd=manual, root=manual, state_dir=tmp_path / ".st")
    return page_verdicts(settings, page)
