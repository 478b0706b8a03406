"""Site routes and the one rule set for internal links (the site itself is detected in udm.site.detect).

The index (full and small refreshes), lint, `udm links` and the patch validator all ask a
`LinkResolver`; none of them resolves a link on its own.

A link resolves, in order: as a file path relative to its file (`install.md`, `img/a.png`); as the
same path without its page suffix (`install`, `install.html` -> `install.md`, `guide/` ->
`guide/index.md` or `guide/README.md`); as a site route (absolute `/docs/guide/install`, after the
base path is stripped; relative ones against the page's own route); through the site's redirects;
and, for absolute links, as a file served from the site root (Docusaurus `static/`, Hugo `static/`,
the content folder itself). A fragment must then name a heading anchor of the page it lands on.
"""

from __future__ import annotations

import datetime
import fnmatch
import os
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import unquote

from udm.markdown import (
    MYST_SCHEMES,
    HugoRef,
    LiquidTarget,
    liquid_target,
    parse_front_matter,
    parse_ref,
    slugify,
)
from udm.shown import utf8_name
from udm.site.anchors import (
    has_explicit_anchor,
    own_heading_rule,
    page_anchors,
    page_named,
    python_markdown_slug,
    vitepress_slug,
    zola_path_slug,
)
from udm.site.detect import (
    GENERATORS,
    INDEX_NAMES,
    NUMBER_PREFIX,
    PAGE_SUFFIXES,
    ROUTE_SUFFIXES,
    SCHEME,
    Mount,
    Site,
    detect_site,
    settings_site,
    site_for,
    strip_page,
)
from udm.site.docsify import MAX_ROUTE, alias_pattern, route_file
from udm.site.fumadocs import DOT_LANGUAGE, mount_languages, next_segments
from udm.site.model import Docsify, climbs, is_url, outside_root, read_head, within

__all__ = [
    "GENERATORS",
    "PAGE_SUFFIXES",
    "BesidePages",
    "LinkResolver",
    "Located",
    "Mount",
    "Routes",
    "Site",
    "beside_meta",
    "beside_text",
    "detect_site",
    "display_target",
    "has_explicit_anchor",
    "is_reference",
    "no_holder",
    "resolve_links",
    "route_meta",
    "settings_site",
    "site_for",
    "vitepress_slug",
]

_BLOG_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})-(.+)$")
# Docusaurus' blog file names (`parseBlogFileName`): a date anywhere in the path moves the post to
# `/<date as folders>/<the path before it><the name after it>`, `/index` dropped.
_BLOG_FILE = re.compile(
    r"^(?P<folder>.*)(?P<date>\d{4}[-/]\d{1,2}[-/]\d{1,2})[-/]?(?P<text>.*?)(?:/index)?\.mdx?$", re.S
)
_BLOG_PLAIN = re.compile(r"(?:/index)?\.mdx?$")
# A dated route below a blog (`2021/5/1/releases/v1`): the date as its folders, then the rest.
_BLOG_ROUTE = re.compile(r"^(\d{4})/(\d{1,2})/(\d{1,2})/(.+?)/?$", re.S)
# How many folders of a dated route's rest `_blog_files` tries as the folder before the date.
_BLOG_FOLDERS = 4
_MAX_REDIRECT_HOPS = 10
# What a site's `src/pages` serves besides Markdown: React pages (Docusaurus), Astro pages and endpoints.
_CODE_PAGE_SUFFIXES = (".js", ".jsx", ".ts", ".tsx", ".astro", ".html")
# The routes Docusaurus generates under a blog's base: the list, its pages, tags, archive, authors.
_BLOG_PAGES = re.compile(r"^(?:|page/\d+|archive|tags(?:/[^/]+)?|authors(?:/[^/]+)?)/?$")
# Front matter keys that move a page's route (Docusaurus slug/id, Hugo slug/url/aliases, Jekyll
# permalink, Zola path; Jekyll's redirect_from is read as aliases, its categories as a list).
_META_KEYS = ("slug", "id", "url", "aliases", "permalink", "path")
_MAX_ALIASES = 100
# The generators that leave a draft page (front matter) out of their production build.
_DRAFT_SITES = ("hugo", "zola", "docusaurus", "starlight", "jekyll")
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_PERMALINK_TOKEN = re.compile(r":([a-z]+)")
_MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)


# ----- routes --------------------------------------------------------------------------------------


