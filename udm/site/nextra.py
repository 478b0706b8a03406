"""Nextra sites (Next.js): `next.config.*` wraps the Next config in `nextra({...})`. Read, never run.

Nextra publishes Markdown three ways, each read here:
- the App Router's page files, `app/docs/guide/page.mdx` at `/docs/guide` (Nextra 4): route groups
  `(name)` are no segment, a private folder `_name` and any other Markdown file of `app/` is no page;
- the content folder, `content/` (or `src/content/`), served by the catch-all `[[...mdxPath]]` under
  `contentDirBasePath` (default `/`): `content/docs/x.mdx` at `/docs/x`, `index.mdx` its folder's.
  With Next's `i18n`, its first folder is the language (`content/es/docs/x.mdx` at `/es/docs/x`);
- the Pages Router's `pages/` (Nextra 2 and 3): `_` files and `pages/api/` are no pages; with `i18n`
  a page's language is its suffix, `x.zh-CN.mdx` at `/zh-CN/x` (the default language's at `/x`).
The app's other page files (`page.tsx`) are routes too; one under a parameter (`[name]`) other than
the language and the content's catch-all makes pages only the build knows, so links below it are
unknown. `public/` is served at the site root; Next's `basePath`, `trailingSlash` and the literal
`source`/`destination` pairs of its `redirects` are read. Nextra drops `.md`/`.mdx` from a link and the
browser resolves the rest from the page's URL, which ends in `/` only with `trailingSlash`.
"""

from __future__ import annotations

import itertools
import os
import re
from dataclasses import replace
from pathlib import Path

from udm.site.fumadocs import _PAGE_FILES, _PARAM, _SKIPPED_DIRS, _app_pages, app_folder_parts, next_segments
from udm.site.jsconfig import _balanced, _consts, _js_block, _js_string, _js_strings, _masked
from udm.site.model import Mount, Site, path_of_url, static_folders, under, unpublished_rule, within

__all__ = ["LANGUAGE_TAG", "NEXTRA", "nextra", "nextra_inputs"]

# `import nextra from 'nextra'`, `require("nextra")`: the config wraps its Next config in Nextra's.
NEXTRA = re.compile(r"""(?:from|require\s*\(|import\s*\()\s*['"]nextra['"]""")
# A Next.js (and Rspress) locale: `en`, `zh-CN`, `pt-BR`.
LANGUAGE_TAG = re.compile(r"^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8})?$")
_MAX_FILES = 2000
_MAX_LOCALES = 100
_MAX_REDIRECTS = 500
_MARKDOWN_PAGES = frozenset({"page.md", "page.mdx"})
_REDIRECTS = re.compile(r"(?<![\w$.])redirects\b")


def _app_files(here: Path) -> list[Path]:
    """The page files of the Next app (`app/` or `src/app/`), sorted, at most a couple of thousand;
    build output and folders linked out of the project not read."""
    found: list[Path] = []
    real = os.path.realpath(here)
    for top in (here / "app", here / "src" / "app"):
        if not top.is_dir() or not within(os.path.realpath(top), real):
            continue
        for current, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS and not d.startswith("."))
            for name in sorted(files):
                path = Path(current) / name
                if name in _PAGE_FILES and not (
                    path.is_symlink() and not within(os.path.realpath(path), real)
                ):
                    found.append(path)
                    if len(found) >= _MAX_FILES:
                        return found
    return found


def nextra_inputs(config: Path) -> list[Path]:
    """The files a Nextra site's routes are read from: the config and the app's page files."""
    return [config, *_app_files(config.parent)]


def _options(text: str) -> str:
    """The text of the `nextra({...})` call's options ("" when the config names none)."""
    masked = _masked(text)
    for m in itertools.islice(re.finditer(r"(?<![\w$.])nextra\s*\(\s*\{", masked), 20):
        end = _balanced(text, m.end() - 1)
        if end is not None:
            return text[m.end() - 1 : end + 1]
    return ""


def _locales(text: str) -> tuple[str, list[str]]:
    """Next's `i18n: { locales: [...], defaultLocale }` as literals: (default, the others), or ("", [])."""
    block = _js_block(text, "i18n")
    listed = _js_block(block, "locales") if block else None
    if block is None or listed is None or not listed.startswith("["):
        return "", []
    locales = [s for s in _js_strings(listed)[:_MAX_LOCALES] if LANGUAGE_TAG.match(s)]
    default = _js_string(block, "defaultLocale") or ""
    if default not in locales:
        return "", []
    return default, [s for s in dict.fromkeys(locales) if s != default]


