"""Docsify sites: an `index.html` whose script sets `window.$docsify`. Read, never run.

Docsify renders Markdown in the browser. Its pages are the Markdown files of the folder the HTML page
is in (or its `basePath`, when that is a folder): `/guide` is `guide.md`, `/guide/` is
`guide/README.md`, `/` is the `homepage` (`README.md`). A link is routed by Docsify's router
(`router.toURL`): its `.md` is dropped and `#x` becomes `?id=x`, the heading id; with `relativePath`
off (the default) a relative link is read from the site root whatever page it is on
(`[x](guide.md)` on `zh-cn/a.md` is `/guide`), with it on from the page's folder. An image is read from
the page's folder, even one written `/x.png` (`getPath(base, parent, href)`). `alias` rewrites a route
by a regular expression before its file is fetched (`'.*?/changelog': 'https://.../CHANGELOG.md'`).
Heading ids are Docsify's `slugify` (punctuation removed, each space a hyphen, a repeat `-1`), or a
heading's `:id=name`.
"""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import replace
from pathlib import Path

from udm.site.jsconfig import _balanced, _js_block, _js_string, _masked, _own_level
from udm.site.model import Docsify, Site, read_head, under

__all__ = [
    "DOCSIFY",
    "alias_pattern",
    "docsify",
    "docsify_heading_id",
    "docsify_inputs",
    "docsify_slug",
    "is_docsify_page",
    "nested_pages",
    "route_file",
]

_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.S)
# The page's script sets Docsify's options (`window.$docsify = {...}`) or loads Docsify itself.
DOCSIFY = re.compile(r"\$docsify\b|/docsify(?:@[\w.^~-]+)?(?:/|[\"'?#])|docsify(?:\.min)?\.js")
_ASSIGNED = re.compile(r"\$docsify\s*=\s*(?:Object\.assign\s*\(\s*)?\{")
_MAX_ALIASES = 200
_MAX_PATTERN = 200
# Unbounded repeats (`*`, `+`, `{n,}`) an alias pattern may hold: with none nested and no alternation
# repeated, a failing match costs at most polynomial time in a route's length (bounded below).
_MAX_REPEATS = 2
_MAX_ROUTE = 300
_PAIR = re.compile(
    r"""(['"])((?:\\.|(?!\1)[^\\\n]){1,300})\1\s*:\s*(['"])((?:\\.|(?!\3)[^\\\n]){0,2000})\3"""
)


def is_docsify_page(text: str) -> bool:
    """Whether an HTML page runs Docsify (sets its options or loads it; not in an HTML comment)."""
    return DOCSIFY.search(_HTML_COMMENT.sub("", text)) is not None


def _options(text: str) -> str | None:
    """The object assigned to `window.$docsify` in the page's scripts, None when none is literal."""
    masked = _masked(text)
    found = _ASSIGNED.search(masked)
    if found is None:
        return None
    end = _balanced(text, found.end() - 1)
    return None if end is None else text[found.end() - 1 : end + 1]


def _js_unescape(value: str) -> str:
    """A JavaScript string literal's value (its escapes read as the characters they name)."""
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), value)


def _flag(block: str, key: str) -> bool:
    """Whether the options' own `key` is `true`."""
    return re.search(rf"(?<![\w$.])['\"]?{key}['\"]?\s*:\s*true\b", _own_level(block)) is not None


def alias_pattern(pattern: str) -> re.Pattern[str] | None:
    """Docsify's alias key as the regular expression it builds (`^key$`), or None when it uses a form
    read here as unsafe: a repeat inside a repeated group, alternation in a repeated group, nested
    groups, back references, lookarounds or more than two unbounded repeats (each could make a match
    against a crafted route take exponential or long polynomial time)."""
    if len(pattern) > _MAX_PATTERN:
        return None
    i, depth, unbounded = 0, 0, 0
    group_start = -1
    group_has = False  # the open group holds a repeat or an alternation
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            if i + 1 >= len(pattern) or pattern[i + 1].isdigit() or pattern[i + 1] in "kbB":
                return None  # a back reference or word boundary: not in the kept subset
            i += 2
        elif c == "[":
            end = i + 1
            if pattern[end : end + 1] == "^":
                end += 1
            if pattern[end : end + 1] == "]":
                end += 1
            while end < len(pattern) and pattern[end] != "]":
                end += 2 if pattern[end] == "\\" else 1
            if end >= len(pattern):
                return None
            i = end + 1
        elif c == "(":
            if depth:
                return None
            if pattern.startswith("(?", i) and not pattern.startswith("(?:", i):
                return None  # lookarounds and named groups
            depth, group_start, group_has = 1, i, False
            i += 3 if pattern.startswith("(?:", i) else 1
            continue
        elif c == ")":
            if not depth:
                return None
            depth = 0
            i += 1
            quant = _quantifier(pattern, i)
            if quant:
                if group_has:
                    return None
                unbounded += quant[1]
                i += quant[0]
            group_start = -1
            continue
        elif c in "*+?{":
            return None  # a repeat of nothing
        else:
            if c == "|" and depth:
                group_has = True
            i += 1
        quant = _quantifier(pattern, i)
        if quant:
            if depth:
                group_has = True
            unbounded += quant[1]
            i += quant[0]
    if depth or unbounded > _MAX_REPEATS or group_start != -1:
        return None
    try:
        return re.compile(f"^{pattern}$")
    except re.error:
        return None


