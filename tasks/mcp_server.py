"""Every registered tool over MCP (stdio, or streamable HTTP on 127.0.0.1), with approval enforced.

Schemas are the tools' own Input/Output JSON schemas; MCP annotations come from the permission
(readOnlyHint for safe, destructiveHint for destructive and critical). Approval is decided by the
server, not hinted: a call whose permission needs approval under the server's policy
(`UDM_APPROVAL_POLICY`, default smart_auto) is put to the person through MCP elicitation when the
client supports it (the multi-round-trip `input_required` result on 2026-07-28 connections, an
`elicitation/create` request on older ones); a client without elicitation gets an error result that
says how to approve instead (start the server with a more permissive policy). The decision is then
enforced by `call_tool`, which also validates and logs the call. Read-only query and graph calls that
need no approval go to the manual's `udm daemon` when one runs under the same settings (its warm
index, search reader and graph; it logs the call), else run here. This module never imports Prefect.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterable
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError

from tasks.base import (
    ApprovalRequest,
    ApprovalUnavailableError,
    Approver,
    Envelope,
    Tool,
    ToolCallResult,
    ToolContext,
    call_tool,
    export_schema,
    input_digest,
    needs_approval,
)
from tasks.llm_tools import envelope_text
from tasks.registry import all_tools
from udm.datalimits import lone_surrogate

__all__ = [
    "APPROVAL_KEY",
    "APPROVAL_SCHEMA",
    "build_server",
    "call_via_daemon",
    "mcp_tool",
    "run_http",
    "run_stdio",
]

SERVER_NAME = "udm-pipelines"
# The key of our one input request in an `input_required` result.
APPROVAL_KEY = "approval"
APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Approve",
            "description": "True runs the call; false refuses it.",
        }
    },
    "required": ["approve"],
}


def mcp_tool(tool: Tool[Any, Any]) -> types.Tool:
    """The MCP listing of one tool: its schemas and permission-derived annotations."""
    spec = export_schema(tool, "mcp")
    ann = spec["annotations"]
    return types.Tool(
        name=tool.name,
        title=tool.name,
        description=f"{tool.description} [permission: {tool.permission.value}]",
        input_schema=spec["inputSchema"],
        output_schema=spec["outputSchema"],
        annotations=types.ToolAnnotations(
            title=ann["title"],
            read_only_hint=ann["readOnlyHint"],
            destructive_hint=ann["destructiveHint"],
            idempotent_hint=ann["idempotentHint"],
            open_world_hint=ann["openWorldHint"],
        ),
    )


def _to_result(result: ToolCallResult, ctx: ToolContext) -> types.CallToolResult:
    envelope = result.envelope
    text, images = envelope_text(envelope, ctx.settings.image_roots())
    content: list[Any] = [types.TextContent(type="text", text=text)]
    content += [
        types.ImageContent(type="image", data=img.data_b64, mime_type=img.media_type) for img in images
    ]
    structured = envelope.data if envelope.success else None
    return types.CallToolResult(content=content, structured_content=structured, is_error=not envelope.success)


def _error(text: str) -> types.CallToolResult:
    body = json.dumps({"success": False, "data": None, "error": text}, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(type="text", text=body)], is_error=True)


def _how_to_approve(request: ApprovalRequest, policy: str) -> str:
    return (
        f"{request.tool} is {request.permission.value} and this MCP server's approval policy ({policy}) "
        "requires approval, but the client does not support elicitation. Use a client that supports "
        "MCP elicitation, or restart the server with a policy that allows this level, e.g. "
        "UDM_APPROVAL_POLICY=full_auto udm mcp (critical calls always need approval)."
    )


def _decision(answer: Any) -> bool:
    """True only for an accepted elicitation whose content says approve: true."""
    action = getattr(answer, "action", None)
    content = getattr(answer, "content", None)
    if isinstance(answer, dict):
        action, content = answer.get("action"), answer.get("content")
    return action == "accept" and isinstance(content, dict) and content.get("approve") is True


def _refuse(explain: Callable[[ApprovalRequest], str]) -> Approver:
    """An approver that refuses every request, saying (through `explain`) why nobody can approve it."""

    def refuse(request: ApprovalRequest) -> bool:
        raise ApprovalUnavailableError(explain(request))

    return refuse


def call_via_daemon(tool: Tool[Any, Any], args: dict[str, Any], ctx: ToolContext) -> ToolCallResult | None:
    """The call answered by this manual's `udm daemon` (its warm engine), or None when none can."""
    from udm.daemon import DAEMON_TOOLS, DaemonUnavailable, request, settings_digest, socket_path

    if tool.name not in DAEMON_TOOLS:
        return None
    state = str(ctx.settings.state_path)
    if not os.path.exists(socket_path(state)):
        return None
    message = {"op": "tool", "tool": tool.name, "input": args, "settings": settings_digest(ctx.settings)}
    try:
        reply = request(state, message)
        envelope = Envelope.model_validate(reply["envelope"])
    except (DaemonUnavailable, KeyError, TypeError, ValidationError):
        return None  # no daemon, other settings, or a fallback reply: the call runs here
    return ToolCallResult(
        envelope=envelope,
        decision=str(reply.get("decision", "auto")),
        duration_ms=float(reply.get("duration_ms", 0.0)),
    )


