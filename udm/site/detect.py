"""Site detection: which generator publishes the manual, read from its config file, as a `Site`.

The config is read, never run: YAML (mkdocs.yml, unknown tags as null), TOML (book.toml, hugo.toml),
JSON (docs.json) and, for Docusaurus, the literal values of a JavaScript config. Hugo's may be one
file (hugo.* or config.*, TOML, YAML or JSON) or a config folder (`config/_default/`), whose other
files each hold one top-level key (`languages.toml`, `module.yaml`, `markup.toml`). `udm.site.routes` turns the
`Site` and the indexed pages into routes and resolves links with it.
"""

from __future__ import annotations

import itertools
import json
import os
import posixpath
import re
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from udm.datalimits import TextFormat, check_text
from udm.markdown import INDENTED_BLOCKS
from udm.shown import shown_line
from udm.site.anchors import zola_path_slug
from udm.site.docsify import docsify, docsify_inputs, is_docsify_page
from udm.site.fumadocs import fumadocs, fumadocs_inputs
from udm.site.gitignore import ignore_files, manual_ignored, pattern_lines, read_ignores
from udm.site.jsconfig import (
    _without_comments,
    astro_redirect_files,
    docs_versions_files,
    docusaurus,
    starlight,
    tsconfig_file,
    vitepress,
    vitepress_inputs,
    vuepress,
    vuepress_data,
    vuepress_inputs,
)
from udm.site.model import (
    GENERATORS,
    INDEX_NAMES,
    NUMBER_PREFIX,
    PAGE_SUFFIXES,
    ROUTE_SUFFIXES,
    SCHEME,
    Mount,
    Site,
    UnpublishedRule,
    path_of_url,
    read_head,
    static_folders,
    under,
    unpublished_rule,
    within,
)
from udm.site.nextra import NEXTRA, nextra, nextra_inputs
from udm.site.rspress import RSPRESS, rspress, rspress_inputs

if TYPE_CHECKING:
    from udm.config import Settings

__all__ = [
    "GENERATORS",
    "INDEX_NAMES",
    "NUMBER_PREFIX",
    "PAGE_SUFFIXES",
    "ROUTE_SUFFIXES",
    "SCHEME",
    "Mount",
    "Site",
    "configs_below",
    "detect_site",
    "note_line",
    "settings_site",
    "site_for",
    "site_notes",
    "strip_page",
]

_MAX_CONFIG_BYTES = 1 << 20
# How far above the manual root a generator's config file is looked for (a repository root stops it).
_MAX_LEVELS_UP = 6
_MKDOCS_NAMES = ("mkdocs.yml", "mkdocs.yaml")
_CONFIG_FILES: tuple[tuple[str, str], ...] = (
    ("docusaurus.config.js", "docusaurus"),
    ("docusaurus.config.ts", "docusaurus"),
    ("docusaurus.config.mjs", "docusaurus"),
    ("docusaurus.config.cjs", "docusaurus"),
    ("docs.json", "mintlify"),
    ("mint.json", "mintlify"),
    ("mkdocs.yml", "mkdocs"),
    ("mkdocs.yaml", "mkdocs"),
    ("book.toml", "mdbook"),
    # Zola's (`zola.toml`, else `config.toml` with Zola's `base_url`: Hugo's key is `baseURL`).
    ("zola.toml", "zola"),
    ("config.toml", "zola"),
    # Jekyll's (GitHub Pages'): a common name, taken when the folder reads as a Jekyll site (`_is_for`).
    ("_config.yml", "jekyll"),
    ("_config.yaml", "jekyll"),
    # MyST: mystmd's (Jupyter Book 2's) project file, or a Sphinx conf.py that loads MyST-Parser.
    ("myst.yml", "myst"),
    ("conf.py", "myst"),
    # Hugo's names, in Hugo's order; the config.* ones are common names, taken when they read as Hugo's.
    *((f"{name}.{ext}", "hugo") for name in ("hugo", "config") for ext in ("toml", "yaml", "yml", "json")),
    # Hugo's config folder (configDir `config`, environment `_default`).
    *(
        (f"config/_default/{name}.{ext}", "hugo")
        for name in ("hugo", "config")
        for ext in ("toml", "yaml", "yml", "json")
    ),
    # An Astro config publishes a Starlight manual only when it uses the integration (`_is_for`).
    *((f"astro.config.{ext}", "starlight") for ext in ("mjs", "ts", "js", "mts", "cjs")),
    # VitePress looks for `config/index.*` first (`resolveUserConfig`), then `config.*`.
    *((f".vitepress/config/index.{ext}", "vitepress") for ext in ("js", "ts", "mjs", "mts")),
    *((f".vitepress/config.{ext}", "vitepress") for ext in ("js", "ts", "mjs", "mts", "cjs", "cts")),
    *((f".vuepress/config.{ext}", "vuepress") for ext in ("js", "ts", "mjs", "mts", "cjs", "cts")),
    # VuePress 1 also reads a YAML or TOML config (`loadConfig`: config.yml and config.toml only).
    *((f".vuepress/config.{ext}", "vuepress") for ext in ("yml", "toml")),
    # Fumadocs' content config (a Next.js site), taken when it imports fumadocs-mdx.
    *((f"source.config.{ext}", "fumadocs") for ext in ("ts", "mts", "js", "mjs")),
    # A Next.js config publishes a Nextra site only when it wraps its config in Nextra's.
    *((f"next.config.{ext}", "nextra") for ext in ("js", "mjs", "ts", "mts", "cjs")),
    # Rspress' config, taken when it imports Rspress.
    *((f"rspress.config.{ext}", "rspress") for ext in ("ts", "mts", "js", "mjs", "cjs")),
    # Rstack's config: an Rspress site where it defines one (`define.doc({...})`).
    *((f"rstack.config.{ext}", "rspress") for ext in ("ts", "mts", "js", "mjs")),
    # Docsify's page: a common name, taken when its script sets `window.$docsify` or loads Docsify.
    ("index.html", "docsify"),
)


# ----- detection -----------------------------------------------------------------------------------


def _read_config(path: Path) -> str:
    raw = read_head(path, _MAX_CONFIG_BYTES)
    if len(raw) > _MAX_CONFIG_BYTES:
        raise ValueError(f"larger than {_MAX_CONFIG_BYTES} bytes")
    return raw.decode("utf-8", errors="replace")


def _folders_up(root: Path, stop: Path | None) -> Iterator[Path]:
    """`root` and the folders above it where a site config may be: up to a repository root, `stop`
    (the project root) or six levels."""
    here = root
    for _ in range(_MAX_LEVELS_UP + 1):
        yield here
        # The repository (or the project the settings were loaded in) is as far up as a site can be.
        if (here / ".git").exists() or here.parent == here or (stop is not None and here == stop):
            return
        here = here.parent


def _find_config(root: Path, stop: Path | None = None) -> tuple[Path, str] | None:
    for here in _folders_up(root, stop):
        hit = _config_in(here)
        if hit is not None:
            return hit
        for name, generator in _CONFIG_FILES[:4]:
            # Docusaurus' usual layout keeps its config in website/ beside the docs/ it publishes.
            candidate = here / "website" / name
            if candidate.is_file():
                return candidate, generator
    # GitBook's Git Sync config last: a repository that moved to another generator often keeps its
    # `.gitbook.yaml` (Redux's beside its Docusaurus site), and a space may be synced beside a site.
    for here in _folders_up(root, stop):
        candidate = here / _GITBOOK_CONFIG
        if candidate.is_file():
            return candidate, "gitbook"
    return None


_GITBOOK_CONFIG = ".gitbook.yaml"


def _other_mkdocs_configs(root: Path, stop: Path | None) -> list[Path]:
    """MkDocs configs of other names (`mkdocs-online.yml`, built with `--config-file`) at or above
    `root`, in the nearest folder holding any: never detected, since which one the site builds from
    is the build's choice."""
    for here in _folders_up(root, stop):
        try:
            names = sorted(e.name for e in os.scandir(here) if e.is_file(follow_symlinks=False))
        except OSError:
            continue
        found = [here / n for n in names if _generator_of(n) == "mkdocs" and n.lower() not in _MKDOCS_NAMES]
        if found:
            return found
    return []


def _is_for(name: str, generator: str, path: Path) -> bool:
    """Whether a config file of a common name is the generator's (Hugo's config.*, Starlight's Astro config)."""
    if generator == "zola":
        return name == "zola.toml" or _looks_like_zola(path)
    if name.startswith(("config.", "config/")):
        return _looks_like_hugo(path)
    if name.startswith("_config."):
        return _looks_like_jekyll(path)
    if name == "conf.py":
        return _config_holds(path, _SPHINX_MYST)
    if name.startswith("astro.config."):
        return _config_holds(path, _STARLIGHT)
    if name.startswith("source.config."):
        return _config_holds(path, _FUMADOCS)
    if name == "index.html":
        try:
            page = _read_config(path)
        except (OSError, ValueError):
            return False
        return is_docsify_page(page)
    if name.startswith(("next.config.", "rspress.config.", "rstack.config.")):
        # `import nextra from 'nextra'`, `from '@rspress/core'` in the code, not in a comment.
        pattern = NEXTRA if name.startswith("next.") else RSPRESS
        try:
            return pattern.search(_without_comments(_read_config(path))) is not None
        except (OSError, ValueError):
            return False
    return True


