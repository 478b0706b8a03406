"""Attacks on the Astro conventions for generated content: HTML in JavaScript strings, attributes in
escaped text, and `redirects` spread from a file beside the config (see tests/engine/test_astro_generated.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from udm.markdown import parse_document
from udm.markdown.mdx import attr_links
from udm.site.jsconfig import _astro_redirects, astro_redirect_files

SLOW = 2.0


def _attrs(content: str) -> list[str]:
    found: list[tuple[int, str, str]] = []
    attr_links(content, 0, "jsx", found)
    return [target for _, target, _ in found]


def _best(fn, *args):  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(2):
        started = time.process_time()
        fn(*args)
        best = min(best, time.process_time() - started)
    return best


@pytest.mark.parametrize(
    "content",
    [
        ' href=\\"' + "a" * 1_000_000,  # an escaped value never closed
        ' href=\\"a' * 100_000,
        "&lt;" + " href=x" * 150_000,  # escaped text ahead of many attributes
        ("&lt;a " + "b" * 1500 + " href='x' ") * 500,
        "<a" + " href=\\'\\\\" * 100_000,
    ],
    ids=["unclosed", "many-unclosed", "escaped-then-many", "wide-escaped", "escaped-backslashes"],
)
def test_hostile_attribute_text_is_read_in_bounded_time(content: str) -> None:
    assert _best(_attrs, content) < SLOW


_PIECE = st.sampled_from(
    [
        "<a ",
        ' href="x.md"',
        ' href=\\"js.md\\"',
        " src='y.png'",
        "&lt;",
        "&gt;",
        ">",
        "<br />",
        " &quot;",
        "é",
        "\n",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECE, max_size=40))
def test_links_in_escaped_text_or_js_strings_are_never_invented(pieces: list[str]) -> None:
    # Every target is one the pieces wrote: no `\`, no quote or entity left in a target.
    for target in _attrs("".join(pieces)):
        assert target in ("x.md", "js.md", "y.png"), (pieces, target)


def test_a_link_in_a_js_string_keeps_its_line_in_non_ascii_text() -> None:
    text = '# Ré\n\nÀ propos.\n\n<Fragment set:html={"<p>é</p>\\n<a href=\\"/guides/à\\">x</a>"} />\n'
    doc = parse_document(text, "p.mdx")
    assert [(k.line, k.target) for k in doc.links] == [(4, "/guides/à")]


def _config(here: Path, source: str) -> str:
    return (
        f"import spread from '{source}';\nimport starlight from '@astrojs/starlight';\n"
        "export default { integrations: [starlight({})], redirects: { ...spread, '/own': '/x' } };\n"
    )


@pytest.mark.parametrize(
    "source",
    ["../outside.js", "./link-out.js", "/etc/passwd.js", "pkg/redirects.js", "./dir.js", "./fifo.js"],
)
def test_a_spread_file_outside_the_folder_or_no_regular_file_is_not_read(tmp_path: Path, source: str) -> None:
    import os

    here = tmp_path / "site"
    here.mkdir()
    (tmp_path / "outside.js").write_text("export default { '/secret': '/x' };\n")
    (here / "link-out.js").symlink_to(tmp_path / "outside.js")
    (here / "dir.js").mkdir()
    os.mkfifo(here / "fifo.js")
    text = _config(here, source)
    started = time.perf_counter()
    assert astro_redirect_files(here, text) == []
    assert _astro_redirects(text, here) == [("/own", "/x")]
    assert time.perf_counter() - started < SLOW


def test_thousands_of_spreads_read_a_handful_of_files(tmp_path: Path) -> None:
    here = tmp_path
    names = [f"r{i}" for i in range(3000)]
    for n in names[:10]:
        (here / f"{n}.js").write_text(f"export default {{ '/{n}': '/x' }};\n")
    text = "".join(f"import {n} from './{n}.js';\n" for n in names)
    text += "export default { redirects: { " + ", ".join(f"...{n}" for n in names) + " } };\n"
    started = time.perf_counter()
    pairs = _astro_redirects(text, here)
    assert time.perf_counter() - started < SLOW
    assert len(astro_redirect_files(here, text)) == 5 and len(pairs) == 5


@pytest.mark.parametrize(
    "body",
    [
        "module.exports = { '/a': '/b' };\n",
        "export const r = { '/a': '/b' };\n",
        "export default makeRedirects();\n",
    ],
)
def test_a_spread_file_of_another_shape_adds_nothing_and_fails_nothing(tmp_path: Path, body: str) -> None:
    (tmp_path / "redirects.js").write_text(body)
    pairs = _astro_redirects(_config(tmp_path, "./redirects.js"), tmp_path)
    # module.exports is read as the config reader reads a config; the others hold no object to read.
    assert pairs in ([("/own", "/x")], [("/a", "/b"), ("/own", "/x")], [("/own", "/x"), ("/a", "/b")])
