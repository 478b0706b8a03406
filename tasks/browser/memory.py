"""Memory tools: session_memory (per session, in memory), history_tracker, persistent_cache (on disk)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar

from filelock import FileLock
from pydantic import BaseModel, Field, model_validator

from tasks.base import Permission, Tool, ToolContext, ToolInput
from tasks.browser.common import SESSION_ID
from tasks.browser.session import MANAGER
from udm.datalimits import DataLimitError, DataLimits, check_json, load_json

__all__ = ["HistoryTrackerTool", "PersistentCacheTool", "SessionMemoryTool", "cache_file"]

_MEMORY_LOCK = threading.Lock()


class KeyValueInput(ToolInput):
    """Input of session_memory and persistent_cache."""

    action: Literal["get", "set", "clear"] = Field(description="get (one key or everything), set, or clear.")
    key: str | None = Field(default=None, min_length=1, max_length=500, description="Key; required for set.")
    value: Any = Field(default=None, description="Any JSON value; required for set.")

    @model_validator(mode="after")
    def _conditional(self) -> KeyValueInput:
        if self.action == "set":
            if self.key is None:
                raise ValueError("key is required when action is 'set'")
            if "value" not in self.model_fields_set:
                raise ValueError("value is required when action is 'set'")
        return self


class SessionMemoryInput(KeyValueInput):
    """Input of session_memory."""

    session_id: str = Field(
        default="default",
        min_length=1,
        max_length=120,
        pattern=SESSION_ID,
        description="Session whose memory to use.",
    )


class KeyValueOutput(BaseModel):
    """Result of a key-value action."""

    status: str = Field(default="SUCCESS", description="SUCCESS or an ERROR_* status.")
    errorDetails: str | None = Field(default=None, description="What went wrong.")
    key: str | None = Field(default=None, description="The key acted on.")
    value: Any = Field(default=None, description="The value read (get with a key).")
    found: bool | None = Field(default=None, description="Whether the key was present (get with a key).")
    entries: dict[str, Any] | None = Field(default=None, description="Everything stored (get without a key).")
    count: int = Field(default=0, description="Number of entries after the action.")


def _apply(store: dict[str, Any], data: KeyValueInput) -> KeyValueOutput:
    if data.action == "set":
        store[data.key or ""] = data.value
        return KeyValueOutput(key=data.key, value=data.value, count=len(store))
    if data.action == "clear":
        if data.key is not None:
            store.pop(data.key, None)
        else:
            store.clear()
        return KeyValueOutput(key=data.key, count=len(store))
    if data.key is not None:
        return KeyValueOutput(
            key=data.key, value=store.get(data.key), found=data.key in store, count=len(store)
        )
    return KeyValueOutput(entries=dict(store), count=len(store))


_KVIn = TypeVar("_KVIn", bound=KeyValueInput)


class _KeyValueTool(Tool[_KVIn, KeyValueOutput]):
    """A key-value store tool: `get` only reads, every other action writes."""

    Output = KeyValueOutput
    permission = Permission.SAFE

    def permission_for(self, data: _KVIn) -> Permission:
        """Reading is safe; writing is moderate."""
        return Permission.SAFE if data.action == "get" else Permission.MODERATE


class SessionMemoryTool(_KeyValueTool[SessionMemoryInput]):
    """session_memory."""

    name = "session_memory"
    description = "Remember values for the length of a browser session: get one key or all, set a key, clear."
    Input = SessionMemoryInput

    def execute(self, data: SessionMemoryInput, ctx: ToolContext) -> KeyValueOutput:
        """Act on the session's dictionary."""
        with _MEMORY_LOCK:
            return _apply(MANAGER.memory.setdefault(data.session_id, {}), data)


def cache_file(ctx: ToolContext) -> Path:
    """The persistent cache's JSON file: <state>/browser-cache/cache.json."""
    return ctx.settings.state_path / "browser-cache" / "cache.json"


