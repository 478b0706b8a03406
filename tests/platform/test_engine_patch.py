"""The prompt-exit heartbeat: installed for the pinned Prefect, same heartbeats, no wait at the end."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from flows import engine_patch


class _Engine:
    """The part of Prefect's flow run engine the heartbeat context uses."""

    def __init__(self, seconds: int | None, final: bool = False) -> None:
        self.heartbeat_seconds = seconds
        self.flow_run = SimpleNamespace(state=SimpleNamespace(is_final=lambda: final))
        self.beats: list[tuple[Any, Any]] = []
        self.beaten = threading.Event()
        self.logger = SimpleNamespace(debug=lambda *a, **k: None)

    def _build_heartbeat_event_template(self) -> tuple[str, list[str]]:
        return "resource", ["related"]

    def _emit_flow_run_heartbeat(self, resource: Any, related: Any) -> None:
        self.beats.append((resource, related))
        self.beaten.set()


def test_installed_for_the_pinned_prefect() -> None:
    from prefect import flow_engine

    import flows.research  # noqa: F401  (a flow module: the flows package installed the patch)

    assert engine_patch.applied(), "Prefect's _send_heartbeats changed: re-check engine_patch against it"
    assert flow_engine._send_heartbeats is engine_patch._send_heartbeats


def test_a_changed_engine_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect import flow_engine

    def other(engine: Any, join_on_exit: bool = True) -> Any:
        raise AssertionError("never called")

    monkeypatch.setattr(flow_engine, "_send_heartbeats", other)
    monkeypatch.setitem(engine_patch._state, "applied", False)
    assert engine_patch.apply() is False
    assert flow_engine._send_heartbeats is other


def test_beats_at_start_and_exits_at_once() -> None:
    engine = _Engine(seconds=30)
    started = time.perf_counter()
    with engine_patch._send_heartbeats(engine):
        assert engine.beaten.wait(5), "no heartbeat at the start of the run"
    elapsed = time.perf_counter() - started
    assert engine.beats == [("resource", ["related"])]
    # Prefect's own context sleeps in 1 s steps and joins for up to 2 s.
    assert elapsed < 0.5, f"the run waited {elapsed:.2f} s for its heartbeat thread"


def test_no_heartbeat_once_final_or_when_disabled() -> None:
    final = _Engine(seconds=30, final=True)
    with engine_patch._send_heartbeats(final):
        time.sleep(0.05)
    assert final.beats == []
    off = _Engine(seconds=None)
    with engine_patch._send_heartbeats(off):
        pass
    assert off.beats == []


@pytest.mark.usefixtures("prefect_server")
def test_a_flow_run_ends_without_the_wait() -> None:
    from prefect import flow

    @flow(persist_result=False)
    def nothing() -> int:
        return 1

    nothing()  # the first run also pays for the client's first connection
    times = []
    for _ in range(3):
        started = time.perf_counter()
        assert nothing() == 1
        times.append(time.perf_counter() - started)
    # With Prefect's wait every run took over a second here; without it about 0.2-0.3 s.
    assert min(times) < 0.9, times


REPO = Path(__file__).resolve().parents[2]

LATER = """
import sys
import flows
from flows import engine_patch
cheap = {"prefect", "inspect", "typing", "threading"}
assert not cheap & set(sys.modules), f"import flows must stay cheap: {cheap & set(sys.modules)}"
assert not engine_patch.applied()
from prefect import flow, flow_engine
assert engine_patch.applied() and flow_engine._send_heartbeats is engine_patch._send_heartbeats
print("ok")
"""

WORKER = """
from prefect.flows import load_flow_from_entrypoint
from prefect import flow_engine
flow = load_flow_from_entrypoint("flows/index.py:index_flow")
from flows import engine_patch
assert flow.name == "udm-index"
assert engine_patch.applied() and flow_engine._send_heartbeats is engine_patch._send_heartbeats
print("ok")
"""


def _python(code: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UDM_")}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("code", [LATER, WORKER], ids=["prefect-loaded-after-flows", "worker-loads-a-script"])
def test_the_package_installs_the_patch_for_every_flow_entry(code: str) -> None:
    # The CLI imports flows long before a command loads Prefect; a worker loads Prefect first and the
    # entrypoint as a script (flows/index.py is the one flow module that imports nothing else of flows).
    proc = _python(code)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


def test_every_entrypoint_imports_the_flows_package() -> None:
    import ast

    import wiring

    for file in sorted({d.entrypoint.partition(":")[0] for d in wiring.DEPLOYMENTS}):
        tree = ast.parse((REPO / file).read_text(encoding="utf-8"))
        names = [a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names]
        names += [n.module or "" for n in tree.body if isinstance(n, ast.ImportFrom)]
        assert any(n == "flows" or n.startswith("flows.") for n in names), (
            f"{file}: Prefect's workers load it as a script; a module-level import of the flows "
            "package is what installs the engine patch there"
        )
