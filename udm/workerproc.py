"""Worker processes spoken to in JSON lines over pipes (the SQL and SPARQL workers): both ends.

The parent side is `LineWorker`: it starts `python -m MODULE ARGS...`, sends one request line at a
time and waits for the answer line until a deadline, then kills the process (the only prompt way to
stop a DuckDB operator or a pyoxigraph query) and starts a fresh one for the next request. A
subclass names its module, its errors and, optionally, what to watch while a query runs.

The worker side is `serve_json_lines`: it reads a request line from stdin, answers it with one
response line on stdout, and keeps serving after any error in a request. Only the standard library is
imported here, so a worker that imports this module still starts in a fraction of a second.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["LineWorker", "kill_worker", "serve_json_lines"]

# The folder that holds the `udm` package: the workers start as `python -m udm...` from there.
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent
# Startup (interpreter and the worker's engine import) is not charged to the first query's limit.
_START_TIMEOUT_S = 30


def kill_worker(proc: subprocess.Popen[Any]) -> None:
    """Kill the worker, reap it (bounded wait) and close our ends of its pipes."""
    proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            stream.close()


class LineWorker(ABC):
    """A worker process answering one JSON-line request at a time, killed and restarted when one overruns.

    A subclass sets `label` (as in "the SQL worker") and `module`, may give `_arguments`, and names its
    errors in `_busy_error`, `_timeout_error` and `_failure`. With `watch_every_s` set, `_watch` is
    asked at that interval while a request runs; an error it returns kills the worker and is raised.
    `_after_kill` cleans up after a killed worker.
    """

    label: str
    module: str
    watch_every_s: float | None = None

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        self._lock = threading.Lock()
        self.restarts = 0

    def _arguments(self) -> list[str]:
        """The worker's command-line arguments after its module name."""
        return []

    @abstractmethod
    def _busy_error(self, timeout_s: float) -> Exception:
        """The error when another request held the worker past this request's time limit."""

    @abstractmethod
    def _timeout_error(self, timeout_s: float) -> Exception:
        """The error when the worker did not answer within the time limit (it has been killed)."""

    @abstractmethod
    def _failure(self, reason: str) -> Exception:
        """The error when the worker could not start or ended without answering."""

    def _watch(self, pid: int) -> Exception | None:
        """An error that stops the running request now (the worker is killed), or None to wait on."""
        return None

    def _after_kill(self, pid: int) -> None:
        """Clean up what a killed worker left behind (by default it leaves nothing)."""
        return None

    def exchange(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send one request and return the worker's response; the limit counts from this call."""
        started = time.monotonic()
        # The lock wait counts against the caller's limit too, so a queue of slow requests stays bounded.
        if not self._lock.acquire(timeout=timeout_s):
            raise self._busy_error(timeout_s)
        try:
            starting = time.monotonic()
            proc = self._start()
            # A fresh worker's start is not charged to the request.
            deadline = started + timeout_s + (time.monotonic() - starting)
            self._send(proc, request)
            line = self._read_line(proc, deadline, watch=True)
            if line is None:
                self._kill()
                self.restarts += 1
                raise self._timeout_error(timeout_s)
            response: dict[str, Any] = json.loads(line)
        finally:
            self._lock.release()
        return response

    def close(self) -> None:
        """Stop the worker process."""
        with self._lock:
            self._kill()

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        self._kill()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", self.module, *self._arguments()],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                cwd=str(_PACKAGE_ROOT),
            )
        except OSError as exc:
            raise self._failure(f"could not start the {self.label} worker: {exc}") from exc
        self._proc = proc
        self._buffer = b""
        # The worker's first line says it is ready.
        if self._read_line(proc, time.monotonic() + _START_TIMEOUT_S, watch=False) is None:
            self._kill()
            raise self._failure(f"the {self.label} worker did not start within {_START_TIMEOUT_S} s")
        return proc

    def _send(self, proc: subprocess.Popen[bytes], request: dict[str, Any]) -> None:
        assert proc.stdin is not None
        try:
            proc.stdin.write(json.dumps(request).encode("utf-8") + b"\n")
            proc.stdin.flush()
        except BrokenPipeError:
            raise self._ended() from None

    def _read_line(self, proc: subprocess.Popen[bytes], deadline: float, *, watch: bool) -> bytes | None:
        """The worker's next line, or None at the deadline."""
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        every = self.watch_every_s if watch else None
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], min(remaining, every) if every else remaining)
            if not ready:
                stop = self._watch(proc.pid) if every else None
                if stop is not None:
                    self._kill()
                    raise stop
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise self._ended()
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _ended(self) -> Exception:
        """The error for a worker that closed its pipes: reaped, its leftovers cleaned up."""
        proc = self._proc
        self._kill()
        code = proc.returncode if proc is not None else None
        return self._failure(f"the {self.label} worker ended unexpectedly (exit status {code})")

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        self._buffer = b""
        if proc is None:
            return
        kill_worker(proc)
        self._after_kill(proc.pid)


def serve_json_lines(
    answer: Callable[[dict[str, Any]], dict[str, Any]],
    failed: Callable[[Exception], dict[str, Any]],
) -> None:
    """Answer JSON-line requests from stdin on stdout until stdin closes, after a first `ready` line.

    A request whose `answer` raises gets `failed(exc)`; a response that cannot be written as JSON gets
    `failed(exc)` with the error "result not serialisable: ...". The worker never ends on a request.
    """
    out = sys.stdout
    out.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            response = answer(json.loads(line))
        except Exception as exc:  # a bad request must not end the worker
            response = failed(exc)
        try:
            # ASCII-only, so a lone surrogate echoed from a request cannot fail the write to the pipe.
            text = json.dumps(response, default=str)
        except (TypeError, ValueError, MemoryError) as exc:
            text = json.dumps({**failed(exc), "error": f"result not serialisable: {exc}"})
        out.write(text + "\n")
        out.flush()
