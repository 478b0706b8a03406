"""Sites whose config is JavaScript (Docusaurus, Astro Starlight, VitePress): read, never run.

Only literal values are read: strings, and the `{...}`/`[...]` blocks behind a key (strings and comments
skipped). A string may also come from a constant of the file (`const BASE = '/docs'`), named bare
(`baseUrl: BASE`) or in a template (`baseUrl: `${BASE}/``). A value computed at build time (an
imported object, a function, an environment variable) is not evaluated: the key counts as unset, never
as its source text; where the convention lets the folders say it instead (Starlight's locale folders),
they do.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from udm.datalimits import check_text
from udm.errors import UdmError
from udm.site.model import (
    Mount,
    Site,
    UnpublishedRule,
    component_pages,
    glob_lines,
    path_of_url,
    read_head,
    static_folders,
    under,
    unpublished_rule,
    within,
)

__all__ = [
    "astro_redirect_files",
    "docs_versions_file",
    "docs_versions_files",
    "docusaurus",
    "starlight",
    "ts_aliases",
    "tsconfig_file",
    "vitepress",
    "vuepress",
    "vuepress_inputs",
]


# How many `key:` places a block is looked for at: an unclosed one is scanned to the end of the
# file, so a config with 60,000 of them (a tool may write one) took minutes at every detection.
_MAX_BLOCK_TRIES = 3


# A comment, or a string literal (a key's first: one followed by `:` stays as it is). Each is read
# one way (a character class or one escape at a time), so an unclosed one costs its length once.
_JS_TOKEN = re.compile(
    r"""(?P<key>'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*")(?=[ \t]*:)"""
    r"""|//[^\n]*|/\*(?:[^*]|\*(?!/))*(?:\*/)?"""
    r"""|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|`(?:\\.|[^`\\])*`"""
)


_NOT_NEWLINE = re.compile(r"[^\n]")


@functools.lru_cache(maxsize=16)
def _masked(text: str) -> str:
    """JavaScript with its comments and the insides of its strings blanked (same length, lines kept),
    but for strings used as keys: a `key:` found in it is one of the code, not of a comment
    (`// docs: {...}`) or a string (`editUrl: "https://x/exclude: [...]"`)."""

    def blank(m: re.Match[str]) -> str:
        token = m.group(0)
        if m.lastgroup == "key":
            return token
        if "\n" in token:  # a block comment or a template literal over lines: its lines stay lines
            out = _NOT_NEWLINE.sub(" ", token)
            return token[0] + out[1:-1] + token[-1] if token[0] in "'\"`" else out
        # A string keeps its quotes (a value still follows its key); a comment is all blanks.
        return token[0] + " " * (len(token) - 2) + token[-1] if token[0] in "'\"`" else " " * len(token)

    return _JS_TOKEN.sub(blank, text) if any(c in text for c in "'\"`/") else text


def _js_block(text: str, key: str) -> str | None:
    """The `{...}` or `[...]` value of the first `key:` in JavaScript source (one in a comment or a
    string is none; strings and comments inside the value are skipped)."""
    return _value_at(text, _masked(text), key, _MAX_BLOCK_TRIES)


def _value_at(text: str, searched: str, key: str, tries: int) -> str | None:
    """The `{...}` or `[...]` value of the first of `tries` places where `searched` (`text` with
    what is not to be searched blanked, same length) holds `key:`, that closes in `text`."""
    found = re.finditer(rf"(?<![\w$.])(['\"]?){re.escape(key)}\1\s*:\s*([\[{{])", searched)
    for match in itertools.islice(found, tries):
        start = match.start(2)
        end = _balanced(text, start)
        if end is not None:
            return text[start : end + 1]
    return None


# Everything up to the next bracket, strings and comments included, in one regex step: a long array
# of strings costs one pass in C rather than a Python step per string. A quote or comment start it
# stops at is one never closed (a `//` comment needs its line's end). The alternatives start with
# different characters and nothing follows the star, so a failing match never backtracks.
_TO_BRACKET = re.compile(
    r"""(?:[^\[\]{}()'"`/]+|'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"|`(?:\\.|[^`\\])*`"""
    r"""|//[^\n]*(?=\n)|/\*(?:[^*]|\*(?!/))*\*/|/(?![/*]))*""",
    re.S,
)
_STRING_REST = {q: re.compile(rf"(?:\\.|[^{q}\\])*{q}", re.S) for q in "'\"`"}


def _balanced(text: str, start: int) -> int | None:
    """The index of the bracket that closes the one at `start` (strings and comments skipped), None
    when it is never closed."""
    depth = 1
    i = start + 1
    while True:
        i = _TO_BRACKET.match(text, i).end()  # type: ignore[union-attr]  # a star: it always matches
        if i >= len(text) or text[i] not in "[]{}()":
            return None  # the end, or a string or comment never closed
        depth += 1 if text[i] in "[{(" else -1
        if depth == 0:
            return i
        i += 1


def _own_level(block: str) -> str:
    """A `{...}` block with its nested blocks and its comments blanked out (same length), so the keys
    found in it are its own."""
    return _blanked(block, nested=True)


def _without_comments(text: str) -> str:
    """JavaScript with its comments blanked out (same length): a commented-out setting is not one."""
    return _blanked(text, nested=False) if "//" in text or "/*" in text else text


