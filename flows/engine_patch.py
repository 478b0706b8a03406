"""Flow runs end as soon as their work does, not up to a second later (a fix to Prefect's flow engine).

Prefect 3.8 sends a flow run's heartbeats from a thread that sleeps in one-second steps, and joins
that thread (for up to 2 s) when the run ends. Every flow run therefore ends up to a second late:
an empty flow took 1.1 s against a local server here, 0.2 s without the wait. For a cached research
re-run or a short `udm` command that second is most of the time.

`apply()` swaps in a heartbeat context that behaves the same (the same heartbeat events, every
`flows.heartbeat_frequency` seconds, none once the run is final) but sleeps on its stop event, so
the join returns at once. It replaces only the function it was written against, recognised by a
hash of its source; any other Prefect keeps its own.

`install()` is called once, by `flows/__init__.py`, which every flow entry passes through (the CLI,
`udm serve`, tests, and Prefect workers, whose entrypoint scripts import the flows package). The
package must not import Prefect (the CLI's fast paths never pay for it), so `install()` applies the
patch at once when Prefect's flow engine is already loaded, and otherwise the moment it loads.
"""

from __future__ import annotations

import _thread
import sys
from contextlib import contextmanager, suppress

# `import flows` runs before every `udm` command, the fast paths included: only the standard
# library's cheapest modules load here (no typing, threading or inspect; those load when used).
TYPE_CHECKING = False

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from typing import Any

__all__ = ["ENGINE_MODULE", "KNOWN_SOURCE_SHA256", "applied", "apply", "install"]

# The module whose heartbeat function is replaced.
ENGINE_MODULE = "prefect.flow_engine"

# sha256 of `inspect.getsource(prefect.flow_engine._send_heartbeats)` in Prefect 3.8.8.
KNOWN_SOURCE_SHA256 = "83e152cb73a04e977ca181188e99b3d583c894892b5456043b2eb51e45dbe996"

_state = {"applied": False}
_lock = _thread.allocate_lock()


@contextmanager
def _send_heartbeats(engine: Any, join_on_exit: bool = True) -> Iterator[None]:
    """Heartbeats for a flow run from a daemon thread that stops the moment the run ends."""
    import contextvars
    import threading

    from prefect import flow_engine

    seconds = engine.heartbeat_seconds
    if seconds is None:
        yield
        return
    seconds = max(seconds, flow_engine.MINIMUM_HEARTBEAT_INTERVAL)
    resource, related = engine._build_heartbeat_event_template()
    stop = threading.Event()

    def beat() -> None:
        while not stop.is_set():
            run = engine.flow_run
            if run is not None and run.state is not None and run.state.is_final():
                return
            try:
                engine._emit_flow_run_heartbeat(resource, related)
            except Exception:  # a missed heartbeat must never fail the run
                engine.logger.debug("Failed to emit heartbeat", exc_info=True)
            if stop.wait(seconds):
                return

    # The thread needs the caller's settings context (its PREFECT_API_URL), as Prefect's own does.
    context = contextvars.copy_context()
    thread = threading.Thread(target=context.run, args=(beat,), name="flow-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        if join_on_exit:
            thread.join(timeout=2)


def _source_sha256(fn: Any) -> str | None:
    # Imported here: `import flows` (every CLI start) must not pay for inspect (tens of ms).
    import hashlib
    import inspect

    try:
        return hashlib.sha256(inspect.getsource(fn).encode()).hexdigest()
    except (OSError, TypeError):
        return None


def apply(flow_engine: Any = None) -> bool:
    """Install the prompt-exit heartbeat in Prefect's flow engine (loaded here unless given) if it is the known version."""
    if flow_engine is None:
        # Outside the lock: loading the engine may run install()'s hook, which calls apply() again.
        import importlib

        flow_engine = importlib.import_module(ENGINE_MODULE)
    with _lock:
        if _state["applied"]:
            return True
        current = getattr(flow_engine, "_send_heartbeats", None)
        if current is None or _source_sha256(current) != KNOWN_SOURCE_SHA256:
            return False
        flow_engine._send_heartbeats = _send_heartbeats
        _state["applied"] = True
        return True


def applied() -> bool:
    """Whether this process's flow engine uses the prompt-exit heartbeat."""
    return _state["applied"]


class _ThenLoader:
    """A module's own loader, plus one function run on the module once it has loaded."""

    def __init__(self, inner: Any, then: Callable[[ModuleType], object]) -> None:
        self.inner = inner
        self.then = then

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        """What the module's own loader creates."""
        created: ModuleType | None = self.inner.create_module(spec)
        return created

    def exec_module(self, module: ModuleType) -> None:
        """Load the module as its own loader does, then run the function on it."""
        self.inner.exec_module(module)
        # A patch that cannot be applied must never make Prefect unimportable.
        with suppress(Exception):
            self.then(module)

    def __getattr__(self, name: str) -> Any:
        # get_source, get_filename, is_package...: the module's own loader answers.
        return getattr(self.inner, name)


class _AfterLoad:
    """A meta path finder that finds one module through the others and wraps its loader (once)."""

    def __init__(self, name: str, then: Callable[[ModuleType], object]) -> None:
        self.name = name
        self.then = then

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> ModuleSpec | None:
        """The module's usual spec, its loader wrapped; None for every other module."""
        if fullname != self.name:
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:  # another thread's import got here first
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _ThenLoader(spec.loader, self.then)
                return spec
        return None


def install() -> None:
    """Apply the patch now if Prefect's flow engine is loaded, else as soon as it loads (once per process)."""
    with _lock:
        if _state["applied"] or any(isinstance(f, _AfterLoad) for f in sys.meta_path):
            return
        loaded = sys.modules.get(ENGINE_MODULE)
        if loaded is None:
            sys.meta_path.insert(0, _AfterLoad(ENGINE_MODULE, apply))
            return
    apply(loaded)
