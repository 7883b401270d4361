"""MCP client sessions in one background event loop, behind a synchronous facade.

The ``mcp`` SDK is asynchronous and memagent's agent loop is not. :class:`McpManager` runs one
asyncio loop in a daemon thread; each configured server is one task on it that connects
(``initialize``), lists the server's tools, and then holds the session open until
:meth:`McpManager.close`. The agent calls :meth:`McpManager.call_tool` from its own thread and
waits (bounded) for the answer.

Failure is contained per server: a server that cannot be started, does not answer within
``connect_timeout`` or crashes later is marked ``failed`` with a one-line reason; its tools answer
with an error result; the other servers and the session carry on. Nothing here raises into the
caller except ``KeyboardInterrupt``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import tempfile
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any, Mapping, Sequence

from memagent import __version__
from memagent.errors import one_line
from memagent.mcp_bridge.config import HttpServer, ServerSpec, StdioServer, server_environment
from memagent.mcp_bridge.results import CallOutcome, convert_result

STARTING, READY, FAILED, STOPPED = "starting", "ready", "failed", "stopped"
CONNECTION_CLOSED = -32000  # JSON-RPC codes the SDK uses for a dead connection / a timeout
REQUEST_TIMEOUT = -32001
_STDERR_TAIL = 300


@dataclass(frozen=True)
class RemoteTool:
    """One tool a server offers, as it listed it."""

    server: str
    name: str
    description: str
    input_schema: dict[str, Any]
    # The server's own hints (MCP tool annotations); None where it gave none.
    read_only: bool | None = None
    destructive: bool | None = None


@dataclass(frozen=True)
class ServerStatus:
    name: str
    transport: str
    target: str
    origin: str
    status: str = STARTING
    reason: str | None = None
    tools: tuple[RemoteTool, ...] = ()
    server_info: str = ""  # "name version" the server announced

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "transport": self.transport,
            "target": self.target,
            "origin": self.origin,
            "status": self.status,
            "reason": self.reason,
            "server_info": self.server_info,
            "tools": [{"name": t.name, "description": t.description} for t in self.tools],
        }


def _one_line(exc: BaseException) -> str:
    """A readable one-line reason, unwrapping the exception groups of task groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return one_line(exc, 200)


def _stderr_tail(log: IO[str] | None) -> str:
    if log is None:
        return ""
    try:
        log.flush()
        log.seek(0)
        lines = [line.strip() for line in log.read().splitlines() if line.strip()]
    except (OSError, ValueError):
        return ""
    return lines[-1][-_STDERR_TAIL:] if lines else ""


