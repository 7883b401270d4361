"""Wiring: build a ready-to-run session (agent, stores, transcript) from settings.

The only place that knows every room; each room stays ignorant of the others. Terminal-free:
the CLI passes in an approver and renders the agent's events.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from memagent import __version__
from memagent.agent.loop import Agent, AgentConfig, Approver, TurnHooks, deny_all
from memagent.agent.prompt import build_system
from memagent.config import ProjectPaths, Settings, credentials_from_env, load_settings, project_paths
from memagent.context.compaction import CompactingContext
from memagent.context.conversation import Conversation
from memagent.context.resume import ResumeError, Resumed, latest_session_id, load_session, seed_conversation
from memagent.context.transcript import TranscriptError, TranscriptWriter, new_session_id, read_records
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
    learner: Any = None  # BackgroundLearner when memory is on
    end_of_session_wait: float = 30.0  # bound on waiting for the last memory extraction

    def close(self) -> list[str]:
        """End the session: learn from what was not mined yet (bounded wait), then close stores.

        Returns the warnings raised while closing (e.g. transcript records that could not be
        written), for the caller to show. Safe to call twice."""
        already = len(self.warnings)
        learner, self.learner = self.learner, None
        if learner is not None:
            conversation = self.agent.conversation
            try:
                if any(m["role"] == "assistant" for m in conversation.messages):
                    learner.submit(conversation.messages, conversation.ids, "session_end")
                learner.close(timeout=self.end_of_session_wait)
            except KeyboardInterrupt:  # the user chose not to wait; the rest still closes
                self.warnings.append("memory extraction at session end skipped (interrupted)")
            except Exception as exc:  # learning must never block the exit
                self.warnings.append(f"memory extraction at session end failed: {exc}")
        for closer in reversed(self.closers):
            try:
                closer()
            except Exception as exc:  # closing must never mask the real exit
                self.warnings.append(f"while closing: {exc}")
        self.closers.clear()
        if self.transcript.failure:
            self.warnings.append(self.transcript.failure)
            self.transcript.failure = None
        return self.warnings[already:]


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
        service = MemoryService.open(paths, settings, session_id)
    except MemoryUnavailable as exc:
        return None, f"memory is off: {exc}"
    # Build the lexical index off the critical path: the first search would otherwise pay
    # for it (about 1 s at 10k cards).
    threading.Thread(target=_warm_up, args=(service,), name="memagent-memory-warm-up", daemon=True).start()
    return service, None


def _warm_up(service: Any) -> None:
    try:
        service.warm_up()
    except Exception:  # a failure shows up again, with its reason, on first real use
        pass


def _tools(session: Session, policy: Callable[[], CompactingContext]) -> list[Tool]:
    """Every tool, in a fixed order so the cached prompt prefix stays byte-stable."""
    from memagent.tasks import TaskStore
    from memagent.tools.builtin import builtin_tools
    from memagent.tools.context_tools import context_tools
    from memagent.tools.task_tools import task_tools
    from memagent.tools.todo_tools import todo_tools

    paths = session.paths
    tools = builtin_tools() + todo_tools(session.todo) + task_tools(lambda: TaskStore(paths.tasks))
    tools += context_tools(policy, paths.transcripts, lambda: session.session_id)
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
    """The task memories are learned and ranked under: the todo item in progress."""
    item = session.todo.in_progress()
    return str(item["text"]) if item else None


def _find_resume(paths: ProjectPaths, options: SessionOptions) -> tuple[Resumed | None, list[str]]:
    """The session to continue, if any; ``-r`` with an unknown id is an error, ``-c`` with no
    earlier session starts a new one with a warning."""
    if not (options.resume_id or options.continue_latest):
        return None, []
    session_id = options.resume_id or latest_session_id(paths.transcripts)
    if session_id is None:
        return None, ["no earlier session in this project to continue; starting a new one"]
    try:
        resumed = load_session(paths.transcripts, session_id)
    except ResumeError as exc:
        raise SetupError(str(exc), code=1) from None
    return resumed, list(resumed.warnings)


def _restore_todo(session: Session, resumed: Resumed) -> None:
    from memagent.todo import TodoError

    if resumed.todo is None:
        return
    try:
        session.todo.update(resumed.todo.get("items", []))
    except TodoError as exc:
        session.warnings.append(f"the saved todo list could not be restored: {exc}")


def _reinjectors(session: Session) -> list[Callable[[], str | None]]:
    """State re-injected verbatim from its stores after a compaction (not from the summary)."""

    def todos() -> str | None:
        return "Your todo list (restored from the session):\n" + session.todo.render() if session.todo.items else None

    def tasks() -> str | None:
        from memagent.tasks import TaskStore

        if not session.paths.tasks.is_dir():
            return None
        try:
            snapshot = TaskStore(session.paths.tasks).context_snapshot()
        except Exception as exc:  # a broken task store must not stop a compaction
            return f"(the task graph could not be read: {exc})"
        return "The project's task graph (from .tasks/):\n" + snapshot if snapshot else None

    def profile() -> str | None:
        return _profile(session)

    return [todos, tasks, profile]


def _profile(session: Session) -> str | None:
    if session.memory is None:
        return None
    try:
        from memagent.memory.profiles import render_profile

        return render_profile(session.memory, session.paths)
    except Exception as exc:
        session.warnings.append(f"memory profile unavailable: {exc}")
        return None


def _start_learning(
    session: Session, chat_model: ChatModel, conversation: Conversation, hooks: TurnHooks, processed: set[str]
) -> list[Callable[[list, list], None]]:
    """Background memory extraction: every N user turns, before a compaction drops messages,
    and at session end. Returns the compaction hooks."""
    if session.memory is None:
        return []
    from memagent.memory.learning import BackgroundLearner, LearningPipeline, before_drop_hook, should_extract

    pipeline = LearningPipeline(
        chat_model,
        session.memory,
        session_id=session.session_id,
        settings=session.settings,
        record=conversation.record,
        processed_ids=processed,
        task_hint=lambda: _current_task(session),
    )
    learner = BackgroundLearner(pipeline)
    session.learner = learner
    turns = {"since": 0}

    def periodic(conv: Conversation) -> None:
        turns["since"] += 1
        if should_extract(turns["since"], session.settings):
            learner.submit(conv.messages, conv.ids, "periodic")
            turns["since"] = 0

    hooks.after_turn.append(periodic)
    return [before_drop_hook(learner)]


def _processed_ids(paths: ProjectPaths, resumed: Resumed | None, conversation: Conversation, seeded: int) -> set[str]:
    """Messages already mined for memories, carried across a resume."""
    if resumed is None or resumed.path is None:
        return set()
    from memagent.memory.learning import processed_ids_after_resume

    try:
        old_records = read_records(resumed.path).records
    except TranscriptError:
        return set()
    return processed_ids_after_resume(old_records, resumed.ids, conversation.ids[:seeded])


def _decay_memory(session: Session) -> None:
    """Confidence decay for never-used cards; runs at most once a day, bounded work."""
    if session.memory is None:
        return
    try:
        from memagent.memory.history import LearningHistory
        from memagent.memory.hygiene import apply_decay

        apply_decay(session.memory, LearningHistory.for_paths(session.paths))
    except Exception as exc:
        session.warnings.append(f"memory decay skipped: {exc}")


def open_session(
    options: SessionOptions,
    *,
    model: ChatModel | None = None,
    approver: Approver = deny_all,
    env: Mapping[str, str] | None = None,
) -> Session:
    """Build a session; raises SetupError for anything the user must fix."""
    env = os.environ if env is None else env
    if options.root is not None and not Path(options.root).is_dir():
        raise SetupError(f"project root {options.root} is not a directory")
    paths = project_paths(options.root, env)
    try:
        settings = load_settings(paths, env, {"model": options.model})
    except Exception as exc:
        raise SetupError(str(exc)) from None
    if not options.memory:
        settings = replace(settings, memory_enabled=False)
    resumed, warnings = _find_resume(paths, options)
    chat_model = model or make_model(settings, env)

    session_id = new_session_id()
    try:
        transcript = TranscriptWriter.open(paths.transcripts, session_id)
    except TranscriptError as exc:
        raise SetupError(str(exc), code=1) from None
    transcript.set_header(
        {
            "type": "session_start",
            "session_id": session_id,
            "model": settings.model,
            "cwd": str(paths.root),
            "version": __version__,
            **({"resumed_from": resumed.session_id} if resumed else {}),
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
        warnings=warnings,
    )
    session.closers.append(transcript.close)
    if resumed is not None:
        seed_conversation(conversation, resumed)
        _restore_todo(session, resumed)
        session.resumed_from = resumed.session_id
    session.memory, session.memory_off_reason = _open_memory(paths, settings, session_id)
    if session.memory is not None:
        session.closers.append(session.memory.close)
        _decay_memory(session)

    hooks = TurnHooks()
    hooks.reminders.append(_todo_hook(session, conversation))
    _memory_hooks(session, hooks)
    processed = _processed_ids(paths, resumed, conversation, len(conversation.ids))
    before_drop = _start_learning(session, chat_model, conversation, hooks, processed)

    system = build_system(paths.root, profile=_profile(session))
    policy_box: dict[str, CompactingContext] = {}
    registry = ToolRegistry.of(_tools(session, lambda: policy_box["policy"]))
    policy = CompactingContext(
        model=chat_model,
        settings=settings,
        session_id=session_id,
        transcript_name=f"{paths.transcripts.name}/{session_id}.jsonl",
        system=system,
        tools=registry.schemas(),
        reinject=_reinjectors(session),
        before_drop=before_drop,
    )
    policy_box["policy"] = policy
    tool_context = ToolContext(
        root=paths.root,
        session_id=session_id,
        outputs_dir=paths.transcripts / session_id / "outputs",
        bash_timeout=settings.bash_timeout,
        output_cap_chars=settings.output_cap_chars,
    )
    session.agent = Agent(
        model=chat_model,
        tools=registry,
        tool_context=tool_context,
        system=system,
        conversation=conversation,
        context=policy,
        approver=approver,
        auto_approve=options.auto_approve or settings.auto_approve,
        non_interactive=options.non_interactive,
        hooks=hooks,
        config=AgentConfig(model=settings.model, max_tokens=settings.max_tokens),
    )
    return session
