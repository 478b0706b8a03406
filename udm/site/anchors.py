"""Anchors a page has beyond its sections' GitHub ones: ids it names itself, headings inside
containers, Hugo's definition-term ids and the heading ids of sites that make them their own way
(VitePress; Hugo's `blackfriday` and `github-ascii`). `udm.site.routes` asks for them only for a
link whose anchor is no section's.
"""

from __future__ import annotations

import bisect
import itertools
import re
import unicodedata
from collections import Counter
from html import unescape
from typing import TYPE_CHECKING

from udm.errors import UdmError
from udm.markdown import (
    TAB_TITLE,
    inline_text,
    markdown_shortcodes_alone,
    markdown_tree,
    parse_document,
    raw_spans,
    slugify,
)
from udm.site.docsify import docsify_heading_id
from udm.site.model import Site

if TYPE_CHECKING:
    from collections.abc import Callable

    from udm.markdown import Document

__all__ = [
    "blackfriday_slug",
    "explicit_anchors",
    "gitbook_anchors",
    "github_ascii_slug",
    "has_explicit_anchor",
    "mintlify_slug",
    "own_heading_rule",
    "page_anchors",
    "page_named",
    "repeated_from",
    "vitepress_slug",
]


def has_explicit_anchor(text: str, anchor: str) -> bool:
    """Whether the page names `anchor` itself (see `explicit_anchors`)."""
    return anchor in explicit_anchors(text)


def page_named(site: Site, text: str) -> set[str]:
    """The anchors a page names itself, as its site scrolls to them: on Docsify only a heading's
    (`<h2 id="x">`; it looks for `:where(h1, ..., h6)[id=...]`, never an `<a id>`), elsewhere any
    (`explicit_anchors`)."""
    if site.generator != "docsify":
        return explicit_anchors(text)
    return {m.group(2) for m in _HTML_HEADING_ID.finditer(text)} if "<h" in text.lower() else set()


# Each tag's scan ends at the next `<`, so a page of `<h1 <h1 ...` costs linear time.
_HTML_HEADING_ID = re.compile(r"""<h[1-6]\b[^<>]{0,500}?(?<![\w-])id=(["'])([^"'<>\n]{1,300})\1""", re.I)


def explicit_anchors(text: str) -> set[str]:
    """The anchors a page names itself: an HTML `id`/`name` attribute, a `{#anchor}` heading
    attribute (Docusaurus, MkDocs attr_list, Hugo, Pandoc, VitePress), an attribute list holding it
    among others (`{ .sh #anchor }`) or an MDX comment after a heading, `{/*anchor*/}` (react.dev's
    heading ids); not those it only shows, in a code span, a fence's content or an HTML comment.
    GitHub-style heading anchors are not among them. One pass over the text, so a page asked for
    thousands of anchors is read once."""
    if not _named(text):
        return set()
    return _named(_without_code(text))


# `id="x"`, `name='x'` (anywhere in a tag; `data-id=` is another attribute), `{#x}`, `{/*x*/}` and an
# attribute list `{...}` (its `#x` members are read below).
# Each alternative stops at a brace, a blank or 300 characters, so crafted runs of `{#`, `{/*` or
# `id="` cost a bounded scan each.
_NAMING = re.compile(
    r"""(?<![\w-])(?:id|name)=(?:"([^"\n<>]{0,300})"|'([^'\n<>]{0,300})')|\{#([^{}\s]{0,300})\}"""
    r"""|\{/\*[ \t]*([^{}\s*]{0,300})[ \t]*\*/\}|\{([^{}\n]*)\}"""
    # MyST's targets: a `(label)=` line before a block, and a directive's `:name:` or `:label:` option
    # (Sphinx with MyST-Parser, mystmd and Jupyter Book: `[](#eq:book)`).
    r"""|(?m:^[ \t]{0,3}\(([^()\s]{1,300})\)=[ \t]*$|^[ \t]*:(?:name|label):[ \t]+([^\s]{1,300})[ \t]*$)"""
)
# Inside an attribute list: `#id` after its opening brace, a colon or a blank, up to a blank or its end.
_MEMBER = re.compile(r"(?:^|(?<=[:\s]))#([^\s{}]+)")


def _named(text: str) -> set[str]:
    """The anchors the naming forms of the text hold (code and comments not told apart)."""
    if "id=" not in text and "name=" not in text and "{" not in text and ")=" not in text:
        return set()
    out: set[str] = set()
    for m in _NAMING.finditer(text):
        double, single, attribute, comment, inner, target, option = m.groups()
        if target is not None or option is not None:
            out.add(target if target is not None else option)
        elif inner is not None:
            out.update(_MEMBER.findall(inner))
        elif double is not None or single is not None:
            value = double if double is not None else single
            # An attribute's value has its character references decoded, in HTML as in JSX:
            # typedoc writes `id="result-&#x5F;meta"` for `#result-_meta` (MCP's schema pages).
            out.add(unescape(value) if "&" in value else value)
        else:
            out.add(attribute if attribute is not None else comment)
    out.discard("")
    return out


