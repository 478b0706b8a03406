"""Jekyll's Liquid links, on the Jekyll site fixture of test_jekyll_site.py: Jekyll renders Liquid
before Markdown, so `[t]({{ '/docs/x/' | relative_url }})`, `[t]({{ site.baseurl }}/x/)`,
`[t]({% link _docs/x.md %})` and `[t]({% post_url 2024-01-02-x %})` are links on the site although
CommonMark reads none where the Liquid holds a space. On Jekyll's own docs 91 such links were never
seen before (and 15 in HTML attributes were left unchecked); all resolve. Liquid the build computes
(`{{ site.repository }}/issues`) stays unchecked, as does Liquid in code or between raw tags."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from udm.config import load_settings
from udm.markdown import LiquidTarget, liquid_target, parse_document
from udm.markdown.liquid import find_liquid_links

from .conftest import cpu_seconds, page_verdicts, write_tree
from .test_jekyll_site import _site

PAGE = """\
# Liquid

[rel]({{ '/docs/install/ubuntu/' | relative_url }})
[no slash]({{ "docs/install/ubuntu/" | relative_url }})
[absolute]({{ '/about/' | absolute_url }} "About")
[prepend]({{ '/showcase/' | prepend: site.baseurl }})
[base]({{ site.baseurl }}/docs/install/ubuntu/#setup)
[tight]({{site.baseurl}}/about/)
[host]({{ site.url }}{{ site.baseurl }}/about/)
[gone]({{ '/docs/missing/' | relative_url }})
[file]({% link _docs/install/ubuntu.md %})
[file anchor]({% link _docs/install/ubuntu.md %}#setup)
[file bad anchor]({% link _docs/install/ubuntu.md %}#nope)
[no file]({% link _docs/missing.md %})
[post]({% post_url 2024-01-02-hello %})
[post in a category folder]({%- post_url 2024-03-04-cat -%})
[no post]({% post_url 2020-01-01-none %})
[defined][d]

[d]: {% link about.md %}

<a href="{{ '/showcase/' | relative_url }}">html</a> <a href="{% link _docs/missing.md %}">html gone</a>

`[code]({% link in-code.md %})`

{% raw %}[raw]({% link in-raw.md %}){% endraw %}

[computed]({{ site.repository }}/issues) [variable]({% link {{ page.x }} %}) [string]({{ 'x' }})
"""


def test_liquid_destinations_resolve_as_jekyll_renders_them(tmp_path: Path) -> None:
    site = _site(tmp_path)
    (site / "liquid.md").write_text(PAGE)
    settings = load_settings(cwd=tmp_path, root=site, state_dir=tmp_path / ".st")
    verdicts = page_verdicts(settings, "liquid.md")
    assert verdicts == {
        "{{ '/docs/install/ubuntu/' | relative_url }}": True,
        '{{ "docs/install/ubuntu/" | relative_url }}': True,
        "{{ '/about/' | absolute_url }}": True,
        "{{ '/showcase/' | prepend: site.baseurl }}": True,
        "{{ site.baseurl }}/docs/install/ubuntu/#setup": True,
        "{{site.baseurl}}/about/": True,
        "{{ site.url }}{{ site.baseurl }}/about/": True,
        "{{ '/docs/missing/' | relative_url }}": False,
        "{% link _docs/install/ubuntu.md %}": True,
        "{% link _docs/install/ubuntu.md %}#setup": True,
        "{% link _docs/install/ubuntu.md %}#nope": False,
        "{% link _docs/missing.md %}": False,  # in the text and in the HTML attribute
        "{% post_url 2024-01-02-hello %}": True,
        "{%- post_url 2024-03-04-cat -%}": True,  # blog/_posts/
        "{% post_url 2020-01-01-none %}": False,
        "{% link about.md %}": True,  # a reference definition
        "{{ '/showcase/' | relative_url }}": True,
    }  # what the build computes (`{{ site.repository }}`, `{{ page.x }}`, `{{ 'x' }}`) is no link


def test_liquid_links_carry_their_line_text_and_form() -> None:
    doc = parse_document(PAGE, "liquid.md", liquid="jekyll")
    liquid = [(link.line, link.text, link.form) for link in doc.links if link.form == "liquid"]
    assert (2, "rel", "liquid") in liquid and (19, "", "liquid") in liquid
    assert not [link for link in doc.links if "in-code" in link.target or "in-raw" in link.target]


def test_liquid_in_an_html_block_is_no_markdown_link() -> None:
    # kramdown reads no Markdown inside an HTML block: `[t]({% link a.md %})` there is text.
    text = "# T\n\n<div>\n[in html]({% link a.md %})\n</div>\n\n[out]({% link b.md %})\n"
    doc = parse_document(text, "p.md", liquid="jekyll")
    assert [(link.target, link.form) for link in doc.links] == [("{% link b.md %}", "liquid")]


def test_outside_a_jekyll_site_liquid_is_text(tmp_path: Path) -> None:
    # No Jekyll config: `({{ '/x/' | relative_url }})` is what CommonMark reads, text.
    write_tree(tmp_path / "docs", {"a.md": PAGE, "about.md": "# About\n"})
    (tmp_path / ".git").mkdir()
    settings = load_settings(cwd=tmp_path, root=tmp_path / "docs", state_dir=tmp_path / ".st")
    verdicts = page_verdicts(settings, "a.md")
    # Only the HTML attributes and the destinations without a space are links there, left unchecked.
    assert {t: ok for t, ok in verdicts.items() if "{" in t} == {
        "{{site.baseurl}}/about/": None,
        "{{ '/showcase/' | relative_url }}": None,
        "{% link _docs/missing.md %}": None,
    }


def test_a_manual_that_is_a_folder_of_the_site_reads_link_paths_from_the_sites_folder(
    tmp_path: Path,
) -> None:
    # The manual is the site's _docs/: `{% link _docs/install/ubuntu.md %}` is its install/ubuntu.md,
    # `{% link about.md %}` a file of the site above it.
    site = _site(tmp_path)
    (site / "_docs" / "liquid.md").write_text(
        "# L\n\n[a]({% link _docs/install/ubuntu.md %}#setup) [b]({% link about.md %}) "
        "[c]({% link _docs/nope.md %}) [d]({% link ../../etc/passwd %})\n"
    )
    settings = load_settings(cwd=tmp_path, root=site / "_docs", state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "liquid.md") == {
        "{% link _docs/install/ubuntu.md %}#setup": True,
        "{% link about.md %}": True,
        "{% link _docs/nope.md %}": False,
        "{% link ../../etc/passwd %}": False,  # out of the site: never a file
    }


def test_kramdown_footnote_anchors_are_a_jekyll_pages(tmp_path: Path) -> None:
    site = _site(tmp_path)
    (site / "about.md").write_text(
        "# About\n\nSaid.[^note]\n\n[^note]: A note.\n\n[n](#fn:note) [r](#fnref:note) [x](#fn:other)\n"
    )
    settings = load_settings(cwd=tmp_path, root=site, state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "about.md") == {"#fn:note": True, "#fnref:note": True, "#fn:other": False}


_LIQUID_TEXT = st.text(alphabet="{}%|'\"/ -_.#:abcxyz0123456789\n[]()", max_size=200)


@given(_LIQUID_TEXT)
def test_any_destination_reads_as_a_site_path_a_tag_or_nothing(text: str) -> None:
    found = liquid_target(text)
    assert found is None or isinstance(found, LiquidTarget)
    if found is not None and found.kind == "url":
        assert found.value.startswith("/") and "{{" not in found.value and "{%" not in found.value
    if found is not None and found.kind != "url":
        assert found.kind in ("link", "post_url") and found.value and "{" not in found.value


@given(st.lists(_LIQUID_TEXT, max_size=8))
def test_a_page_of_liquid_fragments_parses_without_error(parts: list[str]) -> None:
    text = "# T\n\n" + "".join(f"[x]({p})\n" for p in parts)
    doc = parse_document(text, "p.md", liquid="jekyll")
    assert all(0 <= link.line < len(text.splitlines()) + 1 for link in doc.links)


def _best_seconds(text: str) -> float:
    return cpu_seconds(lambda: (find_liquid_links(text), parse_document(text, "p.md", liquid="jekyll")), 2)


def test_crafted_liquid_is_read_in_linear_time() -> None:
    # Unclosed outputs and tags, destinations of Liquid pieces run together, raw tags never closed:
    # each is read in one pass (twice the text, about twice the time).
    shapes = [
        "]({{ " * 20_000,
        "]({% link " * 20_000,
        "](" + "{{x}}" * 40_000 + "\n",
        "{% raw %}" * 20_000,
        "[a]: {{ site.baseurl }}" * 20_000,
    ]
    for shape in shapes:
        small, large = _best_seconds(shape), _best_seconds(shape * 2)
        assert large < 2.0, (shape[:20], large)
        assert large < max(small, 0.02) * 4, (shape[:20], small, large)


def test_a_patch_that_breaks_a_liquid_link_is_refused_and_one_that_fixes_it_is_not(tmp_path: Path) -> None:
    from udm.patch import apply_patch, parse_patch

    site = _site(tmp_path)
    (site / "liquid.md").write_text(
        "# L\n\n[s]({% link _docs/install/ubuntu.md %}#setup) [g]({% link _docs/gone.md %})\n"
    )
    settings = load_settings(cwd=tmp_path, root=site, state_dir=tmp_path / ".st", approval_policy="full_auto")
    rename = {"op": "replace_text", "file": "_docs/install/ubuntu.md", "old": "## Setup", "new": "## Set up"}
    res = apply_patch(parse_patch({"description": "t", "operations": [rename]}), settings)
    assert res.status == "invalid", res
    assert "liquid.md" in (res.error or "") and "#setup" in (res.error or "")
    # The link that was broken before stays broken: no reason to refuse an unrelated edit.
    edit = {"op": "replace_text", "file": "liquid.md", "old": "# L\n", "new": "# Liquid\n"}
    res = apply_patch(parse_patch({"description": "t", "operations": [edit]}), settings)
    assert res.status != "invalid", res