_STARLIGHT = re.compile(re.escape("@astrojs/starlight"))
_FUMADOCS = re.compile(re.escape("fumadocs-mdx"))


def _config_holds(path: Path, pattern: re.Pattern[str]) -> bool:
    """Whether a config file's text holds `pattern` (a file that cannot be read holds nothing)."""
    try:
        return pattern.search(_read_config(path)) is not None
    except (OSError, ValueError):
        return False


def _looks_like_zola(path: Path) -> bool:
    """Whether a `config.toml` is Zola's: it must set `base_url` (Hugo's is `baseURL`, any case)."""
    try:
        data = _config_data(_read_config(path), ".toml")
    except Exception:  # TOML's errors, the limits, tomllib's recursion: not Zola's
        return False
    return isinstance(data.get("base_url"), str)


def _looks_like_hugo(path: Path) -> bool:
    # config.* is a common name; Hugo's has a baseURL, a contentDir, a theme or its languages.
    try:
        data = _config_data(_read_config(path), path.suffix)
    except Exception:  # each format's errors, the limits, tomllib's recursion on a deep array: not Hugo's
        return False
    keys = {k.lower() for k in data if isinstance(k, str)} if isinstance(data, dict) else set()
    if keys & {"baseurl", "contentdir", "languagecode", "defaultcontentlanguage"}:
        return True
    # `theme` and `module` are common words in other tools' config files: Hugo's sits in a site folder.
    site = path.parent.parent.parent if path.parent.name == "_default" else path.parent
    return bool(keys & {"theme", "module"}) and any(
        (site / d).is_dir() for d in ("content", "layouts", "themes")
    )


# Keys only Jekyll's config has among the tools that name theirs `_config.yml`; and its site folders.
_JEKYLL_KEYS = frozenset(
    {
        "baseurl",
        "permalink",
        "collections",
        "collections_dir",
        "remote_theme",
        "markdown",
        "kramdown",
        "highlighter",
        "plugins",
        "gems",
        "defaults",
        "paginate",
        "sass",
        "jekyll-archives",
        "exclude",
    }
)
_JEKYLL_FOLDERS = ("_layouts", "_includes", "_posts", "_sass", "_data", "_drafts")


def _looks_like_jekyll(path: Path) -> bool:
    """Whether a `_config.yml` is Jekyll's: Jupyter Book's has a `_toc.yml` beside it; Jekyll's has
    keys of its own, a theme, or the site folders Jekyll reads (`_layouts`, `_posts`...)."""
    here = path.parent
    if any((here / name).exists() for name in ("_toc.yml", "_toc.yaml")):
        return False
    try:
        data = _config_data(_read_config(path), path.suffix)
    except Exception:  # each format's errors and the limits: not a site config here
        return False
    keys = {k.lower() for k in data if isinstance(k, str)} if isinstance(data, dict) else set()
    if keys & _JEKYLL_KEYS or "theme" in keys:
        return True
    return any((here / name).is_dir() for name in _JEKYLL_FOLDERS)


def _config_data(text: str, suffix: str) -> Any:
    """A TOML, YAML or JSON config's data, by its suffix (the data limits checked before any parse)."""
    suffix = suffix.lower()
    if not text.strip():
        return {}
    if suffix == ".json":
        check_text(text, "json", what="the site config")
        return json.loads(text)
    if suffix in (".yaml", ".yml"):
        check_text(text, "yaml", what="the site config")
        return _LenientLoader.load(text) or {}
    check_text(text, "toml", what="the site config")
    return tomllib.loads(text)


def _one_folder(root: Path, folder: Path, redirects: list[tuple[str, str]], site_url: Any = None) -> Site:
    """A site whose pages are one folder served from its base path (Mintlify, MkDocs, mdBook)."""
    mount = under(root, folder, "", "docs", False)
    return Site(
        mounts=(mount,) if mount else (),
        base_path=path_of_url(site_url),
        redirects=tuple(redirects),
        static=static_folders(root, [folder]),
    )


def detect_site(
    root: Path,
    generator: str = "auto",
    base_path: str | None = None,
    stop: Path | None = None,
    config: Path | None = None,
) -> Site:
    """The site conventions of the manual at `root`: detected from a config file unless `generator` says.

    The config file is `config` when given, else looked for in `root` and the folders above it, up to a
    repository root, `stop` (the project root) or six levels.
    """
    if generator not in ("auto", *GENERATORS):
        raise ValueError(f"site generator {generator!r}: expected auto or one of {', '.join(GENERATORS)}")
    if config is not None and generator != "none":
        site = _named_config(root, generator, stop, config)
    else:
        site = _found_site(root, generator, stop)
    if base_path is not None:
        site = replace(site, base_path=path_of_url(base_path))
    files = ignore_files(root)
    ignores = read_ignores(root, files)
    if manual_ignored(ignores):
        return site  # a scratch copy in a folder the repository ignores: none of its files
    if site.generator in ("none", "nextra") and files:
        # The repository's root, from the manual's: its `.gitignore` files run from there down to it.
        site = replace(site, repository="/".join([".."] * (len(files) - 1)))
    return replace(site, ignores=ignores)


def _found_site(root: Path, generator: str, stop: Path | None) -> Site:
    """The site of the config file found at or above `root` (the generator's defaults when `generator`
    names one without a config file); no `.gitignore` rules yet."""
    found = _find_config(root, stop) if generator != "none" else None
    if generator not in ("auto", "none") and (found is None or found[1] != generator):
        # Named in the settings but no config file of it: its conventions from the root, defaults.
        found = (root / "__none__", generator)
    site = Site()
    if found is not None:
        path, gen = found
        try:
            site = _read_site(root, path, gen)
        except Exception as exc:  # each reader (JSON, YAML, TOML, JS) has its own error types
            site = Site(generator=gen, problems=(f"{path}: cannot read the site config: {exc}",))
        is_file = path.is_file()
        site = replace(site, generator=gen, config_file=str(path) if is_file else None)
        if is_file:
            site = _within(site, root, _boundary(root, path.parent, stop))
    return site


# How a config file's text is measured before it is parsed, by its suffix (TOML: its brackets and its
# dotted keys, `check_toml`).
_CONFIG_FORMATS: dict[str, TextFormat] = {".json": "json", ".yml": "yaml", ".yaml": "yaml", ".toml": "toml"}


def _read_site(root: Path, path: Path, gen: str) -> Site:
    """The site a generator's config file describes (its defaults when there is no such file); raises
    what the file's reader raises."""
    text = _read_config(path) if path.is_file() else ""
    suffix = path.suffix.lower()
    if suffix in _CONFIG_FORMATS:
        # Measured before any parser recurses into it: a file of the manual is untrusted input.
        check_text(text, _CONFIG_FORMATS[suffix], what="the site config")
    # Hugo's reader needs the file itself: its suffix says the format, its folder may be config/_default.
    if gen == "hugo":
        return _hugo(root, path, text)
    if gen == "vuepress" and suffix in (".yml", ".toml"):
        return vuepress_data(root, path.parent, _config_data(text, suffix))
    return _READERS[gen](root, path.parent, text)


def _named_config(root: Path, generator: str, stop: Path | None, config: Path) -> Site:
    """The site of a config file the settings name (`site_config`): its generator the setting's, or
    told by its name; a file that is missing or whose generator cannot be told is a problem."""
    gen = generator if generator != "auto" else _generator_of(config.name)
    if gen is None:
        problem = f"{config}: cannot tell the site generator from its name; set site_generator"
        return Site(problems=(problem,))
    if not config.is_file():
        return Site(generator=gen, problems=(f"{config}: site_config names no file",))
    try:
        site = _read_site(root, config, gen)
    except Exception as exc:  # each reader (JSON, YAML, TOML, JS) has its own error types
        # The generator's defaults, as for a generator named without a config file.
        defaults = _found_site(root, gen, stop)
        return replace(defaults, problems=(f"{config}: cannot read the site config: {exc}",))
    site = replace(site, generator=gen, config_file=str(config))
    return _within(site, root, _boundary(root, config.parent, stop))


