"""Site conventions: which generator publishes the manual, its routes, and how a link resolves.

The one rule set for internal links. The index (full and small refreshes), lint, `udm links` and the
patch validator all ask a `LinkResolver`; none of them resolves a link on its own.

A link resolves, in order: as a file path relative to its file (`install.md`, `img/a.png`); as the
same path without its page suffix (`install`, `install.html` -> `install.md`, `guide/` ->
`guide/index.md` or `guide/README.md`); as a site route (absolute `/docs/guide/install`, after the
base path is stripped; relative ones against the page's own route); through the site's redirects;
and, for absolute links, as a file served from the site root (Docusaurus `static/`, Hugo `static/`,
the content folder itself). A fragment must then name a heading anchor of the page it lands on.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

__all__ = [
    "GENERATORS",
    "PAGE_SUFFIXES",
    "LinkResolver",
    "Located",
    "Mount",
    "Routes",
    "Site",
    "detect_site",
    "display_target",
    "resolve_links",
    "route_meta",
    "settings_site",
    "site_for",
]

GENERATORS = ("none", "docusaurus", "mintlify", "mkdocs", "mdbook", "hugo")
PAGE_SUFFIXES = (".md", ".mdx", ".markdown")
# Suffixes a route may carry that name the same page (mdBook and MkDocs without directory URLs write .html).
_ROUTE_SUFFIXES = (*PAGE_SUFFIXES, ".html", ".htm")
_INDEX_NAMES = ("index", "readme", "_index")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_NUMBER_PREFIX = re.compile(r"^\d+[-_. ]+(?=.)")
_BLOG_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})-(.+)$")
_MAX_CONFIG_BYTES = 1 << 20
_MAX_REDIRECT_HOPS = 10
# How far above the manual root a generator's config file is looked for (a repository root stops it).
_MAX_LEVELS_UP = 6
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
    ("hugo.toml", "hugo"),
    ("hugo.yaml", "hugo"),
    ("hugo.json", "hugo"),
    ("config.toml", "hugo"),
)
# Front matter keys that move a page's route (Docusaurus slug/id, Hugo slug/url/aliases).
_META_KEYS = ("slug", "id", "url", "aliases")


@dataclass(frozen=True)
class Mount:
    """A folder of the manual published under a route prefix (Docusaurus docs/ under /docs)."""

    folder: str  # relative to the manual root, posix; "" is the root itself
    prefix: str  # route of the folder from the site root, no slashes at the ends; "" is the site root
    kind: str = "docs"  # docs, pages or blog: Docusaurus treats them differently


@dataclass(frozen=True)
class Site:
    """How the site that publishes the manual turns files into routes."""

    generator: str = "none"
    config_file: str | None = None
    mounts: tuple[Mount, ...] = (Mount("", ""),)
    base_path: str = ""  # served under this path ("" or "/x")
    redirects: tuple[tuple[str, str], ...] = ()  # (source route pattern, destination route or URL)
    static: tuple[str, ...] = ()  # folders (relative to the root) whose files are served from the site root
    problems: tuple[str, ...] = ()

    def fingerprint(self) -> str:
        """A short hash of everything that changes how links resolve."""
        data = json.dumps(
            [self.generator, [m.__dict__ for m in self.mounts], self.base_path, self.redirects, self.static],
            sort_keys=True,
        )
        return hashlib.sha256(data.encode()).hexdigest()[:16]

    def describe(self) -> dict[str, Any]:
        """JSON-able summary (for `udm index --json` and error messages)."""
        return {
            "generator": self.generator,
            "config_file": self.config_file,
            "mounts": [{"folder": m.folder, "prefix": "/" + m.prefix, "kind": m.kind} for m in self.mounts],
            "base_path": self.base_path,
            "redirects": len(self.redirects),
            "problems": list(self.problems),
        }


# ----- detection -----------------------------------------------------------------------------------


def _read_config(path: Path) -> str:
    with path.open("rb") as fh:
        raw = fh.read(_MAX_CONFIG_BYTES + 1)
    if len(raw) > _MAX_CONFIG_BYTES:
        raise ValueError(f"larger than {_MAX_CONFIG_BYTES} bytes")
    return raw.decode("utf-8", errors="replace")


def _find_config(root: Path, stop: Path | None = None) -> tuple[Path, str] | None:
    here = root
    for _ in range(_MAX_LEVELS_UP + 1):
        for name, generator in _CONFIG_FILES:
            candidate = here / name
            if candidate.is_file() and (name != "config.toml" or _looks_like_hugo(candidate)):
                return candidate, generator
        for name, generator in _CONFIG_FILES[:4]:
            # Docusaurus' usual layout keeps its config in website/ beside the docs/ it publishes.
            candidate = here / "website" / name
            if candidate.is_file():
                return candidate, generator
        # The repository (or the project the settings were loaded in) is as far up as a site can be.
        if (here / ".git").exists() or here.parent == here or (stop is not None and here == stop):
            return None
        here = here.parent
    return None


def _looks_like_hugo(path: Path) -> bool:
    # config.toml is a common name; Hugo's has a baseURL, a contentDir or a theme.
    try:
        data = tomllib.loads(_read_config(path))
    except (OSError, ValueError, tomllib.TOMLDecodeError):
        return False
    return any(k in data for k in ("baseURL", "baseurl", "contentDir", "theme", "languageCode"))


def _under(root: Path, folder: Path, prefix: str, kind: str, strip_numbers: bool) -> Mount | None:
    """The mount of `folder` (published at `prefix`) seen from the manual root, if they overlap."""
    root_s, folder_s = os.path.normpath(root), os.path.normpath(folder)
    if root_s == folder_s:
        return Mount("", prefix, kind)
    if folder_s.startswith(root_s + os.sep):
        return Mount(os.path.relpath(folder_s, root_s).replace(os.sep, "/"), prefix, kind)
    if root_s.startswith(folder_s + os.sep):
        # The manual is a sub-folder of the published content: its files sit below the prefix.
        parts = os.path.relpath(root_s, folder_s).replace(os.sep, "/").split("/")
        if strip_numbers:
            parts = [_NUMBER_PREFIX.sub("", p) for p in parts]
        return Mount("", "/".join(p for p in [prefix, *parts] if p), kind)
    # Published beside the manual (its blog when the manual is docs/): routes there are checked on disk.
    return Mount(os.path.relpath(folder_s, root_s).replace(os.sep, "/"), prefix, kind)


def _static(root: Path, folders: Iterable[Path]) -> tuple[str, ...]:
    out = []
    root_s = os.path.normpath(root)
    for folder in folders:
        f = os.path.normpath(folder)
        # Beside the manual too (Docusaurus static/ when the manual is docs/): files there only have to exist.
        out.append("" if f == root_s else os.path.relpath(f, root_s).replace(os.sep, "/"))
    return tuple(out)


def _path_of_url(value: Any) -> str:
    """The path part of a base URL (`https://x.org/docs/` -> `/docs`), "" for the site root."""
    if not isinstance(value, str) or not value.strip():
        return ""
    text = value.strip()
    if _SCHEME.match(text) or text.startswith("//"):
        text = "/" + text.split("//", 1)[1].partition("/")[2]
    return "/" + text.strip("/") if text.strip("/") else ""


def detect_site(
    root: Path, generator: str = "auto", base_path: str | None = None, stop: Path | None = None
) -> Site:
    """The site conventions of the manual at `root`: detected from a config file unless `generator` says.

    The config file is looked for in `root` and the folders above it, up to a repository root, `stop`
    (the project root) or six levels.
    """
    if generator not in ("auto", *GENERATORS):
        raise ValueError(f"site generator {generator!r}: expected auto or one of {', '.join(GENERATORS)}")
    found = _find_config(root, stop) if generator != "none" else None
    if generator not in ("auto", "none") and (found is None or found[1] != generator):
        # Named in the settings but no config file of it: its conventions from the root, defaults.
        found = (root / "__none__", generator)
    site = Site()
    if found is not None:
        path, gen = found
        reader = _READERS[gen]
        try:
            text = _read_config(path) if path.is_file() else ""
            site = reader(root, path.parent, text)
        except (OSError, ValueError, tomllib.TOMLDecodeError) as exc:
            site = Site(generator=gen, problems=(f"{path}: cannot read the site config: {exc}",))
        site = Site(
            generator=gen,
            config_file=str(path) if path.is_file() else None,
            mounts=site.mounts,
            base_path=site.base_path,
            redirects=site.redirects,
            static=site.static,
            problems=site.problems,
        )
    if base_path is not None:
        site = Site(
            site.generator,
            site.config_file,
            site.mounts,
            _path_of_url(base_path),
            site.redirects,
            site.static,
            site.problems,
        )
    return site


def _js_block(text: str, key: str) -> str | None:
    """The `{...}` or `[...]` value of the first `key:` in JavaScript source (strings and comments skipped)."""
    for match in re.finditer(rf"(?<![\w$.]){re.escape(key)}\s*:\s*([\[{{])", text):
        start = match.start(1)
        end = _balanced(text, start)
        if end is not None:
            return text[start : end + 1]
    return None


def _balanced(text: str, start: int) -> int | None:
    depth = 0
    i = start
    quote = ""
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"`":
            quote = c
        elif text.startswith("//", i):
            i = text.find("\n", i)
            if i < 0:
                return None
        elif text.startswith("/*", i):
            i = text.find("*/", i + 2)
            if i < 0:
                return None
            i += 1
        elif c in "[{(":
            depth += 1
        elif c in "]})":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _js_string(text: str, key: str) -> str | None:
    match = re.search(rf"(?<![\w$.]){re.escape(key)}\s*:\s*(['\"`])((?:\\.|(?!\1).)*)\1", text)
    return match.group(2) if match else None


def _js_strings(text: str) -> list[str]:
    return [m.group(2) for m in re.finditer(r"(['\"`])((?:\\.|(?!\1).)*)\1", text)]


def _docusaurus(root: Path, here: Path, text: str) -> Site:
    # docusaurus.config.* is JavaScript: read the few literal settings that shape routes.
    docs = _js_block(text, "docs") or ""
    docs_path = _js_string(docs, "path") or "docs"
    route_base = _js_string(docs, "routeBasePath") if docs else None
    route_base = "docs" if route_base is None else route_base.strip("/")
    blog = _js_block(text, "blog") or ""
    blog_base = (_js_string(blog, "routeBasePath") or "blog").strip("/")
    mounts = [
        _under(root, here / docs_path, route_base, "docs", True),
        _under(root, here / "src" / "pages", "", "pages", False),
        _under(root, here / (_js_string(blog, "path") or "blog"), blog_base, "blog", False),
    ]
    redirects: list[tuple[str, str]] = []
    plugin = text.find("plugin-client-redirects")
    block = _js_block(text[plugin:], "redirects") if plugin >= 0 else None
    if block:
        k = 1
        while k < len(block):
            if block[k] == "{":
                end = _balanced(block, k)
                if end is None:
                    break
                item = block[k : end + 1]
                to = _js_string(item, "to")
                sources = _js_block(item, "from")
                froms = _js_strings(sources) if sources else [s for s in [_js_string(item, "from")] if s]
                redirects += [(f, to) for f in froms if to]
                k = end
            k += 1
    return Site(
        mounts=tuple(m for m in mounts if m is not None),
        base_path=_path_of_url(_js_string(text, "baseUrl")),
        redirects=tuple(redirects),
        static=_static(root, [here / "static"]),
    )


def _mintlify(root: Path, here: Path, text: str) -> Site:
    data = json.loads(text) if text.strip() else {}
    redirects = []
    for item in (data.get("redirects") or []) if isinstance(data, dict) else []:
        if (
            isinstance(item, dict)
            and isinstance(item.get("source"), str)
            and isinstance(item.get("destination"), str)
        ):
            redirects.append((item["source"], item["destination"]))
    mount = _under(root, here, "", "docs", False)
    return Site(mounts=(mount,) if mount else (), redirects=tuple(redirects), static=_static(root, [here]))


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
    docs_dir = here / str(data.get("docs_dir") or "docs")
    redirects: list[tuple[str, str]] = []
    for plugin in data.get("plugins") or []:
        if isinstance(plugin, dict) and isinstance(plugin.get("redirects"), dict):
            maps = plugin["redirects"].get("redirect_maps") or {}
            for old, new in maps.items() if isinstance(maps, dict) else []:
                if isinstance(old, str) and isinstance(new, str):
                    dest = new if _SCHEME.match(new) else "/" + _strip_page(new)
                    redirects.append(("/" + _strip_page(old), dest))
    mount = _under(root, docs_dir, "", "docs", False)
    return Site(
        mounts=(mount,) if mount else (),
        base_path=_path_of_url(data.get("site_url")),
        redirects=tuple(redirects),
        static=_static(root, [docs_dir]),
    )


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
                if _SCHEME.match(new) or new.startswith("/")
                else posixpath.join(posixpath.dirname(old), new)
            )
            redirects.append((old, dest))
    mount = _under(root, src, "", "docs", False)
    return Site(
        mounts=(mount,) if mount else (),
        base_path=_path_of_url(html.get("site-url")),
        redirects=tuple(redirects),
        static=_static(root, [src]),
    )


def _hugo(root: Path, here: Path, text: str) -> Site:
    data: dict[str, Any]
    if not text.strip():
        data = {}
    elif text.lstrip().startswith("{"):
        data = json.loads(text)
    elif any(line.strip().startswith(("baseURL:", "contentDir:", "title:")) for line in text.splitlines()):
        data = _LenientLoader.load(text) or {}
    else:
        data = tomllib.loads(text)
    # Module mounts replace the content (and add static) folders: `source = 'content/en', target = 'content'`.
    contents: list[tuple[Path, str]] = []
    statics = [here / "static"]
    module: dict[str, Any] = data["module"] if isinstance(data.get("module"), dict) else {}
    for item in module.get("mounts") or []:
        if not (
            isinstance(item, dict)
            and isinstance(item.get("source"), str)
            and isinstance(item.get("target"), str)
        ):
            continue
        target = item["target"].strip("/")
        if target == "content" or target.startswith("content/"):
            contents.append((here / item["source"], target[len("content") :].strip("/")))
        elif target == "static" or target.startswith("static/"):
            statics.append(here / item["source"])
    if not contents:
        contents = [(here / str(data.get("contentDir") or "content"), "")]
    mounts = [_under(root, folder, prefix, "docs", False) for folder, prefix in contents]
    return Site(
        mounts=tuple(m for m in mounts if m is not None),
        base_path=_path_of_url(data.get("baseURL") or data.get("baseurl")),
        static=_static(root, statics),
    )


def _plain(root: Path, here: Path, text: str) -> Site:
    return Site()


_READERS: dict[str, Callable[[Path, Path, str], Site]] = {
    "docusaurus": _docusaurus,
    "mintlify": _mintlify,
    "mkdocs": _mkdocs,
    "mdbook": _mdbook,
    "hugo": _hugo,
    "none": _plain,
}

_SITE_CACHE: dict[tuple[str, str, str | None, str | None], tuple[tuple[Any, ...], Site]] = {}


def site_for(
    root: Path, generator: str = "auto", base_path: str | None = None, stop: Path | None = None
) -> Site:
    """`detect_site`, cached while the config file found (and its stat) stays the same."""
    key = (str(root), generator, base_path, None if stop is None else str(stop))
    found = _find_config(root, stop) if generator != "none" else None
    stamp: tuple[Any, ...] = ()
    if found is not None:
        try:
            st = found[0].stat()
            stamp = (str(found[0]), st.st_size, st.st_mtime_ns)
        except OSError:
            stamp = (str(found[0]),)
    hit = _SITE_CACHE.get(key)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    site = detect_site(root, generator, base_path, stop)
    _SITE_CACHE[key] = (stamp, site)
    return site


def settings_site(settings: Any) -> Site:
    """The site of a `Settings`: its generator and base path settings, detection stopped at the project root."""
    root = settings.udm_root
    project = settings.project_root
    stop = project if str(root).startswith(str(project)) else None
    return site_for(root, settings.site_generator, settings.site_base_path, stop)


# ----- routes --------------------------------------------------------------------------------------


def route_meta(front_matter: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The front matter keys that move a page's route (slug, id, url, aliases), or None."""
    if not isinstance(front_matter, Mapping):
        return None
    out: dict[str, Any] = {}
    for key in _META_KEYS:
        value = front_matter.get(key)
        if key == "aliases" and isinstance(value, list):
            aliases = [str(v) for v in value if isinstance(v, (str, int))]
            if aliases:
                out[key] = aliases[:100]
        elif isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
            out[key] = str(value).strip()
    return out or None