@dataclass
class McpManager:
    """Connections to the configured MCP servers. ``start()`` returns at once."""

    servers: Sequence[ServerSpec]
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    connect_timeout: float = 30.0
    max_result_chars: int = 30_000
    _status: dict[str, ServerStatus] = field(default_factory=dict, init=False)
    _clients: dict[str, Any] = field(default_factory=dict, init=False)
    _changed: threading.Condition = field(default_factory=threading.Condition, init=False)
    _loop: asyncio.AbstractEventLoop | None = field(default=None, init=False)
    _stop: asyncio.Event | None = field(default=None, init=False)
    _thread: threading.Thread | None = field(default=None, init=False)
    _tasks: dict[str, "asyncio.Task[None]"] = field(default_factory=dict, init=False)
    _closed: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        for spec in self.servers:
            self._status[spec.name] = ServerStatus(spec.name, spec.transport, spec.target, spec.origin)

    # ------------------------------------------------------------------ facade (any thread)

    def start(self) -> None:
        """Start every server in the background (once; a no-op when there is none)."""
        with self._changed:
            if self._thread is not None or self._closed or not self.servers:
                return
            ready = threading.Event()
            self._thread = threading.Thread(target=self._run, args=(ready,), name="memagent-mcp", daemon=True)
            self._thread.start()
        ready.wait()

    def wait_ready(self, timeout: float) -> bool:
        """Wait until no server is still starting (or ``timeout`` s); True when none is."""
        with self._changed:
            return self._changed.wait_for(self._settled, timeout=max(timeout, 0.0))

    def statuses(self) -> list[ServerStatus]:
        with self._changed:
            return [self._status[spec.name] for spec in self.servers]

    def status(self, server: str) -> ServerStatus | None:
        with self._changed:
            return self._status.get(server)

    def call_tool(self, server: str, tool: str, arguments: dict[str, Any], timeout: float) -> CallOutcome:
        """Call one tool and wait at most ``timeout`` seconds; failures are error outcomes."""
        state = self.status(server)
        client = self._clients.get(server)
        loop = self._loop
        if state is None:
            return CallOutcome(f"no MCP server named {server!r}", is_error=True)
        if state.status != READY or client is None or loop is None:
            why = f": {state.reason}" if state.reason else ""
            return CallOutcome(f"MCP server {server!r} is not available ({state.status}{why})", is_error=True)
        future = asyncio.run_coroutine_threadsafe(self._call(server, client, tool, arguments, timeout), loop)
        try:
            return future.result(timeout + 5.0)
        except concurrent.futures.TimeoutError:
            future.cancel()
            return CallOutcome(f"MCP tool {tool} on {server!r} did not answer within {timeout:g}s", is_error=True)
        except KeyboardInterrupt:
            future.cancel()
            raise
        except Exception as exc:  # a bug in the bridge must not end the session
            return CallOutcome(f"MCP tool {tool} on {server!r} failed: {_one_line(exc)}", is_error=True)

    def close(self, timeout: float = 8.0) -> None:
        """Stop every server (stdio processes are terminated); bounded, safe to call twice."""
        with self._changed:
            self._closed = True
            thread, loop, stop = self._thread, self._loop, self._stop
        if thread is None or loop is None or stop is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop already ended
            loop.call_soon_threadsafe(self._shut_down, stop)
        thread.join(timeout)

    # ------------------------------------------------------------------ the loop's thread

    def _shut_down(self, stop: asyncio.Event) -> None:
        stop.set()
        for name, task in self._tasks.items():
            if self._status[name].status == STARTING:
                task.cancel()  # do not wait out a server that is still starting

    def _settled(self) -> bool:
        return all(s.status != STARTING for s in self._status.values())

    def _set(self, name: str, **changes: Any) -> None:
        with self._changed:
            self._status[name] = replace(self._status[name], **changes)
            self._changed.notify_all()

    def _run(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._stop = asyncio.Event()
        ready.set()
        try:
            loop.run_until_complete(self._main())
        finally:
            for spec in self.servers:
                if self._status[spec.name].status in (STARTING, READY):
                    self._set(spec.name, status=STOPPED)
            self._clients.clear()
            loop.close()

    async def _main(self) -> None:
        loop = asyncio.get_running_loop()
        for spec in self.servers:
            task = asyncio.create_task(self._serve(spec), name=f"mcp-{spec.name}")
            self._tasks[spec.name] = task
            loop.call_later(self.connect_timeout, self._give_up, spec.name, task)
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    def _give_up(self, name: str, task: asyncio.Task[None]) -> None:
        if self._status[name].status == STARTING:
            self._set(name, status=FAILED, reason=f"did not answer within {self.connect_timeout:g}s")
            task.cancel()

    async def _serve(self, spec: ServerSpec) -> None:
        log: IO[str] | None = None
        try:
            if isinstance(spec, StdioServer):
                log = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
            async with contextlib.AsyncExitStack() as stack:
                client = await self._connect(spec, stack, log)
                tools = await self._list_tools(spec.name, client)
                self._clients[spec.name] = client
                self._set(spec.name, status=READY, tools=tools, server_info=self._info(client))
                assert self._stop is not None
                await self._stop.wait()
                self._clients.pop(spec.name, None)
        except asyncio.CancelledError:
            pass  # the start-up watchdog already said why
        except BaseException as exc:  # noqa: BLE001 — one server's failure is one line, never more
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            tail = _stderr_tail(log)
            reason = _one_line(exc) + (f" (stderr: {tail})" if tail else "")
            if self._status[spec.name].status != FAILED:
                self._set(spec.name, status=FAILED, reason=reason)
        finally:
            self._clients.pop(spec.name, None)
            if log is not None:
                log.close()

    async def _connect(self, spec: ServerSpec, stack: contextlib.AsyncExitStack, log: IO[str] | None) -> Any:
        from mcp import Client
        from mcp.types import Implementation

        info = Implementation(name="memagent", version=__version__)
        if isinstance(spec, HttpServer):
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=dict(spec.headers), timeout=httpx2.Timeout(30.0, read=300.0))
            )
            transport: Any = streamable_http_client(spec.url, http_client=http)
        else:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            params = StdioServerParameters(
                command=spec.command,
                args=list(spec.args),
                env=server_environment(spec, self.env),
                cwd=str(self.cwd) if self.cwd else None,
            )
            transport = stdio_client(params, errlog=log)
        return await stack.enter_async_context(Client(transport, client_info=info, cache=None))

    async def _list_tools(self, server: str, client: Any) -> tuple[RemoteTool, ...]:
        found: list[RemoteTool] = []
        cursor: str | None = None
        for _ in range(50):  # pages; a server that never stops paging is cut off
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                schema = dict(tool.input_schema or {}) or {"type": "object", "properties": {}}
                hints = tool.annotations
                found.append(RemoteTool(server, tool.name, tool.description or "", schema,
                                        getattr(hints, "read_only_hint", None), getattr(hints, "destructive_hint", None)))
            cursor = page.next_cursor
            if not cursor:
                break
        return tuple(found)

    @staticmethod
    def _info(client: Any) -> str:
        info = getattr(client, "server_info", None)
        if info is None:
            return ""
        return f"{info.name} {info.version}".strip()

    async def _call(self, server: str, client: Any, tool: str, arguments: dict[str, Any], timeout: float) -> CallOutcome:
        from mcp import MCPError

        try:
            result = await client.call_tool(tool, arguments, read_timeout_seconds=timeout)
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                return CallOutcome(f"MCP tool {tool} on {server!r} did not answer within {timeout:g}s", is_error=True)
            if exc.code == CONNECTION_CLOSED:
                return self._crashed(server, tool, exc)
            return CallOutcome(f"MCP server {server!r} refused the call to {tool}: {exc.message}", is_error=True)
        except Exception as exc:  # noqa: BLE001 — a broken connection is an error result
            return self._crashed(server, tool, exc)
        return convert_result(result, self.max_result_chars)

    def _crashed(self, server: str, tool: str, exc: BaseException) -> CallOutcome:
        reason = f"connection lost: {_one_line(exc)}"
        self._set(server, status=FAILED, reason=reason)
        self._clients.pop(server, None)
        return CallOutcome(f"MCP server {server!r} stopped working ({reason}); {tool} was not completed", is_error=True)


__all__ = ["FAILED", "McpManager", "READY", "RemoteTool", "STARTING", "STOPPED", "ServerStatus"]
