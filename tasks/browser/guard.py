"""The browser's SSRF guard: every request a page makes passes `udm.net.guard` with the fetch allow-list.

Two layers share one allow-list (`settings.fetch_allow`, the one `documentFetchingParsingTool` uses):

- Playwright routing on the context (`context.route`, `context.route_web_socket`) sees navigations,
  subresources, popups, downloads and page WebSockets before Chromium connects; a refused one is
  aborted and the reason is recorded, so the tool that caused it reports `ERROR_URL_BLOCKED`. The
  verification runner also skips there what a check does not need (`ResourcePolicy`).
- Each context reaches the network only through its own guard proxy on 127.0.0.1 (Playwright's
  per-context `proxy`, loopback included). The proxy resolves and vets the host again and connects
  to the vetted address itself. It catches what routing never sees (redirect hops, which Playwright
  does not route; service-worker and worker fetches and sockets) and closes DNS rebinding: Chromium
  never resolves a name of its own, so the address checked is the address connected to.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Route, WebSocketRoute

from udm.errors import BlockedAddressError, InvalidURLError
from udm.guard import in_git_folder
from udm.net import AllowList, VettedAddress, resolve_and_vet, url_port

__all__ = ["Guard", "Refusal", "ResourcePolicy", "first_refusal"]

# How long the routing layer trusts an earlier verdict on a host; the proxy never caches (it connects
# to what it vetted), so a cached verdict can only refuse early, never let a connection through.
_VERDICT_TTL_S = 10.0
_HEAD_LIMIT = 64 * 1024
_IDLE_S = 60.0
_HOP_HEADERS = {b"connection", b"keep-alive", b"proxy-connection", b"proxy-authorization"}


@dataclass(frozen=True)
class Refusal:
    """A request the guard refused: what, why, and whether it was a tab's own (main-frame) navigation."""

    url: str
    reason: str
    navigation: bool = False
    # "route" (Playwright routing), "websocket" or "proxy" (a connection: a redirect hop, a worker's
    # request, a download, or anything routing did not see).
    layer: str = "route"

    @property
    def message(self) -> str:
        """The sentence a tool reports."""
        return f"refused {self.url}: {self.reason}"


@dataclass(frozen=True)
class ResourcePolicy:
    """What a verification check does not need: resource types, and subresources from other hosts."""

    block_types: frozenset[str] = frozenset()
    # None: any host; otherwise the hosts besides the page's own that its subresources may come from.
    # Navigations are never skipped (the guard alone decides where a tab may go).
    hosts: frozenset[str] | None = None

    def skips(self, resource_type: str, host: str, page_host: str | None, navigation: bool) -> bool:
        """Whether a request of this type to `host`, made by a page on `page_host`, is left out."""
        if navigation:
            return False
        if resource_type in self.block_types:
            return True
        if self.hosts is None or page_host is None:
            return False
        host = host.lower()
        return host != page_host.lower() and host not in self.hosts


