"""Attacks on the repository-aware link rules: the `.gitignore` matcher (udm.site.gitignore), the
reading of `.gitignore` files (detect_site), links above a manual read on GitHub, Docusaurus docs
plugin instances (jsconfig) and MDX partials (anchors).

A repository's `.gitignore`, its site config and its pages are untrusted: a crafted one must neither
take seconds, nor hide broken links, nor let a link probe a file outside the repository. Written by a
helper attacking the first version of these rules: the tests above "what held up" failed on it, or on
a version before it (their docstrings say what it did), and pass now. Timing attacks run in a child process under a hard
timeout so a regression cannot stall the suite.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from udm.site.anchors import page_anchors
from udm.site.gitignore import ignored
from udm.site.model import Site
from udm.site.routes import detect_site

from ..engine.conftest import link_verdicts, site_settings

_ROOT = Path(__file__).resolve().parents[2]


def _git_init(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)


def _git_ignored(repo: Path, raw: bytes, paths: list[str]) -> set[str]:
    """The paths (written as files) that git itself ignores under a root `.gitignore` of `raw`."""
    _git_init(repo)
    (repo / ".gitignore").write_bytes(raw)
    for rel in paths:
        f = repo / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("x", encoding="utf-8")
    out = subprocess.run(
        ["git", "-C", str(repo), "ls-files", "-o", "-i", "--exclude-standard", "-z"],
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8", "surrogateescape")
    return {p for p in out.split("\0") if p}


def _compare(tmp_path: Path, lines: list[str], paths: list[str]) -> list[tuple[str, bool, bool]]:
    """(path, git's verdict, udm's) for each path where `udm.site.gitignore.ignored` disagrees."""
    raw = ("\n".join(lines) + "\n").encode("utf-8")
    by_git = _git_ignored(tmp_path / "repo", raw, paths)
    return [
        (p, p in by_git, ignored((("", tuple(lines)),), p))
        for p in paths
        if ignored((("", tuple(lines)),), p) != (p in by_git)
    ]


def _child_seconds(code: str, limit: float) -> None:
    """Run `code` in a fresh interpreter; fail when it takes `limit` seconds of CPU or more (the
    suite's other workers do not count), or four times that of wall time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            cwd=_ROOT,
            timeout=4 * limit,
            check=True,
            capture_output=True,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"took longer than {4 * limit}s (super-linear on a crafted input)")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert spent < limit, f"took {spent:.2f}s of CPU (super-linear on a crafted input)"


# --------------------------------------------------------------------------------------------
# (a) time


def test_gitignore_inside_pattern_cubic_in_path_depth() -> None:
    """udm/site/gitignore.py `ignored` / `_Rules.decide`: ONE 853-byte pattern
    `**/a/**/a/.../**` (a trailing `/**` makes it an "inside" pattern) against a 127-segment link
    target `a/a/.../a` took ~10-12 s (depth 16: 0.03 s, 32: 0.19 s, 64: 1.5 s, 127: 11.8 s: cubic).
    `ignored` re-decides every prefix depth, `decide` tries every prefix `parts[:k]` for an inside
    pattern, and each `_path_match` fills a segments x parts table: depth x parts x segments.
    Each missing link target of the manual pays it again (build_output is not cached), so a
    one-line `.gitignore` plus a page of deep links stalls indexing. The module promises cost bounded
    by pattern size x path size."""
    _child_seconds(
        """
        from udm.site.gitignore import ignored
        pat = "/".join(["**", "a"] * 170)[:1020] + "/**"
        rel = "/".join(["a"] * 127)
        ignored((("", (pat,)),), rel)
        """,
        limit=2.5,
    )


def test_gitignore_many_anchored_patterns_on_deep_link(tmp_path: Path) -> None:
    """udm/site/gitignore.py `ignored` through `Site.build_output` (what `_locate_relative` calls for
    a missing link target): a 17 KB `.gitignore` (20 copies of a `**/a/**/a/...` line) and ONE link
    to `a/a/.../a/x.md` (120 segments) took ~5 s of link resolution (4 KB of patterns: 1 s; 212 KB:
    64 s). Expected: well under a second for a few KB of patterns and a 250-character target."""
    _git_init(tmp_path)
    pat = "/".join(["**", "a"] * 170)[:1023]
    (tmp_path / ".gitignore").write_text((pat + "\n") * 20, encoding="utf-8")
    _child_seconds(
        f"""
        from pathlib import Path
        from udm.site.routes import detect_site
        site = detect_site(Path({str(tmp_path)!r}), "none")
        assert site.ignores
        site.build_output("/".join(["a"] * 120) + "/x.md")
        """,
        limit=2.5,
    )