# What `_blanked` looks at: a string's or comment's start, and (when nested) a bracket.
_BLANK_STOP = re.compile(r"""['"`]|//|/\*""")
_BLANK_STOP_NESTED = re.compile(r"""['"`]|//|/\*|[\[{(]""")


def _blanked(block: str, *, nested: bool) -> str:
    """`block` with its comments (and, when `nested`, the insides of its nested blocks) blanked."""
    if not block:
        return block
    out = list(block)
    stops = _BLANK_STOP_NESTED if nested else _BLANK_STOP
    i = 1 if nested else 0
    stop = len(block) - 1 if nested else len(block)
    while i < stop:
        m = stops.search(block, i)
        if m is None or m.start() >= stop:
            break
        i = m.start()
        c = block[i]
        if c in "'\"`":
            rest = _STRING_REST[c].match(block, i + 1)
            if rest is None:
                break
            i = rest.end()
            continue
        if c == "/":
            end = block.find("\n" if block[i + 1] == "/" else "*/", i + 2)
            if end < 0:
                end = len(block)
            elif block[i + 1] == "*":
                end += 2
            out[i:end] = " " * (end - i)
            i = end
            continue
        close = _balanced(block, i)
        if close is None:
            break
        out[i + 1 : close] = " " * (close - i - 1)
        i = close + 1
    return "".join(out)


def _js_string(text: str, key: str, consts: dict[str, str] | None = None) -> str | None:
    """The string value of the first `key:`: a literal, a template or a constant of `consts`."""
    # A string's characters are `\\x` or one that is neither the quote nor a backslash: read one way
    # only, so an unclosed string of backslashes is not tried in every split (exponential).
    # A key may be quoted (`"routeBasePath": "/"`, pnpm's config), as JavaScript allows.
    masked = _masked(text)
    found = re.finditer(
        rf"(?<![\w$.])(['\"]?){re.escape(key)}\1\s*:\s*"
        rf"(?:(['\"`])((?:\\.|(?!\2)[^\\\n])*)\2|([A-Za-z_$][\w$]*)\s*[,}}\n])",
        text,
    )
    # The first whose key is code (not in a comment or another string: the masked text holds it too);
    # `width` spans the key and its quotes, if it has them.
    width = len(key) + 2
    match = next(
        (
            m
            for m in itertools.islice(found, 50)
            if masked[m.start() : m.start() + width] == text[m.start() : m.start() + width]
        ),
        None,
    )
    if match is None:
        return None
    if match.group(4) is not None:
        return (consts or {}).get(match.group(4))
    return _template(match.group(3), consts or {}) if match.group(2) == "`" else match.group(3)


# `const NAME = '...'` (or let/var) at the start of a line: the constants a config builds values from.
_CONST = re.compile(
    r"""^[ \t]*(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=\s*(['"`])((?:\\.|(?!\2)[^\\\n])*)\2""",
    re.M,
)
_PLACEHOLDER = re.compile(r"\$\{\s*([A-Za-z_$][\w$]*)\s*\}")
_MAX_CONSTS = 200
# A route or base path is short; a template doubling a constant 200 times is not (2**200 characters).
_MAX_VALUE = 2048


def _consts(text: str) -> dict[str, str]:
    """The file's string constants, in order (a template may use the ones before it)."""
    found: dict[str, str] = {}
    for match in itertools.islice(_CONST.finditer(text), _MAX_CONSTS):
        name, quote, value = match.groups()
        resolved = _template(value, found) if quote == "`" else value
        if resolved is not None:
            found.setdefault(name, resolved)
    return found


def _template(value: str, consts: dict[str, str]) -> str | None:
    """A template literal with each `${NAME}` a known constant; None when any other expression is in it."""
    if len(value) > _MAX_VALUE:
        return None
    out = _PLACEHOLDER.sub(lambda m: consts.get(m.group(1), "\0"), value)
    return None if "\0" in out or "${" in out or len(out) > _MAX_VALUE else out


def _js_strings(text: str) -> list[str]:
    """The string literals of JavaScript source, in order (none of a comment)."""
    code = _without_comments(text)
    return [m.group(2) for m in re.finditer(r"(['\"`])((?:\\.|(?!\1)[^\\\n])*)\1", code)]