def _without_comments(text: str) -> str:
    """The text with each HTML comment (`<!--` to the next `-->`, or to the end) left out; found with
    the substring search, so crafted unclosed comments cost one pass."""
    parts: list[str] = []
    pos = 0
    while True:
        start = text.find("<!--", pos)
        if start < 0:
            parts.append(text[pos:])
            return " ".join(parts)
        parts.append(text[pos:start])
        end = text.find("-->", start + 4)
        if end < 0:
            return " ".join(parts)
        pos = end + 3


def _without_code(text: str) -> str:
    """The page's text with code spans, fences' content and then HTML comments blanked (a fence's
    opening line stays: its attribute list gives the block an id; a `<!--` shown in code starts no
    comment). Indented code stays: in MDX, whose JSX is often indented, it is no code. Only the
    comments are left out when the parser fails on the text."""
    try:
        root = markdown_tree(text)
    except UdmError:
        return _without_comments(text)
    data = bytearray(text.encode("utf-8"))
    stack = [root]
    while stack:
        node = stack.pop()
        span = node.srcmap
        if node.name in ("fence", "code_inline") and span is not None:
            start, end = span
            if node.name == "fence":
                newline = data.find(b"\n", start, end)
                start = end if newline < 0 else newline
                if bytes(data[start + 1 : start + 2]) == b":" and b"{" in data[span[0] : start]:
                    # A MyST directive (```{code}): its leading `:name:`/`:label:` options name it.
                    start = _after_options(data, start, end)
            data[start:end] = b" " * (end - start)
        else:
            stack.extend(node.children)
    return _without_comments(data.decode("utf-8", "replace"))


_OPTION = re.compile(rb"\n[ \t]*:[\w-]+:[^\n]*")


def _after_options(data: bytearray, start: int, end: int) -> int:
    """Where a MyST directive's leading option lines (`:name: x`), from the newline at `start`, end."""
    while (m := _OPTION.match(data, start, end)) is not None:
        start = m.end()
    return start


def own_heading_rule(site: Site) -> Callable[[str], str] | None:
    """The rule the site makes every heading's id with where it is not GitHub's (VitePress,
    VuePress, Docsify, Hugo's other `autoHeadingIDType`s), known exactly: there a page's anchors are the
    rule's alone, and a GitHub form it does not make is broken."""
    if site.generator == "vuepress" and site.heading_ids == "vuepress1":
        return vuepress1_slug
    if site.generator == "docsify":
        return docsify_heading_id
    if site.generator in ("vitepress", "vuepress") and site.heading_ids != "custom":
        return vitepress_slug
    if site.generator == "zola":
        return zola_slug if site.heading_ids == "zola" else zola_plain_id
    return _HUGO_RULES.get(site.heading_ids) if site.generator == "hugo" else None


