"""One process-wide keep-alive httpx client per timeout and header set, for the JSON APIs (search, Context7)."""

from __future__ import annotations

import threading

import httpx

from udm.config import Settings

__all__ = ["api_client"]

_CLIENTS: dict[tuple[float, tuple[tuple[str, str], ...]], httpx.Client] = {}
_LOCK = threading.Lock()


def api_client(settings: Settings, headers: dict[str, str] | None = None) -> httpx.Client:
    """A shared client with the settings' fetch timeout and user agent, plus `headers` on every request."""
    extra = headers or {}
    # Keyed by timeout and the extra headers only: each caller's client is reused as long as those stay.
    key = (settings.fetch_timeout_s, tuple(sorted(extra.items())))
    with _LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            client = _CLIENTS[key] = httpx.Client(
                timeout=settings.fetch_timeout_s,
                headers={"User-Agent": settings.fetch_user_agent, **extra},
            )
        return client


def close_api_clients() -> None:
    """Close every client of this process; the next `api_client` call opens a fresh one."""
    with _LOCK:
        for client in _CLIENTS.values():
            client.close()
        _CLIENTS.clear()
