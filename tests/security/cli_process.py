"""`udm` run as a separate process, in a pipe or under a pseudo-terminal (what a person's terminal sees),
and what a terminal must never receive raw."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _environ(env: dict[str, str] | None) -> dict[str, str]:
    """This process's environment without our UDM_* variables, the repository importable, plus `env`."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("UDM_")}
    environ["PYTHONPATH"] = str(REPO)
    environ.update(env or {})
    return environ


def _command(args: tuple[str, ...]) -> list[str]:
    return [sys.executable, "-c", "from flows.entry import main; main()", *args]


def run_udm_streams(
    cwd: Path, *args: str, env: dict[str, str] | None = None, stdin: bytes | None = None, timeout: int = 300
) -> subprocess.CompletedProcess[bytes]:
    """`udm ARGS` as a process in `cwd` fed `stdin`, with its stdout and stderr apart (a tool call's
    JSON envelope is stdout alone)."""
    return subprocess.run(
        _command(args), cwd=cwd, env=_environ(env), input=stdin, capture_output=True, timeout=timeout
    )


def run_udm(
    cwd: Path | bytes, *args: str, terminal: bool = False, env: dict[str, str] | None = None
) -> tuple[int, bytes]:
    """`udm ARGS` as a process in `cwd` (no UDM_* variable of ours leaks in): its exit code and its
    stdout+stderr bytes, read from a pipe or, with `terminal`, from a pseudo-terminal."""
    environ = _environ(env)
    command = _command(args)
    if not terminal:
        proc = subprocess.run(command, cwd=cwd, env=environ, capture_output=True, timeout=300)
        return proc.returncode, proc.stdout + proc.stderr
    master, slave = pty.openpty()
    child = subprocess.Popen(
        command, cwd=cwd, env=environ, stdout=slave, stderr=slave, stdin=subprocess.DEVNULL
    )
    os.close(slave)
    out = b""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed its end
                break
            if not chunk:
                break
            out += chunk
        elif child.poll() is not None:
            break
    os.close(master)
    return child.wait(timeout=60), out


# What a terminal acts on (or UTF-8 cannot hold): none may reach a terminal raw.
ACTED_ON = frozenset(
    [chr(c) for c in [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]]
    + ["\u061c", "\u200e", "\u200f", "\u2028", "\u2029"]
    + [chr(c) for c in range(0x202A, 0x202F)]
    + [chr(c) for c in range(0x2066, 0x206A)]
)
ESC = "\x1b]0;pwned\x07\x1b[2J\u202etxt.exe\x9b1m"
HEADING = "\x1b]0;pwned\x07 \x1b[2J \u202etxt.exe \x9b1m"


def acted_on(text: str) -> list[str]:
    """The characters of `text` a terminal would act on (line breaks and tabs aside)."""
    return sorted({c for c in text.replace("\r\n", "\n") if c in ACTED_ON and c not in "\n\t"})


def utf8_text(out: bytes) -> str:
    """Output decoded strictly: correct output is UTF-8 whatever the names and input held."""
    return out.decode("utf-8")


def hostile_manual(base: Path, root: bytes = b"udm") -> bytes:
    """A small manual under base/docs/<root> whose headings hold escape sequences, state and logs
    beside it; the manual's path (bytes)."""
    manual = os.path.join(os.fsencode(base), b"docs", root)
    os.makedirs(manual)
    with open(os.path.join(manual, b"a.md"), "wb") as fh:
        fh.write(
            f"# Intro {HEADING}\n\n## 1.1 Component COMP-001: Thing {HEADING}\n\nsandbox words\n".encode()
        )
    for sub in (b"state", b"logs"):
        os.makedirs(os.path.join(os.fsencode(base), sub), exist_ok=True)
    return manual