def route_meta(front_matter: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The front matter keys that move a page's route (slug, id, url, aliases), or None."""
    if not isinstance(front_matter, Mapping):
        return None
    out: dict[str, Any] = {}
    date = front_matter.get("date")
    if date is not None:
        # A dated page (a blog post) may be routed by a Hugo permalink (`/:year/:month/:slug/`).
        day = _DAY.match(str(date))
        title = front_matter.get("title")
        if day:
            out["date"] = day.group(0)
        if isinstance(title, str) and title.strip():
            out["title"] = title.strip()[:500]
    for key in _META_KEYS:
        value = front_matter.get(key)
        if key == "aliases" and isinstance(value, list):
            aliases = [str(v) for v in value if isinstance(v, (str, int))]
            if aliases:
                out[key] = aliases[:_MAX_ALIASES]
        elif isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
            out[key] = str(value).strip()
    # jekyll-redirect-from: the old routes of a page, one or a list.
    moved = front_matter.get("redirect_from")
    olds = [moved] if isinstance(moved, str) else moved if isinstance(moved, list) else []
    olds = [str(v) for v in olds if isinstance(v, (str, int)) and not isinstance(v, bool)]
    if olds:
        out["aliases"] = [*out.get("aliases", []), *olds][:_MAX_ALIASES]
    # Jekyll's `categories` (a list, or words) and `category`: a post's route may hold them.
    cats = front_matter.get("categories")
    words = cats.split() if isinstance(cats, str) else cats if isinstance(cats, list) else []
    one = front_matter.get("category")
    words = [*words, one] if isinstance(one, str) else words
    words = [str(w).strip() for w in words if isinstance(w, (str, int)) and not isinstance(w, bool)]
    if any(words):
        out["categories"] = [w for w in words if w][:20]
    # A draft (`draft: true`: Hugo, Zola, Docusaurus, Starlight; Jekyll's `published: false`) is left
    # out of the site's production build.
    if front_matter.get("draft") is True or front_matter.get("published") is False:
        out["draft"] = True
    return out or None


# A folder beside the manual is read for its pages' route front matter up to these bounds: names
# looked at, pages kept, and each page's first bytes.
_BESIDE_NAMES = 50_000
_BESIDE_PAGES = 5_000
_BESIDE_HEAD = 16_384
_BESIDE_DEPTH = 32
# The files Docusaurus' docs and blog plugins take as pages (`include`: `**/*.{md,mdx}`).
_DOCUSAURUS_PAGES = (".md", ".mdx")
# Each page's route front matter by its real path, kept while its size, mtime, ctime and inode stay
# (a copy that keeps the mtime still moves the ctime): a resolution pass that asks walks the folder
# again but reads only what changed.
_HEADS: dict[str, tuple[tuple[int, int, int, int], Mapping[str, Any]]] = {}
_MAX_HEADS = 50_000
# A page beside the manual is parsed for its anchors only up to the size in bytes of a page the
# index parses (`max_file_bytes`, this by default); a larger one's anchors are unknown.
_BESIDE_TEXT = 4_000_000


class BesidePages(NamedTuple):
    """A folder beside the manual as `beside_meta` read it: its pages with their route front matter,
    and whether the walk saw all of it (a bound cut it short: a page not found may still be there)."""

    pages: list[tuple[str, Mapping[str, Any]]]
    complete: bool


def beside_meta(root: Path) -> Callable[[str], BesidePages]:
    """A reader of a folder beside the manual (`../docs`, from `root`): its pages (paths from the root,
    in the order a sorted walk meets them) with the front matter keys that move their routes.

    Docusaurus takes no page from a `_` or dot name nor from `node_modules`, so neither is read; only
    regular files are pages (a named pipe is never opened), a symbolic link out of the folder is not
    followed, a name that is not UTF-8 is left out (the index keeps no such name), and the walk stops
    after 50,000 names, 5,000 pages or 32 folders deep, saying so.
    """
    base = os.path.normpath(root)

    def pages(folder: str) -> BesidePages:
        top = os.path.realpath(os.path.join(base, folder))
        fence = os.path.realpath(os.path.join(base, *[".."] * climbs(folder)))
        if not within(top, fence) or not os.path.isdir(top):
            return BesidePages([], True)
        found: list[tuple[str, Mapping[str, Any]]] = []
        seen = 0
        # (path below the folder, its folder on disk): no folder on it is a symbolic link, so each
        # file's path is its real path and only a file that is a link needs resolving.
        stack = [("", top)]
        while stack:
            inner, here = stack.pop()
            try:
                with os.scandir(here) as listing:
                    entries = sorted(listing, key=lambda e: e.name)
            except OSError:
                continue
            seen += len(entries)
            if seen > _BESIDE_NAMES:
                return BesidePages(found, False)
            below: list[tuple[str, str]] = []
            for entry in entries:
                name = entry.name
                if name.startswith((".", "_")) or name == "node_modules" or not utf8_name(name):
                    continue
                path = f"{inner}/{name}" if inner else name
                try:
                    is_folder = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if is_folder:
                    if path.count("/") >= _BESIDE_DEPTH:
                        return BesidePages(found, False)  # what lies deeper is not read
                    below.append((path, entry.path))
                    continue
                real = _page_file(entry, top)
                if real is None:
                    continue
                rel = posixpath.join(folder, path)
                found.append((rel, _head_meta(real, rel)))
                if len(found) >= _BESIDE_PAGES:
                    return BesidePages(found, False)
            stack.extend(reversed(below))
        return BesidePages(found, True)

    return pages


def _page_file(entry: os.DirEntry[str], top: str) -> str | None:
    """The real path of a file the walk meets when it is a page: a regular `.md`/`.mdx` file, or a
    link to one inside `top` (None otherwise)."""
    try:
        if not entry.name.lower().endswith(_DOCUSAURUS_PAGES):
            return None
        if entry.is_symlink():
            real = os.path.realpath(entry.path)
            return real if within(real, top) and os.path.isfile(real) else None
        return entry.path if entry.is_file(follow_symlinks=False) else None
    except OSError:
        return None


def beside_text(root: Path, rel: str, limit: int = _BESIDE_TEXT) -> str | None:
    """A page beside the manual's text as link checks read it for its anchors (the index's and the
    patch validator's alike): None when it cannot be read or holds more than `limit` bytes (the
    manual's `max_file_bytes`), its anchors then unknown."""
    try:
        raw = read_head(root / rel, limit)
    except OSError:
        return None
    return None if len(raw) > limit else raw.decode("utf-8", errors="replace")


def _head_meta(real: str, rel: str) -> Mapping[str, Any]:
    """The route front matter of a page from its first bytes (empty when unreadable or none), read
    again only when its size, mtime, ctime or inode changed."""
    try:
        st = os.stat(real)
    except OSError:
        return {}
    stamp = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    known = _HEADS.get(real)
    if known is not None and known[0] == stamp:
        return known[1]
    meta: Mapping[str, Any] = {}
    try:
        head = read_head(Path(real), _BESIDE_HEAD)[:_BESIDE_HEAD].decode("utf-8", errors="replace")
    except OSError:
        head = ""
    head = head.removeprefix("\ufeff")  # gray-matter, Docusaurus' reader, drops a byte-order mark
    if head.startswith("---"):
        data, _, _ = parse_front_matter(head.splitlines(keepends=True)[:4000], rel)
        meta = route_meta(data) or {}
    if len(_HEADS) >= _MAX_HEADS:
        _HEADS.clear()
    _HEADS[real] = (stamp, meta)
    return meta


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
        # The redirects with parameters, in the site's order (their place in it first), and the plain ones
        # by their source's route key (`redirect`).
        self._redirects: list[tuple[int, list[str | tuple[str, frozenset[str]]], str]] | None = None
        self._plain_redirects: dict[str, tuple[int, str]] = {}
        self._rewrites: list[tuple[re.Pattern[str], str]] | None = None
        self._permalinks = dict(site.permalinks)
        # Jekyll's front matter defaults that set a permalink: (type, path, pattern), in order.
        self._jekyll_defaults = [
            (key.split(":", 2)[1], key.split(":", 2)[2], pattern)
            for key, pattern in site.permalinks
            if key.startswith("default:")
        ]
        # Jekyll: the routes whose URL ends in `/` (a relative link from one starts below it).
        self.slashed: set[str] = set()
        # Whether the site builds a page from each file asked about, worked out once per file.
        self._unpublished: dict[str, bool] = {}

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

    def is_unpublished(self, path: str) -> bool:
        """Whether the site builds no page from the file `path` (a partial, a snippet, an excluded
        file, a draft). The site's rules are asked about each page once, however many links name it;
        a draft is told by its front matter each time, which a small refresh may change."""
        if self.site.generator in _DRAFT_SITES and self._draft(path):
            return True
        if not self.site.unpublished:
            return False
        known = self._unpublished.get(path)
        if known is None:
            # The answer depends on the path and the site's rules only, never on what the file holds.
            known = self._unpublished[path] = self.site.unpublished_page(path)
        return known

    def _draft(self, path: str) -> bool:
        """Whether the page is a draft by its front matter, or (Zola) lies below a draft section."""
        if self._meta(path).get("draft") is True:
            return True
        if self.site.generator != "zola":
            return False
        folder = posixpath.dirname(path)
        if posixpath.basename(path).startswith("_index."):
            folder = posixpath.dirname(folder)
        for _ in range(64):
            if not folder or folder.startswith(".."):
                return False
            if self._meta(f"{folder}/_index.md").get("draft") is True:
                return True
            folder = posixpath.dirname(folder)
        return False

    def page_route(self, path: str) -> str | None:
        """The route key of a page (no leading slash), or None when no mount publishes it (or the site
        builds no page from it: a partial, a snippet)."""
        if self.is_unpublished(path):
            return None
        found = _mount_of(self.site, path)
        return None if found is None else self._route(found[0], found[1], self._meta(path), path)

    def _route(self, mount: Mount, rel: str, meta: Mapping[str, Any], path: str = "") -> str:
        gen = self.site.generator
        if gen == "vuepress" and meta.get("permalink"):
            # Front matter `permalink: /custom/path/` moves the page (its own path redirects there).
            return _join(str(meta["permalink"]))
        if gen == "rspress":
            # The path from Rspress' root (the manual may be a folder of it), the default language's
            # folder rewritten away; only `index` is a folder's page (`README.md` is /README).
            whole = "/".join(p for p in (mount.prefix, rel) if p)
            whole = self._rewrite(whole) if self.site.rewrites else whole
            folder, _, name = whole.rpartition("/")
            bare = name.rsplit(".", 1)[0] if "." in name else name
            return _join(folder, "" if bare.lower() == "index" else bare)
        if gen == "zola":
            return _zola_route(mount, rel, meta)
        if gen == "vitepress" and self.site.rewrites:
            rel = self._rewrite(rel)
        dirs, _, name = rel.rpartition("/")
        parts = [p for p in dirs.split("/") if p]
        stem = name
        for suffix in ROUTE_SUFFIXES:
            if stem.lower().endswith(suffix):
                stem = stem[: -len(suffix)]
                break
        if gen == "docusaurus" and mount.kind == "blog":
            if meta.get("slug"):
                return _join(mount.prefix, str(meta["slug"]))
            return _join(mount.prefix, _blog_slug(rel))
        if gen == "docusaurus" and mount.kind == "docs":
            # Docusaurus' getSlug: an absolute slug is the route; a category index (`index`, `README`
            # or the folder's own name, as written, any case) is its folder's route, whatever its id;
            # otherwise the slug, the id or the file name without its number prefix, in the folder.
            slug = str(meta.get("slug") or "")
            folders = [NUMBER_PREFIX.sub("", p) for p in parts]
            if slug.startswith("/"):
                return _join(mount.prefix, slug)
            index = stem.lower() in ("index", "readme") or bool(parts and stem.lower() == parts[-1].lower())
            if not slug and index:
                return _join(mount.prefix, *folders)
            ident = str(meta.get("id") or "")
            base = slug or (ident if ident and "/" not in ident else NUMBER_PREFIX.sub("", stem))
            return _join(mount.prefix, *folders, base)
        if gen == "starlight":
            # Astro's content ids: front matter `slug`, else each path segment github-slugged.
            if meta.get("slug"):
                return _join(mount.prefix, str(meta["slug"]))
            segments = [slugify(p) for p in [*parts, stem]]
            if segments[-1] == "index":
                segments.pop()
            return _join(mount.prefix, *segments)
        if gen == "jekyll":
            return self._jekyll_route(mount, parts, stem, meta, path)
        if mount.kind.startswith("nextra-app"):
            # The App Router: a page is its folder's `page.mdx`; route groups `(name)` and parallel
            # routes' slots `@name` are no segment (the manual may be inside one); a page under the
            # language parameter is the default language's (its others are redirects to it).
            kept = next_segments([*mount.prefix.split("/"), *parts])
            default = mount_languages(mount.kind)[0]
            if default and kept and kept[0].startswith("[") and kept[0].endswith("]"):
                kept[0] = default
            return _join(*kept)
        if mount.kind.startswith("nextra-i18n"):
            # Nextra's content folder with i18n: its first folder is the language, before the base
            # (`Mount.content`); the manual may be that folder or one below it.
            full = [p for p in [*mount.prefix.split("/"), *parts] if p]
            lang, inner = (full[0], full[1:]) if full else ("", [])
            return _join(lang, mount.content, *inner, "" if stem.lower() == "index" else stem)
        if mount.kind.startswith(("fumadocs", "nextra-pages")):
            # Route groups `(name)` are no segment; a translation `x.cn` is `cn`'s page x (cn one of
            # the site's languages; `x.en` is x, en being the default).
            parts = [p for p in parts if not (p.startswith("(") and p.endswith(")"))]
            default, languages = mount_languages(mount.kind)
            dotted = DOT_LANGUAGE.match(stem) if languages or default else None
            lang = ""
            if dotted and (dotted.group(2) in languages or dotted.group(2) == default):
                stem, lang = dotted.group(1), "" if dotted.group(2) == default else dotted.group(2)
            index = (
                stem.lower() == "index" if mount.kind.startswith("nextra") else stem.lower() in INDEX_NAMES
            )
            route = _join(mount.prefix, *parts, "" if index else stem)
            return _join(lang, route) if lang else route
        if mount.kind == "nextra":
            return _join(mount.prefix, *parts, "" if stem.lower() == "index" else stem)
        if gen == "hugo":
            if meta.get("url"):
                return _join(str(meta["url"])).lower()
            if self.site.permalinks:
                routed = self._permalink(mount, parts, stem, meta)
                if routed is not None:
                    return routed
            if meta.get("slug") and stem.lower() not in INDEX_NAMES:
                stem = str(meta["slug"])
            return _join(mount.prefix, *parts, "" if stem.lower() in INDEX_NAMES else stem).lower()
        if gen == "docusaurus":
            # Docusaurus' own pages (`src/pages`, fileToPath): only `index` is a folder's page.
            return _join(mount.prefix, *parts, "" if stem.lower() == "index" else stem)
        return _join(mount.prefix, *parts, "" if stem.lower() in INDEX_NAMES else stem)

    def _permalink(self, mount: Mount, parts: list[str], stem: str, meta: Mapping[str, Any]) -> str | None:
        """A Hugo page's route by the site's `permalinks` for its top section, None when none applies
        (or the pattern holds a token not modelled here)."""
        content = [p for p in mount.content.split("/") if p] + parts
        if not content:
            return None
        branch = stem.lower() == "_index"
        kind = "section" if branch else "page"
        pattern = self._permalinks.get(f"{kind}:{content[0].lower()}")
        if pattern is None:
            return None
        bundle = stem.lower() in INDEX_NAMES
        base = content[-1] if bundle else stem
        dirs = content[:-1] if bundle else content
        date = str(meta.get("date") or "0001-01-01")
        slug = str(meta.get("slug") or "") or slugify(str(meta.get("title") or "")) or base
        values = {
            "year": date[0:4],
            "month": date[5:7],
            "day": date[8:10],
            "monthname": _MONTHS[int(date[5:7]) - 1] if "01" <= date[5:7] <= "12" else "",
            "slug": slug,
            "title": slugify(str(meta.get("title") or "")) or base,
            "filename": base,
            "contentbasename": base,
            "slugorfilename": str(meta.get("slug") or "") or base,
            "slugorcontentbasename": str(meta.get("slug") or "") or base,
            "section": content[0],
            "sections": "/".join(dirs),
        }
        if any(m.group(1) not in values for m in _PERMALINK_TOKEN.finditer(pattern)):
            return None
        route = _PERMALINK_TOKEN.sub(lambda m: values[m.group(1)], pattern)
        lang = (
            mount.prefix[: len(mount.prefix) - len(mount.content)]
            if mount.prefix.endswith(mount.content)
            else ""
        )
        return _join(lang, route).lower()

    def _jekyll_route(
        self, mount: Mount, parts: list[str], stem: str, meta: Mapping[str, Any], path: str
    ) -> str:
        """A Jekyll page's route (its URL ending in `/` or not is kept in `slashed`)."""
        if not meta.get("permalink") and self._jekyll_defaults:
            kind = mount.kind.partition(":")[2] if mount.kind.startswith("jekyll:") else ""
            kind = kind or ("posts" if "_posts" in parts else "pages")
            default = self._default_permalink(path, kind)
            if default is not None:
                meta = {**meta, "permalink": default}
        route, written = self._jekyll_url(mount, parts, stem, meta)
        if written.endswith("/"):
            self.slashed.add(route)
        return route

    def site_mount(self) -> Mount | None:
        """The site's `pages` mount: on a Jekyll site, its own folder (its pages where they lie)."""
        return next((m for m in self.site.mounts if m.kind == "pages"), None)

    def _default_permalink(self, path: str, kind: str) -> str | None:
        """The permalink the config's `defaults` give the page `path` (from the manual root) of `kind`
        (a collection's name, `posts` or `pages`): the most specific scope's (the longest path, then one
        naming the type), a later one of a scope as specific winning; None when no scope holds it."""
        site_path = self._jekyll_site_path(path)
        if site_path is None:
            return None
        best: tuple[int, int] | None = None
        found = None
        for scope_type, scope_path, pattern in self._jekyll_defaults:
            if scope_type and scope_type != kind:
                continue
            if scope_path and not (
                site_path == scope_path
                or site_path.startswith(scope_path + "/")
                or ("*" in scope_path and fnmatch.fnmatchcase(site_path, scope_path))
            ):
                continue
            rank = (len(scope_path), 1 if scope_type else 0)
            if best is None or rank >= best:
                best, found = rank, pattern
        return found

    def _jekyll_site_path(self, path: str) -> str | None:
        """A path from the manual root as a path from the Jekyll site's folder (None: not on the site)."""
        mount = self.site_mount()
        if mount is None or not path:
            return None
        if mount.prefix:
            return f"{mount.prefix}/{path}"
        if not mount.folder:
            return path
        return path[len(mount.folder) + 1 :] if path.startswith(mount.folder + "/") else None

    def _jekyll_url(
        self, mount: Mount, parts: list[str], stem: str, meta: Mapping[str, Any]
    ) -> tuple[str, str]:
        """A Jekyll page's route key and the URL pattern it was made by: its front matter `permalink`,
        else its collection's pattern (a post's by its date), else its path (`about.md` is
        /about.html, or /about/ by the site's permalink style)."""
        own = str(meta.get("permalink") or "")
        if own and ":" not in own:
            return strip_page(own), own
        cats = [c.lower() for c in meta.get("categories") or []]
        values = {"output_ext": "", "path": "/".join([*parts, stem]), "basename": stem, "name": stem}
        slug = str(meta.get("slug") or "") or slugify(stem) or stem
        pattern = own or None
        if mount.kind.startswith("jekyll:"):
            name = mount.kind.partition(":")[2]
            pattern = pattern or self._permalinks.get(f"collection:{name}")
            values.update(collection=name, title=slug, slug=slug, categories="/".join(cats))
        elif "_posts" in parts:
            at = parts.index("_posts")
            dated = _BLOG_DATE.match(stem)
            if dated is None:
                # Jekyll writes no post whose file name holds no date: its path, which no link names.
                return _join(mount.prefix, *parts, stem), ""
            title = dated.group(4)
            day = str(meta.get("date") or "-".join(dated.groups()[:3]))
            values.update(_jekyll_dates(day))
            slug = str(meta.get("slug") or "") or title
            cats = [p.lower() for p in parts[:at]] + cats
            values.update(title=slug, slug=slug, categories="/".join(dict.fromkeys(cats)))
            pattern = pattern or self._permalinks.get("collection:posts")
        if pattern is None:
            index = stem.lower() in INDEX_NAMES
            style = self._permalinks.get("pages", "")
            return _join(mount.prefix, *parts, "" if index else stem), "/" if index else style
        if any(m.group(1) not in values for m in _JEKYLL_TOKEN.finditer(pattern)):
            # A token not modelled: the page where Jekyll's default puts it (a collection's
            # `/:collection/:path`), or its path.
            owner = values.get("collection", "")
            return _join(mount.prefix, owner, *parts, stem), ""
        return strip_page(
            _JEKYLL_TOKEN.sub(lambda m: values[m.group(1)], pattern).replace("//", "/")
        ), pattern

    def _rewrite(self, rel: str) -> str:
        """A VitePress page's path after the first of the site's `rewrites` that matches it."""
        if self._rewrites is None:
            self._rewrites = [
                (pattern, dest)
                for source, dest in self.site.rewrites[:_MAX_REWRITES]
                if (pattern := _rewrite_pattern(source)) is not None
            ]
        for pattern, dest in self._rewrites:
            m = pattern.match(rel)
            if m is not None:
                out = _REWRITE_PARAM.sub(partial(_bound_value, m.groupdict()), dest)
                return posixpath.normpath(out.lstrip("/")) if out.strip("/") else "index.md"
        return rel

    def _build(self) -> None:
        by_path: dict[str, str] = {}
        by_route: dict[str, str] = {}
        # Sorted, so that of two files with one key (a.md and a/index.md) the choice is stable.
        for path in sorted(self.pages):
            if self.is_unpublished(path):
                continue  # a partial or snippet: no page of the site, by its path or its route
            by_path.setdefault(strip_page(path), path)
            route = self.page_route(path)
            if route is not None:
                # Filed under the key a link's route is looked up by, folded the same way (a page
                # routed `y/index` by its id is found at /y/index).
                by_route.setdefault(self.route_key(route), path)
                for other in self._language_routes(path, route):
                    by_route.setdefault(self.route_key(other), path)
                if self.site.generator == "vuepress" and self._meta(path).get("permalink"):
                    found = _mount_of(self.site, path)
                    if found is not None:
                        by_route.setdefault(self.route_key(self._route(found[0], found[1], {}, path)), path)
            for alias in self._meta(path).get("aliases") or []:
                by_route.setdefault(self.route_key(str(alias)), path)
        self._by_path, self._by_route = by_path, by_route

    def _language_routes(self, path: str, route: str) -> list[str]:
        """The other routes of a Next app page under the language parameter (`app/[lang]/guide/page.mdx`,
        routed in the default language, is served in every language)."""
        found = _mount_of(self.site, path)
        if found is None or not found[0].kind.startswith("nextra-app:"):
            return []
        mount, rel = found
        default, others = mount_languages(mount.kind)
        kept = next_segments([*mount.prefix.split("/"), *rel.split("/")[:-1]])
        if not (kept and kept[0].startswith("[") and kept[0].endswith("]")) or not route.startswith(default):
            return []
        rest = route[len(default) :]
        return [f"{lang}{rest}" for lang in sorted(others)]

    def route_key(self, route: str) -> str:
        """The key a route is looked up by in `by_route`, `beside_routes` and the redirects (the
        site's own folding)."""
        if self.site.generator in ("rspress", "docusaurus", "nextra", "starlight", "zola"):
            # These fold `index` only: `/guide/README` is the route of a `guide/README.md` page
            # there (a Docusaurus docs README is its folder's route already).
            return strip_page(route, ("index",))
        key = strip_page(route)
        return key.lower() if self.site.generator == "hugo" else key

    def beside_routes(self, mount: Mount, pages: list[tuple[str, Mapping[str, Any]]]) -> dict[str, str]:
        """Route -> file of pages of `mount` the index does not hold (a folder beside the manual), each
        given with its route front matter (`beside_meta`), keyed as `_build` keys the index's pages;
        the first file of a route wins."""
        table: dict[str, str] = {}
        prefix = mount.folder.rstrip("/") + "/"
        for path, meta in pages:
            if path.startswith(prefix) and not self.is_unpublished(path):
                table.setdefault(self.route_key(self._route(mount, path[len(prefix) :], meta, path)), path)
        return table

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
        return self._by_route.get(self.route_key(route))

    def redirect(self, route: str) -> str | None:
        """Where the site's redirects send `route` (a route or a URL), or None: the first redirect
        whose source matches it. A source of plain segments (GitBook's are all plain, thousands of them)
        is looked up at once; those with parameters are tried in order."""
        if self._redirects is None:
            self._redirects, self._plain_redirects = [], {}
            for n, (src, dest) in enumerate(self.site.redirects):
                pattern = [_segment(s) for s in self.route_key(src).split("/") if s]
                if all(isinstance(p, str) and p != "*" and not p.startswith(":") for p in pattern):
                    self._plain_redirects.setdefault("/".join(map(str, pattern)), (n, dest))
                else:
                    self._redirects.append((n, pattern, dest))
        parts = [s for s in self.route_key(route).split("/") if s]
        plain = self._plain_redirects.get("/".join(parts))
        for n, pattern, dest in self._redirects:
            if plain is not None and n > plain[0]:
                break  # the plain source comes first in the site's order
            bound = _match(pattern, parts)
            if bound is not None:
                for name, value in sorted(bound.items(), key=lambda kv: -len(kv[0])):
                    dest = dest.replace(f":{name}*", value).replace(f":{name}", value)
                return dest.replace("*", bound.get("*", ""))
        return None if plain is None else plain[1].replace("*", "")


# A path-to-regexp parameter (`:name`, `:name*`, `:name+`, `:name?`) or a group (`(.*)`).
_REWRITE_PARAM = re.compile(r":([A-Za-z_]\w{0,50})([*+?])?|\(([^()]{0,20})\)")
# The groups a rewrite may hold: a hostile config gets no regular expression of its own through.
_REWRITE_GROUPS = {".*": ".*", ".+": ".+", "[^/]+": "[^/]+", "[^/]*": "[^/]*"}
_MAX_REWRITES = 100
_MAX_REWRITE_SPANS = 2  # `.*`-like parts per pattern: more would backtrack polynomially


# A Jekyll permalink's placeholder (`:year`, `:output_ext`); the longest name first.
_JEKYLL_TOKEN = re.compile(r":([a-z_]+)")


def _jekyll_dates(day: str) -> dict[str, str]:
    """The date placeholders of a Jekyll permalink for a post of `day` (YYYY-MM-DD)."""
    try:
        when = datetime.date(int(day[0:4]), int(day[5:7]), int(day[8:10]))
    except ValueError:
        return {}
    return {
        "year": f"{when.year:04d}",
        "short_year": f"{when.year % 100:02d}",
        "month": f"{when.month:02d}",
        "i_month": str(when.month),
        "short_month": when.strftime("%b"),
        "long_month": when.strftime("%B"),
        "day": f"{when.day:02d}",
        "i_day": str(when.day),
        "y_day": f"{when.timetuple().tm_yday:03d}",
        "week": f"{when.isocalendar()[1]:02d}",
        "short_day": when.strftime("%a"),
        "long_day": when.strftime("%A"),
        "hour": "00",
        "minute": "00",
        "second": "00",
    }


def _bound_value(bound: dict[str, str | None], param: re.Match[str]) -> str:
    """What a rewrite destination's parameter stands for (a group is kept as written)."""
    return (bound.get(param.group(1)) or "") if param.group(1) else param.group(0)


def _rewrite_pattern(source: str) -> re.Pattern[str] | None:
    """A VitePress rewrite source as a regular expression over page paths (None when not read)."""
    out: list[str] = []
    pos = spans = 0
    for m in _REWRITE_PARAM.finditer(source):
        literal = source[pos : m.start()]
        if m.group(1):
            name, mod = m.group(1), m.group(2)
            inner = {None: "[^/]+", "?": "[^/]+", "+": ".+", "*": ".*"}[mod]
            spans += inner.startswith(".")
            if mod in ("*", "?") and literal.endswith("/"):
                # As path-to-regexp does: the slash before an optional parameter is optional with it.
                out += [re.escape(literal[:-1]), f"(?:/(?P<{name}>{inner}))?"]
            else:
                out += [re.escape(literal), f"(?P<{name}>{inner})" + ("?" if mod == "?" else "")]
        else:
            group = _REWRITE_GROUPS.get(m.group(3))
            if group is None:
                return None
            spans += group.startswith(".")
            out += [re.escape(literal), f"(?:{group})"]
        pos = m.end()
    out.append(re.escape(source[pos:]))
    if spans > _MAX_REWRITE_SPANS:
        return None
    try:
        return re.compile("".join(out) + r"\Z")
    except re.error:  # a parameter named twice
        return None


def _mount_of(site: Site, path: str) -> tuple[Mount, str] | None:
    """The first mount publishing the file `path`, and the path relative to the mount's folder."""
    for mount in site.mounts:
        if mount.folder and not path.startswith(mount.folder + "/"):
            continue
        return mount, path[len(mount.folder) + 1 :] if mount.folder else path
    return None


def _from_site(path: str, folder: tuple[str, str]) -> str:
    """`path`, written from a site's folder, from the manual root (`folder`: the site's folder from the
    root and the root from the site's folder); "" when it is not under the root."""
    site_dir, root_in_site = folder
    joined = posixpath.normpath(posixpath.join(site_dir, path))
    if not outside_root(joined):
        return joined
    normal = posixpath.normpath(path)
    if root_in_site and normal.startswith(root_in_site + "/"):
        return normal[len(root_in_site) + 1 :]
    return ""


def _blog_slug(rel: str) -> str:
    """A Docusaurus blog post's route below the blog, from its path in the blog folder."""
    dated = _BLOG_FILE.match(rel)
    if dated is None:
        return _BLOG_PLAIN.sub("", rel)
    return "/".join([re.sub(r"[-/]", "/", dated["date"]), dated["folder"] + dated["text"]])


def _blog_files(route: str) -> list[str]:
    """The paths in a blog folder whose post `_blog_slug` puts at a dated `route` below the blog (its
    inverse): the date written with `-` or as folders, the rest's first folders before or after it, the
    post a file or a folder's index. [] for a route with no date. The route is normalized (no `..`).
    Not tried: a folder part that is no whole folder (`release-2021-05-01-v1.md`), a date alone."""
    dated = _BLOG_ROUTE.match(route)
    if dated is None:
        return []
    year, month, day, rest = dated.groups()
    want = f"{year}/{month}/{day}/{rest}"
    parts = rest.split("/")
    found: list[str] = []
    for cut in range(min(len(parts) - 1, _BLOG_FOLDERS) + 1):
        folder = "".join(f"{p}/" for p in parts[:cut])
        text = "/".join(parts[cut:])
        for sep in ("-", "/"):
            for after in ("-", "/"):
                stem = f"{folder}{year}{sep}{month}{sep}{day}{after}{text}"
                for name in (stem, f"{stem}/index"):
                    for suffix in _DOCUSAURUS_PAGES:
                        # Only a path that the forward rule reads back to the route (a later date in
                        # the rest would be taken as the post's date instead).
                        if _blog_slug(name + suffix) == want:
                            found.append(name + suffix)
    return found


# A Zola page's file name that starts with a date (RFC 3339): the rest, after `_` or `-`, is its slug.
_ZOLA_DATED = re.compile(
    r"^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])"
    r"(?:T(?:[01]\d|2[0-3]):[0-5]\d:(?:[0-5]\d|60)(?:\.\d+)?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d))?"
    r"\s?[_-](?P<slug>.+)$"
)


class _ZolaKind(NamedTuple):
    """A Zola mount's settings, as `_zola` (udm.site.detect) writes them in `Mount.kind`
    (`zola:<paths strategy>:<other languages>:<keep>`)."""

    strategy: str  # `slugify.paths`: on, safe or off
    languages: tuple[str, ...]  # the site's languages other than the default
    keep_dates: bool  # `slugify.paths_keep_dates`


def _zola_kind(mount: Mount) -> _ZolaKind:
    """The Zola settings a mount's kind holds."""
    _, strategy, languages, keep = [*mount.kind.split(":"), "", "", ""][:4]
    return _ZolaKind(strategy, tuple(lang for lang in languages.split(",") if lang), keep == "keep")


def _zola_route(mount: Mount, rel: str, meta: Mapping[str, Any]) -> str:
    """A Zola page's or section's route: a section (`_index.md`) at its folders as written; a page at
    its folders and its slug (front matter `slug`, else its file name, or its folder's for an
    `index.md` with its assets, without a leading date, slugified); front matter `path` is the whole
    route; `x.fr.md` is under `/fr`."""
    kind = _zola_kind(mount)
    dirs, _, name = rel.rpartition("/")
    parts = [p for p in dirs.split("/") if p]
    stem = name[: -len(".md")] if name.lower().endswith(".md") else name.rsplit(".", 1)[0]
    lang = ""
    base, dot, tail = stem.rpartition(".")
    if dot and tail in kind.languages:
        stem, lang = base, tail
    if meta.get("path") and stem != "_index":
        return _join(str(meta["path"]))  # as written: Zola adds no language to it
    if stem == "_index":
        return _join(lang, mount.prefix, *parts)
    if stem == "index" and parts:
        stem = parts.pop()  # a page with its assets: the folder is the page
    dated = None if kind.keep_dates else _ZOLA_DATED.match(stem)
    slug = str(meta.get("slug") or "") or (dated.group("slug") if dated else stem)
    if kind.strategy == "on":
        slug = zola_path_slug(slug)
    elif kind.strategy == "safe":
        slug = re.sub(r'[<>:"/\\|?*]', "", slug.rstrip(" ."))
    return _join(lang, mount.prefix, *parts, slug)


def _join(*parts: str) -> str:
    return "/".join(p.strip("/") for p in parts if p and p.strip("/"))


# Next's (path-to-regexp's) `:name(a|b|c)`: a segment that is one of a few words. Another
# expression in the brackets is not read (a config gets no regular expression of its own through).
_CHOICE_PARAM = re.compile(r":([A-Za-z_]\w{0,50})\(([\w.~-]{1,100}(?:\|[\w.~-]{1,100}){0,50})\)")


def _segment(seg: str) -> str | tuple[str, frozenset[str]]:
    """A redirect source's segment as `_match` reads it: `:name(a|b)` parsed once into (name, words);
    one with another expression in its brackets a name no route holds."""
    if not (seg.startswith(":") and seg.endswith(")")):
        return seg
    choice = _CHOICE_PARAM.fullmatch(seg)
    return (choice.group(1), frozenset(choice.group(2).split("|"))) if choice else ("", frozenset())


def _match(pattern: list[str | tuple[str, frozenset[str]]], parts: list[str]) -> dict[str, str] | None:
    """Bindings of a redirect source (`:name` one segment, `:name(a|b)` one of those, `:name*` or `*`
    the rest) against a route."""
    bound: dict[str, str] = {}
    for i, seg in enumerate(pattern):
        if isinstance(seg, tuple):
            if i >= len(parts) or parts[i] not in seg[1]:
                return None
            bound[seg[0]] = parts[i]
            continue
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
    how: str = ""  # file, path, folder, route, redirect, static, anchor; "" when nothing was found


class _RefTables(NamedTuple):
    """A mount's pages as Hugo's `ref` finds them: by lower-cased content path (no page suffix, no
    trailing index), by name (a ref without a slash may name the one page of that name anywhere),
    and the content folders that hold pages (sections, with or without `_index.md`)."""

    paths: dict[str, str]
    names: dict[str, list[str]]
    folders: set[str]


@dataclass
class LinkResolver:
    """Resolves link targets with the site's rules against a route table and the files on disk."""

    routes: Routes
    exists: Callable[[str], bool]
    # Whether a folder exists: with no generator a link may name one, as GitHub lists a folder's files.
    is_folder: Callable[[str], bool] | None = None
    _relative: dict[tuple[str, str, bool], Located] = field(default_factory=dict)
    _aliases: dict[str, list[tuple[re.Pattern[str], str]]] = field(default_factory=dict)
    _patterns: dict[tuple[str, str], list[re.Pattern[str]]] = field(default_factory=dict)
    _absolute: dict[str, Located] = field(default_factory=dict)
    _html_pages: dict[str, str] | None = None
    _generated: frozenset[str] | None = None
    # Jekyll's posts by every name `post_url` may give them, built on the first one.
    _posts: dict[str, str] | None = None
    # The languages of a site's translations as files (Fumadocs' i18n), once known.
    _languages: frozenset[str] | None = None
    _has_pages: dict[str, bool] = field(default_factory=dict)
    # Hugo `ref` lookups per mount, built on the first ref.
    _refs: dict[Mount, _RefTables] = field(default_factory=dict)
    # The pages of a folder beside the manual with their route front matter (`beside_meta`): a
    # Docusaurus page there is found by the route its `id` or `slug` gives, as the index's pages are.
    beside: Callable[[str], BesidePages] | None = None
    _beside_routes: dict[Mount, tuple[dict[str, str], bool]] = field(default_factory=dict)
    # The patterns of the `.gitignore` in a folder of the manual (`udm.site.gitignore.FolderIgnores`):
    # a page a build writes where such a file ignores it (Tauri's `reference/.gitignore`) is unknown.
    ignore_lines: Callable[[str], tuple[str, ...]] | None = None
    # With a patch (the validator's side after it): what the `.gitignore` files ignored before it. A
    # file counts as the build's only where both sides say so: no patch hides a broken link behind a
    # `.gitignore` it writes, nor breaks one by dropping one unseen.
    ignored_before: Callable[[str], bool] | None = None

    @property
    def site(self) -> Site:
        """The site conventions in use."""
        return self.routes.site

    def folder_has_pages(self, folder: str) -> bool:
        """Whether a folder publishes something: an indexed page in it, or (beside the manual) it exists.
        Answered once per folder (a scan of the pages each time made many tag links quadratic)."""
        known = self._has_pages.get(folder)
        if known is None:
            prefix = f"{folder}/" if folder and folder != "." else ""
            known = any(p.startswith(prefix) for p in self.routes.pages) or (
                bool(folder) and self.is_folder is not None and self.is_folder(folder)
            )
            self._has_pages[folder] = known
        return known

    def locate(self, source: str, target: str, form: str = "") -> Located:
        """Where the link `target` written in `source` lands (before any anchor check); `form` is
        how it is written (`Link.form`): an image's source (`image`) or an embedded file (`embed`) a
        site may find otherwise than a link's, and a raw HTML `href` (`html`) is no Markdown link."""
        media = form == "image"
        text = target.strip()
        if self.site.excluded(text):
            return Located(None, None, external=True, how="excluded")
        if text in self.site.link_keywords:
            # A destination the site's link render hook handles itself (a glossary term's `g`).
            return Located(None, None, external=True, how="hook")
        if self.site.labels and text.startswith("{"):
            role = _ROLE_TARGET.fullmatch(text)
            if role is not None:
                return self._locate_role(source, role.group(1), role.group(2))
        if self.site.labels and text.startswith(MYST_SCHEMES):
            return self._locate_myst_scheme(source, text)
        if text.startswith("{{"):
            ref = parse_ref(text)
            if ref is not None:
                return self._locate_ref(source, ref)
        if self.site.autorefs and autoref_ids(text):
            # Any page's anchor: `resolve_links` looks the identifiers up across the site.
            return Located(None, None, how="autoref")
        if self.site.generator == "jekyll" and ("{{" in text or "{%" in text):
            liquid = liquid_target(text)
            if liquid is not None and liquid.kind != "url":
                return self._locate_liquid(liquid)
            if liquid is not None:
                text = liquid.value  # a path of the site, read as if written so
        if is_url(text) or "{{" in text or "{%" in text:
            # A URL, or a template placeholder (Hugo shortcodes, Jinja) only the generator can fill in.
            return Located(None, None, external=True)
        if self.site.docsify is not None:
            routed = self._locate_docsify(source, text, form)
            if routed is not None:
                return routed
        path, _, fragment = text.partition("#")
        if ":~:" in fragment:
            # A text fragment (`#:~:text=timeout`, `#setup:~:text=x`) is the browser's, no anchor: the
            # element id is what stands before it, if anything.
            fragment = fragment.partition(":~:")[0]
        # unquote() costs more than the rest of a lookup: most targets hold no escape.
        frag = (unquote(fragment) if "%" in fragment else fragment) or None
        if self.site.generator == "zola" and path.startswith("@/"):
            # Looked up as written (Zola decodes escapes only): a query is part of the path.
            return self._zola_internal(unquote(path[2:]), frag)
        if "?" in path:
            path = path.split("?", 1)[0]
        if "%" in path:
            path = unquote(path)
        if not path:
            if self.routes.is_unpublished(source):
                # A partial's or snippet's own anchor: the page that renders it holds it, among its own.
                return Located(None, None, external=True, how="included")
            return Located(source, frag, how="anchor")
        for prefix, folder in self.site.aliases:
            if path.startswith(prefix):
                # An import alias (Astro's `@assets/x.svg` through tsconfig `paths`): that file or nothing.
                candidate = posixpath.normpath(posixpath.join(folder, path[len(prefix) :]))
                # `@assets/../../../etc/passwd` leaves the alias's folder: no file of the site.
                inside = candidate.startswith(folder.rstrip("/") + "/")
                found = (
                    Located(candidate, None, how="alias")
                    if inside and self.exists(candidate)
                    else Located(None, None)
                )
                return found if frag is None else Located(found.file, frag, found.external, found.how)
        if self._docusaurus_markdown(path):
            # Docusaurus resolves a link to a Markdown file by the file, whatever folder it is in.
            page = self._docusaurus_file(source, path)
            if page is not None:
                return Located(page, frag, how="file")
        if path.startswith("/"):
            hit = self._absolute_hit(path)
            lang = self._language_of(source) if self._languages is None or self._languages else ""
            if lang and not path.startswith(f"/{lang}/"):
                # Fumadocs with i18n: a route without a language, clicked on a translated page, leads
                # to that language's page (its middleware keeps the reader's language) where there is one.
                translated = self._absolute_hit(f"/{lang}{path}")
                if translated.file is not None and translated.how != "redirect":
                    hit = translated
                elif (
                    self.site.generator == "rspress"
                    and not hit.external
                    and hit.how != "static"
                    and not self._names_language(path)
                ):
                    # Rspress prefixes the page's language itself (not a static file's): a page missing
                    # in that language is a dead link.
                    hit = translated
            if hit.file is None and not hit.external and self.site.generator == "nextra":
                hit = self._unrouted_file(source, path) or hit
            if (
                hit.file is None
                and not hit.external
                and (self.site.ignores or self.ignore_lines is not None)
                and self.site.publishes(source)
            ):
                # A page a build step writes where the repository ignores it (Rolldown's typedoc
                # reference in `docs/reference`, gitignored): not there to check, so not known broken.
                rel = (
                    path[len(self.site.base_path) :]
                    if self.site.base_path and path.startswith(self.site.base_path + "/")
                    else path
                )
                if self._ignored_route(posixpath.normpath(rel).strip("/")):
                    hit = Located(None, None, external=True, how="generated")
        elif self.routes.is_unpublished(source):
            hit = self._locate_included(source, path)
        else:
            # A file path lands in the same place from every page of a folder; a route-relative URL
            # depends on the page's own route, so that answer is kept per page.
            key = (source.rpartition("/")[0], path, media)
            if self.site.generator == "jekyll" and not path.lower().endswith(PAGE_SUFFIXES):
                key = (source, path, media)  # looked up as a URL from the page's own route first
            known = self._relative.get(key) or self._relative.get((source, path, media))
            if known is None:
                known = self._locate_relative(source, path, media)
                self._relative[key if known.how in ("file", "path", "folder") else (source, path, media)] = (
                    known
                )
            hit = known
        if hit.file is None and not hit.external and self.site.hook_pages:
            # Hugo's link render hook looks the destination up as a page, as a `ref` does.
            found = self._locate_ref(source, HugoRef(path))
            if found.file is not None:
                hit = found
        if (
            hit.file is None
            and not hit.external
            and self.site.labels
            and frag is None
            and _LABEL.fullmatch(path)
            and not path.lower().endswith(ROUTE_SUFFIXES)
        ):
            # MyST: `[](label)` that names no page is a reference to a target of any page.
            return Located(None, path, how="label")
        return hit if frag is None else Located(hit.file, frag, hit.external, hit.how)

    def _locate_docsify(self, source: str, text: str, form: str) -> Located | None:
        """Where a link of a Docsify page lands, as its router takes it (`udm.site.docsify`); None for a
        file of the manual outside the site's folder (read as any other manual's)."""
        top = self.site.docsify
        mount = self.site.mounts[0] if self.site.mounts else None
        at = _docsify_site_path(mount, source) if top is not None and mount is not None else None
        if top is None or mount is None or at is None:
            return None
        # The page's own site: the deepest folder with a Docsify page of its own, or the top one.
        folder, options = next(((f, o) for f, o in top.nested if at.startswith(f + "/")), ("", top))
        page = at[len(folder) + 1 :] if folder else at

        def manual(file: str) -> str:
            # `..` climbs through the site's folder as the browser resolves the fetch, to the top's.
            return _site_file(mount, _docsify_clean(f"/{folder}/{file}").lstrip("/"))

        raw_html = form in ("html", "jsx")
        written = text
        if raw_html and text.startswith("#/"):
            written = text[1:]  # a raw link to Docsify's own URL: `#/guide?id=x` is that route
        elif text.startswith("#"):
            # `router.toURL` takes any `#...` of a Markdown link as the open page's heading (`#/guide`
            # too: the id `/guide`), its id lower-cased (`stringifyQuery`).
            own = text[1:].partition(":~:")[0]
            # `replaceSlug` makes `#x` `?id=x`, read by `parseQuery` (`#foo=bar` is `foo`).
            ident = unquote(own) if raw_html else _docsify_id("id=" + own)
            frag = (ident if raw_html or ident is None else _ascii_lower(ident)) or None
            name = page.rpartition("/")[2]
            if options.cover and page == options.cover:
                # The cover is shown above the home page: its anchors are the home page's.
                home = manual(route_file("/", options.ext, options.homepage))
                return Located(home, frag, how="anchor") if self.exists(home) else Located(None, None, True)
            if name in (options.sidebar.rpartition("/")[2], options.navbar.rpartition("/")[2]):
                # Shown beside every page of its folder: an anchor of whichever page is open.
                return Located(None, None, external=True, how="included")
            return Located(source, frag, how="anchor")
        path, _, query = written.replace("#", "?id=", 1).partition("?")
        ident = _docsify_id(query)
        frag = ident if raw_html or ident is None else _ascii_lower(ident)
        path = unquote(path) if "%" in path else path
        if len(path) > MAX_ROUTE:
            return Located(None, None)
        if form in ("image", "embed"):
            # An image, and a file embedded by `':include'`, are read from the page's folder (even
            # one written from the root, `/x.png`: `getPath(base, getParentPath(page), href)`).
            file = manual(posixpath.join(posixpath.dirname(page), path.lstrip("/")))
            return Located(file, None, how="file") if self.exists(file) else Located(None, None)
        verbatim = form == "ignore" or self._docsify_matches(folder, "verbatim", options.verbatim, text)
        if raw_html or verbatim:
            # Left as written (raw HTML, `':ignore'`, `noCompileLinks`): the browser fetches that file,
            # from the site's page (index.html) for a relative path. Docsify still routes a `./x`
            # it leaves (`toURL(href).replace(/^#\//, '/')`): `./guide.md` is the server path `/guide`.
            written_path = path
            if verbatim and path.startswith("./"):
                written_path = path[:-3] if path.endswith(".md") else path
                if options.relative:
                    written_path = posixpath.join(posixpath.dirname(page), written_path)
                written_path = _docsify_clean("/" + written_path)
            file = manual(written_path.lstrip("/")) if written_path else ""
            if file and file != "." and self.exists(file):
                return Located(file, frag, how="file")
            if not raw_html:
                return Located(None, None)
        route = path[:-3] if path.endswith(".md") else path
        if options.relative and not route.startswith("/"):
            route = _docsify_clean(posixpath.join("/" + posixpath.dirname(page), route))
        route = "/" + route.lstrip("/")
        if len(route) > MAX_ROUTE:
            return Located(None, None)  # bounds what the options' patterns run on
        if self._docsify_matches(folder, "virtual", options.virtual, route):
            return Located(None, None, external=True, how="virtual")  # `routes`: content without a file
        route = self._docsify_alias(folder, options, route)
        if is_url(route):
            return Located(None, None, external=True, how="alias")  # another site's file
        file = route_file(route, options.ext, options.homepage)
        if SCHEME.match(file):
            return Located(None, None, external=True, how="alias")  # a home page of another site
        found = manual(file)
        if self.exists(found):
            return Located(found, frag, how="route")
        return Located(None, None)

    def _docsify_matches(self, folder: str, option: str, patterns: tuple[str, ...], value: str) -> bool:
        """Whether one of an option's patterns (`alias_pattern`'s safe forms) matches `value`."""
        if not patterns or len(value) > MAX_ROUTE:
            return False
        compiled = self._patterns.get((folder, option))
        if compiled is None:
            compiled = self._patterns[(folder, option)] = [p for p in map(alias_pattern, patterns) if p]
        return any(p.match(value) for p in compiled)

    def _docsify_alias(self, folder: str, options: Docsify, route: str) -> str:
        """A route after Docsify's `alias` (each pattern tried in order; a match rewrites the route,
        which is tried again, as `History.#getAlias` does, until none matches or it repeats)."""
        if not options.aliases:
            return route
        compiled = self._aliases.get(folder)
        if compiled is None:
            pairs = [(alias_pattern(p), r) for p, r in options.aliases]
            compiled = self._aliases[folder] = [(p, _js_replacement(r, p.groups)) for p, r in pairs if p]
        last = None
        for _ in range(_MAX_ALIAS_STEPS):
            hit = next((pr for pr in compiled if pr[0].match(route) and route != last), None)
            if hit is None:
                break
            last, route = route, hit[0].sub(hit[1], route, count=1)
            if len(route) > MAX_ROUTE:
                break
        return route

    def _locate_role(self, source: str, role: str, target: str) -> Located:
        """Where a MyST role lands: `ref`/`numref` name a target of any page; `doc` a page by its path
        without suffix (from the page's folder, or from the root with a leading `/`); `download` a
        file."""
        if role in ("ref", "numref"):
            return Located(None, target, how="label")
        joined = _from_page(source, target)
        if joined is None:
            return Located(None, None)
        names = [joined] if role == "download" else [joined + s for s in PAGE_SUFFIXES] + [joined]
        for name in names:
            hit = self._as_file(name, name)
            if hit is not None:
                return hit
        return Located(None, None)

    def _absolute_hit(self, path: str) -> Located:
        """Where a path from the site's root lands (remembered: every page may link to it)."""
        hit = self._absolute.get(path)
        if hit is None:
            hit = self._absolute[path] = self._locate_absolute(path)
        return hit

    def _names_language(self, path: str) -> bool:
        """Whether a route starts with one of the site's languages (its default one too)."""
        first = path.lstrip("/").split("/", 1)[0]
        for mount in self.site.mounts:
            default, others = mount_languages(mount.kind)
            if default and (first == default or first in others):
                return True
        return False

    def _unrouted_file(self, source: str, path: str) -> Located | None:
        """On a Nextra site, `/x.md` written in a file no folder of the site publishes (a README of
        the repository, read on GitHub): the repository's file of that path, if there is one."""
        if self.site.publishes(source):
            return None
        inner = posixpath.normpath(path.lstrip("/"))
        if outside_root(inner) or inner == ".":
            return None
        return self._repository_entry(posixpath.normpath(posixpath.join(self.site.repository, inner)))

    def _repository_entry(self, joined: str) -> Located | None:
        """A file or folder of the repository as GitHub shows it (`joined` normalised, from the manual
        root): git's own folder and what the repository ignores are not shown."""
        if ".git" in joined.split("/"):
            return None
        is_file = self.exists(joined)
        is_dir = not is_file and self.is_folder is not None and self.is_folder(joined)
        if (is_file or is_dir) and not self.site.build_output(joined, folder=is_dir):
            return Located(joined, None, how="repository")
        return None

    def _language_of(self, source: str) -> str:
        """The language of a translated page on a Fumadocs site with i18n (`x.cn.mdx` is `cn`), "" for
        a page in the default language or on another site."""
        if self._languages is None:
            self._languages = frozenset().union(*(_languages(m.kind) for m in self.site.mounts))
        if not self._languages:
            return ""
        found = _mount_of(self.site, source)
        if found is not None and found[0].kind.startswith("rspress-i18n"):
            # Rspress: the page's first folder, when it is one of the other languages' (the default
            # language's pages are served without theirs).
            first = f"{found[0].prefix}/{found[1]}".strip("/").split("/", 1)[0]
            return first if first in (self._languages or ()) else ""
        if found is not None and found[0].kind.startswith("nextra-app:"):
            # An app page: Nextra's middleware sends a route without a language to the reader's,
            # the default language's unless the reader chose another.
            return mount_languages(found[0].kind)[0]
        if found is not None and found[0].kind.startswith("nextra-i18n"):
            # Nextra's content folder: the page's first folder; Nextra's middleware sends a route
            # without a language to the reader's, which is the page's (its cookie) or the default.
            default, others = mount_languages(found[0].kind)
            first = f"{found[0].prefix}/{found[1]}".strip("/").split("/", 1)[0]
            return first if first in others or first == default else default
        stem = source.rpartition("/")[2].rpartition(".")[0]
        dotted = DOT_LANGUAGE.match(stem)
        return dotted.group(2) if dotted and dotted.group(2) in self._languages else ""

    def _locate_liquid(self, liquid: LiquidTarget) -> Located:
        """Where a Jekyll `{% link path %}` lands (a file from the site's folder: Jekyll's build fails
        on a missing one) or a `{% post_url name %}` (a post by its file's name, `2024-01-02-x`, with
        the folders around its `_posts` when the name has them)."""
        frag = unquote(liquid.fragment) if liquid.fragment else None
        if liquid.kind == "link":
            path = self._jekyll_source_file(liquid.value)
            # Only what Jekyll writes (a page, a document, a static file): a partial, an excluded file
            # or the config fails its build, as a missing file does.
            hit = self._as_file(path, path) if path is not None and not outside_root(path) else None
            if hit is None and path is not None and outside_root(path) and self.exists(path):
                hit = Located(path, None, how="file")  # the site's, above the manual
            if hit is None or hit.file is None:
                return Located(None, None, how=hit.how if hit else "")
            return Located(hit.file, frag, how="file")
        if self._posts is None:
            self._posts = _posts_by_name(self.routes.pages)
        page = self._posts.get(liquid.value.strip("/"))
        return Located(page, frag, how="file") if page is not None else Located(None, None)

    def _jekyll_source_file(self, written: str) -> str | None:
        """A path from a Jekyll site's folder as a path from the manual root (None: no such path)."""
        mount = self.routes.site_mount()
        path = posixpath.normpath(written.lstrip("/"))
        if mount is None or path.startswith("../") or path == "..":
            return None
        return _site_file(mount, path)

    def _locate_myst_scheme(self, source: str, text: str) -> Located:
        """MyST's own link schemes: `project:#label` names a target of any page (as `#label` does),
        `project:path#a` a page by its file's path (from the page's folder, or from the root with a
        leading `/`), `path:file` a file to download from the page's folder."""
        scheme, _, rest = text.partition(":")
        path, _, fragment = rest.partition("#")
        frag = unquote(fragment) or None
        if scheme == "project" and not path:
            return Located(None, frag, how="label") if frag else Located(None, None)
        path = unquote(path)
        joined = _from_page(source, path)
        if joined is None:
            return Located(None, None)
        hit = self._as_file(joined, path)
        if hit is None and self.build_output(joined):
            # A file the repository ignores is one the build writes (autodoc2's `apidocs/`): unknown.
            return Located(None, None, external=True, how="generated")
        if hit is None:
            return Located(None, None)
        return hit if frag is None or scheme == "path" else Located(hit.file, frag, hit.external, hit.how)

    def _locate_included(self, source: str, path: str) -> Located:
        """A relative link of a file the site builds no page from (a partial, a snippet): a file beside
        it is found (a partial's image is bundled from there); anything else resolves against the page
        that renders it, which is not known here."""
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(source), path))
        if (
            self.site.generator == "jekyll"
            and not any(p.startswith("_") for p in source.split("/")[:-1])
            and not outside_root(joined)
            and (joined in self.routes.pages or self.exists(joined))
        ):
            # A file Jekyll excludes (README.md, docs/ of the repository) is no partial: it is read on
            # GitHub, where its links name the repository's files.
            return Located(joined, None, how="repository")
        as_file = self._as_file(joined, path) if not outside_root(joined) else None
        if as_file is not None:
            return as_file
        if self._docusaurus_markdown(path):
            # Docusaurus resolves a Markdown file link from the partial's own folder (`_docusaurus_file`
            # found none), and serves no Markdown as it is: from any page that renders it, broken.
            return Located(None, None)
        return Located(None, None, external=True, how="included")

    def _as_file(self, joined: str, path: str) -> Located | None:
        """Where a relative link lands as a file of the manual (`joined`, normalised, inside the root;
        `path` as written): the file, or nothing for one the site builds no page from; None when there
        is no such file (a path written with a trailing slash names a folder)."""
        if joined in self.routes.pages or (not path.endswith("/") and self.exists(joined)):
            if self.routes.is_unpublished(joined):
                # A partial or an excluded file: the site serves no page (nor file) of it.
                return Located(None, None, how="unpublished")
            return Located(joined, None, how="file")
        return None

    def _docusaurus_markdown(self, path: str) -> bool:
        """Whether `path` names a Markdown file on a Docusaurus site (resolved by the file, never served)."""
        return self.site.site_folder is not None and path.lower().endswith(_DOCUSAURUS_PAGES)

    def _docusaurus_file(self, source: str, path: str) -> str | None:
        """The page a Docusaurus link to a Markdown file names, as its remark plugin finds it; None when
        it finds none. `./x.md` and `../x.md` are from the page's folder; `/x.md` from the content
        folder of the page's docs (or blog), then from the site's folder; a bare `x.md` from the page's
        folder, then those two; `@site/x.md` from the site's folder. The file must be a page of the
        same content (a doc links to a doc), whichever folder of it the link was found from."""
        own = _mount_of(self.site, source)
        folder = self.site.site_folder
        if own is None or folder is None:
            return None
        mount = own[0]
        here = posixpath.dirname(source)
        tries: list[str] = []
        if path.startswith("@site/"):
            tries.append(_from_site(path[len("@site/") :], folder))
        elif path.startswith("/"):
            tries += [
                posixpath.join(mount.folder, path.lstrip("/")),
                _from_site(path.lstrip("/"), folder),
            ]
        elif path.startswith(("./", "../")):
            tries.append(posixpath.join(here, path))
        else:
            tries += [
                posixpath.join(here, path),
                posixpath.join(mount.folder, path),
                _from_site(path, folder),
            ]
        for candidate in tries:
            rel = posixpath.normpath(candidate) if candidate else ""
            if (
                not rel
                or outside_root(rel)
                or rel not in self.routes.pages
                or self.routes.is_unpublished(rel)
            ):
                continue
            found = _mount_of(self.site, rel)
            if found is not None and found[0].kind == mount.kind:
                return rel
        return None

    def _locate_ref(self, source: str, ref: HugoRef) -> Located:
        """Where a Hugo `ref`/`relref` lands: a page by its content path, as Hugo's page lookup finds it.

        A path with a leading slash is from the content root of the page's language (or of `lang`;
        a language the site does not have finds nothing); another is tried relative to the page
        (a leaf bundle's `index.md` from the bundle's parent folder, but `../x.md` from its own),
        then, unless it starts with `.`, from the content root; a bare name (no slash) last, as the
        one page of that name anywhere (Hugo refuses an ambiguous one). A section is found by its
        folder even without an `_index.md` (Hugo makes its page). Hugo compares content paths
        without case. The page must exist: Hugo fails the build when a ref finds nothing
        (`refLinksErrorLevel`).
        """
        path, _, fragment = ref.path.strip().partition("#")
        frag = fragment or None
        if not path:
            return Located(source, frag, how="anchor")
        own = self._content_mount(source)
        langs = {m.lang for m in self.site.mounts}
        if ref.lang is not None and langs - {""} and ref.lang not in langs:
            return Located(None, None)
        want = ref.lang if ref.lang in langs else (own[0].lang if own else "")
        mounts = [m for m in self.site.mounts if m.lang in (want, "")] or list(self.site.mounts)
        keys = []
        if not path.startswith("/") and own is not None:
            folder = posixpath.dirname(own[1])
            if posixpath.basename(own[1]).lower().startswith("index.") and not (
                path.startswith("../") and posixpath.splitext(path)[1]
            ):
                folder = posixpath.dirname(folder)  # a leaf bundle's page sits in its parent's folder
            keys.append(posixpath.join(folder, path))
        if not path.startswith(".") or own is None:
            keys.append(path.lstrip("/"))
        for key in keys:
            normal = posixpath.normpath(key)
            if outside_root(normal):
                continue
            wanted = strip_page("" if normal == "." else normal).lower()
            for mount in mounts:
                tables = self._ref_tables(mount)
                hit = tables.paths.get(wanted)
                if hit is None:
                    hit = self._ref_on_disk(mount, wanted)
                if hit is None and wanted in tables.folders:
                    # A section without `_index.md`: Hugo makes its page (its anchors are not known).
                    hit = posixpath.join(mount.folder, wanted[len(mount.content) :].lstrip("/")) or "."
                if hit is not None:
                    return Located(hit, frag, how="ref")
        name = strip_page(path).lower()
        if name and "/" not in path:
            found = {p for mount in mounts for p in self._ref_tables(mount).names.get(name, ())}
            if len(found) == 1:
                return Located(found.pop(), frag, how="ref")
        return Located(None, None)

    def _ref_on_disk(self, mount: Mount, key: str) -> str | None:
        """A page of `key` (a content path) that the index does not hold (too large, not UTF-8) but is there."""
        if mount.content:
            if not (key == mount.content.lower() or key.startswith(mount.content.lower() + "/")):
                return None
            key = key[len(mount.content) :].lstrip("/")
        base = posixpath.join(mount.folder, key) if mount.folder else key
        if key:
            for name in _beside(base, indexes=("_index", "index")):
                if self.exists(name):
                    return name
        return None

    def _content_mount(self, source: str) -> tuple[Mount, str] | None:
        """The mount publishing `source` and the page's content path within the site."""
        found = _mount_of(self.site, source)
        if found is None:
            return None
        mount, rel = found
        return mount, posixpath.join(mount.content, rel) if mount.content else rel

    def _ref_tables(self, mount: Mount) -> _RefTables:
        """A mount's `_RefTables`, built once."""
        tables = self._refs.get(mount)
        if tables is None:
            paths: dict[str, str] = {}
            names: dict[str, list[str]] = {}
            prefix = mount.folder + "/" if mount.folder else ""
            for page in sorted(self.routes.pages):
                if not page.startswith(prefix):
                    continue
                key = strip_page(posixpath.join(mount.content, page[len(prefix) :])).lower()
                paths.setdefault(key, page)
                if key:
                    names.setdefault(key.rpartition("/")[2], []).append(page)
            folders: set[str] = set()
            for key in paths:
                while "/" in key:
                    key = key.rpartition("/")[0]
                    if key in folders:
                        break
                    folders.add(key)
            tables = self._refs[mount] = _RefTables(paths, names, folders)
        return tables

    def _locate_relative(self, source: str, path: str, media: bool = False) -> Located:
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(source), path))
        inside = not outside_root(joined)
        # Jekyll writes a link as it is: one that names no Markdown file is a URL relative to the
        # page's own (`../starting-a-project/` from /ar/building-community/ is /ar/starting-a-project/),
        # looked up before the file it would name from the page's folder.
        if self.site.generator == "nextra" and self.routes.page_route(source) is not None:
            # Nextra: a link to a Markdown file is a URL from the page's once its suffix is dropped
            # (a file beside an index page at `/docs` is not below its URL); an image is imported
            # from the page's folder, a file of the build.
            stripped = _NEXTRA_SUFFIX.sub("", path)
            hit = self._relative_url(source, stripped)
            if hit is not None:
                return hit
            as_file = self._as_file(joined, path) if inside and stripped == path else None
            return as_file or Located(None, None)
        if self.site.generator == "rspress" and self._out_of_mount(source, joined):
            # Rspress makes a route of every relative link: a file out of its root is a dead link.
            return Located(None, None)
        url_first = self.site.generator == "jekyll" and not path.lower().endswith(PAGE_SUFFIXES)
        if url_first:
            hit = self._relative_url(source, path)
            if hit is not None:
                return hit
        if inside:
            as_file = self._as_file(joined, path)
            if as_file is not None and self.site.generator == "rspress" and not media:
                # Rspress makes a route of a relative link, not of an image: a file beside the page
                # that is no page is a dead link (its build says so), though an image of it is bundled.
                as_file = as_file if as_file.file in self.routes.pages else None
            if as_file is not None:
                return as_file
            found = self.routes.by_path(strip_page("" if joined == "." else joined))
            if found is not None:
                return Located(found, None, how="path")
            if self.site.generator == "none" and self.is_folder is not None and self.is_folder(joined):
                return Located(joined, None, how="folder")
        if not url_first:
            hit = self._relative_url(source, path)
            if hit is not None:
                return hit
        # A manual read on GitHub: a file (or folder) of its repository above the manual is shown there;
        # git's own folder and the files the repository ignores are not.
        if not inside and self.site.in_repository(joined):
            shown = self._repository_entry(joined)
            if shown is not None:
                return shown
        if inside and self.site.generator != "none" and self.build_output(joined):
            # A file the repository ignores is one its build writes (uv's and ruff's generated reference
            # pages): not there to check, so not known to be broken. GitHub shows no such file.
            return Located(None, None, external=True, how="generated")
        if self.site.generator == "mdbook" and not any(
            (joined == m.folder or joined.startswith(m.folder + "/")) if m.folder else inside
            for m in self.site.mounts
        ):
            # Above the book: another book on the same host (the Rust books' `../std/...html`), not
            # a file here to check.
            return Located(None, None, external=True)
        # Out of the manual (and not a page of its site): broken for its readers.
        return Located(None, None)

    def _relative_url(self, source: str, path: str) -> Located | None:
        """In a published site, `path` as a URL relative to the page's own route (one level deeper
        with directory URLs: MkDocs' `../img/x.png` from a page); None when it lands on nothing."""
        route = self.routes.page_route(source)
        if route is None or self.site.generator == "none":
            return None
        if self.site.generator == "nextra":
            return self._next_relative(route, path)
        base = posixpath.dirname("/" + route) if not _is_index(source) else "/" + route
        if route in self.routes.slashed:
            base = "/" + route  # Jekyll's `/:path/`: the page's URL is a folder's
        # The page's URL holds the base path: `../../docs/x` from /docs/api/text climbs through it.
        site_base = self.site.base_path
        for start in dict.fromkeys([base, "/" + route]):
            url = posixpath.normpath(posixpath.join(site_base + start, path))
            if url.startswith("//") or url == "/..":
                continue
            hit = self._absolute.get(url)
            if hit is None:
                hit = self._absolute[url] = self._locate_absolute(url)
            if hit.file is not None or hit.external:
                return hit
        return None

    def _below_generated(self, key: str) -> bool:
        """Whether a route lies below one of the site's generated prefixes (looked up per segment)."""
        if self._generated is None:
            self._generated = frozenset(self.site.generated)
        if "" in self._generated:
            return True
        parts = key.split("/")
        # `x/*`: exactly one segment below x (a `[slug]` page); `x`: anything below it (a catch-all).
        one = "/".join([*parts[:-1], "*"])
        return one in self._generated or any(
            "/".join(parts[:i]) in self._generated for i in range(1, len(parts) + 1)
        )

    def _next_relative(self, route: str, path: str) -> Located | None:
        """A relative link on a Next page: from its URL (base path and all), which ends in no `/` but
        with `trailingSlash`, an index page's too; a URL leaving the base path is no page here."""
        page = (self.site.base_path + "/" + route).rstrip("/") or "/"
        start = page + "/" if self.site.trailing_slash else posixpath.dirname(page)
        url = posixpath.normpath(posixpath.join(start, path))
        base = self.site.base_path
        if url.startswith("//") or url == "/..":
            return None
        if base:
            if not (url == base or url.startswith(base + "/")):
                return None
            url = url[len(base) :] or "/"
        hit = self._absolute_hit(url)
        return hit if hit.file is not None or hit.external else None

    def _out_of_mount(self, source: str, joined: str) -> bool:
        """Whether `joined` (normalised, from the manual root) lies outside the content folder of the
        mount publishing `source` (the manual may be that folder, a folder of it, or above it)."""
        found = _mount_of(self.site, source)
        if found is None:
            return False
        mount = found[0]
        if mount.folder:
            if not joined.startswith(mount.folder + "/"):
                return True
            joined = joined[len(mount.folder) + 1 :]
        return outside_root(posixpath.normpath(posixpath.join(mount.prefix, joined)))

    def _locate_absolute(self, path: str) -> Located:
        base = self.site.base_path
        # Next's and Rspress' links are written without the base path (`next/link` adds it to every
        # `/x`; Rspress checks the route before it adds the base).
        # VuePress makes a router link of one to a page (`.md`, `.html`), and the router adds the base.
        router = self.site.generator == "vuepress" and path.lower().endswith((".md", ".html"))
        if (
            base
            and (path == base or path.startswith(base + "/"))
            and self.site.generator not in ("nextra", "rspress")
            and not router
        ):
            path = path[len(base) :] or "/"
        path = posixpath.normpath(path)
        hit = self._route(path)
        if hit.file is not None or hit.external:
            return hit
        rel = path.lstrip("/")
        for folder in self.site.static:
            candidate = posixpath.join(folder, rel) if folder else rel
            if self.exists(candidate) and not self.routes.is_unpublished(candidate):
                return Located(candidate, None, how="static")
        unread = False
        for mount in self.site.mounts:
            if mount.prefix and not (rel == mount.prefix or rel.startswith(mount.prefix + "/")):
                continue
            inner = rel[len(mount.prefix) :].lstrip("/")
            candidate = posixpath.join(mount.folder, inner) if mount.folder else inner
            if mount.kind.startswith("nextra"):
                # Next serves no source file of app/, content/ or pages/; the Pages Router's pages
                # may be components (`pages/showcase.tsx` is /showcase).
                if mount.kind.startswith("nextra-pages") and (candidate or mount.folder):
                    for name in _beside(candidate or mount.folder, True, ("index",)):
                        if name not in self.routes.pages and self.exists(name):
                            return Located(name, None, how="outside")
                continue
            if self.site.generator in ("vuepress", "vitepress") and any(
                p.startswith(".") for p in candidate.split("/")
            ):
                continue  # `.vuepress/`, `.vitepress/`: the site's own code, not served
            if self.site.generator == "rspress" and candidate not in self.routes.pages:
                continue  # Rspress serves its pages and `public/`, no other file of its root
            # Docusaurus serves no Markdown file as it is: a link to one is a page's or nothing.
            raw_page = self._docusaurus_markdown(candidate)
            if (
                candidate
                and not raw_page
                and (candidate in self.routes.pages or self.exists(candidate))
                and not self.routes.is_unpublished(candidate)
            ):
                return Located(candidate, None, how="static")
            if mount.kind == "blog" and _BLOG_PAGES.match(inner) and self.folder_has_pages(mount.folder):
                # The pages Docusaurus makes for a blog: its list, tags, archive, authors, pagination.
                return Located(mount.folder or ".", None, how="generated")
            routed = self._routed_beside(mount)
            if routed is not None:
                # A Docusaurus folder beside the manual, read: its pages are found by their routes
                # only (an `id` or `slug` moves a page from its path).
                found = routed[0].get(self.routes.route_key(rel))
                if found is not None:
                    return Located(found, None, how="outside")
                if not routed[1]:
                    # The folder was too large to read whole: the page may be in what was not read,
                    # unless another mount has it.
                    unread = True
                continue
            if mount.kind == "blog":
                # A post the index does not hold (a file it skipped), at the route its path's date
                # makes (`2026-04-02-name.md`, `2026/04/02/name/index.md`: /blog/2026/04/02/name).
                for post in _blog_files(inner):
                    name = posixpath.join(mount.folder, post)
                    if (
                        name not in self.routes.pages
                        and self.exists(name)
                        and not self.routes.is_unpublished(name)
                    ):
                        return Located(name, None, how="outside")
            if candidate or mount.folder:
                # A page the index does not hold (beside the manual, or a file it skipped): it only has
                # to exist; its route is its path (no front matter is read). A site's own pages may
                # be components or endpoints (`src/pages/help.js`, Astro's `feed.xml.ts`).
                for name in _beside(candidate or mount.folder, mount.kind == "pages"):
                    # An indexed page is found by its route only (its slug may have moved it).
                    if (
                        name not in self.routes.pages
                        and self.exists(name)
                        and not self.routes.is_unpublished(name)
                    ):
                        return Located(name, None, how="outside")
        if unread:
            return Located(None, None, external=True, how="unread")
        if self.site.generator == "hugo":
            return self._hugo_generated(rel)
        if self.site.generator == "zola":
            return self._zola_generated(rel)
        if self.site.html_pages:
            if self._html_pages is None:
                self._html_pages = dict(reversed(self.site.html_pages))  # the first of a route wins
            page = self._html_pages.get(strip_page(rel))
            if page is not None:
                return Located(page, None, how="static")
        if self.site.generated and self._below_generated(rel.strip("/")):
            # Below a Next page with a parameter (`app/api/[name]/page.tsx`): a page the build makes.
            return Located(None, None, external=True, how="generated")
        return Located(None, None)

    def _ignored_route(self, rel: str) -> bool:
        """Whether a route lands in a folder of the site the repository's `.gitignore` leaves out."""
        if not rel or self.site.generator == "none":
            return False
        for mount in self.site.mounts:
            if mount.prefix and not (rel == mount.prefix or rel.startswith(mount.prefix + "/")):
                continue
            inner = rel[len(mount.prefix) :].lstrip("/")
            candidate = posixpath.normpath(posixpath.join(mount.folder, inner) if mount.folder else inner)
            # Where the generator builds no page (VitePress' `node_modules`, `dist`, `srcExclude`), a
            # file there would be no page either: the link is broken, whatever the build writes.
            if self.site.unpublished_page(candidate + ".md"):
                continue
            if not inner or outside_root(candidate):
                continue
            # The route's folder or path, or a page file it may be served from (Tauri's
            # `reference/.gitignore` lists `config.md`, which `/reference/config/` is built from).
            if any(self.build_output(name) for name in [candidate, *_beside(candidate, False)]):
                return True
        return False

    def build_output(self, rel: str) -> bool:
        """Whether a `.gitignore` of the repository, or one in a folder of the manual leading to it,
        ignores `rel` (normalised, inside the manual): a file the build writes."""
        # A deeper file's `!` may take back what the repository's ignores: all are read together.
        if not self.site.build_output(rel, nested=self._nested_ignores(rel)):
            return False
        return self.ignored_before is None or self.ignored_before(rel)

    def _nested_ignores(self, rel: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """The `.gitignore` files of the folders of the manual that lead to `rel` and to the pages it
        may name (`rel` itself as a folder too), shallow ones first; () without a reader."""
        if self.ignore_lines is None:
            return ()
        parts = rel.split("/")
        folders = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
        return tuple((f, lines) for f in folders if (lines := self.ignore_lines(f)))

    def _hugo_generated(self, rel: str) -> Located:
        """A page Hugo makes without a content file: a language's home page, a top-level section's list,
        a taxonomy's list and term pages, the RSS feeds (`index.xml`) and `sitemap.xml`."""
        route = rel.strip("/")
        for mount in self.site.mounts:
            prefix = mount.prefix
            if prefix and not (route.lower() == prefix or route.lower().startswith(prefix + "/")):
                continue
            inner = route[len(prefix) :].strip("/")
            if inner == "index.xml" or inner.endswith("/index.xml"):
                inner = inner[: -len("index.xml")].strip("/")
            elif inner in ("sitemap.xml", "robots.txt", "404.html"):
                inner = ""
            if not inner or inner.split("/", 1)[0].lower() in self.site.taxonomies:
                return Located(mount.folder or ".", None, how="generated")
            folder = posixpath.join(mount.folder, inner) if mount.folder else inner
            if "/" not in inner and self.folder_has_pages(folder):
                return Located(folder, None, how="generated")
        return Located(None, None)

    def _zola_mount(self) -> Mount | None:
        """The mount of a Zola site's content folder (None where it does not overlap the manual)."""
        return next((m for m in self.site.mounts if m.kind.startswith("zola")), None)

    def _zola_generated(self, rel: str) -> Located:
        """A page Zola makes without a content file: a taxonomy's list and term pages (in a language
        too), a section's feed, the sitemap, robots.txt and 404 page."""
        parts = [p for p in rel.strip("/").split("/") if p]
        mount = self._zola_mount()
        if parts and mount is not None and parts[0] in _zola_kind(mount).languages:
            parts = parts[1:]
        if parts and parts[-1] in ("atom.xml", "rss.xml", "sitemap.xml", "robots.txt", "404.html"):
            parts = parts[:-1] if parts[-1] in ("atom.xml", "rss.xml") else []
            folder = posixpath.join(mount.folder, *parts) if mount is not None else ""
            if not parts or (mount is not None and self.folder_has_pages(folder)):
                return Located(folder or ".", None, how="generated")  # the site's or a section's feed
        if parts and parts[0] in self.site.taxonomies and len(parts) <= 3:
            return Located(".", None, how="generated")
        return Located(None, None)

    def _zola_internal(self, rel: str, frag: str | None) -> Located:
        """Zola's internal link (`@/blog/post.md#x`): the page or section file at that path of the
        content folder, which must be a Markdown file there (Zola's build fails on any other)."""
        mount = self._zola_mount()
        wanted = rel
        name = wanted.rpartition("/")[2]
        stem = name[: -len(".md")]
        if (
            mount is None
            or not name.endswith(".md")  # Zola loads `.md` files only, in that case
            or posixpath.normpath(wanted) != wanted  # `./`, `..`, `//`: no path of its table
            or wanted.startswith("/")
            or any(part.startswith(".") for part in wanted.split("/"))  # hidden: never loaded
            or ("." in stem and stem.rpartition(".")[2] not in _zola_kind(mount).languages)
        ):
            return Located(None, None)
        # The manual may be a folder of the content (`content/docs`): the link climbs to the content.
        content = "/".join([".."] * len(mount.prefix.split("/"))) if mount.prefix else mount.folder
        candidate = posixpath.normpath(posixpath.join(content, wanted)) if content else wanted
        if frag is not None and frag.lower() == "top":
            frag = None  # Zola's special anchor, in any case: the top of the page
        if not self.routes.is_unpublished(candidate) and (
            candidate in self.routes.pages or self.exists(candidate)
        ):
            return Located(candidate, frag, how="file")
        return Located(None, None)

    def _routed_beside(self, mount: Mount) -> tuple[dict[str, str], bool] | None:
        """Route key -> file of a Docusaurus docs or blog folder beside the manual, read once, and
        whether all of it was read; None for another mount, or with no reader."""
        if (
            self.beside is None
            or self.site.generator != "docusaurus"
            or mount.kind not in ("docs", "blog")
            or not outside_root(mount.folder)
        ):
            return None
        table = self._beside_routes.get(mount)
        if table is None:
            read = self.beside(mount.folder)
            table = self._beside_routes[mount] = (self.routes.beside_routes(mount, read.pages), read.complete)
        return table

    def _route(self, route: str, hops: int = 0) -> Located:
        found = self.routes.by_route(route)
        if found is not None:
            return Located(found, None, how="route")
        dest = self.routes.redirect(route)
        if dest is None or hops >= _MAX_REDIRECT_HOPS:
            return Located(None, None)
        if is_url(dest):
            return Located(None, None, external=True, how="redirect")
        dest = dest.partition("#")[0].split("?", 1)[0]
        hit = self._route(posixpath.normpath(posixpath.join(posixpath.dirname(route), dest)), hops + 1)
        return Located(hit.file, None, hit.external, "redirect" if hit.file or hit.external else "")


def _languages(kind: str) -> frozenset[str]:
    """The languages a mount's pages may be in other than one served without a prefix: Fumadocs'
    and Nextra's Pages Router's other languages; every language of Nextra's content folder."""
    default, others = mount_languages(kind)
    return others | {default} if kind.startswith("nextra-i18n") and default else others


# Nextra drops a Markdown suffix from a link (`./x.mdx#a` is `./x#a`) before the browser reads it.
_NEXTRA_SUFFIX = re.compile(r"\.mdx?$")


_MAX_ALIAS_STEPS = 8


def _docsify_site_path(mount: Mount, source: str) -> str | None:
    """A manual file's path from a Docsify site's folder, None when it lies outside it."""
    if mount.prefix:
        return posixpath.join(mount.prefix, source)
    if not mount.folder:
        return source
    return source[len(mount.folder) + 1 :] if source.startswith(mount.folder + "/") else None


def _site_file(mount: Mount, file: str) -> str:
    """A path from the folder a mount publishes (Jekyll's or Docsify's site) as a path from the manual
    root; when the manual is a folder of the site's (a prefix), a file elsewhere lies above it."""
    if mount.prefix:
        if file == mount.prefix or file.startswith(mount.prefix + "/"):
            return file[len(mount.prefix) :].lstrip("/") or "."
        return posixpath.normpath(posixpath.join(*[".."] * len(mount.prefix.split("/")), file))
    return posixpath.normpath(posixpath.join(mount.folder, file)) if mount.folder else file


def _docsify_id(query: str) -> str | None:
    """The `id` of a route's query as Docsify's `parseQuery` reads it: `+` a blank, each parameter
    split at every `=` (`id=A=B` is `A`), its value decoded; None without one. The last `id` wins."""
    found = None
    for param in query.replace("+", " ").split("&"):
        parts = param.split("=")
        if parts[0] == "id":
            found = unquote(parts[1]) if len(parts) > 1 and parts[1] else None
    return found


def _ascii_lower(text: str) -> str:
    """ASCII capitals lowered, others kept: Docsify lower-cases a link's query after percent-encoding
    it, so `%C3%9C` (Ü) still decodes to Ü."""
    return text.translate(_ASCII_LOWER) if not text.islower() else text


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _docsify_clean(path: str) -> str:
    """A route with `.` and `..` segments resolved, never above the site root, its trailing `/`
    kept (Docsify's `resolvePath` and `cleanPath`)."""
    parts: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if parts:
                parts.pop()
        elif segment not in (".", ""):
            parts.append(segment)
    tail = "/" if path.endswith(("/", "/.", "/..")) and parts else ""
    return "/" + "/".join(parts) + tail


def _js_replacement(value: str, groups: int) -> str:
    """A JavaScript `String.replace` replacement as Python's `re.sub` takes it: `$$`, `$&`, `$n` and
    `$nn` (two digits when that group exists, else one and a digit), a `$n` of a group the pattern lacks
    as written; `` $` `` and `$'` (before and after the match) are empty, the patterns being anchored."""

    def one(m: re.Match[str]) -> str:
        token = m.group(0)
        if token == "$$":
            return "$"
        if token == "$&":
            return "\\g<0>"
        if token in ("$`", "$'"):
            return ""
        if token == "\\":
            return "\\\\"
        digits = token[1:]
        if len(digits) == 2 and 0 < int(digits) <= groups:
            return f"\\g<{int(digits)}>"
        if 0 < int(digits[0]) <= groups:
            return f"\\g<{digits[0]}>" + digits[1:]
        return token

    return re.sub(r"\$\$|\$&|\$`|\$'|\$\d{1,2}|\\", one, value)


def _from_page(source: str, path: str) -> str | None:
    """A path MyST writes from the page `source`'s folder (from the root with a leading `/`), made a
    path from the manual root; None when it climbs out of the root."""
    base = "" if path.startswith("/") else posixpath.dirname(source)
    joined = posixpath.normpath(posixpath.join(base, path.lstrip("/")))
    return None if outside_root(joined) else joined


def _posts_by_name(pages: Iterable[str]) -> dict[str, str]:
    """Jekyll's posts (files in a `_posts` folder) by the names a `post_url` may give: the file's name
    without its suffix (`2024-01-02-x`), and with the folders around `_posts` before it (`blog/...`,
    `_posts/sub/...` as `sub/...`); the first page in path order wins a name."""
    found: dict[str, str] = {}
    for page in sorted(pages):
        parts = page.split("/")
        if "_posts" not in parts[:-1]:
            continue
        steps = [p for p in parts if p != "_posts"]
        steps[-1] = steps[-1].rsplit(".", 1)[0]
        for k in range(1, len(steps) + 1):
            found.setdefault("/".join(steps[-k:]), page)
    return found


def _beside(path: str, code: bool = False, indexes: tuple[str, ...] = ("index", "README")) -> list[str]:
    """The files a route under a folder outside the manual may be served from (`code`: also a
    component or endpoint, as in a site's `src/pages`); `indexes`: a folder's own page names."""
    base = path.rstrip("/")
    suffixes = (*PAGE_SUFFIXES, *_CODE_PAGE_SUFFIXES) if code else PAGE_SUFFIXES
    names = [base + s for s in suffixes]
    names += [f"{base}/{n}{s}" for n in indexes for s in suffixes]
    return names


def _is_index(path: str) -> bool:
    name = posixpath.basename(path).lower()
    return any(name == n + s for n in INDEX_NAMES for s in PAGE_SUFFIXES)


# A MyST role's link as the parse records it: `{ref}label`, `{doc}path` (udm.markdown.scanner).
_ROLE_TARGET = re.compile(r"\{(ref|numref|doc|download)\}(.+)", re.S)
# A MyST target's name as a reference may write it (`syntax/colon_fence`, `eq:book`).
_LABEL = re.compile(r"[\w.:/ -]{1,200}")


def autoref_ids(target: str) -> tuple[str, ...]:
    """The identifiers a mkdocs-autorefs cross-reference is looked up by, in order, from its target as
    the parse records it (`[identifier]`, or `[title][]`: the title, then its slug; a title that is one
    code span, its code only); () for a target of another shape."""
    if not (target.startswith("[") and target.endswith("]")) or len(target) < 3:
        return ()
    if not target.endswith("][]"):
        label = target[1:-1]
        return (label,) if "[" not in label and "]" not in label else ()
    title = target[1:-3]
    if not title:
        return ()
    if len(title) > 2 and title[0] == "`" and title[-1] == "`" and "`" not in title[1:-1]:
        return (title[1:-1],)
    slug = python_markdown_slug(title)
    return (title, slug) if slug and slug != title else (title,)


def no_holder(ident: str) -> str:
    """Why a cross-reference is broken (lint, `udm links` and the patch validator say it alike)."""
    return f"no heading or anchor #{ident} on the site"


def display_target(source: str, target: str) -> str:
    """The file a broken link names, as the manual sees it (for messages); a Hugo ref, the page it
    names; a mkdocs-autorefs cross-reference, its identifier; Jekyll's Liquid, what it names."""
    ref = parse_ref(target) if target.startswith("{{") else None
    if ref is not None:
        return ref.path.partition("#")[0].strip()
    ids = autoref_ids(target) if target.startswith("[") else ()
    if ids:
        return ids[0]
    liquid = liquid_target(target) if target.startswith("{") else None
    if liquid is not None:
        # Jekyll: the site path a URL filter makes, the file a `link` names, the post a `post_url` does.
        return liquid.value.partition("#")[0] if liquid.kind == "url" else liquid.value
    path = unquote(target.partition("#")[0].split("?", 1)[0])
    return (
        path if path.startswith("/") else posixpath.normpath(posixpath.join(posixpath.dirname(source), path))
    )


Row = tuple[Any, str, str, str]  # (row key, source file, target, how it is written: Link.form)
Verdict = tuple[Any, str | None, str | None, bool | None]  # (row key, target file, fragment, resolved)


def resolve_links(
    resolver: LinkResolver,
    rows: Iterable[Row],
    anchors_in: Callable[[set[tuple[str, str]]], set[tuple[str, str]]],
    text_of: Callable[[str], str | None] | None = None,
    pages_with: Callable[[set[str]], dict[str, set[str]]] | None = None,
) -> list[Verdict]:
    """Every row's target file, fragment and verdict: True resolves, False is broken, None external
    (or an anchor of a page whose heading ids cannot all be known: see `page_anchors`).

    A link resolves when it lands on a file and, if it lands on a page with a fragment, the fragment
    is one of that page's heading anchors or an anchor the page names itself (`explicit_anchors`).
    `anchors_in(pairs)` answers which (page, heading anchor) pairs exist; it is called once, so
    callers can answer in one query. `text_of(page)` gives a page's text for the pairs left over.
    `pages_with(identifiers)`: the pages that may hold each as an anchor (a heading's, or written in
    their text), for mkdocs-autorefs cross-references; without it they are unknown.
    """
    rows = list(rows)
    located = [(key, resolver.locate(source, target, form)) for key, source, target, form in rows]
    pages = resolver.routes.pages
    # A Markdown page beside the manual (`../docs/x.md`, found on disk) is read for its anchors as
    # an indexed page is, when pages can be read; unread, an anchor there is unknown.
    beside = {
        loc.file
        for _, loc in located
        if loc.file is not None
        and loc.fragment is not None
        and outside_root(loc.file)
        and loc.file.lower().endswith(PAGE_SUFFIXES)
    }
    if text_of is None:
        beside = set()
    wanted = {
        (loc.file, loc.fragment)
        for _, loc in located
        if loc.file is not None and loc.fragment is not None and (loc.file in pages or loc.file in beside)
    }
    # mkdocs-autorefs: each cross-reference's identifiers and the pages that may hold them.
    crossing = {
        key: autoref_ids(target)
        for (key, _, target, _), (_, loc) in zip(rows, located, strict=True)
        if loc.how == "autoref"
    }
    # MyST: a target is the whole site's; `[](label)`, and `[](#label)` that is no anchor of its page.
    labelled = (
        {
            key: (loc.fragment,)
            for (key, _, _, _), (_, loc) in zip(rows, located, strict=True)
            if loc.fragment is not None
            and (loc.how == "label" or (loc.how == "anchor" and _LABEL.fullmatch(loc.fragment)))
        }
        if resolver.site.labels
        else {}
    )
    crossing.update(labelled)
    holders: dict[str, set[str]] = {}
    if crossing and pages_with is not None:
        holders = pages_with({i for ids in crossing.values() for i in ids})
        wanted |= {
            (page, i)
            for ids in crossing.values()
            for i in ids
            for page in holders.get(i, ())
            if page in pages
        }
    # A manual read on GitHub: its page script finds `#Setup` for `## Setup`, whatever the case
    # (markdownlint's MD051 `ignore_case`); a generator's site leaves it to the browser, which does not.
    fold = resolver.site.generator == "none"
    if fold:
        wanted |= {(page, anchor.lower()) for page, anchor in wanted if anchor != anchor.lower()}
    # Where the site makes every heading id its own way, the index's GitHub forms are no evidence:
    # each page asked about is read and its anchors are the site's alone.
    own_ids = text_of is not None and (
        own_heading_rule(resolver.site) is not None or resolver.site.heading_ids == "custom"
    )
    present = anchors_in(wanted) if wanted and not own_ids else set()
    # Pages with a heading whose id only the site's templates know: a missing anchor there is unknown.
    unknown: set[str] = set()
    partly: dict[str, re.Pattern[str]] = {}  # pages where the anchors a pattern finds are unknown
    if text_of is not None:
        texts: dict[str, str | None] = {}
        nested: dict[str, set[str]] = {}
        named: dict[str, set[str]] = {}  # each page's own ids, read once however many are asked for
        for page, anchor in sorted(wanted - present):
            if page not in texts:
                texts[page] = text_of(page)
            text = texts[page]
            if text is None:
                if page in beside:
                    unknown.add(page)
                continue
            if page not in named:
                named[page] = page_named(resolver.site, text)
                if fold:
                    named[page] |= {a.lower() for a in named[page]}
            if anchor in named[page]:
                present.add((page, anchor))
                continue
            if page not in nested:
                # Headings in block quotes and list items start no section but have ids; VitePress
                # makes its anchors its own way.
                nested[page], blind = page_anchors(resolver.site, page, text, sections=page in beside)
                if isinstance(blind, re.Pattern):
                    partly[page] = blind
                elif blind:
                    unknown.add(page)
            if anchor in nested[page]:
                present.add((page, anchor))
    out: list[Verdict] = []
    for key, loc in located:
        if loc.how == "autoref" or loc.how == "label":
            mode = _label_mode(resolver.site) if loc.how == "label" else resolver.site.autorefs
            out.append(_cross_reference(key, crossing[key], holders, present, mode, pages_with))
        elif key in labelled and loc.file is not None and (loc.file, loc.fragment) not in present:
            # Not an anchor of its own page: a target of another, or broken.
            mode = _label_mode(resolver.site)
            out.append(_cross_reference(key, labelled[key], holders, present, mode, pages_with))
        elif loc.external:
            out.append((key, None, None, True if loc.how == "redirect" else None))
        elif loc.file is None:
            out.append((key, None, loc.fragment, False))
        elif (
            loc.fragment is None
            or (loc.file not in pages and loc.file not in beside)
            or (loc.file, loc.fragment) in present
            or (fold and (loc.file, loc.fragment.lower()) in present)
        ):
            out.append((key, loc.file, loc.fragment, True))
        else:
            hidden = loc.file in unknown or (loc.file in partly and partly[loc.file].search(loc.fragment))
            out.append((key, loc.file, loc.fragment, None if hidden else False))
    return out


def is_reference(target: str, fragment: str | None) -> bool:
    """Whether a link whose verdict names `fragment` is a MyST reference to a target (`#label`,
    `label`, `{ref}label`), not a path: why it is broken is that no page names the target."""
    return bool(fragment) and target in (
        fragment,
        f"#{fragment}",
        f"project:#{fragment}",
        f"{{ref}}{fragment}",
        f"{{numref}}{fragment}",
    )


def _label_mode(site: Site) -> str:
    """How a MyST reference no page's target holds counts: broken ("headings") where only the site's
    targets can be meant, unknown ("objects") where an API object or another project's may be."""
    return "objects" if site.labels == "objects" else "headings"


def _cross_reference(
    key: Any,
    ids: tuple[str, ...],
    holders: dict[str, set[str]],
    present: set[tuple[str, str]],
    mode: str,
    pages_with: Callable[[set[str]], dict[str, set[str]]] | None,
) -> Verdict:
    """A mkdocs-autorefs cross-reference's verdict: the first identifier that is an anchor of some page
    (of several pages, the first by path: autorefs picks one of them); else broken where only the
    site's anchors can be meant (autorefs alone), unknown where mkdocstrings may know it (an API
    object, another site's inventory) or where nothing could look."""
    for ident in ids:
        found = sorted(page for page in holders.get(ident, ()) if (page, ident) in present)
        if found:
            return (key, found[0], ident, True)
    return (key, None, ids[0], False if mode == "headings" and pages_with is not None else None)
