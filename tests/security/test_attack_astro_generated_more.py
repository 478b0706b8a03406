"""More attacks on the Astro conventions for generated content (see tests/engine/test_astro_generated.py
and tests/security/test_attack_astro_generated.py): attributes of real tags whose earlier values hold
`&lt;`, other spellings of an escaped `<`, JavaScript escapes beyond `\\x`, the line counting of many
links in one JSX span, and the `redirects` spread files: their cap, commented imports, the order of
keys and a spread file that appears after the site was cached."""

from __future__ import annotations

import os
import time
from html import unescape
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from udm.markdown import parse_document
from udm.markdown.mdx import attr_links
from udm.site.detect import site_for
from udm.site.jsconfig import _astro_redirects, astro_redirect_files
from udm.site.routes import detect_site

from ..engine.conftest import write_tree

SLOW = 2.0


def _found(content: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str, str]] = []
    attr_links(content, 0, "jsx", out)
    return [(at, target) for at, target, _ in out]


def _attrs(content: str) -> list[str]:
    return [target for _, target in _found(content)]


def _best(fn, *args, runs: int = 2) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(runs):
        started = time.process_time()
        fn(*args)
        best = min(best, time.process_time() - started)
    return best


# ----- attributes: a property against a reference --------------------------------------------------

_TARGETS = ["/a", "b.md", "/c/d", "https://x.org/p?q=1", "/é/ü"]


def _real(kind: str, target: str) -> tuple[str, int, str]:
    """(text, offset of the attribute's name in it, target) of a real tag."""
    if kind == "dq":
        return f'<a href="{target}">x</a>', 3, target
    if kind == "sq":
        return f"<img src='{target}' />", 5, target
    if kind == "unquoted":
        target = target.split("=")[0]  # HTML's unquoted values hold no `=`
        return f"<a href={target}>x</a>", 3, target
    if kind == "js-dq":
        return '<a href=\\"' + target.replace("/", "\\/") + '\\">x</a>', 3, target
    if kind == "js-sq":
        return "<a href=\\'" + target + "\\'>x</a>", 3, target
    if kind == "titled":  # an escaped `<` in an earlier value of the same, real tag
        text = f'<a title="1 &lt; 2" href="{target}">x</a>'
        return text, text.index("href"), target
    if kind == "js-titled":
        text = '<a title=\\"a &#x3C; b\\" href=\\"' + target + '\\">x</a>'
        return text, text.index("href"), target
    if kind == "expr":
        text = f'<Card icon={{<Icon name="i" />}} href={{"{target}"}} />'
        return text, text.index("href"), target
    raise AssertionError(kind)


_ESCAPED = [
    '&lt;a href="no1.md"&gt;',
    "&lt;img src=&quot;no2.png&quot; /&gt;",
    "&#60;a href='no3.md'&#62;",
    '&lt;a target="_blank"\nhref="no4.md"&gt;',
    "&lt;Script<br /><strong>8</strong> src=&quot;no5.js&quot;",
    '&lt;a href=\\"no6.md\\"&gt;',  # escaped text in a JavaScript string
    "&#60;img src=\\'no7.png\\' /&#62;",
    "&#x3C;a href='no8.md'&#x3E;",
    "&LT;a href='no9.md'&GT;",
    "&lt;a title=&quot;q&quot; href='no10.md'&gt;",
]
_NOISE = [
    " text ",
    "é",
    "🎉",
    "日本語",
    "\n",
    " &gt; ",
    " a &lt; b ",
    "<br />",
    "</p>",
    "<p>",
    '"',
    "'",
    "\\",
]

_PIECE = st.one_of(
    st.tuples(
        st.just("real"),
        st.sampled_from(["dq", "sq", "unquoted", "js-dq", "js-sq", "titled", "js-titled", "expr"]),
        st.sampled_from(_TARGETS),
    ),
    st.tuples(st.just("escaped"), st.sampled_from(_ESCAPED), st.just("")),
    st.tuples(st.just("noise"), st.sampled_from(_NOISE), st.just("")),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECE, max_size=30))
def test_real_attributes_are_found_at_their_byte_offsets_and_shown_ones_never(
    pieces: list[tuple[str, str, str]],
) -> None:
    text = ""
    expected: list[tuple[int, str]] = []
    for what, a, b in pieces:
        if what == "real":
            chunk, at, target = _real(a, b)
            expected.append((len((text + " ").encode("utf-8")) + at, target))
            text += " " + chunk
        else:
            text += a
    assert _found(text) == expected, text


