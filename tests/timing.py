"""CPU time of a call, for the tests that prove a cost grows linearly."""

from __future__ import annotations

import time
from collections.abc import Callable


def cpu_seconds(fn: Callable[[], object], runs: int = 1) -> float:
    """The least CPU time this thread spent in `fn` over `runs` calls.

    Wall time counts the other test workers' load too: a ratio of two wall times taken seconds apart
    under a busy suite once read 25x for 8x the input. The thread's own CPU time does not wait for them.
    """
    best = float("inf")
    for _ in range(runs):
        started = time.thread_time()
        fn()
        best = min(best, time.thread_time() - started)
    return best
