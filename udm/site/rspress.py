"""Rspress sites: `rspress.config.*` (`defineConfig` from `@rspress/core` or `rspress/config`). Read,
never run.

Rspress publishes the files under its `root` (`docs` by default; `path.join(__dirname, 'docs')` is
read too): each page's route is its path, `index` its folder's, `_x` files and folders (but `__x`)
and `route.exclude`'s globs are none, and `<root>/public` is served at the site root. With `locales`,
each language has a folder, `<root>/zh/`, and the default `lang`'s pages are served without it (`en/guide/x.mdx`
is `/guide/x`). A link is resolved as Rspress's remark plugin does: a relative one from the page's
file (`./x`, `x`, `../x.md`), an absolute one from the site root, given the page's own language first
(`/guide/x` on a Chinese page is `/zh/guide/x`: a page missing in that language is a dead link).
"""

from __future__ import annotations

import re
from pathlib import Path

from udm.site.jsconfig import (
    _balanced,
    _config_object,
    _consts,
    _js_block,
    _js_string,
    _js_strings,
    _masked,
    _own_level,
    _own_value,
    _without_comments,
)
from udm.site.model import (
    Site,
    component_pages,
    glob_lines,
    path_of_url,
    read_head,
    static_folders,
    under,
    unpublished_rule,
)
from udm.site.nextra import LANGUAGE_TAG

__all__ = ["RSPRESS", "rspress", "rspress_inputs"]

# The config imports Rspress's `defineConfig` (`@rspress/core`, `rspress/config`, `@rspress/shared`).
RSPRESS = re.compile(r"""['"](?:@rspress/[\w-]+|rspress)(?:/[\w/-]*)?['"]|(?<![\w$])define\.doc\s*\(""")
# `path.join(__dirname, 'docs')`, `path.resolve(import.meta.dirname, 'doc')`, `join(__dirname, 'a', 'b')`.
_ROOT_CALL = re.compile(
    r"(?<![\w$.])root\s*:\s*(?:[\w$]+\.)?(?:join|resolve)\s*\(\s*"
    r"(?:__dirname|import\.meta\.dirname|process\.cwd\(\))((?:\s*,\s*(['\"])[^'\"\n]{0,200}\2){0,8})\s*\)"
)
_BARE_ROOT = re.compile(r"(?<![\w$.])root\s*:\s*(?:__dirname|import\.meta\.dirname)\s*[,}\n]")
_MAX_LOCALES = 100


def _root(text: str, consts: dict[str, str]) -> str:
    """The `root` folder from the config's folder ("docs" by default; "." for the folder itself)."""
    masked = _masked(text)
    call = _ROOT_CALL.search(text)
    if call is not None and masked[call.start() : call.start() + 4] == "root":
        parts = re.findall(r"(['\"])([^'\"\n]*)\1", call.group(1))
        return "/".join(p for _, p in parts if p) or "."
    bare = _BARE_ROOT.search(text)
    if bare is not None and masked[bare.start() : bare.start() + 4] == "root":
        return "."
    return _js_string(text, "root", consts) or "docs"


def _languages(exported: str, consts: dict[str, str]) -> tuple[str, list[str]]:
    """(the default `lang`, the other languages of `locales`), or ("", []) without locales."""
    default = _js_string(_own_level(exported), "lang", consts) or ""
    theme = _own_value(exported, "themeConfig")
    # `locales` of the config, or (older configs) of its `themeConfig`.
    listed = _own_value(exported, "locales") or (_own_value(theme, "locales") if theme else None)
    if not listed or not listed.startswith("[") or not LANGUAGE_TAG.match(default):
        return "", []
    found: list[str] = []
    for m in re.finditer(r"(?<![\w$.])lang\s*:\s*(['\"])([^'\"\n]{1,20})\1", listed):
        if LANGUAGE_TAG.match(m.group(2)) and m.group(2) not in found:
            found.append(m.group(2))
        if len(found) >= _MAX_LOCALES:
            break
    return (default, [lang for lang in found if lang != default]) if default in found else ("", [])


