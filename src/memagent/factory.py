"""The agent factory: building an agent — model, tools, gate, context policy, features — apart
from opening a session (trust, settings, resume, transcripts, retention: :mod:`memagent.runtime`).

:func:`compose_features` makes a session's capabilities from its :class:`Parts`, in a fixed order;
:func:`build_agent` turns parts, features and :class:`Controls` into an :class:`Agent` (system
prompt, tool registry, context policy, tool context). A subagent is built by the same two steps
(:class:`Spawner`): its parts are its own (conversation and transcript of kind ``subagent``, todo
list, compaction channel), its features are what each of its parent's features gives a subagent
(``Feature.for_subagent``), its tools are narrowed by its definition within its parent's, and its
controls are its parent's gate and approver (questions from subagents working side by side are
asked one at a time).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from memagent import __version__, models
from memagent.agent.feature import Feature, SubagentContext, ToolCall
from memagent.agent.loop import Agent, AgentConfig, Approval, Approver
from memagent.agent.prompt import build_system, environment_block
from memagent.config import ProjectPaths, Settings
from memagent.context.compaction import CompactingContext
from memagent.context.conversation import Conversation
from memagent.context.oversize import AttachmentShelf
from memagent.context.policy import CompactionRequest
from memagent.context.resume import Resumed
from memagent.context.transcript import TranscriptError, TranscriptWriter, new_session_id
from memagent.features.agent_definitions import AgentDefinition, discover_agents
from memagent.features.background_shells import BackgroundShellsFeature
from memagent.features.checkpoints import CheckpointFeature
from memagent.features.claude_memory_tool import ClaudeMemoryToolFeature, supported
from memagent.features.context import ContextToolsFeature
from memagent.features.continuity import ContinuityFeature
from memagent.features.hooks import HooksFeature
from memagent.features.instructions import InstructionsFeature
from memagent.features.mcp_client import McpClientFeature, mcp_client_feature
from memagent.features.memory import MemoryFeature, open_memory
from memagent.features.skills import SkillsFeature
from memagent.features.subagent_gate import SubagentGate, tool_filter
from memagent.features.subagents import ChildAgent, SubagentsFeature, subagent_prompt
from memagent.features.tasks import TaskGraphFeature
from memagent.features.todos import TodoFeature
from memagent.jsontypes import JsonObject, JsonValue
from memagent.llm.metered import MeteredModel, meter_of
from memagent.llm.protocol import ChatModel
from memagent.llm.tokens import lazy_counter
from memagent.models import resolve as resolve_model
from memagent.permissions import (
    Gate,
    PermissionRuleError,
    Policy,
    RuleSource,
)
from memagent.pricing import UsageMeter
from memagent.todo import TodoManager
from memagent.tools.base import RegisteredTool, ToolContext, ToolRegistry
from memagent.tools.builtin import builtin_tools
from memagent.tools.shell import ShellConfig


@dataclass
class Parts:
    """What the features are built from: the agent's own objects, made before any feature."""

    paths: ProjectPaths
    settings: Settings
    session_id: str
    model: ChatModel
    conversation: Conversation
    todo: TodoManager
    compaction_requests: CompactionRequest
    resumed: Resumed | None
    warnings: list[str]
    env: Mapping[str, str] = field(default_factory=dict)  # for hooks and MCP servers
    trusted: bool = False  # the user trusts this project: its files may widen what memagent does
    logical_session: str = ""  # one id across -c/-r (memory's session scope); empty: this session's own id
    processed_ids: set[str] = field(default_factory=set)  # messages already mined for memories
    mcp_servers: dict[str, JsonValue] = field(default_factory=dict)  # from the command line (--mcp-config)
    extra_roots: tuple[Path, ...] = ()  # folders the file tools may also use (--add-dir)
    shell: ShellConfig = field(default_factory=ShellConfig)  # the session's sandbox (bash, hooks, background shells)
    prefetch_memory: bool = True  # see runtime.SessionOptions
    memory_upkeep: bool = True  # see runtime.SessionOptions
    shell_env: dict[str, str] = field(default_factory=dict)  # variables every bash call gets (CLAUDE_ENV_FILE)
    permission_mode: Callable[[], str] = lambda: "default"  # the session's mode, as hooks see it
    start_source: str = "startup"  # why the session starts (SessionStart hooks)
    project_trusted: bool = (
        False  # the user trusts the project (its CLAUDE.md may import from ~, its commands pre-approve)
    )
    shelf: AttachmentShelf | None = None  # where texts too large for the context go (None: the session's own folder)