@dataclass
class Guard:
    """One context's guard: its allow-list, its proxy, and what it refused or skipped."""

    allow: AllowList
    # Real paths of the allowed directories: a file: request elsewhere (an <img> or <iframe> of a
    # local page pointing at /etc/...) is refused like a private address.
    file_roots: tuple[str, ...] = ()
    # ... and the engine's own state inside them, refused all the same (#17.3).
    file_protected: tuple[str, ...] = ()
    refusals: list[Refusal] = field(default_factory=list)
    policy: ResourcePolicy | None = None
    skipped: int = 0
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _verdicts: dict[tuple[str, int, AllowList], tuple[float, str | None]] = field(default_factory=dict)

    @property
    def proxy_url(self) -> str:
        """The proxy's URL (after `start`)."""
        if self._server is None:
            raise RuntimeError("the guard proxy is not running")
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def start(self) -> str:
        """Start the proxy on a free loopback port; its URL."""
        if self._server is None:
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=_HEAD_LIMIT)
        return self.proxy_url

    async def close(self) -> None:
        """Stop the proxy and every connection it carries."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._tasks):
            task.cancel()

    def set_allow(
        self, entries: Iterable[str], file_roots: Iterable[str] = (), file_protected: Iterable[str] = ()
    ) -> None:
        """Use this allow-list and these allowed directories from now on (the latest call's settings)."""
        allow = AllowList.parse(entries)
        if allow != self.allow:
            self.allow = allow
            self._verdicts.clear()
        self.file_roots = tuple(os.path.realpath(r) for r in file_roots)
        self.file_protected = tuple(os.path.realpath(r) for r in file_protected)

    def file_verdict(self, url: str) -> str | None:
        """Why a file: request is refused (None: inside an allowed directory)."""
        parts = urlsplit(url)
        try:
            real = os.path.realpath(unquote(parts.path))
        except (ValueError, OSError) as exc:
            return f"not a usable file path: {exc}"
        if parts.netloc not in ("", "localhost") or not any(_within(real, r) for r in self.file_roots):
            return "file: URL outside the allowed directories"
        if any(_within(real, r) for r in self.file_protected):
            return "file: URL inside the engine's own state"
        if in_git_folder(real, self.file_roots):
            return "file: URL inside a git folder (.git)"
        return None

    def mark(self) -> int:
        """A position in the refusal list, to ask later what was refused since."""
        return len(self.refusals)

    def since(self, mark: int) -> list[Refusal]:
        """Refusals recorded after `mark`."""
        return self.refusals[mark:]

    # -- vetting -----------------------------------------------------------------------------------

    async def vet(self, host: str, port: int) -> VettedAddress:
        """Resolve and vet a host (BlockedAddressError when refused); names resolve off the loop."""
        if _is_literal(host):
            return resolve_and_vet(host, port, self.allow)
        return await asyncio.to_thread(resolve_and_vet, host, port, self.allow)

    async def verdict(self, url: str) -> str | None:
        """Why the routing layer refuses `url` (None: it may go on to the proxy)."""
        parts = urlsplit(url)
        try:
            port = url_port(parts)
        except InvalidURLError as exc:
            return str(exc)
        host = parts.hostname or ""
        key = (host, port, self.allow)
        cached = self._verdicts.get(key)
        now = time.monotonic()
        if cached is not None and cached[0] > now:
            return cached[1]
        try:
            await self.vet(host, port)
            reason = None
        except BlockedAddressError as exc:
            reason = str(exc)
        self._verdicts[key] = (now + _VERDICT_TTL_S, reason)
        return reason

    # -- routing -----------------------------------------------------------------------------------

    async def on_route(self, route: Route) -> None:
        """Context route handler: refuse what the guard refuses, skip what the policy leaves out."""
        request = route.request
        url = request.url
        scheme = url.split(":", 1)[0].lower()
        with contextlib.suppress(PlaywrightError):
            navigation = request.is_navigation_request()
            if scheme == "file":
                reason = self.file_verdict(url)
            elif scheme in ("http", "https"):
                reason = await self.verdict(url)
            else:
                # data: and blob: never reach the network.
                await route.continue_()
                return
            if reason is not None:
                self.refusals.append(Refusal(url, reason, navigation=navigation and _main_frame(route)))
                await route.abort("blockedbyclient")
                return
            policy = self.policy
            host = urlsplit(url).hostname or ""
            if policy is not None and policy.skips(
                request.resource_type, host, _page_host(route), navigation
            ):
                self.skipped += 1
                await route.abort("blockedbyclient")
                return
            await route.continue_()

    async def on_websocket(self, ws: WebSocketRoute) -> None:
        """Context WebSocket handler: close a refused socket before it connects, else connect it."""
        reason = await self.verdict(ws.url.replace("ws", "http", 1))
        with contextlib.suppress(PlaywrightError):
            if reason is not None:
                self.refusals.append(Refusal(ws.url, reason, layer="websocket"))
                await ws.close(code=1008, reason="refused by the SSRF guard")
                return
            # The page's own socket then connects, through the proxy, which vets it again.
            ws.connect_to_server()

    # -- the proxy ---------------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await self._handle(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass
        finally:
            if task is not None:
                self._tasks.discard(task)
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _IDLE_S)
        line, _, rest = head.partition(b"\r\n")
        try:
            method, target, version = line.decode("latin-1").split(" ", 2)
            if method == "CONNECT":
                host, port, shown = _authority(target)
            else:
                parts = urlsplit(target)
                if parts.scheme != "http" or not parts.hostname:
                    raise InvalidURLError(f"not an absolute http URL: {target[:200]!r}")
                host, port, shown = parts.hostname, url_port(parts), target
        except (ValueError, InvalidURLError) as exc:
            await _answer(writer, 400, f"bad proxy request: {exc}")
            return
        try:
            vetted = await self.vet(host, port)
        except BlockedAddressError as exc:
            self.refusals.append(Refusal(shown, str(exc), layer="proxy"))
            await _answer(writer, 403, f"refused by the SSRF guard: {exc}")
            return
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(vetted.ip, port, limit=_HEAD_LIMIT), 30
            )
        except (OSError, TimeoutError) as exc:
            if method == "CONNECT":
                await _answer(writer, 502, f"cannot connect to {host}:{port}: {exc}")
            # A plain-HTTP request gets no answer at all: Chromium then reports a network error
            # (net::ERR_EMPTY_RESPONSE), as it would without the proxy, not a page from us.
            return
        try:
            if method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                await writer.drain()
            else:
                parts = urlsplit(target)
                path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
                up_writer.write(f"{method} {path} {version}\r\n".encode("latin-1") + _forward_headers(rest))
                await up_writer.drain()
                # Every response closes its connection, so Chromium never sends a request for another
                # host down a connection this proxy already opened to the first one.
                response_head = await asyncio.wait_for(up_reader.readuntil(b"\r\n\r\n"), _IDLE_S)
                status, _, fields = response_head.partition(b"\r\n")
                writer.write(status + b"\r\n" + _forward_headers(fields))
                await writer.drain()
            # The exchange ends when the server's side does (a closed response, a closed tunnel).
            upstream = asyncio.ensure_future(_pipe(reader, up_writer))
            try:
                await _pipe(up_reader, writer)
            finally:
                upstream.cancel()
        finally:
            up_writer.close()


