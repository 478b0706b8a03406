"""The fetches' conditional-request cache in <state>/fetch-cache: bodies by content hash, entries by URL.

Everything read back is untrusted data: an entry is used only when every field has the expected type,
its hash has the exact form that names a blob, and the blob still hashes to that name.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from udm.config import Settings

if TYPE_CHECKING:
    from udm.net.fetching import FetchedBody

__all__ = ["cache_blob", "cache_load", "cache_store"]


def _cache_dir(settings: Settings) -> Path:
    return settings.state_path / "fetch-cache"


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


_HASH = re.compile(r"sha256:[0-9a-f]{64}")


def cache_load(settings: Settings, url: str) -> dict[str, Any] | None:
    """The cached entry of `url`, checked as untrusted data: None (a miss) when anything is off."""
    meta_path = _cache_dir(settings) / "urls" / (hashlib.sha256(url.encode()).hexdigest() + ".json")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("url") != url:
        return None
    content_hash = meta.get("content_hash")
    # The hash names the blob file: anything but the exact form could name a path outside the cache.
    if not isinstance(content_hash, str) or not _HASH.fullmatch(content_hash):
        return None
    for key in ("final_url", "content_type", "etag", "last_modified"):
        if meta.get(key) is not None and not isinstance(meta[key], str):
            return None
    redirects = meta.get("redirects") or []
    if not isinstance(redirects, list) or not all(isinstance(r, str) for r in redirects):
        return None
    # The body must still be there and still be what its name says; else the entry is a miss.
    return meta if cache_blob(settings, content_hash) is not None else None


def cache_blob(settings: Settings, content_hash: str) -> bytes | None:
    """The cached body with this hash, or None when the blob is gone or does not match its hash."""
    try:
        data = (_cache_dir(settings) / "blobs" / content_hash.removeprefix("sha256:")).read_bytes()
    except OSError:
        return None
    return data if "sha256:" + hashlib.sha256(data).hexdigest() == content_hash else None


def cache_store(settings: Settings, body: FetchedBody) -> None:
    """Keep a body and its validators (ETag, Last-Modified) for the next conditional request."""
    root = _cache_dir(settings)
    blob = root / "blobs" / body.content_hash.removeprefix("sha256:")
    if not blob.exists():
        _atomic_write(blob, body.content)
    meta = {
        "url": body.url,
        "final_url": body.final_url,
        "content_type": body.content_type,
        "content_hash": body.content_hash,
        "etag": body.etag,
        "last_modified": body.last_modified,
        "fetched_at": body.fetched_at,
        "redirects": body.redirects,
    }
    name = hashlib.sha256(body.url.encode()).hexdigest() + ".json"
    _atomic_write(root / "urls" / name, json.dumps(meta, indent=1).encode())
