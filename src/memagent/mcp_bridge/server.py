"""``memagent mcp serve``: the project's memory and task graph as an MCP stdio server.

Any MCP client (Claude Code, Codex, Cursor…) gets these tools:

- ``memory_search``, ``memory_save``, ``memory_list``, ``memory_forget``, ``memory_stats``
- ``task_list``, ``task_get``, ``task_create``, ``task_update``

They are memagent's own tools, run by the same code: the same input schemas and validation,
the same write gate for memories (secrets, near-duplicates, low confidence are refused with the
reason), the same locking (the card and task stores are safe with several processes), the same
answers. Provenance: a memory saved over MCP records ``mcp:<client name>`` (the name the client
gave in ``initialize``, or ``mcp:client``) as its session, so ``memagent memory show`` tells
which agent wrote it. Session-scoped memories are refused: an MCP client has no memagent session.

The memory store is opened in the background when the server starts (loading the embedder takes
a moment) and on demand; if it cannot be opened, the memory tools answer with the reason and the
task tools keep working.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
from typing import TYPE_CHECKING, Any, Callable, Optional

from pydantic import Field

from memagent import __version__
from memagent.memory.cards import MemoryType
from memagent.tools.base import Tool, ToolContext, ToolInput, ToolRegistry, tool

if TYPE_CHECKING:
    from memagent.config import ProjectPaths, Settings
    from memagent.memory.service import MemoryService

SERVER_NAME = "memagent"
INSTRUCTIONS = (
    "memagent's long-term memory and task graph for this project, shared by every agent on the "
    "machine. Search memory before answering questions about the project's conventions, decisions "
    "and the user's preferences; save durable facts (not secrets); cite memories as [Memory#id]."
)

class MemoryListInput(ToolInput):
    memory_type: Optional[MemoryType] = Field(None, description="Only memories of this type.")
    scope: Optional[str] = Field(None, pattern="^(project|user)$", description="project or user.")
    limit: int = Field(20, ge=1, le=200, description="How many to return, newest first.")

class LazyMemory:
    """Opens the memory service once, on first use or from a warm-up thread; thread-safe."""

    def __init__(self, opener: Callable[[], "MemoryService"]) -> None:
        self._opener = opener
        self._lock = threading.Lock()
        self._service: "MemoryService | None" = None
        self._error: Exception | None = None

    def __call__(self) -> "MemoryService":
        with self._lock:
            if self._service is None and self._error is None:
                try:
                    self._service = self._opener()
                except Exception as exc:  # MemoryUnavailable, or a broken install: say why, every time
                    self._error = exc
            if self._error is not None:
                raise self._error
            assert self._service is not None
            return self._service

    def warm_up(self) -> None:
        threading.Thread(target=self._quietly, name="memagent-mcp-memory", daemon=True).start()

    def _quietly(self) -> None:
        try:
            self()
        except Exception:  # reported to the client on the first memory call
            pass

    def close(self) -> None:
        """Close the service; when it is still being opened, do not wait for it (the client has
        gone; the opening thread is a daemon and writes nothing)."""
        if not self._lock.acquire(timeout=0.5):
            return
        try:
            if self._service is not None:
                self._service.close()
                self._service = None
        finally:
            self._lock.release()

def _memory_list_tool(service_factory: Callable[[], "MemoryService"]) -> Tool:
    from memagent.tools.memory_tools import _call, _service

    @tool("memory_list", MemoryListInput)
    def memory_list(args: MemoryListInput, ctx: ToolContext) -> str:
        """List active long-term memories, newest first, with their ids (use memory_search to find by meaning)."""
        service = _service(service_factory)
        cards = _call(lambda: service.list(memory_type=args.memory_type, scope=args.scope, limit=args.limit))
        if not cards:
            return "No memories yet."
        return "\n".join(
            f"[Memory#{c.id}] ({c.memory_type}, {c.scope}, conf {c.confidence:.2f}, "
            f"{c.created_at.date().isoformat()}) {' '.join(c.content.split())}"
            for c in cards
        )

    return memory_list

def served_tools(service_factory: Callable[[], "MemoryService"], tasks_dir_factory: Callable[[], Any]) -> list[Tool]:
    """The tools ``memagent mcp serve`` offers, in a fixed order."""
    from memagent.tools.memory_tools import memory_tools
    from memagent.tools.task_tools import task_tools

    by_name = {t.name: t for t in memory_tools(service_factory)}
    memory = [
        by_name["memory_search"],
        by_name["memory_save"],
        _memory_list_tool(service_factory),
        dataclasses.replace(by_name["memory_delete"], name="memory_forget"),
        by_name["memory_stats"],
    ]
    return memory + task_tools(tasks_dir_factory)

def client_name(request_context: Any) -> str:
    """The name the client gave in ``initialize`` (``claude-code``, ``codex``…), else ``client``."""
    session = getattr(request_context, "session", None)
    params = getattr(session, "client_params", None)
    info = getattr(params, "client_info", None)
    name = str(getattr(info, "name", "") or "").strip()
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:64] or "client"

def build_server(registry: ToolRegistry, root: Any) -> Any:
    """A low-level MCP ``Server`` whose tools are ``registry``'s, run in a worker thread."""
    import anyio
    from mcp.server.lowlevel import Server
    from mcp.types import CallToolResult, ListToolsResult, TextContent
    from mcp.types import Tool as McpTool

    listing = [
        McpTool(name=s["name"], description=s["description"], input_schema=s["input_schema"])
        for s in registry.schemas()
    ]
    schemas = {s["name"]: s["input_schema"] for s in registry.schemas()}

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
        instructions=INSTRUCTIONS,
        get_tool_input_schema=schemas.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )

def serve_stdio(paths: "ProjectPaths", settings: "Settings") -> None:
    """Serve until the client closes stdin. Blocks."""
    import anyio
    from mcp.server.stdio import stdio_server

    from memagent.tasks import TaskStore

    def open_memory() -> "MemoryService":
        from memagent.memory.service import MemoryService, MemoryUnavailable

        if not settings.memory_enabled:
            raise MemoryUnavailable("memory is turned off in the settings")
        return MemoryService.open(paths, settings, session_id="")

    memory = LazyMemory(open_memory)
    registry = ToolRegistry.of(served_tools(memory, lambda: TaskStore(paths.tasks)))
    server = build_server(registry, paths.root)
    memory.warm_up()

    if sys.stdin.isatty():
        sys.stderr.write(
            f"memagent MCP server for {paths.root} on stdin/stdout; it is meant to be started by an "
            "MCP client (e.g. `claude mcp add memagent -- memagent mcp serve`). Ctrl-C stops it.\n"
        )

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(run)
    finally:
        memory.close()


__all__ = ["LazyMemory", "build_server", "client_name", "serve_stdio", "served_tools"]