def _strip_page(path: str) -> str:
    """A path as a route key: no slashes at the ends, no page suffix, no trailing index/README."""
    key = path.strip("/")
    lower = key.lower()
    for suffix in _ROUTE_SUFFIXES:
        if lower.endswith(suffix):
            key = key[: -len(suffix)]
            break
    head, _, last = key.rpartition("/")
    if last.lower() in _INDEX_NAMES:
        key = head
    return key


class Routes:
    """The route table of one manual: every page's route and path key, built on first use."""

    def __init__(
        self,
        site: Site,
        pages: Iterable[str],
        meta: Mapping[str, Mapping[str, Any]] | None = None,
        meta_of: Callable[[str], Mapping[str, Any] | None] | None = None,
    ) -> None:
        self.site = site
        # A set given is kept as it is (the validator's pages are listed from the disk only if needed).
        self.pages: AbstractSet[str] = pages if isinstance(pages, AbstractSet) else set(pages)
        self.meta: dict[str, Mapping[str, Any]] = dict(meta or {})
        self.meta_of = meta_of
        self._by_path: dict[str, str] | None = None
        self._by_route: dict[str, str] | None = None
        self._redirects: list[tuple[list[str], str]] | None = None

    def _meta(self, path: str) -> Mapping[str, Any]:
        found = self.meta.get(path)
        if found is None and self.meta_of is not None:
            found = self.meta[path] = self.meta_of(path) or {}
        return found or {}

    def update(self, removed: Iterable[str], added: Mapping[str, Mapping[str, Any] | None]) -> bool:
        """Drop `removed` pages and add (or re-add) `added` ones; whether any page or route changed."""
        pages = self.pages
        if not isinstance(pages, set):
            raise TypeError("only a route table built over a set of pages can be updated")
        moved = False
        for path in removed:
            if path in pages:
                pages.discard(path)
                self.meta.pop(path, None)
                moved = True
        for path, meta in added.items():
            if path not in pages or dict(meta or {}) != dict(self.meta.get(path) or {}):
                moved = True
            pages.add(path)
            if meta:
                self.meta[path] = meta
            else:
                self.meta.pop(path, None)
        if moved:
            self._by_path = self._by_route = None
        return moved

    def page_route(self, path: str) -> str | None:
        """The route key of a page (no leading slash), or None when no mount publishes it."""
        for mount in self.site.mounts:
            if mount.folder and not path.startswith(mount.folder + "/"):
                continue
            rel = path[len(mount.folder) + 1 :] if mount.folder else path
            return self._route(mount, rel, self._meta(path))
        return None

    def _route(self, mount: Mount, rel: str, meta: Mapping[str, Any]) -> str:
        gen = self.site.generator
        dirs, _, name = rel.rpartition("/")
        parts = [p for p in dirs.split("/") if p]
        stem = name
        for suffix in _ROUTE_SUFFIXES:
            if stem.lower().endswith(suffix):
                stem = stem[: -len(suffix)]
                break
        if gen == "docusaurus" and mount.kind == "blog":
            dated = _BLOG_DATE.match(stem) or (
                _BLOG_DATE.match(parts[-1]) if parts and stem.lower() in _INDEX_NAMES else None
            )
            if meta.get("slug"):
                return _join(mount.prefix, str(meta["slug"]))
            if dated:
                return _join(mount.prefix, *dated.groups())
        if gen == "docusaurus" and mount.kind == "docs":
            parts = [_NUMBER_PREFIX.sub("", p) for p in parts]
            stem = _NUMBER_PREFIX.sub("", stem)
            if meta.get("id") and "/" not in str(meta["id"]):
                stem = str(meta["id"])
            if stem.lower() in _INDEX_NAMES or (parts and stem == parts[-1]):
                stem = ""
            slug = meta.get("slug")
            if slug:
                slug = str(slug)
                return (
                    _join(mount.prefix, slug) if slug.startswith("/") else _join(mount.prefix, *parts, slug)
                )
            return _join(mount.prefix, *parts, stem)
        if gen == "hugo":
            if meta.get("url"):
                return _join(str(meta["url"])).lower()
            if meta.get("slug") and stem.lower() not in _INDEX_NAMES:
                stem = str(meta["slug"])
            return _join(mount.prefix, *parts, "" if stem.lower() in _INDEX_NAMES else stem).lower()
        return _join(mount.prefix, *parts, "" if stem.lower() in _INDEX_NAMES else stem)

    def _build(self) -> None:
        by_path: dict[str, str] = {}
        by_route: dict[str, str] = {}
        # Sorted, so that of two files with one key (a.md and a/index.md) the choice is stable.
        for path in sorted(self.pages):
            by_path.setdefault(_strip_page(path), path)
            route = self.page_route(path)
            if route is not None:
                by_route.setdefault(route, path)
            for alias in self._meta(path).get("aliases") or []:
                by_route.setdefault(self._norm_route(str(alias)), path)
        self._by_path, self._by_route = by_path, by_route

    def _norm_route(self, route: str) -> str:
        key = _strip_page(route)
        return key.lower() if self.site.generator == "hugo" else key

    def by_path(self, key: str) -> str | None:
        """The page whose path, without page suffix or trailing index, is `key`."""
        if self._by_path is None:
            self._build()
        assert self._by_path is not None
        return self._by_path.get(key)

    def by_route(self, route: str) -> str | None:
        """The page published at `route` (from the site root, base path already stripped)."""
        if self._by_route is None:
            self._build()
        assert self._by_route is not None
        return self._by_route.get(self._norm_route(route))

    def redirect(self, route: str) -> str | None:
        """Where the site's redirects send `route` (a route or a URL), or None."""
        if self._redirects is None:
            self._redirects = [
                ([s for s in self._norm_route(src).split("/") if s], dest)
                for src, dest in self.site.redirects
            ]
        parts = [s for s in self._norm_route(route).split("/") if s]
        for pattern, dest in self._redirects:
            bound = _match(pattern, parts)
            if bound is not None:
                for name, value in sorted(bound.items(), key=lambda kv: -len(kv[0])):
                    dest = dest.replace(f":{name}*", value).replace(f":{name}", value)
                return dest.replace("*", bound.get("*", ""))
        return None