def page_anchors(
    site: Site, page: str, text: str, *, sections: bool = False
) -> tuple[set[str], bool | re.Pattern[str]]:
    """Anchors of a page beyond its sections' GitHub ones (headings inside containers, definition
    terms where Hugo gives them ids, every heading's id where the site makes them its own way; with
    `sections`, for a page the index does not hold, the sections' anchors as the index makes them), and
    whether some heading's id cannot be known here: on a Hugo site a heading whose text is a
    shortcode (`## {{% heading "prerequisites" %}}`, Kubernetes' pages) renders to text only the
    site's templates and translations know. The second value may instead be a pattern: the
    anchors it finds are unknown, the others checked."""
    try:
        doc = parse_document(text, page, shortcodes=site.shortcodes, indented=site.indented_in(page))
    except UdmError:
        return set(), False
    nested = doc.nested_heading_texts()
    # GitHub's ids of the headings in blocks, where the site makes ids as GitHub does.
    found = {slugify(t) for t in nested} if own_heading_rule(site) is None else set()
    if sections and own_heading_rule(site) is None:
        found.update(s.anchor for s in doc.sections if s.anchor)
    headings = doc.heading_texts()
    if site.term_ids:
        # Terms and headings share one set of ids, numbered in text order (`targets` the term,
        # `targets-1` the heading after it): whatever the order, n of one slug make slug .. slug-(n-1).
        counts = Counter(slugify(t) for t in [*doc.definition_terms(), *nested])
        counts.update(slugify(t) for t, own in headings if own is None)
        for slug, n in counts.items():
            found.update([slug, *(f"{slug}-{k}" for k in range(1, n))])
    # A heading whose text is a shortcode, or a shortcode alone on a line whose output is Markdown
    # (`{{% include "_common/scope.md" %}}`, Hugo's docs; a template printing `### ...`, grpc.io's):
    # headings only Hugo can render.
    unknown = site.generator == "hugo" and (
        any(own is None and ("{{<" in t or "{{%" in t) for t, own in headings) or _inserts_markdown(doc)
    )
    own_rule = own_heading_rule(site)
    if site.heading_ids == "custom" and site.generator in ("vitepress", "vuepress"):
        # The config's own slugify makes every id: none but those the page names itself is known
        # (Pinia's copies VitePress' without lower-casing: GitHub's `#_getterstree` is dead there).
        return set(), True
    # `## Spell check {.notranslate lang=en}`: where the site reads attribute lists, one is no text.
    attributes = site.generator in _ATTRIBUTE_SITES
    texts = [_strip_attributes(t) if attributes else t for t, own in headings if own is None]
    if own_rule is not None:
        found.update(_own_ids(site, own_rule, doc, headings, texts, nested))
    elif attributes:
        found.update(slugify(t) for t in texts)
    if site.generator == "mkdocs" and ":::" in text and _CLI_REFERENCE.search(text):
        # `::: mkdocs-click` (Hatch's CLI reference) renders a heading per command from the code.
        unknown = True
    if site.templated and ("{{" in text or "{%" in text) and _templated(text, headings):
        # mkdocs-macros or a hook renders the line (Pydantic's `{{ pydantic_settings }}` is another
        # project's README, headings and all), or the heading: its ids are known only to the code.
        unknown = True
    if site.snippets and "8<" in text and _includes_markdown_snippet(doc):
        # pymdownx.snippets writes another Markdown file into the page: its headings are the page's.
        unknown = True
    if site.generator in ("mkdocs", "jekyll"):
        # Python-Markdown's footnotes extension (MkDocs) and kramdown (Jekyll's Markdown) give a
        # footnote `fn:<label>` and its reference `fnref:<label>`.
        for label in _FOOTNOTE.findall(text):
            found.update((f"fn:{label}", f"fnref:{label}"))
    if site.generator == "mkdocs":
        # Python-Markdown's toc makes ids its own way and numbers a repeat `_1`.
        used: Counter[str] = Counter()
        found.update(_unique(python_markdown_slug(t), used) for t in texts + nested)
        if site.tab_ids and "===" in text:
            found |= _tab_ids(doc, site.tab_ids)
        blind: list[str] = []
        # Material's docs: a project hook turns `<!-- md:setting config.x -->` into ids such as
        # `config.x` and `+type:abstract`, which no heading slug is (a slug holds no `.`, `:` or `+`).
        if "<!-- md:" in text:
            blind.append(_HOOK_IDS.pattern)
        # mkdocstrings: `::: pkg.mod.Object` renders the object with the id `pkg.mod.Object`; its
        # members (`pkg.mod.Object.method`) and its docstring's headings (`pkg.mod.Object--usage`)
        # take ids only the Python code tells.
        objects = _DIRECTIVE.findall(text) if site.autorefs == "objects" and ":::" in text else []
        if objects:
            found.update(objects)
            names = "|".join(re.escape(o) for o in sorted(set(objects))[:2000])
            blind.append(rf"^(?:{names})(?:\.|--)")
        if not unknown and blind:
            return found, re.compile("|".join(f"(?:{b})" for b in blind))
    if site.generator in ("fumadocs", "nextra"):
        # Fumadocs and Nextra: `## Title [#custom-id]` gives the heading that id (the title's slug otherwise).
        for title in [t for t, own in headings if own is None] + nested:
            custom = _custom_id(title)
            if custom is not None:
                found.update(custom)
        if site.generator == "fumadocs" and "<include" in text and _INCLUDE.search(text):
            unknown = True  # `<include>other.mdx</include>`: the other file's headings are the page's
    if site.generator == "mintlify":
        # Mintlify makes ids its own way (`mintlify_slug`) and numbers a repeat -2, -3 across the page,
        # headings inside components too; its accordions and tabs take an id, by default their title's.
        # The GitHub forms stay accepted (with periods as hyphens), as Mintlify's rule is documented,
        # not published as code.
        titles = [t for t, own in headings if own is None] + nested
        found.update(_numbered([mintlify_slug(t) for t in titles], first=2))
        named, ids = _mintlify_components(text)
        found.update(ids)
        found.update(mintlify_slug(t) for t in named)
        found.update(slugify(t.replace(".", "-")) for t in titles + named)
    if site.generator == "gitbook":
        # GitBook makes a heading's anchor "from its text" (documented so, not published as code): the
        # forms its editor writes into synced pages are taken beside GitHub's (`gitbook_anchors`).
        # A repeat is numbered -1, -2, ... as GitHub numbers one, a heading's own `<a id="x">` too (a
        # page whose headings all carry one id is linked as `#x-4`).
        made = Counter(a for t in texts + nested for a in gitbook_anchors(t))
        made.update(
            a for source in doc.heading_sources() if "id=" in source for a in explicit_anchors(source)
        )
        for anchor, n in made.items():
            found.update([anchor, *(f"{anchor}-{k}" for k in range(1, n))])
    if site.generator == "zola":
        found.add("top")  # Zola's special anchor: the top of the page, never a broken link
    if own_rule is zola_slug and not all(t.isascii() for t in texts + nested):
        # Zola transliterates other characters (deunicode: `日本` is `ri-ben`), which is not done here.
        unknown = True
    if site.generator == "docsify" and ":include" in text and _embeds_markdown(text):
        unknown = True  # an embedded Markdown file's headings are the page's
    if site.generator == "vitepress" and (
        ("@include:" in text and _VP_INCLUDE.search(text)) or _renders_vue_component(text)
    ):
        # Headings of another file, included (vitest's CLI page), or a Vue component's, whose ids only
        # its code tells (Vue's docs: the API index and the examples are components on their page).
        unknown = True
    # Docusaurus 3 reads `.md` as MDX too: either may import a partial.
    mdx = page.lower().endswith(".mdx") or (site.generator == "docusaurus" and page.lower().endswith(".md"))
    if mdx and _renders_partial(text):
        unknown = True  # an imported Markdown file rendered in the page: its headings are the page's
    return found, unknown


