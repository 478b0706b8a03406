"""The `udm` command: a typer app assembled from the command groups in wiring/; Prefect is imported lazily.

`run(argv) -> int` is the testable entry point; `main()` only calls `sys.exit(run())`.
Exit codes: 0 success, 1 an error result (or findings), 2 a usage error, 130 interrupted.
"""

from __future__ import annotations

import importlib
import io
import sys
from pathlib import Path
from typing import Any

import click
import typer
from typer.exceptions import TyperException

import wiring
from flows.say import json_text, say
from udm.config import Settings, load_settings
from udm.errors import UdmError
from udm.shown import shown_line, utf8_name

if __name__ == "__main__":
    # `python -m flows.cli`: the command modules import `flows.cli`, a second copy of this file that
    # this half-run `__main__` would race; run the console script's entry point instead.
    from flows.entry import main as _entry_main

    _entry_main()

__all__ = ["app", "emit_json", "fail", "main", "memoize_settings", "run", "settings"]

app = typer.Typer(
    name="udm",
    help="UDM Pipelines: keep a Unified Development Manual true.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_OVERRIDES: dict[str, Any] = {}


@app.callback()
def _root(
    root: Path | None = typer.Option(None, "--root", help="The UDM folder (overrides UDM_ROOT)."),
    state_dir: Path | None = typer.Option(
        None, "--state-dir", help="The state folder (overrides UDM_STATE_DIR)."
    ),
) -> None:
    """UDM Pipelines: keep a Unified Development Manual true."""
    _OVERRIDES.clear()
    if root is not None:
        _OVERRIDES["root"] = root
    if state_dir is not None:
        _OVERRIDES["state_dir"] = state_dir
    _use_local_server()


def _use_local_server() -> None:
    # Flow commands run against the project's local Prefect server when it runs (`udm server
    # start`): about 3 s a run instead of 10-17 s, and the runs stay in the UI. Only a pid file
    # read (plus one health request when it exists); Prefect itself is not imported here.
    from flows.local_server import use_running_server

    try:
        cfg = settings()
    except Exception:  # bad settings are reported by the command that needs them
        return
    if (cfg.state_path / "prefect" / "server.json").exists():
        use_running_server(cfg)


# Set by `udm daemon` only: its environment, working directory and config files are fixed (a client
# whose differ is not served), so equal options give equal settings and loading once is enough.
_SETTINGS_MEMO: dict[str, Settings] | None = None


def memoize_settings() -> None:
    """Load each distinct set of options' settings once for the rest of this process (the daemon)."""
    global _SETTINGS_MEMO
    _SETTINGS_MEMO = {}


def settings(**extra: Any) -> Settings:
    """The settings for this invocation: environment and config files, then the global options."""
    options = {**_OVERRIDES, **extra}
    if _SETTINGS_MEMO is None:
        return load_settings(**options)
    key = repr(sorted(options.items()))
    found = _SETTINGS_MEMO.get(key)
    if found is None:
        found = _SETTINGS_MEMO[key] = load_settings(**options)
    return found


def emit_json(obj: Any) -> None:
    """Print a JSON document (pydantic models included) to stdout."""
    if hasattr(obj, "model_dump"):
        obj = obj.model_dump(mode="json", by_alias=True)
    say(json_text(obj))


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print an error line to stderr and return the Exit to raise."""
    say(f"error: {message}", err=True)
    return typer.Exit(code)


# Each command group (wiring.COMMAND_GROUPS) is a module with register(app).
for _name in wiring.COMMAND_GROUPS:
    importlib.import_module(_name).register(app)


class _Captured(io.StringIO):
    """A buffer click takes for a terminal, so it strips nothing: `say` shows every escape instead."""

    def isatty(self) -> bool:
        """True: click keeps the text whole (it would drop some escape sequences, not others)."""
        return True


def _usage_text(exc: Exception) -> str:
    """A usage error as click words it (usage line, hint, message): it quotes what the caller typed,
    so it is printed through `say`, never straight to a terminal."""
    show = getattr(exc, "show", None)
    if show is None:
        return f"error: {exc}\n"
    buffer = _Captured()
    show(file=buffer)
    return buffer.getvalue()


def run(argv: list[str] | None = None, command: Any = None) -> int:
    """Run the CLI with these arguments and return the exit code (never raises for user errors).

    `command` is the app already built as a click command (`typer.main.get_command(app)`): the
    daemon builds it once instead of on every call."""
    args = sys.argv[1:] if argv is None else list(argv)
    undecodable = next((a for a in args if not utf8_name(a)), None)
    if undecodable is not None:
        # Every text and path the engine takes is stored or looked up as UTF-8 (DuckDB, the journal):
        # an argument holding bytes no character encodes is refused here, before any of it runs.
        say(
            f"error: the argument {shown_line(undecodable)} is not valid UTF-8 (it holds bytes that no "
            "character encodes); udm takes its arguments, names and paths as UTF-8",
            err=True,
        )
        return 2
    try:
        if command is not None:
            result = command.main(args=args, prog_name="udm", standalone_mode=False)
        else:
            result = app(args=args, prog_name="udm", standalone_mode=False)
    except (typer.Exit, click.exceptions.Exit) as exc:
        return int(exc.exit_code)
    except (TyperException, click.ClickException) as exc:
        # typer >= 0.22 vendors click: its usage errors are TyperExceptions, not click's classes.
        say(_usage_text(exc), err=True, nl=False)
        return int(exc.exit_code)
    except (typer.Abort, click.exceptions.Abort):
        say("aborted", err=True)
        return 130
    except KeyboardInterrupt:
        say("interrupted", err=True)
        return 130
    except UdmError as exc:
        say(f"error: {exc}", err=True)
        return 1
    return result if isinstance(result, int) else 0


def main() -> None:
    """Console-script entry point."""
    sys.exit(run())
