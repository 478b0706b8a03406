"""A link to a file the repository's `.gitignore` ignores names a page the build writes (uv's
`reference/settings.md`, ruff's `rules/`): not there to check, so unknown rather than broken.
Conventions found on astral-sh/uv and astral-sh/ruff, re-created here in fixtures written by the test."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from udm.index import lint
from udm.index.links import check_links
from udm.site.gitignore import ignored

from .conftest import page_verdicts, site_settings, write_tree

LINKS = (
    "# Guide\n\n[a](../reference/cli.md#uv) [b](../rules/line-too-long.md) [c](../rules/keep.md)\n"
    "[d](../missing.md) [e](../reference/kept.md)\n"
)


def _repository(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    write_tree(
        repo,
        {
            # The repository's own (uv's) and the manual's (ruff's), each relative to its folder.
            # uv's layout: an MkDocs site whose docs_dir is docs/ (a site a build writes pages into).
            "mkdocs.yml": "site_name: S\n",
            ".gitignore": "# generated\n/docs/reference/cli.md\n*.pyc\n",
            # `/rules/*` ignores the files, so `!` can take one back (of an ignored folder, git
            # takes back nothing: see test_gitignore_matching).
            "docs/.gitignore": "/rules/*\n!/rules/keep.md\n",
            "docs/reference/kept.md": "# Kept\n",
        },
    )
    return repo


def test_links_to_ignored_files_are_unknown(tmp_path: Path) -> None:
    repo = _repository(tmp_path)
    settings = site_settings(repo / "docs", {"guide/index.md": LINKS})
    assert page_verdicts(settings, "guide/index.md") == {
        "../reference/cli.md#uv": None,
        "../rules/line-too-long.md": None,
        "../rules/keep.md": False,  # un-ignored again by `!`: a file the repository should hold
        "../missing.md": False,
        "../reference/kept.md": True,
    }
    assert {f.message for f in lint(settings) if f.file == "guide/index.md"} == {
        "link target ../rules/keep.md does not exist",
        "link target ../missing.md does not exist",
    }
    reasons = {
        r.target: r.reason for r in check_links(settings, external=False).results if r.status == "skipped"
    }
    assert reasons == {
        "../reference/cli.md#uv": (
            "reference/cli.md is ignored by the repository's .gitignore: a file the build writes, not checked"
        ),
        "../rules/line-too-long.md": (
            "rules/line-too-long.md is ignored by the repository's .gitignore: a file the build writes, "
            "not checked"
        ),
    }


def test_a_changed_gitignore_is_read_at_the_next_refresh(tmp_path: Path) -> None:
    repo = _repository(tmp_path)
    settings = site_settings(repo / "docs", {"guide/index.md": LINKS})
    assert page_verdicts(settings, "guide/index.md")["../missing.md"] is False
    (repo / ".gitignore").write_text("/docs/reference/cli.md\n/docs/missing.md\n")
    assert page_verdicts(settings, "guide/index.md")["../missing.md"] is None


def test_without_a_repository_nothing_is_ignored(tmp_path: Path) -> None:
    write_tree(tmp_path / "plain", {".gitignore": "/reference/\n"})
    settings = site_settings(tmp_path / "plain", {"guide/index.md": "# G\n\n[a](../reference/cli.md)\n"})
    assert page_verdicts(settings, "guide/index.md") == {"../reference/cli.md": False}


@pytest.mark.parametrize(
    ("lines", "path", "expected"),
    [
        (("/docs/reference/cli.md",), "docs/reference/cli.md", True),
        (("/docs/reference/cli.md",), "other/docs/reference/cli.md", False),
        (("*.pyc",), "a/b/c.pyc", True),
        (("build/",), "a/build/x.md", True),
        (("build/",), "a/build", False),  # a file named build: the pattern is for folders
        (
            ("/rules/", "!/rules/keep.md"),
            "rules/keep.md",
            True,
        ),  # git takes nothing back from an ignored folder
        (("/rules/*", "!/rules/keep.md"), "rules/keep.md", False),
        (("/rules/*", "!/rules/keep.md"), "rules/other.md", True),
        (("**/gen/**",), "a/b/gen/c/d.md", True),
        (("a/**/b.md",), "a/b.md", True),
        (("a/**/b.md",), "a/x/y/b.md", True),
        (("a/**/b.md",), "x/a/b.md", False),
        (("doc[0-9].md",), "doc7.md", True),
        (("doc[!0-9].md",), "doc7.md", False),
        (("\\#hash.md",), "#hash.md", True),
        (("# comment", "", "   "), "comment", False),
        (("*.md", "!README.md"), "README.md", False),
        (("a?c.md",), "abc.md", True),
        (("a?c.md",), "a/c.md", False),
        (("[unclosed",), "[unclosed", False),
        (("/rules/**", "!/rules/keep.md"), "rules/keep.md", False),  # `/**` is the inside, not the folder
        (("gen/**",), "gen/x/y.md", True),
        (("**",), "a/b.md", True),
    ],
)
def test_gitignore_matching(lines: tuple[str, ...], path: str, expected: bool) -> None:
    """Checked against `git check-ignore` on the same files (git 2.39)."""
    assert ignored((("", lines),), path) is expected


@pytest.mark.parametrize(
    "pattern",
    [
        "*a*a*a*a*a*a*a*a*a*a*a*b",
        "**/a/**/a/**/a/**/a/**/a/**/a/**/b",
        "[a]*[a]*[a]*[a]*[a]*[a]*[a]*[a]*[a]*[a]*[a]*b",
    ],
)
def test_a_crafted_pattern_costs_time_bounded_by_its_size(pattern: str) -> None:
    """A regex translation of these backtracks for seconds on a forty-character name (pathspec: 22 s)."""
    names = ["a" * 200, "/".join(["a"] * 100) + "/c"]
    started = time.process_time()
    for name in names:
        assert ignored((("", (pattern,)),), name) is False
    assert time.process_time() - started < 1.0


def test_a_manual_in_an_ignored_folder_takes_nothing_from_the_gitignore(tmp_path: Path) -> None:
    """A scratch copy inside a repository (`/scratch/**` ignored): the repository holds none of its
    files, so a missing one is broken, not a build's output."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    write_tree(repo, {".gitignore": "/scratch/**\n"})
    settings = site_settings(repo / "scratch" / "manual", {"index.md": "# I\n\n[a](gone.md)\n"})
    assert page_verdicts(settings, "index.md") == {"gone.md": False}


