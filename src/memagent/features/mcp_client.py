"""MCP servers in a session: their tools (``mcp__<server>__<tool>``), their resources (the
``list_mcp_resources`` and ``read_mcp_resource`` tools) and their prompts (slash commands
``/mcp__<server>__<prompt>``).

Servers come from ``.mcp.json`` (project, used only when the project is trusted) and
``$MEMAGENT_HOME/mcp.json`` (user); see :mod:`memagent.mcp_bridge.config` for the format.

Timing: nothing starts when the feature is built. The first call to :meth:`tools` — made while
the session is being composed, which the REPL does in the background after its prompt is shown —
starts every server at once, waits at most ``mcp_startup_wait`` seconds for those still starting,
and freezes the tool list: the tools of servers ready by then are offered for the whole session,
in a fixed order, so the cached prompt prefix stays byte-stable. A server that is late, fails to
start or crashes costs one warning line; calls to it return an error result (a dropped server is
reconnected in the background, see :mod:`memagent.mcp_bridge.manager`).

What is offered is made acceptable to the Messages API first: a tool whose schema has a
top-level ``anyOf``/``oneOf``/``allOf`` is rewritten (:mod:`memagent.mcp_bridge.schemas`) or, when
that is impossible, left out with a notice; a tool that runs only as an MCP task is left out too.

An MCP tool runs someone else's code: it is declared to run code (it asks, like ``bash``)
unless its server annotates it ``readOnlyHint``; a ``destructiveHint`` is shown when asking.
Listing and reading resources change nothing and run without asking.

Tool lists are pinned (:func:`pinned_tool_lists`): the first list a server shows in a project is
recorded as approved (its digest, in ``$MEMAGENT_HOME``); a server whose list changed since —
names, descriptions, schemas, annotations — offers no tools until the new list is approved
(``/mcp approve NAME`` in the REPL, ``memagent mcp approve NAME``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field

from memagent.agent.feature import BaseFeature, Feature, SlashCommand, SlashInput, SlashReply, SubagentContext
from memagent.commands_md import Invocation, split_arguments
from memagent.jsontypes import JsonObject, JsonValue, json_list, json_object
from memagent.mcp_bridge.config import PROJECT_FILE, USER_FILE, McpConfig, load_mcp_config, tool_name
from memagent.mcp_bridge.manager import FAILED, READY, STARTING, McpManager, RemotePrompt, RemoteTool, ServerStatus
from memagent.mcp_bridge.report import render_rows, server_rows
from memagent.mcp_bridge.schemas import SchemaError, api_schema
from memagent.permissions.effects import Declaration, Effect, declares
from memagent.tools import claude_names
from memagent.tools.base import (
    RawArguments,
    RawSchemaTool,
    RegisteredTool,
    ToolContext,
    ToolError,
    ToolInput,
    ToolOutcome,
    tool,
)

if TYPE_CHECKING:
    from memagent.config import ProjectPaths, Settings

Warn = Callable[[str], None]
RESOURCE_TIMEOUT = 60.0
# (server, origin, its tools) -> may they be offered? Records a first list as approved.
ToolPins = Callable[[str, str, "tuple[RemoteTool, ...]"], bool]


def tool_list_digest(tools: tuple[RemoteTool, ...]) -> str:
    from memagent.trust import tools_digest

    return tools_digest({k: v for k, v in dataclasses.asdict(t).items() if k != "server"} for t in tools)


def pinned_tool_lists(home: Path, root: Path, warn: Warn) -> ToolPins:
    """Tool-list pins kept in the project's trust record; a store that cannot be written is a
    warning (the list is offered, not recorded)."""
    from memagent.trust import TrustError, approve_mcp_tools, mcp_tools_known

    def check(server: str, origin: str, tools: tuple[RemoteTool, ...]) -> bool:
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


def _key_argument(schema: JsonObject) -> str | None:
    """The first required string property: what a one-line summary of a call shows (None when
    the schema names none, or its ``properties`` or ``required`` are not what JSON Schema says)."""
    properties = json_object(schema.get("properties"))
    for name in json_list(schema.get("required")):
        if isinstance(name, str) and json_object(properties.get(name)).get("type") == "string":
            return name
    return None


class SharedTools(BaseFeature):
    """Tools a subagent borrows from a feature of its session."""

    def __init__(self, name: str, tools: list[RegisteredTool]) -> None:
        self.name = name
        self._tools = tools

    def tools(self) -> list[RegisteredTool]:
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


@dataclass(frozen=True)
class McpPromptCommand:
    """An MCP prompt as the slash command ``/mcp__<server>__<prompt>``: the words after the name
    fill the prompt's arguments in order (the last one takes the rest)."""

    prompt: RemotePrompt
    fetch: Callable[[str, str, dict[str, str]], tuple[str, bool]]  # (server, prompt, args) → (text, is_error)

    @property
    def name(self) -> str:
        return tool_name(self.prompt.server, self.prompt.name)

    @property
    def description(self) -> str:
        text = " ".join(self.prompt.description.split()) or f"the {self.prompt.name} prompt"
        return text if len(text) <= 80 else text[:79] + "…"

    @property
    def argument_hint(self) -> str:
        return " ".join(f"<{a.name}>" if a.required else f"[{a.name}]" for a in self.prompt.arguments)

    @property
    def source(self) -> str:
        return f"MCP server {self.prompt.server}"

    @property
    def usage(self) -> str:
        return f"/{self.name}" + (f" {self.argument_hint}" if self.argument_hint else "")

    def invoke(self, arguments: str) -> Invocation:
        words = split_arguments(arguments)
        declared = self.prompt.arguments
        values: dict[str, str] = {}
        for index, argument in enumerate(declared):
            if index < len(words):
                last = index == len(declared) - 1
                values[argument.name] = " ".join(words[index:]) if last else words[index]
        missing = [a.name for a in declared if a.required and a.name not in values]
        if missing or (words and not declared):
            why = f"missing {', '.join(missing)}" if missing else "this prompt takes no arguments"
            return Invocation(f"/{self.name}", error=f"{why}; usage: {self.usage}")
        text, is_error = self.fetch(self.prompt.server, self.prompt.name, values)
        if is_error:
            return Invocation(f"/{self.name}", error=text)
        if not text.strip():
            return Invocation(f"/{self.name}", error=f"the MCP prompt {self.prompt.name} came back empty")
        return Invocation(f"/{self.name}", text, arguments.strip())


