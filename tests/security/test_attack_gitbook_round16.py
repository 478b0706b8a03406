"""Attacker round 16: GitBook spaces synced from Git (`.gitbook.yaml`, `gitbook_anchors`, the blocks
that link: `{% embed %}`, `{% content-ref %}`, `{% file %}`, GitBook's lost-link marks). Each test
either guards a behaviour that holds, or was written failing on a real bug (marked `# FINDING`, with
what happened and what should)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from udm.config import load_settings
from udm.index.links import check_links
from udm.markdown import parse_document
from udm.markdown.gitbook import find_gitbook_links
from udm.site import settings_site
from udm.site.anchors import gitbook_anchors
from udm.site.routes import detect_site

from ..engine.conftest import page_verdicts, write_tree

# --- helpers -------------------------------------------------------------------------------------


def _repo(tmp_path: Path, yaml: str, files: dict[str, str]) -> Path:
    """A git repository at tmp_path/repo with `.gitbook.yaml` (its text `yaml`) and `files`."""
    repo = tmp_path / "repo"
    write_tree(repo, {".gitbook.yaml": yaml, **files})
    (repo / ".git").mkdir()
    return repo


def _verdicts(repo: Path, page: str, root: str = ".") -> dict[str, bool | None]:
    settings = load_settings(cwd=repo, root=repo / root, state_dir=repo.parent / ".st")
    assert settings_site(settings).generator == "gitbook"
    return page_verdicts(settings, page)


def _links(text: str, path: str = "p.md", liquid: str = "gitbook") -> list[tuple[int, str, str]]:
    return [(link.line, link.target, link.form) for link in parse_document(text, path, liquid=liquid).links]


def _cpu(fn: object, runs: int = 2) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.process_time()
        fn()  # type: ignore[operator]
        best = min(best, time.process_time() - started)
    return best


# --- findings ------------------------------------------------------------------------------------


def test_a_redirect_to_a_rooted_path_is_no_scheme_relative_url(tmp_path: Path) -> None:
    """Attacks `.gitbook.yaml` redirects whose file is written with a leading `/`."""
    # FINDING: `_gitbook` builds the destination as "/" + posixpath.normpath(dest); for `/nope.md` that
    # is `//nope.md`, a scheme-relative URL (host `nope.md`), so `[a](/old)` is taken as an external
    # redirect and reported fine though no file `nope.md` is in the space. The destination is a file of
    # the space (GitBook reads it from `root`): missing, the link is broken.
    repo = _repo(tmp_path, "redirects:\n  old: /nope.md\n", {"README.md": "# R\n\n[a](/old)\n"})
    assert _verdicts(repo, "README.md") == {"/old": False}


def test_a_rooted_first_page_that_is_missing_leaves_the_root_broken(tmp_path: Path) -> None:
    """Attacks `structure.readme: /nope.md` (a leading `/`, no such file, no README.md)."""
    # FINDING: as for redirects, the first page becomes `//nope.md`, a scheme-relative URL, so `[a](/)`
    # is reported fine; without the `/` (`readme: nope.md`) the same space reports it broken, rightly.
    repo = _repo(tmp_path, "structure:\n  readme: /nope.md\n", {"intro.md": "# I\n\n[a](/)\n"})
    assert _verdicts(repo, "intro.md") == {"/": False}


def test_a_redirect_to_a_javascript_url_is_not_followed(tmp_path: Path) -> None:
    """Attacks `.gitbook.yaml` redirects whose value is a `javascript:` URL."""
    # FINDING: any value matching SCHEME is kept as an external destination, so a redirect to
    # `javascript:alert(1)` makes `[a](/js)` resolve. GitBook's `.gitbook.yaml` redirects name a file of
    # the space (`previous/page: new-folder/page.md`); no file `javascript:alert(1)` exists, the link is
    # broken (and a `javascript:` destination is never a page a reader reaches).
    repo = _repo(tmp_path, "redirects:\n  js: 'javascript:alert(1)'\n", {"README.md": "# R\n\n[a](/js)\n"})
    assert _verdicts(repo, "README.md") == {"/js": False}


def test_an_unclosed_embed_tag_is_text() -> None:
    """Attacks `_TAG`, which never asks for the tag's closing `%}`."""
    # FINDING: `{% embed url="https://a.example/x" and more` (no `%}` anywhere) is reported as a link.
    # GitBook's parser reads a block only as a whole tag; an unclosed one stays text.
    assert _links('# T\n\nSee {% embed url="https://a.example/x" and more text\n') == []