def _tab_ids(doc: Document, how: str) -> set[str]:
    """The ids pymdownx.tabbed gives a page's tabs with its `slugify` option: the title's slug (its case
    kept and lowered, since the slugify's own options are Python the config loader does not run),
    after the id of the heading above and the separator `-` when `how` is "combined" (a title starting
    with a non-word character, `... or me`, makes `--`). The title is the text it renders to, and an id
    already given (a heading's, an earlier tab's) gets `_1`, `_2`, ... as toc's `unique` numbers it.
    Tabs in fences are examples; a heading inside the same block as the tabs is not looked at."""
    fences = [(b.start, b.end) for b in doc.blocks]
    used: Counter[str] = Counter()
    heads = []
    for sec, (text, own) in zip(doc.sections, doc.heading_texts(), strict=False):
        hid = _unique(own or python_markdown_slug(_strip_attributes(text)), used)
        heads.append((sec.start, hid))
    found: set[str] = set()
    for k, line in enumerate(doc.lines):
        m = TAB_TITLE.fullmatch(line.rstrip("\r\n")) if "===" in line else None
        if m is None:
            continue
        f = bisect.bisect_right(fences, (k, len(doc.lines))) - 1
        if f >= 0 and fences[f][0] <= k < fences[f][1]:
            continue
        # pymdownx.slugs: NFC, tags dropped, trimmed, then only word characters, hyphens and spaces.
        title = unicodedata.normalize("NFC", inline_text(m.group(1)))
        slug = _NOT_SLUG.sub("", _TAGS.sub("", title).strip()).replace(" ", "-")
        h = bisect.bisect_right(heads, (k, "")) - 1
        prefix = f"{heads[h][1]}-" if how == "combined" and h >= 0 else ""
        found.update(_unique(variant, used) for variant in {prefix + slug, prefix + slug.lower()})
    return found


def repeated_from(anchor: str) -> str | None:
    """The id a repeat's id was numbered from (`setup_1` -> `setup`: Python-Markdown's toc), or None."""
    m = _REPEAT.search(anchor)
    return anchor[: m.start()] if m and m.start() > 0 else None


_REPEAT = re.compile(r"_\d+$")


