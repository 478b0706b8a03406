"""What a browser action may target, and how it fails: ActionError, the URLs and files it may open,
selectors, timeouts, and the paths of the screenshots it keeps.

`normalize_url` and `require_allowed` are the checks every navigation and file upload goes through: an
http(s) URL must parse, a file: URL must resolve inside the allowed directories (never into the engine's
state or a git folder). `tasks.browser.session` re-exports these names.
"""

from __future__ import annotations

import itertools
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import unquote

from udm.config import Settings
from udm.errors import InvalidURLError, ToolStatusError
from udm.guard import in_git_folder
from udm.net import split_url

__all__ = [
    "ActionError",
    "artifact_path",
    "normalize_url",
    "pw_selector",
    "require_allowed",
    "resolve_timeout_s",
    "timeout_message",
]


class ActionError(ToolStatusError):
    """An expected failure of a browser action, carried as a status and a readable message."""

    def __init__(self, status: str, message: str, transient: bool = False) -> None:
        super().__init__(status, message, transient=transient)


def normalize_url(url: str, settings: Settings | None = None) -> str:
    """A URL the browser may open: no scheme gets https://; other schemes are checked (ActionError)."""
    text = url.strip()
    match = _SCHEME.match(text)
    if match is None or _PORT.match(text[match.end() :]):
        # 'example.com/x' or 'localhost:8000/x': a host, not a scheme.
        _check_web_url("https://" + text)
        return "https://" + text
    scheme = match.group(1).lower()
    if scheme in {"http", "https"}:
        _check_web_url(text)
        return text
    if scheme == "data":
        return text
    if scheme == "about" and text.lower() == "about:blank":
        return "about:blank"
    if scheme == "file":
        _check_file_url(text, settings)
        return text
    raise ActionError(
        "ERROR_INVALID_INPUT",
        f"URL scheme '{scheme}:' is not allowed (use http, https, data, about:blank, "
        "or file: inside the allowed directories)",
    )


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
_PORT = re.compile(r"^\d+(?:[/?#]|$)")


def _check_web_url(url: str) -> None:
    """Refuse (ERROR_INVALID_INPUT, naming it) an http(s) URL that does not parse: `http://[::1`, a bad port."""
    try:
        split_url(url)
    except InvalidURLError as exc:
        raise ActionError("ERROR_INVALID_INPUT", str(exc)) from exc


def _check_file_url(url: str, settings: Settings | None) -> None:
    """Refuse a file: URL whose resolved path is outside the allowed directories (links included)."""
    try:
        parts = split_url(url, schemes=None)
    except InvalidURLError as exc:
        raise ActionError("ERROR_INVALID_INPUT", str(exc)) from exc
    if parts.netloc not in {"", "localhost"}:
        raise ActionError("ERROR_INVALID_INPUT", f"file: URL '{url}' names a remote host '{parts.netloc}'")
    path = unquote(parts.path)
    # Chromium reads '\' as '/' and 'file:etc/x' as '/etc/x', where Python sees other paths: only an
    # absolute path without backslashes means the same file to both.
    if not url.lower().startswith(("file:///", "file://localhost/")) or "\\" in path or "\\" in url:
        raise ActionError(
            "ERROR_INVALID_INPUT",
            f"file: URL '{url}' must be absolute (file:///path) and use '/' only",
        )
    try:
        real = Path(os.path.realpath(path))
    except (ValueError, OSError) as exc:
        raise ActionError("ERROR_INVALID_INPUT", f"file: URL '{url}' is not a valid path: {exc}") from exc
    require_allowed(real, settings, f"file: URL '{url}'")


def require_allowed(real: Path, settings: Settings | None, what: str) -> None:
    """Refuse (ERROR_PATH_NOT_ALLOWED) a real path outside the allowed directories; `what` names it."""
    roots = [Path(os.path.realpath(r)) for r in settings.allowed_roots()] if settings else []
    if not any(real == r or real.is_relative_to(r) for r in roots):
        allowed = ", ".join(str(r) for r in roots) or "none configured"
        raise ActionError("ERROR_PATH_NOT_ALLOWED", f"{what} is outside the allowed directories ({allowed})")
    # The engine's state stays out of bounds even where it lies inside an allowed directory (#17.3).
    for protected in settings.protected_paths() if settings else []:
        inside = Path(os.path.realpath(protected))
        if real == inside or real.is_relative_to(inside):
            raise ActionError(
                "ERROR_PATH_NOT_ALLOWED", f"{what} lies in {protected}, a folder of the engine's own state"
            )
    if in_git_folder(real, roots):
        # A repository's config may hold credentials (a token in a remote URL); the file tool refuses it too.
        raise ActionError("ERROR_PATH_NOT_ALLOWED", f"{what} lies in a git folder (.git)")


def pw_selector(value: str, selector_type: str = "css") -> str:
    """A Playwright selector from a CSS or XPath expression (an `xpath=`/`css=` prefix wins)."""
    text = value.strip()
    if text.startswith(("xpath=", "css=", "text=", "role=")):
        return text
    if selector_type == "xpath":
        return "xpath=" + text
    return text


def resolve_timeout_s(settings: Settings, timeout_ms: float | None = None) -> float:
    """The timeout of one action in seconds: the caller's, else the setting, capped by the maximum."""
    wanted = settings.browser_timeout_s if timeout_ms is None else timeout_ms / 1000.0
    return max(0.001, min(wanted, settings.browser_max_timeout_s))


def timeout_message(seconds: float, waiting_for: str) -> str:
    """The readable sentence for a timeout: 'Timed out after 10 s waiting for selector 'x''."""
    return f"Timed out after {seconds:g} s waiting for {waiting_for}"


def artifact_path(settings: Settings, kind: str, session_id: str, ext: str) -> Path:
    """A fresh file path under <state>/<kind>/ for a screenshot, image or diff."""
    folder = settings.state_path / kind
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S-%f")
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in session_id)[:60]
    return folder / f"{safe}-{stamp}-{next(_SEQ)}.{ext}"


_SEQ = itertools.count(1)