def _quantifier(pattern: str, i: int) -> tuple[int, int] | None:
    """The repeat at `i` (`*`, `+`, `?`, `{n}`, `{n,m}`, `{n,}`, each maybe lazy): its length and
    whether it is unbounded (1) or not (0); None when there is none."""
    if i >= len(pattern):
        return None
    c = pattern[i]
    if c in "*+?":
        length, unbounded = 1, int(c != "?")
    elif c == "{":
        m = re.match(r"\{(\d{1,3})(,(\d{0,3}))?\}", pattern[i:])
        if m is None:
            return None
        length, unbounded = m.end(), int(m.group(2) is not None and not m.group(3))
    else:
        return None
    if pattern[i + length : i + length + 1] == "?":
        length += 1
    return length, unbounded


def _aliases(block: str | None) -> tuple[tuple[tuple[str, str], ...], list[str]]:
    """The `alias` pairs whose patterns are read (pattern, replacement), and a problem for each left out."""
    if not block:
        return (), []
    pairs: list[tuple[str, str]] = []
    problems: list[str] = []
    for m in _PAIR.finditer(_own_level(block)):
        if len(pairs) >= _MAX_ALIASES:
            problems.append(f"alias: more than {_MAX_ALIASES} entries; the rest are not read")
            break
        pattern, target = _js_unescape(m.group(2)), _js_unescape(m.group(4))
        if alias_pattern(pattern) is None:
            problems.append(
                f"alias {pattern!r}: a pattern form not read (links it would route are checked as written)"
            )
            continue
        pairs.append((pattern, target))
    return tuple(pairs), problems


def _page_name(value: str | None, default: str) -> str:
    """A page option's file (`coverpage: 'cover.md'`, `true` for the default name)."""
    return (value or default).lstrip("/")


def docsify(root: Path, here: Path, text: str) -> Site:
    """Docsify: the Markdown files of `index.html`'s folder (or its `basePath` folder) are the pages,
    routed by the options of `window.$docsify`; a folder below with a Docsify page of its own is
    another site, routed by its options."""
    options, folder, problems = _read(here, text)
    mount = under(root, folder, "", "docsify", False)
    nested: list[tuple[str, Docsify]] = []
    for page in nested_pages(here):
        try:
            inner_text = read_head(page, _MAX_PAGE).decode("utf-8", "replace")
        except OSError:
            continue
        inner, inner_folder, inner_problems = _read(page.parent, inner_text)
        rel = os.path.relpath(inner_folder, folder).replace(os.sep, "/")
        if rel.startswith("..") or rel == ".":
            continue  # its pages are no folder of this site's
        nested.append((rel, replace(inner, nested=())))
        problems += [f"{rel}/index.html: {p}" for p in inner_problems]
    return Site(
        mounts=(mount,) if mount else (),
        heading_ids="docsify",
        docsify=replace(options, nested=tuple(sorted(nested, key=lambda n: -n[0].count("/")))),
        problems=tuple(problems),
    )


def docsify_inputs(page: Path) -> list[Path]:
    """The files a Docsify site's routes are read from: its page, the script files it loads from its
    folder, and the Docsify pages below it."""
    try:
        text = read_head(page, _MAX_PAGE).decode("utf-8", "replace")
    except OSError:
        return [page]
    return [page, *_scripts(page.parent, text), *nested_pages(page.parent)]


def nested_pages(here: Path) -> list[Path]:
    """The Docsify pages (`index.html` setting `window.$docsify`) in the folders below `here`, at most
    200, from the first 5,000 folders (dot folders and node_modules left out)."""
    found: list[Path] = []
    seen = 0
    for folder, dirs, files in os.walk(here):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "node_modules")
        seen += 1
        if seen > _MAX_FOLDERS or len(found) >= _MAX_NESTED:
            break
        if folder != str(here) and "index.html" in files:
            page = Path(folder) / "index.html"
            try:
                head = read_head(page, _MAX_PAGE).decode("utf-8", "replace")
            except OSError:
                continue
            if is_docsify_page(head):
                found.append(page)
    return found


_MAX_FOLDERS = 5000
_MAX_NESTED = 200
_MAX_PAGE = 1 << 20


_SCRIPT_SRC = re.compile(r"""<script\b[^>]*?\bsrc\s*=\s*(["'])([^"'<>]{1,300})\1""", re.I)
_MAX_SCRIPTS = 10