async def _ask_approval(
    rctx: ServerRequestContext[Any],
    params: types.CallToolRequestParams,
    tool: Tool[Any, Any],
    data: BaseModel,
    args: dict[str, Any],
    policy: str,
) -> Approver | types.InputRequiredResult | None:
    """The client's answer to an approval request, as an approver; None when the client cannot ask.

    A modern client gets an InputRequiredResult (it asks its user and retries with the answer, bound
    to this exact input by the request state); an older one is asked through elicitation."""
    digest = input_digest(args)
    caps = rctx.session.client_capabilities
    answer = (params.input_responses or {}).get(APPROVAL_KEY)
    if answer is not None and params.request_state == digest:
        approved = _decision(answer)
        return lambda request: approved
    if caps is None or caps.elicitation is None:
        return None
    message = f"Approve {tool.summarize(data)}? [{tool.permission_for(data).value}; policy {policy}]"
    if rctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return types.InputRequiredResult(
            input_requests={
                APPROVAL_KEY: types.ElicitRequest(
                    params=types.ElicitRequestFormParams(message=message, requested_schema=APPROVAL_SCHEMA)
                )
            },
            request_state=digest,
        )
    try:
        reply = await rctx.session.elicit_form(message, APPROVAL_SCHEMA, rctx.request_id)
    except MCPError as exc:
        # The client advertised elicitation but failed to ask: no approval was obtained.
        reason = f"the client could not ask for approval ({exc.error.message})"
        return _refuse(lambda request: f"approval not obtained for {request.tool}: {reason}")
    approved = _decision(reply)
    return lambda request: approved


