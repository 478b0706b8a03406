"""The `udm` console script: the daemon's thin client, and `udm query id ID` from the SQLite lookup.

When a `udm daemon` runs for the manual (its socket in `<state>/daemon/`), `query ...`, `search` and
the reading `graph` commands are sent to it and its captured output and exit code are reproduced
here; a missing, dead or stale daemon (or one started under other settings) falls back silently to
the paths below, removing a dead daemon's socket. With `daemon_autostart` set, such a command starts
the daemon in the background and is answered the usual way this once. Only the standard library is
imported on this path.

Everything else — and `query id` whenever the lookup is missing, stale, ambiguous or has no answer —
goes to `flows.cli.main`. The fast path reads only root, state, logs and approval settings (from
`--root`/`--state-dir`, `UDM_*` variables, `udm.toml` or `[tool.udm]`) through `udm.config_sources`,
the reader `Settings` uses; it checks every file's stat against the lookup, prints exactly what the
full path prints, and logs the call through `tasks.calllog`, the writer `call_tool` uses.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

TYPE_CHECKING = False

if TYPE_CHECKING:  # runtime imports stay minimal: this module runs before every `udm` command
    from collections.abc import Iterable
    from typing import Any

__all__ = ["daemon_eligible", "fast_query_id", "main", "via_daemon"]

_KEYS = ("root", "state_dir", "logs_dir", "approval_policy", "project_root")
# ask_always needs a prompt, which neither the daemon nor the fast path can give; any other value is
# an error the full path words.
_UNATTENDED = frozenset({"smart_auto", "full_auto"})


def _files(cwd: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    from udm.config_sources import read_config_files

    try:
        return read_config_files(cwd)
    except (OSError, ValueError):
        return None  # the full path reports an unreadable or invalid file


def _settings(overrides: dict[str, str]) -> dict[str, str] | None:
    """Root, state, logs and policy as `Settings` resolves them (the same sources and path rule), or
    None when this invocation is not one the fast paths may answer."""
    from udm.config_sources import raw_setting, resolve_path

    cwd = os.getcwd()
    files = _files(cwd)
    if files is None:
        return None
    values = {key: raw_setting(key, overrides, files) for key in _KEYS}
    if values["project_root"] is not None:
        return None  # unusual setups take the full path
    if not all(isinstance(values[key], str) for key in _KEYS[:-1]):
        return None
    if values["approval_policy"] not in _UNATTENDED:
        return None
    conf = {
        "root": resolve_path(values["root"], cwd),
        "state": resolve_path(values["state_dir"], cwd),
        "logs": resolve_path(values["logs_dir"], cwd),
        "approval_policy": values["approval_policy"],
    }
    # A path that is not valid UTF-8 is refused, with its reason, by the full path's settings.
    return conf if _all_utf8(conf.values()) else None


def _all_utf8(texts: Iterable[str]) -> bool:
    """Whether every text (an argument, a path) is valid UTF-8: the full CLI refuses any other, in one
    line, before anything runs, so neither the daemon nor the fast path takes it."""
    from udm.shown import utf8_name

    return all(utf8_name(text) for text in texts)


# The `graph` commands that only read (export writes a file; it stays in the client's process).
_GRAPH_READS = frozenset(
    {"query", "deps", "dependents", "path", "cycles", "order", "orphans", "show", "stats"}
)


def _leading(argv: list[str]) -> tuple[dict[str, str], list[str]] | None:
    """The global options (`--root`, `--state-dir`, also as `--opt=value`) and the rest of the command
    line; None for any other leading option, which the full CLI handles."""
    overrides: dict[str, str] = {}
    args = list(argv)
    while args and args[0].startswith("--"):
        name, eq, value = args[0].partition("=")
        if name not in ("--root", "--state-dir"):
            return None
        if not eq:
            if len(args) < 2:
                return None
            value, args = args[1], args[1:]
        overrides["root" if name == "--root" else "state_dir"] = value
        args = args[1:]
    return overrides, args


def daemon_eligible(argv: list[str]) -> dict[str, str] | None:
    """The settings (root, state, logs, policy) when the daemon may answer this command line, else None."""
    if not _all_utf8(argv):
        return None
    parsed = _leading(argv)
    if parsed is None:
        return None
    overrides, args = parsed
    if not args or any(a in ("--help", "-h") for a in args):
        return None  # help is laid out for the caller's terminal
    if args[0] not in ("query", "search") and not (
        args[0] == "graph" and len(args) > 1 and args[1] in _GRAPH_READS
    ):
        return None
    return _settings(overrides)


def _autostart(conf: dict[str, str]) -> None:
    from udm.config_sources import raw_setting

    value = raw_setting("daemon_autostart", {}, _files(os.getcwd()) or ({}, {}))
    if isinstance(value, str):
        value = value.strip().lower() in ("1", "true", "yes", "on")
    if value is not True:
        return
    from udm.daemon import spawn

    with contextlib.suppress(OSError):  # starting is best effort; this command is answered either way
        spawn(conf["root"], conf["state"])


def via_daemon(argv: list[str]) -> int | None:
    """Exit code when the daemon answered (its output already printed), None when it did not."""
    conf = daemon_eligible(argv)
    if conf is None:
        return None
    from udm.daemon import DaemonUnavailable, fingerprint, request, socket_path

    if not os.path.exists(socket_path(conf["state"])):
        _autostart(conf)
        return None
    message = {"op": "run", "argv": list(argv), "fingerprint": fingerprint(os.getcwd())}
    try:
        reply = request(conf["state"], message)
    except DaemonUnavailable:
        return None
    code = reply.get("code")
    if not isinstance(code, int) or isinstance(code, bool):
        return None  # a fallback or error reply: the command runs here
    from udm.shown import for_stream

    # The daemon printed into a buffer, not a terminal: what reaches one is shown here, as `say` would.
    out, err = reply.get("stdout"), reply.get("stderr")
    if isinstance(out, str) and out:
        sys.stdout.write(for_stream(out, sys.stdout))
        sys.stdout.flush()
    if isinstance(err, str) and err:
        sys.stderr.write(for_stream(err, sys.stderr))
        sys.stderr.flush()
    return code


def fast_query_id(argv: list[str]) -> int | None:
    """Exit code when the fast path answered, None when the full CLI must."""
    started = time.perf_counter()
    if not _all_utf8(argv):
        return None
    parsed = _leading(argv)
    if parsed is None:
        return None
    overrides, args = parsed
    if len(args) != 3 or args[:2] != ["query", "id"] or not args[2].strip() or args[2].startswith("-"):
        return None
    ident = args[2]
    conf = _settings(overrides)
    if conf is None:
        return None
    from udm.index import lookup_definitions

    ident = ident.strip()
    defs = lookup_definitions(conf["state"], conf["root"], ident, exclude=[conf["state"]])
    if not defs or len({(d["file"], d["section"]) for d in defs}) > 1:
        return None  # no answer or ambiguous: the full path words those
    out = "".join(
        f"{d['id']}\t{d['file']}:{d['line']}\t{d['how']}\t{d['section_path'] or ''}\n" for d in defs
    )
    from udm.shown import for_stream

    sys.stdout.write(for_stream(out, sys.stdout))
    sys.stdout.flush()
    # Logged after the answer is out, by the writer `call_tool` uses, with the input the full path's
    # `udm query id` gives udmQueryTool (so both lines carry the same digest).
    from tasks.calllog import call_record, write_call_record

    record = call_record("udmQueryTool", {"query_type": "find_by_id", "udm_path_or_id": ident})
    record.update(
        permission="safe",
        decision="auto",
        status="SUCCESS",
        duration_ms=round((time.perf_counter() - started) * 1000, 3),
        fast_path=True,
    )
    write_call_record(conf["logs"], record)
    return 0


def main() -> None:
    """Console-script entry point."""
    code = via_daemon(sys.argv[1:])
    if code is None:
        code = fast_query_id(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from flows.cli import main as full_main

    full_main()