def _scripts(here: Path, text: str) -> list[Path]:
    """The page's own script files (`<script src="js/config.js">`) in its folder or below, in order."""
    found: list[Path] = []
    for m in _SCRIPT_SRC.finditer(_HTML_COMMENT.sub("", text)):
        src = m.group(2).split("?", 1)[0].split("#", 1)[0]
        if re.match(r"[A-Za-z][\w+.-]*:|//", src) or not src.endswith((".js", ".mjs")):
            continue
        path = os.path.normpath(os.path.join(here, src.lstrip("/")))
        if path.startswith(os.path.join(os.path.normpath(here), "")) and os.path.isfile(path):
            found.append(Path(path))
        if len(found) >= _MAX_SCRIPTS:
            break
    return found


def config_text(here: Path, text: str) -> str:
    """The script that sets `window.$docsify`: the page's own, or a script file of its folder the page
    loads (`<script src="js/config.js">`, a common layout), as far as one sets it."""
    if _options(text) is not None:
        return text
    for script in _scripts(here, text):
        try:
            code = read_head(script, _MAX_PAGE).decode("utf-8", "replace")
        except OSError:
            continue
        if _options(code) is not None:
            return code
    return text


def _read(here: Path, page: str) -> tuple[Docsify, Path, list[str]]:
    """One Docsify page's options, the folder its pages are in, and what could not be read."""
    options = _options(config_text(here, page)) or ""
    problems: list[str] = []
    base = _js_string(options, "basePath") if options else None
    folder = here
    if base and re.match(r"[A-Za-z][\w+.-]*:|//", base):
        problems.append(f"basePath {base!r}: pages fetched from another site are not read")
    elif base:
        folder = here / base.strip("/")  # from the page's folder, as the server maps it there
    aliases, alias_problems = _aliases(_js_block(options, "alias") if options else None)
    problems += alias_problems
    cover = ""
    if options and re.search(r"(?<![\w$.])['\"]?coverpage['\"]?\s*:\s*true\b", _own_level(options)):
        cover = "_coverpage.md"
    elif options:
        named = _js_string(_own_level(options), "coverpage")
        cover = _page_name(named, "_coverpage.md") if named else ""
    ext = (_js_string(options, "ext") if options else None) or ".md"
    ext = ext if ext.startswith(".") else f".{ext}"
    homepage = (_js_string(_own_level(options), "homepage") if options else None) or f"README{ext}"
    found = Docsify(
        homepage=homepage,
        relative=bool(options) and _flag(options, "relativePath"),
        aliases=aliases,
        cover=cover,
        ext=ext,
    )
    return found, folder, problems


def route_file(route: str, ext: str, homepage: str) -> str:
    """The file (from the site's folder; `..` segments kept, as the browser resolves them against the
    page's URL) Docsify fetches for a route (`/guide` is `guide.md`, `/guide/` `guide/README.md`, `/`
    the homepage): `router.getFile` after the alias."""
    path = route if route.startswith("/") else "/" + route
    if not re.search(rf"\.(?:{re.escape(ext.lstrip('.'))}|html)$", path):
        path = f"{path}README{ext}" if path.endswith("/") else f"{path}{ext}"
    if path == f"/README{ext}":
        path = "/" + homepage.lstrip("/")
    return path.lstrip("/")


# `slugify`'s removed characters: General Punctuation, Supplemental Punctuation and ASCII punctuation but
# `-` and `_`.
_DOCSIFY_REMOVED = re.compile(r"""[\u2000-\u206F\u2E00-\u2E7F\\'!"#$%&()*+,./:;<=>?@\[\]^`{|}~]""")
_ID_OPTION = re.compile(r"(?:^|\s):id=([\w%-]+)")


def docsify_slug(text: str) -> str:
    """A heading's id as Docsify's `slugify` makes it (before a repeat's number): trimmed, emoji and
    tags dropped, ASCII capitals lowered, punctuation removed, each white space a hyphen, `_` before a
    leading digit."""
    slug = unicodedata.normalize("NFC", text.strip()).replace("\ufe0f", "")
    # Emoji (`\p{Extended_Pictographic}`): Python's `re` has no such class; pictographs are symbols.
    slug = "".join(ch for ch in slug if unicodedata.category(ch) != "So")
    slug = re.sub(r"[A-Z]+", lambda m: m.group(0).lower(), slug)
    slug = _DOCSIFY_REMOVED.sub("", re.sub(r"<[^>]+>", "", slug))
    slug = re.sub(r"\s", "-", slug)
    return "_" + slug if slug[:1].isdigit() else slug


def docsify_heading_id(text: str) -> str:
    """A heading's id on a Docsify site: its `:id=name` option's, else its text's (`docsify_slug`)."""
    option = _ID_OPTION.search(text)
    return docsify_slug(option.group(1) if option else text)
