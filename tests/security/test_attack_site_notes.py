"""Attacks on the site notes (`site_notes`, `configs_below`, the `site-config` lint rule and the
`site config:` lines of `udm index` / `udm links`): folder trees below the manual root, config texts
quoted in notes, `site_config` values and the lint report formats. Every input is a folder, a file or a
setting a user, an agent or a checked-out repository controls; each must be refused with a clear error
or contained (bounded time, no traceback, no control character on the terminal, valid reports)."""

from __future__ import annotations

import json
import os
import posixpath
import time
import unicodedata
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from flows.cli import run
from udm.config import load_settings
from udm.index.lint_rules import lint
from udm.site import site_notes
from udm.site.detect import configs_below

from ..engine.conftest import write_tree
from ..engine.test_links import _agreement

BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
# Generous: the suite runs under xdist on two loaded cores.
SLOW = 2.0


def _hidden(text: str) -> list[str]:
    return [c for c in text if unicodedata.category(c) == "Cc" or c in BIDI]


def _clean_notes(notes: list[tuple[str, str]]) -> None:
    for path, message in notes:
        for part in (path, message):
            assert not _hidden(part), (part, _hidden(part))
            assert len(part) <= 600, len(part)


def _timed(fn: object, *args: object) -> tuple[object, float]:
    started = time.perf_counter()
    out = fn(*args)  # type: ignore[operator]
    return out, time.perf_counter() - started


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = run(args)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert not _hidden(out.replace("\n", "").replace("\t", "")), _hidden(out)
    assert not _hidden(err.replace("\n", "")), _hidden(err)
    return code, out, err


# ----- folder trees below the root --------------------------------------------------------------


_names = st.text(
    alphabet=st.characters(blacklist_characters="/\x00", codec="utf-8"),
    min_size=1,
    max_size=40,
).filter(lambda n: n not in (".", "..") and not n.startswith(".") and len(n.encode()) < 200)


def _one_clean_note(root: Path, config: str) -> None:
    """A MkDocs config at `config` below `root` makes exactly one note, with nothing hidden in it."""
    write_tree(root, {config: "site_name: x\n"})
    notes = site_notes(load_settings(cwd=root, root=root, state_dir=root / ".st"))
    assert len(notes) == 1
    _clean_notes(notes)


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=_names)
def test_a_folder_name_below_the_root_never_writes_hidden_characters_into_a_note(
    tmp_path_factory: pytest.TempPathFactory, name: str
) -> None:
    # The folder's name is quoted three times: the note's path, `site_config to ...`, `make ... the root`.
    root = tmp_path_factory.mktemp("m")
    _one_clean_note(root, f"{name}/mkdocs.yml")


def test_a_hostile_folder_name_below_the_root_cannot_reach_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_tree(tmp_path, {"x\x1b]0;owned\x07\x1b[2J\u202e/mkdocs.yml": "site_name: x\n", "a.md": "# A\n"})
    base = ["--root", str(tmp_path), "--state-dir", str(tmp_path / ".st")]
    _cli([*base, "index"], capsys)
    _cli([*base, "links", "--no-external"], capsys)
    _cli([*base, "lint"], capsys)


def test_a_note_about_folders_of_long_names_is_still_bounded(tmp_path: Path) -> None:
    # Two folder names of 250 bytes: the hint quotes the path twice over.
    _one_clean_note(tmp_path, f"{'a' * 250}/{'b' * 250}/mkdocs.yml")


def test_an_undecodable_folder_name_does_not_break_any_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = os.fsencode(tmp_path) + b"/d\xff\xfe"
    os.mkdir(raw)
    with open(raw + b"/mkdocs.yml", "wb") as fh:
        fh.write(b"site_name: x\n")
    write_tree(tmp_path, {"a.md": "# A\n"})
    base = ["--root", str(tmp_path), "--state-dir", str(tmp_path / ".st")]
    code, _, err = _cli([*base, "index"], capsys)
    assert code == 0 and "site config:" in err
    code, out, _ = _cli([*base, "index", "--json"], capsys)
    assert code == 0 and json.loads(out)["site"]["notes"]
    for fmt in ("text", "json", "sarif", "junit", "github"):
        code, out, _ = _cli([*base, "lint", "--format", fmt], capsys)
        assert code in (0, 1), fmt
        assert "site-config" in out, fmt
    # A report written to a file (the CI's way to SARIF upload) is valid UTF-8.
    report = tmp_path / "report.sarif"
    code, _, _ = _cli([*base, "lint", "--format", "sarif", "--output", str(report)], capsys)
    assert code in (0, 1)
    json.loads(report.read_bytes().decode("utf-8"))