def test_thousands_of_unclosed_embed_tags_make_no_links() -> None:
    """Attacks a line of 3,000 unclosed `{% embed url="` tags."""
    # FINDING: each pair reads as `url="{% embed url="`: 1,500 internal links to `{% embed url=`, each
    # reported broken. Nothing there is a tag GitBook renders.
    text = "# T\n\n" + '{% embed url="' * 3000 + "\n"
    assert _links(text) == []
    assert find_gitbook_links('{% embed url="{% embed url="') == []


def test_a_tag_in_an_inline_html_comment_is_no_link() -> None:
    """Attacks a GitBook tag hidden in an HTML comment inside a paragraph."""
    # FINDING: `text <!-- {% embed url="x" %} -->` yields a gitbook link, though a Markdown link in the
    # same place is none (README: nothing inside HTML comments is a link) and GitBook shows nothing.
    assert _links("# T\n\ntext <!-- [a](x.md) --> more\n") == []  # the Markdown link: none (holds)
    assert _links('# T\n\ntext <!-- {% embed url="https://c.example" %} --> more\n') == []
    assert _links('# T\n\n- item <!-- {% file src="x.pdf" %} -->\n') == []
    assert _links('# T\n\ntext <!--\n{% content-ref url="a.md" %}\n--> more\n') == []


def test_combining_marks_do_not_split_a_gitbook_anchor() -> None:
    """Attacks gitbook_anchors with combining marks (Devanagari vowel signs, NFD accents, `İ`)."""
    # FINDING: `[^\w.]+` treats a combining mark as a separator (`\w` is str.isalnum, which marks are
    # not): `हिन्दी भाषा` gives `ह-न-द-भ-ष`, NFD `Résumé` gives `re-sume`, `İstanbul` (lower() adds
    # U+0307) gives `i-stanbul`. A mark belongs to its letter: no anchor a heading makes splits a word.
    assert "हिन्दी-भाषा" in gitbook_anchors("हिन्दी भाषा")
    assert not any("re-sume" in a for a in gitbook_anchors("Re\u0301sume\u0301 tips"))
    assert not any(a.startswith("i-stanbul") for a in gitbook_anchors("İstanbul"))


def test_a_gitbook_anchor_of_a_devanagari_heading_resolves(tmp_path: Path) -> None:
    """Attacks GitBook's own anchor form (with `.`) on a heading in Hindi: a false 'broken'."""
    # FINDING: `## हिन्दी v1.2` is `हिन्दी-v12` for GitHub and `हिन्दी-v1.2` in GitBook's form (periods
    # kept); gitbook_anchors makes `ह-न-द-v1.2`, so the GitBook-form link is reported broken.
    repo = _repo(
        tmp_path,
        "",
        {"README.md": "# R\n\n[a](page.md#हिन्दी-v1.2)\n", "page.md": "# P\n\n## हिन्दी v1.2\n"},
    )
    assert _verdicts(repo, "README.md") == {"page.md#हिन्दी-v1.2": True}


def test_broken_reference_on_a_plain_site_does_not_blame_gitbook(tmp_path: Path) -> None:
    """Attacks `_GITBOOK_LOST` applied on every site, not only GitBook's."""
    # FINDING: on a site with no `.gitbook.yaml` (no generator), a missing `broken-reference` page or a
    # missing `/broken/pages/x` route is reported as "what GitBook writes for a link whose page it
    # lost": the reason of a non-GitBook site changed. It should be the usual "no such file".
    repo = tmp_path / "repo"
    write_tree(repo, {"README.md": "# R\n\n[a](broken-reference) [b](/broken/pages/abc)\n"})
    (repo / ".git").mkdir()
    settings = load_settings(cwd=repo, root=repo, state_dir=tmp_path / ".st")
    assert settings_site(settings).generator == "none"
    results = [r for r in check_links(settings, external=False).results if r.file == "README.md"]
    assert [r.status for r in results] == ["broken", "broken"]
    assert not any("GitBook" in (r.reason or "") for r in results)