def _join(*parts: str) -> str:
    return "/".join(p.strip("/") for p in parts if p and p.strip("/"))


def _match(pattern: list[str], parts: list[str]) -> dict[str, str] | None:
    """Bindings of a redirect source (`:name` one segment, `:name*` or `*` the rest) against a route."""
    bound: dict[str, str] = {}
    for i, seg in enumerate(pattern):
        if seg == "*" or (seg.startswith(":") and seg.endswith("*")):
            bound[seg[1:-1] if seg != "*" else "*"] = "/".join(parts[i:])
            return bound
        if i >= len(parts):
            return None
        if seg.startswith(":"):
            bound[seg[1:]] = parts[i]
        elif seg != parts[i]:
            return None
    return bound if len(parts) == len(pattern) else None


# ----- resolution ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Located:
    """Where a link lands: `file` (a page or another file), or nothing; `external` for URLs."""

    file: str | None
    fragment: str | None
    external: bool = False
    how: str = ""  # file, path, route, redirect, static, anchor; "" when nothing was found


@dataclass
class LinkResolver:
    """Resolves link targets with the site's rules against a route table and the files on disk."""

    routes: Routes
    exists: Callable[[str], bool]
    _relative: dict[tuple[str, str], Located] = field(default_factory=dict)
    _absolute: dict[str, Located] = field(default_factory=dict)

    @property
    def site(self) -> Site:
        """The site conventions in use."""
        return self.routes.site

    def locate(self, source: str, target: str) -> Located:
        """Where the link `target` written in `source` lands (before any anchor check)."""
        text = target.strip()
        if _SCHEME.match(text) or text.startswith("//") or "{{" in text or "{%" in text:
            # A URL, or a template placeholder (Hugo shortcodes, Jinja) only the generator can fill in.
            return Located(None, None, external=True)
        path, _, fragment = text.partition("#")
        # unquote() costs more than the rest of a lookup: most targets hold no escape.
        frag = (unquote(fragment) if "%" in fragment else fragment) or None
        if "?" in path:
            path = path.split("?", 1)[0]
        if "%" in path:
            path = unquote(path)
        if not path:
            return Located(source, frag, how="anchor")
        if path.startswith("/"):
            hit = self._absolute.get(path)
            if hit is None:
                hit = self._absolute[path] = self._locate_absolute(path)
        else:
            key = (posixpath.dirname(source), path)
            hit = self._relative.get(key)
            if hit is None:
                hit = self._relative[key] = self._locate_relative(source, path)
        return Located(hit.file, frag, hit.external, hit.how)

    def _locate_relative(self, source: str, path: str) -> Located:
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(source), path))
        inside = not (joined == ".." or joined.startswith(("../", "/")))
        if inside:
            if joined in self.routes.pages or (not path.endswith("/") and self.exists(joined)):
                return Located(joined, None, how="file")
            found = self.routes.by_path(_strip_page("" if joined == "." else joined))
            if found is not None:
                return Located(found, None, how="path")
        # In a published site a link that is not a file path is a URL relative to the page's own
        # route (one level deeper with directory URLs: MkDocs' `../img/x.png` from a page).
        route = self.routes.page_route(source)
        if route is not None and self.site.generator != "none":
            base = posixpath.dirname("/" + route) if not _is_index(source) else "/" + route
            for start in dict.fromkeys([base, "/" + route]):
                url = posixpath.normpath(posixpath.join(start, path))
                if url.startswith("//") or url == "/..":
                    continue
                hit = self._absolute.get(url)
                if hit is None:
                    hit = self._absolute[url] = self._locate_absolute(url, strip_base=False)
                if hit.file is not None or hit.external:
                    return hit
        # Out of the manual (and not a page of its site): broken for its readers.
        return Located(None, None)

    def _locate_absolute(self, path: str, *, strip_base: bool = True) -> Located:
        base = self.site.base_path
        if strip_base and base and (path == base or path.startswith(base + "/")):
            path = path[len(base) :] or "/"
        path = posixpath.normpath(path)
        hit = self._route(path)
        if hit.file is not None or hit.external:
            return hit
        rel = path.lstrip("/")
        for folder in self.site.static:
            candidate = posixpath.join(folder, rel) if folder else rel
            if self.exists(candidate):
                return Located(candidate, None, how="static")
        for mount in self.site.mounts:
            if mount.prefix and not (rel == mount.prefix or rel.startswith(mount.prefix + "/")):
                continue
            inner = rel[len(mount.prefix) :].lstrip("/")
            candidate = posixpath.join(mount.folder, inner) if mount.folder else inner
            if candidate and (candidate in self.routes.pages or self.exists(candidate)):
                return Located(candidate, None, how="static")
            if candidate or mount.folder:
                # A page the index does not hold (beside the manual, or a file it skipped): it only has
                # to exist; its route is its path (no front matter is read).
                for name in _beside(candidate or mount.folder):
                    # An indexed page is found by its route only (its slug may have moved it).
                    if name not in self.routes.pages and self.exists(name):
                        return Located(name, None, how="outside")
        return Located(None, None)

    def _route(self, route: str, hops: int = 0) -> Located:
        found = self.routes.by_route(route)
        if found is not None:
            return Located(found, None, how="route")
        dest = self.routes.redirect(route)
        if dest is None or hops >= _MAX_REDIRECT_HOPS:
            return Located(None, None)
        if _SCHEME.match(dest) or dest.startswith("//"):
            return Located(None, None, external=True, how="redirect")
        dest = dest.partition("#")[0].split("?", 1)[0]
        hit = self._route(posixpath.normpath(posixpath.join(posixpath.dirname(route), dest)), hops + 1)
        return Located(hit.file, None, hit.external, "redirect" if hit.file or hit.external else "")


