"""Attacker round 17: a `.gitignore` in a folder below the manual root (`udm.site.gitignore`
`folder_ignores`, `_decided(..., nested)`; `udm.site.routes` `LinkResolver._nested_ignores`,
`_build_output`, `_ignored_route`; the index and the patch validator), and MkDocs' template lines
(`udm.site.anchors` `_TEMPLATE_LINE`, `page_anchors`; `Site.templated`). The pages, the `.gitignore`
files and the site config are the attacker's. git's own behaviour was read from `git check-ignore -v
--no-index` (git 2.39) in a scratch repository.

Tests named `test_finding_...` fail now and pass once the finding is fixed; `test_guard_...` tests
hold attacks that are already contained."""

from __future__ import annotations

import itertools
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from udm.config import load_settings
from udm.site.anchors import _TEMPLATE_LINE
from udm.site.gitignore import ignored, ignored_folder

from ..engine.conftest import page_verdicts, site_settings, write_tree

# ---------------------------------------------------------------------------------------------
# helpers


def _repo(tmp: Path, files: dict[str, str]) -> Path:
    """A git repository (just `.git/`) holding an MkDocs site whose docs_dir is `docs/`."""
    repo = tmp / "repo"
    (repo / ".git").mkdir(parents=True, exist_ok=True)
    write_tree(repo, {"mkdocs.yml": "site_name: S\n", **files})
    return repo


def _verdicts(tmp: Path, files: dict[str, str], links: str) -> dict[str, bool | None]:
    repo = _repo(tmp, files)
    settings = site_settings(repo / "docs", {"guide/index.md": f"# G\n\n{links}\n"})
    return page_verdicts(settings, "guide/index.md")


def _mkdocs(tmp: Path, config: str, files: dict[str, str], page: str = "index.md") -> dict[str, bool | None]:
    project = tmp / "project"
    project.mkdir()
    (project / "mkdocs.yml").write_text(config)
    return page_verdicts(site_settings(project / "docs", files), page)


HOOKS = "site_name: S\nhooks:\n  - docs/plugins/main.py\n"
MACROS = "site_name: S\nplugins:\n  - macros\n"


# ---------------------------------------------------------------------------------------------
# Feature 1: nested .gitignore files -- findings


def test_finding_nested_ignore_files_share_no_pattern_budget(tmp_path: Path) -> None:
    # FINDING: the repository's chain of `.gitignore` files is read under one budget of 2,000
    # patterns in all (`read_ignores`), but each nested `.gitignore` gets its own 2,000
    # (`pattern_lines`), and every one in a folder leading to a link's target is matched for every
    # page file the route may be built from. Eight folders deep, each with a 2,000-line `.gitignore`,
    # a handful of links cost ~15x what the same links cost under one 2,000-line file (measured:
    # 200 route+file link pairs, 12 s CPU for one file, 225 s for eight). The nested files should
    # share the budget (or the total be bounded) so the cost stays near the one-file cost.
    def cost(depth: int, name: str) -> float:
        files: dict[str, str] = {}
        folder = "docs"
        for d in range(depth):
            folder += f"/f{d}"
            files[f"{folder}/.gitignore"] = "".join(f"p{d}x{i}*q\n" for i in range(2000))
        rel = folder.removeprefix("docs/")
        links = " ".join(f"[a{i}](/{rel}/m{i}/) [b{i}](../{rel}/n{i}.md)" for i in range(3))
        repo = _repo(tmp_path / name, files)
        settings = site_settings(repo / "docs", {"guide/index.md": f"# G\n\n{links}\n"})
        started = time.process_time()
        verdicts = page_verdicts(settings, "guide/index.md")
        spent = time.process_time() - started
        assert set(verdicts.values()) == {False}
        return spent

    one = cost(1, "one")
    deep = cost(8, "deep")
    assert deep <= 3 * one + 0.5, (one, deep)


def test_finding_a_crlf_nested_gitignore_is_read_as_git_reads_it(tmp_path: Path) -> None:
    # FINDING: git drops the carriage return ending each line of a `.gitignore` written on Windows
    # (`git check-ignore` matches `config.md\r\n` against `config.md`); `pattern_lines` splits at the
    # newline only and keeps `config.md\r` as the pattern, which matches nothing. So a generated
    # page listed in a CRLF `reference/.gitignore` is reported broken, not unknown. (The manual's own
    # and the repository's `.gitignore` share the reader, so they have the same gap.)
    verdicts = _verdicts(
        tmp_path,
        {"docs/reference/.gitignore": "config.md\r\napi/\r\n"},
        "[a](../reference/config.md) [b](/reference/config/) [c](../reference/api/x.md)",
    )
    assert verdicts == {
        "../reference/config.md": None,
        "/reference/config/": None,
        "../reference/api/x.md": None,
    }


