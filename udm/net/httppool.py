"""An httpx transport that keeps idle keep-alive connections per origin, at O(1) cost per request.

httpcore's connection pool (httpcore 1.0) rescans every pooled connection on each request and on
each response close, and probes each idle one's socket for readability through anyio's attribute
machinery (`has_expired`), with an O(n^2) `is_idle` count on top: with 16-64 keep-alive
connections that bookkeeping cost more CPU than the HTTP exchange itself, so a link checker got
slower the more concurrency it was given. Here every connection lives in its own one-connection
httpx transport (so request conversion, TLS, keep-alive expiry and exception mapping stay
httpx's own), and idle transports wait in a per-origin stack; checking one out touches only it.
Concurrency is bounded by the caller (the link checker's global and per-host semaphores); the
pool bounds how many idle connections it keeps, closing the least recently used beyond that.
"""

from __future__ import annotations

import functools
import os
import ssl
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator

import certifi
import httpx

__all__ = ["OriginPoolTransport", "verified_ssl_context"]

_Origin = tuple[bytes, bytes, int | None]
_SSL_LOCK = threading.Lock()


@functools.cache
def _cached_context(cafile: str | None, capath: str | None) -> ssl.SSLContext:
    # The same choice httpx.create_ssl_context(verify=True) makes: the env's bundle, else certifi's.
    if cafile:
        return ssl.create_default_context(cafile=cafile)
    if capath:
        return ssl.create_default_context(capath=capath)
    return ssl.create_default_context(cafile=certifi.where())


def verified_ssl_context(trust_env: bool = True) -> ssl.SSLContext:
    """httpx's default verifying SSL context, built once per process (per SSL_CERT_FILE/DIR).

    Loading the CA bundle takes 50-200 ms; an SSL context is safe to share between connections.
    """
    cafile = (os.environ.get("SSL_CERT_FILE") or None) if trust_env else None
    capath = (os.environ.get("SSL_CERT_DIR") or None) if trust_env and not cafile else None
    with _SSL_LOCK:
        return _cached_context(cafile, capath)


class _ReleasingStream(httpx.AsyncByteStream):
    """A response body that hands its connection back to the pool once closed."""

    def __init__(
        self,
        inner: httpx.AsyncByteStream,
        pool: OriginPoolTransport,
        origin: _Origin,
        slot: httpx.AsyncHTTPTransport,
    ) -> None:
        self._inner, self._pool, self._origin, self._slot = inner, pool, origin, slot
        self._released = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        """The body chunks of the inner stream."""
        async for chunk in self._inner:
            yield chunk

    async def aclose(self) -> None:
        """Close the body (httpcore keeps the connection only if it was read to the end), then release."""
        try:
            await self._inner.aclose()
        finally:
            if not self._released:
                self._released = True
                await self._pool._release(self._origin, self._slot)


class OriginPoolTransport(httpx.AsyncBaseTransport):
    """Keep-alive connections per (scheme, host, port), each checked out by one request at a time."""

    def __init__(
        self,
        *,
        verify: ssl.SSLContext | bool = True,
        trust_env: bool = True,
        max_idle: int = 64,
        keepalive_expiry: float = 5.0,
    ) -> None:
        # One verifying SSL context for every https connection, built on first use (a run of plain
        # http links never pays for loading the CA bundle). Plain-http slots get a context that
        # trusts no certificate: it is never used, as a slot only serves its own origin's scheme.
        self._verify = verify
        self._trust_env = trust_env
        self._ssl: ssl.SSLContext | None = verify if isinstance(verify, ssl.SSLContext) else None
        self._no_tls: ssl.SSLContext | None = None
        self._limits = httpx.Limits(
            max_connections=1, max_keepalive_connections=1, keepalive_expiry=keepalive_expiry
        )
        self._max_idle = max(0, max_idle)
        self._idle: dict[_Origin, list[httpx.AsyncHTTPTransport]] = {}
        self._idle_order: OrderedDict[httpx.AsyncHTTPTransport, _Origin] = OrderedDict()
        self._open: set[httpx.AsyncHTTPTransport] = set()
        self._closed = False

    @property
    def idle_connections(self) -> int:
        """How many connections wait idle for reuse."""
        return len(self._idle_order)

    def _context(self, scheme: bytes) -> ssl.SSLContext:
        if scheme == b"https":
            if self._ssl is None:
                self._ssl = (
                    verified_ssl_context(self._trust_env)
                    if self._verify is True
                    else httpx.create_ssl_context(verify=False)
                )
            return self._ssl
        if self._no_tls is None:
            self._no_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies, with no CA: trusts nothing
        return self._no_tls

    def _checkout(self, origin: _Origin) -> httpx.AsyncHTTPTransport:
        stack = self._idle.get(origin)
        if stack:
            slot = stack.pop()  # most recently used first: the likeliest to be still alive
            del self._idle_order[slot]
            return slot
        slot = httpx.AsyncHTTPTransport(verify=self._context(origin[0]), trust_env=False, limits=self._limits)
        self._open.add(slot)
        return slot

    async def _release(self, origin: _Origin, slot: httpx.AsyncHTTPTransport) -> None:
        if self._closed or self._max_idle == 0:
            await self._discard(slot)
            return
        self._idle.setdefault(origin, []).append(slot)
        self._idle_order[slot] = origin
        while len(self._idle_order) > self._max_idle:
            oldest, where = self._idle_order.popitem(last=False)
            self._idle[where].remove(oldest)
            await self._discard(oldest)

    async def _discard(self, slot: httpx.AsyncHTTPTransport) -> None:
        self._open.discard(slot)
        await slot.aclose()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send the request on an idle connection to its origin, or on a new one."""
        if self._closed:
            raise RuntimeError("the transport is closed")
        origin: _Origin = (request.url.raw_scheme, request.url.raw_host, request.url.port)
        slot = self._checkout(origin)
        try:
            response = await slot.handle_async_request(request)
        except BaseException:
            # The one-connection pool already dropped a broken connection; the slot itself is reusable.
            await self._release(origin, slot)
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _ReleasingStream(response.stream, self, origin, slot)
        return response

    async def aclose(self) -> None:
        """Close every connection, idle or still in use."""
        self._closed = True
        slots = list(self._open)
        self._open.clear()
        self._idle.clear()
        self._idle_order.clear()
        for slot in slots:
            await slot.aclose()
