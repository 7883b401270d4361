"""MCP servers' tools as memagent tools (``mcp__<server>__<tool>``).

Servers come from ``.mcp.json`` (project, used only when the project is trusted) and
``$MEMAGENT_HOME/mcp.json`` (user); see :mod:`memagent.mcp_bridge.config` for the format.

Timing: nothing starts when the feature is built. The first call to :meth:`tools` — made while
the session is being composed, which the REPL does in the background after its prompt is shown —
starts every server at once, waits at most ``mcp_startup_wait`` seconds for those still starting,
and freezes the tool list: the tools of servers ready by then are offered for the whole session,
in a fixed order, so the cached prompt prefix stays byte-stable. A server that is late, fails to
start or crashes costs one warning line; calls to it return an error result.

An MCP tool runs someone else's code: it is declared to run code (it asks, like ``bash``)
unless its server annotates it ``readOnlyHint``; a ``destructiveHint`` is shown when asking.

Tool lists are pinned (:func:`pinned_tool_lists`): the first list a server shows in a project is
recorded as approved (its digest, in ``$MEMAGENT_HOME``); a server whose list changed since —
names, descriptions, schemas, annotations — offers no tools until the new list is approved
(``/mcp approve NAME`` in the REPL, ``memagent mcp approve NAME``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from memagent.agent.feature import BaseFeature, Feature, SubagentContext
from memagent.mcp_bridge.config import PROJECT_FILE, USER_FILE, McpConfig, load_mcp_config, tool_name
from memagent.mcp_bridge.manager import FAILED, READY, STARTING, McpManager, RemoteTool, ServerStatus
from memagent.permissions.effects import Declaration, Effect, declares
from memagent.tools.base import RawArguments, RawSchemaTool, Tool, ToolContext, ToolOutcome

if TYPE_CHECKING:
    from memagent.config import ProjectPaths, Settings

Warn = Callable[[str], None]
# (server, origin, its tools) -> may they be offered? Records a first list as approved.
ToolPins = Callable[[str, str, "tuple[RemoteTool, ...]"], bool]


def tool_list_digest(tools: "tuple[RemoteTool, ...]") -> str:
    from memagent.trust import tools_digest

    return tools_digest({k: v for k, v in dataclasses.asdict(t).items() if k != "server"} for t in tools)


def pinned_tool_lists(home: Path, root: Path, warn: Warn) -> ToolPins:
    """Tool-list pins kept in the project's trust record; a store that cannot be written is a
    warning (the list is offered, not recorded)."""
    from memagent.trust import TrustError, approve_mcp_tools, mcp_tools_known

    def check(server: str, origin: str, tools: "tuple[RemoteTool, ...]") -> bool:
        digest = tool_list_digest(tools)
        known = mcp_tools_known(home, root, f"{origin}:{server}", digest)
        if known is None:
            try:
                approve_mcp_tools(home, root, f"{origin}:{server}", digest)
            except TrustError as exc:
                warn(f"MCP server {server}: its tool list was not recorded: {exc}")
            return True
        return known

    return check


def _key_argument(schema: dict[str, Any]) -> str | None:
    """The first required string property: what a one-line summary of a call shows."""
    properties = schema.get("properties") or {}
    for name in schema.get("required") or []:
        if isinstance(properties.get(name), dict) and properties[name].get("type") == "string":
            return str(name)
    return None


class SharedTools(BaseFeature):
    """Tools a subagent borrows from a feature of its session."""

    def __init__(self, name: str, tools: list[Tool]) -> None:
        self.name = name
        self._tools = tools

    def tools(self) -> list[Tool]:
        return list(self._tools)

    def for_subagent(self, child: SubagentContext) -> Feature:
        return self


def remote_effects(remote: RemoteTool) -> Declaration:
    """What a call does, by the server's annotations: read-only when it says so, else it acts."""
    if remote.read_only:
        return declares(Effect.READ)
    note = "its server says it may delete or overwrite data" if remote.destructive else ""
    return declares(Effect.RUN, note=note)


def _describe(remote: RemoteTool) -> str:
    text = remote.description.strip() or f"The {remote.name} tool."
    return f"{text}\n\n(MCP tool {remote.name!r} of the {remote.server!r} server.)"