def _own_ids(
    site: Site,
    rule: Callable[[str], str],
    doc: Document,
    headings: list[tuple[str, str | None]],
    texts: list[str],
    nested: list[str],
) -> set[str]:
    """Every heading's id where the site makes them by its own rule, numbered as it numbers a repeat."""
    vue = site.generator in ("vitepress", "vuepress")
    if vue:
        # The emoji plugin's `:tada:` is no text of the id: markdown-it-anchor reads text tokens only.
        headings = [(_no_emoji(t), own) for t, own in headings]
        texts, nested = [_no_emoji(t) for t in texts], [_no_emoji(t) for t in nested]
    if rule is docsify_heading_id:
        # Docsify slugs a heading's Markdown as written (`[API](api.md)` is `apiapimd`), and counts
        # each slug: a repeat is -1, whatever ids other headings have.
        found = set(_numbered([rule(t) for t in doc.heading_sources() + nested], first=1))
    elif rule is vuepress1_slug:
        # markdown-it-anchor 5 (VuePress 1) counts each slug too, a repeat -2.
        found = set(_numbered([rule(t) for t in texts + nested], first=2))
    else:
        # markdown-it-anchor 8/9 (VitePress, VuePress 2) and Hugo's idFactory take a heading's own id
        # as it is and give a made one that is taken `-1`, `-2`, ... the first free, in page order.
        made = rule if vue or site.generator == "zola" else lambda t: _hugo_empty(rule(t))
        attributes = site.generator in _ATTRIBUTE_SITES
        ids = [
            (own, True) if own is not None else (made(_strip_attributes(t) if attributes else t), False)
            for t, own in headings
        ]
        if site.generator == "zola":
            # Zola takes every heading's own id first, then numbers the made ones around them.
            ids = [i for i in ids if i[1]] + [i for i in ids if not i[1]]
        found = set(_claimed(ids + [(made(t), False) for t in nested]))
    if vue:
        # VitePress 1.2+ keeps a character reference as written (`&lt;` is `lt`), earlier ones decode
        # it: both are taken.
        variants = [_no_emoji(w) for w in doc.heading_sources() if "&" in w and _ENTITY.search(w)]
        found.update(_claimed([(rule(v), False) for v in variants]))
    return found


_EMOJI_CODE = re.compile(r":[a-z0-9_+-]{1,60}:")
_ENTITY = re.compile(r"&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")


def _no_emoji(text: str) -> str:
    """A heading's text without its emoji shortcodes (`:tada:`), which render no text."""
    return _EMOJI_CODE.sub("", text) if ":" in text else text


def _hugo_empty(slug: str) -> str:
    """Hugo's id for a heading whose rule leaves nothing (`## 安装` under github-ascii): `heading`."""
    return slug or "heading"


def _claimed(ids: list[tuple[str, bool]]) -> list[str]:
    """Ids in page order as markdown-it-anchor's `uniqueSlug` and Hugo's idFactory give them: an
    explicit one (True) as it is, a made one that is taken with the first free `-1`, `-2`, ..."""
    taken: set[str] = set()
    following: dict[str, int] = {}  # where each slug's search for a free number goes on from
    out: list[str] = []
    for slug, explicit in ids:
        unique = slug
        if not explicit:
            n = following.get(slug, 1)
            while unique in taken:
                unique = f"{slug}-{n}"
                n += 1
            following[slug] = n
        taken.add(unique)
        out.append(unique)
    return out


def _numbered(slugs: list[str], first: int) -> list[str]:
    """The ids of headings with these slugs, in page order: a repeat numbered `-<first>`, then on
    (GitHub and Hugo from -1, Mintlify from -2)."""
    seen: Counter[str] = Counter()
    out = []
    for slug in slugs:
        n = seen[slug]
        seen[slug] += 1
        out.append(slug if n == 0 else f"{slug}-{n + first - 1}")
    return out


def _unique(slug: str, used: Counter[str]) -> str:
    """`slug`, or `slug_1`, `slug_2`, ... when it was given before on the page (toc's `unique`)."""
    n = used[slug]
    used[slug] += 1
    return slug if n == 0 else f"{slug}_{n}"


_TAGS = re.compile(r"</?[^>]*>")
_WHITESPACE = re.compile(r"\s")
_NOT_SLUG = re.compile(r"[^\w\- ]")
_HOOK_IDS = re.compile(r"[.:+]")
_DIRECTIVE = re.compile(r"^[ \t]*::: *([\w.:-]{1,300})[ \t]*$", re.M)
# A Jinja expression or an `include` alone on its line (one pass: no brace inside the expression).
_TEMPLATE_LINE = re.compile(
    r"^[ \t]*(?:\{\{[^{}\n]{1,300}\}\}|\{%-?[ \t]*include\b[^{}\n]{0,300}%\})[ \t]*$", re.M
)
# The Markdown extensions that render a command-line reference from the code (mkdocs-click,
# mkdocs-typer): its headings' ids only the code tells.
_CLI_REFERENCE = re.compile(r"^::: *mkdocs-(?:click|typer)[ \t]*$", re.M)
# Mintlify components that take an id: accordions and tabs (`id`, else their title), steps (`id`),
# changelog updates (their label) and API fields (`param-` and the field's name: `name="a.b"` is
# `#param-a-b`).
_MINTLIFY_TAG = re.compile(r"<(Accordion|Tab|Step|Update|ResponseField|ParamField)\b([^<>]{0,1000})>")
_ATTRIBUTE = re.compile(r"""(?<![\w-])([A-Za-z]+)=(?:"([^"<>]{0,300})"|'([^'<>]{0,300})')""")
_FIELD_NAMES = ("name", "path", "query", "body", "header")
# A component (PascalCase, as Vue and MDX write one) alone on its line, where it may render a block
# with headings (one inside a paragraph, `<MoonPhase />` in vitest's docs, renders inline).
_COMPONENT_TAG = re.compile(r"^[ \t]*<[A-Z][A-Za-z0-9]*(?:[ \t][^<>\n]{0,500})?/?>[ \t]*$", re.M)
# `import Setup from '/snippets/setup.mdx'` and then `<Setup />`: MDX renders that file in the page.
_IMPORT_PARTIAL = re.compile(
    r"""^import[ \t]+([A-Za-z_$][\w$]{0,100})[ \t]+from[ \t]+['"][^'"\n]{1,300}\.mdx?['"]""", re.M
)
_INCLUDE = re.compile(r"^[ \t]*<include[\s>]", re.M)
_CUSTOM_ID = re.compile(r"[^\]\s]{1,200}")