def test_docusaurus_unclosed_docs_plugin_instances_slow(tmp_path: Path) -> None:
    """udm/site/jsconfig.py `_docs_instances`: a docusaurus.config.js of 250 KB that starts with 50
    unclosed `['content-docs', {` entries makes `_balanced` scan the rest of the file 50 times in
    Python: detect_site took ~4 s (1 MB, the config limit: ~15.5 s; the same size without the
    entries: 0.01-0.06 s). `_js_block` caps its own tries at 3 for this reason; the instance loop
    allows 50 full scans."""
    head = "module.exports={plugins:[" + "['content-docs', {" * 50
    text = head + "a" * (250_000 - len(head)) + "\n"
    (tmp_path / "docusaurus.config.js").write_text(text, encoding="utf-8")
    _child_seconds(
        f"""
        from pathlib import Path
        from udm.site.routes import detect_site
        assert detect_site(Path({str(tmp_path)!r}), "auto").generator == "docusaurus"
        """,
        limit=2.0,
    )


def test_mdx_partial_check_quadratic_in_imports() -> None:
    """udm/site/anchors.py `_renders_partial` (called by `page_anchors` for any `.mdx` page, when a
    link names an anchor it lacks): it searched the WHOLE text for `<X` once per `import X from
    '....md'` line - imports x text size: a 400 KB page of 16,000 imports took ~4.8 s. HELD after the
    change under attack capped the imports tried at 100 (passes now; guards the cap)."""
    _child_seconds(
        """
        from udm.site.anchors import page_anchors
        from udm.site.model import Site
        text = "".join(f"import A{i} from 'x.md'\\n" for i in range(16000))
        page_anchors(Site(generator="docusaurus"), "p.mdx", text)
        """,
        limit=2.0,
    )


# --------------------------------------------------------------------------------------------
# (d)/(e) verdicts against git


@pytest.mark.parametrize("sep", ["\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\r"])
def test_gitignore_line_split_only_on_newline(tmp_path: Path, sep: str) -> None:
    """udm/site/gitignore.py `read_ignores` (was detect.py `_ignores`) splits a `.gitignore` with
    `str.splitlines()`, which also breaks lines at form feed, \\x1c-\\x1e, NEL, U+2028/U+2029 and a
    lone CR. Git splits only at LF (dropping one CR before it). So the one pattern `notes<SEP>*` is,
    for udm, the two patterns `notes` and `*`: every file is "ignored", git ignores none."""
    raw = f"notes{sep}*\n".encode()
    by_git = _git_ignored(tmp_path / "repo", raw, ["missing.md", "sub/other.md"])
    site = detect_site(tmp_path / "repo", "none")
    assert by_git == set()
    assert [site.build_output(p) for p in ("missing.md", "sub/other.md")] == [False, False]


def test_hostile_gitignore_hides_every_broken_link(tmp_path: Path) -> None:
    """End to end (index -> resolve_links): a repository whose `.gitignore` is the single line
    `notes\\x0c*` (git: ignores nothing; `git check-ignore missing.md` prints nothing) makes every
    broken link of the manual "generated" (verdict None, not checked) instead of broken (False)."""
    _git_init(tmp_path)
    (tmp_path / ".gitignore").write_bytes(b"notes\x0c*\n")
    settings = site_settings(tmp_path, {"index.md": "# Hi\n\n[gone](missing.md)\n"})
    assert link_verdicts(settings)[("index.md", "missing.md")] is False


@pytest.mark.parametrize("line", ["//*", "*//"])
def test_gitignore_doubled_slash_ignores_everything(tmp_path: Path, line: str) -> None:
    """udm/site/gitignore.py `_pattern`: `text.rstrip("/")` and `text.lstrip("/")` drop EVERY leading
    or trailing slash, so `//*` becomes `*` (anchored) and `*//` becomes the directory pattern `*/`:
    udm ignores every file (or every file in a folder). Git removes one slash each side and these
    patterns match nothing. One such line in a repository's `.gitignore` hides all broken links."""
    assert _compare(tmp_path, [line], ["missing.md", "sub/missing.md"]) == []


def test_gitignore_utf8_bom(tmp_path: Path) -> None:
    """udm/site/gitignore.py `read_ignores`: git skips a UTF-8 byte order mark at the start of a
    `.gitignore` (dir.c skip_utf8_bom); udm keeps U+FEFF in the first pattern, so `generated/` is
    read as `\\ufeffgenerated/` and a link to a generated page is reported broken, not unknown."""
    by_git = _git_ignored(tmp_path / "repo", b"\xef\xbb\xbfgenerated/\n", ["generated/x.md"])
    assert by_git == {"generated/x.md"}
    assert detect_site(tmp_path / "repo", "none").build_output("generated/x.md") is True


