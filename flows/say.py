"""The CLI's one way to print a line for a person: what a file, a name or a caller wrote is shown on a
terminal, never acted on (see `udm.shown`); a pipe or a file gets the exact text."""

from __future__ import annotations

import json
import sys
from typing import Any

import typer

from udm.shown import for_stream, json_shown

__all__ = ["json_text", "say"]


def say(message: str = "", *, err: bool = False, nl: bool = True) -> None:
    """Print `message` to stdout (stderr with `err`), its hidden characters escaped on a terminal."""
    typer.echo(for_stream(message, sys.stderr if err else sys.stdout), err=err, nl=nl)


def json_text(obj: Any, indent: int | None = 2) -> str:
    """`obj` as JSON for a person or a script: non-ASCII kept, but each character a terminal acts on,
    or UTF-8 cannot hold, written as JSON's `\\uXXXX` escape (the same data to a parser)."""
    return json_shown(json.dumps(obj, indent=indent, ensure_ascii=False, default=str))