class McpClientFeature(BaseFeature):
    name = "mcp"

    def __init__(
        self,
        config: McpConfig,
        *,
        env: Mapping[str, str],
        root: Path,
        startup_wait: float = 10.0,
        connect_timeout: float = 30.0,
        call_timeout: float = 120.0,
        warn: Warn = lambda line: None,
        pin_tools: ToolPins | None = None,
    ) -> None:
        self.config = config
        self.pin_tools = pin_tools
        self.withheld: list[str] = []  # servers whose changed tool list is not offered
        self.startup_wait = startup_wait
        self.call_timeout = call_timeout
        self.warn = warn
        self.manager = McpManager(config.servers, env=dict(env), cwd=root, connect_timeout=connect_timeout)
        self._frozen: list[Tool] | None = None
        self._said_config = False

    # ------------------------------------------------------------------ Feature hooks

    def tools(self) -> list[Tool]:
        if self._frozen is None:
            self._frozen = self._freeze()
        return list(self._frozen)

    def close(self) -> None:
        self.manager.close()

    def for_subagent(self, child: SubagentContext) -> Feature:
        """The session's servers (their tools only: they stay the session's to close)."""
        return SharedTools(self.name, self.tools())

    # ------------------------------------------------------------------ helpers

    def start(self) -> None:
        """Start the servers now (``tools()`` does it too); returns at once."""
        self._report_config()
        self.manager.start()

    def statuses(self) -> list[ServerStatus]:
        return self.manager.statuses()

    def _report_config(self) -> None:
        if self._said_config:
            return
        self._said_config = True
        for problem in self.config.problems:
            self.warn(f"MCP: {problem}")
        for broken in self.config.broken:
            self.warn(f"MCP server {broken.name} not started: {broken.reason}")
        if self.config.untrusted:
            names = ", ".join(self.config.untrusted)
            self.warn(f"MCP servers in {PROJECT_FILE} not used, the project is not trusted: {names}")

    def _freeze(self) -> list[Tool]:
        self.start()
        if not self.config.servers:
            return []
        self.manager.wait_ready(self.startup_wait)
        tools: list[Tool] = []
        seen: set[str] = set()
        for status in self.manager.statuses():
            if status.status == STARTING:
                self.warn(
                    f"MCP server {status.name} still starting after {self.startup_wait:g}s; "
                    "its tools are not offered in this session"
                )
            elif status.status == FAILED:
                self.warn(f"MCP server {status.name} failed: {status.reason}")
            if status.status != READY:
                continue
            if self.pin_tools is not None and not self.pin_tools(status.name, status.origin, status.tools):
                self.withheld.append(status.name)
                self.warn(f"MCP server {status.name} changed its tools since they were approved; they are not "
                          f"offered (`/mcp approve {status.name}` or `memagent mcp approve {status.name}` approves them)")
                continue
            for remote in status.tools:
                name = tool_name(remote.server, remote.name)
                if name in seen:
                    self.warn(f"MCP tool {remote.name} of {remote.server} left out: its name clashes as {name}")
                    continue
                seen.add(name)
                tools.append(self._tool(name, remote))
        return tools

    def _tool(self, name: str, remote: RemoteTool) -> Tool:
        def run(arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
            outcome = self.manager.call_tool(remote.server, remote.name, arguments, self.call_timeout)
            if outcome.is_error and self.manager.status(remote.server) is not None:
                status = self.manager.status(remote.server)
                if status is not None and status.status == FAILED and "stopped working" in outcome.text:
                    self.warn(f"MCP server {remote.server} stopped: {status.reason}")
            return ToolOutcome(outcome.text, outcome.is_error, outcome.images)

        return RawSchemaTool(
            name=name,
            description=_describe(remote),
            input_model=RawArguments,
            handler=run,
            effects=remote_effects(remote),
            key_argument=_key_argument(remote.input_schema),
            input_schema=remote.input_schema,
        )


def mcp_client_feature(
    paths: "ProjectPaths",
    settings: "Settings",
    env: Mapping[str, str],
    *,
    project_trusted: bool,
    warn: Warn,
    extra_servers: Mapping[str, Any] | None = None,
) -> McpClientFeature:
    """The feature as the runtime composes it: ``$MEMAGENT_HOME/mcp.json`` and the project's
    ``.mcp.json`` (the latter only when the project is trusted), the servers given on the
    command line (``--mcp-config``), the ``mcp_*`` settings, and tool lists pinned in the
    project's trust record."""
    config = load_mcp_config(paths.home / USER_FILE, paths.root / PROJECT_FILE, env, project_trusted=project_trusted,
                             extra_servers=extra_servers)
    return McpClientFeature(
        config,
        env=env,
        root=paths.root,
        startup_wait=settings.mcp_startup_wait,
        connect_timeout=settings.mcp_connect_timeout,
        call_timeout=settings.mcp_tool_timeout,
        warn=warn,
        pin_tools=pinned_tool_lists(paths.home, paths.root, warn),
    )


def approve_tool_list(home: Path, root: Path, status: ServerStatus) -> str:
    """Record the tool list ``status`` shows as approved for its server; the digest."""
    from memagent.trust import approve_mcp_tools

    digest = tool_list_digest(status.tools)
    approve_mcp_tools(home, root, f"{status.origin}:{status.name}", digest)
    return digest


__all__ = ["McpClientFeature", "approve_tool_list", "mcp_client_feature", "pinned_tool_lists", "tool_list_digest"]
