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

import bisect
import os
import re
import unicodedata
import warnings
from dataclasses import replace
from pathlib import Path

from udm.site.jsconfig import _balanced, _js_string, _js_strings, _masked, _own_level, _own_value
from udm.site.model import Docsify, Site, is_url, read_head, under

__all__ = [
    "MAX_ROUTE",
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
_MAX_ASSIGNED = 20
_ASSIGNED = re.compile(r"\$docsify\s*=\s*(?:Object\.assign\s*\(\s*(?:[\w$.]{1,100}\s*,\s*){0,5})?\{")
_MAX_ALIASES = 200
_MAX_PATTERN = 200
# Unbounded repeats (`*`, `+`, `{n,}`) an alias pattern may hold: with none nested and no alternation
# repeated, a failing match costs at most polynomial time in a route's length (bounded below).
_MAX_REPEATS = 2
_MAX_ALL_REPEATS = 3
# Longer routes (and hrefs) are no page's: it bounds what an alias, `routes` or `noCompileLinks`
# pattern runs on, checked once a route is made from the page's folder.
MAX_ROUTE = 300
_PAIR = re.compile(
    r"""(['"])((?:\\.|(?!\1)[^\\\n]){1,300})\1\s*:\s*(['"])((?:\\.|(?!\3)[^\\\n]){0,2000})\3"""
)


def is_docsify_page(text: str) -> bool:
    """Whether an HTML page runs Docsify: an inline script of it (not in an HTML comment) names
    `$docsify` (its options are set there, or read: either way Docsify runs the page) or a script
    loads Docsify (`<script src=".../docsify@4">`); a link to Docsify's site or the word in the text
    is none."""
    return any(
        _DOCSIFY_SRC.search(_src(attrs) or "") or (not _src(attrs) and _SETS.search(content))
        for attrs, content in _script_tags(text)
    )


# A script that loads Docsify (`//cdn.jsdelivr.net/npm/docsify@4`, `.../lib/docsify.min.js`).
_DOCSIFY_SRC = re.compile(r"/docsify(?:@[\w.^~-]+)?(?:/|$|[?#])|docsify(?:\.min)?\.js")
_SETS = re.compile(r"\$docsify\b")
_MAX_TAGS = 200


def _script_tags(text: str) -> list[tuple[str, str]]:
    """Each `<script>` of an HTML page outside its comments: its attributes and its content (at most
    200, read in one pass: an unclosed tag ends the reading)."""
    page = _HTML_COMMENT.sub("", text) if "<!--" in text else text
    low = page.lower()
    found: list[tuple[str, str]] = []
    at = 0
    while len(found) < _MAX_TAGS:
        start = low.find("<script", at)
        close = low.find(">", start) if start >= 0 else -1
        if close < 0:
            break
        end = low.find("</script", close)
        end = len(page) if end < 0 else end
        found.append((page[start + 7 : close], page[close + 1 : end]))
        at = end
    return found


_SRC = re.compile(r"""\bsrc\s*=\s*(["'])([^"'<>]{1,300})\1""", re.I)


def _src(attrs: str) -> str | None:
    """A script tag's `src`, None without one."""
    found = _SRC.search(attrs) if "src" in attrs.lower() else None
    return found.group(2) if found else None


def _options(text: str) -> str | None:
    """The object assigned to `window.$docsify` in the page's scripts, None when none is literal. For
    `Object.assign({}, base, {...})` the literal objects merged, a later one's keys first (they win)."""
    masked = _masked(text)
    found = _ASSIGNED.search(masked)
    if found is None:
        return None
    end = _balanced(text, found.end() - 1)
    if end is None:
        return None
    first = text[found.end() - 1 : end + 1]
    if "Object.assign" not in found.group(0):
        return first
    objects = [first]
    at = end + 1
    for _ in range(_MAX_ASSIGNED):
        more = re.match(r"\s*,\s*(?:\{|[\w$.]+)", masked[at : at + 2000])
        if more is None:
            break
        if not more.group(0).endswith("{"):
            at += more.end()  # a name (`base`): its keys are not read
            continue
        close = _balanced(text, at + more.end() - 1)
        if close is None:
            break
        objects.append(text[at + more.end() - 1 : close + 1])
        at = close + 1
    return "{" + ",".join(o[1:-1] for o in reversed(objects)) + "}"


def _js_unescape(value: str) -> str:
    """A JavaScript string literal's value (its escapes read as the characters they name)."""
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), value)


def _flag(own: str, key: str) -> bool:
    """Whether `key` is `true` in the options' own level (`_own_level` of them)."""
    return re.search(rf"(?<![\w$.])['\"]?{key}['\"]?\s*:\s*true\b", own) is not None