def test_a_wide_tree_below_the_root_is_looked_over_in_bounded_time(tmp_path: Path) -> None:
    # 400 folders (the budget) each holding 60 folders: the second level is scanned only within budget.
    for i in range(400):
        top = tmp_path / f"t{i:03d}"
        top.mkdir()
        for j in range(60):
            (top / f"s{j:02d}").mkdir()
    _, seconds = _timed(configs_below, tmp_path)
    assert seconds < SLOW, seconds
    settings = load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / ".st")
    _, seconds = _timed(site_notes, settings)
    assert seconds < SLOW, seconds


def test_a_root_of_many_files_is_looked_over_in_bounded_time(tmp_path: Path) -> None:
    for i in range(20000):
        (tmp_path / f"f{i:05d}.txt").touch()
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "book.toml").write_text("[book]\n")
    found, seconds = _timed(configs_below, tmp_path)
    assert found == [("site/book.toml", "mdbook", "site")] and seconds < SLOW, seconds


def test_loops_pipes_devices_and_folders_named_like_configs_are_not_taken(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write_tree(root, {"a.md": "# A\n"})
    (root / "loop").symlink_to(root, target_is_directory=True)
    (root / "self").mkdir()
    (root / "self" / "mkdocs.yml").symlink_to(root / "self" / "mkdocs.yml")  # ELOOP
    (root / "pipes").mkdir()
    for name in ("config.toml", "hugo.yaml", "astro.config.mjs", "docs.json"):
        os.mkfifo(root / "pipes" / name)  # read, each would block
    (root / "dev").mkdir()
    (root / "dev" / "config.toml").symlink_to("/dev/zero")
    (root / "dir").mkdir()
    (root / "dir" / "docusaurus.config.js").mkdir()
    (root / "dir" / "book.toml").mkdir()
    (root / "deep" / "pipe" / ".vitepress").mkdir(parents=True)
    os.mkfifo(root / "deep" / "pipe" / ".vitepress" / "config.ts")
    found, seconds = _timed(configs_below, root)
    assert found == [] and seconds < SLOW
    notes, seconds = _timed(site_notes, load_settings(cwd=root, root=root, state_dir=root / ".st"))
    assert notes == [] and seconds < SLOW


def test_a_config_below_linked_to_a_huge_file_is_not_read_whole(tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    with open(big, "wb") as fh:
        fh.truncate(1 << 31)  # sparse: 2 GiB of NULs
    root = tmp_path / "root"
    (root / "site").mkdir(parents=True)
    (root / "site" / "config.toml").symlink_to(big)  # Hugo's common name: read to tell it is Hugo's
    found, seconds = _timed(configs_below, root)
    assert found == [] and seconds < SLOW


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any folder")
def test_an_unreadable_folder_below_is_passed_over(tmp_path: Path) -> None:
    write_tree(tmp_path, {"locked/inner/mkdocs.yml": "site_name: x\n", "open/book.toml": "[book]\n"})
    (tmp_path / "locked").chmod(0)
    try:
        assert configs_below(tmp_path) == [("open/book.toml", "mdbook")]
    finally:
        (tmp_path / "locked").chmod(0o755)


# ----- config texts quoted in notes --------------------------------------------------------------


_hostile_text = st.text(
    alphabet=st.sampled_from(
        ["\x1b", "\x07", "\r", "\n", "\u202e", "\x9b", ":", "[", "{", '"', "'", "a", " ", "\t"]
    ),
    max_size=80,
)


@hsettings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    config=st.sampled_from(["mkdocs.yml", "docusaurus.config.js", "hugo.toml", "book.toml", "docs.json"]),
    text=_hostile_text,
)
def test_a_config_text_quoted_by_its_reader_never_reaches_a_note_raw(
    tmp_path_factory: pytest.TempPathFactory, config: str, text: str
) -> None:
    project = tmp_path_factory.mktemp("p")
    (project / ".git").mkdir()
    (project / "docs").mkdir()
    (project / config).write_text(text, encoding="utf-8")
    settings = load_settings(cwd=project, root=project / "docs", state_dir=project / ".st")
    notes, seconds = _timed(site_notes, settings)
    _clean_notes(notes)  # type: ignore[arg-type]
    assert seconds < SLOW


@hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(inherit=st.text(max_size=300))
def test_any_inherit_name_is_quoted_visibly(tmp_path_factory: pytest.TempPathFactory, inherit: str) -> None:
    project = tmp_path_factory.mktemp("p")
    (project / ".git").mkdir()
    (project / "docs").mkdir()
    (project / "mkdocs.yml").write_text(f"INHERIT: {json.dumps(inherit)}\nsite_name: x\n", encoding="utf-8")
    _clean_notes(site_notes(load_settings(cwd=project, root=project / "docs", state_dir=project / ".st")))


def test_many_mkdocs_configs_of_other_names_make_one_bounded_note(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "docs").mkdir()
    for i in range(3000):
        (tmp_path / f"mkdocs-{i:04d}\x1b[2J.yml").write_text("site_name: x\n")
    settings = load_settings(cwd=tmp_path, root=tmp_path / "docs", state_dir=tmp_path / ".st")
    notes, seconds = _timed(site_notes, settings)
    assert len(notes) == 1 and seconds < SLOW  # type: ignore[arg-type]
    _clean_notes(notes)  # type: ignore[arg-type]


# ----- site_config values ------------------------------------------------------------------------


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    write_tree(project, {"docs/index.md": "# Home\n\n[x](other.md)\n"})
    (project / ".git").mkdir()
    return project


def _special(tmp_path: Path, kind: str) -> str:
    """A `site_config` value of each hostile kind (the path as the user would write it)."""
    if kind == "fifo":
        os.mkfifo(tmp_path / "mkdocs.yml")
        return str(tmp_path / "mkdocs.yml")
    if kind == "directory":
        (tmp_path / "d" / "mkdocs.yml").mkdir(parents=True)
        return str(tmp_path / "d" / "mkdocs.yml")
    if kind == "device":
        return "/dev/zero"
    if kind == "device-named":
        (tmp_path / "z").mkdir()
        (tmp_path / "z" / "mkdocs.yml").symlink_to("/dev/zero")
        return str(tmp_path / "z" / "mkdocs.yml")
    if kind == "loop":
        (tmp_path / "mkdocs.yml").symlink_to(tmp_path / "mkdocs.yml")
        return str(tmp_path / "mkdocs.yml")
    return {
        "missing": "nowhere/mkdocs.yml",
        "dotdot": "../../../../../../../../../../mkdocs.yml",
        "absolute-missing": "/nonexistent/mkdocs.yml",
        "empty-name": "docs/",
        "manual-root": "docs",
        "control": "x\x1b[2J\u202e/mkdocs.yml",
        "too-long": "a" * 300 + "/mkdocs.yml",
        "unknown-user": "~no_such_user_udm_zz/mkdocs.yml",
        "nul": "x\x00/mkdocs.yml",
    }[kind]


def _hostile_base(tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The CLI's root and state options for a project whose `site_config` is of a hostile `kind`."""
    project = _project(tmp_path)
    monkeypatch.chdir(project)
    monkeypatch.setenv("UDM_SITE_CONFIG", _special(tmp_path, kind))
    return ["--root", str(project / "docs"), "--state-dir", str(tmp_path / ".st")]


KINDS = [
    "fifo",
    "directory",
    "device",
    "device-named",
    "loop",
    "missing",
    "dotdot",
    "absolute-missing",
    "empty-name",
    "manual-root",
    "control",
    "too-long",
    "unknown-user",
]


@pytest.mark.parametrize("kind", KINDS)
def test_a_hostile_site_config_is_refused_clearly_by_index(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    base = _hostile_base(tmp_path, kind, monkeypatch)
    started = time.perf_counter()
    code, _, err = _cli([*base, "index"], capsys)
    assert time.perf_counter() - started < 10 * SLOW
    # Either a clear refusal (an `error:` line, exit 1 or 2) or the index with a `site config:` note.
    assert (code in (1, 2) and "error:" in err) or (code == 0 and "site config:" in err), (code, err)


def test_a_site_config_with_a_nul_byte_is_refused_or_noted(tmp_path: Path) -> None:
    # An environment variable cannot hold a NUL; udm.toml or an override can.
    from udm.errors import UdmError

    project = _project(tmp_path)
    try:
        settings = load_settings(
            cwd=project, root=project / "docs", state_dir=tmp_path / ".st", site_config="x\x00/mkdocs.yml"
        )
    except UdmError:
        return
    _clean_notes(site_notes(settings))
    assert [f for f in lint(settings) if f.rule == "site-config"]


@pytest.mark.parametrize("kind", ["control", "too-long", "unknown-user"])
def test_a_site_config_that_cannot_name_a_file_is_refused_when_settings_load(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = _cli([*_hostile_base(tmp_path, kind, monkeypatch), "lint"], capsys)
    assert code == 1 and out == "" and "error: invalid setting 'site_config'" in err, (code, err)
    assert "Traceback" not in err and "\x1b" not in err


@pytest.mark.parametrize("kind", ["fifo", "directory", "missing", "dotdot"])
def test_a_hostile_site_config_gives_one_lint_finding_in_every_format(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    base = _hostile_base(tmp_path, kind, monkeypatch)
    for fmt in ("text", "json", "sarif", "junit", "github"):
        code, out, _ = _cli([*base, "lint", "--format", fmt], capsys)
        assert code in (0, 1) and "site-config" in out, (fmt, code)


# ----- lint report formats with a config outside the manual --------------------------------------


def _outside_findings(tmp_path: Path, where: str) -> tuple[Path, Path, Path]:
    """(project, manual root, config): a broken MkDocs config above the manual (`where` = "above") or
    named by an absolute path outside the project (`where` = "absolute")."""
    project = _project(tmp_path)
    if where == "above":
        config = project / "mkdocs.yml"
    else:
        config = tmp_path / "elsewhere" / "mkdocs.yml"
        config.parent.mkdir()
    config.write_text("nav: [unclosed\n")
    return project, project / "docs", config


def _lint_report(
    tmp_path: Path, where: str, fmt: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path, str]:
    project, root, config = _outside_findings(tmp_path, where)
    monkeypatch.chdir(project)
    if where == "absolute":
        monkeypatch.setenv("UDM_SITE_CONFIG", str(config))
    code, out, _ = _cli(
        ["--root", str(root), "--state-dir", str(tmp_path / ".st"), "lint", "--format", fmt], capsys
    )
    assert code in (0, 1)
    return project, config, out


def _lands_on(project: Path, config: Path, path: str) -> bool:
    """Whether a report's path (from the repository root, or absolute) names the config."""
    if path.startswith("file://"):
        path = path[len("file://") :]
    full = path if posixpath.isabs(path) else posixpath.join(str(project), path)
    return posixpath.normpath(full) == str(config) and "//" not in path


@pytest.mark.parametrize("where", ["above", "absolute"])
def test_sarif_locates_a_config_outside_the_manual(
    tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project, config, out = _lint_report(tmp_path, where, "sarif", capsys, monkeypatch)
    data = json.loads(out)
    [result] = [r for r in data["runs"][0]["results"] if r["ruleId"] == "site-config"]
    uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert _lands_on(project, config, uri), uri
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 1


@pytest.mark.parametrize("where", ["above", "absolute"])
def test_junit_locates_a_config_outside_the_manual(
    tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project, config, out = _lint_report(tmp_path, where, "junit", capsys, monkeypatch)
    tree = ET.fromstring(out.split("\n", 2)[2])
    [case] = [c for c in tree.iter("testcase") if c.get("name", "").startswith("site-config")]
    assert _lands_on(project, config, case.get("file", "")), case.get("file")


@pytest.mark.parametrize("where", ["above", "absolute"])
def test_github_annotations_locate_a_config_outside_the_manual(
    tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project, config, out = _lint_report(tmp_path, where, "github", capsys, monkeypatch)
    [line] = [ln for ln in out.splitlines() if "title=site-config" in ln]
    assert line.startswith("::warning file=")
    props = line[len("::warning ") :].split("::", 1)[0]
    file = dict(p.split("=", 1) for p in props.split(","))["file"].replace("%3A", ":").replace("%2C", ",")
    assert _lands_on(project, config, file), file


@pytest.mark.parametrize("where", ["above", "absolute"])
def test_json_names_a_config_outside_the_manual(
    tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project, config, out = _lint_report(tmp_path, where, "json", capsys, monkeypatch)
    [finding] = [f for f in json.loads(out)["findings"] if f["rule"] == "site-config"]
    # JSON paths are the manual root's view.
    full = posixpath.normpath(posixpath.join(str(project / "docs"), finding["path"]))
    assert full == str(config), finding


def test_lint_ignore_globs_reach_a_config_above_the_manual(tmp_path: Path) -> None:
    project, root, _ = _outside_findings(tmp_path, "above")
    base = {"cwd": project, "root": root, "state_dir": tmp_path / ".st"}
    assert [f.file for f in lint(load_settings(**base)) if f.rule == "site-config"] == ["../mkdocs.yml"]
    tuned = load_settings(**base, lint_ignore={"../mkdocs.yml": ["site-config"]})
    assert not [f for f in lint(tuned) if f.rule == "site-config"]


# ----- links inside em/strong wrappers (scanner `_WRAPPERS`) -------------------------------------

_inline = st.sampled_from(
    [
        "[a](x.md)",
        "[b][r]",
        "<https://e.org>",
        "*",
        "**",
        "_",
        "__",
        "~~",
        "`c`",
        "text",
        " ",
        "\n",
        "\\",
        "[",
        "]",
        "(",
        ")",
        "<a href='h.md'>",
        "\u00e9",
        "> ",
    ]
)


@hsettings(max_examples=400, deadline=None)
@given(prefix=st.sampled_from(["", "> ", "> > ", "- ", "1. > ", "  "]), parts=st.lists(_inline, max_size=25))
def test_walking_into_wrappers_finds_no_link_markdown_it_py_does_not_see(
    prefix: str, parts: list[str]
) -> None:
    # Only what the change adds is judged: extra links with the wrappers walked, against the walk without.
    from udm.markdown import scanner

    body = "".join(parts).replace("\n", "\n" + prefix)
    text = f"{prefix}{body}\n\n[r]: r.md\n"
    _, extra, _ = _agreement("p.md", text)
    kept = scanner._WRAPPERS
    scanner._WRAPPERS = frozenset()
    try:
        _, extra_before, _ = _agreement("p.md", text)
    finally:
        scanner._WRAPPERS = kept
    assert extra <= extra_before, text


def test_the_hint_for_a_vitepress_site_below_names_its_real_root(tmp_path: Path) -> None:
    # VitePress's site is the folder holding `.vitepress/`: `.vitepress` itself holds no page.
    write_tree(tmp_path, {"docs/.vitepress/config.ts": "export default {}\n", "docs/index.md": "# Home\n"})
    [(path, message)] = site_notes(load_settings(cwd=tmp_path, root=tmp_path, state_dir=tmp_path / ".st"))
    assert path == "docs/.vitepress/config.ts"
    assert message.endswith("or make docs the manual root)"), message


def test_a_broken_named_config_is_filed_under_its_own_path(tmp_path: Path) -> None:
    # The named config fails to read; the defaults found above the manual must not take the note's file.
    (tmp_path / ".git").mkdir()
    write_tree(
        tmp_path,
        {"mkdocs.yml": "site_name: ok\n", "broken/mkdocs.yml": "nav: [x\n", "docs/index.md": "# Home\n"},
    )
    settings = load_settings(
        cwd=tmp_path, root=tmp_path / "docs", state_dir=tmp_path / ".st", site_config="broken/mkdocs.yml"
    )
    [(path, message)] = site_notes(settings)
    assert path == "../broken/mkdocs.yml"
    assert message.startswith("../broken/mkdocs.yml: cannot read the site config"), message


def test_an_inherit_name_longer_than_the_system_allows_is_a_note_not_a_crash(tmp_path: Path) -> None:
    # Found by test_any_inherit_name_is_quoted_visibly: the site's stamp stat()ed the INHERIT target,
    # and a name over 255 bytes raised ENAMETOOLONG out of every command.
    (tmp_path / ".git").mkdir()
    write_tree(tmp_path, {"mkdocs.yml": f"INHERIT: {'x' * 300}.yml\n", "docs/index.md": "# Home\n"})
    notes = site_notes(load_settings(cwd=tmp_path, root=tmp_path / "docs", state_dir=tmp_path / ".st"))
    assert [where for where, _ in notes] == ["../mkdocs.yml"]  # one note on the config, no traceback
