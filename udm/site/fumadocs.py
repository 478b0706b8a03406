"""Fumadocs sites (Next.js): `source.config.ts` declares the content collections, a `loader()` call
publishes each under its `baseUrl`, and the Next app's own pages sit beside them. Read, never run.

A collection is `export const docs = defineDocs({ dir: 'content/docs' })` (`dir` defaults to
`content/docs`) or `defineCollections({ dir })`; its pages are published where the project's
`loader({ baseUrl: '/docs', source: docs.toFumadocsSource() })` (or `createMDXSource(docs)`) says, in
TypeScript files under `lib/`, `src/lib/`, `app/` or `src/` (the first 400 read). A collection no
loader names is published under its folder's name (`content/docs` at `/docs`), as Fumadocs' templates
do. With `i18n` in the loader, a page `x.cn.mdx` is the `cn` translation of `x.mdx`, at `/cn/docs/x`
(Fumadocs' default "dot" parser; `cn` one of `defineI18n`'s literal `languages`, or, where those are
computed, a suffix whose files translate a page beside them), and a translation missing falls back to
the default language's page. Nothing linked out of the project is read, and a script's first 200 calls
only.
The app's pages (`app/[lang]/(home)/page.tsx` is `/`) are routes too: static segments only, route
groups `(name)` and a leading language segment left out. `public/` is served at the site root.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterable
from pathlib import Path

from udm.site.jsconfig import _balanced, _consts, _js_block, _js_string, _js_strings, _masked
from udm.site.model import Mount, Site, read_head, static_folders, under, within

__all__ = [
    "DOT_LANGUAGE",
    "app_folder_parts",
    "fumadocs",
    "fumadocs_inputs",
    "mount_languages",
    "next_segments",
]

_COLLECTION = re.compile(
    r"(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=\s*(defineDocs|defineCollections)\s*\("
)
_DIR_KEY = re.compile(r"(?<![\w$.])dir\s*:")
_LOADER = re.compile(r"(?<![\w$.])loader\s*\(")
_SOURCE_NAME = re.compile(
    r"([A-Za-z_$][\w$]*)\.toFumadocsSource\s*\(|createMDXSource\s*\(\s*([A-Za-z_$][\w$]*)"
)
_MAX_COLLECTIONS = 50
# The calls of one script looked at (`loader(`, `defineDocs(`): a script of thousands is no config.
_MAX_CALLS = 200
_MAX_FILES = 400
_MAX_FILE_BYTES = 256 * 1024
_SCRIPT_SUFFIXES = (".ts", ".tsx", ".mts", ".js", ".jsx", ".mjs")
_SKIPPED_DIRS = frozenset({"node_modules", ".next", ".source", "out", "dist", "build"})
_PAGE_FILES = frozenset(f"page.{ext}" for ext in ("tsx", "ts", "jsx", "js", "mdx", "md"))
# A Next route segment that is a parameter (`[slug]`, `[...slug]`, `[[...slug]]`).
_PARAM = re.compile(r"^\[.*\]$")


def _collections(text: str) -> list[tuple[str, str]]:
    """(name, folder from the config's folder) of each content collection the config defines."""
    masked = _masked(text)
    consts = _consts(text)
    found: list[tuple[str, str]] = []
    for m in itertools.islice(_COLLECTION.finditer(text), _MAX_CALLS):
        if len(found) >= _MAX_COLLECTIONS:
            break
        if masked[m.start() : m.end()] != text[m.start() : m.end()]:
            continue  # in a comment or a string
        end = _balanced(text, m.end() - 1)
        if end is None:
            break  # never closed: the calls after it are not read (each would be scanned to the end)
        block = text[m.end() : end]
        folder = _js_string(block, "dir", consts)
        if folder is None:
            if m.group(2) != "defineDocs" or _DIR_KEY.search(_masked(block)):
                continue  # a computed dir, or a collection of another kind with none: not known
            folder = "content/docs"
        folder = folder.strip()
        if os.path.isabs(folder) or ".." in folder.split("/"):
            continue  # a folder outside the project is no collection of it
        folder = folder.strip("/")
        if folder and folder != ".":
            found.append((m.group(1), folder))
    return found


def _script_files(here: Path) -> list[Path]:
    """The project's TypeScript and JavaScript files where a `loader()` may be, and the Next app's page
    files, sorted, at most a few hundred (node_modules and build output not read)."""
    found: list[Path] = []
    real = os.path.realpath(here)
    for top in ("lib", "src", "app"):
        start = here / top
        # A folder (or, below, a file) linked out of the project is not read: only the project's own
        # scripts say where its pages are published.
        if not start.is_dir() or not within(os.path.realpath(start), real):
            continue
        for current, dirs, files in os.walk(start):
            dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS and not d.startswith("."))
            for name in sorted(files):
                if not (name.endswith(_SCRIPT_SUFFIXES) or name in _PAGE_FILES):
                    continue
                path = Path(current) / name
                if path.is_symlink() and not within(os.path.realpath(path), real):
                    continue
                found.append(path)
                if len(found) >= _MAX_FILES:
                    return found
    return found