def docusaurus(root: Path, here: Path, text: str) -> Site:
    """Docusaurus: the docs, pages and blog folders with their route bases, client redirects, static/."""
    # docusaurus.config.* is JavaScript: read the few literal settings that shape routes.
    consts = _consts(text)
    docs = _js_block(text, "docs") or ""
    own = _own_level(docs)  # `path:` inside `versions: {current: {path}}` is not the docs folder
    docs_path = _js_string(own, "path", consts) or "docs"
    route_base = _js_string(own, "routeBasePath", consts) if docs else None
    route_base = "docs" if route_base is None else route_base.strip("/")
    blog_block = _js_block(text, "blog") or ""
    blog = _own_level(blog_block)
    blog_base = (_js_string(blog, "routeBasePath", consts) or "blog").strip("/")
    pages_block = _js_block(text, "pages") or ""
    rules: list[UnpublishedRule | None] = []
    blog_dir = here / (_js_string(blog, "path") or "blog")
    mounts = [
        *_docs_versions(root, here, docs, own, docs_path, route_base, consts, rules=rules),
        *_docs_instances(root, here, text, consts, rules),
        under(root, here / "src" / "pages", "", "pages", False),
        under(root, blog_dir, blog_base, "blog", False),
    ]
    rules += [
        unpublished_rule("pages", root, [here / "src" / "pages"], "gitignore", _excluded_globs(pages_block)),
        unpublished_rule("blog", root, [blog_dir], "gitignore", _excluded_globs(blog_block)),
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
    site_dir, root_in_site = (
        Path(os.path.relpath(a.resolve(), b.resolve())).as_posix() for a, b in ((here, root), (root, here))
    )
    return Site(
        mounts=tuple(m for m in mounts if m is not None),
        base_path=path_of_url(_js_string(text, "baseUrl", consts)),
        redirects=tuple(redirects),
        static=static_folders(root, [here / "static"]),
        site_folder=("" if site_dir == "." else site_dir, "" if root_in_site == "." else root_in_site),
        unpublished=tuple(r for r in rules if r is not None),
    )


# What a Docusaurus content plugin (docs, blog, pages) builds no page from unless its `exclude` says
# otherwise: partials and their folders (`_setup.mdx`, `_parts/`), tests.
_DOCUSAURUS_EXCLUDE = (
    "**/_*.{js,jsx,ts,tsx,md,mdx}",
    "**/_*/**",
    "**/*.test.{js,jsx,ts,tsx}",
    "**/__tests__/**",
)


_SPREAD = re.compile(r"\.\.\.\s*[A-Za-z_$(\[]")


def _own_value(block: str, key: str) -> str | None:
    """The `[...]` or `{...}` value of `key` at the block's own level (not a nested block's key, nor
    one in a comment or a string)."""
    return _value_at(block, _own_level(_masked(block)), key, 1)


def _excluded_globs(block: str) -> list[str]:
    """The `.gitignore` lines of a Docusaurus content plugin's `exclude` (the defaults when it sets
    none; with the defaults when it spreads a list the config computes, `[...defaultExclude, 'x']`)."""
    value = _own_value(block, "exclude") if block else None
    if value is None or not value.startswith("["):
        globs = list(_DOCUSAURUS_EXCLUDE)
    else:
        globs = _js_strings(value)[:200]
        if _SPREAD.search(_masked(value)):
            globs = [*_DOCUSAURUS_EXCLUDE, *globs]
    return [line for glob in globs for line in glob_lines(glob)]


# How many released versions of the docs are read from versions.json (each is a mount).
_MAX_VERSIONS = 100


def _json_file(path: Path, what: str, *, jsonc: bool = False) -> Any:
    """A JSON file a site's config reads beside it (untrusted: 1 MiB and the data limits); None when
    it is absent or cannot be read. `jsonc`: comments and trailing commas allowed, as TypeScript reads."""
    try:
        raw = read_head(path, 1 << 20)
        if len(raw) > 1 << 20:
            return None
        text = raw.decode("utf-8")
        if jsonc:
            text = re.sub(r",(\s*[}\]])", r"\1", _without_comments(text))
        check_text(text, "json", what=what)
        return json.loads(text)
    except (OSError, ValueError, UdmError):  # absent, unreadable, not JSON, past the data limits
        return None


# Further docs plugin instances read from one config: a site has a handful; each is a mount that
# every absolute link may be tried against.
_MAX_INSTANCES = 50


def docs_versions_file(here: Path, instance: str = "") -> Path:
    """Docusaurus' list of released docs versions, beside its config (`<id>_versions.json` for a
    docs plugin instance other than the default)."""
    return here / f"{instance}versions.json"


def docs_versions_files(here: Path) -> list[Path]:
    """Every list of released docs versions a Docusaurus config may read: the default docs' and each
    further instance's (as many as instances are read)."""
    return [docs_versions_file(here), *sorted(here.glob("*_versions.json"))[:_MAX_INSTANCES]]


def _released_versions(here: Path, instance: str = "") -> list[str]:
    """The versions in versions.json, newest first ([] when there is none or it cannot be read)."""
    data = _json_file(docs_versions_file(here, instance), f"{instance}versions.json")
    if not isinstance(data, list):
        return []
    names = [v for v in data if isinstance(v, str) and v.strip() and "/" not in v and ".." not in v]
    return names[:_MAX_VERSIONS]


def _docs_versions(
    root: Path,
    here: Path,
    docs: str,
    own: str,
    docs_path: str,
    route_base: str,
    consts: dict[str, str],
    instance: str = "",
    rules: list[UnpublishedRule | None] | None = None,
) -> list[Mount | None]:
    """The docs mounts: the current docs and each released version (`versioned_docs/version-<v>`);
    `docs` is the docs options block, `own` its own level (`_own_level`); `instance` is `<id>_` for
    a docs plugin instance other than the default (`<id>_versions.json`, `<id>_versioned_docs/`).

    With released versions, the last one (`lastVersion`, else the newest) is served at the route
    base and the others under `<base>/<version>`; the current docs under `<base>/next` unless they are
    the last version or `versions.current.path` says where.
    """
    versions = _released_versions(here, instance)
    last = _js_string(own, "lastVersion", consts) or (versions[0] if versions else "current")
    current = _own_level(_js_block(_js_block(docs, "versions") or "", "current") or "")
    current_path = _js_string(current, "path", consts)
    if current_path is None:
        current_path = "" if last == "current" else "next"
    mounts = [under(root, here / docs_path, _route(route_base, current_path), "docs", True)]
    folders = [here / docs_path]
    for version in versions:
        folder = here / f"{instance}versioned_docs" / f"version-{version}"
        folders.append(folder)
        mounts.append(
            under(root, folder, _route(route_base, "" if version == last else version), "docs", True)
        )
    if rules is not None:
        # Each version is built with the instance's options: its `exclude` holds for all of them.
        lines = _excluded_globs(docs)
        rules.append(unpublished_rule(f"docs:{instance}", root, folders, "gitignore", lines))
    return mounts


# The docs plugin's name (in full, or the shorthand `content-docs`) and then its options, in one
# `[name, {...}]` entry of `plugins`.
_DOCS_PLUGIN = re.compile(r"""['"`](?:@docusaurus/plugin-|docusaurus-plugin-)?content-docs['"`]\s*,\s*\{""")


def _docs_instances(
    root: Path,
    here: Path,
    text: str,
    consts: dict[str, str],
    rules: list[UnpublishedRule | None] | None = None,
) -> list[Mount | None]:
    """The mounts of each further docs plugin instance, `['@docusaurus/plugin-content-docs', {id, path,
    routeBasePath}]` in `plugins` (React Native's architecture and contributing docs), with its own
    released versions (`<id>_versions.json`)."""
    mounts: list[Mount | None] = []
    for match in itertools.islice(_DOCS_PLUGIN.finditer(text), _MAX_INSTANCES):
        start = match.end() - 1
        end = _balanced(text, start)
        if end is None:
            break  # never closed: the rest of the file lies inside it, and each later try would rescan it
        block = text[start : end + 1]
        own = _own_level(block)
        ident = _js_string(own, "id", consts)
        if not ident or ident == "default" or "/" in ident or ".." in ident:
            continue  # the default instance is the preset's; an id is part of file names
        path = _js_string(own, "path", consts) or "docs"
        base = _js_string(own, "routeBasePath", consts)
        base = "docs" if base is None else base.strip("/")
        mounts += _docs_versions(root, here, block, own, path, base, consts, f"{ident}_", rules)
    return mounts


def _route(*parts: str) -> str:
    return "/".join(p.strip("/") for p in parts if p.strip("/"))


# How many tsconfig `paths` aliases are kept (each is tried on every link that starts with `@` or `~`).
_MAX_ALIASES = 50


def tsconfig_file(here: Path) -> Path:
    """The TypeScript config beside a site's config: its `paths` are the aliases images import by."""
    return here / "tsconfig.json"


def ts_aliases(root: Path, here: Path) -> tuple[tuple[str, str], ...]:
    """`compilerOptions.paths` of tsconfig.json (`"@assets/*": ["src/assets/*"]`) as (prefix, folder
    relative to `root`), for the wildcard aliases; () when there is none or it cannot be read."""
    data = _json_file(tsconfig_file(here), "tsconfig.json", jsonc=True)
    options = data.get("compilerOptions") if isinstance(data, dict) else None
    paths = options.get("paths") if isinstance(options, dict) else None
    if not isinstance(paths, dict):
        return ()
    base = here / str(options.get("baseUrl") or ".") if isinstance(options, dict) else here
    out: list[tuple[str, str]] = []
    for alias, targets in paths.items():
        if not (isinstance(alias, str) and alias.endswith("/*") and isinstance(targets, list) and targets):
            continue
        target = targets[0]
        if not isinstance(target, str) or not target.endswith("/*") or "\0" in target:
            continue
        absolute = os.path.normpath(base / target[:-2])
        if not within(absolute, here):
            # The file is untrusted input: an alias into the rest of the machine would let a link
            # ask whether any file exists there.
            continue
        folder = os.path.relpath(absolute, os.path.normpath(root))
        out.append((alias[:-1], folder.replace(os.sep, "/")))
    return tuple(out[:_MAX_ALIASES])


# A top-level folder of Starlight's content that names a locale (BCP 47: `en`, `pt-br`, `zh-Hant`).
_LOCALE_FOLDER = re.compile(r"^[a-z]{2,3}(?:-[a-z0-9]{2,8})*$", re.IGNORECASE)
_MAX_LOCALES = 100
_TWO_LETTER_LOCALE = re.compile(r"^[a-z]{2}(?:-[a-z0-9]{2,8})*$", re.IGNORECASE)
_JS_KEY = re.compile(r"""(?:^|[{,])\s*(?:(['"])([^'"]+)\1|([A-Za-z_$][\w$-]*))\s*:""")


def _js_keys(block: str) -> list[str]:
    """The keys of a literal `{...}` object, its own level only (nested values skipped)."""
    return [m.group(2) or m.group(3) for m in _JS_KEY.finditer(_own_level(block))]


def starlight(root: Path, here: Path, text: str) -> Site:
    """Astro Starlight: pages in `src/content/docs`, `public/` at the site root, locale fallback routes."""
    content = here / "src" / "content" / "docs"
    options = text[text.find("starlight(") :] if "starlight(" in text else text
    default = _js_string(options, "defaultLocale")
    block = _js_block(options, "locales")
    imported = None if block is not None else _imported_locales(text, options, here)
    if block is not None and block.startswith("{"):
        locales = _js_keys(block)
    elif imported is not None:
        locales = imported  # a constant, or `import locales from './locales.json'` (tauri's docs)
    else:
        # `locales: localesConfig` (imported): the locale folders of the content say which there are.
        try:
            locales = sorted(p.name for p in content.iterdir() if p.is_dir() and _LOCALE_FOLDER.match(p.name))
        except OSError:
            locales = []
        if default == "root":
            # The root locale is the content folder itself; beside it, three-letter folders are more
            # often sections (`api`, `cli`) than languages: two letters, with a region or script.
            locales = ["root", *(loc for loc in locales if _TWO_LETTER_LOCALE.match(loc))]
        elif default is None or default not in locales:
            locales = []
    if default is None:
        default = "root" if "root" in locales or not locales else locales[0]
    # An untranslated page is served at its locale's route with the default locale's content.
    to = "" if default == "root" else default
    redirects = [
        (f"/{loc}/:slug*", f"/{to}/:slug*" if to else "/:slug*")
        for loc in locales
        if loc not in ("root", default)
    ]
    redirects += _astro_redirects(text, here)
    # Astro serves its own pages and endpoints beside the content (`src/pages/feed.xml.ts`).
    mounts = [
        under(root, content, "", "docs", False),
        under(root, here / "src" / "pages", "", "pages", False),
    ]
    return Site(
        mounts=tuple(m for m in mounts if m is not None),
        base_path=path_of_url(_js_string(text, "base", _consts(text))),
        aliases=ts_aliases(root, here),
        redirects=tuple(redirects),
        static=static_folders(root, [here / "public"]),
        # Starlight's content loader takes `**/[^_]*.{md,mdx,...}` (picomatch, dot files left out): a
        # file named `_x.md` or `.x.md`, or one in a dot folder, is no page.
        unpublished=tuple(
            r
            for r in [
                unpublished_rule("docs", root, [content], "name", ["_*", ".*"]),
                unpublished_rule("docs", root, [content], "gitignore", [".*/"]),
            ]
            if r is not None
        ),
    )


def _imported_locales(text: str, options: str, here: Path) -> list[str] | None:
    """The keys of the object the `locales` option names (`locales` or `locales: name`): a constant of
    the config (`const locales = {...}`), or the JSON file it is imported from (`import locales from
    './locales.json'`) when that is one beside the config; else None."""
    # No two `\s*` side by side: a run of spaces is read one way (it took seconds for 40,000).
    used = re.search(r"(?<![\w$.])locales\s*(?::\s*([A-Za-z_$][\w$]*)\s*)?[,}\n]", options)
    if used is None:
        return None
    name = used.group(1) or "locales"
    # `export const locales = {root: {...}, de: {...}}` in the config itself (Starlight's own docs).
    const = re.search(rf"(?:const|let|var)\s+{re.escape(name)}\s*=\s*\{{", text)
    if const is not None:
        end = _balanced(text, const.end() - 1)
        if end is not None:
            return _js_keys(text[const.end() - 1 : end + 1])[:_MAX_LOCALES]
    path = _imported_file(text, name, here, r"json")
    if path is None:
        return None  # only a file of the site's own folder
    data = _json_file(path, "the locales file")
    return [k for k in data if isinstance(k, str)][:_MAX_LOCALES] if isinstance(data, dict) else None


def _astro_redirects(text: str, here: Path | None = None) -> list[tuple[str, str]]:
    """Astro's `redirects: {'/old': '/new'}` (a destination object's `destination` too), with the
    objects it spreads from files beside the config (`...redirects` imported from a generated
    `./redirects.js`, Biome's site) when `here`, the config's folder, is given.

    Keys are taken as JavaScript builds the object: in the order they first appear, a later value of
    a key (its own or spread) replacing an earlier one."""
    block = _redirects_block(text)
    if not block:
        return []
    parts: list[tuple[int, list[tuple[str, str]]]] = [(at, [pair]) for at, pair in _redirect_pairs(block)]
    for at, path in _spreads(text, block, here) if here is not None else []:
        try:
            raw = read_head(path, _MAX_SPREAD_BYTES)
        except OSError:
            continue
        if len(raw) > _MAX_SPREAD_BYTES:
            continue
        source = raw.decode("utf-8", "replace")
        exported = source if path.suffix == ".json" else _config_object(source)
        if exported:
            parts.append((at, [pair for _, pair in _redirect_pairs(_without_comments(exported))]))
    merged: dict[str, str] = {}
    for _, pairs in sorted(parts, key=lambda part: part[0]):
        merged.update(pairs)
    return list(merged.items())


def _redirects_block(text: str) -> str | None:
    """The `redirects: {...}` object of an Astro config, comments left out."""
    found = re.search(r"(?<![\w$.])redirects\s*:\s*\{", text)
    block = _js_block(text[found.start() :], "redirects") if found else None
    return _without_comments(block) if block else block


# A generated redirects file is a few hundred KiB at most; a handful are spread into one object.
_MAX_SPREAD_BYTES = 1 << 20
_MAX_SPREADS = 5


def astro_redirect_files(here: Path, text: str) -> list[Path]:
    """The files beside an Astro config whose objects its `redirects` spread (for the site's stamp)."""
    block = _redirects_block(text)
    return list(dict.fromkeys(path for _, path in _spreads(text, block, here))) if block else []


# A spread `...name` of JavaScript; a string is matched whole so that the `...` of a route's rest
# parameter (`'/blog/[...slug]'`) is no spread.
_SPREAD_NAME = re.compile(
    r"""'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|`(?:\\.|[^`\\])*`|\.\.\.\s*([A-Za-z_$][\w$]*)"""
)


def _spreads(text: str, block: str, here: Path) -> list[tuple[int, Path]]:
    """(offset in `block`, file) of each `...name` of the first few there that the config imports
    (`import name from './x.js'`) from a file of its own folder."""
    found: dict[str, int] = {}
    for m in _SPREAD_NAME.finditer(block):
        if m.group(1) is not None:
            found.setdefault(m.group(1), m.start())
            if len(found) == _MAX_SPREADS:
                break
    code = _without_comments(text)  # a commented-out import names no file
    spreads: list[tuple[int, Path]] = []
    for name, at in found.items():
        path = _imported_file(code, name, here, r"m?js|json")
        if path is not None and path.is_file():
            spreads.append((at, path))
    return spreads


def _imported_file(text: str, name: str, here: Path, suffixes: str) -> Path | None:
    """The file a config imports `name` from (`import name from './x.json'`, its suffix one of the
    alternatives `suffixes`), when it is a file of the config's own folder; else None."""
    source = re.search(
        rf"import\s+{re.escape(name)}\s+from\s+['\"](\.{{1,2}}/[^'\"\n]+\.(?:{suffixes}))['\"]", text
    )
    if source is None:
        return None
    path = (here / source.group(1)).resolve()
    return path if within(path, here.resolve()) else None


def _redirect_pairs(block: str) -> list[tuple[int, tuple[str, str]]]:
    """(offset, pair) of the `'/from': '/to'` (or `{destination: '/to'}`) pairs of a redirects object."""
    pairs = re.finditer(
        # The first `destination` of an object is its own, taken once (atomic): trying every later
        # one made an object of 4,000 of them quadratic.
        r"""(['"])(/[^'"]*)\1\s*:\s*(?:(['"])([^'"]+)\3|\{(?>[^{}]*?destination\s*:\s*(['"])([^'"]+)\5)[^{}]*\})""",
        block,
    )
    return [(m.start(), (m.group(2), m.group(4) or m.group(6))) for m in pairs]


_MAX_REWRITES = 500
# One `'source': 'destination'` pair of string literals.
_STRING_PAIR = re.compile(r"""(['"])([^'"\n]{1,500})\1\s*:\s*(['"])([^'"\n]{0,500})\3""")


def _vitepress_rewrites(text: str) -> list[tuple[str, str]]:
    """VitePress's `rewrites: {'en/:rest*': ':rest*'}` (a `rewrites` function is not read)."""
    block = _js_block(_without_comments(text), "rewrites")
    if not block or not block.startswith("{"):
        return []
    pairs = _STRING_PAIR.finditer(_own_level(block))
    return [(m.group(2), m.group(4)) for m in itertools.islice(pairs, _MAX_REWRITES)]


_EXPORTED = re.compile(r"(?:export\s+default|module\.exports\s*=)\s*(?:defineConfig\s*\(\s*)?\{")


# Where a config's default export starts: `export default ...`, `module.exports = ...`.
_EXPORT_START = re.compile(r"(?<![\w$.])(?:export\s+default|module\.exports\s*=)\s*")
_NAME = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
_MAX_WRAPPERS = 4


def _named_config_object(text: str) -> str | None:
    """The object a config exports through wrappers or by a name: `export default
    withMermaid(defineConfig({...}))`, `const config = defineConfig({...}); export default
    extendConfig(config)` (a declaration of the file's top level, not one inside a function); None
    when it is no literal object of the file. Read in linear time."""
    masked = _masked(text)
    found = _EXPORT_START.search(masked)
    if found is None:
        return None
    start, name = _object_after(masked, found.end())
    if start is None and name is not None:
        # The file's top level only: the insides of its blocks and calls blanked.
        top = _blanked("{" + masked + "}", nested=True)[1:-1]
        declared = re.search(
            rf"(?<![\w$.])(?:const|let|var)\s+{re.escape(name)}\s*(?::[^=\n]{{0,100}})?=\s*", top
        )
        start = _object_after(masked, declared.end())[0] if declared else None
    end = _balanced(text, start) if start is not None else None
    return None if start is None or end is None else text[start : end + 1]


def _object_after(masked: str, at: int) -> tuple[int | None, str | None]:
    """What an expression at `at` is: the index of the `{` of the object literal it is or wraps in
    calls (`defineConfig({`, `a(b({`), else the name it passes on (`wrap(config)`, `config`)."""
    for _ in range(_MAX_WRAPPERS):
        while at < len(masked) and masked[at] in " \t\r\n":
            at += 1
        if masked.startswith("{", at):
            return at, None
        word = _NAME.match(masked, at)
        if word is None:
            return None, None
        at = word.end()
        while at < len(masked) and masked[at] in " \t\r\n":
            at += 1
        if not masked.startswith("(", at):
            return None, word.group(0) if "." not in word.group(0) else None
        at += 1
    return None, None


def _config_object(text: str) -> str | None:
    """The object a JavaScript config exports (`export default defineConfig({...})`), None when it
    exports a name or a call (`export default config`)."""
    found = _EXPORTED.search(_masked(text))
    end = _balanced(text, found.end() - 1) if found else None
    return None if found is None or end is None else text[found.end() - 1 : end + 1]


_VUEPRESS_VERSION = re.compile(r'"vuepress"\s*:\s*"[~^>=v ]*(\d+|next)')


# A `slugify` option (`markdown: {anchor: {slugify}}`, `'slugify': (s) => ...`, `slugify(s) {...}`, a
# markdown-it anchor plugin given one): heading ids made by code the config holds. Not a call of some
# slugify (`slugify(p)` building sidebar links), its import or the word in a string.
_SLUGIFY_OPTION = re.compile(
    r"""(?<![\w$.])(['"]?)slugify\1\s*:|(?<![\w$.])slugify\s*\([^()]{0,200}\)\s*\{|[{,]\s*slugify\s*[,}]"""
)
# Braces that bind names, not an object: `import { slugify } from`, `const { slugify } = ...`.
_BINDING = re.compile(r"""(?:\bimport|\bexport|\b(?:const|let|var))\s*\{[^{}]{0,2000}\}""")


def _custom_slug(text: str) -> bool:
    """Whether the config gives heading ids a slugify of its own (code, not a comment or string)."""
    if "slugify" not in text:
        return False
    return _SLUGIFY_OPTION.search(_BINDING.sub("", _masked(text))) is not None


def vuepress_major(project: Path, text: str) -> int:
    """VuePress' major version: 2 where the config uses 2's API (`defineUserConfig`, a bundler), 1
    where it imports 1's types (`vuepress/config`) or is a CommonJS object; else by the `vuepress`
    dependency of a `package.json` at or above the source folder (2 when none says)."""
    if re.search(r"defineUserConfig|@vuepress/bundler|(?:vite|webpack)Bundler\s*\(", text):
        return 2
    if re.search(r"['\"]vuepress/config['\"]", text):
        return 1
    for folder in [project, *project.parents][:4]:
        try:
            found = _VUEPRESS_VERSION.search(
                read_head(folder / "package.json", 1 << 20).decode("utf-8", "replace")
            )
        except OSError:
            continue
        if found is not None:
            return 1 if found.group(1) == "1" else 2
    return 1 if "module.exports" in text else 2


def vuepress_inputs(config: Path) -> list[Path]:
    """The files a VuePress site's routes are read from: the config, and VuePress 1's `.vue` pages
    (one added or removed moves a route)."""
    project = config.parent.parent if config.parent.name == ".vuepress" else config.parent
    try:
        text = read_head(config, 1 << 20).decode("utf-8", "replace")
    except OSError:
        return [config]
    if config.suffix.lower() not in (".yml", ".toml") and vuepress_major(project, text) != 1:
        return [config]
    return [config, *(project / f for _, f in component_pages(project, project, (".vue",)))]


def vuepress(root: Path, here: Path, text: str) -> Site:
    """VuePress (1 and 2): `.vuepress/` in the source folder, whose Markdown files are the pages
    (`README.md` or `index.md` a folder's, `x.md` at `/x.html`, VuePress 1's `.vue` files too);
    `.vuepress/public` at the root; heading ids by VuePress 1's rule or 2's."""
    project = here.parent if here.name == ".vuepress" else here
    mount = under(root, project, "", "docs", False)
    # VuePress reads `**/*.md` but dot folders (its own `.vuepress/`) and node_modules.
    rule = unpublished_rule("docs", root, [project], "gitignore", [".*", "node_modules/"])
    exported = _config_object(text) or text
    major = vuepress_major(project, text)
    return Site(
        mounts=(mount,) if mount else (),
        base_path=path_of_url(_js_string(_own_level(exported), "base", _consts(text))),
        static=static_folders(root, [project / ".vuepress" / "public"]),
        unpublished=(rule,) if rule else (),
        heading_ids="custom" if _custom_slug(text) else "vuepress1" if major == 1 else "github",
        html_pages=component_pages(root, project, (".vue",)) if major == 1 else (),
    )


# A module of the config's own, imported by a relative path: `import { shared } from './shared'`,
# `import('./en.mjs')`, `require('../x')`.
_LOCAL_IMPORT = re.compile(
    r"""(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*)(['"])(\.{1,2}/[^'"\n]{1,200})\1"""
)
_MODULE_SUFFIXES = (
    "",
    ".ts",
    ".mts",
    ".js",
    ".mjs",
    ".cts",
    ".cjs",
    "/index.ts",
    "/index.mts",
    "/index.js",
    "/index.mjs",
)
_MAX_IMPORTS = 10


def local_imports(folder: Path, text: str, within: Path) -> list[Path]:
    """The modules a config in `folder` imports by a relative path, and those they import in turn
    (see `_local_modules`)."""
    return list(_local_modules(folder, text, within))


def _local_modules(folder: Path, text: str, within: Path) -> dict[Path, str]:
    """The modules a config in `folder` imports by a relative path, and those they import in turn
    (three levels, at most ten files), with their text ("" for one that cannot be read), as the
    bundler finds them: a suffix added, a folder's index, a `.js` import of a `.ts` module (Vite's
    `isPossibleTsOutput`); only inside `within` (VitePress' `.vitepress` folder), by the path as
    written and the real one (a symbolic link out is not read)."""
    found: dict[Path, str] = {}
    limit = os.path.join(os.path.normpath(within), "")
    real_limit = os.path.join(os.path.realpath(within), "")
    level = [(folder, text)]
    for _ in range(_IMPORT_LEVELS):
        following: list[tuple[Path, str]] = []
        for here, code in level:
            for module in _imported(here, code, limit, real_limit):
                if module in found or len(found) >= _MAX_IMPORTS:
                    continue
                try:
                    found[module] = read_head(module, 1 << 20).decode("utf-8", "replace")
                except OSError:
                    found[module] = ""
                    continue
                following.append((module.parent, found[module]))
        level = following
    return found


_IMPORT_LEVELS = 3
_MAX_IMPORT_STATEMENTS = 200


def _imported(folder: Path, text: str, limit: str, real_limit: str) -> list[Path]:
    """The files one module's relative imports name, inside the limits (see `local_imports`)."""
    out: list[Path] = []
    for m in itertools.islice(_LOCAL_IMPORT.finditer(_without_comments(text)), _MAX_IMPORT_STATEMENTS):
        base = os.path.normpath(os.path.join(folder, m.group(2)))
        stem, dot, ext = base.rpartition(".")
        # `./shared.js` written for `shared.ts` (TypeScript's ESM style): the bundler tries the source.
        typed = [f"{stem}.{t}" for t in _TS_FOR.get(ext, ())] if dot and "/" not in ext else []
        for candidate in [*(base + suffix for suffix in _MODULE_SUFFIXES), *typed]:
            if not candidate.startswith(limit) or not os.path.isfile(candidate):
                continue
            if os.path.realpath(candidate).startswith(real_limit):
                out.append(Path(candidate))
            break
    return out


_TS_FOR = {"js": ("ts", "tsx"), "mjs": ("mts",), "cjs": ("cts",), "jsx": ("tsx",)}


def vitepress_inputs(config: Path) -> list[Path]:
    """The files a VitePress site's routes and ids are read from: the config and its own modules."""
    try:
        text = read_head(config, 1 << 20).decode("utf-8", "replace")
    except OSError:
        return [config]
    return [config, *local_imports(config.parent, text, _vitepress_folder(config.parent))]


def _vitepress_folder(here: Path) -> Path:
    """The `.vitepress` folder of a config's folder (`.vitepress/config/` for `config/index.ts`)."""
    return here.parent if here.name == "config" and here.parent.name == ".vitepress" else here


def _imports_slugify(folder: Path, text: str, within: Path) -> bool:
    """Whether a module of the config's own it imports (`./shared`) sets a slugify option."""
    return any(_custom_slug(code) for code in _local_modules(folder, text, within).values())


def vuepress_data(root: Path, here: Path, data: Any) -> Site:
    """VuePress 1 with a YAML or TOML config (`.vuepress/config.yml`): its `base`; a slugify cannot be
    written there, so heading ids are VuePress 1's."""
    base = data.get("base") if isinstance(data, dict) else None
    site = vuepress(root, here, "module.exports = {}")
    return replace(
        site, base_path=path_of_url(base) if isinstance(base, str) else "", heading_ids="vuepress1"
    )


def vitepress(root: Path, here: Path, text: str) -> Site:
    """VitePress: `.vitepress/` in the project folder, pages under `srcDir`, `<srcDir>/public` at the
    root, pages routed through `rewrites`."""
    config_dir, here = here, _vitepress_folder(here)  # `.vitepress/config/index.ts`: `.vitepress`
    project = here.parent if here.name == ".vitepress" else here
    consts = _consts(text)
    # The config's own keys, not those of a sidebar item (`{ text, base: '/reference', items }`).
    exported = _config_object(text) or _named_config_object(text)
    own = _own_level(exported) if exported else text
    content = project / (_js_string(own, "srcDir", consts) or ".")
    mount = under(root, content, "", "docs", False)
    # VitePress finds its pages by `**/*.md` under srcDir (no dot files), leaving out node_modules,
    # dist and `srcExclude`: the config's own option, not one of the same name a plugin takes.
    value = _own_value(exported, "srcExclude") if exported else _js_block(text, "srcExclude")
    excluded = _js_strings(value)[:200] if value and value.startswith("[") else []
    lines = [line for glob in ["**/node_modules/**", "**/dist/**", *excluded] for line in glob_lines(glob)]
    rule = unpublished_rule("docs", root, [content], "gitignore", [".*", *lines])
    return Site(
        mounts=(mount,) if mount else (),
        base_path=path_of_url(_js_string(own, "base", consts)),
        static=static_folders(root, [content / "public"]),
        rewrites=tuple(_vitepress_rewrites(text)),
        unpublished=(rule,) if rule else (),
        heading_ids="custom" if _custom_slug(text) or _imports_slugify(config_dir, text, here) else "github",
    )
