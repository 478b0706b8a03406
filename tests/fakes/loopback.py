"""Serving a fake on 127.0.0.x: a quiet threading server, a context manager, and a handler with send helpers."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["QuietServer", "Responder", "loopback_server", "serve", "start"]


class QuietServer(ThreadingHTTPServer):
    """A threading HTTP server that does not print a client hanging up early (the cap tests do)."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay silent: a client that closes mid-answer is what several tests do on purpose."""

    @property
    def base(self) -> str:
        """The server's base URL, http://HOST:PORT."""
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"


def start(server: ThreadingHTTPServer) -> threading.Thread:
    """Serve `server` on a daemon thread (polling shutdown every 50 ms) and return the thread."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    return thread


@contextmanager
def serve(
    handler: type[BaseHTTPRequestHandler],
    host: str = "127.0.0.1",
    server_class: type[QuietServer] = QuietServer,
) -> Iterator[QuietServer]:
    """Serve `handler` on `host` at a free port; yields the running server, shut down on exit."""
    server = server_class((host, 0), handler)
    start(server)
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def loopback_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve `handler` on 127.0.0.1; yields the base URL, shut down on exit."""
    with serve(handler) as server:
        yield server.base


class Responder(BaseHTTPRequestHandler):
    """A request handler with no access log and one-call answers (HEAD gets the headers only).

    HTTP/1.0 (one request per connection) as the standard library's; a fake that keeps connections
    alive sets `protocol_version = "HTTP/1.1"`."""

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the access log."""

    def send(self, code: int, body: bytes, ctype: str = "text/html; charset=utf-8", **headers: str) -> None:
        """Answer with a status, a body and headers (`Retry_After=` is sent as `Retry-After`)."""
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for key, value in headers.items():
            self.send_header(key.replace("_", "-"), value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_json(self, code: int, obj: Any, **headers: str) -> None:
        """Answer with a JSON body."""
        self.send(code, json.dumps(obj).encode(), "application/json", **headers)

    def send_text(self, code: int, text: str, **headers: str) -> None:
        """Answer with a UTF-8 plain-text body."""
        self.send(code, text.encode(), "text/plain; charset=utf-8", **headers)

    def read_json(self) -> Any:
        """The request's JSON body (None when it has none)."""
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")
