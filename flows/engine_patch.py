"""Flow runs end as soon as their work does, not up to a second later (a fix to Prefect's flow engine).

Prefect 3.8 sends a flow run's heartbeats from a thread that sleeps in one-second steps, and joins
that thread (for up to 2 s) when the run ends. Every flow run therefore ends up to a second late:
an empty flow took 1.1 s against a local server here, 0.2 s without the wait. For a cached research
re-run or a short `udm` command that second is most of the time.

`apply()` swaps in a heartbeat context that behaves the same (the same heartbeat events, every
`flows.heartbeat_frequency` seconds, none once the run is final) but sleeps on its stop event, so
the join returns at once. It replaces only the function it was written against, recognised by a
hash of its source; any other Prefect keeps its own. Flow modules call it when they load.
"""

from __future__ import annotations

import contextvars
import hashlib
import inspect
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["KNOWN_SOURCE_SHA256", "applied", "apply"]

# sha256 of `inspect.getsource(prefect.flow_engine._send_heartbeats)` in Prefect 3.8.8.
KNOWN_SOURCE_SHA256 = "83e152cb73a04e977ca181188e99b3d583c894892b5456043b2eb51e45dbe996"

_state = {"applied": False}
_lock = threading.Lock()


@contextmanager
def _send_heartbeats(engine: Any, join_on_exit: bool = True) -> Iterator[None]:
    """Heartbeats for a flow run from a daemon thread that stops the moment the run ends."""
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
    try:
        return hashlib.sha256(inspect.getsource(fn).encode()).hexdigest()
    except (OSError, TypeError):
        return None


def apply() -> bool:
    """Install the prompt-exit heartbeat in Prefect's flow engine if it is the known version."""
    with _lock:
        if _state["applied"]:
            return True
        from prefect import flow_engine

        current = getattr(flow_engine, "_send_heartbeats", None)
        if current is None or _source_sha256(current) != KNOWN_SOURCE_SHA256:
            return False
        flow_engine._send_heartbeats = _send_heartbeats
        _state["applied"] = True
        return True


def applied() -> bool:
    """Whether this process's flow engine uses the prompt-exit heartbeat."""
    return _state["applied"]
