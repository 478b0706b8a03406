"""The site model: what a generator's config says about routes (`Site`, `Mount`) and the helpers the
config readers share (`udm.site.detect` for YAML/TOML/JSON configs, `udm.site.jsconfig` for JavaScript ones).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import hashlib
import itertools
import json
import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from udm.config_types import GENERATORS
from udm.site.gitignore import Nested, ignored, ignored_folder, last_match_ignored

__all__ = [
    "GENERATORS",
    "INDEX_NAMES",
    "LIQUID_SITES",
    "NOT_PUBLISHED",
    "NUMBER_PREFIX",
    "PAGE_SUFFIXES",
    "ROUTE_SUFFIXES",
    "SCHEME",
    "Docsify",
    "Mount",
    "Site",
    "UnpublishedRule",
    "component_pages",
    "excluded",
    "glob_lines",
    "is_url",
    "path_of_url",
    "read_head",
    "static_folders",
    "under",
    "unpublished_rule",
    "within",
]

# Why a link to a file the site builds no page from is broken (lint, `udm links`, the validator).
NOT_PUBLISHED = (
    "is not published: the site builds no page from it (a partial, a snippet, a draft or an excluded file)"
)

# The sites whose `{% %}` tags are links (`Site.liquid`, `udm.markdown.scanner.parse_markdown`).
LIQUID_SITES = ("jekyll", "gitbook")
# Raised whenever udm.site.routes resolves some link otherwise (a new rule, a new anchor form): an index
# built under other rules then resolves every link anew, though no file and no config changed.
RULES_VERSION = 22
PAGE_SUFFIXES = (".md", ".mdx", ".markdown")
# Suffixes a route may carry that name the same page (mdBook and MkDocs without directory URLs write .html).
ROUTE_SUFFIXES = (*PAGE_SUFFIXES, ".html", ".htm")
INDEX_NAMES = ("index", "readme", "_index")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
NUMBER_PREFIX = re.compile(r"^\d+[-_. ]+(?=.)")


@dataclass(frozen=True)
class Mount:
    """A folder of the manual published under a route prefix (Docusaurus docs/ under /docs)."""

    folder: str  # relative to the manual root, posix; "" is the root itself
    prefix: str  # route of the folder from the site root, no slashes at the ends; "" is the site root
    kind: str = "docs"  # docs, pages or blog: Docusaurus treats them differently
    # Hugo: the language of the folder's pages ("" when the site names none) and the folder's path in
    # the content tree, which is what a `ref` names (`/docs/x`), whatever the language's URL prefix.
    lang: str = ""
    content: str = ""


@dataclass(frozen=True)
class Docsify:
    """The options of a Docsify site (`window.$docsify`) that route a link."""

    homepage: str = "README.md"  # the file `/` shows (from the site's folder; a URL: another site's)
    relative: bool = False  # `relativePath`: a relative link is read from the page's folder, not the root
    # `alias`: (pattern, replacement) in JavaScript's syntax, each pattern one `alias_pattern` reads.
    aliases: tuple[tuple[str, str], ...] = ()
    cover: str = ""  # the cover page's file, shown above the home page ("" without one)
    ext: str = ".md"
    sidebar: str = "_sidebar.md"  # `loadSidebar`'s file: shown beside every page of its folder
    navbar: str = "_navbar.md"  # `loadNavbar`'s
    virtual: tuple[str, ...] = ()  # `routes`: route patterns served without a file
    verbatim: tuple[str, ...] = ()  # `noCompileLinks`: link patterns left as written
    # The sites in folders below (a Docsify page of their own: a demo or test site), deepest first:
    # (folder from this site's folder, its options). Their pages are routed by theirs.
    nested: tuple[tuple[str, Docsify], ...] = ()


@dataclass(frozen=True)
class Site:
    """How the site that publishes the manual turns files into routes."""

    generator: str = "none"
    config_file: str | None = None
    mounts: tuple[Mount, ...] = (Mount("", ""),)
    base_path: str = ""  # served under this path ("" or "/x")
    redirects: tuple[tuple[str, str], ...] = ()  # (source route pattern, destination route or URL)
    static: tuple[str, ...] = ()  # folders (relative to the root) whose files are served from the site root
    term_ids: bool = False  # definition-list terms get ids (Hugo's autoDefinitionTermID)
    # How the generator makes heading ids: github (also VitePress's and VuePress 2's own rule, by
    # generator), vuepress1, Hugo's other autoHeadingIDType values (github-ascii, blackfriday), or
    # custom (a VitePress or VuePress config's own slugify: ids other than GitHub's are unknown).
    heading_ids: str = "github"
    # Import aliases a link may start with (tsconfig `paths`: `@assets/` -> `../../assets/`), each to a
    # folder relative to the manual root.
    aliases: tuple[tuple[str, str], ...] = ()
    # Hugo: the paired shortcodes whose inner text is no Markdown, by how their template uses it:
    # "code" (highlighted) or "raw" (written out as it is, or dropped). See `udm.markdown.shortcodes`.
    # None on a site that is no Hugo site: its pages hold no shortcodes (no `ref` is a link there).
    shortcodes: tuple[tuple[str, str], ...] | None = None
    # VitePress `rewrites`: (source pattern, destination) over page paths relative to the content
    # folder, path-to-regexp style (`'en/:rest*': ':rest*'`); a page is routed as its destination.
    rewrites: tuple[tuple[str, str], ...] = ()
    # Hugo: the taxonomies' plural names (their list and term pages are generated), lower-cased.
    taxonomies: tuple[str, ...] = ("tags", "categories")
    # Hugo `permalinks`: ("page:<section>" or "section:<section>", pattern) per top-level section.
    permalinks: tuple[tuple[str, str], ...] = ()
    # Link targets not checked (the `link_exclude` setting's glob patterns over the target as written).
    exclude: tuple[str, ...] = ()
    # MkDocs with mkdocs-autorefs: "headings" (a `[title][id]` no definition defines names a heading or
    # Markdown anchor of any page), "objects" (mkdocstrings too: it may name an API object or another
    # site's inventory entry, so one the site's anchors do not hold is unknown), "" (no autorefs).
    autorefs: str = ""
    # MkDocs: the markers of Python-Markdown's indented blocks its extensions turn on ("!!!" admonition,
    # "???" pymdownx.details, "===" pymdownx.tabbed), whose bodies are Markdown (udm.markdown.indented).
    indented: tuple[str, ...] = ()
    # MkDocs with pymdownx.tabbed's `slugify` option: each tab's id is its title's slug ("slug"), after
    # the heading's id and `-` with `combine_header_slug` ("combined"); "" where tabs have numbered ids.
    tab_ids: str = ""
    # Docusaurus: the site's folder from the manual root and the root from the site's folder ("" when
    # they are one; `..` where one is above the other); None elsewhere. `/x.md` and `@site/x.md`
    # links are looked for from the site's folder.
    site_folder: tuple[str, str] | None = None
    # With no generator (and on a Nextra site, for the files it publishes no page of): the git
    # repository holding the manual, from the manual root (`..` for a manual
    # in `docs/`; "" when the manual is its root or none holds it). GitHub shows a relative link to any
    # file of the repository, so one above the manual may still land on a file.
    repository: str = ""
    # The `.gitignore` files of the repository that apply to the manual (its root's and those above it,
    # up to the repository's): (the manual root's path from the file's folder, its lines). A link to a
    # file one ignores names what a build writes (uv's and ruff's generated reference pages).
    ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # Files of the manual the generator builds no page from (Docusaurus' `_` partials, MkDocs'
    # `exclude_docs`, Starlight's `_` files, VitePress' `srcExclude`): rules of `unpublished_rule`.
    unpublished: tuple[UnpublishedRule, ...] = ()
    # MkDocs with pymdownx.snippets: `--8<-- "x.md"` writes another file's text into the page.
    snippets: bool = False
    # MkDocs with `hooks:` or the macros plugin: a Jinja line (`{{ settings_docs }}`, `{% include %}`)
    # is rendered by the config's own code, which may write Markdown with headings into the page.
    templated: bool = False
    # Hugo: the destinations the site's link render hook compares a link's with (`[term](g)` on Hugo's
    # own docs): the hook renders such a link itself.
    link_keywords: tuple[str, ...] = ()
    # Hugo: the link render hook looks a link's destination up as a page (`.Page.GetPage`).
    hook_pages: bool = False
    # Jekyll: the site's HTML pages (route key, file from the manual root): a home page `index.html`,
    # `pages/showcase.html` with `permalink: /showcase/`. Not indexed, but links land on them.
    html_pages: tuple[tuple[str, str], ...] = ()
    # MyST (Sphinx with MyST-Parser, mystmd): a target (`(label)=`, a directive's `:name:`/`:label:`)
    # is the whole site's, so `[](#label)` or `[](label)` may name one on another page: "site" (a
    # name no page holds is broken) or "objects" (it may be an API object or another project's
    # target: Sphinx's autodoc and intersphinx, mystmd's `references`, so unknown); "" elsewhere.
    labels: str = ""
    # Nextra (Next.js): route prefixes below a page with a parameter (`app/api/[name]/page.tsx`): the
    # pages there are the build's, so a link below one is unknown, not broken.
    generated: tuple[str, ...] = ()
    # Next's `trailingSlash`: every page's URL ends in `/`, so a relative link starts below it.
    trailing_slash: bool = False
    # Docsify: the options that route a link; None on other sites.
    docsify: Docsify | None = None
    problems: tuple[str, ...] = ()

    def excluded(self, target: str) -> bool:
        """Whether the `link_exclude` setting says not to check this target."""
        return bool(self.exclude) and excluded(target, self.exclude)

    def in_repository(self, rel: str) -> bool:
        """Whether `rel` (normalised, from the manual root; above it) names a path of the repository
        holding a manual read on GitHub (`repository`): it climbs no higher than the repository."""
        if not self.repository or rel.startswith("/"):
            return False
        return climbs(rel) <= climbs(self.repository)

    def build_output(self, rel: str, *, folder: bool | None = None, nested: Nested = ()) -> bool:
        """Whether a `.gitignore` of the repository ignores `rel` (a normalised path inside the manual):
        something the build writes, not what the repository holds. `folder`: whether `rel` is a
        folder, None when it is not there to tell (then a `site/` pattern ignores `site` too).
        `nested`: the `.gitignore` files of the folders of the manual leading to `rel`."""
        if folder is None:
            return ignored(self.ignores, rel, nested) or ignored_folder(self.ignores, rel, nested)
        return ignored_folder(self.ignores, rel, nested) if folder else ignored(self.ignores, rel, nested)

    def unpublished_page(self, rel: str) -> bool:
        """Whether the site builds no page from the manual's file `rel` (normalised, from the manual
        root): its config (or the generator's own rule) leaves it out, as a partial or a snippet."""
        if not self.unpublished:
            return False
        # A partial's images are bundled with the page that renders it (Docusaurus, Astro); MkDocs,
        # Mintlify and Jekyll publish no file their exclusions name, page or not.
        if self.generator not in ("mkdocs", "mintlify", "jekyll") and not rel.lower().endswith(PAGE_SUFFIXES):
            return False
        return _unpublished(self._unpublished_table, rel)

    @functools.cached_property
    def _unpublished_table(self) -> list[tuple[str, dict[str, str], str, tuple[str, ...]]]:
        """The rules with their folders as a lookup (a site of many docs versions has many folders)."""
        return [
            (owner, dict(folders), style, patterns) for owner, folders, style, patterns in self.unpublished
        ]

    def publishes(self, page: str) -> bool:
        """Whether `page` lies in one of the folders the site publishes pages from."""
        return on_pages(tuple(m.folder for m in self.mounts), page)

    @property
    def liquid(self) -> str:
        """The site whose `{% %}` tags are links on its pages: "jekyll" (Liquid destinations) or
        "gitbook" (its blocks that link); "" on others, where they are text."""
        return self.generator if self.generator in LIQUID_SITES else ""

    def liquid_in(self, page: str) -> str:
        """`liquid` on `page` where it is one of the site's pages, else ""."""
        return self.liquid if self.publishes(page) else ""

    def crossing_in(self, page: str) -> bool:
        """Whether mkdocs-autorefs cross-references are links on `page` (one of the site's pages)."""
        return bool(self.autorefs) and self.publishes(page)

    def indented_in(self, page: str) -> tuple[str, ...]:
        """The markers of the indented blocks whose bodies are Markdown on `page` (one of the site's)."""
        return self.indented if self.indented and self.publishes(page) else ()

    def fingerprint(self) -> str:
        """A short hash of everything that changes how links resolve."""
        data = json.dumps(
            [
                RULES_VERSION,
                self.generator,
                [m.__dict__ for m in self.mounts],
                self.base_path,
                self.redirects,
                self.static,
                self.term_ids,
                self.heading_ids,
                self.aliases,
                self.shortcodes,
                self.rewrites,
                self.exclude,
                self.taxonomies,
                self.permalinks,
                self.autorefs,
                self.indented,
                self.tab_ids,
                self.site_folder,
                self.repository,
                self.ignores,
                self.unpublished,
                self.snippets,
                self.templated,
                self.link_keywords,
                self.hook_pages,
                self.html_pages,
                self.labels,
                self.generated,
                self.trailing_slash,
                dataclasses.asdict(self.docsify) if self.docsify else None,
            ],
            sort_keys=True,
        )
        return hashlib.sha256(data.encode()).hexdigest()[:16]

    def describe(self) -> dict[str, Any]:
        """JSON-able summary (`udm index --json` prints it as `site`)."""
        return {
            "generator": self.generator,
            "config_file": self.config_file,
            "mounts": [{"folder": m.folder, "prefix": "/" + m.prefix, "kind": m.kind} for m in self.mounts],
            "base_path": self.base_path,
            "redirects": len(self.redirects),
            **({"autorefs": self.autorefs} if self.autorefs else {}),
            **({"indented_blocks": list(self.indented)} if self.indented else {}),
            # Where links above the manual may land, and the `.gitignore` files whose missing files
            # are a build's output (why a link was accepted or not checked).
            **({"repository": self.repository} if self.repository else {}),
            **({"site_folder": self.site_folder[0] or "."} if self.site_folder else {}),
            **({"gitignore_files": len(self.ignores)} if self.ignores else {}),
            # The rules that keep files of the manual out of the site's pages (partials, snippets).
            **(
                {
                    "unpublished": [
                        {"owner": o, "folders": [f or "." for f, _ in fs], "style": st, "patterns": list(p)}
                        for o, fs, st, p in self.unpublished
                    ]
                }
                if self.unpublished
                else {}
            ),
            **({"snippets": True} if self.snippets else {}),
            **({"link_hook_destinations": list(self.link_keywords)} if self.link_keywords else {}),
            **({"link_hook_finds_pages": True} if self.hook_pages else {}),
            **({"labels": self.labels} if self.labels else {}),
            **({"generated_routes": ["/" + g for g in self.generated]} if self.generated else {}),
            "problems": list(self.problems),
        }


def outside_root(rel: str) -> bool:
    """Whether a normalised path from the manual root leaves it (absolute, or above it)."""
    return rel.startswith("/") or rel == ".." or rel.startswith("../")


def climbs(rel: str) -> int:
    """How many folders a normalised relative path climbs before it descends (`../../a` climbs 2)."""
    parts = rel.split("/")
    return next((i for i, part in enumerate(parts) if part != ".."), len(parts))


_MAX_EXCLUDE = 200


@functools.lru_cache(maxsize=64)
def _exclude_pattern(patterns: tuple[str, ...]) -> re.Pattern[str]:
    # fnmatch's translation matches each `*` without backtracking through the others (atomic groups).
    return re.compile(
        "|".join(fnmatch.translate(p.strip()) for p in patterns[:_MAX_EXCLUDE] if p.strip()) or "(?!)"
    )


def excluded(target: str, patterns: tuple[str, ...]) -> bool:
    """Whether a link target (as written, surrounding blanks left out) matches one of the glob patterns."""
    return _exclude_pattern(patterns).match(target.strip()) is not None


# A generator's rules over its content folders' files: this many patterns are read of one rule, a
# pattern longer than this is none a generator's user writes, and a pattern's braces make at most
# this many (`**/_*.{md,mdx}` makes two).
_MAX_UNPUBLISHED_PATTERNS = 200
_MAX_GLOB = 300
_MAX_BRACE_EXPANSION = 64
# A group of alternatives (`{x}` alone is no group), read one way: commas split it, so a long run of
# them is not tried in every split.
_BRACES = re.compile(r"\{([^{},]*(?:,[^{},]*)+)\}")

# One rule of `Site.unpublished`: (owner, the folders it covers, style, patterns). Each folder is
# (its path from the manual root, the manual root's path from it); a file is unpublished when some
# owner's folders hold it and every such owner's rules match it (a Docusaurus blog inside a docs
# folder that excludes it is still the blog's). `style` says how a pattern matches a file's path
# from its folder: "gitignore" (as git matches `.gitignore` lines: Docusaurus and VitePress globs
# through `glob_lines`, Mintlify's `.mintignore`), "pathspec" (the same lines, but the last pattern
# matching the file or a folder above it decides, as the pathspec library MkDocs' `exclude_docs`
# uses has it: `!snippets/keep.md` takes a file back from `snippets/`), "fnmatch" (Python's
# `fnmatchcase` over the whole path, `*` crossing folders: the mkdocs-exclude plugin's `glob`) or
# "name" (fnmatch over the file's name: Starlight's `_` files).
UnpublishedRule = tuple[str, tuple[tuple[str, str], ...], str, tuple[str, ...]]


def glob_lines(pattern: str) -> list[str]:
    """A glob over a content folder's files, as Docusaurus and VitePress write one (micromatch:
    `**/_*.{md,mdx}`), as the `.gitignore` patterns that match the same files: braces expanded (not
    nested; at most a few dozen results), anchored to the folder unless it starts with `**/`, and a
    blank at its end kept (git would drop it: escaped)."""
    text = pattern[2:] if pattern.startswith("./") else pattern
    if not text.strip() or text.startswith(("!", "#")) or len(text) > _MAX_GLOB:
        return []  # a negation, nothing, or no file name: not read (`#` starts a .gitignore comment)
    out = [text]
    for _ in range(4):  # a few brace groups; one left after that is not read
        expanded: list[str] = []
        for t in out:
            b = _BRACES.search(t)
            expanded += (
                [t] if b is None else [t[: b.start()] + alt + t[b.end() :] for alt in b.group(1).split(",")]
            )
        if len(expanded) > _MAX_BRACE_EXPANSION:
            return []
        if expanded == out:
            break
        out = expanded
    lines = []
    for t in out:
        if not t or "{" in t or "}" in t:
            continue
        trimmed = t.rstrip(" ")
        # `a.md ` names a file ending in a blank: git drops a blank unless a backslash escapes it.
        t = trimmed + "\\ " * (len(t) - len(trimmed))
        lines.append(t if t.startswith(("**/", "/")) else "/" + t)
    return lines


def unpublished_rule(
    owner: str, root: Path, folders: Iterable[Path], style: str, patterns: Iterable[Any]
) -> UnpublishedRule | None:
    """A rule of `Site.unpublished` for an owner's content folders (a Docusaurus docs plugin instance
    and its versions): None when none of them holds any of the manual, or there is no pattern."""
    limit = _MAX_GLOB if style in ("fnmatch", "name") else 1 << 16
    kept = tuple(
        p
        for p in itertools.islice((p for p in patterns if isinstance(p, str)), _MAX_UNPUBLISHED_PATTERNS)
        if p.strip() and len(p) <= limit
    )
    covered: dict[str, str] = {}
    for folder in folders:
        found = _overlap(root, folder)
        if found is not None:  # else beside the manual: none of its files
            covered.setdefault(*found)
    if not kept or not covered:
        return None
    # A repeated pattern says nothing new: only its last place counts (the last match decides).
    kept = tuple(reversed(dict.fromkeys(reversed(kept))))
    return (owner, tuple(covered.items()), style, kept)


@functools.lru_cache(maxsize=64)
def _glob_regex(patterns: tuple[str, ...]) -> re.Pattern[str]:
    # Python's fnmatch translation, each pattern as written (mkdocs-exclude hands them to
    # fnmatchcase unstripped); the patterns are short (`_MAX_GLOB`), so this compiles at once.
    return re.compile("|".join(fnmatch.translate(p) for p in patterns) or "(?!)")


_MAX_RULE_DEPTH = 64
_Table = list[tuple[str, dict[str, str], str, tuple[str, ...]]]


def _unpublished(table: _Table, rel: str) -> bool:
    """Whether the rules leave the manual's file `rel` out of the site's pages: some owner covers it,
    and every owner that covers it excludes it (by any of its rules)."""
    if not rel or outside_root(rel):
        return False
    parts = rel.split("/")
    if len(parts) > _MAX_RULE_DEPTH:
        return False
    # Every folder that may hold it, deepest first: its path from the root, and the file's from it.
    places = [("/".join(parts[:i]), "/".join(parts[i:])) for i in range(len(parts) - 1, -1, -1)]
    verdicts: dict[str, bool] = {}
    for owner, folders, style, patterns in table:
        if verdicts.get(owner):
            continue  # already excluded by another of the owner's rules
        found = next(((folders[f], sub) for f, sub in places if f in folders), None)
        if found is None:
            continue
        inner, sub = found
        if inner:
            sub = f"{inner}/{sub}"
        if style == "gitignore":
            hit = ignored((("", patterns),), sub)
        elif style == "pathspec":
            hit = last_match_ignored(patterns, sub)
        elif style == "name":
            hit = _glob_regex(patterns).match(sub.rpartition("/")[2]) is not None
        else:
            hit = _glob_regex(patterns).match(sub) is not None
        verdicts[owner] = hit
    return bool(verdicts) and all(verdicts.values())


def _overlap(root: Path, folder: Path) -> tuple[str, str] | None:
    """How a content folder and the manual root overlap, both taken as written (normalised, not
    resolved): (the folder from the root, "") when it is the root or below it, ("", the root from
    the folder) when the manual is a sub-folder of it; None when it lies beside the manual."""
    root_s, folder_s = os.path.normpath(root), os.path.normpath(folder)
    if root_s == folder_s:
        return ("", "")
    if folder_s.startswith(root_s + os.sep):
        return (os.path.relpath(folder_s, root_s).replace(os.sep, "/"), "")
    if root_s.startswith(folder_s + os.sep):
        return ("", os.path.relpath(root_s, folder_s).replace(os.sep, "/"))
    return None


def under(root: Path, folder: Path, prefix: str, kind: str, strip_numbers: bool) -> Mount | None:
    """The mount of `folder` (published at `prefix`) seen from the manual root, if they overlap."""
    found = _overlap(root, folder)
    if found is None:
        # Published beside the manual (its blog when the manual is docs/): routes there are checked on disk.
        rel = os.path.relpath(os.path.normpath(folder), os.path.normpath(root))
        return Mount(rel.replace(os.sep, "/"), prefix, kind)
    inside, above = found
    if not above:
        return Mount(inside, prefix, kind)
    # The manual is a sub-folder of the published content: its files sit below the prefix.
    parts = above.split("/")
    if strip_numbers:
        parts = [NUMBER_PREFIX.sub("", p) for p in parts]
    return Mount("", "/".join(p for p in [prefix, *parts] if p), kind)


def on_pages(folders: tuple[str, ...], rel: str) -> bool:
    """Whether the file `rel` (relative to the manual root) lies in one of the site's page folders."""
    return any(not f or rel.startswith(f + "/") for f in folders)


def within(path: str | Path, folder: str | Path) -> bool:
    """Whether `path` is `folder` or lies below it, both taken as written (normalised, not resolved)."""
    inner, outer = os.path.normpath(path), os.path.normpath(folder)
    return inner == outer or inner.startswith(outer.rstrip(os.sep) + os.sep)


def exists_within(base: str, *, folder: bool = False) -> Callable[[str], bool]:
    """A check of whether `rel` (normalised, from `base`) is a file (or a folder) whose real path stays
    inside the folder the path climbs to (`base` when it climbs none): a symlink out of it (`etc-link -> /etc`)
    lands nowhere, so a link cannot ask whether a file elsewhere on the machine exists. The real path
    of each folder climbed to is resolved once per checker (one resolution pass, one validation)."""
    tops: dict[int, str] = {}

    def exists(rel: str) -> bool:
        full = os.path.join(base, rel)
        if not (os.path.isdir(full) if folder else os.path.isfile(full)):
            return False
        up = climbs(rel)
        top = tops.get(up)
        if top is None:
            top = tops[up] = os.path.realpath(os.path.join(base, *[".."] * up))
        return within(os.path.realpath(full), top)

    return exists


def read_head(path: Path, limit: int) -> bytes:
    """Up to `limit` + 1 bytes of a regular file (OSError for anything else: a named pipe written
    in the manual would block an open for reading until a writer came)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path}: not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(limit + 1)
    finally:
        os.close(fd)


def static_folders(root: Path, folders: Iterable[Path]) -> tuple[str, ...]:
    out = []
    root_s = os.path.normpath(root)
    for folder in folders:
        f = os.path.normpath(folder)
        # Beside the manual too (Docusaurus static/ when the manual is docs/): files there only have to exist.
        out.append("" if f == root_s else os.path.relpath(f, root_s).replace(os.sep, "/"))
    return tuple(out)


_MAX_COMPONENT_NAMES = 20_000


def component_pages(
    root: Path, folder: Path, suffixes: tuple[str, ...], *, partials: bool = False
) -> tuple[tuple[str, str], ...]:
    """The pages a site makes of its content folder's component files (Rspress' `page.tsx`, VuePress
    1's `.vue`): (route key, file from the manual root), from the first 20,000 names; dot folders,
    `node_modules`, `public` and anything linked out of the folder not read, and with `partials` a
    `_x` name (but `__x`) is none."""
    found: list[tuple[str, str]] = []
    real = os.path.realpath(folder)
    seen = 0
    for current, dirs, files in os.walk(folder):
        if not within(os.path.realpath(current), real):
            dirs[:] = []
            continue
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and d not in ("node_modules", "public")
            and not (partials and d.startswith("_") and not d.startswith("__"))
        )
        rel = os.path.relpath(current, folder).replace(os.sep, "/")
        for name in sorted(files):
            seen += 1
            if seen > _MAX_COMPONENT_NAMES:
                return tuple(found)
            if not name.endswith(suffixes) or name.endswith(".d.ts"):
                continue
            if partials and name.startswith("_") and not name.startswith("__"):
                continue
            stem = name.rsplit(".", 1)[0]
            key = "/".join(p for p in (rel if rel != "." else "", "" if stem == "index" else stem) if p)
            path = os.path.relpath(os.path.join(current, name), root).replace(os.sep, "/")
            found.append((key, path))
    return tuple(found)


def is_url(value: str) -> bool:
    """Whether a link or path option names another site: a scheme (`https:`, `mailto:`) or `//host`."""
    return bool(SCHEME.match(value)) or value.startswith("//")


def path_of_url(value: Any) -> str:
    """The path part of a base URL (`https://x.org/docs/` -> `/docs`), "" for the site root."""
    if not isinstance(value, str) or not value.strip():
        return ""
    text = value.strip()
    if is_url(text):
        text = "/" + text.split("//", 1)[1].partition("/")[2]
    return "/" + text.strip("/") if text.strip("/") else ""