def alias_pattern(pattern: str) -> re.Pattern[str] | None:
    """Docsify's alias key as the regular expression it builds (`^key$`), or None when it uses a form
    read here as unsafe: a repeat inside a repeated group, alternation in a repeated group, nested
    groups, back references, lookarounds, more than three repeats or more than two long ones (`*`,
    `+`, `{n,}`, a bound over 10): each could make a match against a crafted route take exponential
    or long polynomial time."""
    if len(pattern) > _MAX_PATTERN:
        return None
    i, depth, unbounded, repeats = 0, 0, 0, 0
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
            depth, group_has = 1, False
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
                repeats += 1
                i += quant[0]
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
            repeats += 1
            i += quant[0]
    if depth or unbounded > _MAX_REPEATS or repeats > _MAX_ALL_REPEATS:
        return None
    try:
        with warnings.catch_warnings():
            # `[[]`, `[a--b]`: Python may read these otherwise in a later version (set operations).
            warnings.simplefilter("error", FutureWarning)
            return re.compile(f"^{pattern}$")
    except (re.error, FutureWarning):
        return None


def _quantifier(pattern: str, i: int) -> tuple[int, int] | None:
    """The repeat at `i` (`*`, `+`, `?`, `{n}`, `{n,m}`, `{n,}`, each maybe lazy): its length and
    whether it is long (1: unbounded, or bounded above 10) or not (0); None when there is none."""
    if i >= len(pattern):
        return None
    c = pattern[i]
    if c in "*+?":
        length, unbounded = 1, int(c != "?")
    elif c == "{":
        m = re.match(r"\{(\d{1,3})(,(\d{0,3}))?\}", pattern[i:])
        if m is None:
            return None
        upper = int(m.group(3)) if m.group(3) else None if m.group(2) else int(m.group(1))
        length, unbounded = m.end(), int(upper is None or upper > 10)
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


def docsify(root: Path, here: Path, text: str) -> Site:
    """Docsify: the Markdown files of `index.html`'s folder (or its `basePath` folder) are the pages,
    routed by the options of `window.$docsify`; a folder below with a Docsify page of its own is
    another site, routed by its options."""
    options, folder, problems = _read(here, text)
    mount = under(root, folder, "", "docsify", False)
    nested: list[tuple[str, Docsify]] = []
    for page, inner_text in _nested(here).items():
        inner, inner_folder, inner_problems = _read(page.parent, inner_text)
        rel = os.path.relpath(inner_folder, folder).replace(os.sep, "/")
        if rel == ".." or rel.startswith("../") or rel == ".":
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
    """The Docsify pages in the folders below `here` (see `_nested`)."""
    return list(_nested(here))


def _nested(here: Path) -> dict[Path, str]:
    """The Docsify pages (`index.html` setting `window.$docsify`) in the folders below `here` with their
    text, at most 200, from the first 5,000 folders (dot folders and node_modules left out)."""
    found: dict[Path, str] = {}
    seen = 0
    real_here = os.path.join(os.path.realpath(here), "")
    for folder, dirs, files in os.walk(here):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "node_modules")
        seen += 1
        if seen > _MAX_FOLDERS or len(found) >= _MAX_NESTED:
            break
        if folder != str(here) and "index.html" in files:
            page = Path(folder) / "index.html"
            if not os.path.realpath(page).startswith(real_here):
                continue  # a symbolic link out of the site: not read
            try:
                head = read_head(page, _MAX_PAGE).decode("utf-8", "replace")
            except OSError:
                continue
            if is_docsify_page(head):
                found[page] = head
    return found


_MAX_FOLDERS = 5000
_MAX_NESTED = 200
_MAX_PAGE = 1 << 20


_MAX_SCRIPTS = 10


def _scripts(here: Path, text: str) -> list[Path]:
    """The page's own script files (`<script src="js/config.js">`) in its folder or below (their real
    paths too: a symbolic link out of it is not read), in order."""
    found: list[Path] = []
    real_here = os.path.join(os.path.realpath(here), "")
    for attrs, _ in _script_tags(text):
        src = (_src(attrs) or "").split("?", 1)[0].split("#", 1)[0]
        if not src or is_url(src) or not src.endswith((".js", ".mjs")):
            continue
        path = os.path.normpath(os.path.join(here, src.lstrip("/")))
        inside = path.startswith(os.path.join(os.path.normpath(here), ""))
        if inside and os.path.realpath(path).startswith(real_here) and os.path.isfile(path):
            found.append(Path(path))
        if len(found) >= _MAX_SCRIPTS:
            break
    return found


def config_text(here: Path, page: str) -> str:
    """The script that sets `window.$docsify`: the page's own inline scripts, or a script file of its
    folder the page loads (`<script src="js/config.js">`, a common layout), as far as one sets it."""
    inline = "\n".join(content for attrs, content in _script_tags(page) if not _src(attrs))
    if _options(inline) is not None:
        return inline
    for script in _scripts(here, page):
        try:
            code = read_head(script, _MAX_PAGE).decode("utf-8", "replace")
        except OSError:
            continue
        if _options(code) is not None:
            return code
    return inline


