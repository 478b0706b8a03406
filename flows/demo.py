"""`udm demo`: copy the sample UDM into a fresh workspace and run every capability on it.

The steps are wiring.DEMO_STEPS ("module:function"), one or more per area; a step takes the
DemoWorkspace, does its work inside it and prints what it did. The sample under examples/ is never
modified: everything happens in the workspace's copy.
"""

from __future__ import annotations

import importlib
import shutil
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import typer

import wiring
from flows.say import say
from tasks.base import ToolContext, always_approve
from udm.config import Settings, load_settings

__all__ = ["DEMO_STEPS", "SAMPLE_UDM", "DemoWorkspace", "register", "run_demo"]

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SAMPLE_UDM = EXAMPLES / "udm"

# (title, "module:function") from wiring.DEMO_STEPS, run in order; a list, read at every run, so
# tests can run their own steps.
DEMO_STEPS: list[tuple[str, str]] = list(wiring.DEMO_STEPS)


@dataclass
class DemoWorkspace:
    """A throw-away project folder holding a copy of the sample UDM, with its own state and logs."""

    path: Path
    settings: Settings
    lines: list[str] = field(default_factory=list)
    # Steps leave things for later steps here (a server's URL, a patch id ...).
    shared: dict[str, Any] = field(default_factory=dict)

    def say(self, text: str = "") -> None:
        """Print one line of the demo's report."""
        self.lines.append(text)
        say(text)

    def ctx(self) -> ToolContext:
        """A tool context for this workspace; the demo approves what it asks for."""
        return ToolContext(settings=self.settings, approver=always_approve)


def create_workspace(base: Path | None = None) -> DemoWorkspace:
    """Make a fresh workspace under `base` (default state/demo/<timestamp>) with the sample UDM."""
    if base is None:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
        base = Path.cwd() / "state" / "demo" / stamp
    base = base.resolve()
    if base.exists() and any(base.iterdir()):
        raise typer.BadParameter(f"workspace {base} is not empty", param_hint="--workspace")
    base.mkdir(parents=True, exist_ok=True)
    shutil.copytree(SAMPLE_UDM, base / "docs" / "udm")
    for sub in ("state", "logs", "prompts"):
        (base / sub).mkdir(exist_ok=True)
    settings = load_settings(
        cwd=base, root=base / "docs" / "udm", state_dir=base / "state", logs_dir=base / "logs"
    )
    return DemoWorkspace(path=base, settings=settings)


def _resolve(path: str) -> Callable[[DemoWorkspace], None]:
    module_name, _, func = path.partition(":")
    fn: Callable[[DemoWorkspace], None] = getattr(importlib.import_module(module_name), func)
    return fn


def run_demo(base: Path | None = None, only: list[str] | None = None) -> int:
    """Run every demo step in a fresh workspace; returns the number of failed steps."""
    ws = create_workspace(base)
    ws.say(f"UDM Pipelines demo — workspace {ws.path}")
    ws.say(f"sample UDM copied to {ws.settings.udm_root}")
    failures = ran = 0
    for title, path in DEMO_STEPS:
        if only and not any(o.lower() in title.lower() for o in only):
            continue
        ran += 1
        ws.say("")
        ws.say(f"== {title}")
        started = time.perf_counter()
        try:
            _resolve(path)(ws)
        except Exception as exc:  # the demo reports a failing step and goes on with the others
            failures += 1
            ws.say(f"   FAILED: {type(exc).__name__}: {exc}")
            (ws.path / "logs").mkdir(exist_ok=True)
            with open(ws.path / "logs" / "demo-errors.log", "a", encoding="utf-8") as fh:
                fh.write(f"--- {title}\n{traceback.format_exc()}\n")
        ws.say(f"   ({(time.perf_counter() - started) * 1000:.0f} ms)")
    ws.say("")
    ws.say(f"demo finished: {ran - failures} steps ok, {failures} failed; workspace {ws.path}")
    return failures


def step_filesystem(ws: DemoWorkspace) -> None:
    """Read, list and write inside the sandbox; show that a traversal is refused."""
    from tasks.base import call_tool

    ctx = ws.ctx()
    listing = call_tool(
        "fileSystemAccessTool", {"action": "listFiles", "filePath": str(ws.settings.udm_root)}, ctx
    )
    names = [e["name"] for e in (listing.envelope.data or {}).get("directoryContents") or []]
    ws.say(f"   listFiles docs/udm -> {len(names)} entries: {', '.join(names[:8])}")
    note = ws.settings.scratch_path / "demo-note.md"
    wrote = call_tool(
        "fileSystemAccessTool",
        {"action": "writeFile", "filePath": str(note), "content": "# Demo note\n"},
        ctx,
    )
    ws.say(
        f"   writeFile scratch/demo-note.md -> {wrote.envelope.data['status'] if wrote.envelope.data else wrote.envelope.error}"
    )
    planted = call_tool(
        "fileSystemAccessTool",
        {
            "action": "writeFile",
            "filePath": str(ws.settings.state_path / "graph" / "x.json"),
            "content": "{}",
        },
        ctx,
    )
    ws.say(
        f"   writeFile state/graph/x.json -> {planted.envelope.data['status'] if planted.envelope.data else '?'} "
        "(the engine's state is off limits to the tools)"
    )
    if planted.envelope.success:
        raise RuntimeError("the sandbox let a tool write the engine's state")
    evil = call_tool("fileSystemAccessTool", {"action": "readFile", "filePath": "../../etc/passwd"}, ctx)
    status = evil.envelope.data["status"] if evil.envelope.data else evil.envelope.error
    ws.say(f"   readFile ../../etc/passwd -> {status} (refused, as it must be)")
    if evil.envelope.success:
        raise RuntimeError("the sandbox let a traversal through")


def demo(
    workspace: Path | None = typer.Option(
        None, "--workspace", help="Folder to run in (default state/demo/<time>)."
    ),
    only: list[str] | None = typer.Option(None, "--only", help="Run only steps whose title contains this."),
) -> None:
    """Run every capability on a fresh copy of the bundled sample UDM."""
    failures = run_demo(workspace, only)
    if failures:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the demo command."""
    app.command("demo")(demo)
