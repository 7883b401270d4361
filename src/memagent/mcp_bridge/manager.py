"""MCP client sessions in one background event loop, behind a synchronous facade.

The ``mcp`` SDK is asynchronous and memagent's agent loop is not. :class:`McpManager` runs one
asyncio loop in a daemon thread; each configured server is one task on it that connects
(``initialize``), lists what the server offers (tools, prompts, whether it has resources), and
then holds the session open until :meth:`McpManager.close`. The agent calls
:meth:`McpManager.call_tool` (and ``read_resource``, ``list_resources``, ``get_prompt``) from its
own thread and waits (bounded) for the answer.

Failure is contained per server: a server that cannot be started or does not answer within
``connect_timeout`` is marked ``failed`` with a one-line reason; its tools answer with an error
result; the other servers and the session carry on. A connection that drops after it worked (a
crashed process, a closed HTTP stream) is re-established in the background with growing pauses
(``reconnect_delays``, 1 s, 2 s, 4 s, … by default) and given up after the last one; a call made
meanwhile waits a little for the reconnection. Lines a stdio server writes to stdout that are not
MCP messages are counted and summarised in one line (``ServerStatus.noise``); its stderr goes to a
private file whose last line is quoted when the server fails. Nothing here raises into the caller
except ``KeyboardInterrupt``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import io
import logging
import sys
import tempfile
import threading
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, TypedDict, TypeVar, Unpack

from memagent import __version__
from memagent.errors import one_line
from memagent.jsontypes import JsonObject
from memagent.mcp_bridge.config import HttpServer, ServerSpec, StdioServer, server_environment
from memagent.mcp_bridge.remote import (
    FAILED,
    READY,
    RECONNECTING,
    STARTING,
    STOPPED,
    Noise,
    RemotePrompt,
    RemoteResource,
    RemoteTool,
    ServerStatus,
    list_prompts,
    list_resources,
    list_tools,
    offers_resources,
)
from memagent.mcp_bridge.results import CallOutcome, convert_contents, convert_result, prompt_text

if TYPE_CHECKING:
    from mcp import Client
    from mcp.client import Transport

ResultT = TypeVar("ResultT")


class _StatusChange(TypedDict, total=False):
    """The fields of a server's :class:`ServerStatus` that change as it runs."""

    status: str
    reason: str | None
    tools: tuple[RemoteTool, ...]
    prompts: tuple[RemotePrompt, ...]
    resources: bool
    server_info: str
    reconnects: int


CONNECTION_CLOSED = -32000  # JSON-RPC codes the SDK uses for a dead connection / a timeout
REQUEST_TIMEOUT = -32001
RECONNECT_DELAYS = (1.0, 2.0, 4.0, 8.0, 16.0)
RECONNECT_WAIT = 20.0  # at most this long, a call waits for a server that is reconnecting
_STDERR_TAIL = 300


