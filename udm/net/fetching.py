"""Polite, guarded HTTP fetching: SSRF guard at connect time, robots.txt, per-host limits, capped
streaming, manual redirects and a content-addressed conditional-request cache in <state>/fetch-cache.

Every TCP connection goes through `GuardedBackend.connect_tcp`, which resolves the host, vets every
address with `udm.net.guard` and connects to the vetted IP: the check and the connection use the same
address, so DNS rebinding cannot swap it, and a refused address is never connected to. Redirects
are followed here, hop by hop, so each hop's scheme and robots.txt are checked too.
"""

from __future__ import annotations

import email.utils
import hashlib
import threading
import time
import urllib.robotparser
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpcore
import httpx

from udm.config import Settings
from udm.errors import BlockedAddressError, InvalidURLError, UdmError
from udm.net.fetch_cache import cache_blob, cache_load, cache_store
from udm.net.guard import AllowList, join_url, resolve_and_vet, split_url, url_port

__all__ = [
    "CHUNK_BYTES",
    "FetchError",
    "FetchedBody",
    "GuardedBackend",
    "clear_fetch_state",
    "fetch_url",
    "guarded_client",
    "parse_retry_after",
]

CHUNK_BYTES = 64 * 1024
ROBOTS_TTL_S = 3600.0
ROBOTS_MAX_BYTES = 512 * 1024


class FetchError(UdmError):
    """A fetch that failed; `transient` says whether retrying may help."""

    def __init__(
        self,
        message: str,
        *,
        transient: bool = False,
        retry_after: float | None = None,
        status_code: int | None = None,
        url: str | None = None,
    ) -> None:
        super().__init__(message)
        self.transient = transient
        self.retry_after = retry_after
        self.status_code = status_code
        self.url = url


@dataclass
class FetchedBody:
    """A fetched response body (at most the cap) and what is known about it."""

    url: str
    final_url: str
    status_code: int
    content_type: str
    content: bytes
    truncated: bool
    declared_length: int | None
    fetched_at: str
    content_hash: str
    from_cache: bool = False
    redirects: list[str] = field(default_factory=list)
    etag: str | None = None
    last_modified: str | None = None


class GuardedBackend(httpcore.NetworkBackend):
    """An httpcore network backend that vets each address before connecting, and connects to it."""

    def __init__(self, allow: AllowList) -> None:
        self._allow = allow
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        """Resolve and vet `host`, then connect to the vetted IP (never to a second resolution)."""
        vetted = resolve_and_vet(host, port, self._allow)
        return self._inner.connect_tcp(vetted.ip, port, timeout, local_address, socket_options)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.NetworkStream:
        """Unix sockets are never used for fetches."""
        raise BlockedAddressError("unix sockets are not fetchable")

    def sleep(self, seconds: float) -> None:
        """Delegate to the standard backend."""
        self._inner.sleep(seconds)


class _GuardedTransport(httpx.HTTPTransport):
    """httpx's transport with its connection pool rebuilt over the guarded backend."""

    def __init__(self, allow: AllowList, max_connections: int) -> None:
        super().__init__(trust_env=False)
        # httpx builds its pool in __init__ with no hook for the network backend; replacing the pool
        # is the one supported-by-construction way to route every connect through the guard.
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=max_connections,
            max_keepalive_connections=max_connections,
            keepalive_expiry=5.0,
            network_backend=GuardedBackend(allow),
        )


_CLIENTS: dict[tuple[Any, ...], httpx.Client] = {}
_CLIENTS_LOCK = threading.Lock()


def guarded_client(settings: Settings) -> httpx.Client:
    """A process-wide httpx client for these settings whose every connection passes the SSRF guard."""
    key = (tuple(settings.fetch_allow), settings.fetch_timeout_s, settings.fetch_user_agent)
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            t = settings.fetch_timeout_s
            client = httpx.Client(
                transport=_GuardedTransport(AllowList.parse(settings.fetch_allow), max_connections=64),
                timeout=httpx.Timeout(connect=t, read=t, write=t, pool=t),
                follow_redirects=False,
                headers={"User-Agent": settings.fetch_user_agent},
                trust_env=False,
            )
            _CLIENTS[key] = client
        return client


# -- per-host politeness ---------------------------------------------------------------------------


class _HostGate:
    """At most `limit` requests in flight to a host, and request starts at least `delay` apart."""

    def __init__(self, limit: int, delay: float) -> None:
        self._sem = threading.BoundedSemaphore(limit)
        self._delay = delay
        self._lock = threading.Lock()
        self._next = 0.0

    def __enter__(self) -> _HostGate:
        self._sem.acquire()
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self._delay
        if start > now:
            time.sleep(start - now)
        return self

    def __exit__(self, *exc: object) -> None:
        self._sem.release()


_GATES: dict[tuple[str, int, float], _HostGate] = {}
_GATES_LOCK = threading.Lock()


