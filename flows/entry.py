"""The `udm` console script: the daemon's thin client, and `udm query id ID` from the SQLite lookup.

When a `udm daemon` runs for the manual (its socket in `<state>/daemon/`), `query ...`, `search` and
the reading `graph` commands are sent to it and its captured output and exit code are reproduced
here; a missing, dead or stale daemon (or one started under other settings) falls back silently to
the paths below, removing a dead daemon's socket. With `daemon_autostart` set, such a command starts
the daemon in the background and is answered the usual way this once. Only the standard library is
imported on this path.

Everything else — and `query id` whenever the lookup is missing, stale, ambiguous or has no answer —
goes to `flows.cli.main`. The fast path reads only root, state, logs and approval settings (from
`--root`/`--state-dir`, `UDM_*` variables, `udm.toml` or `[tool.udm]`), checks every file's stat
against the lookup, prints exactly what the full path prints, and logs the call the same way.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

TYPE_CHECKING = False

if TYPE_CHECKING:  # runtime imports stay minimal: this module runs before every `udm` command
    from typing import Any

__all__ = ["daemon_eligible", "fast_query_id", "main", "via_daemon"]

_KEYS = ("root", "state_dir", "logs_dir", "approval_policy", "project_root")
_DEFAULTS = {"root": "docs/udm", "state_dir": "state", "logs_dir": "logs", "approval_policy": "smart_auto"}


def _file_settings(cwd: str) -> dict[str, Any] | None:
    merged: dict[str, Any] = {}
    try:
        pyproject = os.path.join(cwd, "pyproject.toml")
        udm_toml = os.path.join(cwd, "udm.toml")
        if os.path.exists(pyproject) or os.path.exists(udm_toml):
            import tomllib

            if os.path.exists(pyproject):
                with open(pyproject, "rb") as fh:
                    merged.update(tomllib.load(fh).get("tool", {}).get("udm", {}))
            if os.path.exists(udm_toml):
                with open(udm_toml, "rb") as fh:
                    merged.update(tomllib.load(fh))
    except (OSError, ValueError):
        return None
    return merged


def _settings(overrides: dict[str, str]) -> dict[str, str] | None:
    cwd = os.getcwd()
    files = _file_settings(cwd)
    if files is None:
        return None
    out: dict[str, str] = {}
    for key in _KEYS:
        env = os.environ.get(f"UDM_{key.upper()}")
        value = overrides.get(key, env if env is not None else files.get(key, _DEFAULTS.get(key)))
        if value is not None:
            if not isinstance(value, str):
                return None
            out[key] = value
    if "project_root" in out:
        return None  # unusual setups take the full path

    def absolute(p: str) -> str:
        expanded = os.path.expanduser(p)
        return os.path.abspath(expanded if os.path.isabs(expanded) else os.path.join(cwd, expanded))

    return {
        "root": absolute(out["root"]),
        "state": absolute(out["state_dir"]),
        "logs": absolute(out["logs_dir"]),
        "approval_policy": out["approval_policy"],
    }


def _parse(argv: list[str]) -> tuple[dict[str, str], str] | None:
    overrides: dict[str, str] = {}
    args = list(argv)
    while args and args[0] in ("--root", "--state-dir"):
        if len(args) < 2:
            return None
        overrides["root" if args[0] == "--root" else "state_dir"] = args[1]
        args = args[2:]
    if (
        len(args) != 3
        or args[0] != "query"
        or args[1] != "id"
        or not args[2].strip()
        or args[2].startswith("-")
    ):
        return None
    return overrides, args[2]


# The `graph` commands that only read (export writes a file; it stays in the client's process).
_GRAPH_READS = frozenset(
    {"query", "deps", "dependents", "path", "cycles", "order", "orphans", "show", "stats"}
)


def _leading(argv: list[str]) -> tuple[dict[str, str], list[str]] | None:
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
    conf = _settings(overrides)
    if conf is None or conf["approval_policy"] == "ask_always":
        return None  # the daemon cannot prompt
    return conf


def _autostart(conf: dict[str, str]) -> None:
    env = os.environ.get("UDM_DAEMON_AUTOSTART")
    value: object = env
    if env is None:
        files = _file_settings(os.getcwd()) or {}
        value = files.get("daemon_autostart", False)
    if isinstance(value, str):
        value = value.strip().lower() in ("1", "true", "yes", "on")
    if value is not True:
        return
    from udm.daemon import client as dc

    with contextlib.suppress(OSError):  # starting is best effort; this command is answered either way
        dc.spawn(conf["root"], conf["state"])


def via_daemon(argv: list[str]) -> int | None:
    """Exit code when the daemon answered (its output already printed), None when it did not."""
    conf = daemon_eligible(argv)
    if conf is None:
        return None
    from udm.daemon import client as dc

    if not os.path.exists(dc.socket_path(conf["state"])):
        _autostart(conf)
        return None
    message = {"op": "run", "argv": list(argv), "fingerprint": dc.fingerprint(os.getcwd())}
    try:
        reply = dc.request(conf["state"], message)
    except dc.DaemonUnavailable:
        return None
    code = reply.get("code")
    if not isinstance(code, int) or isinstance(code, bool):
        return None  # a fallback or error reply: the command runs here
    out, err = reply.get("stdout"), reply.get("stderr")
    if isinstance(out, str) and out:
        sys.stdout.write(out)
        sys.stdout.flush()
    if isinstance(err, str) and err:
        sys.stderr.write(err)
        sys.stderr.flush()
    return code


def fast_query_id(argv: list[str]) -> int | None:
    """Exit code when the fast path answered, None when the full CLI must."""
    started = time.perf_counter()
    parsed = _parse(argv)
    if parsed is None:
        return None
    overrides, ident = parsed
    conf = _settings(overrides)
    if conf is None or conf["approval_policy"] == "ask_always":
        return None
    from udm.index import lookup_definitions

    ident = ident.strip()
    defs = lookup_definitions(conf["state"], conf["root"], ident, exclude=[conf["state"]])
    if not defs or len({(d["file"], d["section"]) for d in defs}) > 1:
        return None  # no answer or ambiguous: the full path words those
    out = "".join(
        f"{d['id']}\t{d['file']}:{d['line']}\t{d['how']}\t{d['section_path'] or ''}\n" for d in defs
    )
    sys.stdout.write(out)
    sys.stdout.flush()
    # Logged after the answer is out, as the full path logs every tool call.
    import hashlib
    import json
    from datetime import UTC, datetime

    raw = {"query_type": "find_by_id", "udm_path_or_id": ident}
    text = json.dumps(raw, sort_keys=True, default=str, ensure_ascii=False)
    record = {
        "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "tool": "udmQueryTool",
        "input_digest": "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16],
        "input_fields": sorted(raw),
        "permission": "safe",
        "decision": "auto",
        "status": "SUCCESS",
        "duration_ms": round((time.perf_counter() - started) * 1000, 3),
        "fast_path": True,
    }
    try:
        os.makedirs(conf["logs"], exist_ok=True)
        with open(os.path.join(conf["logs"], "tool-calls.jsonl"), "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    except OSError:
        pass
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