def _one_line(exc: BaseException) -> str:
    """A readable one-line reason, unwrapping the exception groups of task groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return one_line(exc, 200)


def _stderr_tail(log: TextIO | None) -> str:
    if log is None:
        return ""
    try:
        log.flush()
        log.seek(0)
        lines = [line.strip() for line in log.read().splitlines() if line.strip()]
    except (OSError, ValueError):
        return ""
    return lines[-1][-_STDERR_TAIL:] if lines else ""


def _quiet_sdk_logging() -> None:
    """The SDK logs a full traceback for every stdout line a server gets wrong; memagent counts
    them instead (``Noise``). A NullHandler on the SDK's logger keeps Python's last-resort
    handler from printing them, while a logging set-up of the embedding program still sees them."""
    logger = logging.getLogger("mcp")
    if not any(isinstance(handler, logging.NullHandler) for handler in logger.handlers):
        logger.addHandler(logging.NullHandler())


async def _first_of(*events: asyncio.Event) -> None:
    waits = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()


@dataclass
class McpManager:
    """Connections to the configured MCP servers. ``start()`` returns at once."""

    servers: Sequence[ServerSpec]
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    connect_timeout: float = 30.0
    max_result_chars: int = 30_000
    reconnect_delays: Sequence[float] = RECONNECT_DELAYS
    _status: dict[str, ServerStatus] = field(default_factory=dict, init=False)
    _clients: dict[str, Client] = field(default_factory=dict, init=False)
    _lost: dict[str, asyncio.Event] = field(default_factory=dict, init=False)
    _noise: dict[str, Noise] = field(default_factory=dict, init=False)
    _changed: threading.Condition = field(default_factory=threading.Condition, init=False)
    _loop: asyncio.AbstractEventLoop | None = field(default=None, init=False)
    _stop: asyncio.Event | None = field(default=None, init=False)
    _thread: threading.Thread | None = field(default=None, init=False)
    _tasks: dict[str, asyncio.Task[None]] = field(default_factory=dict, init=False)
    _closed: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        for spec in self.servers:
            self._status[spec.name] = ServerStatus(spec.name, spec.transport, spec.target, spec.origin)
            self._noise[spec.name] = Noise()

    # ------------------------------------------------------------------ facade (any thread)

    def start(self) -> None:
        """Start every server in the background (once; a no-op when there is none)."""
        with self._changed:
            if self._thread is not None or self._closed or not self.servers:
                return
            _quiet_sdk_logging()
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
            return [self._with_noise(self._status[spec.name]) for spec in self.servers]

    def status(self, server: str) -> ServerStatus | None:
        with self._changed:
            found = self._status.get(server)
            return self._with_noise(found) if found is not None else None

    def call_tool(self, server: str, tool: str, arguments: JsonObject, timeout: float) -> CallOutcome:
        """Call one tool and wait at most ``timeout`` seconds; failures are error outcomes."""
        return self._request(
            server, lambda client: self._call(server, client, tool, arguments, timeout), timeout, f"MCP tool {tool}"
        )

    def read_resource(self, server: str, uri: str, timeout: float) -> CallOutcome:
        """Read one resource (text, images, binary contents named with their size)."""

        async def read(client: Client) -> CallOutcome:
            result = await self._guarded(server, client.read_resource(uri), timeout, f"reading {uri}")
            if isinstance(result, CallOutcome):
                return result
            return convert_contents(result, self.max_result_chars, server)

        return self._request(server, read, timeout, f"reading {uri}")

    def get_prompt(self, server: str, prompt: str, arguments: dict[str, str], timeout: float) -> CallOutcome:
        """A prompt's messages as one text (``is_error`` with the reason when it fails)."""

        async def get(client: Client) -> CallOutcome:
            result = await self._guarded(server, client.get_prompt(prompt, arguments), timeout, f"prompt {prompt}")
            if isinstance(result, CallOutcome):
                return result
            return CallOutcome(prompt_text(result, server))

        return self._request(server, get, timeout, f"MCP prompt {prompt}")

    def list_resources(self, server: str | None, timeout: float) -> tuple[list[RemoteResource], list[str]]:
        """The resources of one server (or of every ready server that has some): (found, problems)."""
        names = [server] if server else [s.name for s in self.statuses() if s.resources]
        found: list[RemoteResource] = []
        problems: list[str] = []
        for name in names:
            state = self.status(name)
            if state is None:
                problems.append(f"no MCP server named {name!r}")
                continue
            if state.status == READY and not state.resources:
                problems.append(f"MCP server {name!r} offers no resources")
                continue
            box: list[RemoteResource] = []

            async def listing(client: Client, name: str = name, box: list[RemoteResource] = box) -> CallOutcome:
                result = await self._guarded(name, list_resources(name, client), timeout, "listing resources")
                if isinstance(result, CallOutcome):
                    return result
                box.extend(result)
                return CallOutcome("")

            outcome = self._request(name, listing, timeout, "listing resources")
            if outcome.is_error:
                problems.append(outcome.text)
            found += box
        return found, problems

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

    def _with_noise(self, status: ServerStatus) -> ServerStatus:
        summary = self._noise[status.name].summary()
        return replace(status, noise=summary) if summary != status.noise else status

    def _request(
        self, server: str, make: Callable[[Client], Coroutine[object, object, CallOutcome]], timeout: float, what: str
    ) -> CallOutcome:
        """Run ``make(client)`` on the loop and wait for it; every failure is an error outcome."""
        state = self.status(server)
        if state is None:
            return CallOutcome(f"no MCP server named {server!r}", is_error=True)
        if state.status == RECONNECTING:
            with self._changed:
                self._changed.wait_for(
                    lambda: self._status[server].status != RECONNECTING, min(timeout, RECONNECT_WAIT)
                )
            state = self.status(server) or state
        client, loop = self._clients.get(server), self._loop
        if state.status != READY or client is None or loop is None:
            why = f": {state.reason}" if state.reason else ""
            return CallOutcome(f"MCP server {server!r} is not available ({state.status}{why})", is_error=True)
        future = asyncio.run_coroutine_threadsafe(make(client), loop)
        try:
            return future.result(timeout + 5.0)
        except concurrent.futures.TimeoutError:
            future.cancel()
            return CallOutcome(f"{what} on {server!r} did not answer within {timeout:g}s", is_error=True)
        except KeyboardInterrupt:
            future.cancel()
            raise
        except Exception as exc:  # a bug in the bridge must not end the session
            return CallOutcome(f"{what} on {server!r} failed: {_one_line(exc)}", is_error=True)

    # ------------------------------------------------------------------ the loop's thread

    def _shut_down(self, stop: asyncio.Event) -> None:
        stop.set()
        for name, task in self._tasks.items():
            if self._status[name].status in (STARTING, RECONNECTING):
                task.cancel()  # do not wait out a server that is still starting

    def _settled(self) -> bool:
        return all(s.status != STARTING for s in self._status.values())

    def _set(self, name: str, **changes: Unpack[_StatusChange]) -> None:
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
                if self._status[spec.name].status in (STARTING, READY, RECONNECTING):
                    self._set(spec.name, status=STOPPED)
            self._clients.clear()
            loop.close()

    async def _main(self) -> None:
        for spec in self.servers:
            self._tasks[spec.name] = asyncio.create_task(self._serve(spec), name=f"mcp-{spec.name}")
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    async def _serve(self, spec: ServerSpec) -> None:
        """Connect, and reconnect with growing pauses after a connection that worked drops."""
        assert self._stop is not None
        failures, worked = 0, False
        while not self._stop.is_set():
            connected, reason = await self._attempt(spec)
            if self._stop.is_set() or (connected and reason is None):
                return
            worked = worked or connected
            failures = 0 if connected else failures
            if not worked:  # it never started: say why, once
                self._set(spec.name, status=FAILED, reason=reason)
                return
            failures += 1
            if failures > len(self.reconnect_delays):
                tries = len(self.reconnect_delays)
                self._set(spec.name, status=FAILED, reason=f"{reason}; gave up after {tries} reconnection attempts")
                return
            self._set(
                spec.name,
                status=RECONNECTING,
                reason=f"{reason}; reconnecting (attempt {failures} of {len(self.reconnect_delays)})",
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self.reconnect_delays[failures - 1])

    async def _attempt(self, spec: ServerSpec) -> tuple[bool, str | None]:
        """One connection: (did it get ready, why it ended — None when it was stopped)."""
        ready = asyncio.Event()
        task = asyncio.create_task(self._connection(spec, ready))
        ready_wait = asyncio.ensure_future(ready.wait())
        try:
            done, _ = await asyncio.wait(
                {task, ready_wait}, timeout=self.connect_timeout, return_when=asyncio.FIRST_COMPLETED
            )
            if not done:
                reason = f"did not answer within {self.connect_timeout:g}s"
                if self._status[spec.name].status == STARTING:
                    self._set(spec.name, status=FAILED, reason=reason)  # say so now; stopping it may take a while
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                return False, reason
            return ready.is_set(), await task
        except asyncio.CancelledError:  # the manager is closing: take the connection down with us
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise
        finally:
            ready_wait.cancel()

    async def _connection(self, spec: ServerSpec, ready: asyncio.Event) -> str | None:
        """Connect, list, serve until stopped or lost; returns why it ended (None: stopped)."""
        assert self._stop is not None
        log = (
            io.TextIOWrapper(tempfile.TemporaryFile(), encoding="utf-8", errors="replace")
            if isinstance(spec, StdioServer)
            else None
        )
        lost = self._lost[spec.name] = asyncio.Event()
        reason: str | None = None
        try:
            async with contextlib.AsyncExitStack() as stack:
                client = await self._connect(spec, stack, log)
                tools = await list_tools(spec.name, client)
                prompts = await list_prompts(spec.name, client)
                resources = await offers_resources(client)
                self._clients[spec.name] = client
                reconnects = self._status[spec.name].reconnects + (
                    1 if self._status[spec.name].status == RECONNECTING else 0
                )
                self._set(
                    spec.name,
                    status=READY,
                    reason=None,
                    server_info=self._info(client),
                    reconnects=reconnects,
                    tools=tools,
                    prompts=prompts,
                    resources=resources,
                )
                ready.set()
                await _first_of(self._stop, lost)
                self._clients.pop(spec.name, None)
                reason = None if self._stop.is_set() else (self._status[spec.name].reason or "connection lost")
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 — one server's failure is one line, never more
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            if reason is None and not (ready.is_set() and lost.is_set()):
                tail = _stderr_tail(log)
                reason = _one_line(exc) + (f" (stderr: {tail})" if tail else "")
            elif reason is None:
                reason = self._status[spec.name].reason or "connection lost"
        finally:
            self._clients.pop(spec.name, None)
            if log is not None:
                log.close()
        return reason

    async def _connect(
        self, spec: ServerSpec, stack: contextlib.AsyncExitStack[bool | None], log: TextIO | None
    ) -> Client:
        from mcp import Client
        from mcp.types import Implementation

        info = Implementation(name="memagent", version=__version__)
        noise = self._noise[spec.name]

        async def on_message(message: object) -> None:
            if isinstance(message, Exception):
                noise.add(message)

        if isinstance(spec, HttpServer) and spec.sse:
            from mcp.client.sse import sse_client

            transport: Transport = sse_client(
                spec.url, headers=dict(spec.headers), timeout=30.0, sse_read_timeout=300.0
            )
        elif isinstance(spec, HttpServer):
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=dict(spec.headers), timeout=httpx2.Timeout(30.0, read=300.0))
            )
            transport = streamable_http_client(spec.url, http_client=http)
        else:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            params = StdioServerParameters(
                command=spec.command,
                args=list(spec.args),
                env=server_environment(spec, self.env),
                cwd=str(self.cwd) if self.cwd else None,
            )
            transport = stdio_client(params, errlog=log if log is not None else sys.stderr)
        return await stack.enter_async_context(
            Client(transport, client_info=info, cache=None, message_handler=on_message)
        )

    @staticmethod
    def _info(client: Client) -> str:
        info = getattr(client, "server_info", None)
        if info is None:
            return ""
        return f"{info.name} {info.version}".strip()

    async def _guarded(
        self, server: str, request: Awaitable[ResultT], timeout: float, what: str, grace: float = 0.0
    ) -> ResultT | CallOutcome:
        """Await one request (at most ``timeout`` + ``grace`` s); a protocol error or a dead
        connection becomes an error outcome."""
        from mcp import MCPError

        try:
            return await asyncio.wait_for(request, timeout + grace)
        except TimeoutError:
            return CallOutcome(f"{what} on {server!r} did not answer within {timeout:g}s", is_error=True)
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                return CallOutcome(f"{what} on {server!r} did not answer within {timeout:g}s", is_error=True)
            if exc.code == CONNECTION_CLOSED:
                return self._crashed(server, what, exc)
            return CallOutcome(f"MCP server {server!r} refused {what}: {exc.message}", is_error=True)
        except Exception as exc:  # noqa: BLE001 — a broken connection is an error result
            return self._crashed(server, what, exc)

    async def _call(self, server: str, client: Client, tool: str, arguments: JsonObject, timeout: float) -> CallOutcome:
        result = await self._guarded(
            server,
            client.call_tool(tool, arguments, read_timeout_seconds=timeout),
            timeout,
            f"MCP tool {tool}",
            grace=1.0,
        )
        if isinstance(result, CallOutcome):
            return result
        return convert_result(result, self.max_result_chars, server)

    def _crashed(self, server: str, what: str, exc: BaseException) -> CallOutcome:
        reason = f"connection lost: {_one_line(exc)}"
        self._clients.pop(server, None)
        if self._stop is not None and not self._stop.is_set() and self.reconnect_delays:
            self._set(server, status=RECONNECTING, reason=reason)
        else:
            self._set(server, status=FAILED, reason=reason)
        lost = self._lost.get(server)
        if lost is not None:
            lost.set()
        return CallOutcome(f"MCP server {server!r} stopped working ({reason}); {what} was not completed", is_error=True)


__all__ = [
    "FAILED",
    "McpManager",
    "READY",
    "RECONNECTING",
    "RemotePrompt",
    "RemoteResource",
    "RemoteTool",
    "STARTING",
    "STOPPED",
    "ServerStatus",
]