def test_a_deeper_gitignore_takes_back_the_folder_holding_the_manual(tmp_path: Path) -> None:
    """`scratch` ignored at the repository's root but `!scratch` in `a/.gitignore`: git keeps
    `a/scratch`, so a manual there is the repository's and its patterns apply."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    write_tree(
        repo,
        {
            ".gitignore": "scratch\n",
            "a/.gitignore": "!scratch\n/scratch/gen/\n",
            "a/scratch/mkdocs.yml": "site_name: S\ndocs_dir: docs\n",
        },
    )
    settings = site_settings(
        repo / "a" / "scratch" / "docs", {"index.md": "# I\n\n[a](../gen/x.md) [b](gone.md)\n"}
    )
    assert page_verdicts(settings, "index.md") == {"../gen/x.md": False, "gone.md": False}
    settings = site_settings(repo / "a" / "scratch", {"index.md": "# I\n\n[a](gen/x.md) [b](gone.md)\n"})
    assert page_verdicts(settings, "index.md") == {"gen/x.md": None, "gone.md": False}


def test_a_manual_read_on_github_has_no_ignored_files(tmp_path: Path) -> None:
    """With no generator the manual is read on GitHub, which shows no ignored file, built or not: a
    link to one is broken, and above the manual so is one to git's own folder (the helper's attack)."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    write_tree(repo, {".gitignore": ".env\n/docs/gen/\n", ".env": "TOKEN=1\n", ".git/config": "[core]\n"})
    settings = site_settings(
        repo / "docs", {"index.md": "# I\n\n[a](gen/x.md) [b](../.env) [c](../.git/config)\n"}
    )
    assert page_verdicts(settings, "index.md") == {
        "gen/x.md": False,
        "../.env": False,
        "../.git/config": False,
    }


def test_a_folder_pattern_ignores_a_link_to_a_missing_folder(tmp_path: Path) -> None:
    # `api/` names a folder only: a link to `api/` or `api` (a folder the build writes) is unknown,
    # and so is a file inside it; a missing `build.md` may be a folder too, so `build.md/` covers it.
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    write_tree(repo, {"mkdocs.yml": "site_name: S\n", ".gitignore": "/docs/api/\n/docs/build.md/\n"})
    page = "# Guide\n\n[a](../api/) [b](../api) [c](../api/x.md) [d](../build.md) [e](../apix/)\n"
    settings = site_settings(repo / "docs", {"guide/index.md": page})
    assert page_verdicts(settings, "guide/index.md") == {
        "../api/": None,
        "../api": None,
        "../api/x.md": None,
        "../build.md": None,  # as a folder (its name alone does not say a path is a file)
        "../apix/": False,
    }


def test_a_gitignore_in_a_folder_of_the_manual_marks_the_pages_a_build_writes(tmp_path: Path) -> None:
    # Tauri's docs: `src/content/docs/reference/.gitignore` lists `config.md` and `javascript/*` (but
    # `!javascript/index.mdx`), which a script writes before the build; links reach them by route.
    repo = _repository(tmp_path)
    outside = tmp_path / "outside"
    write_tree(outside, {".gitignore": "*\n"})
    write_tree(
        repo / "docs",
        {
            "reference/.gitignore": "config.md\njavascript/*\n!javascript/index.md\n",
            "reference/javascript/index.md": "# JS\n",
            "evil/page.md": "# E\n",
        },
    )
    (repo / "docs" / "evil" / ".gitignore").symlink_to(outside / ".gitignore")
    links = (
        "# G\n\n[a](../reference/config.md) [b](/reference/config/) [c](/reference/javascript/api/event/)\n"
        "[d](/reference/javascript/) [e](/reference/nothing/) [f](../reference/javascript/index.md)\n"
        "[g](/evil/gone/) [h](../evil/gone.md)\n"
    )
    settings = site_settings(repo / "docs", {"guide/index.md": links})
    assert page_verdicts(settings, "guide/index.md") == {
        "../reference/config.md": None,
        "/reference/config/": None,
        "/reference/javascript/api/event/": None,
        "/reference/javascript/": True,
        "/reference/nothing/": False,
        "../reference/javascript/index.md": True,
        "/evil/gone/": False,  # a `.gitignore` linked from out of the manual is not read
        "../evil/gone.md": False,
    }