def _read(here: Path, page: str) -> tuple[Docsify, Path, list[str]]:
    """One Docsify page's options, the folder its pages are in, and what could not be read. Each
    option is the options object's own key, never one of a plugin's settings inside it."""
    options = _options(config_text(here, page)) or "{}"
    own = _own_level(options)
    problems: list[str] = []
    base = _js_string(own, "basePath")
    folder = here
    if base and is_url(base):
        problems.append(f"basePath {base!r}: pages fetched from another site are not read")
    elif base:
        folder = here / base.strip("/")  # from the page's folder, as the server maps it there
    aliases, alias_problems = _aliases(_own_value(options, "alias"))
    ext = _js_string(own, "ext") or ".md"
    ext = ext if ext.startswith(".") else f".{ext}"
    # `coverpage: true` is `'_coverpage' + config.ext`; a string names the file.
    cover = (
        f"_coverpage{ext}" if _flag(own, "coverpage") else (_js_string(own, "coverpage") or "").lstrip("/")
    )
    # The default homepage is README.md whatever `ext` is (Docsify's config.js).
    homepage = _js_string(own, "homepage") or "README.md"
    # `loadSidebar: 'summary.md'` names the file shown beside the pages; `true` is `_sidebar.md`.
    sidebar, navbar = (_js_string(own, key) or f"_{name}{ext}" for key, name in _BESIDE)
    virtual, virtual_problems = _patterns(_route_keys(_own_value(options, "routes")), "routes")
    verbatim, verbatim_problems = _patterns(
        [_js_unescape(v) for v in _js_strings(_own_value(options, "noCompileLinks") or "")], "noCompileLinks"
    )
    found = Docsify(
        homepage=homepage,
        relative=_flag(own, "relativePath"),
        aliases=aliases,
        cover=cover,
        ext=ext,
        sidebar=sidebar.lstrip("/"),
        navbar=navbar.lstrip("/"),
        virtual=virtual,
        verbatim=verbatim,
    )
    return found, folder, problems + alias_problems + virtual_problems + verbatim_problems


_BESIDE = (("loadSidebar", "sidebar"), ("loadNavbar", "navbar"))
_ROUTE_KEY = re.compile(r"""(['"])((?:\\.|(?!\1)[^\\\n]){1,300})\1\s*:""")


def _route_keys(block: str | None) -> list[str]:
    """The keys of the `routes` object (virtual routes: a path pattern each)."""
    return [_js_unescape(m.group(2)) for m in _ROUTE_KEY.finditer(_own_level(block))] if block else []


def _patterns(values: list[str], option: str) -> tuple[tuple[str, ...], list[str]]:
    """The patterns of an option (`routes` keys, `noCompileLinks`) that `alias_pattern` reads (a
    leading `^` and trailing `$` dropped, as Docsify anchors them itself), and a problem for each not."""
    kept: list[str] = []
    problems: list[str] = []
    for value in values[:_MAX_ALIASES]:
        pattern = value.removeprefix("^").removesuffix("$")
        if alias_pattern(pattern) is None:
            problems.append(f"{option} {value!r}: a pattern form not read")
        else:
            kept.append(pattern)
    return tuple(kept), problems


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
    slug = "".join(ch for ch in slug if not _is_emoji(ch))
    slug = re.sub(r"[A-Z]+", lambda m: m.group(0).lower(), slug)
    slug = _DOCSIFY_REMOVED.sub("", _without_tags(slug) if "<" in slug else slug)
    slug = re.sub(r"\s", "-", slug)
    return "_" + slug if slug[:1] in _ASCII_DIGITS and slug else slug


_ASCII_DIGITS = frozenset("0123456789")


def _is_emoji(ch: str) -> bool:
    r"""Whether a character is `\p{Emoji_Presentation}` or `\p{Extended_Pictographic}` (Unicode's
    emoji-data, which Python's `re` has no class for): what Docsify's slugify drops."""
    point = ord(ch)
    if point < 0xA9:
        return False
    i = bisect.bisect_right(_EMOJI_STARTS, point) - 1
    return i >= 0 and point <= _EMOJI_RANGES[i][1]


