"""A process pool for document parsing, so a fetch fan-out parses on every core instead of behind one GIL.

trafilatura and pypdf are pure Python for the most part: threads fetching 200 pages spend most of their
time waiting for the interpreter lock while one of them parses. With a pool started, `run_parser` sends
the parse to a worker process (the bytes in, the text and metadata out); without one it parses in
place. Workers come from a forkserver that imported the parsers once (the modules the caller names
in `preload`), so a worker starts in milliseconds and forking never copies a parent's threads or locks.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import TypeVar

__all__ = ["parse_pool", "pool_size", "run_parser", "workers_for"]

T = TypeVar("T")

_LOCK = threading.Lock()
_POOL: ProcessPoolExecutor | None = None
_SIZE = 0
_USERS = 0


def workers_for(setting: int) -> int:
    """How many parse processes a setting means: -1 one per core when there are two or more, else as given."""
    if setting >= 0:
        return setting
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cores if cores >= 2 else 0


@contextmanager
def parse_pool(workers: int, preload: Iterable[str] = ()) -> Iterator[int]:
    """Parse in `workers` processes while the block runs (0: in place); yields the pool's size.

    `preload` names the modules the parsers need, imported once in the forkserver rather than in each
    worker (the forkserver lives as long as the process: the first pool's preload holds). Nested and
    concurrent users share one pool, started with the first user's workers; it is shut down when the
    last one leaves.
    """
    global _POOL, _SIZE, _USERS
    if workers <= 0:
        yield 0
        return
    with _LOCK:
        if _POOL is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(list(preload))
            _POOL, _SIZE = ProcessPoolExecutor(max_workers=workers, mp_context=context), workers
        _USERS += 1
        size = _SIZE
    try:
        yield size
    finally:
        with _LOCK:
            _USERS -= 1
            if _USERS == 0 and _POOL is not None:
                pool, _POOL, _SIZE = _POOL, None, 0
                pool.shutdown(wait=False, cancel_futures=True)


def pool_size() -> int:
    """The running pool's number of processes (0 when parsing happens in place)."""
    return _SIZE


def run_parser(fn: Callable[..., T], *args: object) -> T:
    """fn(*args) in a pool process when a pool runs, else here; a pool that died falls back to here."""
    pool = _POOL
    if pool is None:
        return fn(*args)
    try:
        return pool.submit(fn, *args).result()
    except BrokenProcessPool:
        # A worker was killed (out of memory, a signal): this document still gets parsed.
        return fn(*args)
    except RuntimeError as exc:
        if "shutdown" not in str(exc):
            raise
        return fn(*args)  # the pool closed under us: the last user left while this call was queued


@atexit.register
def _shutdown() -> None:
    pool = _POOL
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)
