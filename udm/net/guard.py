"""The SSRF guard: which network addresses a fetch may connect to, decided after DNS resolution.

A URL's host is resolved, and every address it resolves to must be public (not loopback, private,
link-local, cloud metadata, multicast, reserved or unspecified) unless the host name, the address
or a CIDR range containing it is allow-listed (`settings.fetch_allow`). The caller then connects
to the vetted address itself, so a second DNS answer (rebinding) can never swap in another one.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import SplitResult, urljoin, urlsplit

from udm.errors import BlockedAddressError, InvalidURLError

__all__ = ["AllowList", "VettedAddress", "classify", "join_url", "resolve_and_vet", "split_url", "url_port"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Addresses that answer cloud-instance metadata requests; refused even though some are "private".
_METADATA = {
    ipaddress.ip_address("169.254.169.254"),
    ipaddress.ip_address("169.254.170.2"),
    ipaddress.ip_address("100.100.100.200"),
    ipaddress.ip_address("fd00:ec2::254"),
}
_SHARED_SPACE = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT, not routable publicly


def url_port(parts: SplitResult) -> int:
    """The port a URL connects to (its own, else the scheme's default); InvalidURLError when malformed."""
    try:
        port = parts.port
    except ValueError as exc:
        # urllib says "Port out of range 0-65535" without the URL; name it for the person reading.
        raise InvalidURLError(f"invalid port in URL '{parts.geturl()}': {exc}") from exc
    return port or (443 if parts.scheme == "https" else 80)


# Characters no URL may carry unescaped: controls and Unicode line separators (urlsplit quietly
# drops some, a browser or a server others, so each would read its own URL); in the host, spaces too.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_HOST_SPACE = re.compile(r"[\s\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff]")
_BRACKETED = re.compile(r"\[([^\[\]]*)\](?::[0-9]*)?")


def _shown(url: str) -> str:
    return repr(url if len(url) <= 200 else url[:200] + "...")


def split_url(
    url: str, *, schemes: Iterable[str] | None = ("http", "https"), what: str = "URL"
) -> SplitResult:
    """The parts of a well-formed URL; InvalidURLError naming the URL otherwise.

    The one parse of a URL from a user, a page, a manual or a server: `urlsplit` raises ValueError
    on unbalanced or non-IPv6 brackets (`http://[::1`), `.port` on a port that is not a number in
    0-65535; here each is an InvalidURLError that names the URL. With `schemes` (default http and
    https) the scheme must be one of them and the URL must name a host.
    """
    if not isinstance(url, str):
        raise InvalidURLError(f"invalid {what}: expected text, got {type(url).__name__}")
    bad = _CONTROL.search(url)
    if bad is not None:
        raise InvalidURLError(
            f"invalid {what} {_shown(url)}: it contains {bad.group(0)!r} at position {bad.start() + 1} "
            "(control characters must be percent-encoded)"
        )
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise InvalidURLError(f"invalid {what} {_shown(url)}: {exc}") from exc
    space = _HOST_SPACE.search(parts.netloc)
    if space is not None:
        raise InvalidURLError(f"invalid {what} {_shown(url)}: its host contains {space.group(0)!r}")
    if schemes is not None:
        allowed = tuple(s.lower() for s in schemes)
        if parts.scheme.lower() not in allowed:
            raise InvalidURLError(
                f"invalid {what} {_shown(url)}: expected an absolute {' or '.join(allowed)} URL"
            )
        if not parts.hostname:
            raise InvalidURLError(f"invalid {what} {_shown(url)}: it names no host")
    host_port = parts.netloc.rpartition("@")[2]
    if "[" in host_port or "]" in host_port:
        m = _BRACKETED.fullmatch(host_port)
        literal = m.group(1) if m else ""
        try:
            ipaddress.IPv6Address(literal)
        except ValueError:
            raise InvalidURLError(
                f"invalid {what} {_shown(url)}: a host in brackets must be an IPv6 address "
                "(then nothing but ':port')"
            ) from None
    url_port(parts)
    return parts


def join_url(base: str, reference: str, *, what: str = "redirect target") -> str:
    """`reference` (a Location header, a link) resolved against `base`; InvalidURLError when malformed."""
    try:
        joined = urljoin(base, reference)
    except ValueError as exc:
        raise InvalidURLError(f"invalid {what} {_shown(reference)}: {exc}") from exc
    split_url(joined, schemes=None, what=what)
    return joined


def classify(addr: IPAddress) -> str | None:
    """Why an address must not be fetched ("loopback", "private" ...), or None when it is public."""
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return classify(addr.ipv4_mapped)
    if addr in _METADATA:
        return "cloud metadata"
    checks = (
        ("unspecified", addr.is_unspecified),
        ("loopback", addr.is_loopback),
        ("link-local", addr.is_link_local),
        ("multicast", addr.is_multicast),
        ("private", addr.is_private),
        ("reserved", addr.is_reserved),
        ("shared address space", isinstance(addr, ipaddress.IPv4Address) and addr in _SHARED_SPACE),
        ("not globally routable", not addr.is_global),
    )
    for reason, hit in checks:
        if hit:
            return reason
    return None


@dataclass(frozen=True)
class AllowList:
    """Host names, addresses and networks exempt from the guard (from `settings.fetch_allow`)."""

    hosts: frozenset[str]
    networks: tuple[IPNetwork, ...]

    @classmethod
    def parse(cls, entries: Iterable[str]) -> AllowList:
        """Split entries into host names and networks (a bare IP becomes a /32 or /128)."""
        hosts: set[str] = set()
        nets: list[IPNetwork] = []
        for raw in entries:
            entry = raw.strip().lower().rstrip(".")
            if not entry:
                continue
            try:
                nets.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                hosts.add(entry)
        return cls(frozenset(hosts), tuple(nets))

    def allows_host(self, host: str) -> bool:
        """Whether the host name itself is allow-listed."""
        return host.lower().rstrip(".") in self.hosts

    def allows_ip(self, addr: IPAddress) -> bool:
        """Whether the address falls in an allow-listed network."""
        return any(addr in net for net in self.networks if net.version == addr.version)


@dataclass(frozen=True)
class VettedAddress:
    """An address a host resolved to that passed the guard: connect to `ip`, never re-resolve."""

    host: str
    ip: str
    family: int


def _resolve(host: str, port: int) -> list[tuple[int, str]]:
    try:
        literal = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        literal = None
    if literal is not None:
        fam = socket.AF_INET6 if literal.version == 6 else socket.AF_INET
        return [(fam, str(literal))]
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise BlockedAddressError(f"cannot resolve host '{host}': {exc}") from exc
    seen: list[tuple[int, str]] = []
    for family, _type, _proto, _canon, sockaddr in infos:
        item = (int(family), str(sockaddr[0]).split("%", 1)[0])
        if item not in seen:
            seen.append(item)
    return seen


def resolve_and_vet(host: str, port: int, allow: AllowList) -> VettedAddress:
    """Resolve `host` and return an address it may be fetched from, or raise BlockedAddressError.

    Every address the name resolves to must pass (unless the name is allow-listed): a name that
    resolves to one public and one private address is refused, as an attacker controls both.
    """
    if not host:
        raise BlockedAddressError("the URL has no host")
    addresses = _resolve(host, port)
    if not addresses:
        raise BlockedAddressError(f"host '{host}' resolved to no address")
    host_allowed = allow.allows_host(host)
    for _family, ip in addresses:
        addr = ipaddress.ip_address(ip)
        reason = classify(addr)
        if reason and not host_allowed and not allow.allows_ip(addr):
            raise BlockedAddressError(
                f"refused to fetch from {host} ({ip}): {reason} address; allow-list it in UDM_FETCH_ALLOW "
                "if this is intended"
            )
    family, ip = addresses[0]
    return VettedAddress(host=host, ip=ip, family=family)
