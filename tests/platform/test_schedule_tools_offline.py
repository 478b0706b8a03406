"""Creating and resuming schedules when the Prefect API cannot be reached: ERROR_SERVER_UNAVAILABLE.

(listing and pausing: tests/platform/test_schedule_unavailable.py)
"""

from __future__ import annotations

import socket
from typing import Any

import pytest

from tasks.base import ToolContext, call_tool


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("scheduleCreateTool", {"name": "n", "deployment": "flow/dep", "schedule": "every hour"}),
        ("scheduleCreateTool", {"name": "n", "deployment": "flow/dep", "schedule": "in 5 minutes"}),
        ("scheduleResumeTool", {"schedule_id": "nightly", "deployment": "flow/dep"}),
    ],
)
def test_an_unreachable_api_is_a_status_naming_it(tool: str, args: dict[str, Any], ctx: ToolContext) -> None:
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: f"http://127.0.0.1:{_closed_port()}/api"}):
        env = call_tool(tool, args, ctx).envelope
    assert env.data is not None, env.error
    assert env.data["status"] == "ERROR_SERVER_UNAVAILABLE"
    assert env.data["errorDetails"].startswith("the Prefect API is unavailable: ConnectError")
