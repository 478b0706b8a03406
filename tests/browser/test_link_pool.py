"""The link checker's connection handling against a keep-alive loopback server: reuse, limits, streamed GET, one DNS vetting."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest

import udm.index.links
import udm.net.httppool
from tests.fakes.loopback import QuietServer, loopback_server, start
from udm.config import load_settings
from udm.index import check_links
from udm.net import OriginPoolTransport

from .conftest import external_link

BIG_BODY = 64 * 1024 * 1024
CHUNK = 256 * 1024


class _Stats:
    """What the server saw: connections, requests in flight at once, body bytes sent."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.connections = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.body_sent = 0

    def reset(self) -> None:
        with self.lock:
            self.connections = self.in_flight = self.max_in_flight = self.body_sent = 0


STATS = _Stats()


class KeepAliveHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive: /ok/N (slow enough to overlap), /close, /nohead-big (HEAD refused, huge GET body)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the access log."""

    def setup(self) -> None:
        """Count the connection."""
        super().setup()
        with STATS.lock:
            STATS.connections += 1

    def _route(self) -> None:
        with STATS.lock:
            STATS.in_flight += 1
            STATS.max_in_flight = max(STATS.max_in_flight, STATS.in_flight)
        try:
            if self.path == "/nohead-big":
                return self._big()
            if self.path.startswith("/ok"):
                time.sleep(0.002)  # lets concurrent requests overlap, so the limits are observable
            self.send_response(200)
            self.send_header("Content-Length", "0")
            if self.path == "/close":
                self.send_header("Connection", "close")
            self.end_headers()
        finally:
            with STATS.lock:
                STATS.in_flight -= 1

    def _big(self) -> None:
        if self.command == "HEAD":
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", str(BIG_BODY))
        self.end_headers()
        chunk = b"x" * CHUNK
        try:
            for _ in range(BIG_BODY // CHUNK):
                self.wfile.write(chunk)
                with STATS.lock:
                    STATS.body_sent += CHUNK
        except OSError:
            self.close_connection = True  # the client hung up, as it should

    do_GET = _route
    do_HEAD = _route


@pytest.fixture(scope="module")
def keepalive_server() -> Iterator[str]:
    """Base URL of the keep-alive loopback server."""
    with loopback_server(KeepAliveHandler) as base:
        yield base


def test_pool_reuses_one_connection_for_sequential_requests(keepalive_server: str) -> None:
    async def go() -> tuple[list[int], int]:
        pool = OriginPoolTransport(max_idle=4)
        async with httpx.AsyncClient(transport=pool) as client:
            codes = [(await client.head(f"{keepalive_server}/ok/{i}")).status_code for i in range(30)]
            return codes, pool.idle_connections

    STATS.reset()
    codes, idle = asyncio.run(go())
    assert codes == [200] * 30
    assert STATS.connections == 1 and idle == 1


def test_pool_keeps_at_most_max_idle_and_replaces_closed_connections(keepalive_server: str) -> None:
    async def go() -> tuple[int, int, list[int]]:
        pool = OriginPoolTransport(max_idle=3)
        async with httpx.AsyncClient(transport=pool) as client:
            burst = await asyncio.gather(*(client.head(f"{keepalive_server}/ok/{i}") for i in range(12)))
            idle_after_burst = pool.idle_connections
            # The server closes this one after answering: the next request needs a fresh connection.
            closing = await client.get(f"{keepalive_server}/close")
            idle_after_close = pool.idle_connections
            after = await client.get(f"{keepalive_server}/ok/after")
            return idle_after_burst, idle_after_close, [r.status_code for r in [*burst, closing, after]]

    STATS.reset()
    idle_after_burst, idle_after_close, codes = asyncio.run(go())
    assert codes == [200] * 14
    assert idle_after_burst == 3
    assert idle_after_close == 3  # the closed connection's slot came back empty and is reused
    assert STATS.connections >= 2  # the burst needed parallel connections


def test_pool_refuses_requests_after_close(keepalive_server: str) -> None:
    async def go() -> None:
        pool = OriginPoolTransport()
        async with httpx.AsyncClient(transport=pool) as client:
            assert (await client.head(keepalive_server + "/ok")).status_code == 200
        with pytest.raises(RuntimeError, match="closed"):
            await pool.handle_async_request(httpx.Request("HEAD", keepalive_server + "/ok"))

    asyncio.run(go())


def test_link_check_reuses_connections_within_the_per_host_limit(
    keepalive_server: str, tmp_path: Path
) -> None:
    settings = load_settings(cwd=tmp_path, fetch_allow=["127.0.0.1"])
    links = [external_link(f"{keepalive_server}/ok/{i}", i) for i in range(200)]
    STATS.reset()
    report = check_links(settings, links=links, use_cache=False, per_host=4, concurrency=64)
    assert report.counts == {"ok": 200}
    assert STATS.max_in_flight <= 4
    assert STATS.connections <= 4  # keep-alive: no new connection per link


def test_head_refused_get_fallback_does_not_download_the_body(keepalive_server: str, tmp_path: Path) -> None:
    settings = load_settings(cwd=tmp_path, fetch_allow=["127.0.0.1"])
    STATS.reset()
    report = check_links(settings, links=[external_link(keepalive_server + "/nohead-big")], use_cache=False)
    assert report.results[0].status == "ok" and report.results[0].http_status == 200
    deadline = time.monotonic() + 10
    while STATS.in_flight and time.monotonic() < deadline:
        time.sleep(0.01)  # the server thread notices the hang-up on its next write
    assert STATS.body_sent < BIG_BODY // 4


def test_each_host_is_resolved_and_vetted_once_per_run(
    keepalive_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, int]] = []
    real = udm.index.links.resolve_and_vet

    def counting(host: str, port: int, allow: Any) -> Any:
        calls.append((host, port))
        time.sleep(0.05)  # a slow resolver: every concurrent request would otherwise start its own lookup
        return real(host, port, allow)

    monkeypatch.setattr(udm.index.links, "resolve_and_vet", counting)
    settings = load_settings(cwd=tmp_path, fetch_allow=["127.0.0.1"])
    links = [external_link(f"{keepalive_server}/ok/{i}", i) for i in range(40)]
    report = check_links(settings, links=links, use_cache=False, per_host=8)
    assert report.counts == {"ok": 40}
    assert len(calls) == 1


def _self_signed(tmp: Path) -> tuple[Path, Path]:
    """A certificate for localhost and 127.0.0.1, and its key (PEM files)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp / "cert.pem", tmp / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