def test_a_stale_gitbook_yaml_does_not_take_over_a_hugo_site(tmp_path: Path) -> None:
    """Attacks detection order: `.gitbook.yaml` beside a config whose name is Hugo's alone."""
    # FINDING: `.gitbook.yaml` is tried before `hugo.toml` (and Jekyll's, VitePress', Astro's...), so a
    # Hugo site that still carries a `.gitbook.yaml` (kept from a migration, or synced besides) is now
    # read as GitBook: its content/ routes are lost. MkDocs and mdBook configs already win over it; a
    # config naming a generator of its own should win too (a non-GitBook site unchanged).
    repo = tmp_path / "repo"
    write_tree(
        repo,
        {
            ".gitbook.yaml": "root: ./content/\n",
            "hugo.toml": 'baseURL = "https://example.org/"\n',
            "content/_index.md": "# Home\n",
        },
    )
    (repo / ".git").mkdir()
    assert detect_site(repo, stop=repo).generator == "hugo"


# --- guards (held) -------------------------------------------------------------------------------


def test_a_root_climbing_out_of_the_repository_is_dropped(tmp_path: Path) -> None:
    """Guards `root: ../outside/` and `root: /etc/`: no file outside the repository is read."""
    write_tree(tmp_path, {"outside/secret.md": "# S\n"})
    repo = _repo(tmp_path, "root: ../outside/\n", {"docs/README.md": "# R\n\n[a](/secret) [b](secret.md)\n"})
    site = detect_site(repo / "docs", stop=repo)
    assert site.generator == "gitbook" and not site.mounts and site.problems
    settings = load_settings(cwd=repo, root=repo / "docs", state_dir=tmp_path / ".st")
    assert not any(page_verdicts(settings, "README.md").values())
    (repo / ".gitbook.yaml").write_text("root: /etc/\n", encoding="utf-8")
    site = detect_site(repo / "docs", stop=repo)
    assert not site.mounts and any("outside" in p for p in site.problems)


def test_a_symlinked_root_reads_no_file_outside(tmp_path: Path) -> None:
    """Guards `root: link/` where link points out of the repository."""
    write_tree(tmp_path, {"outside/secret.md": "# S\n"})
    repo = _repo(tmp_path, "root: link/\n", {"README.md": "# R\n\n[a](/secret) [b](link/secret.md)\n"})
    os.symlink(tmp_path / "outside", repo / "link")
    assert not any(_verdicts(repo, "README.md").values())


def test_redirects_climbing_out_loops_and_nuls_resolve_nothing(tmp_path: Path) -> None:
    """Guards redirect values `../outside/x.md`, loops, self-loops and NUL bytes (no hang, no crash)."""
    write_tree(tmp_path, {"outside/secret.md": "# S\n"})
    yaml = (
        "redirects:\n  up: ../outside/secret.md\n  loop1: loop2\n  loop2: loop1\n  self: self\n"
        '  nul: "a\\0b.md"\n  "k\\0": README.md\nstructure:\n  readme: ../outside/secret.md\n'
    )
    repo = _repo(tmp_path, yaml, {"README.md": "# R\n\n[a](/up) [b](/loop1) [c](/self) [d](/nul)\n"})
    assert _verdicts(repo, "README.md") == {"/up": False, "/loop1": False, "/self": False, "/nul": False}


def test_a_nul_in_root_is_no_crash(tmp_path: Path) -> None:
    """Guards `root: "do\\0cs"` (os functions raise ValueError on a NUL)."""
    repo = _repo(tmp_path, 'root: "do\\0cs"\n', {"docs/README.md": "# R\n\n[a](/x)\n"})
    settings = load_settings(cwd=repo, root=repo / "docs", state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "README.md") == {"/x": False}


