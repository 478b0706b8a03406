"""`udm prefect-yaml`: prefect.yaml written from wiring.DEPLOYMENTS, so the pool's deployments and `udm serve`'s agree.

The file keeps its hand-written look (comments, YAML anchors for the shared work pool and settings);
`--check` only compares, for CI and the tests.
"""

from __future__ import annotations

import json
import os
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

import typer

from flows.say import say
from udm.datalimits import read_utf8
from wiring import DEPLOYMENT_ENV, DEPLOYMENTS, WORK_POOL, WORK_QUEUE, DeploymentDef

__all__ = ["register", "render_prefect_yaml"]

_HEADER = """\
# Deployments of every UDM Pipelines flow, for work pools and workers (several machines).
# Generated from wiring/ by `udm prefect-yaml`: change wiring.DEPLOYMENTS, then run it again
# (tests/foundation/test_wiring.py fails while the two differ).
#   prefect work-pool create {pool} --type process
#   UDM_PROJECT_DIR=$PWD prefect --no-prompt deploy --all      # register (or: --name reindex)
#   UDM_PROJECT_DIR=/srv/udm prefect worker start --pool {pool}   # on each machine, any number
# Without a work pool, `udm serve` serves the same flows from one process under distinct names
# (`<name>-served`, flows/deployments.py), so `prefect deploy --all` never moves a served deployment
# or drops its schedule.
name: udm-pipelines
prefect-version: {prefect}

# Workers run flows from the project's checkout on their machine (set UDM_PROJECT_DIR there), so
# relative paths such as examples/pipelines/*.yaml and the default docs/udm resolve as in a shell.
pull:
  - prefect.deployments.steps.set_working_directory:
      directory: "{{{{ $UDM_PROJECT_DIR }}}}"

definitions:
  work_pool: &pool
    name: {pool}
    work_queue_name: {queue}
  # The settings the flows read, as job variables: a process worker puts `env` into the flow run's
  # environment, where the flows read UDM_* settings (README "Settings"). The approval policy lives
  # here and in the worker's environment, never in a run parameter (a parameter may only make it
  # stricter; a run-level job variable may not lower it below this deployment's either).
  job_variables: &settings
    env: &env
"""


def _scalar(value: Any, in_flow: bool = False) -> str:
    """A YAML scalar that reads back as `value`: plain where YAML would read it unchanged, else quoted."""
    import yaml

    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)
    text = str(value)
    probe = f"k: [{text}]" if in_flow else f"k: {text}"
    try:
        plain = yaml.safe_load(probe) == {"k": [text] if in_flow else text}
    except yaml.YAMLError:
        plain = False
    return text if plain and text else json.dumps(text, ensure_ascii=False)


def _block(value: Any, indent: int) -> list[str]:
    """The lines of a mapping's entries at `indent` spaces; lists in flow style ([a, b])."""
    pad = " " * indent
    lines: list[str] = []
    for key, item in value.items():
        if isinstance(item, dict) and item:
            lines += [f"{pad}{_scalar(key)}:", *_block(item, indent + 2)]
        elif isinstance(item, dict):
            lines.append(f"{pad}{_scalar(key)}: {{}}")
        elif isinstance(item, list | tuple) and all(not isinstance(x, dict | list | tuple) for x in item):
            lines.append(f"{pad}{_scalar(key)}: [{', '.join(_scalar(x, in_flow=True) for x in item)}]")
        elif isinstance(item, list | tuple):
            # Nested lists and lists of mappings: JSON is valid YAML flow style.
            lines.append(f"{pad}{_scalar(key)}: {json.dumps(item, ensure_ascii=False)}")
        else:
            lines.append(f"{pad}{_scalar(key)}: {_scalar(item)}")
    return lines


def _deployment(d: DeploymentDef) -> list[str]:
    """One entry of `deployments:`."""
    lines = [
        f"  - name: {_scalar(d.name)}",
        f"    entrypoint: {_scalar(d.entrypoint)}",
        f"    description: {_scalar(d.description)}",
        f"    tags: [{', '.join(_scalar(t, in_flow=True) for t in d.tags)}]",
    ]
    if d.cron:
        lines += ["    schedules:", f"      - cron: {json.dumps(d.cron)}", "        timezone: UTC"]
    elif d.interval_seconds:
        lines += ["    schedules:", f"      - interval: {d.interval_seconds}"]
    lines += _block({"parameters": d.parameters}, 4)
    lines.append("    work_pool: *pool")
    if not d.env:
        return [*lines, "    job_variables: *settings"]
    lines += ["    job_variables:", "      env:", "        <<: *env"]
    if d.env_reason:
        lines.append(f"        # {' '.join(d.env_reason.split())}")  # one comment line, whatever it holds
    return lines + _block(d.env, 8)


def render_prefect_yaml() -> str:
    """prefect.yaml's text for wiring's deployments, work pool and settings."""
    head = _HEADER.format(pool=WORK_POOL, queue=WORK_QUEUE, prefect=version("prefect"))
    lines = [*_block(DEPLOYMENT_ENV, 6), "", "deployments:"]
    for i, definition in enumerate(DEPLOYMENTS):
        lines += ([""] if i else []) + _deployment(definition)
    return head + "\n".join(lines) + "\n"


def _write(path: Path, text: str) -> None:
    """Replace the file in one rename, so a reader never sees half of it."""
    fd, tmp = tempfile.mkstemp(prefix=".prefect-yaml-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def prefect_yaml(
    file: Path = typer.Option(Path("prefect.yaml"), "--file", help="The file to write or check."),
    check: bool = typer.Option(False, "--check", help="Only compare: exit 1 when the file differs."),
) -> None:
    """Write prefect.yaml from wiring.DEPLOYMENTS (--check: say whether it is up to date)."""
    text = render_prefect_yaml()
    try:
        current: str | None = read_utf8(file)
    except FileNotFoundError:
        current = None
    except OSError as exc:
        say(f"error: cannot read {file}: {exc.strerror}", err=True)
        raise typer.Exit(1) from None
    except ValueError as exc:
        say(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    if current == text:
        say(f"{file} is up to date ({len(DEPLOYMENTS)} deployments)")
        return
    if check:
        say(f"error: {file} differs from wiring.DEPLOYMENTS: run `udm prefect-yaml`", err=True)
        raise typer.Exit(1)
    try:
        _write(file, text)
    except OSError as exc:
        say(f"error: cannot write {file}: {exc.strerror}", err=True)
        raise typer.Exit(1) from None
    say(f"wrote {file} ({len(DEPLOYMENTS)} deployments)")


def register(app: typer.Typer) -> None:
    """Add `udm prefect-yaml`."""
    app.command("prefect-yaml")(prefect_yaml)