# `[\p{Emoji_Presentation}\p{Extended_Pictographic}]` as ranges, as JavaScript's engine has them
# (listed from V8 with ICU 78, Unicode 17).
_EMOJI_RANGES: tuple[tuple[int, int], ...] = tuple(
    (int(a, 16), int(b or a, 16))
    for a, _, b in (
        part.partition("-")
        for part in [
            "A9",
            "AE",
            "203C",
            "2049",
            "2122",
            "2139",
            "2194-2199",
            "21A9-21AA",
            "231A-231B",
            "2328",
            "23CF",
            "23E9-23F3",
            "23F8-23FA",
            "24C2",
            "25AA-25AB",
            "25B6",
            "25C0",
            "25FB-25FE",
            "2600-2604",
            "260E",
            "2611",
            "2614-2615",
            "2618",
            "261D",
            "2620",
            "2622-2623",
            "2626",
            "262A",
            "262E-262F",
            "2638-263A",
            "2640",
            "2642",
            "2648-2653",
            "265F-2660",
            "2663",
            "2665-2666",
            "2668",
            "267B",
            "267E-267F",
            "2692-2697",
            "2699",
            "269B-269C",
            "26A0-26A1",
            "26A7",
            "26AA-26AB",
            "26B0-26B1",
            "26BD-26BE",
            "26C4-26C5",
            "26C8",
            "26CE-26CF",
            "26D1",
            "26D3-26D4",
            "26E9-26EA",
            "26F0-26F5",
            "26F7-26FA",
            "26FD",
            "2702",
            "2705",
            "2708-270D",
            "270F",
            "2712",
            "2714",
            "2716",
            "271D",
            "2721",
            "2728",
            "2733-2734",
            "2744",
            "2747",
            "274C",
            "274E",
            "2753-2755",
            "2757",
            "2763-2764",
            "2795-2797",
            "27A1",
            "27B0",
            "27BF",
            "2934-2935",
            "2B05-2B07",
            "2B1B-2B1C",
            "2B50",
            "2B55",
            "3030",
            "303D",
            "3297",
            "3299",
            "1F004",
            "1F02C-1F02F",
            "1F094-1F09F",
            "1F0AF-1F0B0",
            "1F0C0",
            "1F0CF-1F0D0",
            "1F0F6-1F0FF",
            "1F170-1F171",
            "1F17E-1F17F",
            "1F18E",
            "1F191-1F19A",
            "1F1AE-1F1FF",
            "1F201-1F20F",
            "1F21A",
            "1F22F",
            "1F232-1F23A",
            "1F23C-1F23F",
            "1F249-1F25F",
            "1F266-1F321",
            "1F324-1F393",
            "1F396-1F397",
            "1F399-1F39B",
            "1F39E-1F3F0",
            "1F3F3-1F3F5",
            "1F3F7-1F4FD",
            "1F4FF-1F53D",
            "1F549-1F54E",
            "1F550-1F567",
            "1F56F-1F570",
            "1F573-1F57A",
            "1F587",
            "1F58A-1F58D",
            "1F590",
            "1F595-1F596",
            "1F5A4-1F5A5",
            "1F5A8",
            "1F5B1-1F5B2",
            "1F5BC",
            "1F5C2-1F5C4",
            "1F5D1-1F5D3",
            "1F5DC-1F5DE",
            "1F5E1",
            "1F5E3",
            "1F5E8",
            "1F5EF",
            "1F5F3",
            "1F5FA-1F64F",
            "1F680-1F6C5",
            "1F6CB-1F6D2",
            "1F6D5-1F6E5",
            "1F6E9",
            "1F6EB-1F6F0",
            "1F6F3-1F6FF",
            "1F7DA-1F7FF",
            "1F80C-1F80F",
            "1F848-1F84F",
            "1F85A-1F85F",
            "1F888-1F88F",
            "1F8AE-1F8AF",
            "1F8BC-1F8BF",
            "1F8C2-1F8CF",
            "1F8D9-1F8FF",
            "1F90C-1F93A",
            "1F93C-1F945",
            "1F947-1F9FF",
            "1FA58-1FA5F",
            "1FA6E-1FAFF",
            "1FC00-1FFFD",
        ]
    )
)
_EMOJI_STARTS = [a for a, _ in _EMOJI_RANGES]


def _without_tags(text: str) -> str:
    """`text.replace(/<[^>]+>/g, '')` in linear time: each `<` up to its next `>` dropped; a `<` with
    none after it (or `<>`) kept."""
    out: list[str] = []
    at = 0
    while True:
        start = text.find("<", at)
        while start >= 0 and text.startswith("<>", start):
            start = text.find("<", start + 1)  # `[^>]+` needs a character: `<>` is no tag
        end = text.find(">", start + 1) if start >= 0 else -1
        if start < 0 or end < 0:
            out.append(text[at:])
            return "".join(out)
        out.append(text[at:start])
        at = end + 1


def docsify_heading_id(text: str) -> str:
    """A heading's id on a Docsify site: its `:id=name` option's, else its text's (`docsify_slug`)."""
    option = _ID_OPTION.search(text)
    return docsify_slug(option.group(1) if option else text)
