"""API keys for the research tools: from settings/environment, else a Prefect Secret block; never shown.

Order: the setting (`UDM_BRAVE_API_KEY`, `UDM_GOOGLE_API_KEY`, `UDM_CONTEXT7_API_KEY`,
`UDM_OPENAI_API_KEY`, `UDM_ANTHROPIC_API_KEY`), then the provider's conventional environment variable
(`BRAVE_API_KEY`, `OPENAI_API_KEY`, `ANTHROPIC_API_KEY` ...), then — only when
`UDM_SECRETS_FROM_PREFECT=true` — the Prefect Secret block `udm-<name>-api-key` (Prefect is imported
lazily, so tools stay importable without it). `redact` removes every known key from a text before it
reaches an error message, a log line or an artifact.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from pydantic import SecretStr

from udm.config import Settings

__all__ = ["api_key", "redact"]

_ENV_NAMES = {
    "brave": "BRAVE_API_KEY",
    "google": "GOOGLE_API_KEY",
    "context7": "CONTEXT7_API_KEY",
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
}
_SEEN: set[str] = set()
_SEEN_LOCK = threading.Lock()


def _remember(value: str) -> str:
    if len(value) >= 4:
        with _SEEN_LOCK:
            _SEEN.add(value)
    return value


def api_key(settings: Settings, name: str) -> str | None:
    """The API key for provider `name` (brave, google, context7, openai, anthropic), or None when none is configured."""
    configured = getattr(settings, f"{name}_api_key", None)
    if isinstance(configured, SecretStr) and configured.get_secret_value():
        return _remember(configured.get_secret_value())
    env = os.environ.get(_ENV_NAMES.get(name, ""), "")
    if env:
        return _remember(env)
    if getattr(settings, "secrets_from_prefect", False):
        try:
            from prefect.blocks.system import Secret

            block: Any = Secret.load(f"udm-{name}-api-key")  # sync context: a block, not a coroutine
            value = block.get()
        except Exception:  # no block, no server: the same as no key configured
            return None
        return _remember(str(value)) if value else None
    return None


def redact(text: str) -> str:
    """`text` with every API key this process has handed out replaced by ***."""
    with _SEEN_LOCK:
        secrets = sorted(_SEEN, key=len, reverse=True)
    for secret in secrets:
        text = text.replace(secret, "***")
    return text