def _custom_id(title: str) -> tuple[str, str] | None:
    """(id, the slug of the rest) of a Fumadocs heading `Title [#id]`, None for a title without one
    (read from its end, not searched for: a title of many spaces costs one pass)."""
    text = title.rstrip()
    start = text.rfind("[#") if text.endswith("]") else -1
    if start < 0 or not _CUSTOM_ID.fullmatch(text, start + 2, len(text) - 1):
        return None
    return text[start + 2 : -1], slugify(text[:start])


_FOOTNOTE = re.compile(r"^[ ]{0,3}\[\^([^\]\s]{1,100})\]:", re.M)


def python_markdown_slug(text: str) -> str:
    """A heading's id as Python-Markdown's toc makes it by default (MkDocs): accents taken off,
    other non-ASCII and punctuation left out, each run of spaces and hyphens one hyphen."""
    value = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    value = re.sub(r"[^\w\s-]", "", value).strip().lower()
    return re.sub(r"[-\s]+", "-", value)


# Sites that read an attribute list after a heading (Hugo's goldmark by default, MkDocs' attr_list,
# VitePress's markdown-it-attrs): classes and key=value pairs, without an id (an id is the anchor).
_ATTRIBUTE_SITES = ("hugo", "mkdocs", "vitepress", "zola")
# Tried on the last `{...}` of the text only, and read one way (a class is `.` then anything but
# braces and `#`), so a long heading is read in linear time.
_ATTRIBUTES = re.compile(r"\{:?[ \t]*(?:\.|[A-Za-z_][\w-]*=)[^{}#]*\}")


def _mintlify_components(text: str) -> tuple[list[str], set[str]]:
    """The titles and labels of a Mintlify page's components whose ids derive from them, and the ids
    its components name outright (an `id`, an API field's `param-` id)."""
    titles: list[str] = []
    ids: set[str] = set()
    if "<" not in text:
        return titles, ids
    for m in itertools.islice(_MINTLIFY_TAG.finditer(text), 5000):
        attrs = {
            a.group(1): unescape(a.group(2) or a.group(3) or "") for a in _ATTRIBUTE.finditer(m.group(2))
        }
        tag = m.group(1)
        if attrs.get("id"):
            ids.add(attrs["id"])
        if tag in ("Accordion", "Tab") and not attrs.get("id") and attrs.get("title"):
            titles.append(attrs["title"])
        elif tag == "Update" and attrs.get("label"):
            titles.append(attrs["label"])
        elif tag in ("ResponseField", "ParamField"):
            field = next((attrs[k] for k in _FIELD_NAMES if attrs.get(k)), "")
            if field:
                ids.update({"param-" + field.replace(".", "-"), "param-" + mintlify_slug(field)})
    return titles, ids


# pymdownx.snippets: `--8<-- "name"` alone on its line (a blank or more between; none after), or a
# bare `--8<--` opening or closing a block of names; a `;` before it turns it off. Read one way: a
# single run of blanks, so a line of 40,000 of them costs its length once.
_SNIPPET_LINE = re.compile(r"""^[ \t]*-{1,}8<-{1,}(?:[ \t]+(['"])([^'"\n]{1,500})\1)?\r?$""", re.M)
# A snippet's name may end in line ranges or a section (`part.md:3:10`, `part.md:intro`).
_SNIPPET_PAGE = re.compile(r"\.(?:md|mdx|markdown)(?::[^/\\]*)?$", re.I)


def _templated(text: str, headings: list[tuple[str, str | None]]) -> bool:
    """Whether Jinja renders a heading of the page: a heading written with a template (`## {{ name }}
    settings`), or a template alone on a line, outside code, HTML comments and `{% raw %}` blocks."""
    if any(own is None and ("{{" in t or "{%" in t) for t, own in headings):
        return True
    shown = _without_code(text)
    for start, end in reversed(raw_spans(shown)):
        shown = shown[:start] + shown[end:]
    # Indented code (four blanks) is code here: a template there is shown, not rendered.
    return any(not m.group(0).startswith(("    ", "\t")) for m in _TEMPLATE_LINE.finditer(shown))


