"""Text a file, a name or a caller controls, on its way to a terminal or a CI log.

A heading, a link target or a file name may hold an escape sequence (`\\x1b]0;...\\a` retitles the
terminal, `\\x1b[2J` clears it), a bidi override (U+202E) or an undecodable byte (a lone surrogate,
which UTF-8 cannot write). Reports (lint in every format, `udm links`, what `udm index` skipped) show
them as escapes wherever they go; other output shows them so on a terminal and is exact in a pipe.
Before: a file named with an undecodable byte made `udm index` end in a traceback
(UnicodeEncodeError), and lint's text, GitHub and JUnit reports carried the sequences raw (JUnit's
XML was not even well formed).
"""

from __future__ import annotations

import json
import os
import pty
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from udm.index.lint_format import FORMATS, render
from udm.index.lint_rules import Finding
from udm.index.lookup import scan_markdown
from udm.shown import for_stream, json_shown, shown, shown_line

from .cli_process import run_udm

# What a terminal acts on or UTF-8 cannot hold: none may reach the output raw.
_ACTED_ON = [chr(c) for c in [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]] + [
    "\u061c",
    "\u200e",
    "\u200f",
    "\u2028",
    "\u2029",
    *(chr(c) for c in range(0x202A, 0x202F)),
    *(chr(c) for c in range(0x2066, 0x206A)),
    "\ud800",
    "\udcff",
    "\udfff",
]
HOSTILE = "\x1b]0;pwned\x07 \x1b[2J\x1b[31m red \u202etxt.exe \x9b1m \udcff \r over"
# A file's text holds no lone surrogate (it is read as UTF-8); the rest it may hold.
IN_FILE = HOSTILE.replace(" \udcff", "")
_TEXT = st.text(alphabet=st.one_of(st.characters(), st.sampled_from(_ACTED_ON)), max_size=60)


def _acted_on(text: str, keep: str = "") -> list[str]:
    return [c for c in text if c in _ACTED_ON and c not in keep]


# ----- the functions ---------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_shown_text_holds_nothing_a_terminal_acts_on_and_writes_as_utf8(text: str) -> None:
    out = shown(text)
    out.encode("utf-8")
    # A CR stays only as the end of a line (CRLF); tabs and line feeds are kept.
    assert not _acted_on(out.replace("\r\n", "\n"), keep="\t\n")
    line = shown_line(text)
    line.encode("utf-8")
    assert not _acted_on(line) and "\n" not in line and "\t" not in line


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Zl", "Zp"))))
def test_text_with_nothing_hidden_is_shown_as_it_is(text: str) -> None:
    assert shown(text) == text == shown_line(text)


@settings(max_examples=300, deadline=None)
@given(st.recursive(_TEXT | st.integers(), lambda inner: st.lists(inner) | st.dictionaries(_TEXT, inner)))
def test_json_shown_is_the_same_data_and_safe_text(value: object) -> None:
    text = json_shown(json.dumps(value, ensure_ascii=False, indent=2))
    text.encode("utf-8")
    assert not _acted_on(text, keep="\n")
    assert json.loads(text) == value


def test_for_stream_shows_on_a_terminal_and_keeps_a_pipe_exact(tmp_path: Path) -> None:
    master, slave = pty.openpty()
    try:
        with os.fdopen(os.dup(slave), "w") as terminal:
            assert for_stream(HOSTILE, terminal) == shown(HOSTILE)
    finally:
        os.close(master)
        os.close(slave)
    with (tmp_path / "out").open("w") as pipe:
        assert for_stream(HOSTILE, pipe) == HOSTILE


# ----- lint reports ----------------------------------------------------------------------------------