def build_server(
    ctx: ToolContext | None = None,
    tools: Iterable[Tool[Any, Any]] | None = None,
    name: str = SERVER_NAME,
) -> Server[Any]:
    """A low-level MCP server exposing `tools` (default: every registered tool) through `call_tool`."""
    base_ctx = ctx or ToolContext()
    offered = list(tools) if tools is not None else all_tools()
    by_name = {t.name: t for t in offered}
    listing = [mcp_tool(t) for t in offered]

    async def on_list_tools(
        rctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def on_call_tool(
        rctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        tool = by_name.get(params.name)
        if tool is None:
            # The MCP specification answers an unknown tool with a protocol error, not a tool result.
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name} (see tools/list)")
        args: dict[str, Any] = dict(params.arguments or {})
        policy = base_ctx.settings.approval_policy
        approver: Approver = _refuse(lambda request: _how_to_approve(request, policy.value))
        try:
            data = tool.Input.model_validate(args)
        except ValidationError:
            data = None  # call_tool names the bad fields; no approval is asked for invalid input
        if data is not None and needs_approval(policy, tool.permission_for(data)):
            asked = await _ask_approval(rctx, params, tool, data, args, policy.value)
            if isinstance(asked, types.InputRequiredResult):
                return asked
            approver = asked or approver
        call_ctx = dataclasses.replace(base_ctx, approver=approver)
        warm = data is not None and not needs_approval(policy, tool.permission_for(data))
        result = await anyio.to_thread.run_sync(
            lambda: (warm and call_via_daemon(tool, args, base_ctx)) or call_tool(tool, args, call_ctx)
        )
        try:
            return _to_result(result, base_ctx)
        except Exception as exc:  # the call already ran: report it rather than drop the reply
            return _error(f"{tool.name} ran but its result could not be rendered: {exc}")

    return Server(
        name,
        version="0.1.0",
        instructions=(
            "Tools of UDM Pipelines: query, edit and verify a Unified Development Manual. "
            "Calls that need approval are asked through elicitation."
        ),
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )


def stream_error(exc: Exception) -> types.JSONRPCError:
    """The JSON-RPC error for an undecodable line: -32700 for bad JSON, -32600 for a non-message, and
    -32602 for the request's own id when its JSON holds a lone surrogate (`"\\udcff"`, what a name's
    undecodable byte becomes): well-formed JSON, but no text a tool can take."""
    code, message = types.INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message"
    ident: str | int | None = None
    invalid = (
        [e for e in exc.errors() if e["type"] == "json_invalid"] if isinstance(exc, ValidationError) else []
    )
    if invalid:
        code, message = types.PARSE_ERROR, "Parse error: the line is not valid JSON"
        found = _with_lone_surrogate(invalid[0].get("input"))
        if found is not None:
            ident, where = found
            code = types.INVALID_PARAMS
            message = (
                f"Invalid params: {where} holds a lone surrogate, which is not a character: "
                "text and names must be valid UTF-8"
            )
    return types.JSONRPCError(jsonrpc="2.0", id=ident, error=types.ErrorData(code=code, message=message))


def _with_lone_surrogate(line: Any) -> tuple[str | int | None, str] | None:
    """(id, where) of a request line that is JSON but for a lone surrogate escape (pydantic's parser
    refuses those, Python's reads them); None for any other line."""
    if not isinstance(line, str | bytes) or len(line) > _MAX_LINE:
        return None
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    where = lone_surrogate(data, "the request")
    if where is None:
        return None
    ident = data.get("id")
    valid = isinstance(ident, str | int) and not isinstance(ident, bool) and lone_surrogate(ident) is None
    return (ident if valid else None), where


# A line is read whole by the SDK before this sees it; past this size it is not parsed again.
_MAX_LINE = 16 * 1024 * 1024


def run_stdio(server: Server[Any]) -> None:
    """Serve over stdin/stdout until the client closes the stream."""
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            # The SDK drops a line it cannot decode; JSON-RPC says to answer it with an error.
            to_server, inbound = anyio.create_memory_object_stream[SessionMessage | Exception](0)

            async def answer_bad_lines() -> None:
                async with to_server:
                    async for item in read_stream:
                        if isinstance(item, Exception):
                            await write_stream.send(SessionMessage(stream_error(item)))
                        else:
                            await to_server.send(item)

            async with anyio.create_task_group() as tg:
                tg.start_soon(answer_bad_lines)
                await server.run(inbound, write_stream, server.create_initialization_options())
                tg.cancel_scope.cancel()

    anyio.run(main)


def run_http(server: Server[Any], port: int, path: str = "/mcp") -> None:
    """Serve streamable HTTP on 127.0.0.1:port (loopback only: the tools can write files)."""
    import uvicorn

    app = server.streamable_http_app(streamable_http_path=path, host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