def _beside(path: str) -> list[str]:
    """The files a route under a folder outside the manual may be served from."""
    base = path.rstrip("/")
    names = [base + s for s in PAGE_SUFFIXES]
    names += [f"{base}/{n}{s}" for n in ("index", "README") for s in PAGE_SUFFIXES]
    return names


def _is_index(path: str) -> bool:
    name = posixpath.basename(path).lower()
    return any(name == n + s for n in _INDEX_NAMES for s in PAGE_SUFFIXES)


def display_target(source: str, target: str) -> str:
    """The file a broken link names, as the manual sees it (for messages)."""
    path = unquote(target.partition("#")[0].split("?", 1)[0])
    return (
        path if path.startswith("/") else posixpath.normpath(posixpath.join(posixpath.dirname(source), path))
    )


Row = tuple[Any, str, str]  # (row key, source file, target)
Verdict = tuple[Any, str | None, str | None, bool | None]  # (row key, target file, fragment, resolved)


def resolve_links(
    resolver: LinkResolver,
    rows: Iterable[Row],
    anchors_in: Callable[[set[tuple[str, str]]], set[tuple[str, str]]],
) -> list[Verdict]:
    """Every row's target file, fragment and verdict: True resolves, False is broken, None external.

    A link resolves when it lands on a file and, if it lands on a page with a fragment, the fragment
    is one of that page's heading anchors. `anchors_in(pairs)` answers which (page, anchor) pairs
    exist; it is called once, so callers can answer in one query.
    """
    located = [(key, resolver.locate(source, target)) for key, source, target in rows]
    pages = resolver.routes.pages
    wanted = {
        (loc.file, loc.fragment)
        for _, loc in located
        if loc.file is not None and loc.fragment is not None and loc.file in pages
    }
    present = anchors_in(wanted) if wanted else set()
    out: list[Verdict] = []
    for key, loc in located:
        if loc.external:
            out.append((key, None, None, True if loc.how == "redirect" else None))
        elif loc.file is None:
            out.append((key, None, loc.fragment, False))
        elif loc.fragment is None or loc.file not in pages:
            out.append((key, loc.file, loc.fragment, True))
        else:
            out.append((key, loc.file, loc.fragment, (loc.file, loc.fragment) in present))
    return out