def _hostile_findings() -> list[Finding]:
    return [
        Finding(f"a{HOSTILE}.md", 3, "broken-link", "error", f"link target {HOSTILE} does not exist"),
        Finding("b.md", 1, "duplicate-id", "warning", f"ID X-1 also in {HOSTILE}\nsecond line"),
    ]


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_lint_format_shows_hostile_text_and_stays_well_formed(fmt: str) -> None:
    report = render(_hostile_findings(), fmt, prefix="docs")
    report.encode("utf-8")
    assert not _acted_on(report, keep="\n"), fmt
    if fmt == "text":
        assert len(report.splitlines()) == 2  # one line per finding, whatever the message holds
        assert "\\x1b]0;pwned\\x07" in report and "\\u202e" in report
    elif fmt == "github":
        lines = report.splitlines()
        assert len(lines) == 2 and all(line.startswith("::") for line in lines)
    elif fmt == "junit":
        root = ET.fromstring(report.split("\n", 2)[2])
        messages = [f.get("message") or "" for f in root.iter("failure")]
        assert messages[0] == shown(f"link target {HOSTILE} does not exist")
    else:
        data = json.loads(report)
        found = data["findings"] if fmt == "json" else data["runs"][0]["results"]
        first = found[0]["message"] if fmt == "json" else found[0]["message"]["text"]
        assert first == f"link target {HOSTILE} does not exist"  # the data exact, only its writing escaped


# ----- names the file system gives -------------------------------------------------------------------


def _undecodable_tree(root: Path) -> None:
    (root / "ok.md").write_text("# Ok\n\n[gone](gone.md)\n")
    with open(os.path.join(os.fsencode(root), b"bad\xff\x1b[31mname.md"), "wb") as fh:
        fh.write(b"# Bad\n")
    folder = os.path.join(os.fsencode(root), b"dir\xfe")
    os.mkdir(folder)
    with open(os.path.join(folder, b"inner.md"), "wb") as fh:
        fh.write(b"# Inner\n")


def test_undecodable_names_are_left_out_with_a_reason(tmp_path: Path) -> None:
    _undecodable_tree(tmp_path)
    skipped: list[tuple[str, str]] = []
    found = scan_markdown(tmp_path, (), None, skipped=skipped)
    assert list(found) == ["ok.md"]
    assert sorted(skipped) == [
        ("bad\\xff\x1b[31mname.md", "skipped: the file name is not valid UTF-8"),
        ("dir\\xfe", "skipped: the folder name is not valid UTF-8"),
    ]


def _cli(cwd: Path, *args: str, terminal: bool = False) -> tuple[int, str]:
    code, out = run_udm(cwd, *args, terminal=terminal)
    return code, out.decode("utf-8")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("hostile")
    manual = base / "docs" / "udm"
    manual.mkdir(parents=True)
    _undecodable_tree(manual)
    (manual / "ok.md").write_text(
        f'# Ok {IN_FILE}\n\nSee [x](<gone\x1b]0;pwned\x07 \u202etxt.md>) and <a href="z\x1b[2J.md">z</a>.\n'
        "\n## Searchable sandbox \x1b]0;title\x07 words\n\nsandbox text\n"
    )
    for sub in ("state", "logs"):
        (base / sub).mkdir()
    code, out = _cli(base, "index")
    assert code == 0, out
    return base


def test_udm_index_lists_undecodable_names_and_ends_well(hostile: Path) -> None:
    code, out = _cli(hostile, "index")
    assert code == 0 and "Traceback" not in out, out
    assert "bad\\xff\\x1b[31mname.md: skipped: the file name is not valid UTF-8" in out
    assert "dir\\xfe: skipped: the folder name is not valid UTF-8" in out


@pytest.mark.parametrize("fmt", FORMATS)
def test_udm_lint_in_a_pipe_shows_hostile_text_in_every_format(hostile: Path, fmt: str) -> None:
    code, out = _cli(hostile, "lint", "--format", fmt)
    assert code == 1 and "Traceback" not in out, out
    assert not _acted_on(out, keep="\n"), out


def test_udm_links_report_shows_hostile_targets(hostile: Path) -> None:
    code, out = _cli(hostile, "links", "--no-external")
    assert code == 1 and "Traceback" not in out, out
    assert not _acted_on(out, keep="\n"), out
    assert "gone\\x1b]0;pwned\\x07" in out


def test_udm_search_on_a_terminal_shows_hostile_headings(hostile: Path) -> None:
    code, out = _cli(hostile, "search", "sandbox", terminal=True)
    assert code == 0, out
    assert "\\x1b]0;title\\x07" in out
    assert not _acted_on(out.replace("\r\n", "\n"), keep="\n"), out


def test_udm_search_in_a_pipe_is_exact(hostile: Path) -> None:
    code, out = _cli(hostile, "search", "sandbox")
    assert code == 0, out
    assert "\x1b]0;title\x07" in out  # a script reading the pipe gets the manual's own text
