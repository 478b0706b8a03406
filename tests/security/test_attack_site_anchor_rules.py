"""Attacks on this round's anchor and link rules: Mintlify component ids, MDX partials, Vue component
pages, character references in ids, text fragments, case-folded anchors and Docusaurus file links.
Every input is page text or a link target an author or an agent controls; each must cost time
linear in its size and never make a link land outside the manual's site.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from udm.site import LinkResolver, Routes
from udm.site.anchors import explicit_anchors, mintlify_slug, page_anchors
from udm.site.model import Site

from ..engine.conftest import cpu_seconds, page_verdicts, site_settings

MINTLIFY = Site(generator="mintlify")
VITEPRESS = Site(generator="vitepress")


def _seconds(fn: object, *args: object) -> float:
    return cpu_seconds(lambda: fn(*args))  # type: ignore[operator]


@pytest.mark.parametrize(
    ("site", "unit"),
    [
        # An import line whose path never closes: each must not rescan the rest of the page.
        (MINTLIFY, "import A from '/snippets/" + "x" * 40 + "\n"),
        (MINTLIFY, "<Tab " + "title=" * 30 + "\n"),
        (MINTLIFY, '<ResponseField name="' + "a." * 40 + '" ' + "x=" * 20 + "\n"),
        (MINTLIFY, "<Update label='" + "L" * 60 + "\n"),
        (VITEPRESS, "<script setup>import X from './X.vue'\n<Comp " + "a" * 60 + "\n"),
    ],
)
def test_crafted_component_runs_cost_linear_time(site: Site, unit: str) -> None:
    small = "# T\n\n" + unit * 500
    large = "# T\n\n" + unit * 5000
    page = "p.mdx"
    t_small = min(_seconds(page_anchors, site, page, small) for _ in range(2))
    t_large = min(_seconds(page_anchors, site, page, large) for _ in range(2))
    # Ten times the text: well under a hundred times the time (quadratic would be ~100x).
    assert t_large < max(0.5, 25 * t_small), (t_small, t_large)


def test_many_entity_ids_cost_linear_time() -> None:
    unit = '<div id="a&#x5F;' + "&amp;" * 20 + '">x</div>\n'
    t_small = min(_seconds(explicit_anchors, unit * 1000) for _ in range(2))
    t_large = min(_seconds(explicit_anchors, unit * 10000) for _ in range(2))
    assert t_large < max(0.5, 25 * t_small), (t_small, t_large)


@given(st.text(max_size=300))
def test_mintlify_ids_of_any_page_text_are_strings_without_whitespace(text: str) -> None:
    found, unknown = page_anchors(MINTLIFY, "p.mdx", text)
    assert isinstance(unknown, bool)
    assert all(isinstance(a, str) for a in found)
    assert mintlify_slug(text) == mintlify_slug(mintlify_slug(text))


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    fragment=st.text(alphabet=":~=#%&.-_aAbBtex", max_size=30),
)
def test_a_crafted_fragment_never_lands_on_another_page(tmp_path: Path, fragment: str) -> None:
    """Text fragments and case folding read only the fragment: the page a link lands on is its path's."""
    site = Site()
    routes = Routes(site, ["a.md", "b.md"])
    resolver = LinkResolver(routes, lambda rel: rel in ("a.md", "b.md"))
    found = resolver.locate("a.md", "b.md#" + fragment)
    assert found.file == "b.md"
    assert found.fragment is None or ":~:" not in found.fragment


def test_an_id_that_decodes_to_markup_is_only_an_anchor(tmp_path: Path) -> None:
    """`id="&lt;script&gt;x"` decodes to text that is an anchor name and nothing else: links to it
    (a link's destination is decoded too, as CommonMark says) resolve, one to the encoded form
    written as text does not, and nothing of it is read as markup."""
    settings = site_settings(
        tmp_path,
        {
            "b.md": '# B\n\n<div id="&lt;script&gt;x">y</div>\n',
            "index.md": "# Home\n\n[a](b.md#%3Cscript%3Ex) [b](b.md#&lt;script&gt;x) [c](b.md#&amp;lt;script)\n",
        },
    )
    verdicts = page_verdicts(settings, "index.md")
    assert verdicts == {"b.md#<script>x": True, "b.md#&lt;script": False}
