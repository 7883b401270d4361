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
from typing import Any

from memagent import __version__
from memagent.tools.base import ToolContext, ToolRegistry

SERVER_NAME = "memagent"


def client_name(request_context: Any) -> str:
    """The name the client gave in ``initialize`` (``claude-code``, ``codex``…), else ``client``."""
    session = getattr(request_context, "session", None)
    params = getattr(session, "client_params", None)
    info = getattr(params, "client_info", None)
    name = str(getattr(info, "name", "") or "").strip()
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:64] or "client"


def build_server(registry: ToolRegistry, root: Path, instructions: str) -> Any:
    """A low-level MCP ``Server`` whose tools are ``registry``'s."""
    import anyio
    from mcp.server.lowlevel import Server
    from mcp.types import CallToolResult, ListToolsResult, TextContent
    from mcp.types import Tool as McpTool

    schemas = registry.schemas()
    listing = [McpTool(name=s["name"], description=s["description"], input_schema=s["input_schema"]) for s in schemas]
    input_schemas = {s["name"]: s["input_schema"] for s in schemas}

    async def list_tools(ctx: Any, params: Any) -> Any:
        return ListToolsResult(tools=listing)

    async def call_tool(ctx: Any, params: Any) -> Any:
        context = ToolContext(root=root, session_id=f"mcp:{client_name(ctx)}")
        arguments = dict(params.arguments or {})
        outcome = await anyio.to_thread.run_sync(registry.run, params.name, arguments, context)
        return CallToolResult(content=[TextContent(type="text", text=outcome.content)], is_error=outcome.is_error)

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=instructions,
        get_tool_input_schema=input_schemas.get,
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