@pytest.mark.parametrize(
    ("lines", "paths"),
    [
        (["[[:digit:]]*"], ["5x.txt", ":x"]),
        (["[[:alpha:]]"], ["q", "1"]),
        (["[x[:digit:]]"], ["x", "3"]),
    ],
)
def test_gitignore_posix_character_classes(tmp_path: Path, lines: list[str], paths: list[str]) -> None:
    """udm/site/gitignore.py `_class`: git's wildmatch supports POSIX classes (`[[:digit:]]`,
    `[[:alpha:]]`, `[[:space:]]`, ...); udm reads `[[:digit:]` as the set `[:digt` followed by a literal
    `]`, so `[[:digit:]]*` does not ignore `5x.txt` (git does)."""
    assert _compare(tmp_path, lines, paths) == []


@pytest.mark.parametrize(
    ("lines", "paths"),
    [
        (["foo\\"], ["foo\\", "foo"]),  # trailing backslash: git's pattern never matches
        (["foo\\\\ "], ["foo\\", "foo\\ "]),  # escaped backslash, then a trailing space git trims
        (["[a-\\c]"], ["b"]),  # an escaped range end
    ],
)
def test_gitignore_backslash_escapes(tmp_path: Path, lines: list[str], paths: list[str]) -> None:
    """udm/site/gitignore.py `_pattern`/`_tokens`/`_class` escapes: a pattern ending in a lone `\\`
    matches a file literally named `foo\\` in udm (git: a trailing backslash makes the pattern match
    nothing); `foo\\\\ ` (escaped backslash + space) keeps its space in udm (git trims it: the
    backslash is escaped, the space is not); `[a-\\c]` is no range in udm (git: a to c)."""
    assert _compare(tmp_path, lines, paths) == []


@pytest.mark.parametrize(
    ("lines", "paths"),
    [
        (["***/x"], ["x", "a/x"]),  # three stars before a slash are git's `**/`
        (["/a**", "!/a"], ["a/b", "a/c/d"]),  # `**` after a literal prefix: git matches across `/`
    ],
)
def test_gitignore_star_runs(tmp_path: Path, lines: list[str], paths: list[str]) -> None:
    """udm/site/gitignore.py `_pattern`: git treats a run of three or more stars bounded by slashes as
    `**` (`***/x` ignores a top-level `x`); and, because dir.c compares a pattern's literal prefix
    before wildmatch, `/a**` matches `a/b` (the `**` starts the rest of the pattern). udm tokenises
    `***` as one `*` segment and `a**` as `a*`, disagreeing with git 2.39 on both. (Exotic; listed for
    the "as git matches them" promise.)"""
    assert _compare(tmp_path, lines, paths) == []


def test_repository_link_to_git_internals_and_ignored_files(tmp_path: Path) -> None:
    """udm/site/routes.py `_locate_relative` (the `how="repository"` branch) with `Site.in_repository`:
    a manual in `repo/docs` with no generator resolves `../.git/config`, `../.git/HEAD`, and
    `../.env` / `../secrets/key.pem` (both ignored by the repository's own `.gitignore`) as files of
    the repository (verdict True), because it asks only whether the path exists on disk. GitHub shows
    none of them: `.git/` is never part of the repository and ignored files are not committed. A
    page can thereby also probe the existence of local secrets (the verdict, or lint's "does not exist
    in the repository" message, tells). Expected: all four broken (False)."""
    repo = tmp_path / "repo"
    _git_init(repo)
    (repo / ".gitignore").write_text(".env\nsecrets/\n", encoding="utf-8")
    (repo / ".env").write_text("TOKEN=1", encoding="utf-8")
    (repo / "secrets").mkdir()
    (repo / "secrets" / "key.pem").write_text("k", encoding="utf-8")
    targets = ["../.git/config", "../.git/HEAD", "../.env", "../secrets/key.pem"]
    page = "# Hi\n\n" + "".join(f"[l]({t})\n" for t in targets)
    verdicts = link_verdicts(site_settings(repo / "docs", {"index.md": page}))
    assert {t: verdicts[("index.md", t)] for t in targets} == dict.fromkeys(targets, False)