def test_hostile_yaml_shapes_are_read_leniently(tmp_path: Path) -> None:
    """Guards non-string keys, lists, aliases (billion laughs) and deep nesting in `.gitbook.yaml`."""
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8)
    )
    shapes = [
        "1: 2\nnull: 3\ntrue: docs\n? [a, b]\n: c\n",
        "root: [docs]\nstructure: [readme]\nredirects: [a, b]\n",
        "redirects:\n  1: a.md\n  a: 2\n  null: b.md\n  ? [x]\n  : c.md\n",
        laughs + "redirects: *i\n",
        "root: " + "[" * 5000 + "]" * 5000 + "\n",
        "- a\n- b\n",
        "just a string\n",
    ]
    for i, yaml in enumerate(shapes):
        folder = tmp_path / f"s{i}"
        write_tree(folder, {".gitbook.yaml": yaml, "docs/README.md": "# R\n"})
        (folder / ".git").mkdir()
        started = time.process_time()
        site = detect_site(folder / "docs", stop=folder)
        assert time.process_time() - started < 5
        assert site.generator == "gitbook"


def test_many_redirects_are_capped_and_cheap(tmp_path: Path) -> None:
    """Guards 20,000 redirects (5,000 read) and 2,000 links to them: no quadratic resolution."""
    yaml = "redirects:\n" + "".join(f"  old/p{i}: page.md\n" for i in range(20_000))
    body = "# R\n\n" + "".join(f"[x](/old/p{i})\n" for i in range(0, 20_000, 10))
    repo = _repo(tmp_path, yaml, {"README.md": body, "page.md": "# P\n"})
    site = detect_site(repo, stop=repo)
    assert len(site.redirects) <= 5_000
    settings = load_settings(cwd=repo, root=repo, state_dir=tmp_path / ".st")
    started = time.process_time()
    found = page_verdicts(settings, "README.md")
    assert time.process_time() - started < 30
    assert found["/old/p0"] is True and found["/old/p19990"] is False


def test_tags_are_text_off_a_gitbook_site(tmp_path: Path) -> None:
    """Guards a plain site and a Jekyll site: GitBook's blocks stay text, no link is added."""
    text = '# T\n\n{% embed url="missing.md" %}\n\n{% content-ref url="gone.md" %}\n{% endcontent-ref %}\n'
    assert _links(text, liquid="") == [] and _links(text, liquid="jekyll") == []
    repo = tmp_path / "repo"
    write_tree(repo, {"README.md": text})
    (repo / ".git").mkdir()
    settings = load_settings(cwd=repo, root=repo, state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "README.md") == {}


def test_tags_in_code_html_blocks_and_mdx_are_no_links() -> None:
    """Guards code spans, fences (closed, unclosed, tilde), indented code, HTML blocks and `.mdx`."""
    tag = '{% embed url="https://c.example" %}'
    for text in [
        f"# T\n\n`{tag}`\n",
        f"# T\n\n```\n{tag}\n```\n",
        f"# T\n\n```\n{tag}\n",
        f"# T\n\n~~~\n{tag}\n~~~\n",
        f"# T\n\n    {tag}\n",
        f"# T\n\n<div>\n{tag}\n</div>\n",
        f"# T\n\n<!--\n{tag}\n-->\n",
        f"# T\n\n`{tag[:10]}\n{tag[10:]}`\n",
    ]:
        assert _links(text) == [], text
    assert _links(f"# T\n\n{tag}\n", path="p.mdx") == []


def test_a_javascript_embed_is_no_internal_link() -> None:
    """Guards `{% embed url="javascript:..." %}`: read as the Markdown link would be (external)."""
    doc = parse_document(
        '# T\n\n{% embed url="javascript:alert(1)" %}\n\n[j](javascript:alert(1))\n', "p.md", liquid="gitbook"
    )
    assert {link.kind for link in doc.links} == {"external"}


def test_percent_encoded_file_src_resolves_as_a_markdown_link(tmp_path: Path) -> None:
    """Guards `{% file src="my%20file.pdf" %}` beside `my file.pdf`, and a missing one."""
    repo = _repo(
        tmp_path,
        "",
        {
            "README.md": '# R\n\n{% file src="assets/my%20file.pdf" %}\n\n{% file src="assets/no%20file.pdf" %}\n',
            "assets/my file.pdf": "x",
        },
    )
    assert _verdicts(repo, "README.md") == {"assets/my%20file.pdf": True, "assets/no%20file.pdf": False}