# ----- attributes: real links lost -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "target"),
    [
        ('<a title="1 &lt; 2" href="/real">x</a>', "/real"),
        ('<img alt="the &lt;b&gt; tag" src="/shot.png" />', "/shot.png"),
        ('<Card\n  title="Less &lt; more"\n  href="/guides/more"\n/>', "/guides/more"),
        ('<Fragment set:html={"<a title=\\"a &lt; b\\" href=\\"/js\\">x</a>"} />', "/js"),
    ],
    ids=["title", "alt", "multiline-jsx", "js-string"],
)
def test_an_entity_in_an_earlier_attribute_value_hides_no_real_link(content: str, target: str) -> None:
    # A `&lt;` inside a quoted value of the tag the attribute belongs to opens no shown tag.
    assert _attrs(content) == [target]


def test_a_long_real_tag_with_an_entity_in_a_value_keeps_its_link() -> None:
    # The tag's `<` is more than _TAG_REACH back; a `&lt;` in its long value is nearer.
    content = '<img alt="' + "x" * 3000 + ' &lt; y" src="/img.png" />'
    assert _attrs(content) == ["/img.png"]


def test_a_real_link_after_escaped_text_and_nested_jsx_is_kept() -> None:
    content = (
        "<p>&lt;a href=&quot;no.md&quot;&gt;</p>\n"
        '<Card icon={<Icon name="x" />} title={<b>t &amp; u</b>} href="/after" />'
    )
    assert _attrs(content) == ["/after"]


# ----- attributes: false links from other spellings of escaped text ---------------------------------


@pytest.mark.parametrize(
    "content",
    [
        "&#x3C;a href='hex.md'&#x3E;",
        "&#X3c;a href='hex2.md'&#X3e;",
        "&#060;a href='zero.md'&#062;",
        "&LT;a href='upper.md'&GT;",
    ],
    ids=["hex", "hex-upper-x", "leading-zero", "upper-name"],
)
def test_other_spellings_of_an_escaped_angle_bracket_show_no_link(content: str) -> None:
    # html.unescape reads each of these as `<`: hex, leading zeros and upper case alike.
    assert _attrs(content) == []


def test_a_quote_entity_without_its_semicolon_gives_no_quoted_target() -> None:
    # html.unescape reads `&quot` without `;` as a quote: the target would be `"x.png"`, quotes and all.
    content = "<p>displayed<br/> src=&quotx.png&quot</p>"
    for target in _attrs(content):
        assert '"' not in target, target


@pytest.mark.parametrize(
    ("content", "target"), [('<img src=a\\b.png alt="w">', "a\\b.png"), ("<a href=x\\y>", "x\\y")]
)
def test_an_unquoted_value_keeps_its_inner_backslash(content: str, target: str) -> None:
    assert _attrs(content) == [target]


def test_an_escaped_value_broken_by_a_raw_quote_or_newline_is_no_link() -> None:
    assert _attrs('<a href=\\"/half"> <a href=\\"/x\n\\">') == []
    assert _attrs("<a href=\\'/half'>") == []


# ----- attributes: JavaScript escapes ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("escaped", "target"),
    [
        ("\\/guides\\/a", "/guides/a"),
        ("C:\\\\docs", "C:\\docs"),  # an escaped backslash is one backslash
        ("/it\\'s", "/it's"),
        ("/a\\u002Fb", "/a/b"),
        ("/a?x=1\\u0026y=2", "/a?x=1&y=2"),  # Go's and others' JSON escape & as \u0026
        ("/a\\x2Fb", "/a/b"),
        ("/caf\\u00e9", "/café"),
        ("/a\\u{2F}b", "/a/b"),
    ],
    ids=["slash", "backslash", "quote", "u-slash", "u-amp", "x-slash", "u-accent", "u-brace"],
)
def test_a_js_string_value_has_its_escapes_undone(escaped: str, target: str) -> None:
    content = '<Fragment set:html={"<a href=\\"' + escaped + '\\">x</a>"} />'
    assert _attrs(content) == [target]


# ----- attributes: time -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        "&lt;" + "b" * 2000 + " href=x" * 150_000,  # escaped text then a window of attributes each
        ' href=\\"' + "\\\\" * 500_000,  # an escaped value of escaped backslashes, never closed
        (' href=\\"' + "a\\'" * 100 + "\n") * 5_000,
        ("&#60;" + " src=\\'x\\'" * 200) * 500,
    ],
    ids=["escaped-window", "escaped-backslashes", "lines-unclosed", "entity-and-js"],
)
def test_attribute_text_of_a_megabyte_is_read_in_bounded_time(content: str) -> None:
    assert _best(_attrs, content) < SLOW


def test_src_attributes_with_no_tag_before_them_are_read_in_linear_time() -> None:
    # Each `src` looks back for its tag's name; unbounded, 1 MB of them with no `<` took ~1.3 s and
    # 2 MB (a file is allowed 8 MiB) ~5 s.
    assert _best(_attrs, " src=x" * 340_000, runs=1) < SLOW