def _includes_markdown_snippet(doc: Document) -> bool:
    """Whether a page includes a Markdown file with pymdownx.snippets where its text renders as
    Markdown: a `--8<--` line naming a page file, or a block of names (which may name one), outside
    code and HTML (what the snippet writes there is code, or a comment's text, and has no heading)."""
    hits = [
        m.start()
        for m in itertools.islice(_SNIPPET_LINE.finditer(doc.text), 1000)
        if m.group(2) is None or _SNIPPET_PAGE.search(m.group(2).strip())
    ]
    if not hits:
        return False
    verbatim = doc.verbatim_lines()
    line_at = doc.line_starts()
    return any(not _within_ranges(verbatim, bisect.bisect_right(line_at, at) - 1) for at in hits)


def _within_ranges(ranges: list[tuple[int, int]], line: int) -> bool:
    """Whether `line` lies in one of the ordered, non-overlapping ranges [start, end)."""
    i = bisect.bisect_right(ranges, (line, float("inf"))) - 1
    return i >= 0 and ranges[i][0] <= line < ranges[i][1]


# Docsify's `[x](part.md ':include')`: an embed, its destination and its title's options.
_DOCSIFY_EMBED = re.compile(
    r"""\]\(\s*<?([^()\s<>]{1,300})>?\s+(["'])([^"'\n]{0,200}?:include[^"'\n]{0,200})\2"""
)
_EMBED_TYPE = re.compile(r":type=(\w+)")
_EMBED_TYPES = frozenset({"markdown", "mermaid", "iframe", "video", "audio", "code"})


def _embeds_markdown(text: str) -> bool:
    """Whether a Docsify page embeds Markdown (`compileEmbed`): a `:type=markdown` embed, or one of no
    known type whose destination holds `.md` or `.markdown`."""
    for m in itertools.islice(_DOCSIFY_EMBED.finditer(text), 500):
        kind = _EMBED_TYPE.search(m.group(3))
        if kind is not None and kind.group(1) in _EMBED_TYPES:
            if kind.group(1) == "markdown":
                return True
        elif re.search(r"\.(?:md|markdown)", m.group(1)):
            return True
    return False


# VitePress' include (`processIncludes`: `<!--\s*@include:\s*(.*?)\s*-->`), blanks allowed.
_VP_INCLUDE = re.compile(r"<!--\s*@include:")


def _renders_vue_component(text: str) -> bool:
    """Whether a VitePress page imports a Vue single-file component (in its `<script>`) and renders a
    component alone on a line (`<ApiIndex />`)."""
    return "<script" in text and ".vue" in text and _COMPONENT_TAG.search(text) is not None


def _renders_partial(text: str) -> bool:
    """Whether an MDX page imports a Markdown file and renders it (`<Setup />`), as Mintlify snippets
    and Docusaurus partials are: the file's headings get ids in the page."""
    if "import" not in text:
        return False
    return any(
        re.search(rf"<{re.escape(m.group(1))}[\s/>]", text) is not None
        for m in itertools.islice(_IMPORT_PARTIAL.finditer(text), 100)
    )


def _inserts_markdown(doc: Document) -> bool:
    """Whether a page holds a shortcode alone on a line outside code, not paired, whose output Hugo
    renders as Markdown: what it writes (another page's text, headings from front matter) is not in
    the file. In a fence its output is code (kind's `{{% readFile "x.yaml" %}}`)."""
    offsets = markdown_shortcodes_alone(doc.text)
    if not offsets:
        return False
    fences = [(b.start, b.end + 1) for b in doc.blocks]  # a block's `end` is its closing line
    line_at = doc.line_starts()
    return any(not _within_ranges(fences, bisect.bisect_right(line_at, at) - 1) for at in offsets)


def _strip_attributes(text: str) -> str:
    """A heading's text without an attribute list at its end that names no id (`{.note lang=en}`)."""
    if not text.endswith("}"):
        return text
    start = text.rfind("{")
    if start < 0 or not _ATTRIBUTES.fullmatch(text, start):
        return text
    return text[:start].rstrip(" \t")


def mintlify_slug(text: str) -> str:
    """A heading's id as Mintlify documents making it: lower case, whitespace to hyphens, periods to
    hyphens, parentheses dropped, a straight apostrophe as `’`; other characters (`/`, `&`, `:`,
    `_`) kept (`Fees & billing` is `fees-&-billing`, `What's new` is `what’s-new`)."""
    lowered = text.strip().lower().replace("'", "\u2019").replace(".", "-")
    return _WHITESPACE.sub("-", lowered.replace("(", "").replace(")", ""))