def _gate(host: str, settings: Settings) -> _HostGate:
    key = (host.lower(), settings.fetch_host_concurrency, settings.fetch_host_delay_s)
    with _GATES_LOCK:
        gate = _GATES.get(key)
        if gate is None:
            gate = _GATES[key] = _HostGate(settings.fetch_host_concurrency, settings.fetch_host_delay_s)
        return gate


# -- robots.txt ------------------------------------------------------------------------------------

_ROBOTS: dict[str, tuple[float, urllib.robotparser.RobotFileParser]] = {}
_ROBOTS_LOCK = threading.Lock()


def _robots_for(origin: str, settings: Settings) -> urllib.robotparser.RobotFileParser:
    with _ROBOTS_LOCK:
        cached = _ROBOTS.get(origin)
    if cached and time.monotonic() - cached[0] < ROBOTS_TTL_S:
        return cached[1]
    parser = urllib.robotparser.RobotFileParser()
    client = guarded_client(settings)
    try:
        resp = client.get(origin + "/robots.txt", follow_redirects=True)
    except BlockedAddressError as exc:
        raise FetchError(f"robots.txt of {origin}: {exc}") from exc
    except httpx.HTTPError as exc:
        # RFC 9309: an unreachable robots.txt means "disallow for now" — so the fetch is retried later.
        raise FetchError(f"robots.txt of {origin} unreachable: {_describe(exc)}", transient=True) from exc
    if resp.status_code >= 500:
        raise FetchError(f"robots.txt of {origin} answered HTTP {resp.status_code}", transient=True)
    if resp.status_code >= 400:
        parser.parse([])  # RFC 9309: a 4xx robots.txt means no restrictions (an empty file allows all)
    else:
        parser.parse(resp.content[:ROBOTS_MAX_BYTES].decode("utf-8", "replace").splitlines())
    with _ROBOTS_LOCK:
        _ROBOTS[origin] = (time.monotonic(), parser)
    return parser


def clear_fetch_state() -> None:
    """Forget cached robots.txt files, host gates and clients (tests; settings changes)."""
    with _ROBOTS_LOCK:
        _ROBOTS.clear()
    with _GATES_LOCK:
        _GATES.clear()
    with _CLIENTS_LOCK:
        for client in _CLIENTS.values():
            client.close()
        _CLIENTS.clear()


# -- the fetch -------------------------------------------------------------------------------------


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text != type(exc).__name__ else text


def _decoder(encoding: str) -> Any:
    enc = encoding.strip().lower()
    if enc in ("", "identity"):
        return None
    if enc in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if enc == "deflate":
        return zlib.decompressobj()
    raise FetchError(f"unsupported Content-Encoding '{encoding}'")


def _read_capped(resp: httpx.Response, cap: int, deadline: float) -> tuple[bytes, bool]:
    """Read at most `cap` decoded bytes (+ one chunk in memory), decompressing with a bound."""
    decoder = _decoder(resp.headers.get("content-encoding", ""))
    buf = bytearray()
    for raw in resp.iter_raw(CHUNK_BYTES):
        if time.monotonic() > deadline:
            raise FetchError("the whole fetch took longer than its time limit", transient=True)
        if decoder is None:
            buf += raw
        else:
            # max_length bounds what one compressed chunk may expand to (no decompression bombs).
            data = decoder.decompress(raw, cap + 1 - len(buf))
            buf += data
            while decoder.unconsumed_tail and len(buf) <= cap:
                buf += decoder.decompress(decoder.unconsumed_tail, cap + 1 - len(buf))
        if len(buf) > cap:
            return bytes(buf[:cap]), True
    return bytes(buf), False


def fetch_url(url: str, settings: Settings, max_bytes: int) -> FetchedBody:
    """Fetch `url` politely and safely (see the module docstring); raises FetchError on failure."""
    fetch = _Fetch(
        url=url,
        settings=settings,
        max_bytes=max_bytes,
        deadline=time.monotonic() + settings.fetch_total_timeout_s,
        client=guarded_client(settings),
        allow=AllowList.parse(settings.fetch_allow),
        cached=cache_load(settings, url) if settings.fetch_cache else None,
    )
    current = url
    while True:
        answer = fetch.hop(current)
        if isinstance(answer, FetchedBody):
            return answer
        fetch.redirects.append(answer)
        if len(fetch.redirects) > settings.fetch_max_redirects:
            raise FetchError(f"more than {settings.fetch_max_redirects} redirects starting at {url}", url=url)
        current = answer