def test_finding_a_symlinked_nested_gitignore_is_not_read(tmp_path: Path) -> None:
    # FINDING: git (2.32 and later) does not follow a `.gitignore` that is a symbolic link ("unable
    # to access 'al/.gitignore': Too many levels of symbolic links") and matches nothing from it;
    # `folder_ignores` follows the link wherever it stays inside the manual, so any file of the
    # manual (a page, an image's text) can be made to act as a `.gitignore` and hide broken links.
    # A link named `.gitignore` should be read as no `.gitignore`, as git reads it.
    repo = _repo(tmp_path, {"docs/al/list.txt": "*\n"})
    (repo / "docs" / "al" / ".gitignore").symlink_to("list.txt")
    settings = site_settings(repo / "docs", {"guide/index.md": "# G\n\n[a](../al/x.md) [b](/al/gone/)\n"})
    assert page_verdicts(settings, "guide/index.md") == {"../al/x.md": False, "/al/gone/": False}


def test_finding_a_patch_deleting_a_nested_gitignore_that_breaks_links_is_refused(tmp_path: Path) -> None:
    # FINDING: the validator reads the nested `.gitignore` files from disk for both sides of the
    # patch (`folder_ignores(ws.root)`), never the patch's own version. A patch that deletes (or
    # rewrites) `reference/.gitignore` turns the unknown `/reference/config/` into a broken link,
    # yet it is committed (a fresh index then reports both links broken; the old one keeps them
    # unknown, see test_finding_the_index_notices_a_nested_gitignore_change). It should be refused
    # as any patch that breaks a link is. (Deleting the manual root's own `.gitignore` is committed
    # the same way: the validator reads neither from the patch.)
    from udm.patch import apply_patch, parse_patch

    repo = _repo(
        tmp_path,
        {
            "docs/index.md": "# H\n",
            "docs/guide/index.md": "# G\n\n[a](/reference/config/) [b](../reference/config.md)\n",
            "docs/reference/api.md": "# API\n",
            "docs/reference/.gitignore": "config.md\n",
        },
    )
    (repo / "state").mkdir()
    settings = load_settings(cwd=repo / "docs", root=repo / "docs", state_dir=repo / "state")
    before = page_verdicts(settings, "guide/index.md")
    assert before == {"/reference/config/": None, "../reference/config.md": None}
    delete = {"op": "delete_file", "file": "reference/.gitignore"}
    result = apply_patch(parse_patch({"description": "t", "operations": [delete]}), settings)
    after = page_verdicts(settings, "guide/index.md")
    assert result.status == "invalid", (result, after)


@pytest.mark.parametrize("change", ["delete", "rewrite", "add"])
def test_finding_the_index_notices_a_nested_gitignore_change(tmp_path: Path, change: str) -> None:
    # FINDING: the links' verdicts are kept in the index and re-resolved when the site changes; the
    # repository's and the manual root's `.gitignore` are part of the site (removing the root's
    # `/reference/config.md` turns the links broken on the next query), but a nested one is not.
    # Deleting or rewriting `reference/.gitignore` leaves `/reference/config/` unknown for good
    # (a fresh index says broken); adding one leaves the links broken. The index should see the
    # same verdicts as a fresh one after any `.gitignore` below the root changes.
    start = "config.md\n" if change != "add" else None
    files = {
        "docs/index.md": "# H\n",
        "docs/guide/index.md": "# G\n\n[a](/reference/config/) [b](../reference/config.md)\n",
        "docs/reference/api.md": "# API\n",
    }
    if start is not None:
        files["docs/reference/.gitignore"] = start
    repo = _repo(tmp_path, files)
    settings = load_settings(cwd=repo / "docs", root=repo / "docs", state_dir=repo / "state")
    page_verdicts(settings, "guide/index.md")
    ignore = repo / "docs" / "reference" / ".gitignore"
    if change == "delete":
        ignore.unlink()
    else:
        ignore.write_text("other.md\n" if change == "rewrite" else "config.md\n")
    fresh = load_settings(cwd=repo / "docs", root=repo / "docs", state_dir=repo / "fresh")
    expected = page_verdicts(fresh, "guide/index.md")
    assert page_verdicts(settings, "guide/index.md") == expected