def _redirects(text: str) -> list[tuple[str, str]]:
    """The literal pairs of Next's `redirects` (a function returning an array, or an array): `{ source,
    destination }` objects written there, or in an array constant the function returns, spreads or
    maps (`REDIRECTS.map((r) => ({ source: r.from, destination: r.to }))`, so `{ from, to }` too);
    each source a path pattern (`/docs/:slug*`)."""
    masked = _masked(text)
    for m in itertools.islice(_REDIRECTS.finditer(masked), 20):
        start = masked.find("[", m.end(), m.end() + 200)
        body = masked[m.end() : m.end() + 400]
        names = list(dict.fromkeys(a or b for a, b in _ARRAY_USE.findall(body)))[:10]
        if start < 0 and not names:
            continue
        blocks: list[str] = []
        if start >= 0:
            end = _balanced(text, start)
            if end is not None:
                blocks.append(text[start : end + 1])
        for name in names:
            const = re.search(
                rf"(?<![\w$.])(?:const|let|var)\s+{re.escape(name)}\s*(?::[^=]{{0,100}})?=\s*\[", masked
            )
            if const is not None:
                end = _balanced(text, const.end() - 1)
                if end is not None:
                    blocks.append(text[const.end() - 1 : end + 1])
        pairs: list[tuple[str, str]] = []
        for block in blocks:
            pairs += _pairs(block, _MAX_REDIRECTS - len(pairs))
        return pairs
    return []


# An array constant a `redirects` function uses: `...NAME`, `NAME.map(`, `return NAME`.
_ARRAY_USE = re.compile(
    r"(?:\.\.\.|return\s+)([A-Za-z_$][\w$]*)\b(?!\s*\()|([A-Za-z_$][\w$]*)\.(?:map|concat|flatMap)\("
)


def _pairs(block: str, limit: int) -> list[tuple[str, str]]:
    """The (source, destination) of each `{...}` item of an array's text, by `source`/`destination`
    or `from`/`to`, at most `limit`."""
    pairs: list[tuple[str, str]] = []
    k = 1
    while k < len(block) and len(pairs) < limit:
        if block[k] == "{":
            close = _balanced(block, k)
            if close is None:
                break
            item = block[k : close + 1]
            source = _js_string(item, "source") or _js_string(item, "from")
            dest = _js_string(item, "destination") or _js_string(item, "to")
            if source and dest and source.startswith("/"):
                pairs.append((source, dest))
            k = close
        k += 1
    return pairs


def _content_folder(here: Path) -> Path | None:
    for folder in (here / "content", here / "src" / "content"):
        if folder.is_dir():
            return folder
    return None


def _generated(here: Path, files: list[Path], base: str, languages: list[str]) -> list[str]:
    """Route prefixes under a page file with a parameter (`app/api/[name]/page.tsx` makes `/api/*`):
    what lies below is made by the build. The language parameter and the content's catch-all (its
    `[[...mdxPath]]`, or the catch-all at `contentDirBasePath`) make none."""
    found: list[str] = []
    for path in files:
        parts = app_folder_parts(here, path)
        if parts is None:
            continue
        segments = next_segments(parts)
        prefixes = [""]
        if languages and segments and _PARAM.match(segments[0]) and not segments[0].startswith("[..."):
            segments = segments[1:]
            prefixes = ["", *languages]
        cut = next((i for i, s in enumerate(segments) if _PARAM.match(s)), None)
        if cut is None:
            continue
        static = "/".join(segments[:cut])
        if "mdxPath" in segments[cut] or (segments[cut].startswith("[[...") and static == base):
            continue  # the gateway to the content folder: its pages are the content's
        # `[name]` last: one segment there (`x/*`); a catch-all or a parameter above more: all below.
        one = cut == len(segments) - 1 and not segments[cut].startswith(("[...", "[["))
        found += ["/".join(p for p in (lang, static, "*" if one else "") if p) for lang in prefixes]
    return list(dict.fromkeys(found))


_MAX_GENERATED = 5000
_MAX_NAMES = 20_000


def _under_language(here: Path, path: Path) -> bool:
    """Whether an app page lies under a leading parameter (`app/[lang]/about/page.tsx`), route groups
    and slots aside."""
    parts = app_folder_parts(here, path)
    kept = next_segments(parts or ())
    return bool(kept) and _PARAM.match(kept[0]) is not None and not kept[0].startswith("[.")


