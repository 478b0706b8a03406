"""GitBook spaces synced from Git: `.gitbook.yaml` (`root`, `structure.readme`, `redirects`), the
anchors GitBook's editor writes, asset paths that climb past the space's root, the blocks that link
(`{% embed %}`, `{% content-ref %}`, `{% file %}`) and the marks GitBook leaves for a lost link.
Fixtures written by the tests, after the conventions of public GitBook-synced repositories."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from udm.config import load_settings
from udm.index.links import check_links
from udm.markdown import parse_document
from udm.site import settings_site
from udm.site.anchors import gitbook_anchors
from udm.site.routes import detect_site

from .conftest import page_verdicts, write_tree

GITBOOK_YAML = """\
root: ./docs/

\u200bstructure:
  readme: INTRODUCTION.md
  summary: SUMMARY.md

redirects:
  old/install: guides/install.md
  legacy/home: ./INTRODUCTION.md
  gone/page: guides/removed.md
  "bad/:any*": guides/install.md
"""

LINKS = {
    # Relative links to files and folders, as GitBook writes them.
    "guides/install.md": True,
    "guides/": True,
    "guides/README.md": True,
    "guides/missing.md": False,
    # The anchors GitBook's editor writes (taken beside GitHub's, which stay accepted).
    "guides/install.md#abuse-via-.git-config": True,
    "guides/install.md#abuse-via-gitconfig": True,  # GitHub's form
    "guides/install.md#environment-variable-s": True,
    "guides/install.md#id-1.-create-an-app": True,
    "guides/install.md#1.-create-an-app": True,  # older spaces wrote no `id-`
    "guides/install.md#math-and-tex": True,
    "guides/install.md#math-tex": True,
    "guides/install.md#processing-group-error-handler": True,  # GitHub's is `processing-group---error-handler`
    "guides/install.md#custom-anchor": True,  # `<a href="#custom-anchor" id="custom-anchor"></a>`
    "guides/install.md#stale-heading": False,
    # Routes of the space, from its root.
    "/guides/install": True,
    "/guides": True,
    "/": True,  # structure.readme
    "/nowhere": False,
    # `.gitbook.yaml` redirects (from the space's root to a file there).
    "/old/install": True,
    "/legacy/home": True,
    "/gone/page": False,
    "/bad/anything": False,  # a key that reads as a pattern is not one
    # Assets, with one `../` too many as GitBook's sync writes them: the URL stops at the root.
    "../.gitbook/assets/shot.png": True,
    "../../.gitbook/assets/shot.png": True,
    ".gitbook/assets/shot.png": True,
    "../.gitbook/assets/absent.png": False,
}


def _space(tmp_path: Path) -> Path:
    write_tree(
        tmp_path,
        {
            ".gitbook.yaml": GITBOOK_YAML,
            "docs/INTRODUCTION.md": "# Introduction\n\n" + "\n".join(f"- [x]({t})" for t in LINKS) + "\n",
            "docs/SUMMARY.md": "# Summary\n\n* [Introduction](INTRODUCTION.md)\n* [Guides](guides/README.md)\n"
            "  * [Install](guides/install.md)\n",
            "docs/guides/README.md": "# Guides\n",
            "docs/guides/install.md": "# Install\n\n## Abuse via .git/config\n\n## Environment variable(s)\n\n"
            "## 1. Create an app\n\n## Math & TeX\n\n## Processing Group - Error Handler\n\n"
            '## Renamed <a href="#custom-anchor" id="custom-anchor"></a>\n',
            "docs/.gitbook/assets/shot.png": "png",
        },
    )
    (tmp_path / ".git").mkdir()
    return tmp_path / "docs"


def test_gitbook_links_resolve_as_the_space_publishes_them(tmp_path: Path) -> None:
    root = _space(tmp_path)
    settings = load_settings(cwd=tmp_path, root=root, state_dir=tmp_path / ".st")
    assert settings_site(settings).generator == "gitbook"
    assert page_verdicts(settings, "INTRODUCTION.md") == LINKS


def test_a_lost_link_says_what_gitbook_did(tmp_path: Path) -> None:
    root = _space(tmp_path)
    write_tree(
        root,
        {
            "guides/lost.md": "# Lost\n\n[a](broken-reference) [b](/broken/pages/-MeRotKdqt1dHxyC6joj)\n"
            "[c](/broken/spaces/NkEGS7hz/pages/KHHFlE1M#x) [d](../broken-reference/)\n",
        },
    )
    settings = load_settings(cwd=tmp_path, root=root, state_dir=tmp_path / ".st")
    results = [r for r in check_links(settings, external=False).results if r.file == "guides/lost.md"]
    assert len(results) == 4
    for result in results:
        assert result.status == "broken"
        assert "GitBook writes for a link whose page it lost" in (result.reason or "")


BLOCKS = """\
# Blocks