def _generator_of(name: str) -> str | None:
    """The generator a config file's name says (`mkdocs-online.yml` is MkDocs'), None when it says none."""
    lower = name.lower()
    for known, gen in _CONFIG_FILES:
        if "/" not in known and lower == known and not known.startswith("config."):
            return gen
    if lower.startswith("mkdocs") and lower.endswith((".yml", ".yaml")):
        return "mkdocs"
    if lower.startswith("docusaurus.config."):
        return "docusaurus"
    return "gitbook" if lower == _GITBOOK_CONFIG else None


def _boundary(root: Path, config_dir: Path, stop: Path | None) -> Path:
    """How far out of the manual a site's folders may lie: the repository (or project) holding the
    config, else the folder that holds both the manual and the config."""
    here = config_dir
    for _ in range(64):
        if (here / ".git").exists() or (stop is not None and here == stop):
            return here
        if here.parent == here:
            break
        here = here.parent
    return Path(os.path.commonpath([os.path.normpath(root), os.path.normpath(config_dir)]))


def _within(site: Site, root: Path, boundary: Path) -> Site:
    """The site with the folders its config names outside `boundary` left out, each as a problem.

    The config is untrusted input: a content folder of `/etc` (a Hugo `contentDir`, a module mount,
    a docs `path`) would let a link ask whether any file of the machine exists."""
    limit = os.path.normpath(boundary)

    def inside(rel: str) -> bool:
        return within(os.path.join(root, rel), limit)

    mounts = tuple(m for m in site.mounts if inside(m.folder))
    static = tuple(f for f in site.static if inside(f))
    aliases = tuple(a for a in site.aliases if inside(a[1]))
    dropped = [m.folder for m in site.mounts if m not in mounts] + [f for f in site.static if f not in static]
    dropped += [a[1] for a in site.aliases if a not in aliases]
    if not dropped:
        return site
    problems = tuple(f"{folder}: outside {limit}, not read as part of the site" for folder in dropped)
    return replace(site, mounts=mounts, static=static, aliases=aliases, problems=site.problems + problems)


def _mintlify(root: Path, here: Path, text: str) -> Site:
    data = json.loads(text) if text.strip() else {}
    listed = data.get("redirects") if isinstance(data, dict) else None
    if isinstance(listed, dict) and isinstance(listed.get("$ref"), str):
        # docs.json may keep a key in another file of its folder: {"$ref": "./redirects.json"}.
        ref = (here / listed["$ref"]).resolve()
        listed = (
            json.loads(_read_config(ref)) if ref.is_relative_to(here.resolve()) and ref.is_file() else None
        )
    redirects = []
    for item in listed if isinstance(listed, list) else []:
        if (
            isinstance(item, dict)
            and isinstance(item.get("source"), str)
            and isinstance(item.get("destination"), str)
        ):
            redirects.append((item["source"], item["destination"]))
    site = _one_folder(root, here, redirects)
    # Mintlify publishes no page of its own ignored files, of `.mintignore`'s, or of `/snippets/`
    # (a snippet renders only where a page imports it).
    lines = [*_MINTLIFY_IGNORED, "/snippets/", *pattern_lines(here / ".mintignore")]
    rule = unpublished_rule("docs", root, [here], "gitignore", lines)
    return replace(site, unpublished=(rule,) if rule else ())


# What Mintlify leaves out of every site without a `.mintignore` saying so (its documented list).
_MINTLIFY_IGNORED = (
    ".git",
    ".github",
    ".claude",
    ".agents",
    ".idea",
    ".vscode",
    "node_modules",
    "build",
    "dist",
    "coverage",
    ".cache",
    "tmp",
    "temp",
    "README.md",
    "LICENSE.md",
    "CHANGELOG.md",
    "CONTRIBUTING.md",
)


class _LenientLoader:
    """A YAML SafeLoader that reads `!!python/name:` and other unknown tags as null (mkdocs.yml uses them)."""

    @staticmethod
    def load(text: str) -> Any:
        import yaml

        class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
            pass

        Loader.add_multi_constructor("", lambda loader, suffix, node: None)
        Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
        Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)
        return yaml.load(text, Loader=Loader)


def _mkdocs(root: Path, here: Path, text: str) -> Site:
    data = _LenientLoader.load(text) or {}
    if not isinstance(data, dict):
        raise ValueError("mkdocs.yml is not a mapping")
    data, problems = _inherit(root, here, data)
    site = _mkdocs_site(root, here, data)
    return replace(site, problems=site.problems + problems)


_MAX_INHERIT = 8