def _pages_params(pages: Path) -> list[str]:
    """Route prefixes of the Pages Router's dynamic routes (`pages/blog/[slug].tsx` makes `/blog/*`),
    from the first 20,000 names of the folder (`api/` holds no pages)."""
    found: list[str] = []
    seen = 0
    real = os.path.realpath(pages)
    for current, dirs, files in os.walk(pages):
        if not within(os.path.realpath(current), real):
            dirs[:] = []
            continue
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS and not d.startswith((".", "_")))
        rel = os.path.relpath(current, pages).replace(os.sep, "/")
        prefix = "" if rel == "." else rel
        if prefix == "api" or prefix.startswith("api/"):
            dirs[:] = []
            continue
        for name in [*dirs, *files]:
            seen += 1
            if seen > _MAX_NAMES or len(found) >= _MAX_GENERATED:
                return found
            if name.startswith("[") and (name in dirs or name.rpartition(".")[0].endswith("]")):
                # `[slug].tsx` is one segment (`x/*`); a catch-all file or a parameter folder, all below.
                one = name not in dirs and not name.startswith(("[...", "[[..."))
                found.append("/".join(p for p in (prefix, "*" if one else "") if p))
        # Below a parameter every route is the build's already.
        dirs[:] = [d for d in dirs if not d.startswith("[")]
    return found


def nextra(root: Path, here: Path, text: str) -> Site:
    """A Nextra site: the app's page files, the content folder under `contentDirBasePath`, `pages/`,
    the app's other pages, `public/`, Next's base path and redirects."""
    consts = _consts(text)
    options = _options(text)
    base = (_js_string(options, "contentDirBasePath", consts) or "").strip().strip("/") if options else ""
    if ".." in base.split("/"):
        base = ""
    default, others = _locales(text)
    files = _app_files(here)
    mounts: list[Mount] = []
    rules = []
    redirects = _redirects(text)
    generated = _generated(here, files, base, [default, *others] if default else [])
    for app in (here / "app", here / "src" / "app"):
        if app.is_dir() and within(os.path.realpath(app), os.path.realpath(here)):
            kind = f"nextra-app:{default}:{','.join(others)}" if default else "nextra-app"
            mount = under(root, app, "", kind, False)
            if mount is not None:
                mounts.append(mount)
            # Only `page.md(x)` is a page; a private folder `_x` is no route at all.
            patterns = ["*.md", "*.mdx", "*.markdown", "!page.md", "!page.mdx", "_*/"]
            rules.append(unpublished_rule("app", root, [app], "gitignore", patterns))
    content = _content_folder(here)
    if content is not None and within(os.path.realpath(content), os.path.realpath(here)):
        if default:
            # The language comes first in the route, then the base (`Mount.content`), then the rest.
            mount = under(root, content, "", f"nextra-i18n:{default}:{','.join(others)}", False)
            mount = None if mount is None else replace(mount, content=base)
        else:
            mount = under(root, content, base, "nextra", False)
        if mount is not None:
            mounts.append(mount)
    for pages in (here / "pages", here / "src" / "pages"):
        if pages.is_dir() and within(os.path.realpath(pages), os.path.realpath(here)):
            # The Pages Router: a translation is a suffix, as Fumadocs' dot parser reads one.
            kind = f"nextra-pages-i18n:{default}:{','.join(others)}" if default else "nextra-pages"
            mount = under(root, pages, "", kind, False)
            if mount is not None:
                mounts.append(mount)
            rules.append(unpublished_rule("pages", root, [pages], "gitignore", ["_*", "/api/"]))
            generated += _pages_params(pages)
            if default:
                # Next serves the default language with its prefix too: `/en/x` is `/x`.
                redirects.append((f"/{default}/:slug*", "/:slug*"))
            break
    html_pages: list[tuple[str, str]] = []
    under_language = {
        os.path.relpath(p, root).replace(os.sep, "/") for p in files if _under_language(here, p)
    }
    for route, rel in _app_pages(root, here, files):
        if rel.rpartition("/")[2] in _MARKDOWN_PAGES:
            continue
        if default and rel in under_language:
            # `app/[lang]/about/page.tsx`: /about in each language.
            html_pages += [("/".join(p for p in (lang, route) if p), rel) for lang in (default, *others)]
        html_pages.append((route, rel))
    trailing = re.search(r"(?<![\w$.])trailingSlash\s*:\s*true\b", _masked(text)) is not None
    return Site(
        mounts=tuple(mounts),
        base_path=path_of_url(_js_string(text, "basePath", consts)),
        redirects=tuple(redirects),
        static=static_folders(root, [here / "public"]),
        html_pages=tuple(html_pages),
        unpublished=tuple(r for r in rules if r is not None),
        generated=tuple(dict.fromkeys(generated))[:_MAX_GENERATED],
        trailing_slash=trailing,
    )