@dataclass
class _Fetch:
    """One fetch under way: the URL asked for, its limits, the cached copy it may revalidate, its hops."""

    url: str
    settings: Settings
    max_bytes: int
    deadline: float
    client: httpx.Client
    allow: AllowList
    cached: dict[str, Any] | None
    redirects: list[str] = field(default_factory=list)

    def hop(self, current: str) -> FetchedBody | str:
        """Fetch one URL of the chain: the body, or the URL it redirects to."""
        settings = self.settings
        hostname = self._vet(current)
        headers = {"Accept-Encoding": "gzip, deflate"}
        if self.cached and not self.redirects:
            if self.cached.get("etag"):
                headers["If-None-Match"] = self.cached["etag"]
            if self.cached.get("last_modified"):
                headers["If-Modified-Since"] = self.cached["last_modified"]
        with _gate(hostname, settings):
            try:
                with self.client.stream("GET", current, headers=headers) as resp:
                    return self._answer(resp, current)
            except BlockedAddressError as exc:
                raise FetchError(str(exc), url=current) from exc
            except httpx.TimeoutException as exc:
                raise FetchError(
                    f"timed out fetching {current} (limit {settings.fetch_timeout_s:g}s): {_describe(exc)}",
                    transient=True,
                    url=current,
                ) from exc
            except httpx.HTTPError as exc:
                raise FetchError(
                    f"could not fetch {current}: {_describe(exc)}", transient=True, url=current
                ) from exc

    def _vet(self, current: str) -> str:
        """The hop's host, once its URL, scheme, address and robots.txt allow fetching it."""
        try:
            parts = split_url(current, schemes=None)
        except InvalidURLError as exc:
            raise FetchError(str(exc), url=current) from exc
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise FetchError(
                f"refusing to fetch '{current}': only http and https URLs are fetched", url=current
            )
        origin = f"{parts.scheme}://{parts.netloc}"
        try:
            # Checked here for a clear error before robots.txt; the transport checks again at connect.
            resolve_and_vet(parts.hostname, url_port(parts), self.allow)
        except BlockedAddressError as exc:
            raise FetchError(str(exc), url=current) from exc
        if self.settings.fetch_respect_robots:
            robots = _robots_for(origin, self.settings)
            if not robots.can_fetch(self.settings.fetch_user_agent, current):
                raise FetchError(f"disallowed by robots.txt: {parts.path or '/'} on {origin}", url=current)
        return parts.hostname

    def _answer(self, resp: httpx.Response, current: str) -> FetchedBody | str:
        """What one response means: a redirect's target, the cached copy (304), an error, or the body."""
        status = resp.status_code
        if status in (301, 302, 303, 307, 308) and "location" in resp.headers:
            try:
                return join_url(current, resp.headers["location"])
            except InvalidURLError as exc:
                raise FetchError(f"{current} redirected to a malformed URL: {exc}", url=current) from exc
        if status == 304 and self.cached:
            return self._from_cache(self.cached, current)
        if status == 429 or status >= 500 or status == 408:
            raise FetchError(
                f"HTTP {status} from {current}",
                transient=True,
                retry_after=parse_retry_after(resp.headers.get("retry-after")),
                status_code=status,
                url=current,
            )
        if status >= 400:
            raise FetchError(f"HTTP {status} from {current}", status_code=status, url=current)
        return self._body(resp, current)

    def _from_cache(self, cached: dict[str, Any], current: str) -> FetchedBody:
        """The cached copy the server said is still current (304 Not Modified)."""
        content = cache_blob(self.settings, cached["content_hash"])
        if content is None:
            raise FetchError(
                f"the cached copy of {self.url} changed during the fetch; fetch it again",
                transient=True,
                url=self.url,
            )
        return FetchedBody(
            url=self.url,
            final_url=cached.get("final_url") or current,
            status_code=200,
            content_type=cached.get("content_type") or "",
            content=content[: self.max_bytes],
            truncated=len(content) > self.max_bytes,
            declared_length=len(content),
            fetched_at=datetime.now(UTC).isoformat(timespec="seconds"),
            content_hash=cached["content_hash"],
            from_cache=True,
            redirects=list(cached.get("redirects") or []),
            etag=cached.get("etag"),
            last_modified=cached.get("last_modified"),
        )

    def _body(self, resp: httpx.Response, current: str) -> FetchedBody:
        """A fresh body, read up to the cap (and cached when the server gave a validator)."""
        declared = resp.headers.get("content-length")
        content, truncated = _read_capped(resp, self.max_bytes, self.deadline)
        body = FetchedBody(
            url=self.url,
            final_url=current,
            status_code=resp.status_code,
            content_type=resp.headers.get("content-type", ""),
            content=content,
            truncated=truncated,
            declared_length=int(declared) if declared and declared.isdigit() else None,
            fetched_at=datetime.now(UTC).isoformat(timespec="seconds"),
            content_hash="sha256:" + hashlib.sha256(content).hexdigest(),
            redirects=self.redirects,
            etag=resp.headers.get("etag"),
            last_modified=resp.headers.get("last-modified"),
        )
        if self.settings.fetch_cache and not truncated and (body.etag or body.last_modified):
            cache_store(self.settings, body)
        return body
