"""How fast this machine's CPU is right now, so figures from different runs can be compared.

The shared 2-core machine's speed drifts by half or more over a day (the same work took 1.5x the CPU
seconds in the afternoon as in the morning); the benchmarks' ratios are measured in one run and hold,
but absolute times need this beside them.
"""

from __future__ import annotations

import os
import time

__all__ = ["calibration"]


def calibration(iterations: int = 10_000_000) -> str:
    """A line with the time of a fixed pure-Python loop and the load average."""
    started = time.perf_counter()
    total = 0
    for i in range(iterations):
        total += i
    elapsed = time.perf_counter() - started
    return (
        f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; a {iterations // 1_000_000}M-step "
        f"Python loop took {elapsed:.2f} s (absolute times scale with it; compare runs by it)"
    )
