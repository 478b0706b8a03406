"""How fast this machine's CPU is right now, so figures from different runs can be compared.

The shared 2-core machine's speed drifts by half or more over a day (the same work took 1.5x the CPU
seconds in the afternoon as in the morning); the benchmarks' ratios are measured in one run and hold,
but absolute times need this beside them.
"""

from __future__ import annotations

import os
import time

__all__ = ["calibration"]


def _steal_jiffies() -> int | None:
    """CPU time the hypervisor gave other guests (/proc/stat "steal"), in clock ticks; None off Linux."""
    try:
        with open("/proc/stat") as fh:
            fields = fh.readline().split()
        return int(fields[8])
    except (OSError, IndexError, ValueError):
        return None


def calibration(iterations: int = 10_000_000) -> str:
    """A line with the time of a fixed pure-Python loop, the CPU time stolen meanwhile and the load."""
    steal0 = _steal_jiffies()
    started = time.perf_counter()
    total = 0
    for i in range(iterations):
        total += i
    elapsed = time.perf_counter() - started
    steal1 = _steal_jiffies()
    stolen = ""
    if steal0 is not None and steal1 is not None:
        cores = os.cpu_count() or 1
        share = (steal1 - steal0) / os.sysconf("SC_CLK_TCK") / (elapsed * cores)
        stolen = f", {share:.0%} of the CPU time stolen by the host meanwhile"
    return (
        f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; a "
        f"{iterations // 1_000_000}M-step Python loop took {elapsed:.2f} s{stolen} "
        "(absolute times scale with it; compare runs by it)"
    )