class ListResourcesInput(ToolInput):
    server: str | None = Field(default=None, description="Only this MCP server's resources (default: every server's).")


class ReadResourceInput(ToolInput):
    server: str = Field(description="The MCP server that has the resource.")
    uri: str = Field(description="The resource's URI, as listed by list_mcp_resources or linked in a tool result.")


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
        home: Path | None = None,
    ) -> None:
        self.config = config
        self.root = root
        self.home = home  # where the trust record keeps approved tool lists (/mcp approve)
        self.pin_tools = pin_tools
        self.withheld: list[str] = []  # servers whose changed tool list is not offered
        self.startup_wait = startup_wait
        self.call_timeout = call_timeout
        self.warn = warn
        self.manager = McpManager(config.servers, env=dict(env), cwd=root, connect_timeout=connect_timeout)
        self._frozen: list[RegisteredTool] | None = None
        self._said_config = False
        self._told_noise: set[str] = set()

    # ------------------------------------------------------------------ Feature hooks

    def tools(self) -> list[RegisteredTool]:
        if self._frozen is None:
            self._frozen = self._freeze()
        return list(self._frozen)

    def close(self) -> None:
        self.manager.close()

    def for_subagent(self, child: SubagentContext) -> Feature:
        """The session's servers (their tools only: they stay the session's to close)."""
        return SharedTools(self.name, self.tools())

    # ------------------------------------------------------------------ /mcp

    def show(self, command: SlashInput) -> SlashReply:
        """``/mcp``: each server's status (ready, failed and why, late) and tools; ``/mcp approve
        NAME`` approves the server's tool list as it is now, for this project."""
        verb, _, name = command.argument.partition(" ")
        if verb == "approve":
            return self.approve(name.strip())
        return SlashReply(render_rows(server_rows(self.config, self.statuses()), self.config.problems))

    def approve(self, name: str) -> SlashReply:
        from memagent.trust import TrustError

        status = next((s for s in self.statuses() if s.name == name), None)
        if status is None or status.status != READY:
            return SlashReply(f"no running MCP server named {name!r}; /mcp lists them", error=True)
        if self.home is None:
            return SlashReply("this session keeps no trust record: nothing can be approved", error=True)
        try:
            approve_tool_list(self.home, self.root, status)
        except TrustError as exc:
            return SlashReply(str(exc), error=True)
        tools = ", ".join(t.name for t in status.tools) or "no tools"
        return SlashReply(
            f"Approved the tools of {name} ({tools}); they are offered from the next session (/clear starts one)."
        )

    slash_commands = (
        SlashCommand(
            "mcp",
            "/mcp [approve NAME]",
            "MCP servers: status and tools; approve a server's changed tool list",
            show,
            "MCP is not enabled in this session.",
        ),
    )

    # ------------------------------------------------------------------ helpers

    def start(self) -> None:
        """Start the servers now (``tools()`` does it too); returns at once."""
        self._report_config()
        self.manager.start()

    def statuses(self) -> list[ServerStatus]:
        return self.manager.statuses()

    def commands(self) -> list[McpPromptCommand]:
        """The prompts of the servers ready when the tool list was frozen, as slash commands."""
        self.tools()
        return [
            McpPromptCommand(prompt, self._fetch_prompt)
            for status in self.manager.statuses()
            if status.status == READY
            for prompt in status.prompts
        ]

    def _fetch_prompt(self, server: str, prompt: str, arguments: dict[str, str]) -> tuple[str, bool]:
        outcome = self.manager.get_prompt(server, prompt, arguments, self.call_timeout)
        return outcome.text, outcome.is_error

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

    def _freeze(self) -> list[RegisteredTool]:
        self.start()
        if not self.config.servers:
            return []
        self.manager.wait_ready(self.startup_wait)
        tools: list[RegisteredTool] = []
        seen: set[str] = set()
        for status in self.manager.statuses():
            self._report_status(status)
            if status.status != READY:
                continue
            if self.pin_tools is not None and not self.pin_tools(status.name, status.origin, status.tools):
                self.withheld.append(status.name)
                self.warn(
                    f"MCP server {status.name} changed its tools since they were approved; they are not "
                    f"offered (`/mcp approve {status.name}` or `memagent mcp approve {status.name}` approves them)"
                )
                continue
            for remote in status.tools:
                made = self._offer(remote, seen)
                if made is not None:
                    tools.append(made)
        if any(s.status == READY and s.resources and s.name not in self.withheld for s in self.manager.statuses()):
            tools += self._resource_tools()
        return tools

    def _report_status(self, status: ServerStatus) -> None:
        if status.status == STARTING:
            self.warn(
                f"MCP server {status.name} still starting after {self.startup_wait:g}s; "
                "its tools are not offered in this session"
            )
        elif status.status == FAILED:
            self.warn(f"MCP server {status.name} failed: {status.reason}")
        self._report_noise(status)

    def _report_noise(self, status: ServerStatus | None) -> None:
        if status is not None and status.noise and status.name not in self._told_noise:
            self._told_noise.add(status.name)
            self.warn(f"MCP server {status.name}: {status.noise}")

    def _offer(self, remote: RemoteTool, seen: set[str]) -> RegisteredTool | None:
        """The tool as the model gets it, or None (with a notice) when it cannot be offered."""
        name = tool_name(remote.server, remote.name)
        if remote.task_only:
            self.warn(
                f"MCP tool {remote.name} of {remote.server} left out: it runs only as an MCP task, "
                "which memagent does not support"
            )
            return None
        if name in seen:
            self.warn(f"MCP tool {remote.name} of {remote.server} left out: its name clashes as {name}")
            return None
        try:
            schema = api_schema(remote.input_schema)
        except SchemaError as exc:
            self.warn(f"MCP tool {remote.name} of {remote.server} left out: {exc}")
            return None
        seen.add(name)
        return self._tool(name, remote, schema)

    def _tool(self, name: str, remote: RemoteTool, schema: JsonObject) -> RegisteredTool:
        def run(arguments: RawArguments, ctx: ToolContext) -> ToolOutcome:
            outcome = self.manager.call_tool(remote.server, remote.name, arguments.root, self.call_timeout)
            status = self.manager.status(remote.server)
            if outcome.is_error and status is not None and status.status != READY and "stopped working" in outcome.text:
                self.warn(f"MCP server {remote.server} stopped: {status.reason}")
            self._report_noise(status)
            return ToolOutcome(outcome.text, outcome.is_error, outcome.images)

        return RawSchemaTool(
            name=name,
            description=_describe(remote),
            input_model=RawArguments,
            handler=run,
            effects=remote_effects(remote),
            key_argument=_key_argument(schema),
            input_schema=schema,
        )

    def _refuse_withheld(self, server: str | None) -> None:
        if server is not None and server in self.withheld:
            raise ToolError(
                f"MCP server {server} changed its tools since they were approved; it is not used "
                f"until `/mcp approve {server}`"
            )

    def _resource_tools(self) -> list[RegisteredTool]:
        manager = self.manager

        @tool(
            "list_mcp_resources",
            ListResourcesInput,
            key_argument="server",
            effects=declares(Effect.READ),
            claude=claude_names.LIST_MCP_RESOURCES,
        )
        def list_mcp_resources(args: ListResourcesInput, ctx: ToolContext) -> str:
            """List the resources (files, documents, records) the connected MCP servers offer: one
            line per resource with its server and URI. Read one with read_mcp_resource."""
            self._refuse_withheld(args.server)
            found, problems = manager.list_resources(args.server, RESOURCE_TIMEOUT)
            found = [r for r in found if r.server not in self.withheld]
            if not found and problems:
                raise ToolError("; ".join(problems))
            lines = [f"{r.server}: {r.line()}" for r in found] or ["(no resources)"]
            return "\n".join(lines + [f"! {p}" for p in problems])

        @tool(
            "read_mcp_resource",
            ReadResourceInput,
            key_argument="uri",
            effects=declares(Effect.READ),
            claude=claude_names.READ_MCP_RESOURCE,
        )
        def read_mcp_resource(args: ReadResourceInput, ctx: ToolContext) -> ToolOutcome:
            """Read one resource of an MCP server by its URI (from list_mcp_resources, or a resource
            link in a tool result). Text comes back as text, images as images."""
            self._refuse_withheld(args.server)
            outcome = manager.read_resource(args.server, args.uri, RESOURCE_TIMEOUT)
            return ToolOutcome(outcome.text, outcome.is_error, outcome.images)

        return [list_mcp_resources, read_mcp_resource]


