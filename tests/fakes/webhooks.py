"""A loopback webhook receiver: records every POST as (path, JSON body) and answers 204 No Content."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.fakes.loopback import Responder, serve

__all__ = ["running_webhook"]


@contextmanager
def running_webhook() -> Iterator[tuple[str, list[tuple[str, Any]]]]:
    """Yields the receiver's base URL and the list it appends each (path, JSON body) to."""
    received: list[tuple[str, Any]] = []

    class Handler(Responder):
        def do_POST(self) -> None:
            received.append((self.path, self.read_json()))
            self.send_response(204)
            self.end_headers()

    with serve(Handler) as server:
        yield server.base, received
