"""tool_task under a real Prefect server: retries, Retry-After, the final result, and caching."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, Field

from tasks.base import Permission, Tool, ToolContext, ToolInput, TransientToolError

pytestmark = [pytest.mark.prefect]


class FlakyIn(ToolInput):
    """How the fake tool should behave."""

    key: str = Field(description="Counter key.")
    fail_times: int = Field(default=0, description="Transient failures before success.")
    retry_after: float | None = Field(default=None, description="Retry-After to report.")


class FlakyOut(BaseModel):
    """The fake tool's result."""

    status: str = Field(description="SUCCESS or ERROR_FETCH_FAILED.")
    attempt: int = Field(default=0, description="Which call succeeded.")
    errorDetails: str | None = Field(default=None, description="Error.")


CALLS: dict[str, list[float]] = {}


class FlakyTool(Tool[FlakyIn, FlakyOut]):
    """Fails transiently `fail_times` times, then succeeds."""

    name: ClassVar[str] = "flakyTestTool"
    description: ClassVar[str] = "test tool"
    Input: ClassVar[type[BaseModel]] = FlakyIn
    Output: ClassVar[type[BaseModel]] = FlakyOut
    permission: ClassVar[Permission] = Permission.SAFE

    def execute(self, data: FlakyIn, ctx: ToolContext) -> FlakyOut:
        """Count the call; fail transiently while under `fail_times`."""
        calls = CALLS.setdefault(data.key, [])
        calls.append(time.monotonic())
        if len(calls) <= data.fail_times:
            err = FlakyOut(status="ERROR_FETCH_FAILED", errorDetails=f"HTTP 503 (call {len(calls)})")
            raise TransientToolError("HTTP 503", result=err, retry_after=data.retry_after)
        return FlakyOut(status="SUCCESS", attempt=len(calls))


def test_retries_until_success_with_run_count(prefect_server: None, ctx: ToolContext) -> None:
    from prefect import flow

    from tasks.prefect_task import tool_task

    t = tool_task(FlakyTool(), retries=3, retry_delay=0.0)

    @flow
    def f() -> dict[str, Any]:
        return t({"key": "a", "fail_times": 2}, ctx)

    env = f()
    assert env["success"] and env["data"]["attempt"] == 3 and len(CALLS["a"]) == 3


def test_final_failure_returns_or_raises(prefect_server: None, ctx: ToolContext) -> None:
    from prefect import flow

    from tasks.prefect_task import ToolFailedError, envelope_of, tool_task

    returning = tool_task(FlakyTool(), retries=1, retry_delay=0.0)
    raising = tool_task(FlakyTool(), retries=1, retry_delay=0.0, fail_on_final=True)

    @flow
    def f() -> tuple[dict[str, Any], dict[str, Any], bool]:
        env = returning({"key": "b", "fail_times": 5}, ctx)
        fut = raising.submit({"key": "c", "fail_times": 5}, ctx)
        fut.wait()
        failed = isinstance(fut.result(raise_on_failure=False), ToolFailedError)
        return env, envelope_of(fut), failed

    env, env2, failed = f()
    assert not env["success"] and env["data"]["status"] == "ERROR_FETCH_FAILED" and len(CALLS["b"]) == 2
    assert failed and not env2["success"] and "HTTP 503" in env2["error"] and len(CALLS["c"]) == 2


def test_retry_after_is_honoured_and_capped(prefect_server: None, ctx: ToolContext) -> None:
    from prefect import flow

    from tasks.prefect_task import tool_task

    t = tool_task(FlakyTool(), retries=2, retry_delay=0.0, jitter=0.0, max_retry_after_s=0.6)

    @flow
    def f() -> dict[str, Any]:
        return t({"key": "d", "fail_times": 2, "retry_after": 5.0}, ctx)

    started = time.monotonic()
    env = f()
    gaps = [b - a for a, b in zip(CALLS["d"], CALLS["d"][1:], strict=False)]
    assert env["success"] and all(0.55 <= g < 3.0 for g in gaps), gaps
    assert time.monotonic() - started < 20


def test_failures_are_never_cached(prefect_server: None, ctx: ToolContext, tmp_path: Path) -> None:
    from prefect import flow

    from tasks.prefect_task import envelope_of, tool_cache_policy, tool_task

    tool = FlakyTool()
    t = tool_task(
        tool,
        retries=0,
        fail_on_final=True,
        cache_policy=tool_cache_policy(tool.name),
        cache_expiration=timedelta(minutes=5),
        persist_result=True,
        result_storage=tmp_path / "results",
        result_serializer="json",
    )

    @flow
    def f(fail_times: int) -> dict[str, Any]:
        return envelope_of(t.submit({"key": "e", "fail_times": fail_times}, ctx))

    assert not f(1)["success"]  # call 1 fails: not cached
    assert f(1)["success"]  # call 2 runs again and succeeds: cached
    assert f(1)["data"]["attempt"] == 2 and len(CALLS["e"]) == 2  # served from the cache
