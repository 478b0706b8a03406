"""Schedules report an unreachable Prefect API as ERROR_SERVER_UNAVAILABLE, raised for retries in a task."""

from __future__ import annotations

import socket
import time

import pytest

from tasks.base import ToolContext, TransientToolError, call_tool


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("scheduleListTool", {}),
        ("schedulePauseTool", {"schedule_id": "nightly", "deployment": "flow/dep"}),
    ],
)
def test_an_unreachable_api_is_a_transient_status(ctx: ToolContext, tool: str, args: dict[str, str]) -> None:
    """The status and its text come back after the last try; inside a task the call raises to retry."""
    from prefect.settings import PREFECT_API_URL, PREFECT_CLIENT_MAX_RETRIES, temporary_settings

    with temporary_settings(
        {PREFECT_API_URL: f"http://127.0.0.1:{_closed_port()}/api", PREFECT_CLIENT_MAX_RETRIES: 0}
    ):
        started = time.monotonic()
        result = call_tool(tool, args, ctx)
        assert result.envelope.success is False
        data = result.envelope.data
        assert data is not None and data["status"] == "ERROR_SERVER_UNAVAILABLE"
        assert data["errorDetails"].startswith("the Prefect API is unavailable: ")
        assert result.envelope.error == f"ERROR_SERVER_UNAVAILABLE: {data['errorDetails']}"
        with pytest.raises(TransientToolError) as info:
            call_tool(tool, args, ctx, raise_transient=True)
        assert info.value.result.model_dump(mode="json") == data
        assert time.monotonic() - started < 30
