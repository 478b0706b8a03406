"""The MCP server with the MCP Python SDK's client: in process (both protocol eras) and over stdio."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tasks.base import ToolContext, deny_all
from tasks.mcp_server import build_server
from udm.config import ApprovalPolicy, Settings

REPO = Path(__file__).resolve().parents[2]


def server_for(settings: Settings, **changes: Any) -> Any:
    return build_server(ToolContext(settings=settings.model_copy(update=changes), approver=deny_all))


def answering(approve: bool | None) -> Any:
    """An elicitation callback that accepts with approve=<approve>, or declines when None."""
    seen: list[str] = []

    async def callback(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        seen.append(params.message)
        if approve is None:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"approve": approve})

    callback.seen = seen  # type: ignore[attr-defined]
    return callback


async def test_tools_are_listed_with_schemas_and_annotations(test_tools, settings) -> None:
    async with Client(server_for(settings)) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
    assert set(listed) == {t.name for t in test_tools}
    echo = listed["echoTool"]
    assert echo.input_schema["properties"]["times"]["maximum"] == 10
    assert "echoed" in echo.output_schema["properties"]
    assert echo.annotations.read_only_hint is True and echo.annotations.destructive_hint is False
    note = listed["noteTool"]
    assert note.annotations.read_only_hint is False


async def test_call_returns_structured_content_and_named_errors(test_tools, settings) -> None:
    async with Client(server_for(settings)) as client:
        ok = await client.call_tool("echoTool", {"text": "RM-001", "times": 2})
        assert ok.is_error is False
        assert ok.structured_content == {
            "status": "SUCCESS",
            "echoed": ["RM-001", "RM-001"],
            "length": 6,
            "errorDetails": None,
        }
        bad = await client.call_tool("echoTool", {"text": "x", "times": 0, "extra": 1})
        assert bad.is_error is True
        text = bad.content[0].text
        assert "times" in text and "extra" in text
        failed = await client.call_tool("echoTool", {"text": "fail"})
        assert failed.is_error is True and "ERROR_REFUSED: asked to fail" in failed.content[0].text
        snap = await client.call_tool("snapTool", {"url": "http://127.0.0.1/x"})
        images = [c for c in snap.content if isinstance(c, types.ImageContent)]
        assert len(images) == 1 and images[0].mime_type == "image/png"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_approval_is_elicited_and_enforced(test_tools, settings, mode) -> None:
    target = settings.state_path / "notes" / "n1.txt"
    server = server_for(settings)
    # No elicitation support: refused with instructions, nothing written.
    async with Client(server, mode=mode) as client:
        refused = await client.call_tool("noteTool", {"name": "n1", "text": "hello"})
    assert refused.is_error is True
    assert "does not support elicitation" in refused.content[0].text
    assert "UDM_APPROVAL_POLICY=full_auto" in refused.content[0].text
    assert not target.exists()
    # The person declines, then says approve=false: still refused.
    for answer in (None, False):
        async with Client(server, mode=mode, elicitation_callback=answering(answer)) as client:
            denied = await client.call_tool("noteTool", {"name": "n1", "text": "hello"})
        assert denied.is_error is True and "approval denied" in denied.content[0].text
        assert not target.exists()
    # Approved: the call runs once.
    callback = answering(True)
    async with Client(server, mode=mode, elicitation_callback=callback) as client:
        done = await client.call_tool("noteTool", {"name": "n1", "text": "hello"})
    assert done.is_error is False and target.read_text() == "hello"
    assert len(callback.seen) == 1 and "noteTool" in callback.seen[0]
    # Safe tools are never asked about.
    async with Client(server, mode=mode, elicitation_callback=callback) as client:
        await client.call_tool("echoTool", {"text": "x"})
    assert len(callback.seen) == 1


async def test_full_auto_policy_runs_moderate_calls_without_asking(test_tools, settings) -> None:
    server = server_for(settings, approval_policy=ApprovalPolicy.FULL_AUTO)
    async with Client(server) as client:
        done = await client.call_tool("noteTool", {"name": "n2", "text": "auto"})
    assert done.is_error is False
    assert json.loads(done.content[0].text)["data"]["path"].endswith("n2.txt")


async def test_stdio_server_lists_and_enforces(workspace: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UDM_")}
    env["UDM_APPROVAL_POLICY"] = "smart_auto"
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-c",
            "from flows.cli import main; main()",
            "mcp",
            "--tools",
            "pipelineCheckTool,scheduleCreateTool",
        ],
        env=env,
        cwd=str(workspace),
    )
    params.env["PYTHONPATH"] = str(REPO)
    async with Client(params) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"pipelineCheckTool", "scheduleCreateTool"}
        assert tools["pipelineCheckTool"].annotations.read_only_hint is True
        spec = "name: p\nsteps:\n  a:\n    tool: pipelineCheckTool\n    input: {spec: 'x'}\n  b:\n    tool: nope\n"
        checked = await client.call_tool("pipelineCheckTool", {"spec": spec})
        assert checked.is_error is False
        problems = checked.structured_content["problems"]
        assert any("step 'b'" in p and "unknown tool 'nope'" in p for p in problems)
        refused = await client.call_tool(
            "scheduleCreateTool",
            {"name": "n", "deployment": "udm-index/reindex", "schedule": "every 5 minutes"},
        )
        assert refused.is_error is True and "does not support elicitation" in refused.content[0].text


async def test_streamable_http_server_on_loopback(workspace: Path) -> None:
    import socket
    import subprocess

    import anyio

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("UDM_")}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from flows.cli import main; main()",
            "mcp",
            "--http",
            "--port",
            str(port),
            "--tools",
            "pipelineCheckTool",
        ],
        cwd=workspace,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(240):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            await anyio.sleep(0.25)
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            tools = (await client.list_tools()).tools
            assert [t.name for t in tools] == ["pipelineCheckTool"]
            checked = await client.call_tool(
                "pipelineCheckTool",
                {"spec": "name: p\nsteps:\n  a: {tool: pipelineCheckTool, input: {spec: x}}\n"},
            )
            assert checked.structured_content["valid"] is True
    finally:
        proc.terminate()
        proc.wait(timeout=20)


async def test_unknown_tool_is_a_protocol_error(test_tools, settings) -> None:
    from mcp.shared.exceptions import MCPError

    async with Client(server_for(settings)) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("noSuchTool", {})
    assert raised.value.error.code == types.INVALID_PARAMS
    assert "noSuchTool" in raised.value.error.message


async def test_failed_elicitation_refuses_the_call(test_tools, settings) -> None:
    from mcp.shared.exceptions import MCPError

    target = settings.state_path / "notes" / "n3.txt"

    async def broken(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        raise MCPError(types.INTERNAL_ERROR, "form rendering failed")

    async with Client(server_for(settings), mode="legacy", elicitation_callback=broken) as client:
        refused = await client.call_tool("noteTool", {"name": "n3", "text": "hello"})
    assert refused.is_error is True
    assert "approval not obtained" in refused.content[0].text
    assert not target.exists()


def test_stdio_server_answers_undecodable_lines(workspace: Path) -> None:
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("UDM_")}
    env["PYTHONPATH"] = str(REPO)
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    lines = [json.dumps(init), "{not json", json.dumps({"jsonrpc": "2.0", "id": 2, "method": 7})]
    proc = subprocess.run(
        [sys.executable, "-c", "from flows.cli import main; main()", "mcp", "--tools", "pipelineCheckTool"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=str(workspace),
        timeout=60,
    )
    replies = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    errors = [r["error"] for r in replies if "error" in r]
    assert [e["code"] for e in errors] == [-32700, -32600], proc.stdout + proc.stderr
    assert any(r.get("id") == 1 and "result" in r for r in replies)
    assert "Traceback" not in proc.stderr
