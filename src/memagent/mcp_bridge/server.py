"""Serve a :class:`~memagent.tools.base.ToolRegistry` as an MCP server on stdin/stdout.

Generic plumbing for ``memagent mcp serve`` (which tools are served is decided in
:mod:`memagent.mcp_serve`): the registry's schemas are listed as they are, and a call
runs the registry's own validation and handler in a worker thread, so an MCP client gets
exactly what memagent's model gets. The tool context names the caller: ``session_id`` is
``mcp:<client name>``, the name the client gave in ``initialize`` (``mcp:client`` without one).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from memagent import __version__
from memagent.jsontypes import JsonObject, json_object
from memagent.tools.base import ToolContext, ToolRegistry

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.types import CallToolRequestParams, CallToolResult, ListToolsResult, PaginatedRequestParams

SERVER_NAME = "memagent"
Lifespan = dict[str, object]  # the default lifespan's state: nothing memagent reads


def client_name(request_context: object) -> str:
    """The name the client gave in ``initialize`` (``claude-code``, ``codex``…), else ``client``."""
    session = getattr(request_context, "session", None)
    params = getattr(session, "client_params", None)
    info = getattr(params, "client_info", None)
    name = str(getattr(info, "name", "") or "").strip()
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:64] or "client"


def build_server(registry: ToolRegistry, root: Path, instructions: str) -> Server[Lifespan]:
    """A low-level MCP ``Server`` whose tools are ``registry``'s."""
    import anyio
    from mcp.server.lowlevel import Server
    from mcp.types import CallToolResult, ListToolsResult, TextContent
    from mcp.types import Tool as McpTool

    input_schemas = {tool.name: json_object(tool.schema().get("input_schema")) for tool in registry.tools.values()}
    listing = [
        McpTool(name=tool.name, description=tool.description, input_schema=input_schemas[tool.name])
        for tool in registry.tools.values()
    ]

    def input_schema(name: str) -> JsonObject | None:
        return input_schemas.get(name)

    async def list_tools(ctx: ServerRequestContext[Lifespan], params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(tools=listing)

    async def call_tool(ctx: ServerRequestContext[Lifespan], params: CallToolRequestParams) -> CallToolResult:
        context = ToolContext(root=root, session_id=f"mcp:{client_name(ctx)}")
        arguments = dict(params.arguments or {})
        outcome = await anyio.to_thread.run_sync(registry.run, params.name, arguments, context)
        return CallToolResult(content=[TextContent(type="text", text=outcome.content)], is_error=outcome.is_error)

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=instructions,
        get_tool_input_schema=input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def serve_registry(registry: ToolRegistry, root: Path, instructions: str, *, on_exit: Callable[[], None]) -> None:
    """Serve until the client closes stdin (blocks); ``on_exit`` runs however it ends."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(registry, root, instructions)
    if sys.stdin.isatty():
        sys.stderr.write(
            f"memagent MCP server for {root} on stdin/stdout; it is meant to be started by an MCP "
            "client (e.g. `claude mcp add memagent -- memagent mcp serve`). Ctrl-C stops it.\n"
        )

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(run)
    finally:
        on_exit()


__all__ = ["SERVER_NAME", "build_server", "client_name", "serve_registry"]