def fumadocs_inputs(config: Path) -> list[Path]:
    """The files a Fumadocs site's routes are read from: the config, the scripts, the app's pages."""
    return [config, *_script_files(config.parent)]


def _scripts(files: list[Path]) -> list[str]:
    """The texts of the scripts that may define collections (`fumadocs-mdx/macro`), call `loader()` or
    name the languages (`defineI18n`)."""
    texts: list[str] = []
    for path in files:
        if not path.name.endswith(_SCRIPT_SUFFIXES) or path.name in _PAGE_FILES:
            continue
        try:
            text = read_head(path, _MAX_FILE_BYTES).decode("utf-8", "replace")
        except OSError:
            continue
        if "loader" in text or "fumadocs-mdx" in text or "defineI18n" in text:
            texts.append(text)
    return texts


def _loaders(texts: list[str]) -> tuple[dict[str, tuple[str, bool]], bool]:
    """Each collection's `baseUrl`, and whether its loader has `i18n` (its pages' translations are
    files `x.<lang>.mdx`), by the name its loader's source names; and whether any loader has `i18n`."""
    bases: dict[str, tuple[str, bool]] = {}
    i18n = False
    for text in texts:
        if "loader" not in text:
            continue
        consts = _consts(text)
        masked = _masked(text)
        for m in itertools.islice(_LOADER.finditer(text), _MAX_CALLS):
            if masked[m.start() : m.end()] != text[m.start() : m.end()]:
                continue
            end = _balanced(text, m.end() - 1)
            if end is None:
                break  # never closed: the calls after it are not read (each would be scanned to the end)
            block = text[m.end() : end]
            base = _js_string(block, "baseUrl", consts)
            names = [a or b for a, b in _SOURCE_NAME.findall(block)]
            if base is None or not names:
                continue
            translated = re.search(r"(?<![\w$.])i18n\b", block) is not None
            i18n = i18n or translated
            for name in names:
                bases.setdefault(name, (base, translated))
    return bases, i18n


def next_segments(parts: Iterable[str]) -> list[str]:
    """A Next app folder's path as the URL's segments: route groups `(x)` and parallel routes' slots
    `@x` are none."""
    return [p for p in parts if p and not (p.startswith("(") and p.endswith(")")) and p[0] != "@"]


def app_folder_parts(here: Path, path: Path) -> tuple[str, ...] | None:
    """The folders from the Next app (`app/` or `src/app/` of the project `here`) to a page file,
    None for a file of neither."""
    for app in (here / "app", here / "src" / "app"):
        try:
            return path.parent.relative_to(app).parts
        except ValueError:
            continue
    return None


def _app_pages(root: Path, here: Path, files: list[Path]) -> tuple[tuple[str, str], ...]:
    """The Next app's static routes (route key, file from the manual root): route groups `(x)`, slots
    `@x` and a leading parameter (the language, `[lang]`) left out; a route with another parameter
    is the content's (a catch-all) or not known, and one in a private folder `_x` is none: not listed."""
    pages: list[tuple[str, str]] = []
    for path in files:
        parts = app_folder_parts(here, path) if path.name in _PAGE_FILES else None
        if parts is None or any(s.startswith("_") for s in parts):
            continue  # no page file of the app, or in a private folder `_x`: no route
        segments = next_segments(parts)
        if segments and _PARAM.match(segments[0]) and not segments[0].startswith("[..."):
            segments = segments[1:]
        if any(_PARAM.match(s) for s in segments):
            continue
        pages.append(("/".join(segments), os.path.relpath(path, root).replace(os.sep, "/")))
    return tuple(pages)