def mcp_client_feature(
    paths: ProjectPaths,
    settings: Settings,
    env: Mapping[str, str],
    *,
    project_trusted: bool,
    warn: Warn,
    extra_servers: Mapping[str, JsonValue] | None = None,
) -> McpClientFeature:
    """The feature as the runtime composes it: ``$MEMAGENT_HOME/mcp.json`` and the project's
    ``.mcp.json`` (the latter only when the project is trusted), the servers given on the
    command line (``--mcp-config``), the ``mcp_*`` settings, and tool lists pinned in the
    project's trust record."""
    config = load_mcp_config(
        paths.home / USER_FILE,
        paths.root / PROJECT_FILE,
        env,
        project_trusted=project_trusted,
        extra_servers=extra_servers,
    )
    return McpClientFeature(
        config,
        env=env,
        root=paths.root,
        startup_wait=settings.mcp_startup_wait,
        connect_timeout=settings.mcp_connect_timeout,
        call_timeout=settings.mcp_tool_timeout,
        warn=warn,
        pin_tools=pinned_tool_lists(paths.home, paths.root, warn),
        home=paths.home,
    )


def approve_tool_list(home: Path, root: Path, status: ServerStatus) -> str:
    """Record the tool list ``status`` shows as approved for its server; the digest."""
    from memagent.trust import approve_mcp_tools

    digest = tool_list_digest(status.tools)
    approve_mcp_tools(home, root, f"{status.origin}:{status.name}", digest)
    return digest


__all__ = [
    "McpClientFeature",
    "McpPromptCommand",
    "approve_tool_list",
    "mcp_client_feature",
    "pinned_tool_lists",
    "tool_list_digest",
]