@dataclass
class Controls:
    """How an agent's tool calls are decided: the gate (mode and rules), who is asked, and
    whether anyone can be."""

    permissions: Gate | None
    approver: Approver
    non_interactive: bool = False


def _restore(parts: Parts, features: list[Feature]) -> None:
    """The record kinds each feature writes are accepted by the conversation; a resumed session's
    records in effect go to every feature, to restore what it recorded."""
    for feature in features:
        parts.conversation.accept_records(feature.record_kinds)
    if parts.resumed is not None:
        for feature in features:
            feature.restore(parts.resumed.records)


def compose_features(parts: Parts) -> tuple[list[Feature], str | None]:
    """Every capability of a session, in a fixed order (the order of their tools and prompt
    text, so the cached prefix stays byte-stable). Returns them and why memory is off, if it is."""

    task_graph = TaskGraphFeature(parts.paths.tasks)

    def current_task() -> str | None:
        item = parts.todo.in_progress()
        return str(item["text"]) if item else task_graph.in_progress()

    resumed = parts.resumed
    features: list[Feature] = [
        *_checkpoints(parts),  # first: no tool of a turn runs before the turn's checkpoint
        InstructionsFeature(
            parts.paths.root,
            parts.paths.home,
            parts.settings.instructions_max_chars,
            cwd=Path.cwd(),
            user_home=parts.paths.user_home,
            trusted=parts.project_trusted,
            warn=parts.warnings.append,
        ),
        SkillsFeature(
            parts.paths.root,
            parts.paths.home,
            user_home=parts.paths.user_home,
            trusted=parts.project_trusted,
            warn=parts.warnings.append,
        ),
        TodoFeature(parts.todo, parts.conversation.record, parts.warnings.append, parts.settings),
        task_graph,
        ContextToolsFeature(parts.compaction_requests, parts.paths.transcripts, parts.session_id),
        ContinuityFeature(
            parts.paths.transcripts,
            task_graph.snapshot,
            parts.todo,
            record=parts.conversation.record,
            exclude={parts.session_id} | ({resumed.session_id} if resumed else set()),
            resuming=resumed is not None,
        ),
    ]
    memory = open_memory(
        parts.paths,
        parts.settings,
        parts.logical_session or parts.session_id,
        model=parts.model,
        record=parts.conversation.record,
        processed_ids=parts.processed_ids,
        current_task=current_task,
        warn=parts.warnings.append,
        prefetch=parts.prefetch_memory,
        upkeep=parts.memory_upkeep,
        conversation=parts.conversation,
        transcript_session=parts.session_id,
        exclude_sessions=[resumed.session_id] if resumed else [],
    )
    if memory.feature is not None:
        features.append(memory.feature)
        features.extend(_claude_memory_tool(parts, memory.feature))
    features.append(_hooks(parts))
    features.append(_mcp_client(parts))
    features.append(_subagents(parts))
    features.extend(_background_shells(parts))
    return features, memory.off_reason


def session_shell(settings: Settings, home: Path, extra_env: dict[str, str] | None = None) -> ShellConfig:
    """How a session runs commands (its sandbox, probed once, and the variables every command
    gets: Claude Code's ``env``, a SessionStart hook's CLAUDE_ENV_FILE) with its own background
    shells; its subagents share it."""
    return ShellConfig.from_settings(settings, home, extra_env=extra_env).with_background()


def _claude_memory_tool(parts: Parts, memory: MemoryFeature) -> list[Feature]:
    """Claude's own ``memory`` tool over the memory cards, when the setting is on and the model
    was trained on it."""
    if not supported(models.info(parts.settings.model).capabilities, parts.settings.memory_tool):
        return []
    service = memory.service
    return [ClaudeMemoryToolFeature(lambda: service)]