def fumadocs(root: Path, here: Path, text: str) -> Site:
    """A Fumadocs site: each content collection published under its loader's `baseUrl`, the app's pages
    at their routes, `public/` at the site root."""
    files = _script_files(here)
    scripts = _scripts(files)
    bases, any_i18n = _loaders(scripts)
    # Collections are defined in the config, or (fumadocs-mdx's macro) in the project's scripts.
    collections = [c for t in [text, *(s for s in scripts if "fumadocs-mdx" in s)] for c in _collections(t)]
    folders = dict(collections)
    configured = _i18n_languages(scripts) if any_i18n else None
    default, languages = configured or ("", set())
    if any_i18n and configured is None:
        # `languages` computed at build time: those whose files translate a page beside them.
        for name, folder in folders.items():
            if bases.get(name, ("", any_i18n))[1]:
                languages |= _translations(here / folder)
    others = sorted(languages - {default})
    mounts: list[Mount] = []
    for name, folder in folders.items():
        # A collection no loader names: under its folder's name, translated if the project is.
        base, i18n = bases.get(name, (folder.rsplit("/", 1)[-1], any_i18n))
        kind = f"fumadocs-i18n:{default}:{','.join(others)}" if i18n else "fumadocs"
        mount = under(root, here / folder, base.strip().strip("/"), kind, False)
        if mount is not None:
            mounts.append(mount)
    # A page not translated is served at its language's route with the default language's content.
    redirects = tuple((f"/{lang}/:slug*", "/:slug*") for lang in others)
    return Site(
        mounts=tuple(mounts),
        redirects=redirects,
        static=static_folders(root, [here / "public"]),
        html_pages=_app_pages(root, here, files),
    )


# A translation's file name: `page.cn.mdx`, `index.pt-BR.md`.
DOT_LANGUAGE = re.compile(r"^(.+)\.([a-z]{2,3}(?:-[A-Za-z0-9]{2,8})?)$")
_MAX_NAMES = 20_000
_I18N = re.compile(r"(?<![\w$.])defineI18n\s*\(")


def mount_languages(kind: str) -> tuple[str, frozenset[str]]:
    """The default language and the other languages of a Fumadocs mount's kind (`fumadocs-i18n:en:cn,ja`);
    ("", empty) for a collection without translations."""
    _, _, rest = kind.partition(":")
    default, _, others = rest.partition(":")
    return default, frozenset(o for o in others.split(",") if o)


def _i18n_languages(texts: list[str]) -> tuple[str, set[str]] | None:
    """The default language and the languages `defineI18n({ defaultLanguage, languages: [...] })`
    names as literals, or None when no script names them so (computed at build time)."""
    for text in texts:
        for m in itertools.islice(_I18N.finditer(text), _MAX_CALLS):
            end = _balanced(text, m.end() - 1)
            if end is None:
                break
            block = text[m.end() : end]
            listed = _js_block(block, "languages")
            if listed is None or not listed.startswith("["):
                continue
            languages = {s for s in _js_strings(listed) if DOT_LANGUAGE.match(f"x.{s}")}
            if languages:
                return _js_string(block, "defaultLanguage") or "", languages
    return None


def _translations(folder: Path) -> set[str]:
    """The languages of a collection's translations, told by its files' names (the first 20,000): a
    suffix is a language where a file `x.<lang>.mdx` translates a page `x.mdx` beside it (so that
    `node.js.mdx` alone is no translation)."""
    found: set[str] = set()
    seen = 0
    for _current, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS]
        pages = {name.rpartition(".")[0] for name in files if name.lower().endswith((".md", ".mdx"))}
        for stem in pages:
            seen += 1
            m = DOT_LANGUAGE.match(stem)
            if m is not None and m.group(1) in pages:
                found.add(m.group(2))
            if seen >= _MAX_NAMES:
                return found
    return found