def test_many_links_of_one_js_string_in_an_mdx_page_are_read_in_linear_time() -> None:
    # A link's line is looked up, not counted from the span's start for each link (which was
    # quadratic in a large <Fragment set:html>).
    text = '# R\n\n<Fragment set:html={"' + '<a href=\\"/x\\">x</a> ' * 40_000 + '"} />\n'
    assert _best(lambda: parse_document(text, "x.mdx").links, runs=1) < SLOW


def test_js_string_links_over_lines_keep_their_lines_in_non_ascii_text() -> None:
    text = (
        "# Ré\n\nÀ propos 🎉.\n\n"
        '<Fragment set:html={"<p>é🎉</p><a href=\\"\\/one\\">x</a>" +\n'
        '  "日本 <a href=\\"/two\\">y</a> &lt;a href=\\"/no\\"&gt;"} />\n'
    )
    doc = parse_document(text, "p.mdx")
    assert [(k.line, k.target) for k in doc.links] == [(4, "/one"), (5, "/two")]


# ----- redirects spread from files ------------------------------------------------------------------


def _config(spread: str, imports: str, own: str = "'/own': '/x'") -> str:
    return (
        f"{imports}import starlight from '@astrojs/starlight';\n"
        f"export default {{ integrations: [starlight({{}})], redirects: {{ {own}, {spread} }} }};\n"
    )


@pytest.mark.parametrize(
    "source",
    [
        "./sub/../../outside.js",
        "./linked/r.js",
        "./../site-other/r.js",
        "pkg",
        "@scope/pkg/redirects.json",
        "/abs/outside.js",
        "file:///abs/outside.js",
    ],
)
def test_an_import_that_leaves_the_folder_is_not_read(tmp_path: Path, source: str) -> None:
    here = tmp_path / "site"
    (here / "sub").mkdir(parents=True)
    write_tree(tmp_path, {"outside.js": "export default { '/secret': '/x' };\n"})
    write_tree(tmp_path, {"site-other/r.js": "export default { '/secret': '/x' };\n"})
    write_tree(tmp_path, {"out/r.js": "export default { '/secret': '/x' };\n"})
    (here / "linked").symlink_to(tmp_path / "out")
    text = _config("...r", f"import r from '{source}';\n")
    assert astro_redirect_files(here, text) == []
    assert _astro_redirects(text, here) == [("/own", "/x")]


def test_a_link_inside_the_folder_to_a_file_inside_is_read(tmp_path: Path) -> None:
    write_tree(tmp_path, {"gen/r.js": "export default { '/a': '/b' };\n"})
    (tmp_path / "r.js").symlink_to(tmp_path / "gen/r.js")
    text = _config("...r", "import r from './r.js';\n")
    assert _astro_redirects(text, tmp_path) == [("/own", "/x"), ("/a", "/b")]


def test_a_sparse_huge_spread_file_is_passed_over_quickly(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    with path.open("wb") as fh:
        fh.write(b'{"/a": "/b",')
        fh.truncate(4 << 30)  # 4 GiB, sparse
    text = _config("...r", "import r from './r.json';\n")
    started = time.perf_counter()
    assert _astro_redirects(text, tmp_path) == [("/own", "/x")]
    assert time.perf_counter() - started < SLOW


def test_a_spread_file_of_a_megabyte_of_pairs_is_read_in_bounded_time(tmp_path: Path) -> None:
    body = "export default {\n" + "".join(
        f"  '/r{i}': {{ status: 301, destination: '/d{i}' }},\n" for i in range(18_000)
    )
    body += "};\n"
    assert len(body) < 1 << 20
    (tmp_path / "r.js").write_text(body)
    text = _config("...r", "import r from './r.js';\n")
    started = time.perf_counter()
    pairs = _astro_redirects(text, tmp_path)
    assert time.perf_counter() - started < SLOW
    assert len(pairs) == 18_001 and pairs[-1] == ("/r17999", "/d17999")


def test_a_device_named_like_the_file_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "r.js").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "f.json")
    text = _config("...r, ...f", "import r from './r.js';\nimport f from './f.json';\n")
    started = time.perf_counter()
    assert astro_redirect_files(tmp_path, text) == []
    assert _astro_redirects(text, tmp_path) == [("/own", "/x")]
    assert time.perf_counter() - started < SLOW