def test_repository_symlink_probes_outside_files(tmp_path: Path) -> None:
    """udm/site/routes.py `_locate_relative` (`how="repository"`): a symlink at the repository root,
    `etc-link -> /etc`, lets a page of `repo/docs` probe files anywhere on the machine:
    `../etc-link/passwd` resolves (True) while `../etc-link/nonexistent-zzz` is broken (False), so the
    verdict leaks whether /etc/passwd exists. GitHub shows a symlink as a file holding its target and
    never follows it out of the repository. (A symlink inside the manual was followed before this
    change too; the repository branch extends the reach to every symlink of the repository.)
    Expected: both False."""
    repo = tmp_path / "repo"
    _git_init(repo)
    (repo / "etc-link").symlink_to("/etc")
    page = "# Hi\n\n[a](../etc-link/passwd)\n[b](../etc-link/nonexistent-zzz)\n"
    verdicts = link_verdicts(site_settings(repo / "docs", {"index.md": page}))
    assert verdicts[("index.md", "../etc-link/passwd")] is False
    assert verdicts[("index.md", "../etc-link/nonexistent-zzz")] is False


# --------------------------------------------------------------------------------------------
# what held up (passing)


@pytest.mark.parametrize(
    ("lines", "paths"),
    [
        (["abc/**", "!abc/keep.txt"], ["abc/keep.txt", "abc/x.txt"]),
        (["**"], ["a.txt", "d/b.txt"]),
        (["a/", "!a/**"], ["a/b"]),
        (["foo/**/"], ["foo/a/b", "foo/x"]),
        (["d/", "!d/f"], ["d/f"]),
        (["a/**/b"], ["a/b", "a/x/y/b", "ab"]),
        (["*", "!*/", "!*.md"], ["a/b.md", "a/c.txt"]),
        (["/*", "!/docs"], ["docs/a.md", "z.md"]),
        (["[!a-c]", "\\!x", "\\#y"], ["b", "d", "!x", "#y"]),
        (["[]]x", "[a-]y"], ["]x", "-y", "ay", "by"]),
    ],
)
def test_gitignore_agrees_with_git(tmp_path: Path, lines: list[str], paths: list[str]) -> None:
    """Forms that agree with git (after the fixes for `**` and trailing `/**`)."""
    assert _compare(tmp_path, lines, paths) == []


def test_gitignore_glob_linear_on_long_names() -> None:
    """`*a*a*...` (1 KB) against a 100,000-character name stays fast (two-pointer glob)."""
    import time

    started = time.process_time()
    assert ignored((("", ("*a" * 500,)),), "a" * 100_000)
    assert time.process_time() - started < 1.0


def test_repository_link_cannot_reach_above_repository(tmp_path: Path) -> None:
    """A manual in `repo/docs` read on GitHub: `../README.md` lands in the repository; `../../` (the
    folder above the repository) and `../../secret.txt` do not."""
    repo = tmp_path / "repo"
    _git_init(repo)
    (repo / "README.md").write_text("r", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("s", encoding="utf-8")
    page = "# Hi\n\n[a](../README.md)\n[b](../../)\n[c](../..)\n[d](../../secret.txt)\n"
    verdicts = link_verdicts(site_settings(repo / "docs", {"index.md": page}))
    assert verdicts[("index.md", "../README.md")] is True
    assert verdicts[("index.md", "../../")] is False
    assert verdicts[("index.md", "../..")] is False
    assert verdicts[("index.md", "../../secret.txt")] is False


def test_docusaurus_markdown_links_stay_in_site(tmp_path: Path) -> None:
    """`@site/` and `/x.md` links climbing out of the site resolve to nothing; in-site forms resolve."""
    links = [
        "a.md",
        "/a.md",
        "@site/docs/a.md",
        "@site/../../../etc/passwd.md",
        "/../../etc/passwd.md",
        "a.md#:~:text=x",
        "a.md#title:~:text=zz",
        "a.md#nope:~:text=x",
        "b.md",
    ]
    body = "# Hi\n\n" + "\n".join(f"[l{i}]({t})" for i, t in enumerate(links)) + "\n"
    settings = site_settings(
        tmp_path,
        {
            "docusaurus.config.js": "module.exports = {presets: [['classic', {docs: {}}]]};",
            "docs/index.md": body,
            "docs/a.md": "# Title\n",
            "docs/sub/b.md": "# B\n",
        },
    )
    got = {t: v for (f, t), v in link_verdicts(settings).items() if f == "docs/index.md"}
    assert got == {
        "a.md": True,
        "/a.md": True,
        "@site/docs/a.md": True,
        "@site/../../../etc/passwd.md": False,
        "/../../etc/passwd.md": False,
        "a.md#:~:text=x": True,
        "a.md#title:~:text=zz": True,
        "a.md#nope:~:text=x": False,
        "b.md": False,
    }


def test_mintlify_components_linear() -> None:
    """5,000 `<Tab title=...>` / `<ParamField body=...>` tags (1.5 MB) stay fast."""
    import time

    site = Site(generator="mintlify")
    text = ('<Tab title="' + "a" * 290 + '">\n') * 5000
    started = time.perf_counter()
    page_anchors(site, "p.mdx", text)
    assert time.perf_counter() - started < 1.5
