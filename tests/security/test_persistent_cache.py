"""persistent_cache cannot be bricked by one value it accepted.

The cache file is read back with the data limits (depth 100, 8 MiB). On `main` before this, a `set`
of a value nested 150 levels deep (or several values adding up past 8 MiB) was stored, and from then
on every call of the tool, `get`, `set` and even `clear`, answered ERROR_CACHE_UNREADABLE until
someone deleted the file by hand. A value that would not read back is now refused when set, and a
full `clear` works whatever the file holds.
"""

from __future__ import annotations

from typing import Any

from tasks.base import ToolContext, always_approve, call_tool
from udm.config import Settings


def _cache(ctx: ToolContext, **raw: Any) -> dict[str, Any]:
    out = call_tool("persistent_cache", raw, ctx).envelope.data
    assert out is not None
    return out


def _deep(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = [value]
    return value


def test_a_value_that_would_not_read_back_is_refused(settings: Settings) -> None:
    ctx = ToolContext(settings=settings, approver=always_approve, log=False)
    assert _cache(ctx, action="set", key="ok", value={"a": [1, 2]})["status"] == "SUCCESS"
    deep = _cache(ctx, action="set", key="deep", value=_deep(150))
    assert deep["status"] == "ERROR_INVALID_VALUE" and "data_max_depth" in deep["errorDetails"], deep
    settings.data_max_bytes = 64 * 1024
    big = _cache(ctx, action="set", key="big", value="y" * 70_000)
    assert big["status"] == "ERROR_INVALID_VALUE" and "data_max_bytes" in big["errorDetails"], big
    got = _cache(ctx, action="get", key="ok")
    assert got["status"] == "SUCCESS" and got["value"] == {"a": [1, 2]}, got


def test_clear_works_on_an_unreadable_cache(settings: Settings) -> None:
    ctx = ToolContext(settings=settings, approver=always_approve, log=False)
    path = settings.state_path / "browser-cache" / "cache.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"k": ' + "[" * 500 + "]" * 500 + "}", encoding="utf-8")  # torn or too deep
    assert _cache(ctx, action="get")["status"] == "ERROR_CACHE_UNREADABLE"
    assert _cache(ctx, action="clear")["status"] == "SUCCESS"
    assert _cache(ctx, action="set", key="k", value=1)["status"] == "SUCCESS"
    assert _cache(ctx, action="get", key="k")["value"] == 1