def _inherit(root: Path, here: Path, data: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """mkdocs.yml with the configs its `INHERIT` names merged below it, as MkDocs merges them (the
    parent's mappings key by key, anything else the child's), and what could not be read. Each path
    is relative to the config naming it and must stay in the site's repository."""
    limit = _boundary(root, here, None).resolve()
    chain, seen, problems = [data], set(), []
    folder = here
    while isinstance(chain[-1].get("INHERIT"), str):
        named = chain[-1]["INHERIT"]
        parent = (folder / named).resolve()
        if len(chain) > _MAX_INHERIT or parent in seen:
            problems.append(f"INHERIT {named}: a chain longer than {_MAX_INHERIT} or a loop, not followed")
            break
        if not parent.is_relative_to(limit) or not parent.is_file():
            where = "outside the site's repository" if not parent.is_relative_to(limit) else "no such file"
            problems.append(f"INHERIT {named}: {where}, not read")
            break
        seen.add(parent)
        try:
            text = _read_config(parent)
            check_text(text, "yaml", what="an inherited MkDocs config")
            loaded = _LenientLoader.load(text) or {}
        except Exception as exc:  # the reader's and YAML's own errors: the child is read alone
            problems.append(f"INHERIT {named}: cannot read it: {exc}")
            break
        if not isinstance(loaded, dict):
            problems.append(f"INHERIT {named}: not a mapping, not read")
            break
        chain.append(loaded)
        folder = parent.parent
    merged: dict[str, Any] = {}
    budget = [_MAX_MERGE]
    for config in reversed(chain):
        try:
            merged = _merged(merged, config, budget)
        except ValueError as exc:
            problems.append(f"INHERIT: {exc}; the configs above it are left out")
            merged = dict(data)
            break
    merged.pop("INHERIT", None)
    return merged, tuple(problems)


# Keys a merge may visit: YAML aliases can make a small config a huge tree to walk.
_MAX_MERGE = 20_000


def _merged(parent: dict[str, Any], child: dict[str, Any], budget: list[int]) -> dict[str, Any]:
    """`child` over `parent`: mappings merged key by key, lists and values replaced (mergedeep's
    default, which MkDocs uses for INHERIT); ValueError past the budget of keys."""
    out = dict(parent)
    for key, value in child.items():
        budget[0] -= 1
        if budget[0] < 0:
            raise ValueError(f"more than {_MAX_MERGE} keys to merge")
        below = out.get(key)
        if isinstance(below, dict) and isinstance(value, dict):
            out[key] = _merged(below, value, budget)
        else:
            out[key] = value
    return out


def _mkdocs_site(root: Path, here: Path, data: dict[str, Any]) -> Site:
    docs_dir = here / str(data.get("docs_dir") or "docs")
    redirects: list[tuple[str, str]] = []
    for plugin in data.get("plugins") or []:
        if isinstance(plugin, dict) and isinstance(plugin.get("redirects"), dict):
            maps = plugin["redirects"].get("redirect_maps") or {}
            for old, new in maps.items() if isinstance(maps, dict) else []:
                if isinstance(old, str) and isinstance(new, str):
                    dest = new if SCHEME.match(new) else "/" + strip_page(new)
                    redirects.append(("/" + strip_page(old), dest))
    redirects += _i18n_fallbacks(data.get("plugins"))
    site = _one_folder(root, docs_dir, redirects, data.get("site_url"))
    listed = data.get("markdown_extensions")
    extensions = _named(listed)
    indented = tuple(sorted({mark for name, mark in INDENTED_BLOCKS.items() if name in extensions}))
    tabbed = _options(listed, "pymdownx.tabbed")
    # The slugify option is a Python callable; the lenient loader reads its tag as null, but the key stays.
    tab_ids = ("combined" if tabbed.get("combine_header_slug") else "slug") if "slugify" in tabbed else ""
    rules, problems = _mkdocs_unpublished(root, docs_dir, data)
    return replace(
        site,
        autorefs=_autorefs_mode(data.get("plugins")),
        indented=indented,
        tab_ids=tab_ids,
        unpublished=rules,
        snippets="pymdownx.snippets" in extensions,
        templated=bool(data.get("hooks")) or "macros" in _named(data.get("plugins")),
        problems=(*site.problems, *problems),
    )


# MkDocs builds nothing from these (besides what `exclude_docs` adds): dot files and folders, and
# the theme overrides folder `templates/` at the top of `docs_dir`.
_MKDOCS_EXCLUDE = (".*", "/templates/")


def _mkdocs_unpublished(
    root: Path, docs_dir: Path, data: dict[str, Any]
) -> tuple[tuple[UnpublishedRule, ...], tuple[str, ...]]:
    """The files of `docs_dir` MkDocs builds no page from: `exclude_docs` (`.gitignore` lines after
    MkDocs' own two, matched as the pathspec library MkDocs uses matches them), and the mkdocs-exclude plugin's `glob` patterns (`fnmatchcase` over the path
    from `docs_dir`); its `regex` patterns are not read (a config's regex is not run here), which
    is a problem of the site."""
    lines = list(_MKDOCS_EXCLUDE)
    extra = data.get("exclude_docs")
    if isinstance(extra, str):
        lines += extra.splitlines()
    options = _options(data.get("plugins"), "exclude")
    globs, regexes = (_strings(options.get(key)) for key in ("glob", "regex"))
    problems = (
        (
            f"the exclude plugin's regex patterns are not read ({len(regexes)}): the files they leave "
            "out are taken as pages",
        )
        if regexes
        else ()
    )
    rules = [
        unpublished_rule("docs", root, [docs_dir], "pathspec", lines),
        unpublished_rule("docs", root, [docs_dir], "fnmatch", globs),
    ]
    return tuple(r for r in rules if r is not None), problems


def _strings(value: Any) -> list[str]:
    """A plugin option given as one string or a list: its strings that are not blank."""
    values = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return [v for v in values if isinstance(v, str) and v.strip()]


def _i18n_fallbacks(plugins: Any) -> list[tuple[str, str]]:
    """mkdocs-static-i18n with `docs_structure: folder`: a page not translated is built at its
    language's route from the default language's page (`fallback_to_default`, on unless turned off),
    so `/ja/x/` serves `x.md`; as redirects from each other language's routes to the default's."""
    options = _options(plugins, "i18n")
    if options.get("docs_structure") != "folder" or options.get("fallback_to_default") is False:
        return []
    languages = options.get("languages")
    out = []
    for language in languages[:100] if isinstance(languages, list) else []:
        locale = language.get("locale") if isinstance(language, dict) else None
        named = isinstance(locale, str) and re.fullmatch(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*", locale)
        if named and not language.get("default"):
            out.append((f"/{locale}/:slug*", "/:slug*"))
    return out


def _options(entries: Any, name: str) -> dict[str, Any]:
    """The options a MkDocs plugin or Markdown extension is given ({} when none, or not listed)."""
    found = entries.get(name) if isinstance(entries, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and name in entry:
            found = entry[name]
    return found if isinstance(found, dict) else {}


def _named(entries: Any) -> set[str]:
    """The names of MkDocs plugins or Markdown extensions, in either of MkDocs' forms: a list of names
    and one-key mappings, or one mapping of names to options."""
    names: set[str] = {k for k in entries if isinstance(k, str)} if isinstance(entries, dict) else set()
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, str):
            names.add(entry)
        elif isinstance(entry, dict):
            names.update(k for k in entry if isinstance(k, str))
    return names


def _autorefs_mode(plugins: Any) -> str:
    """How mkdocs-autorefs cross-references resolve on this MkDocs site: "objects" with mkdocstrings
    (which turns autorefs on; an identifier may name an API object or another site's inventory entry),
    "headings" with autorefs alone (only the site's heading and Markdown anchors), "" without it."""
    names = _named(plugins)
    if "mkdocstrings" in names:
        return "objects"
    return "headings" if "autorefs" in names else ""


def _mdbook(root: Path, here: Path, text: str) -> Site:
    data = tomllib.loads(text)
    book: dict[str, Any] = data["book"] if isinstance(data.get("book"), dict) else {}
    src = here / str(book.get("src") or "src")
    html = (data.get("output") or {}).get("html") or {}
    redirects = []
    for old, new in (html.get("redirect") or {}).items():
        if isinstance(new, str):
            dest = (
                new
                if SCHEME.match(new) or new.startswith("/")
                else posixpath.join(posixpath.dirname(old), new)
            )
            redirects.append((old, dest))
    return _one_folder(root, src, redirects, html.get("site-url"))


def _gitbook(root: Path, here: Path, text: str) -> Site:
    """A GitBook space synced from Git (`.gitbook.yaml`, GitBook's content configuration): its pages
    are the `root` folder's (the file's own by default), each at its path without `.md` (a folder's
    `README.md` at the folder); `structure.readme` is the space's first page, at its root; each of
    `redirects` sends an old path of the space to a file, both read from `root`."""
    data = _config_data(text, ".yaml")
    # Copied from GitBook's docs, a key may carry a zero-width space (`\u200bstructure:`).
    data = {_gitbook_key(k): v for k, v in data.items()} if isinstance(data, dict) else {}
    folder = data.get("root")
    base = here / folder if isinstance(folder, str) and folder.strip() else here
    structure = data.get("structure")
    structure = {_gitbook_key(k): v for k, v in structure.items()} if isinstance(structure, dict) else {}
    redirects: list[tuple[str, str]] = []
    readme = _gitbook_file(structure.get("readme"))
    if readme is not None and readme.lower() != "/readme.md":
        redirects.append(("/", readme))  # the space's root shows the first page
    moved = data.get("redirects")
    for old, new in itertools.islice(
        moved.items() if isinstance(moved, dict) else (), _MAX_GITBOOK_REDIRECTS
    ):
        # A path holding `:`, `*` or `(` would be read as a pattern of the redirects: GitBook's are literal.
        if not isinstance(old, str) or _GITBOOK_PATTERN.search(old):
            continue
        source, dest = old.strip().strip("/"), _gitbook_file(new)
        if source and dest is not None:
            redirects.append(("/" + source, dest))
    return _one_folder(root, base, redirects)


def _gitbook_file(value: Any) -> str | None:
    """A file of a GitBook space as `.gitbook.yaml` names one (from `root`, with a leading `/` or `./`
    or none), as a route from the site's root; None for no path. GitBook reads a file there, never a
    URL: `javascript:x` or `https://x` is a file name that is not in the space."""
    if not isinstance(value, str) or not value.strip():
        return None
    path = posixpath.normpath(value.strip().replace("\\", "/").lstrip("/"))
    return None if path == "." else "/" + path


_GITBOOK_PATTERN = re.compile(r"[:*()]")
_MAX_GITBOOK_REDIRECTS = 5_000
_ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"


def _gitbook_key(key: Any) -> Any:
    """A `.gitbook.yaml` key without the zero-width characters a copy from a web page leaves in it."""
    return key.strip(_ZERO_WIDTH + " \t") if isinstance(key, str) else key


# Jekyll's permalink styles, by name (`permalink: pretty`).
_JEKYLL_STYLES = {
    "date": "/:categories/:year/:month/:day/:title:output_ext",
    "pretty": "/:categories/:year/:month/:day/:title/",
    "ordinal": "/:categories/:year/:y_day/:title:output_ext",
    "weekdate": "/:categories/:year/W:week/:short_day/:title:output_ext",
    "none": "/:categories/:title:output_ext",
}
_JEKYLL_COLLECTION = "/:collection/:path:output_ext"
_MAX_COLLECTIONS = 50


def _jekyll(root: Path, here: Path, text: str) -> Site:
    """A Jekyll site: its pages where they lie (`about.md` is /about.html), its collections under
    their permalinks (`_docs/x.md` is /docs/x/ by `/:collection/:path/`), its posts by date, its
    `baseurl`; files and folders whose names start with `_` (but collections) and `exclude` build
    no page. A page's own `permalink` and `redirect_from` are read from its front matter."""
    data = _config_data(text, ".yml")
    data = data if isinstance(data, dict) else {}
    site_style = _jekyll_style(data.get("permalink"))
    raw = data.get("collections")
    collections: dict[str, dict[str, Any]] = {}
    if isinstance(raw, list):
        collections = {str(name): {} for name in raw if isinstance(name, (str, int))}
    elif isinstance(raw, dict):
        collections = {str(k): (v if isinstance(v, dict) else {}) for k, v in raw.items()}
    collections = dict(itertools.islice(collections.items(), _MAX_COLLECTIONS))
    posts = collections.pop("posts", {})
    folder = data.get("collections_dir")
    base = here / folder if isinstance(folder, str) and folder.strip() else here
    mounts: list[Mount] = []
    permalinks: list[tuple[str, str]] = []
    kept: list[str] = []
    for name, options in collections.items():
        if "/" in name or name in (".", "..") or options.get("output") is not True:
            continue  # a collection not written out has no pages: its files link to nothing
        mount = under(root, base / f"_{name}", "", f"jekyll:{name}", False)
        if mount is not None:
            mounts.append(mount)
            pattern = _jekyll_style(options.get("permalink"))
            permalinks.append((f"collection:{name}", pattern or site_style or _JEKYLL_COLLECTION))
            kept.append(f"_{name}")
    posts_style = _jekyll_style(posts.get("permalink") if isinstance(posts, dict) else None)
    permalinks.append(("collection:posts", posts_style or site_style or _JEKYLL_STYLES["date"]))
    if site_style is not None:
        permalinks.append(("pages", site_style))
    permalinks += _jekyll_defaults(data.get("defaults"))
    site = under(root, here, "", "pages", False)
    if site is not None:
        mounts.append(site)
    listed = data.get("exclude")
    excluded = [e.strip() for e in listed if isinstance(e, str)] if isinstance(listed, list) else []
    # Jekyll reads no file or folder whose name starts with `_` or `.` but its collections and posts
    # (`_posts` in any folder: the folders above it are the posts' categories).
    lines = ["_*", ".*", *(f"!/{name}/**" for name in kept), "!**/_posts/**", *excluded]
    rule = unpublished_rule("site", root, [here], "pathspec", lines)
    return Site(
        mounts=tuple(mounts),
        base_path=path_of_url(data.get("baseurl")),
        static=static_folders(root, [here]),
        permalinks=tuple(permalinks),
        unpublished=(rule,) if rule is not None else (),
        html_pages=_jekyll_html_pages(root, here),
    )


# What lets a reference name more than the site's own targets: Sphinx's autodoc (API objects) and
# intersphinx (other projects'), mystmd's `references` (other projects').
_MYST_OBJECTS = re.compile(
    r"""["'](?:sphinx\.ext\.(?:autodoc|intersphinx)|autodoc2|autoapi\.extension)["']|^[ \t]*references:""",
    re.M,
)
# A Sphinx conf.py that loads MyST's parser (in `extensions`, as most do).
_SPHINX_MYST = re.compile(r"""["'](?:myst_parser|myst_nb)["']""")


def _myst(root: Path, here: Path, text: str) -> Site:
    """A MyST site (Sphinx with MyST-Parser, mystmd): the config's folder's pages by their paths, and
    targets that are the whole site's (`[](#label)` may name one on another page)."""
    mount = under(root, here, "", "docs", False)
    labels = "objects" if _MYST_OBJECTS.search(text) else "site"
    return Site(mounts=(mount,) if mount else (), static=static_folders(root, [here]), labels=labels)


def _jekyll_defaults(raw: Any) -> list[tuple[str, str]]:
    """The permalinks the config's front matter `defaults` set for a scope, as
    (`default:<type>:<path>`, pattern): `type` a collection's name, `posts` or `pages` ("" for any),
    `path` from the site's folder ("" for all of it), in the config's order (a later one of a scope
    as specific wins, as Jekyll's does)."""
    found: list[tuple[str, str]] = []
    for entry in raw[:_MAX_DEFAULTS] if isinstance(raw, list) else []:
        if not isinstance(entry, dict):
            continue
        scope, values = entry.get("scope"), entry.get("values")
        pattern = _jekyll_style(values.get("permalink")) if isinstance(values, dict) else None
        if pattern is None or not isinstance(scope, dict):
            continue
        path, kind = scope.get("path", ""), scope.get("type", "")
        if not isinstance(path, str) or not isinstance(kind, str) or ":" in kind or len(path) > _MAX_PATTERN:
            continue
        found.append((f"default:{kind.strip()}:{path.strip().strip('/')}", pattern))
    return found


_MAX_DEFAULTS = 200


def _jekyll_style(value: Any) -> str | None:
    """A permalink setting as its pattern (a style's name is its pattern); None when unset, or longer
    than any URL pattern is (every page's route would be made from it)."""
    if not isinstance(value, str) or not value.strip() or len(value) > _MAX_PATTERN:
        return None
    return _JEKYLL_STYLES.get(value.strip(), value.strip())


_MAX_PATTERN = 300
_MAX_HTML_PAGES = 5000
_HTML_HEAD = 4096
_PERMALINK_LINE = re.compile(r"""^permalink:[ \t]*["']?([^"'#\n]*?)["']?[ \t]*(?:#.*)?$""", re.M)


def _jekyll_html_files(here: Path) -> list[Path]:
    """The HTML files of a Jekyll site folder that may be pages (folders starting with `_` or `.`,
    `node_modules` and `vendor` not read), sorted, at most a few thousand."""
    found: list[Path] = []
    for current, dirs, files in os.walk(here):
        dirs[:] = sorted(
            d for d in dirs if not d.startswith(("_", ".")) and d not in ("node_modules", "vendor")
        )
        for name in sorted(files):
            if name.lower().endswith((".html", ".htm")) and not name.startswith(("_", ".")):
                found.append(Path(current) / name)
                if len(found) >= _MAX_HTML_PAGES:
                    return found
    return found


def _jekyll_html_pages(root: Path, here: Path) -> tuple[tuple[str, str], ...]:
    """The HTML pages of a Jekyll site (a file whose front matter Jekyll renders): each one's route
    key, its `permalink` or its path, and its path from the manual root."""
    pages: list[tuple[str, str]] = []
    real = os.path.realpath(here)
    for path in _jekyll_html_files(here):
        if path.is_symlink() and not within(os.path.realpath(path), real):
            continue  # a link out of the site: no page of it, and nothing of that file is read
        try:
            head = read_head(path, _HTML_HEAD).decode("utf-8", "replace")
        except OSError:
            continue
        if not head.startswith("---"):
            continue  # no front matter: copied as it is, found as a static file
        end = head.find("\n---", 3)
        found = _PERMALINK_LINE.search(head, 0, end if end > 0 else len(head))
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        if rel.startswith("../"):
            continue
        route = found.group(1) if found and found.group(1).strip() else os.path.relpath(path, here)
        pages.append((strip_page(route.replace(os.sep, "/")), rel))
    return tuple(pages)


def _hugo_config(path: Path, text: str) -> tuple[Path, dict[str, Any]]:
    """The Hugo site's folder and its config: one file, or a config folder's files merged."""
    here = path.parent
    data = _config_data(text, path.suffix if path.is_file() else ".toml")
    if not isinstance(data, dict):
        raise ValueError("the Hugo config is not a mapping")
    if here.name != "_default" or here.parent.name != "config":
        return here, data
    # config/_default/: each other file is one top-level key (languages.toml -> languages); the
    # site is two folders up. Language files (menus.en.toml) and unknown suffixes are left out.
    merged = dict(data)
    for item in sorted(here.iterdir()):
        key, _, ext = item.name.partition(".")
        if item == path or key in ("hugo", "config") or ext not in ("toml", "yaml", "yml", "json"):
            continue
        if item.is_file():
            value = _config_data(_read_config(item), "." + ext)
            if isinstance(value, dict):
                merged.setdefault(key, value)
    return here.parent.parent, merged


# Where Hugo finds a site's (and a theme's) shortcode templates; `_shortcodes` is Hugo 0.146's layout.
_SHORTCODE_DIRS = ("layouts/shortcodes", "layouts/_shortcodes")
_MAX_TEMPLATES = 500
_MAX_TEMPLATE_BYTES = 256_000
# A theme is a folder under themes/, or a path below it (`docsy/theme`, a Go module's layout).
_THEME_NAME = re.compile(r"[A-Za-z0-9_][\w.-]{0,100}(?:/[A-Za-z0-9_][\w.-]{0,100}){0,4}")
_MAX_THEMES = 10
# How a template uses its inner text: rendered as Markdown, highlighted as code, else written out raw.
_MARKDOWN_INNER = re.compile(r"markdownify|RenderString")
# `highlight` called (not the word in a string: Docsy's tab reads a "highlight" parameter).
_CODE_INNER = re.compile(r"(?<![\"\w.])highlight[ \t]+[$.(\w]|transform\.Highlight|<pre\b")
_INNER = re.compile(r"\.Inner(?:Deindent)?\b")
# Each use of the inner text that writes it out as it is, or drops it.
_INNER_RAW = re.compile(r"\{\{-?\s*(?:\$_\s*:?=\s*)?\$?\.Inner(?:Deindent)?\s*-?\}\}")
# The inner text handed on: what the partial or the data does with it is not read here.
_INNER_PASSED = re.compile(r"\bpartial(?:Cached)?\b[^}]{0,2000}?\.Inner|\bdict\b[^}]{0,2000}?\.Inner")


def hugo_site_folder(config: Path) -> Path:
    """The folder of the Hugo site whose config file is `config` (two up from `config/_default/`)."""
    here = config.parent
    return here.parent.parent if here.name == "_default" and here.parent.name == "config" else here


def _layout_folders(site_dir: Path, themes: list[str], subs: tuple[str, ...]) -> list[list[Path]]:
    """For the site, then each of its themes in the config's order, its folders `subs` (template
    folders) that lie inside the site: a theme linked in from elsewhere on the machine is not the
    site's to read."""
    names = [t for t in dict.fromkeys(themes) if _THEME_NAME.fullmatch(t) and ".." not in t.split("/")]
    top = site_dir.resolve()
    bases = [site_dir, *(site_dir / "themes" / t for t in names[:_MAX_THEMES])]
    return [[base / sub for sub in subs if within((base / sub).resolve(), top)] for base in bases]


def shortcode_templates(site_dir: Path, themes: list[str]) -> list[tuple[str, Path]]:
    """(shortcode name, template file) of the site's own templates, then its themes' in the config's
    order: the first of a name wins, as in Hugo; regular files only, not through links, at most
    `_MAX_TEMPLATES` (the site's own counted first)."""
    found: list[tuple[str, Path]] = []
    for folders in _layout_folders(site_dir, themes, _SHORTCODE_DIRS):
        for folder in folders:
            for dirpath, dirnames, filenames in os.walk(folder):  # links to folders are not followed
                dirnames.sort()
                for name in sorted(filenames):
                    path = Path(dirpath, name)
                    if not name.endswith(".html") or path.is_symlink():
                        continue
                    rel = path.relative_to(folder).as_posix()
                    # `note.html`, `note.en.html`, `note.html.html`: the name is the part before the first dot.
                    head, _, last = rel.rpartition("/")
                    found.append((f"{head}/{last.split('.')[0]}" if head else last.split(".")[0], path))
                    if len(found) >= _MAX_TEMPLATES:
                        return found
    return found


def _shortcode_kinds(templates: list[tuple[str, Path]]) -> tuple[tuple[str, str], ...]:
    """The paired shortcodes whose inner text is no Markdown: Hugo's `highlight`, and each template
    that highlights its inner text ("code") or writes it out without rendering it ("raw")."""
    # Hugo's own: `highlight` highlights, `comment` drops its text (both unless the site overrides them).
    kinds: dict[str, str] = {"highlight": "code", "comment": "raw"}
    seen: set[str] = set()
    for name, path in templates:
        if name in seen:
            continue  # a theme's template the site (or an earlier theme) overrides
        seen.add(name)
        try:
            raw = read_head(path, _MAX_TEMPLATE_BYTES)
        except OSError:
            continue
        if len(raw) > _MAX_TEMPLATE_BYTES:
            kinds.pop(name, None)  # not read whole: not known, Markdown
            continue
        text = raw.decode("utf-8", "replace")
        uses = len(_INNER.findall(text))
        if not uses or _MARKDOWN_INNER.search(text) or _INNER_PASSED.search(text):
            # Used alone (a closing tag would be Hugo's error), rendered as Markdown, or handed to a
            # partial or a function whose use of it is not read here: Markdown, as before.
            kinds.pop(name, None)
        elif _CODE_INNER.search(text):
            # Highlighted, or (a Docsy-like `text=true`) written out as it is: under `{{% %}}` that is
            # Markdown, so it counts as raw text; highlighted only, it is code.
            conditional = "<pre" not in text and _INNER_RAW.search(text) is not None
            kinds[name] = "raw" if conditional else "code"
        elif len(_INNER_RAW.findall(text)) == uses:
            kinds[name] = "raw"  # written out as it is (`{{ .Inner }}`), or dropped (`{{ $_ := .Inner }}`)
        else:
            kinds.pop(name, None)
    return tuple(sorted(kinds.items()))


def _themes(data: dict[str, Any]) -> list[str]:
    theme = _get(data, "theme")
    if isinstance(theme, str):
        return [theme]
    return [t for t in theme if isinstance(t, str)] if isinstance(theme, list) else []


def _hugo(root: Path, path: Path, text: str) -> Site:
    """Hugo's site from its config file `path` (or config folder file)."""
    here, data = _hugo_config(path, text)
    default_lang = str(_get(data, "defaultContentLanguage") or "en")
    in_subdir = _get(data, "defaultContentLanguageInSubdir") is True

    def lang_prefix(lang: Any) -> str:
        # The default language is served at the root unless the config puts it in a folder too.
        return "" if not isinstance(lang, str) or (lang == default_lang and not in_subdir) else lang

    # Module mounts replace the content (and add static) folders: `source = 'content/en', target = 'content'`,
    # per language with `lang`.
    contents: list[tuple[Path, str, str]] = []  # (folder, content path, language)
    statics = [here / "static"]
    module = _dig(data, "module")
    for item in module.get("mounts") or []:
        if not (
            isinstance(item, dict)
            and isinstance(item.get("source"), str)
            and isinstance(item.get("target"), str)
        ):
            continue
        target = item["target"].strip("/")
        if target == "content" or target.startswith("content/"):
            lang = item.get("lang")
            sub = target[len("content") :].strip("/")
            contents.append((here / item["source"], sub, lang if isinstance(lang, str) else ""))
        elif target == "static" or target.startswith("static/"):
            statics.append(here / item["source"])
    default_dir = str(_get(data, "contentDir") or "content")
    if not contents:
        # Multilingual sites may give each language its own content folder (`languages.en.contentDir`).
        languages = _dig(data, "languages")
        own = any(isinstance(_get(conf, "contentDir"), str) for conf in languages.values())
        for key, conf in languages.items() if own else ():
            # YAML 1.1 reads Norwegian's `no:` as false.
            lang = "no" if key is False else key
            folder = _get(conf, "contentDir") if isinstance(conf, dict) else None
            # A language without a folder of its own has the site's (Docsy's example: English).
            folder = folder if isinstance(folder, str) and folder.strip() else default_dir
            contents.append((here / folder, "", str(lang)))
    if not contents:
        contents = [(here / default_dir, "", "")]
    mounts: list[Mount] = []
    for folder, sub, lang in contents:
        mount = under(root, folder, sub, "docs", False)
        if mount is not None:
            prefix = "/".join(p for p in (lang_prefix(lang or None), mount.prefix) if p)
            mounts.append(Mount(mount.folder, prefix, "docs", lang, mount.prefix))
    parser = _dig(data, "markup", "goldmark", "parser")
    heading_ids = str(_get(parser, "autoHeadingIDType") or "github").lower()
    # Hugo's embedded link render hook finds pages as `ref` does, where the site turns it on: always
    # (over a hook of the site's), or as a fallback where the site has none.
    embedded = _dig(data, "markup", "goldmark", "renderHooks", "link")
    uses = str(_get(embedded, "useEmbedded") or "").lower()
    hooks = [] if uses == "always" else link_hook_templates(here, _themes(data))
    keywords, hook_pages = _read_link_hooks(hooks)
    if not hooks:
        hook_pages = (
            uses in ("always", "fallback")
            or _get(embedded, "enableDefault") is True
            or (uses in ("", "auto") and _single_host_multilingual(data))
        )
    return Site(
        mounts=tuple(mounts),
        base_path=path_of_url(_get(data, "baseURL")),
        static=static_folders(root, statics),
        term_ids=_get(parser, "autoDefinitionTermID") is True and heading_ids == "github",
        heading_ids=heading_ids if heading_ids in ("github", "github-ascii", "blackfriday") else "github",
        shortcodes=_shortcode_kinds(shortcode_templates(here, _themes(data))),
        taxonomies=_taxonomies(data),
        permalinks=_permalinks(data),
        link_keywords=keywords,
        hook_pages=hook_pages,
    )


# Where Hugo finds a link render hook (`render-link.html`, or one per output format or language,
# `render-link.en.html`): the site's own, else its first theme's that has one.
_LINK_HOOK_DIRS = ("layouts/_markup", "layouts/_default/_markup")
_LINK_HOOK_NAME = re.compile(r"render-link(?:\.[\w-]{1,50}){0,2}\.html")
_MAX_HOOKS = 10
# A variable a hook sets from the destination: `$u := urls.Parse .Destination`, `$dest := .Destination`.
_DESTINATION_VAR = re.compile(r"\$([A-Za-z_]\w{0,50})\s*:?=\s*(?:urls\.Parse\s+)?\.Destination\b")
_HOOK_LITERAL = r"(?:\"([^\"\\\n]{1,200})\"|`([^`\n]{1,200})`)"


def link_hook_templates(site_dir: Path, themes: list[str], *, every: bool = False) -> list[Path]:
    """The link render hook templates of a Hugo site: its own, else those of the first theme (in the
    config's order) that has one; with `every`, those of the site and of every theme (the files whose
    change may change the site). Regular files only, not through links out of the site."""
    out: list[Path] = []
    for folders in _layout_folders(site_dir, themes, _LINK_HOOK_DIRS):
        found = []
        for folder in folders:
            try:
                entries = sorted(folder.iterdir())
            except OSError:
                continue
            found += [
                p for p in entries if _LINK_HOOK_NAME.fullmatch(p.name) and p.is_file() and not p.is_symlink()
            ]
        out += found[:_MAX_HOOKS]
        if found and not every:
            break
    return out


def _single_host_multilingual(data: dict[str, Any]) -> bool:
    """Whether Hugo's `useEmbedded = "auto"` (its default) turns the embedded link render hook on: a
    site of two or more languages served from one host (no language has a `baseURL` of its own) that
    does not duplicate page resources per language (`markup.goldmark.duplicateResourceFiles`)."""
    languages = _dig(data, "languages")
    if len(languages) < 2 or any(isinstance(c, dict) and _get(c, "baseURL") for c in languages.values()):
        return False
    return _get(_dig(data, "markup", "goldmark"), "duplicateResourceFiles") is not True


def _read_link_hooks(templates: list[Path]) -> tuple[tuple[str, ...], bool]:
    """What a Hugo site's link render hooks say: the destinations they compare a link's with (`{{ if
    eq $u.String "g" }}`, Hugo's own docs: `[glossary term](g)` links a glossary page by its text),
    which the hook renders itself, so they name no file to check; and whether a hook looks the
    destination up as a page (`.Page.GetPage`, as Hugo's embedded hook does), so a relative link
    finds a page as a `ref` finds it (from the page's folder, then the content root)."""
    found: set[str] = set()
    finds_pages = False
    for path in templates:
        try:
            raw = read_head(path, _MAX_TEMPLATE_BYTES)
        except OSError:
            continue
        text = raw[:_MAX_TEMPLATE_BYTES].decode("utf-8", "replace")
        finds_pages = finds_pages or (".GetPage" in text and ".Destination" in text)
        names = list(dict.fromkeys(_DESTINATION_VAR.findall(text)))[:20]
        operand = r"(?:\.Destination|" + "".join(rf"\${re.escape(n)}(?:\.String|\.Path)?|" for n in names)
        operand = operand.rstrip("|") + ")"
        compare = re.compile(rf"\beq\s+(?:{operand}\s+{_HOOK_LITERAL}|{_HOOK_LITERAL}\s+{operand})(?![\w.])")
        for m in itertools.islice(compare.finditer(text), 100):
            found.add(next(g for g in m.groups() if g is not None))
    return tuple(sorted(found)), finds_pages


_KINDS = ("page", "section", "term", "taxonomy")


def _permalinks(data: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """Hugo's `permalinks`: `{blog = "/:year/:slug/"}` (pages of a section) or, since Hugo 0.112,
    `{page = {blog = ...}, section = {...}}`; as ("page:blog", pattern) pairs, at most 100."""
    found = _dig(data, "permalinks")
    out: dict[str, str] = {}
    for key, value in list(found.items())[:100]:
        if not isinstance(key, str):
            continue
        if isinstance(value, str) and key.lower() not in _KINDS:
            out.setdefault(f"page:{key.lower()}", value.strip()[:500])
        elif isinstance(value, dict) and key.lower() in ("page", "section"):
            for section, pattern in list(value.items())[:100]:
                if isinstance(section, str) and isinstance(pattern, str):
                    out[f"{key.lower()}:{section.lower()}"] = pattern.strip()[:500]
    return tuple(sorted(out.items()))


def _taxonomies(data: dict[str, Any]) -> tuple[str, ...]:
    """The plural names of a Hugo site's taxonomies (`tags` and `categories` unless `taxonomies` says)."""
    found = _get(data, "taxonomies")
    if isinstance(found, dict):
        return tuple(
            str(v).lower().strip("/") for v in list(found.values())[:50] if isinstance(v, str) and v.strip()
        )
    return ("tags", "categories")


def _get(data: Any, key: str) -> Any:
    """A value of a Hugo config mapping by a case-insensitive key (None when it has none)."""
    if not isinstance(data, dict):
        return None
    if key in data:
        return data[key]
    return next((v for k, v in data.items() if isinstance(k, str) and k.lower() == key.lower()), None)


def _dig(data: Any, *keys: str) -> dict[str, Any]:
    """The mapping under `keys` (Hugo's keys are case-insensitive), {} when any is missing."""
    for key in keys:
        if not isinstance(data, dict):
            return {}
        data = next((v for k, v in data.items() if isinstance(k, str) and k.lower() == key.lower()), None)
    return data if isinstance(data, dict) else {}


def _zola(root: Path, here: Path, text: str) -> Site:
    """A Zola site: the pages of `content/` routed by their paths (`_index.md` a section's, a folder's
    `index.md` a page with its assets), `base_url`'s path, `static/`; `slugify` says how file names and
    headings become paths and ids."""
    data = tomllib.loads(text) if text.strip() else {}
    slugs = data.get("slugify")
    slugs = slugs if isinstance(slugs, dict) else {}
    paths = str(slugs.get("paths") or "on").lower()
    anchors = str(slugs.get("anchors") or "on").lower()
    languages = data.get("languages")
    languages = languages if isinstance(languages, dict) else {}
    default = data.get("default_language") if isinstance(data.get("default_language"), str) else "en"
    others = sorted(str(k) for k in languages if str(k) != default and re.fullmatch(r"[\w-]{1,20}", str(k)))[
        :50
    ]
    keep = "keep" if slugs.get("paths_keep_dates") is True else ""
    listed = data.get("ignored_content")
    ignored = [g for g in listed if isinstance(g, str)] if isinstance(listed, list) else []
    kind = f"zola:{'on' if paths not in ('safe', 'off') else paths}:{','.join(others)}:{keep}"
    content = under(root, here / "content", "", kind, False)
    # Each taxonomy's list and term pages (`/tags/`, `/fr/tags/rust/`), the site's and each language's.
    tables = [data, *(v for v in languages.values() if isinstance(v, dict))]
    names = {
        str(t["name"]).lower() if paths != "on" else zola_path_slug(str(t["name"]))
        for table in tables
        if isinstance(table.get("taxonomies"), list)
        for t in table["taxonomies"][:50]
        if isinstance(t, dict) and isinstance(t.get("name"), str)
    }
    return Site(
        mounts=(content,) if content else (),
        base_path=path_of_url(data.get("base_url")),
        static=static_folders(root, [here / "static", here / "content"]),
        heading_ids="zola" if anchors not in ("safe", "off") else "zola-plain",
        taxonomies=tuple(sorted(n for n in names if n)),
        # `ignored_content`: globs over the path from the content folder (`*` crosses folders, as
        # globset's does by default); such files are never loaded.
        unpublished=tuple(
            r for r in [unpublished_rule("zola", root, [here / "content"], "fnmatch", ignored)] if r
        ),
    )


def _plain(root: Path, here: Path, text: str) -> Site:
    return Site()


_READERS: dict[str, Callable[[Path, Path, str], Site]] = {
    "docusaurus": docusaurus,
    "starlight": starlight,
    "vitepress": vitepress,
    "vuepress": vuepress,
    "mintlify": _mintlify,
    "mkdocs": _mkdocs,
    "mdbook": _mdbook,
    "jekyll": _jekyll,
    "myst": _myst,
    "fumadocs": fumadocs,
    "nextra": nextra,
    "rspress": rspress,
    "docsify": docsify,
    "zola": _zola,
    "gitbook": _gitbook,
    "none": _plain,
}

_SITE_CACHE: dict[tuple[str, str, str | None, str | None, str], tuple[tuple[Any, ...], Site]] = {}


def site_for(
    root: Path,
    generator: str = "auto",
    base_path: str | None = None,
    stop: Path | None = None,
    config: Path | None = None,
) -> Site:
    """`detect_site`, cached while the config file found and the repository's `.gitignore` files (and
    their stats) stay the same."""
    key = (str(root), generator, base_path, None if stop is None else str(stop), str(config))
    if config is not None and generator != "none":
        found: tuple[Path, str] | None = (config, generator if generator != "auto" else "")
    else:
        found = _find_config(root, stop) if generator != "none" else None
    stamp: tuple[Any, ...] = ()
    # The repository's `.gitignore` files say which missing files a build writes.
    for path in [*(_config_files(*found) if found is not None else []), *ignore_files(root)]:
        try:
            st = path.stat()
            stamp += (str(path), st.st_size, st.st_mtime_ns)
        except OSError:
            stamp += (str(path),)
    hit = _SITE_CACHE.get(key)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    site = detect_site(root, generator, base_path, stop, config)
    _SITE_CACHE[key] = (stamp, site)
    return site


def _config_files(path: Path, generator: str) -> list[Path]:
    """The files a site's conventions are read from: its config, and what the config reads beside it."""
    if generator == "docusaurus":
        return [path, *docs_versions_files(path.parent)]
    if generator == "starlight":
        # And the files its `redirects` spread (a generated `redirects.js`).
        try:
            spread = astro_redirect_files(path.parent, _read_config(path))
        except (OSError, ValueError):
            spread = []
        return [path, tsconfig_file(path.parent), *spread]
    if generator == "mintlify" or path.name.lower() in ("docs.json", "mint.json"):
        return [path, path.parent / ".mintignore"]
    if generator == "hugo":
        # The shortcode templates too: how one uses its inner text changes how pages parse.
        site_dir = hugo_site_folder(path)
        try:
            themes = sorted(d.name for d in (site_dir / "themes").iterdir() if d.is_dir())
        except OSError:
            themes = []
        templates = [p for _, p in shortcode_templates(site_dir, themes)]
        templates += link_hook_templates(site_dir, themes, every=True)
        if path.parent.name == "_default":
            try:
                return sorted(p for p in path.parent.iterdir() if p.is_file()) + templates
            except OSError:
                pass
        return [path, *templates]
    if generator == "mkdocs" or path.name.lower().startswith("mkdocs"):
        return _inherit_chain(path)
    if generator == "jekyll":
        # Its HTML pages too: one added, removed or given another permalink moves a route.
        return [path, *_jekyll_html_files(path.parent)]
    if generator == "fumadocs":
        # The loaders' files and the app's pages: a new baseUrl or a page added moves a route.
        return fumadocs_inputs(path)
    if generator == "nextra":
        # The app's page files: one added or removed moves a route.
        return nextra_inputs(path)
    if generator == "rspress":
        return rspress_inputs(path)
    if generator == "vuepress":
        return vuepress_inputs(path)
    if generator == "vitepress":
        # The config's own modules (`./shared`): one may set the heading ids' slugify.
        return vitepress_inputs(path)
    if generator == "docsify":
        # The Docsify pages below: one added or removed makes a folder another site.
        return docsify_inputs(path)
    return [path]


_INHERIT_LINE = re.compile(r"""^INHERIT:[ \t]*["']?([^"'#\n]+?)["']?[ \t]*(?:#.*)?$""", re.M)


def _inherit_chain(path: Path) -> list[Path]:
    """A mkdocs.yml and the configs its `INHERIT` lines name, as far as they are files (their stat
    decides when the site is read again)."""
    chain = [path]
    while len(chain) <= _MAX_INHERIT:
        try:
            m = _INHERIT_LINE.search(_read_config(chain[-1]))
        except (OSError, ValueError):
            break
        try:
            parent = (chain[-1].parent / m.group(1)).resolve() if m else None
            if parent is None or parent in chain or not parent.is_file():
                break
        except OSError:  # a name the system refuses (longer than 255 bytes): nothing to stat
            break
        chain.append(parent)
    return chain


def _search_stop(root: Path, project: Path) -> Path | None:
    """Where the search for a config above the manual stops: the project root when the manual lies
    below it (else the repository root, see `_folders_up`)."""
    return project if root != project and root.is_relative_to(project) else None


def _named_path(value: str, project: Path) -> Path:
    """A config file the settings name: absolute, or from the project root (`~` expanded)."""
    named = Path(value).expanduser()
    return named if named.is_absolute() else project / named


def settings_site(settings: Settings) -> Site:
    """The site of a `Settings`: its generator and base path settings; the search for a config file stops
    at the project root when the manual lies below it (else at the repository root)."""
    root = settings.udm_root
    project = Path(settings.project_root)
    stop = _search_stop(root, project)
    config = _named_path(settings.site_config, project) if settings.site_config else None
    site = site_for(root, settings.site_generator, settings.site_base_path, stop, config)
    exclude = tuple(settings.link_exclude)
    return replace(site, exclude=exclude) if exclude else site


# How deep below the manual root, and in how many folders, a site config is looked for (a hint only).
_BELOW_DEPTH = 2
_BELOW_FOLDERS = 400
_NOT_SITES = frozenset({"node_modules", "vendor", "__pycache__"})


def configs_below(root: Path) -> list[tuple[str, str, str]]:
    """Site config files in the manual's folders one or two levels below its root, nearest first:
    (path from the root, generator, the site's folder from the root). Never applied: a manual holding
    a site's folder is a hint to name it (a repository root taken for the manual of its `docs-site/`)."""
    found: list[tuple[str, str, str]] = []
    level = [root]
    seen = 0
    for _ in range(_BELOW_DEPTH):
        below: list[Path] = []
        for folder in level:
            if seen >= _BELOW_FOLDERS:
                break
            try:
                entries = sorted(e.name for e in os.scandir(folder) if e.is_dir(follow_symlinks=False))
            except OSError:
                continue
            for name in entries:
                if name.startswith(".") or name in _NOT_SITES:
                    continue
                if seen >= _BELOW_FOLDERS:
                    break
                seen += 1
                here = folder / name
                below.append(here)
                hit = _config_in(here)
                if hit is not None:
                    # Hugo's config folder and `.vitepress/` sit inside the site's folder.
                    site = hugo_site_folder(hit[0]) if hit[1] == "hugo" else here
                    found.append(
                        (hit[0].relative_to(root).as_posix(), hit[1], site.relative_to(root).as_posix())
                    )
        level = below
    return found


def _config_in(folder: Path) -> tuple[Path, str] | None:
    """The generator config file in `folder` itself, as `_find_config` takes one."""
    for name, generator in _CONFIG_FILES:
        candidate = folder / name
        if candidate.is_file() and _is_for(name, generator, candidate):
            return candidate, generator
    return None


def site_notes(settings: Settings, site: Site | None = None) -> list[tuple[str, str]]:
    """What a user should know about the site the links resolve by: each problem reading its config,
    and a site config below the manual root that is not applied; (file from the manual root, message)."""
    root = settings.udm_root
    project = Path(settings.project_root)
    site = site if site is not None else settings_site(settings)
    # A named config that failed leaves the site of another (found above): the note is the named one's.
    config = settings.site_config or site.config_file
    path = where = ""
    if config:
        path = str(_named_path(config, project))
        where = _near(Path(path), root, (project,) if root.is_relative_to(project) else (root,))
    notes = [(_visible(where), _visible(_shown(problem, path, where))) for problem in site.problems]
    if site.generator == "none" and settings.site_generator == "auto" and not settings.site_config:
        others = _other_mkdocs_configs(root, _search_stop(root, project))
        if others:
            # Named as site_config takes them (from the project root); filed under the manual root's view.
            names = ", ".join(_near(p, project, (project,)) for p in others[:6])
            more = f" and {len(others) - 6} more" if len(others) > 6 else ""
            notes.append(
                (
                    _visible(Path(os.path.relpath(others[0], root)).as_posix()),
                    _visible(
                        f"site configs of mkdocs by their names, not applied unless named: {names}{more} "
                        "(set site_config to the one the site builds from)"
                    ),
                )
            )
        for rel, gen, folder in configs_below(root)[:3]:
            notes.append(
                (
                    _visible(rel),
                    _visible(
                        f"a site config of {gen} below the manual root is not applied: links are read as "
                        f"plain Markdown (set site_config to {_near(root / rel, project, (project,))}, "
                        f"or make {folder} the manual root)"
                    ),
                )
            )
    return notes


def note_line(path: str, message: str) -> str:
    """A site note as one line: the file, unless the message already starts with it."""
    return message if not path or message.startswith(f"{path}: ") else f"{path}: {message}"


def _near(path: Path, start: Path, homes: tuple[Path, ...]) -> str:
    """`path` from `start` when it lies in one of `homes` or in the repository holding `start`, else
    absolute (a path climbing out of every folder the user works in reads worse than the whole)."""
    repo = next((p for p in (start, *start.parents) if (p / ".git").exists()), None)
    inside = [*homes, *([repo] if repo is not None else [])]
    if any(path.is_relative_to(h) for h in inside):
        return Path(os.path.relpath(path, start)).as_posix()
    return str(path)


_NOTE_CHARS = 600


def _visible(text: str) -> str:
    """A note as a terminal shows it faithfully: control and bidi characters (a config's text may
    hold them: an `INHERIT` name, a folder) escaped, and no longer than a screenful of one note."""
    text = shown_line(text.replace("\n", " "))
    return text if len(text) <= _NOTE_CHARS else f"{text[: _NOTE_CHARS - 20]}...({len(text)} chars)"


def _shown(problem: str, config: str | None, where: str) -> str:
    """A site problem with the config's absolute path, where it leads, shown from the manual root."""
    if config and where and problem.startswith(f"{config}: "):
        return f"{where}: {problem[len(config) + 2 :]}"
    return problem


def strip_page(path: str, indexes: tuple[str, ...] = INDEX_NAMES) -> str:
    """A path as a route key: no slashes at the ends, no page suffix, no trailing index name (index,
    README, _index; a generator folding `index` only names it)."""
    key = path.strip("/")
    lower = key.lower()
    for suffix in ROUTE_SUFFIXES:
        if lower.endswith(suffix):
            key = key[: -len(suffix)]
            break
    head, _, last = key.rpartition("/")
    if last.lower() in indexes:
        key = head
    return key
