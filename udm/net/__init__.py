"""The network edge: SSRF guard, pooled HTTP transports, guarded fetching, API clients, the parse pool.

The names in `__all__` are the package's public surface: code outside the package imports them from
here. They load on first use, so importing the package stays cheap for the CLI's fast paths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from udm._lazy import load_surface_name

if TYPE_CHECKING:
    from udm.net.api_clients import api_client as api_client
    from udm.net.api_clients import close_api_clients as close_api_clients
    from udm.net.fetching import FetchError as FetchError
    from udm.net.fetching import clear_fetch_state as clear_fetch_state
    from udm.net.fetching import fetch_url as fetch_url
    from udm.net.fetching import parse_retry_after as parse_retry_after
    from udm.net.guard import AllowList as AllowList
    from udm.net.guard import VettedAddress as VettedAddress
    from udm.net.guard import join_url as join_url
    from udm.net.guard import resolve_and_vet as resolve_and_vet
    from udm.net.guard import split_url as split_url
    from udm.net.guard import url_port as url_port
    from udm.net.httppool import OriginPoolTransport as OriginPoolTransport
    from udm.net.httppool import verified_ssl_context as verified_ssl_context
    from udm.net.parsing_pool import parse_pool as parse_pool
    from udm.net.parsing_pool import run_parser as run_parser
    from udm.net.parsing_pool import workers_for as workers_for

_SURFACE = {
    "AllowList": "guard",
    "FetchError": "fetching",
    "OriginPoolTransport": "httppool",
    "VettedAddress": "guard",
    "api_client": "api_clients",
    "clear_fetch_state": "fetching",
    "close_api_clients": "api_clients",
    "fetch_url": "fetching",
    "join_url": "guard",
    "parse_pool": "parsing_pool",
    "parse_retry_after": "fetching",
    "resolve_and_vet": "guard",
    "run_parser": "parsing_pool",
    "split_url": "guard",
    "url_port": "guard",
    "verified_ssl_context": "httppool",
    "workers_for": "parsing_pool",
}

__all__ = [
    "AllowList",
    "FetchError",
    "OriginPoolTransport",
    "VettedAddress",
    "api_client",
    "clear_fetch_state",
    "close_api_clients",
    "fetch_url",
    "join_url",
    "parse_pool",
    "parse_retry_after",
    "resolve_and_vet",
    "run_parser",
    "split_url",
    "url_port",
    "verified_ssl_context",
    "workers_for",
]


def __getattr__(name: str) -> object:
    """A surface name, imported from its module on first use."""
    return load_surface_name(__name__, _SURFACE, name)