# ---------------------------------------------------------------------------------------------
# Feature 1: guards


def test_guard_nested_negation_and_scoping_follow_git(tmp_path: Path) -> None:
    files = {
        # `!` takes back a file the same folder's `*.md` ignored: a missing keep.md is broken.
        "docs/gen/.gitignore": "*.md\n!keep.md\n",
        # A leading `/` and a slash inside anchor the pattern to the folder holding the file.
        "docs/ref/.gitignore": "/config.md\nref/x.md\n",
        # An ignored folder above: a `!` below cannot take a file back (git never reads it).
        ".gitignore": "/docs/out/\n",
        "docs/out/.gitignore": "!keep.md\n",
        # `**` in a nested file counts from its folder.
        "docs/st/.gitignore": "**/gen/**\na/**/b.md\n",
        # A file that names its own folder matches nothing of it (`gen` is gen/gen).
        "docs/self/.gitignore": "self\n/\n.\n",
    }
    links = (
        "[a](../gen/keep.md) [b](../gen/x.md) [c](../ref/config.md) [d](../ref/sub/config.md) "
        "[e](/ref/sub/config/) [f](../ref/x.md) [g](../ref/ref/x.md) [h](../out/keep.md) "
        "[i](../st/x/gen/y.md) [j](../st/a/c/d/b.md) [k](../st/gen.md) [l](../self/x.md) [m](/self/x/)"
    )
    assert _verdicts(tmp_path, files, links) == {
        "../gen/keep.md": False,
        "../gen/x.md": None,
        "../ref/config.md": None,
        "../ref/sub/config.md": False,
        "/ref/sub/config/": False,
        "../ref/x.md": False,
        "../ref/ref/x.md": None,
        "../out/keep.md": None,
        "../st/x/gen/y.md": None,
        "../st/a/c/d/b.md": None,
        "../st/gen.md": False,
        "../self/x.md": False,
        "/self/x/": False,
    }


def test_guard_a_nested_star_hides_no_route_elsewhere(tmp_path: Path) -> None:
    # `other/.gitignore` ignores all of `other/`: routes and files elsewhere, `/`, a route climbing
    # out of `other` with `..`, stay broken.
    links = "[a](/ref/x/) [b](../ref/x.md) [c](/) [d](/other/../ref/y/) [e](/other/..) [f](../other.md)"
    assert _verdicts(tmp_path, {"docs/other/.gitignore": "*\n"}, links) == {
        "/ref/x/": False,
        "../ref/x.md": False,
        "/": False,
        "/other/../ref/y/": False,
        "/other/..": False,
        "../other.md": False,
    }


def test_guard_symlinks_out_of_the_manual_are_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write_tree(outside, {".gitignore": "*\n"})
    repo = _repo(tmp_path, {"docs/ext2/keep.txt": "", "docs/ext3/keep.txt": ""})
    (repo / "docs" / "ext").symlink_to(outside)  # a folder leading out
    (repo / "docs" / "ext2" / "sub").symlink_to(outside)
    (repo / "docs" / "ext3" / ".gitignore").symlink_to(repo / "docs" / "ext" / ".gitignore")  # via a link
    links = "[a](../ext/x.md) [b](/ext/x/) [c](../ext2/sub/x.md) [d](/ext2/sub/y/) [e](../ext3/x.md)"
    settings = site_settings(repo / "docs", {"guide/index.md": f"# G\n\n{links}\n"})
    assert set(page_verdicts(settings, "guide/index.md").values()) == {False}


def test_guard_a_fifo_or_folder_named_gitignore_does_not_block(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"docs/ff/keep.txt": "", "docs/dd/.gitignore/x": "*\n"})
    os.mkfifo(repo / "docs" / "ff" / ".gitignore")
    settings = site_settings(
        repo / "docs", {"guide/index.md": "# G\n\n[a](../ff/x.md) [b](/ff/x/) [c](/dd/y/)\n"}
    )
    old = signal.signal(signal.SIGALRM, lambda *_: pytest.fail("blocked on a FIFO named .gitignore"))
    signal.alarm(60)
    try:
        verdicts = page_verdicts(settings, "guide/index.md")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert verdicts == {"../ff/x.md": False, "/ff/x/": False, "/dd/y/": False}