def blackfriday_slug(text: str) -> str:
    """A heading's id under Hugo's `autoHeadingIDType = "blackfriday"`: runs of letters and digits,
    lower-cased, joined by one hyphen (every other character separates them)."""
    words: list[str] = []
    word: list[str] = []
    for ch in text:
        if ch.isalpha() or ch.isnumeric():
            word.append(ch.lower())
        elif word:
            words.append("".join(word))
            word = []
    if word:
        words.append("".join(word))
    return "-".join(words)


def github_ascii_slug(text: str) -> str:
    """A heading's id under Hugo's `autoHeadingIDType = "github-ascii"`: GitHub's, with accents taken
    off and the non-ASCII characters left out."""
    plain = "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))
    return "".join(ch for ch in slugify(plain) if ch.isascii())


_HUGO_RULES = {"blackfriday": blackfriday_slug, "github-ascii": github_ascii_slug}


# VitePress (@mdit-vue/shared) turns these runs into one hyphen: white space, ASCII punctuation but
# the hyphen-less few it keeps, and typographic quotes.
_VP_SPECIAL = re.compile(r"""[\s~`!@#$%^&*()\-_+=\[\]{}|\\;:"'\u201c\u201d\u2018\u2019<>,.?/]+""")
_VP_CONTROL = re.compile(r"[\x00-\x1f]")


_VP1_SPECIAL = re.compile(
    r"""[\s~`!@#$%^&*()\-_+=\[\]{}|\\;:"'\u201c\u201d\u2018\u2019\u2013\u2014<>,.?/]+"""
)


def vuepress1_slug(text: str) -> str:
    """A heading's anchor as VuePress 1 makes it: VitePress' rule (which came from it), but en and em
    dashes are separators too."""
    return vitepress_slug(_VP1_SPECIAL.sub("-", text))


_ZOLA_WORD = re.compile(r"[a-z0-9]+")


def zola_slug(text: str) -> str:
    """A heading's id as Zola makes it by default (`slugify` "on", the `slug` crate): each run of ASCII
    letters and digits, lower-cased, joined by one `-`. Other characters are transliterated first
    (deunicode), which is not done here: `page_anchors` leaves such a page's ids unknown."""
    return "-".join(_ZOLA_WORD.findall(text.lower()))


def zola_path_slug(text: str) -> str:
    """A name as Zola slugifies it in a path: `zola_slug` after accents are taken off (deunicode
    transliterates more: other letters are dropped here)."""
    plain = unicodedata.normalize("NFKD", text)
    return zola_slug("".join(ch for ch in plain if not unicodedata.combining(ch)))


def zola_plain_id(text: str) -> str:
    """A heading's id as Zola makes it with `slugify.anchors` "safe" or "off": ASCII blanks as `_`."""
    return re.sub(r"[\t\n\x0b\x0c\r ]", "_", text)


def _is_mark(ch: str) -> bool:
    """Whether `ch` is a combining mark (Unicode category M*)."""
    return not ch.isascii() and unicodedata.category(ch).startswith("M")


def gitbook_anchors(text: str) -> set[str]:
    """The anchors GitBook's editor writes for a heading into a synced page: lower case, each run of
    characters other than letters, digits, `_` and `.` one hyphen, none at the ends (`Abuse via
    .git/config` is `abuse-via-.git-config`, `Environment variable(s)` is `environment-variable-s`);
    `&` as `and` or as a separator (both are found in synced pages); one that starts with a digit
    also with `id-` before it (`1. Create an app` is `id-1.-create-an-app`, as newer spaces write it)."""
    lowered = text.strip().lower()
    found: set[str] = set()
    for variant in {lowered, lowered.replace("&", " and ")}:
        # A combining mark belongs to its letter (`हिन्दी`, a decomposed `é`, the dot `İ` lowers to).
        slug = "".join(ch if ch.isalnum() or ch in "_." or _is_mark(ch) else " " for ch in variant)
        slug = "-".join(slug.split())
        if slug:
            found.add(slug)
            if slug[0].isdigit():
                found.add("id-" + slug)
    return found


def vitepress_slug(text: str) -> str:
    """A heading's anchor as VitePress makes it: NFKD without combining marks, punctuation runs to
    one hyphen, no hyphen at the ends, `_` before a leading digit, lower case."""
    plain = "".join(ch for ch in unicodedata.normalize("NFKD", text) if not 0x300 <= ord(ch) <= 0x36F)
    slug = _VP_SPECIAL.sub("-", _VP_CONTROL.sub("", plain))
    slug = re.sub(r"-{2,}", "-", slug).strip("-")
    if slug[:1].isdigit():
        slug = "_" + slug
    return slug.lower()
