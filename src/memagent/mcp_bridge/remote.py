"""What an MCP server offers, as memagent keeps it: tools, prompts, resources, and its status.

Also the async helpers that read those lists from a connected client (paged, capped), and the
counter of lines a stdio server wrote to stdout that were not JSON-RPC (noise is summarised in
one line instead of a traceback per line).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memagent.jsontypes import JsonObject

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import ServerCapabilities, Tool

STARTING, READY, RECONNECTING, FAILED, STOPPED = "starting", "ready", "reconnecting", "failed", "stopped"
MAX_PAGES = 50  # a server that never stops paging is cut off
MAX_RESOURCES = 500


@dataclass(frozen=True)
class RemoteTool:
    """One tool a server offers, as it listed it."""

    server: str
    name: str
    description: str
    input_schema: JsonObject
    task_only: bool = False  # the tool runs only as an MCP task (``execution.taskSupport: required``)
    # The server's own hints (MCP tool annotations); None where it gave none.
    read_only: bool | None = None
    destructive: bool | None = None


@dataclass(frozen=True)
class PromptArgument:
    name: str
    description: str = ""
    required: bool = False


@dataclass(frozen=True)
class RemotePrompt:
    """A prompt template a server offers (a slash command ``/mcp__<server>__<prompt>``)."""

    server: str
    name: str
    description: str = ""
    arguments: tuple[PromptArgument, ...] = ()


@dataclass(frozen=True)
class RemoteResource:
    server: str
    uri: str
    name: str = ""
    description: str = ""
    mime_type: str = ""

    def line(self) -> str:
        about = ", ".join(x for x in (self.name, self.mime_type) if x)
        text = f"{self.uri}" + (f" ({about})" if about else "")
        return text + (f" — {' '.join(self.description.split())[:200]}" if self.description.strip() else "")


@dataclass(frozen=True)
class ServerStatus:
    name: str
    transport: str
    target: str
    origin: str
    status: str = STARTING
    reason: str | None = None
    tools: tuple[RemoteTool, ...] = ()
    prompts: tuple[RemotePrompt, ...] = ()
    resources: bool = False  # the server offers resources (read through list/read_mcp_resource)
    server_info: str = ""  # "name version" the server announced
    noise: str = ""  # one line about stdout lines that were not JSON-RPC, if any
    reconnects: int = 0  # successful reconnections after a dropped connection

    def as_dict(self) -> JsonObject:
        return {
            "name": self.name,
            "transport": self.transport,
            "target": self.target,
            "origin": self.origin,
            "status": self.status,
            "reason": self.reason,
            "server_info": self.server_info,
            "tools": [_tool_row(t) for t in self.tools],
            "prompts": [p.name for p in self.prompts],
            "resources": self.resources,
            "noise": self.noise,
        }


def _tool_row(tool: RemoteTool) -> JsonObject:
    row: JsonObject = {"name": tool.name, "description": tool.description}
    if tool.task_only:
        row["task_only"] = True
    return row


@dataclass
class Noise:
    """Lines a server wrote to stdout that were not JSON-RPC: counted, the first one kept."""

    count: int = 0
    first: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, problem: BaseException) -> None:
        with self._lock:
            self.count += 1
            if not self.first:
                self.first = _offending_input(problem)

    def summary(self) -> str:
        if not self.count:
            return ""
        one = self.count == 1
        first = f" (first: {self.first!r})" if self.first else ""
        return (
            f"ignored {self.count} line{'' if one else 's'} of stdout that {'is' if one else 'are'} not MCP JSON{first}"
        )


def _offending_input(problem: BaseException) -> str:
    errors = getattr(problem, "errors", None)
    if callable(errors):
        try:
            value = errors()[0].get("input")
        except Exception:  # not a pydantic error after all
            value = None
        if isinstance(value, (str, bytes)):
            text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
            return " ".join(text.split())[:80]
    return ""


def _task_only(tool: Tool) -> bool:
    execution = getattr(tool, "execution", None)
    return getattr(execution, "task_support", None) == "required"


def _capabilities(client: Client) -> ServerCapabilities | None:
    try:
        return client.server_capabilities
    except Exception:  # not connected in the expected way: offer tools only
        return None


async def list_tools(server: str, client: Client) -> tuple[RemoteTool, ...]:
    found: list[RemoteTool] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        for tool in page.tools:
            schema = dict(tool.input_schema or {}) or {"type": "object", "properties": {}}
            hints = tool.annotations
            found.append(
                RemoteTool(
                    server,
                    tool.name,
                    tool.description or "",
                    schema,
                    _task_only(tool),
                    getattr(hints, "read_only_hint", None),
                    getattr(hints, "destructive_hint", None),
                )
            )
        cursor = page.next_cursor
        if not cursor:
            break
    return tuple(found)


async def list_prompts(server: str, client: Client) -> tuple[RemotePrompt, ...]:
    capabilities = _capabilities(client)
    if capabilities is None or getattr(capabilities, "prompts", None) is None:
        return ()
    found: list[RemotePrompt] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await client.list_prompts(cursor=cursor)
        for prompt in page.prompts:
            arguments = tuple(
                PromptArgument(a.name, a.description or "", bool(a.required)) for a in prompt.arguments or []
            )
            found.append(RemotePrompt(server, prompt.name, prompt.description or "", arguments))
        cursor = page.next_cursor
        if not cursor:
            break
    return tuple(found)


async def offers_resources(client: Client) -> bool:
    """The server declares resources and lists at least one (many servers declare the
    capability with nothing behind it)."""
    capabilities = _capabilities(client)
    if capabilities is None or getattr(capabilities, "resources", None) is None:
        return False
    page = await client.list_resources()
    return bool(page.resources)


async def list_resources(server: str, client: Client) -> list[RemoteResource]:
    found: list[RemoteResource] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await client.list_resources(cursor=cursor)
        for item in page.resources:
            found.append(
                RemoteResource(server, str(item.uri), item.name or "", item.description or "", item.mime_type or "")
            )
        cursor = page.next_cursor
        if not cursor or len(found) >= MAX_RESOURCES:
            break
    return found[:MAX_RESOURCES]


__all__ = [
    "FAILED",
    "Noise",
    "PromptArgument",
    "READY",
    "RECONNECTING",
    "RemotePrompt",
    "RemoteResource",
    "RemoteTool",
    "STARTING",
    "STOPPED",
    "ServerStatus",
    "list_prompts",
    "list_resources",
    "list_tools",
    "offers_resources",
]