# `defineConfig({...})` not exported as it is, or Rstack's `define.doc({...})` (`rstack.config.ts`);
# either may take a function returning the object (`define.doc(async () => { ...; return {...} })`).
_CONFIG_CALL = re.compile(r"(?<![\w$])(?:defineConfig|define\.doc)\s*\(")
_RETURNED = re.compile(r"(?<![\w$])return\s*\(?\s*\{")
_ARROW_OBJECT = re.compile(r"=>\s*\(\s*$")


def _called_object(text: str) -> str | None:
    """The object the config passes to `defineConfig(` or Rstack's `define.doc(`, or that the function
    it passes returns (`=> ({...})`, or a body's own `return {...}`), if any."""
    masked = _masked(text)
    found = _CONFIG_CALL.search(masked)
    end = _balanced(text, found.end() - 1) if found else None
    if found is None or end is None:
        return None
    brace = masked.find("{", found.end(), end)
    if brace < 0:
        return None
    close = _balanced(text, brace)
    if close is None:
        return None
    before = masked[found.end() : brace]
    if not before.strip() or _ARROW_OBJECT.search(before):
        return text[brace : close + 1]  # the object itself, or an arrow function's `=> ({...})`
    # A function's body: the object its own `return` gives (one in a nested callback is not read).
    own = _own_level(text[brace : close + 1])
    returned = _RETURNED.search(own)
    if returned is None:
        return None
    start = brace + returned.end() - 1
    stop = _balanced(text, start)
    return None if stop is None else text[start : stop + 1]


def _content(here: Path, text: str) -> Path:
    """Rspress' root folder (a root outside the project is none of it: the default, `docs`)."""
    folder = _root(text, _consts(text)).strip()
    if folder.startswith("/") or ".." in folder.split("/"):
        folder = "docs"
    return here / folder


def rspress_inputs(config: Path) -> list[Path]:
    """The files an Rspress site's routes are read from: the config and its component pages (one added
    or removed moves a route)."""
    try:
        text = read_head(config, 1 << 20).decode("utf-8", "replace")
    except OSError:
        return [config]
    content = _content(config.parent, text)
    return [
        config,
        *(
            content.parent / f
            for _, f in component_pages(content.parent, content, _COMPONENTS, partials=True)
        ),
    ]


_COMPONENTS = (".js", ".jsx", ".ts", ".tsx")


def rspress(root: Path, here: Path, text: str) -> Site:
    """An Rspress site: the pages under `root`, the default language's served without its folder,
    `route.exclude` and `_` files left out, `<root>/public`, `base`."""
    consts = _consts(text)
    content = _content(here, text)
    exported = _config_object(text) or _called_object(text) or text
    default, others = _languages(exported, consts)
    kind = f"rspress-i18n:{default}:{','.join(others)}" if default else "rspress"
    mount = under(root, content, "", kind, False)
    route = _own_value(exported, "route")
    excluded = _js_block(route, "exclude") if route else None
    globs = _js_strings(excluded)[:200] if excluded and excluded.startswith("[") else []
    lines = [line for glob in ["**/node_modules/**", "public/**", *globs] for line in glob_lines(glob)]
    # Rspress' own convention: `_partial.mdx` and `_folder/` are no pages, `__x` is one.
    rule = unpublished_rule("docs", root, [content], "gitignore", ["_*", "!__*", *lines])
    # `llms: true` (SSG-MD) or the llms plugin writes `/llms.txt` and `/llms-full.txt` at build time.
    llms = re.search(r"(?<![\w$.])llms\s*:\s*(?:true|\{)|plugin-llms", _without_comments(text)) is not None
    # Rspress' pages are components too (`playground.tsx` is /playground); the default language's
    # folder is served at the root.
    pages = component_pages(root, content, _COMPONENTS, partials=True)
    if default:
        pages = tuple(("" if k == default else k.removeprefix(default + "/"), f) for k, f in pages)
    return Site(
        html_pages=pages,
        generated=("llms.txt", "llms-full.txt") if llms else (),
        mounts=(mount,) if mount else (),
        base_path=path_of_url(_js_string(_own_level(exported), "base", consts)),
        static=static_folders(root, [content / "public"]),
        # The default language's folder is served at the site root.
        rewrites=((f"{default}/:rest*", ":rest*"),) if default else (),
        # A link may name the default language too: `/en/guide/x` is `/guide/x`.
        redirects=((f"/{default}/:rest*", "/:rest*"),) if default else (),
        unpublished=(rule,) if rule else (),
    )
