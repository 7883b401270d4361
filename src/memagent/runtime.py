"""Wiring: build a ready-to-run session (agent, stores, transcript) from settings.

The only place that knows every room; each room stays ignorant of the others. Terminal-free:
the CLI passes in an approver and renders the agent's events.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from memagent import __version__
from memagent.agent.loop import Agent, AgentConfig, Approver, TurnHooks, deny_all
from memagent.agent.prompt import build_system
from memagent.config import ProjectPaths, Settings, credentials_from_env, load_settings, project_paths
from memagent.context.conversation import Conversation
from memagent.context.transcript import TranscriptWriter, new_session_id
from memagent.llm.protocol import ChatModel
from memagent.llm.types import ModelResponse
from memagent.todo import TodoManager
from memagent.tools.base import Tool, ToolContext, ToolRegistry


class SetupError(Exception):
    """A problem the user must fix before a session can start. ``code`` is the exit code."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


MISSING_KEY = (
    "no API key: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN for a bearer token, with "
    "ANTHROPIC_BASE_URL for a proxy or local server); `memagent tasks` and `memagent memory` need none"
)


@dataclass
class SessionOptions:
    root: Path | None = None
    model: str | None = None
    auto_approve: bool = False
    non_interactive: bool = False
    memory: bool = True
    resume_id: str | None = None
    continue_latest: bool = False


@dataclass
class Session:
    """Everything a renderer needs to drive one session."""

    agent: Agent
    paths: ProjectPaths
    settings: Settings
    session_id: str
    transcript: TranscriptWriter
    todo: TodoManager
    memory: Any = None  # MemoryService when memory is on
    memory_off_reason: str | None = None
    resumed_from: str | None = None
    warnings: list[str] = field(default_factory=list)
    closers: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        for closer in reversed(self.closers):
            try:
                closer()
            except Exception:  # closing must never mask the real exit
                pass
        self.closers.clear()


def make_model(settings: Settings, env: Mapping[str, str] | None = None) -> ChatModel:
    creds = credentials_from_env(env)
    if not creds.present:
        raise SetupError(MISSING_KEY, code=2)
    from memagent.llm.anthropic import AnthropicModel

    return AnthropicModel(
        settings.model, api_key=creds.api_key, auth_token=creds.auth_token, base_url=creds.base_url
    )


def _open_memory(paths: ProjectPaths, settings: Settings, session_id: str) -> tuple[Any, str | None]:
    if not settings.memory_enabled:
        return None, "memory is off (--no-memory)"
    try:
        from memagent.memory.service import MemoryService, MemoryUnavailable
    except ImportError as exc:  # a broken install must not stop the agent
        return None, f"memory is off: {exc}"
    try:
        return MemoryService.open(paths, settings, session_id), None
    except MemoryUnavailable as exc:
        return None, f"memory is off: {exc}"


def _tools(session: Session, settings: Settings) -> list[Tool]:
    from memagent.tasks import TaskStore
    from memagent.tools.builtin import builtin_tools
    from memagent.tools.task_tools import task_tools
    from memagent.tools.todo_tools import todo_tools

    tools = builtin_tools() + todo_tools(session.todo) + task_tools(lambda: TaskStore(session.paths.tasks))
    if session.memory is not None:
        from memagent.tools.memory_tools import memory_tools

        memory = session.memory
        tools += memory_tools(lambda: memory)
    return tools


def _todo_hook(session: Session, conversation: Conversation) -> Callable[[list[str]], str | None]:
    def hook(tool_names: list[str]) -> str | None:
        called = "todo" in tool_names
        session.todo.note_round(called)
        if called:
            conversation.record({"type": "todo", "items": session.todo.items})
        return session.todo.reminder()

    return hook


def _memory_hooks(session: Session, hooks: TurnHooks) -> None:
    memory = session.memory
    if memory is None:
        return

    def context_for(text: str, messages: list) -> str | None:
        recent = _recent_texts(messages)
        try:
            return memory.context_for_turn(text, recent, current_task=_current_task(session))
        except Exception as exc:  # retrieval trouble must never break a turn
            session.warnings.append(f"memory retrieval failed: {exc}")
            return None

    def citations(response: ModelResponse) -> None:
        try:
            memory.note_citations(response.text())
        except Exception as exc:
            session.warnings.append(f"memory citation update failed: {exc}")

    hooks.user_context.append(context_for)
    hooks.after_response.append(citations)


def _recent_texts(messages: list, limit: int = 4) -> list[str]:
    texts: list[str] = []
    for message in reversed(messages):
        for block in message.get("content", []):
            if block.get("type") == "text" and not block["text"].startswith("<"):
                texts.append(block["text"][:500])
        if len(texts) >= limit:
            break
    return list(reversed(texts[:limit]))


def _current_task(session: Session) -> str | None:
    for item in session.todo.items:
        if item.get("status") == "in_progress":
            return str(item.get("text"))
    return None


def open_session(
    options: SessionOptions,
    *,
    model: ChatModel | None = None,
    approver: Approver = deny_all,
    env: Mapping[str, str] | None = None,
    context_factory: Callable[[Session, ChatModel], Any] | None = None,
) -> Session:
    """Build a session; raises SetupError for anything the user must fix."""
    env = os.environ if env is None else env
    if options.root is not None and not Path(options.root).is_dir():
        raise SetupError(f"project root {options.root} is not a directory")
    paths = project_paths(options.root, env)
    try:
        settings = load_settings(paths, env, {"model": options.model, "memory_enabled": options.memory or None})
    except Exception as exc:
        raise SetupError(str(exc)) from None
    if not options.memory:
        settings = Settings(**{**settings.__dict__, "memory_enabled": False})
    chat_model = model or make_model(settings, env)

    session_id = new_session_id()
    transcript = TranscriptWriter.open(paths.transcripts, session_id)
    transcript.append(
        {
            "type": "session_start",
            "session_id": session_id,
            "model": settings.model,
            "cwd": str(paths.root),
            "version": __version__,
        }
    )
    conversation = Conversation(recorder=transcript, session_id=session_id)
    session = Session(
        agent=None,  # type: ignore[arg-type]  # set below, once its parts exist
        paths=paths,
        settings=settings,
        session_id=session_id,
        transcript=transcript,
        todo=TodoManager(),
    )
    session.closers.append(transcript.close)
    session.memory, session.memory_off_reason = _open_memory(paths, settings, session_id)
    if session.memory is not None:
        session.closers.append(session.memory.close)

    profile = session.memory.profile_text() if session.memory is not None else None
    hooks = TurnHooks()
    hooks.reminders.append(_todo_hook(session, conversation))
    _memory_hooks(session, hooks)
    tool_context = ToolContext(
        root=paths.root,
        session_id=session_id,
        outputs_dir=paths.transcripts / session_id / "outputs",
        bash_timeout=settings.bash_timeout,
        output_cap_chars=settings.output_cap_chars,
    )
    session.agent = Agent(
        model=chat_model,
        tools=ToolRegistry.of(_tools(session, settings)),
        tool_context=tool_context,
        system=build_system(paths.root, profile=profile),
        conversation=conversation,
        approver=approver,
        auto_approve=options.auto_approve or settings.auto_approve,
        non_interactive=options.non_interactive,
        hooks=hooks,
        config=AgentConfig(model=settings.model, max_tokens=settings.max_tokens),
    )
    if context_factory is not None:
        session.agent.context = context_factory(session, chat_model)
    return session