def _background_shells(parts: Parts) -> list[Feature]:
    if parts.shell.background is None:
        return []
    return [
        BackgroundShellsFeature(parts.shell.background, parts.settings.saved_output_max_bytes, settings=parts.settings)
    ]


def _checkpoints(parts: Parts) -> list[Feature]:
    found = CheckpointFeature.from_settings(
        parts.settings,
        parts.paths.home,
        parts.paths.root,
        parts.session_id,
        parts.conversation.record,
        parts.warnings.append,
    )
    return [found] if found is not None else []


def _hooks(parts: Parts) -> HooksFeature:
    """Hooks a project file defines run in the session's sandbox unless the user's own config
    sets ``sandbox_project_hooks = false``; the user's own hooks run on the host (each hook knows
    where it came from)."""
    transcript = parts.paths.transcripts / f"{parts.session_id}.jsonl"
    return HooksFeature(
        parts.settings.hooks,
        root=parts.paths.root,
        session_id=lambda: parts.session_id,
        env=parts.env,
        transcript_path=lambda: transcript,
        warn=parts.warnings.append,
        permission_mode=parts.permission_mode,
        shell_env=parts.shell_env,
        env_dir=parts.paths.transcripts / parts.session_id / "env",
        source="resume" if parts.resumed is not None else parts.start_source,
        condition=hook_condition(parts.paths.root),
        sandboxed=parts.shell.executor if parts.settings.sandbox_project_hooks else None,
        pass_env=parts.settings.sandbox_pass_env,
    )


def hook_condition(root: Path) -> Callable[[str, ToolCall], bool]:
    """A hook's ``if`` rule, judged by the gate's own matching: does the rule, as a deny rule,
    cover the call (any part of a compound command)? False for a rule or call it cannot read."""

    def covers(rule: str, call: ToolCall) -> bool:
        if call.tool is None:
            return False
        try:
            declared = call.tool.bind(call.input).declare()
            policy = Policy.from_sources("default", [RuleSource("if", deny=[rule])], root=root)
        except (PermissionRuleError, ValidationError):
            return False
        verdict = policy.decide(call.name, declared)
        return verdict.action == "deny" and verdict.rule is not None

    return covers


def notifying(approver: Approver, features: list[Feature]) -> Approver:
    """The approver, after telling ``Notification`` hooks that memagent waits for the user (a
    subagent asks through its parent's approver, so the session's hooks hear of its questions too)."""
    hooks = [f for f in features if isinstance(f, HooksFeature)]
    if not hooks:
        return approver

    def ask(tool, tool_input, summary, *more):  # type: ignore[no-untyped-def]
        for feature in hooks:
            name = tool.claude.name if tool.claude is not None else tool.name
            feature.notify(f"memagent needs your permission to use {name}")
        return approver(tool, tool_input, summary, *more)

    return ask


def attachment_shelf(paths: ProjectPaths, settings: Settings, session_id: str) -> AttachmentShelf:
    """Where this session's texts too large for the context go: ``.transcripts/<session>/attachments``."""
    folder = paths.transcripts / session_id / "attachments"
    try:
        shown = folder.relative_to(paths.root).as_posix()
    except ValueError:
        shown = str(folder)
    return AttachmentShelf(
        folder, shown, settings.inline_limit_tokens, lazy_counter(settings.tokenizer, settings.tokenizer_json)
    )


def _mcp_client(parts: Parts) -> McpClientFeature:
    """MCP servers start in the background when the tools are first asked for (the REPL composes
    its session after the prompt is up); ``.mcp.json`` counts only in a trusted project."""
    return mcp_client_feature(
        parts.paths,
        parts.settings,
        parts.env,
        project_trusted=parts.trusted,
        warn=parts.warnings.append,
        extra_servers=parts.mcp_servers,
    )