def test_rest_parameters_in_redirect_routes_do_not_use_up_the_spreads(tmp_path: Path) -> None:
    # Astro's rest parameters (`'/blog/[...slug]'`) are strings, not spreads: they take no place of
    # the five spreads read.
    (tmp_path / "redirects.js").write_text("export default { '/gen': '/b' };\n")
    own = ", ".join(f"'/{n}/[...{n}]': '/new/{n}/[...{n}]'" for n in ("slug", "path", "rest", "page", "id"))
    text = _config("...generated", "import generated from './redirects.js';\n", own=own)
    assert ("/gen", "/b") in _astro_redirects(text, tmp_path)
    assert astro_redirect_files(tmp_path, text) == [(tmp_path / "redirects.js").resolve()]


def test_a_commented_out_import_does_not_name_the_spread_file(tmp_path: Path) -> None:
    # The import is looked for in the config's code, not its comments.
    (tmp_path / "old.js").write_text("export default { '/old': '/b' };\n")
    (tmp_path / "redirects.js").write_text("export default { '/new': '/b' };\n")
    imports = "// import generated from './old.js';\nimport generated from './redirects.js';\n"
    text = _config("...generated", imports)
    pairs = _astro_redirects(text, tmp_path)
    assert ("/new", "/b") in pairs and ("/old", "/b") not in pairs


def test_a_key_spread_after_an_own_one_wins_as_in_javascript(tmp_path: Path) -> None:
    # `{ '/a': '/own', ...generated }`: the spread's '/a' replaces the own one; redirects are matched
    # first to last, and the spread's pairs come after the block's.
    (tmp_path / "redirects.js").write_text("export default { '/a': '/generated' };\n")
    text = _config("...generated", "import generated from './redirects.js';\n", own="'/a': '/own'")
    pairs = _astro_redirects(text, tmp_path)
    assert next(dest for src, dest in pairs if src == "/a") == "/generated"


def _starlight_site(tmp_path: Path, config: str) -> Path:
    site = tmp_path / "site"
    write_tree(
        site,
        {
            "astro.config.mjs": config,
            "src/content/docs/guides/start.md": "# Start\n",
            "src/content/docs/index.md": "# Home\n",
        },
    )
    (tmp_path / ".git").mkdir()
    return site


def test_a_spread_file_written_after_the_site_was_read_is_read_again(tmp_path: Path) -> None:
    # A `redirects.js` a build generates after the site was cached joins the stamp when it appears.
    config = _config("...generated", "import generated from './redirects.js';\n")
    site = _starlight_site(tmp_path, config)
    docs = site / "src/content/docs"
    first = site_for(docs, stop=tmp_path)
    assert not any(src == "/gen" for src, _ in first.redirects)
    (site / "redirects.js").write_text("export default { '/gen': '/guides/start' };\n")
    assert ("/gen", "/guides/start") in detect_site(docs, stop=tmp_path).redirects
    assert ("/gen", "/guides/start") in site_for(docs, stop=tmp_path).redirects


def test_an_edited_spread_file_is_read_again(tmp_path: Path) -> None:
    config = _config("...generated", "import generated from './redirects.json';\n")
    site = _starlight_site(tmp_path, config)
    docs = site / "src/content/docs"
    (site / "redirects.json").write_text('{"/one": "/guides/start"}')
    assert ("/one", "/guides/start") in site_for(docs, stop=tmp_path).redirects
    (site / "redirects.json").write_text('{"/two": "/guides/start", "/three": "/x"}')
    again = site_for(docs, stop=tmp_path).redirects
    assert ("/two", "/guides/start") in again and not any(src == "/one" for src, _ in again)


def _js_escaped(text: str) -> str:
    """`text` written as JavaScript's `\\uXXXX` escapes, a character beyond the BMP as its two halves."""
    halves = text.encode("utf-16-be")
    return "".join(f"\\u{int.from_bytes(halves[i : i + 2], 'big'):04X}" for i in range(0, len(halves), 2))


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp")), min_size=1))
def test_a_target_written_in_unicode_escapes_is_read_back_whole(target: str) -> None:
    content = '<Fragment set:html={"<a href=\\"' + _js_escaped(target) + '\\">x</a>"} />'
    assert _attrs(content) == ([unescape(target).strip()] if unescape(target).strip() else [])


@pytest.mark.parametrize(
    ("escaped", "target"),
    [("/\\uD83C\\uDF89", "/🎉"), ("/a\\uD800b", "/a\ufffdb"), ("/a\\u{110000}", "/a\ufffd")],
    ids=["pair", "lone-half", "beyond-unicode"],
)
def test_surrogates_and_code_points_beyond_unicode_give_text_that_encodes(escaped: str, target: str) -> None:
    content = '<Fragment set:html={"<a href=\\"' + escaped + '\\">x</a>"} />'
    found = _attrs(content)
    assert found == [target]
    found[0].encode("utf-8")