def test_https_links_are_verified_with_sni_and_a_shared_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ssl

    cert, key = _self_signed(tmp_path)
    server_names: list[str | None] = []
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)
    server_ctx.sni_callback = lambda _sock, name, _ctx: server_names.append(name)
    server = QuietServer(("127.0.0.1", 0), KeepAliveHandler)
    server.socket = server_ctx.wrap_socket(server.socket, server_side=True)
    start(server)
    url = f"https://localhost:{server.server_address[1]}/ok/tls"
    settings = load_settings(cwd=tmp_path, fetch_allow=["localhost"])
    try:
        untrusted = check_links(settings, links=[external_link(url)], use_cache=False, retries=0)
        assert untrusted.results[0].status == "error"
        assert "CERTIFICATE_VERIFY_FAILED" in (untrusted.results[0].reason or "")
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        trusted = check_links(
            settings, links=[external_link(url), external_link(url + "-2")], use_cache=False, retries=0
        )
        assert trusted.counts == {"ok": 2}
        assert server_names and set(server_names) == {"localhost"}  # SNI names the host, not the vetted IP
    finally:
        server.shutdown()
        server.server_close()


def test_plain_http_never_builds_the_verifying_context(
    keepalive_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(trust_env: bool = True) -> Any:
        raise AssertionError("the CA bundle was loaded for plain http")

    monkeypatch.setattr(udm.net.httppool, "verified_ssl_context", refuse)

    async def go() -> int:
        async with httpx.AsyncClient(transport=OriginPoolTransport()) as client:
            return (await client.head(keepalive_server + "/ok")).status_code

    assert asyncio.run(go()) == 200