def _subagents(parts: Parts) -> SubagentsFeature:
    agents = discover_agents(parts.paths.root, parts.paths.home)
    parts.warnings.extend(agents.problems)
    return SubagentsFeature.from_settings(agents, Spawner(parts), parts.conversation.record, parts.settings)


# ---------------------------------------------------------------------- building


def build_agent(
    parts: Parts,
    features: list[Feature],
    controls: Controls,
    *,
    name: str = "",
    system_prompt: str | None = None,
    append_system_prompt: str | None = None,
    allow: Callable[[RegisteredTool], bool] | None = None,
    model_name: str | None = None,
    max_rounds: int | None = None,
) -> Agent:
    """An agent from its parts and features: the system prompt (``system_prompt`` in place of
    memagent's own and its environment block, then each feature's stable text, then
    ``append_system_prompt``), the built-in tools and the features' (those ``allow`` keeps), the
    compacting context policy, and the tool context of its session. ``max_rounds`` caps the
    model calls of one turn (the agent's own cap when ``None``)."""
    paths, settings = parts.paths, parts.settings
    _restore(parts, features)
    system = build_system(
        paths.root,
        [feature.system_text() for feature in features],
        base=system_prompt,
        append=append_system_prompt,
        guidance=[feature.guidance() for feature in features],
    )
    shell = parts.shell
    tools = builtin_tools(shell) + [t for feature in features for t in feature.tools()]
    registry = ToolRegistry.of(t for t in tools if allow is None or allow(t))
    agent = Agent(
        model=parts.model,
        tools=registry,
        tool_context=_tool_context(parts, name),
        system=system,
        conversation=parts.conversation,
        context=_policy(
            parts, features, system, registry, parts.shelf or attachment_shelf(paths, settings, parts.session_id)
        ),
        approver=controls.approver,
        non_interactive=controls.non_interactive,
        features=features,
        config=_agent_config(model_name or settings.model, settings.response_tokens, max_rounds),
        permissions=controls.permissions,
        name=name,
    )
    for feature in features:
        if isinstance(feature, SubagentsFeature) and isinstance(feature.spawn, Spawner):
            feature.spawn.attach(agent)
    return agent


def _agent_config(model: str, max_tokens: int, max_rounds: int | None) -> AgentConfig:
    config = AgentConfig(model=model, max_tokens=max_tokens)
    if max_rounds is not None:
        config.max_rounds = max_rounds
    return config


def _policy(
    parts: Parts, features: list[Feature], system: list, registry: ToolRegistry, shelf: AttachmentShelf
) -> CompactingContext:
    return CompactingContext(
        model=parts.model,
        settings=parts.settings,
        session_id=parts.session_id,
        transcript_name=f"{parts.paths.transcripts.name}/{parts.session_id}.jsonl",
        system=system,
        tools=registry.schemas(),
        reinject=[feature.reinject for feature in features],
        before_drop=[feature.before_drop for feature in features],
        requests=parts.compaction_requests,
        shelf=shelf,
    )


def _tool_context(parts: Parts, agent_name: str = "") -> ToolContext:
    return ToolContext(
        root=parts.paths.root,
        extra_roots=tuple(parts.extra_roots),
        session_id=parts.session_id,
        outputs_dir=parts.paths.transcripts / parts.session_id / "outputs",
        bash_timeout=parts.settings.bash_timeout,
        output_cap_chars=parts.settings.output_cap_chars,
        agent=agent_name,
    )


# ---------------------------------------------------------------------- subagents


def child_model_name(definition: AgentDefinition, parent_model: str | None, settings: Settings) -> str:
    """The model a definition asks for: an alias, an id, or (``inherit``/none) the parent's.
    ``haiku`` is the settings' small model; other aliases resolve through the model registry."""
    wanted = (definition.model or "").strip()
    if not wanted or wanted == "inherit":
        return parent_model or settings.model
    if wanted.lower() == "haiku":
        return settings.small_model
    return resolve_model(wanted)


def serialized(approver: Approver, lock: threading.Lock) -> Approver:
    """One question at a time, whichever subagent asks."""

    def ask(tool: RegisteredTool, tool_input: JsonObject, summary: str, reason: str) -> Approval:
        with lock:
            return approver(tool, tool_input, summary, reason)

    return ask