def test_guard_a_huge_nested_gitignore_is_read_in_part(tmp_path: Path) -> None:
    # 8 MB of patterns, its last line `*`: only the head is read, and the links cost little.
    huge = "".join(f"nothing{i}\n" for i in range(600_000)) + "*\n"
    files = {"docs/big/.gitignore": huge}
    repo = _repo(tmp_path, files)
    settings = site_settings(repo / "docs", {"guide/index.md": "# G\n\n[a](../big/x.md) [b](/big/y/)\n"})
    started = time.process_time()
    verdicts = page_verdicts(settings, "guide/index.md")
    assert time.process_time() - started < 15
    assert verdicts == {"../big/x.md": False, "/big/y/": False}


def test_guard_many_small_nested_gitignores_stay_cheap(tmp_path: Path) -> None:
    # 600 folders, each with a one-line `.gitignore`, a route and a file link into each: about the
    # cost of the same links with no `.gitignore` files.
    def cost(name: str, file: str) -> float:
        files = {f"docs/d{i}/{file}": f"gen{i}.md\n" for i in range(600)}
        links = " ".join(f"[a](/d{i}/m/) [b](../d{i}/n.md)" for i in range(600))
        repo = _repo(tmp_path / name, files)
        settings = site_settings(repo / "docs", {"guide/index.md": f"# G\n\n{links}\n"})
        started = time.process_time()
        assert set(page_verdicts(settings, "guide/index.md").values()) == {False}
        return time.process_time() - started

    plain = cost("plain", "keep.txt")
    nested = cost("nested", ".gitignore")
    assert nested <= 3 * plain + 0.5, (plain, nested)


def test_guard_a_patch_hiding_its_own_breakage_behind_a_new_gitignore_is_refused(tmp_path: Path) -> None:
    from udm.patch import apply_patch, parse_patch

    repo = _repo(
        tmp_path,
        {
            "docs/index.md": "# H\n",
            "docs/guide/index.md": "# G\n\n[b](../reference/api.md)\n",
            "docs/reference/api.md": "# API\n",
            "docs/other/.gitignore": "*\n",
        },
    )
    (repo / "state").mkdir()
    settings = load_settings(cwd=repo / "docs", root=repo / "docs", state_dir=repo / "state")
    ops = [
        {"op": "create_file", "file": "reference/.gitignore", "content": "*\n"},
        {"op": "delete_file", "file": "reference/api.md"},
    ]
    result = apply_patch(parse_patch({"description": "t", "operations": ops}), settings)
    assert result.status == "invalid" and "../reference/api.md would break" in (result.error or ""), result