def _main_frame(route: Route) -> bool:
    """Whether a navigation request is a tab's own document (not an iframe's)."""
    try:
        return route.request.frame.parent_frame is None
    except PlaywrightError:
        # A popup's first navigation is issued before its frame exists: a new tab's own document.
        return True


def _within(real: str, root: str) -> bool:
    return real == root or real.startswith(root.rstrip("/") + "/")


def _page_host(route: Route) -> str | None:
    """The host of the document that made the request (None when unknown: a worker's request)."""
    try:
        return urlsplit(route.request.frame.url).hostname
    except PlaywrightError:
        return None


def _is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _authority(target: str) -> tuple[str, int, str]:
    """Host and port of a CONNECT target ('host:443', '[::1]:443')."""
    if target.startswith("["):
        host, _, port = target[1:].partition("]:")
    else:
        host, _, port = target.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"CONNECT target {target[:200]!r} is not host:port")
    return host, int(port), target


def _forward_headers(block: bytes) -> bytes:
    """Header lines without hop-by-hop fields, plus 'Connection: close', ending the head."""
    kept = [
        ln for ln in block.split(b"\r\n") if ln and ln.split(b":", 1)[0].strip().lower() not in _HOP_HEADERS
    ]
    return b"\r\n".join([*kept, b"Connection: close"]) + b"\r\n\r\n"


async def _answer(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    reasons = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}
    body = text.encode("utf-8", "replace")
    writer.write(
        f"HTTP/1.1 {status} {reasons[status]}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode("latin-1")
        + body
    )
    with contextlib.suppress(OSError):
        await writer.drain()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until EOF, then half-close the other side."""
    with contextlib.suppress(OSError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()


def first_refusal(refusals: list[Refusal]) -> Refusal | None:
    """The refusal that explains a failed action: a tab's navigation, else a refused connection.

    A refused image or script (routing) leaves the action itself working, so it explains nothing.
    """
    for item in refusals:
        if item.navigation:
            return item
    return next((item for item in refusals if item.layer == "proxy"), None)
