"""A loopback LLM endpoint for the OpenAI chat-completions and Anthropic Messages APIs, answering queued replies.

POST /v1/chat/completions (OpenAI, `Authorization: Bearer`) and POST /v1/messages (Anthropic,
`x-api-key` and `anthropic-version`) are answered with whatever the test queued for that path
(status, JSON body, headers such as Retry-After), in order; a path with nothing queued answers 404.
`requests` records (path, lower-cased headers, JSON body) of every call.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.loopback import Responder, serve

__all__ = ["LlmApi", "running_llm_api"]


@dataclass
class LlmApi:
    """A loopback LLM API: queued (status, body, headers) replies per path, and the requests it got."""

    base: str
    replies: dict[str, list[tuple[int, bytes, dict[str, str]]]] = field(default_factory=dict)
    requests: list[tuple[str, dict[str, str], Any]] = field(default_factory=list)

    def queue(self, path: str, status: int, body: bytes | str, **headers: str) -> None:
        """Answer the next request to `path` with this status, body and headers."""
        data = body.encode() if isinstance(body, str) else body
        self.replies.setdefault(path, []).append((status, data, headers))


@contextmanager
def running_llm_api() -> Iterator[LlmApi]:
    """The fake LLM endpoint on 127.0.0.1."""
    api = LlmApi(base="")

    class Handler(Responder):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.read_json()
            api.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            queue = api.replies.get(self.path) or [(404, b'{"error": "no such route"}', {})]
            status, data, headers = queue.pop(0)
            self.send(status, data, "application/json", **headers)

    with serve(Handler) as server:
        api.base = server.base
        yield api