def test_crafted_gitbook_pages_parse_in_linear_time() -> None:
    """Guards unclosed tags, long attribute chains and content-ref floods: 4x the input, not 16x."""
    makers = [
        lambda n: "# T\n\n" + '{% embed url="' * n + "\n",
        lambda n: "# T\n\n" + ('{% embed a="' + "x" * 1990 + '" ') * (n // 20) + "\n",
        lambda n: "# T\n\n" + ("{% embed a='" + '{% embed b="') * n + "\n",
        lambda n: (
            "# T\n\n"
            + ('{% content-ref url="a.md" %}\n' + "[b](b.md) " * 8 + "\n") * (n // 4)
            + "{% endcontent-ref %}\n"
        ),
        lambda n: "# T\n\n" + '{% content-ref url="a.md" %}\n' * n + "{% endcontent-ref %}\n" * n,
    ]
    for make in makers:
        small, large = make(1000), make(4000)
        t_small = _cpu(lambda text=small: parse_document(text, "p.md", liquid="gitbook"))
        t_large = _cpu(lambda text=large: parse_document(text, "p.md", liquid="gitbook"))
        assert t_large < max(t_small, 0.01) * 10 + 0.05


def test_gitbook_anchors_of_huge_headings_are_cheap() -> None:
    """Guards gitbook_anchors on a 1 MB heading of `&` and of combining marks."""
    started = time.process_time()
    gitbook_anchors("a&" * 500_000)
    gitbook_anchors("\u0301" * 1_000_000)
    assert time.process_time() - started < 5


def test_lost_link_marks_are_broken_on_a_gitbook_site(tmp_path: Path) -> None:
    """Guards `broken-reference` written with a fragment or query and a real page named so."""
    repo = _repo(
        tmp_path,
        "",
        {
            "README.md": "# R\n\n[a](broken-reference#x) [b](sub/broken-reference) [c](real/broken-reference.md)\n",
            "real/broken-reference.md": "# Real\n",
        },
    )
    assert _verdicts(repo, "README.md") == {
        "broken-reference#x": False,
        "sub/broken-reference": False,
        "real/broken-reference.md": True,
    }


def test_a_patch_dropping_the_ampersand_form_of_a_linked_heading_is_refused(tmp_path: Path) -> None:
    """Attacks the validator with `Math & TeX` -> `Math and TeX`, which takes GitBook's `math-tex` away."""
    from udm.patch import apply_patch, parse_patch

    repo = _repo(
        tmp_path,
        "",
        {"README.md": "# R\n\n[a](page.md#math-tex)\n", "page.md": "# P\n\n## Math & TeX\n"},
    )
    settings = load_settings(cwd=repo, root=repo, state_dir=tmp_path / ".st")
    rename = {"op": "rename_heading", "file": "page.md", "section": "Math & TeX", "to": "Math and TeX"}
    result = apply_patch(parse_patch({"description": "t", "operations": [rename]}), settings)
    assert result.status == "invalid" and "page.md#math-tex would break" in (result.error or "")


def test_a_patch_that_renumbers_a_linked_repeat_is_refused(tmp_path: Path) -> None:
    """Attacks the validator: renaming `Setup` before `Setup!` (one anchor twice) takes `#setup-1` away."""
    from udm.patch import apply_patch, parse_patch

    repo = _repo(
        tmp_path,
        "",
        {"README.md": "# R\n\n[a](page.md#setup-1)\n", "page.md": "# P\n\n## Setup\n\nx\n\n## Setup!\n\ny\n"},
    )
    settings = load_settings(cwd=repo, root=repo, state_dir=tmp_path / ".st")
    assert page_verdicts(settings, "README.md") == {"page.md#setup-1": True}
    rename = {"op": "rename_heading", "file": "page.md", "section": "Setup", "to": "Install"}
    result = apply_patch(parse_patch({"description": "t", "operations": [rename]}), settings)
    assert result.status == "invalid" and "page.md#setup-1 would break" in (result.error or "")
