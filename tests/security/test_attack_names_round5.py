"""Round 5 against 04fd8ed (names that are not valid UTF-8, usage errors on a terminal, entries that are
not regular files). Findings are marked `# FINDING` and fail on 04fd8ed; guards pass.

Every CLI call runs as a process (a pipe, or a pty as a terminal), as test_attack_names_and_usage.py does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from .cli_process import REPO, run_udm

# What a terminal acts on (or UTF-8 cannot hold): none may reach a terminal raw.
_ACTED_ON = frozenset(
    [chr(c) for c in [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]]
    + ["\u061c", "\u200e", "\u200f", "\u2028", "\u2029"]
    + [chr(c) for c in range(0x202A, 0x202F)]
    + [chr(c) for c in range(0x2066, 0x206A)]
)
ESC = "\x1b]0;pwned\x07\x1b[2J\u202etxt.exe\x9b1m"
HEADING = "\x1b]0;pwned\x07 \x1b[2J \u202etxt.exe \x9b1m"


def _acted_on(text: str) -> list[str]:
    return sorted({c for c in text.replace("\r\n", "\n") if c in _ACTED_ON and c not in "\n\t"})


def _run(
    cwd: Path | bytes, *args: str, terminal: bool = False, env: dict[str, str] | None = None
) -> tuple[int, bytes]:
    """`udm ARGS` as a process in `cwd`: its exit code and its stdout+stderr bytes."""
    return run_udm(cwd, *args, terminal=terminal, env=env)


def _text(out: bytes) -> str:
    # Correct output is UTF-8 whatever the names and input held: decoding strictly is part of each check.
    return out.decode("utf-8")


def _manual(base: Path, root: bytes = b"udm") -> bytes:
    """A small manual under base/docs/<root>, state and logs beside it; the manual's path (bytes)."""
    manual = os.path.join(os.fsencode(base), b"docs", root)
    os.makedirs(manual)
    with open(os.path.join(manual, b"a.md"), "wb") as fh:
        fh.write(
            f"# Intro {HEADING}\n\n## 1.1 Component COMP-001: Thing {HEADING}\n\nsandbox words\n".encode()
        )
    for sub in (b"state", b"logs"):
        os.makedirs(os.path.join(os.fsencode(base), sub), exist_ok=True)
    return manual



# ----- `udm index` lists each page-named entry that is no regular file, with its true reason -------------


def test_index_lists_a_symlink_loop_named_like_a_page(tmp_path: Path) -> None:
    # FINDING. `loop.md -> loop.md` (or a -> b -> a) has a page suffix and is no regular file: the change
    # says such an entry is listed with its reason. Instead entry.is_file() raises ELOOP, the scan's
    # `except OSError: continue` drops it, and `udm index` says nothing about it (only dangling links,
    # links to folders and FIFOs reach `_not_a_file`); `udm lint` then calls a link to it "does not exist".
    manual = Path(os.fsdecode(_manual(tmp_path)))
    (manual / "loop.md").symlink_to("loop.md")
    (manual / "ping.md").symlink_to("pong.md")
    (manual / "pong.md").symlink_to("ping.md")
    code, out = _run(tmp_path, "index")
    text = _text(out)
    assert code == 0, text
    for name in ("loop.md", "ping.md", "pong.md"):
        assert f"{name}: skipped:" in text, (name, text)