class PersistentCacheTool(_KeyValueTool[KeyValueInput]):
    """persistent_cache."""

    name = "persistent_cache"
    description = (
        "A key-value store that survives restarts (<state>/browser-cache/): get one key or all, set, clear."
    )
    Input = KeyValueInput

    def execute(self, data: KeyValueInput, ctx: ToolContext) -> KeyValueOutput:
        """Read-modify-write the JSON file under a file lock, replacing it atomically."""
        path = cache_file(ctx)
        path.parent.mkdir(parents=True, exist_ok=True)
        limits = DataLimits(max_depth=ctx.settings.data_max_depth, max_bytes=ctx.settings.data_max_bytes)
        with FileLock(str(path) + ".lock", timeout=10):
            store: dict[str, Any] = {}
            # A full clear needs nothing from the file: it is the way out of an unreadable one.
            if path.exists() and not (data.action == "clear" and data.key is None):
                try:
                    loaded = load_json(path.read_text(encoding="utf-8"), what=path.name, limits=limits)
                    store = loaded if isinstance(loaded, dict) else {}
                except (OSError, json.JSONDecodeError, DataLimitError) as exc:
                    return KeyValueOutput(status="ERROR_CACHE_UNREADABLE", errorDetails=f"{path}: {exc}")
            out = _apply(store, data)
            if data.action != "get":
                try:
                    text = json.dumps(store, ensure_ascii=False, indent=1)
                except (TypeError, ValueError) as exc:
                    return KeyValueOutput(
                        status="ERROR_INVALID_VALUE", errorDetails=f"value is not JSON: {exc}"
                    )
                try:
                    # What is stored must read back: a value past the limits would make every later
                    # call (clear by key included) ERROR_CACHE_UNREADABLE.
                    check_json(text, what="the cache with this value", limits=limits)
                except DataLimitError as exc:
                    return KeyValueOutput(status="ERROR_INVALID_VALUE", errorDetails=str(exc))
                tmp = path.with_suffix(f".tmp-{os.getpid()}")
                tmp.write_text(text, encoding="utf-8")
                os.replace(tmp, path)
            return out


class HistoryInput(ToolInput):
    """Input of history_tracker."""

    action: Literal["get", "clear"] = Field(default="get", description="get or clear.")
    session_id: str = Field(
        default="default",
        min_length=1,
        max_length=120,
        pattern=SESSION_ID,
        description="Session whose history to use.",
    )
    limit: int | None = Field(
        strict=True, default=None, ge=1, le=10_000, description="Only the last N events."
    )


class HistoryOutput(BaseModel):
    """A session's event history."""

    status: str = Field(default="SUCCESS", description="SUCCESS or an ERROR_* status.")
    errorDetails: str | None = Field(default=None, description="What went wrong.")
    session_id: str | None = Field(default=None, description="The session.")
    events: list[dict[str, Any]] = Field(
        default_factory=list,
        description="action, parameters, duration_ms, outcome (ok/error/timeout), error, url.",
    )
    count: int = Field(default=0, description="Events in the history (before a clear).")
    errors: int = Field(default=0, description="How many of them failed or timed out.")


class HistoryTrackerTool(Tool[HistoryInput, HistoryOutput]):
    """history_tracker."""

    name = "history_tracker"
    description = "The session's event history: every action with its parameters, duration and outcome (timeouts as readable errors)."
    Input = HistoryInput
    Output = HistoryOutput
    permission = Permission.SAFE
    ok_statuses: ClassVar[frozenset[str]] = frozenset({"SUCCESS"})

    def permission_for(self, data: HistoryInput) -> Permission:
        """Reading is safe; clearing is moderate."""
        return Permission.SAFE if data.action == "get" else Permission.MODERATE

    async def execute(self, data: HistoryInput, ctx: ToolContext) -> HistoryOutput:
        """Read (or clear) the history on the tool loop, where sessions live."""
        session = MANAGER.sessions.get(data.session_id)
        events = [e.as_dict() for e in session.history] if session else []
        errors = sum(1 for e in events if e["outcome"] != "ok")
        if data.action == "clear" and session is not None:
            session.history.clear()
        shown = events[-data.limit :] if data.limit else events
        return HistoryOutput(session_id=data.session_id, events=shown, count=len(events), errors=errors)
