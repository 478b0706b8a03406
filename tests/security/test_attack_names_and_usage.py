"""Text a file, a name, a config or a caller controls never drives a terminal or a CI log, and names
that are not valid UTF-8 never end a command in a traceback (an attacker's fourth round against
292ddcb: the findings below failed there; the guards passed and must keep passing).

Every CLI call runs as a process (a plain pipe, or under a pty as a terminal), as
tests/security/test_attack_terminal_text.py does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from .cli_process import ESC, REPO, run_udm, run_udm_streams
from .cli_process import acted_on as _acted_on
from .cli_process import hostile_manual as _manual
from .cli_process import utf8_text as _text


def _run(
    cwd: Path | bytes, *args: str, terminal: bool = False, env: dict[str, str] | None = None
) -> tuple[int, bytes]:
    """`udm ARGS` as a process in `cwd`: its exit code and its stdout+stderr bytes."""
    return run_udm(cwd, *args, terminal=terminal, env=env)


# ----- Names and arguments that are not valid UTF-8: one clear error, never a traceback -----------------

_NOT_UTF8 = "is not valid UTF-8"


@pytest.mark.parametrize(
    "command",
    [
        ["index"],
        ["lint"],
        ["links", "--no-external"],
        ["search", "sandbox"],
        ["sql", "select count(*) from files"],
    ],
)
def test_manual_root_argument_whose_path_is_not_utf8_is_refused_in_one_line(
    tmp_path: Path, command: list[str]
) -> None:
    # `--root docs/udm\xff`: DuckDB stores and opens paths as UTF-8 only, so the argument is refused before
    # anything runs (exit 2, a usage error), the byte shown as ls shows it. Before: index/lint/links ended in
    # DuckDB's InvalidInputException and search/sql said "internal error in udmQueryTool".
    _manual(tmp_path, b"udm\xff")
    code, out = _run(tmp_path, "--root", os.fsdecode(b"docs/udm\xff"), *command)
    text = _text(out)
    assert "Traceback" not in text and "internal error" not in text, text[-1500:]
    assert code == 2, text
    assert text.count("\n") == 1 and text.startswith("error: the argument docs/udm\\xff " + _NOT_UTF8), text


def test_project_folder_whose_path_is_not_utf8_is_a_config_error_naming_it(tmp_path: Path) -> None:
    # A project checked out under `proj\xff` (the default root docs/udm below it): every command that reads
    # settings says which setting's folder is not UTF-8 (exit 1). Before: `udm index` ended in a traceback
    # (RuntimeError: std::bad_cast from DuckDB opening <state>/index.duckdb).
    base = Path(os.fsdecode(os.path.join(os.fsencode(tmp_path), b"proj\xff")))
    base.mkdir()
    _manual(base)
    for command in (["index"], ["query", "id", "COMP-001"], ["lint"]):
        code, out = _run(base, *command)
        text = _text(out)
        assert "Traceback" not in text and "bad_cast" not in text, text[-1500:]
        assert code == 1, (command, text)
        assert "error: root: the path " in text and "proj\\xff/docs/udm " + _NOT_UTF8 in text, text


@pytest.mark.parametrize("key", ["STATE_DIR", "LOGS_DIR", "SCRATCH_DIR", "ROOT"])
def test_folder_settings_from_the_environment_that_are_not_utf8_are_config_errors(
    tmp_path: Path, key: str
) -> None:
    # The same folders set by UDM_* variables (or udm.toml), which no argument check sees: refused by the
    # settings, naming the setting. Before: `--state-dir st\xff` ended `udm index` in std::bad_cast and
    # `udm query id` in "internal error in udmQueryTool".
    _manual(tmp_path)
    folder = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"st\xff"))
    for command in (["index"], ["query", "id", "COMP-001"]):
        code, out = _run(tmp_path, *command, env={f"UDM_{key}": folder})
        text = _text(out)
        assert "Traceback" not in text and "bad_cast" not in text, (command, text[-1500:])
        assert code == 1 and f"error: {key.lower()}: the path " in text and "st\\xff " + _NOT_UTF8 in text, (
            text
        )


@pytest.mark.parametrize(
    "args",
    [
        ["query", "id", "X{bad}"],
        ["verified", "{bad}"],
        ["search", "a{bad}"],
        ["graph", "show", "{bad}"],
        ["--state-dir", "s{bad}", "index"],
    ],
)
def test_arguments_that_are_not_utf8_are_refused_not_a_traceback(tmp_path: Path, args: list[str]) -> None:
    # An argument with an undecodable byte (a script passing a file name) is refused in one line, exit 2,
    # on the fast path of `query id` too. Before: `query id` ended in sqlite3's UnicodeEncodeError and
    # `verified` in DuckDB's InvalidInputException.
    _manual(tmp_path)
    assert _run(tmp_path, "index")[0] == 0
    bad = os.fsdecode(b"\xff")
    code, out = _run(tmp_path, *[a.replace("{bad}", bad) for a in args])
    text = _text(out)
    assert "Traceback" not in text, text[-1500:]
    assert code == 2 and text.startswith("error: the argument ") and "\\xff " + _NOT_UTF8 in text, text


# ----- Usage errors quote what the caller typed: shown, never acted on -----------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["tools", "schema", "udmQueryTool", "--format", ESC],
        ["graph", "query", "--lang", ESC, "x"],
        ["pipeline", "graph", "{spec}", "--format", ESC],
        ["pipeline", "check", "{spec}", "--param", ESC],
    ],
    ids=["tools-schema-format", "graph-query-lang", "pipeline-graph-format", "pipeline-check-param"],
)
def test_bad_parameter_errors_on_a_terminal_show_the_callers_text(tmp_path: Path, args: list[str]) -> None:
    # on a terminal every message quoting what the caller typed is shown as `say`
    # shows it (`\x1b]0;pwned\x07`, `\u202e`); before: these typer.BadParameter messages are printed by
    # click, not through flows.say, and the terminal receives ESC ] 0 ; ... BEL (retitle), ESC [ 2 J
    # (clear), U+202E and the C1 CSI raw: "Error: Invalid value for --format: '<raw>' is not one of ...".
    _manual(tmp_path)
    spec = tmp_path / "p.yaml"
    spec.write_text("name: p\nsteps: {}\n")
    code, out = _run(tmp_path, *[a.replace("{spec}", str(spec)) for a in args], terminal=True)
    text = _text(out)
    assert code == 2, text
    assert not _acted_on(text), text


def test_demo_workspace_error_on_a_terminal_shows_the_folder_name(tmp_path: Path) -> None:
    # `udm demo --workspace DIR` refusing a non-empty DIR names it as a terminal shows
    # it; before: "Invalid value for --workspace: workspace <DIR> is not empty" carries the folder
    # name's ESC ] 0 ; pwned BEL and U+202E raw to the terminal (a folder name controls the terminal).
    workspace = tmp_path / f"ws{ESC}"
    workspace.mkdir()
    (workspace / "f").write_text("x")
    code, out = _run(tmp_path, "demo", "--workspace", str(workspace), terminal=True)
    text = _text(out)
    assert code == 2, text
    assert not _acted_on(text), text


@pytest.mark.parametrize(
    "args",
    [["index", "--bogus\u202etxt.exe"], ["config", "extra\u202etxt.exe"]],
    ids=["no-such-option", "extra-argument"],
)
def test_click_usage_errors_on_a_terminal_show_bidi_overrides(tmp_path: Path, args: list[str]) -> None:
    # click's own usage errors ("No such option: ...", "Got unexpected extra
    # argument(s) (...)") show a bidi override as `\u202e` on a terminal, as they already show `\x1b`;
    # before: U+202E reaches the terminal raw ("--bogus<U+202E>txt.exe" renders as "--bogusexe.txt").
    _manual(tmp_path)
    code, out = _run(tmp_path, *args, terminal=True)
    text = _text(out)
    assert code == 2, text
    assert "\u202e" not in text, text


# ----- What `udm index` says about names --------------------------------------------------------


def test_one_undecodable_folder_is_named_one_way_in_one_output(tmp_path: Path) -> None:
    # `udm index` names a folder `site\xff` the same way in every line (its skipped list
    # writes `site\xff`, as ls does); before: the skipped list says `site\xff` and the site note about the
    # mkdocs.yml inside it says `site\udcff/mkdocs.yml`, so the two lines do not match up.
    manual = _manual(tmp_path)
    os.mkdir(os.path.join(manual, b"site\xff"))
    with open(os.path.join(manual, b"site\xff", b"mkdocs.yml"), "wb") as fh:
        fh.write(b"site_name: x\n")
    code, out = _run(tmp_path, "index")
    text = _text(out)
    assert code == 0, text
    assert "site\\xff: skipped: the folder name is not valid UTF-8" in text
    assert "site\\udcff" not in text, text


def test_index_gives_the_true_reason_for_md_entries_that_are_not_files(tmp_path: Path) -> None:
    # an entry with a configured suffix left out because it is not a readable file (a
    # dangling symlink `dangling.md`, a FIFO `fifo.md`, a symlink to a folder `dirlink.md`) is listed
    # with that reason; before: each is listed as "skipped: suffix .md is not in markdown_suffixes",
    # which is false (.md is a configured suffix) and sends the user to the wrong setting.
    manual = Path(os.fsdecode(_manual(tmp_path)))
    (manual / "dangling.md").symlink_to("nowhere.md")
    os.mkfifo(manual / "fifo.md")
    (manual / "sub").mkdir()
    (manual / "dirlink.md").symlink_to("sub")
    code, out = _run(tmp_path, "index")
    text = _text(out)
    assert code == 0, text
    for name in ("dangling.md", "fifo.md", "dirlink.md"):
        assert f"{name}: skipped:" in text
    assert "suffix .md is not in markdown_suffixes" not in text, text


# ----- GUARDS (pass on 292ddcb) ---------------------------------------------------------------------------


def _undecodable_everywhere(base: Path) -> None:
    """Undecodable bytes nested deep, in symlink names, in link targets, beside valid pages."""
    manual = _manual(base)
    j = lambda *parts: os.path.join(manual, *parts)  # noqa: E731
    os.makedirs(j(b"sub", b"deep\xfe", b"deeper"))
    with open(j(b"sub", b"x.md"), "wb") as fh:
        fh.write(b"# X\n\nsandbox\n")
    with open(j(b"sub", b"deep\xfe", b"deeper", b"y.md"), "wb") as fh:
        fh.write(b"# Y\n")
    os.symlink(b"a.md", j(b"link\xff.md"))
    os.symlink(b"sub", j(b"dirlink\xfd"))
    os.symlink(b"nowhere\xff.md", j(b"dang\xfc.md"))
    with open(j(b"tgt\xfb.md"), "wb") as fh:
        fh.write(b"# T\n")
    os.symlink(b"tgt\xfb.md", j(b"goodlink.md"))
    with open(j(b"note\xff.mdx"), "wb") as fh:
        fh.write(b"# N\n")


@pytest.mark.parametrize("terminal", [False, True], ids=["pipe", "terminal"])
def test_guard_undecodable_names_nested_and_in_symlinks_are_listed_not_fatal(
    tmp_path: Path, terminal: bool
) -> None:
    # GUARD. every undecodable name (a nested folder, a symlink to a file or a folder, a dangling
    # symlink, a .mdx page) is left out and listed with its byte escaped; the run ends well, in UTF-8.
    _undecodable_everywhere(tmp_path)
    code, out = _run(tmp_path, "index", terminal=terminal)
    text = _text(out)
    assert code == 0 and "Traceback" not in text, text
    for name in (
        "sub/deep\\xfe",
        "link\\xff.md",
        "dirlink\\xfd",
        "dang\\xfc.md",
        "tgt\\xfb.md",
        "note\\xff.mdx",
    ):
        assert f"{name}: skipped:" in text, (name, text)
    assert not _acted_on(text), text
    code, out = _run(tmp_path, "index", "--json")
    data = json.loads(_text(out))
    assert {"path": "sub/deep\\xfe", "reason": "skipped: the folder name is not valid UTF-8"} in data[
        "skipped"
    ]


def test_guard_lint_reports_with_hostile_folder_names_stay_well_formed(tmp_path: Path) -> None:
    # GUARD. site notes about folders named with ESC/BEL or an undecodable byte are escaped in
    # every lint format; JUnit stays well-formed XML, SARIF/JSON stay valid JSON, all UTF-8.
    manual = _manual(tmp_path)
    for folder, config in ((b"s\x1b]0;t\x07", b"docusaurus.config.js"), (b"site\xff", b"mkdocs.yml")):
        os.mkdir(os.path.join(manual, folder))
        with open(os.path.join(manual, folder, config), "wb") as fh:
            fh.write(b"module.exports={}\n" if config.endswith(b".js") else b"site_name: x\n")
    for fmt in ("text", "github", "junit", "json", "sarif"):
        proc = subprocess.run(
            [sys.executable, "-c", "from flows.entry import main; main()", "lint", "--format", fmt],
            cwd=tmp_path,
            env={
                **{k: v for k, v in os.environ.items() if not k.startswith("UDM_")},
                "PYTHONPATH": str(REPO),
            },
            capture_output=True,
            timeout=300,
        )
        report = proc.stdout.decode("utf-8")
        assert "Traceback" not in proc.stderr.decode("utf-8", "replace"), proc.stderr
        assert not _acted_on(report), (fmt, report)
        if fmt == "junit":
            ET.fromstring(report.split("\n", 2)[2])
        elif fmt in ("json", "sarif"):
            json.loads(report)


def test_guard_tool_calls_with_hostile_json_print_valid_escaped_json(tmp_path: Path) -> None:
    # GUARD. `udm tools call` given ESC, C1, U+202E and a lone surrogate (`\udcff` in JSON) prints
    # a valid JSON envelope with them as JSON escapes, in a pipe and under PYTHONIOENCODING=utf-8 (strict).
    _manual(tmp_path)
    hostile = "\x1b]0;x\x07\u202e\x9b\udcff"
    calls = [
        ("udmQueryTool", {"query_type": "find_by_id", "udm_path_or_id": hostile}),
        ("udmQueryTool", {"query_type": "search", "udm_path_or_id": hostile}),
        ("udmSqlQueryTool", {"query": f"select '{hostile}'"}),
        ("udmQueryTool", {hostile: 1}),
    ]
    for name, raw in calls:
        proc = run_udm_streams(
            tmp_path, "tools", "call", name, "--json", json.dumps(raw), env={"PYTHONIOENCODING": "utf-8"}
        )
        out = proc.stdout.decode("utf-8")
        assert not _acted_on(out), out
        assert json.loads(out)["success"] is False


@pytest.mark.parametrize(
    "args",
    [
        ["search", "sandbox"],
        ["query", "id", "COMP-001"],
        ["graph", "show", "COMP-001"],
        ["sql", "select title, path from sections"],
    ],
)
def test_guard_manual_text_on_a_terminal_is_shown_not_acted_on(tmp_path: Path, args: list[str]) -> None:
    # GUARD. headings holding ESC sequences, U+202E and a C1 CSI reach a terminal escaped on
    # every reading path (search, the stdlib fast path of `query id`, graph, sql).
    _manual(tmp_path)
    assert _run(tmp_path, "index")[0] == 0
    code, out = _run(tmp_path, *args, terminal=True)
    text = _text(out)
    assert code == 0, text
    assert not _acted_on(text), text
    assert "\\x1b]0;pwned\\x07" in text


def test_guard_config_errors_on_a_terminal_are_shown(tmp_path: Path) -> None:
    # GUARD. an invalid udm.toml value or a TOML syntax error quoting ESC/BEL/U+202E reaches a
    # terminal escaped.
    _manual(tmp_path)
    for text in ('root = "docs/\\u001b]0;x\\u0007\\u202e"\n', 'x = "\x1b]0;x\x07\u202e\n'):
        (tmp_path / "udm.toml").write_text(text)
        code, out = _run(tmp_path, "index", terminal=True)
        shown = _text(out)
        assert code == 1 and "error:" in shown, shown
        assert not _acted_on(shown), shown