@pytest.mark.skipif(shutil.which("git") is None, reason="git is needed to compare with")
def test_guard_nested_matching_agrees_with_git(tmp_path: Path) -> None:
    # Random `.gitignore` files in the root and in folders below it, every path up to four deep
    # asked of git (`check-ignore --no-index`) and of `ignored` with the nested files.
    rng = random.Random(17)
    names = ["a", "b", "x.md", "*", "**", "*.md", "?"]

    def pattern() -> str:
        text = "/".join(rng.choice(names) for _ in range(rng.randint(1, 3)))
        if rng.random() < 0.3:
            text = "/" + text
        if rng.random() < 0.2:
            text += "/"
        return "!" + text if rng.random() < 0.3 else text

    folders = ["", "a", "a/b", "b"]
    paths = ["/".join(t) for d in range(1, 5) for t in itertools.product(["a", "b", "x.md"], repeat=d)]
    wrong = []
    for trial in range(25):
        work = tmp_path / f"t{trial}"
        subprocess.run(["git", "init", "-q", str(work)], check=True)
        files = {}
        for folder in folders:
            if rng.random() < 0.6:
                files[folder] = tuple(pattern() for _ in range(rng.randint(1, 3)))
                (work / folder).mkdir(parents=True, exist_ok=True)
                (work / folder / ".gitignore").write_text("\n".join(files[folder]) + "\n")
        chain = (("", files[""]),) if "" in files else ()
        out = subprocess.run(
            ["git", "-C", str(work), "check-ignore", "--no-index", "-v", "-n", "--stdin"],
            input="\n".join(paths) + "\n",
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        git = {}
        for line in out.splitlines():
            source, path = line.split("\t")
            git[path] = bool(source.strip(":")) and not source.split(":", 2)[2].startswith("!")
        for path in paths:
            nested = tuple((f, files[f]) for f in folders[1:] if f in files and path.startswith(f + "/"))
            ask = ignored_folder if (work / path).is_dir() else ignored
            if ask(chain, path, nested) != git[path]:
                wrong.append((path, files))
    assert not wrong, wrong[:5]


# ---------------------------------------------------------------------------------------------
# Feature 2: template lines -- findings


@pytest.mark.parametrize(
    ("config", "block"),
    [
        (HOOKS, "```\n{{ pydantic_settings }}\n```"),  # a fenced code block: its output is code
        (MACROS, "~~~\n{% include 'part.md' %}\n~~~"),
        (HOOKS, "Para.\n\n    {{ pydantic_settings }}"),  # indented code
        (HOOKS, "<!--\n{{ pydantic_settings }}\n-->"),  # an HTML comment: nothing renders
        (MACROS, "{% raw %}\n{{ version }}\n{% endraw %}"),  # macros prints it as text
    ],
)
def test_finding_a_template_line_in_code_or_a_comment_renders_no_heading(
    tmp_path: Path, config: str, block: str
) -> None:
    # FINDING: `_TEMPLATE_LINE` is searched in the page's raw text, so a `{{ x }}` line inside a
    # fenced or indented code block, an HTML comment or a macros `{% raw %}` block makes every anchor
    # not found on the page unknown; whatever it renders to stays code, a comment or text, no
    # heading (as the snippet lines are judged: `test_which_snippet_lines_include_headings`).
    # `#nope-here` should stay broken.
    verdicts = _mkdocs(tmp_path, config, {"index.md": f"# Home\n\n{block}\n\n[x](#nope-here)\n"})
    assert verdicts == {"#nope-here": False}


def test_finding_a_heading_made_of_a_template_has_an_unknown_id(tmp_path: Path) -> None:
    # FINDING: with mkdocs-macros the page is rendered as a template before Markdown reads it, so
    # `## {{ config.site_name }} settings` is a heading whose id only the render tells; a link to it
    # (`#s-settings` once rendered) is reported broken. A heading whose text holds a Jinja
    # expression should make the anchors not found unknown, as a Hugo shortcode heading does.
    page = "# Home\n\n## {{ config.site_name }} settings\n\n[x](#s-settings)\n"
    assert _mkdocs(tmp_path, MACROS, {"index.md": page}) == {"#s-settings": None}


# ---------------------------------------------------------------------------------------------
# Feature 2: guards


@pytest.mark.parametrize(
    ("config", "line"),
    [
        ("site_name: S\n", "{{ x }}"),  # nothing renders it
        ("site_name: S\nhooks: []\n", "{{ x }}"),
        ("site_name: S\nplugins:\n  - search\n", "{% include 'a.md' %}"),
        (MACROS, "`{{ x }}`"),  # in inline code, not alone
        (MACROS, "> {{ x }}"),
        (MACROS, "- {{ x }}"),
        (MACROS, "{{ a {{ b }} }}"),
        (MACROS, "{% includes 'a.md' %}"),
    ],
)
def test_guard_lines_that_are_no_template_line(tmp_path: Path, config: str, line: str) -> None:
    verdicts = _mkdocs(tmp_path, config, {"index.md": f"# Home\n\n{line}\n\n[x](#nope-here)\n"})
    assert verdicts == {"#nope-here": False}


def test_guard_a_template_line_hides_only_the_anchors_of_its_own_page(tmp_path: Path) -> None:
    files = {
        "index.md": "# Home\n\n{{ x }}\n\n[a](missing.md) [b](missing.md#x) [c](plain.md#nope) [d](/nope/) [e](#nope)\n",
        "plain.md": "# P\n\n[f](index.md#nope) [g](index.md#home) [h](gone.md#nope)\n",
    }
    project = tmp_path / "project"
    project.mkdir()
    (project / "mkdocs.yml").write_text(MACROS)
    settings = site_settings(project / "docs", files)
    assert page_verdicts(settings, "index.md") == {
        "missing.md": False,
        "missing.md#x": False,
        "plain.md#nope": False,
        "/nope/": False,
        "#nope": None,
    }
    assert page_verdicts(settings, "plain.md") == {
        "index.md#nope": None,
        "index.md#home": True,
        "gone.md#nope": False,
    }


def test_guard_the_template_line_pattern_is_linear() -> None:
    units = [
        " " * 5000 + "{{",
        "{% include " + "%" * 299 + "\n",
        "{{" + "x" * 299 + "}\n",
        "{{ " + "a" * 298 + " }}x\n",
        "\t" * 200 + "{%- include" + " " * 290 + "%} x\n",
    ]
    for unit in units:
        text = (unit * (2_000_000 // len(unit) + 1))[:2_000_000]
        started = time.process_time()
        assert _TEMPLATE_LINE.search(text) is None
        assert time.process_time() - started < 1.0, unit[:20]