{% embed url="https://www.youtube.com/watch?v=abc" %}
A caption
{% endembed %}

{% content-ref url="install.md" %}
[install.md](install.md)
{% endcontent-ref %}

{% content-ref url="other.md" %}
[Shown title](install.md)
{% endcontent-ref %}

{% file src="../.gitbook/assets/guide (1).pdf" %}
The guide
{% endfile %}

{% embed url="https://example.org/a" fullWidth="false" %}

`{% embed url="https://in.code.example" %}`

```
{% file src="in-a-fence.pdf" %}
```
"""


def test_gitbook_blocks_are_links_on_a_gitbook_site_only() -> None:
    doc = parse_document(BLOCKS, "guides/blocks.md", liquid="gitbook")
    found = [(link.line, link.target, link.form) for link in doc.links]
    assert found == [
        (2, "https://www.youtube.com/watch?v=abc", "gitbook"),
        (7, "install.md", "inline"),  # the content-ref's own url is this link, reported once
        (10, "other.md", "gitbook"),  # a tag naming another page than its body's link is both
        (11, "install.md", "inline"),
        (14, "../.gitbook/assets/guide (1).pdf", "gitbook"),
        (18, "https://example.org/a", "gitbook"),
    ]
    # Elsewhere (GitHub, another generator) the tags are text.
    plain = parse_document(BLOCKS, "guides/blocks.md")
    assert [link.form for link in plain.links] == ["inline", "inline"]


def test_a_file_block_to_a_missing_asset_is_broken(tmp_path: Path) -> None:
    root = _space(tmp_path)
    write_tree(
        root,
        {
            ".gitbook/assets/guide (1).pdf": "pdf",
            "guides/files.md": '# Files\n\n{% file src="../.gitbook/assets/guide (1).pdf" %}\n\n'
            '{% file src="../.gitbook/assets/nope.pdf" %}\n\n{% content-ref url="nope.md" %}\n'
            "[nope](nope.md)\n{% endcontent-ref %}\n",
        },
    )
    settings = load_settings(cwd=tmp_path, root=root, state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "guides/files.md") == {
        "../.gitbook/assets/guide (1).pdf": True,
        "../.gitbook/assets/nope.pdf": False,
        "nope.md": False,
    }


@pytest.mark.parametrize(
    ("yaml", "prefix", "problem"),
    [
        ("root: ./docs/\n", "", False),  # the space is docs/: its pages at the space's root
        ("", "docs", False),  # an empty configuration: the space is the file's folder
        ("root: [1, 2\n", "", True),  # unreadable: a problem of the site, the manual its space
        ("redirects: 7\nstructure: nope\nroot: 3\n", "docs", False),  # values of other types: ignored
    ],
)
def test_gitbook_yaml_is_read_leniently(tmp_path: Path, yaml: str, prefix: str, problem: bool) -> None:
    write_tree(tmp_path, {".gitbook.yaml": yaml, "docs/README.md": "# R\n"})
    (tmp_path / ".git").mkdir()
    site = detect_site(tmp_path / "docs", stop=tmp_path)
    assert site.generator == "gitbook"
    assert bool(site.problems) is problem
    if problem:
        assert "cannot read the site config" in site.problems[0]
    assert [m.prefix for m in site.mounts] == [prefix]


def test_gitbook_anchor_forms() -> None:
    assert gitbook_anchors("Abuse via .git/config") == {"abuse-via-.git-config"}
    assert gitbook_anchors("Math & TeX") == {"math-and-tex", "math-tex"}
    assert gitbook_anchors("3. Access.") == {"3.-access.", "id-3.-access."}
    assert gitbook_anchors("💡 Generate TypeScript Interfaces") == {"generate-typescript-interfaces"}
    assert gitbook_anchors("!!!") == set()


@given(st.text(max_size=80))
def test_gitbook_anchors_are_ids_without_blanks(text: str) -> None:
    for anchor in gitbook_anchors(text):
        assert anchor and anchor == anchor.lower()
        assert not anchor.startswith("-") and not anchor.endswith("-")
        assert "--" not in anchor and not any(ch.isspace() for ch in anchor)


def test_a_patch_that_changes_gitbooks_anchor_of_a_linked_heading_is_refused(tmp_path: Path) -> None:
    # `.git/config` and `git/config` are one anchor for GitHub (`gitconfig`), two for GitBook.
    from udm.patch import apply_patch, parse_patch

    root = _space(tmp_path)
    write_tree(root, {"guides/links.md": "# L\n\n[n](install.md#abuse-via-.git-config)\n"})
    settings = load_settings(cwd=tmp_path, root=root, state_dir=tmp_path / ".st")
    rename = {
        "op": "rename_heading",
        "file": "guides/install.md",
        "section": "Abuse via .git/config",
        "to": "Abuse via git/config",
    }
    result = apply_patch(parse_patch({"description": "t", "operations": [rename]}), settings)
    assert result.status == "invalid" and "install.md#abuse-via-.git-config would break" in (
        result.error or ""
    )
    keep = dict(rename, to="Abuse via .git/config!")  # the same GitBook anchor: accepted
    assert apply_patch(parse_patch({"description": "t", "operations": [keep]}), settings).status != "invalid"


def test_repeated_anchors_are_numbered_as_gitbook_numbers_them(tmp_path: Path) -> None:
    root = _space(tmp_path)
    named = '<a href="#sample" id="sample"></a>'
    write_tree(
        root,
        {
            "guides/repeats.md": f"# R\n\n## One {named}\n\n## Two {named}\n\n## Three {named}\n\n"
            "## Setup (A)\n\n## Setup (A)\n",
            "guides/to-repeats.md": "# T\n\n"
            + " ".join(f"[x](repeats.md#{a})" for a in ("sample-2", "sample-3", "setup-a-1", "setup-a-2"))
            + "\n",
        },
    )
    settings = load_settings(cwd=tmp_path, root=root, state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "guides/to-repeats.md") == {
        "repeats.md#sample-2": True,
        "repeats.md#sample-3": False,  # three headings carry it: sample, sample-1, sample-2
        "repeats.md#setup-a-1": True,
        "repeats.md#setup-a-2": False,
    }


@pytest.mark.parametrize(
    ("redirects", "expected"),
    [
        ((("/a/:x", "/p1"), ("/a/b", "/p2")), "/p1"),  # a pattern listed first wins over a plain source
        ((("/a/b", "/p2"), ("/a/:x", "/p1")), "/p2"),
        ((("/a/b", "/p2"), ("/a/b", "/p3")), "/p2"),  # of two plain sources, the first
        ((("/c/:x", "/p1"),), None),
    ],
)
def test_plain_redirects_keep_the_sites_order(
    redirects: tuple[tuple[str, str], ...], expected: str | None
) -> None:
    # Plain sources are looked up at once (a space may list thousands); the site's order still decides.
    from udm.site.model import Site
    from udm.site.routes import Routes

    routes = Routes(Site(generator="gitbook", redirects=redirects), set())
    assert routes.redirect("/a/b") == expected