class Spawner:
    """Builds the subagents of one agent (attached once that agent is built)."""

    def __init__(self, parts: Parts, depth: int = 0, ask_lock: threading.Lock | None = None) -> None:
        self.parts = parts
        self.depth = depth
        self.ask_lock = ask_lock or threading.Lock()
        self._parent: Agent | None = None

    def attach(self, agent: Agent) -> None:
        self._parent = agent

    def __call__(self, definition: AgentDefinition, description: str) -> ChildAgent:
        parent = self._parent
        if parent is None:
            raise RuntimeError("the spawner is not attached to its agent")
        parts = self._child_parts(definition, description, parent)
        meter = UsageMeter()
        parts.model = _child_model(parent.model, meter)
        spawn = Spawner(parts, self.depth + 1, self.ask_lock)
        context = SubagentContext(
            definition.name,
            parts.session_id,
            parts.conversation.record,
            parts.compaction_requests,
            self.depth + 1,
            spawn,
        )
        features = [own for feature in parent.features if (own := feature.for_subagent(context)) is not None]
        gate = SubagentGate(parent.gate, definition.name, read_only=definition.tools is None)
        controls = Controls(gate, serialized(parent.approver, self.ask_lock), parent.non_interactive)
        base = subagent_prompt(definition.name, definition.prompt) + "\n" + environment_block(parts.paths.root)
        agent = build_agent(
            parts,
            features,
            controls,
            name=definition.name,
            system_prompt=base,
            allow=tool_filter(definition, parent.tools),
            model_name=child_model_name(definition, parent.config.model, parts.settings),
        )
        owned = [f for f in features if not any(f is mine for mine in parent.features)]
        return ChildAgent(agent, parts.session_id, meter, lambda: _close(owned, parts.conversation))

    def _child_parts(self, definition: AgentDefinition, description: str, parent: Agent) -> Parts:
        mine = self.parts
        session_id = new_session_id(transcripts=mine.paths.transcripts)
        try:
            transcript = TranscriptWriter.open(mine.paths.transcripts, session_id)
        except TranscriptError as exc:
            from memagent.tools.base import ToolError

            raise ToolError(f"cannot start the subagent: {exc}") from None
        conversation = Conversation(recorder=transcript, session_id=session_id)
        conversation.start(
            kind="subagent",
            agent=definition.name,
            description=description,
            parent_session=mine.session_id,
            model=child_model_name(definition, parent.config.model, mine.settings),
            cwd=str(mine.paths.root),
            version=__version__,
            logical_session=mine.logical_session or mine.session_id,
        )
        return Parts(
            mine.paths,
            mine.settings,
            session_id,
            mine.model,
            conversation,
            TodoManager(),
            CompactionRequest(),
            None,
            [],
            mine.env,
            mine.trusted,
            mine.logical_session or mine.session_id,
            extra_roots=mine.extra_roots,
            shell=mine.shell,
            shell_env=mine.shell_env,
            permission_mode=mine.permission_mode,
            project_trusted=mine.project_trusted,
        )


def _child_model(model: ChatModel, meter: UsageMeter) -> ChatModel:
    """The parent's model, metered on its own and into the parent's meter too."""
    parent = meter_of(model)
    if parent is None:
        return MeteredModel(model, meter)
    return MeteredModel(parent.inner, meter, also=parent)


def _close(features: list[Feature], conversation: Conversation) -> list[str]:
    problems = []
    for feature in reversed(features):
        try:
            feature.close()
        except Exception as exc:  # closing must not hide the subagent's answer
            problems.append(f"while closing {feature.name}: {exc}")
    recorder = conversation.recorder
    if recorder is not None:
        recorder.close()
        if recorder.failure:
            problems.append(recorder.failure)
    return problems


__all__ = [
    "Controls",
    "Parts",
    "Spawner",
    "SubagentGate",
    "attachment_shelf",
    "build_agent",
    "child_model_name",
    "compose_features",
    "hook_condition",
    "notifying",
    "tool_filter",
]
