"""Long-term memory as a feature: the memory tools, the profile in the system prompt, relevant
cards in each new user message, use and citation tracking, and background learning (every N
user turns, on the events of ``memory.triggers`` — a task or the todo list completed, the
topic changed, the REPL idle —, before a compaction drops messages, and at session end).

:func:`open_memory` does the opening work (store, confidence decay, learner) and degrades to
"memory off, because …" instead of failing the session.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from memagent.agent.feature import BaseFeature, SubagentContext, ToolCall, TurnInput
from memagent.config import ProjectPaths, Settings
from memagent.context.conversation import Conversation
from memagent.errors import one_line
from memagent.llm.items import Injected, own_texts
from memagent.llm.protocol import ChatModel
from memagent.llm.types import Message, ModelResponse
from memagent.markers import Marker, block
from memagent.tools.base import Tool, ToolOutcome

if TYPE_CHECKING:
    from memagent.memory.learning import BackgroundLearner
    from memagent.memory.service import MemoryService

RECENT_TEXTS = 4
RECENT_CHARS = 500
MEMORY_GUIDANCE = """\
Memory: this project keeps long-term memory. When relevant memories are shown to you as
[Memory#id] blocks, cite the id when you rely on one; when memory has no answer, say so rather
than guessing. Save durable facts, decisions, preferences and procedures with memory_save when
the user asks you to remember something or when you learn something worth keeping across
sessions (never secrets)."""


def recent_texts(messages: Sequence[Message], limit: int = RECENT_TEXTS) -> list[str]:
    """The newest words of the user and the model (no injected text), oldest first: the
    retrieval query's context."""
    texts: list[str] = []
    for message in reversed(messages):
        texts.extend(text[:RECENT_CHARS] for text in own_texts(message) if text)
        if len(texts) >= limit:
            break
    return list(reversed(texts[:limit]))


class MemoryFeature(BaseFeature):
    """``current_task``: the task cards are learned and ranked under (the todo item in
    progress); ``warn``: where one-line problems go (retrieval trouble never breaks a turn)."""

    name = "memory"

    def __init__(
        self,
        service: MemoryService,
        learner: BackgroundLearner | None,
        *,
        settings: Settings,
        profile: Callable[[], str | None],
        current_task: Callable[[], str | None],
        warn: Callable[[str], None],
        end_of_session_wait: float = 30.0,
        conversation: Conversation | None = None,
        catch_up: CatchUpRun | None = None,
        transcript_session: str | None = None,
    ) -> None:
        self.service = service
        self.learner = learner
        self._profile_source = profile
        self.settings = settings
        self.current_task = current_task
        self.warn = warn
        self.end_of_session_wait = end_of_session_wait
        self._profile: str | None = self._render_profile()
        self._extracted_at_turn = 0  # conversation.user_turns at the last periodic extraction
        self._conversation: Conversation | None = conversation
        self.catch_up = catch_up  # earlier sessions' unmined messages, learned in the background
        self._event: str | None = None  # a learning trigger seen in this turn (memory.triggers)
        self.transcript_session = transcript_session  # the session's event card links its transcript
        self._started = datetime.now(UTC)
        self._event_task: str | None = None  # the task in progress when that trigger fired
        self._user_texts: list[str] = []  # this turn's user message and the one before (topic drift)
        self.reflection: threading.Thread | None = None  # the periodic reflection pass, when it runs

    def _messages(self) -> tuple[list[Message], list[str]]:
        """The conversation as it is now (messages and their transcript ids), for tracing quotes."""
        conversation = self._conversation
        if conversation is None:
            return [], []
        return list(conversation.messages), list(conversation.ids)

    def _render_profile(self) -> str | None:
        try:
            return self._profile_source()
        except Exception as exc:
            self.warn(f"memory profile unavailable: {one_line(exc)}")
            return None

    def tools(self) -> list[Tool]:
        from memagent.features.memory_tools import memory_tools

        service = self.service
        return memory_tools(lambda: service, self._messages)

    def guidance(self) -> str:
        return MEMORY_GUIDANCE

    def system_text(self) -> str | None:
        return block(Marker.PROFILE, self._profile) if self._profile else None

    def turn_context(self, turn: TurnInput) -> Injected | None:
        self._user_texts = [*self._user_texts[-1:], turn.text]
        try:
            text = self.service.context_for_turn(
                turn.text, recent_texts(turn.messages), current_task=self.current_task()
            )
            return Injected(Marker.MEMORIES, text) if text else None
        except Exception as exc:
            self.warn(f"memory retrieval failed: {one_line(exc)}")
            return None

    def after_response(self, response: ModelResponse) -> None:
        try:
            self.service.note_citations(response.text())
        except Exception as exc:
            self.warn(f"memory citation update failed: {one_line(exc)}")

    def check_tool(self, call: ToolCall) -> str | None:
        """Before a call that may finish a task: note the task in progress (the cards its
        completion triggers are learned under it)."""
        from memagent.memory.triggers import trigger_of

        if trigger_of(call.name, call.input, False) is not None:
            self._event_task = self._task_now() or self._event_task
        return None

    def after_tool(self, call: ToolCall, outcome: ToolOutcome) -> None:
        from memagent.memory.triggers import trigger_of

        self._event = trigger_of(call.name, call.input, outcome.is_error) or self._event

    def _task_now(self) -> str | None:
        try:
            return self.current_task()
        except Exception:  # a label is a nicety; learning goes on without it
            return None

    def after_turn(self, conversation: Conversation) -> None:
        self._conversation = conversation
        try:
            self.service.flush_usage()  # the turn's injected and retrieved cards, one write
        except Exception as exc:
            self.warn(f"memory use update failed: {one_line(exc)}")
        every = self.settings.extract_every_turns
        due = every > 0 and conversation.user_turns - self._extracted_at_turn >= every
        event, self._event = self._event, None
        event = event or self._topic_drift()
        task, self._event_task = (self._event_task, None) if event else (None, self._event_task)
        if event and not due and self._limit_reached():
            event = None
        if self.learner is not None and (due or event):
            self.learner.submit(conversation.messages, conversation.ids, event or "periodic", task=task)
            self._extracted_at_turn = conversation.user_turns

    def _topic_drift(self) -> str | None:
        """``TOPIC_DRIFT`` when this turn's user message moved away from the previous one's."""
        from memagent.memory.triggers import TOPIC_DRIFT

        threshold = self.settings.memory_topic_drift
        if threshold <= 0 or len(self._user_texts) < 2 or self.learner is None:
            return None
        try:
            distance = self.service.topic_distance(*self._user_texts)
        except Exception:  # a trigger is a nicety: the turn counter and session end still learn
            return None
        return TOPIC_DRIFT if distance is not None and distance >= threshold else None

    def _limit_reached(self) -> bool:
        """The day's (or session's) automatic-write limit is reached: an event trigger would pay
        for an extraction whose cards the gate refuses."""
        try:
            return self.service.auto_write_refusal() is not None
        except Exception:
            return False

    def on_idle(self) -> bool:
        """The REPL has been idle ``memory_idle_seconds``: learn once from the turns not mined yet
        (called from the REPL's idle timer, never during a turn); ``True`` when it submitted."""
        from memagent.memory.triggers import IDLE

        conversation, learner = self._conversation, self.learner
        if learner is None or conversation is None or self._limit_reached():
            return False
        if not learner.submit(conversation.messages, conversation.ids, IDLE, task=self._task_now()):
            return False
        self._extracted_at_turn = conversation.user_turns
        return True

    def reinject(self) -> str | None:
        """The profile as it is now (cards may have been learned since the session started)."""
        profile = self._render_profile()
        return block(Marker.PROFILE, profile) if profile else None

    def before_drop(self, messages: list[Message], ids: list[str]) -> None:
        if self.learner is not None:
            self.learner.submit(messages, ids, "compaction")

    def for_subagent(self, child: SubagentContext) -> MemoryFeature:
        """The same store: the subagent reads the project's memory (relevant cards in its task,
        the profile, the memory tools its definition allows). It learns nothing in the background;
        what it saves names it (``ToolContext.agent``)."""
        profile = self._profile
        return MemoryFeature(
            self.service,
            None,
            settings=self.settings,
            profile=lambda: profile,
            current_task=lambda: None,
            warn=self.warn,
        )

    def close(self) -> None:
        """Learn from what was not mined yet (bounded wait), then close the store."""
        learner, self.learner = self.learner, None
        catch_up, self.catch_up = self.catch_up, None
        try:
            if self.reflection is not None:
                self.reflection.join(self.end_of_session_wait)  # never closes the store under it
            if catch_up is not None:
                catch_up.finish(self.end_of_session_wait, self.warn)
            if learner is not None:
                self._learn_at_end(learner)
                self._write_event()
        finally:
            if catch_up is not None:
                catch_up.release()
            self.service.close()

    def _write_event(self) -> None:
        """The session as a dated ``event`` card (``memory.session_event``), when it did something."""
        from memagent.context.digest import deterministic_digest
        from memagent.memory.learning import auto_extract_enabled
        from memagent.memory.session_end import worth_learning_at_end
        from memagent.memory.session_event import save_session_event

        conversation = self._conversation
        if (
            conversation is None
            or self.transcript_session is None
            or not auto_extract_enabled(self.settings)
            or not worth_learning_at_end(conversation.messages)
        ):
            return
        try:
            result = save_session_event(
                self.service,
                self.transcript_session,
                self._started,
                deterministic_digest(conversation.messages),
                f".transcripts/{self.transcript_session}.jsonl",
                self._task_now(),
            )
        except Exception as exc:
            self.warn(f"memory: the session's event card was not written: {one_line(exc)}")
            return
        if result.status == "refused":
            self.warn(f"memory: the session's event card was refused: {result.reason}")

    def _learn_at_end(self, learner: BackgroundLearner) -> None:
        """A one-line ``-p "hi"`` session is not worth an extraction call; see ``memory.session_end``."""
        from memagent.memory.session_end import worth_learning_at_end

        conversation = self._conversation
        try:
            if conversation is not None and worth_learning_at_end(
                conversation.messages, conversation.ids, learner.pipeline.processed_ids
            ):
                learner.submit(conversation.messages, conversation.ids, "session_end")
            learner.close(timeout=self.end_of_session_wait)
        except KeyboardInterrupt:  # the user chose not to wait; the rest still closes
            self.warn("memory extraction at session end skipped (interrupted)")
        except Exception as exc:  # learning must never block the exit
            self.warn(f"memory extraction at session end failed: {one_line(exc)}")
        failure = failure_line(learner)
        if failure:
            self.warn(failure)


def failure_line(learner: BackgroundLearner) -> str | None:
    """What went wrong with learning this session, in one line, or ``None`` (never silent)."""
    failed = learner.failed_attempts
    shaky = sum(r.consolidation_failures for r in learner.reports)
    if not failed and not shaky:
        return None
    runs = failed + len(learner.reports)
    parts = []
    if failed:
        parts.append(
            f"{failed} of {runs} extraction run{'s' if runs != 1 else ''} failed "
            f"({learner.failures[-1].error if learner.failures else 'retried'})"
        )
    if shaky:
        parts.append(f"{shaky} consolidation answer{'s were' if shaky != 1 else ' was'} unusable")
    return "memory learning: " + "; ".join(parts) + "; see `memagent memory stats`"


class CatchUpRun:
    """The start-up catch-up (``memory.catchup``) on a daemon thread, and this session's live
    mark (held until :meth:`release`, so no other session mines this one while it runs)."""

    def __init__(self, live_mark, work: Callable[[], list] | None) -> None:
        self.live_mark = live_mark
        self.reports: list = []
        self.error: str | None = None
        self._thread: threading.Thread | None = None
        if work is not None:
            self._thread = threading.Thread(target=self._run, args=(work,), name="memagent-catch-up", daemon=True)
            self._thread.start()

    def _run(self, work: Callable[[], list]) -> None:
        try:
            self.reports = work() or []
        except Exception as exc:  # never reaches the session; said at its end
            self.error = one_line(exc)

    def finish(self, timeout: float, warn: Callable[[str], None]) -> None:
        """Wait (bounded) and say what the catch-up learned or why it failed."""
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                warn("memory: learning from earlier sessions did not finish; the rest waits for the next start")
                return
        for line in catch_up_lines(self.reports, self.error):
            warn(line)

    def release(self) -> None:
        if self.live_mark is not None:
            self.live_mark.release()


def catch_up_lines(reports: list, error: str | None = None) -> list[str]:
    """One line per earlier session a catch-up learned from or failed on (nothing when it found
    nothing new)."""
    lines = [f"memory learning from earlier sessions failed: {error}"] if error else []
    for report in reports:
        if report.error or report.stored or report.consolidation_failures:
            lines.append(f"memory (earlier session {report.session_id}): {report.summary()}")
    return lines


def catch_up_now(
    paths: ProjectPaths,
    settings: Settings,
    model: ChatModel,
    service: MemoryService,
    *,
    exclude: Sequence[str] = (),
    only: str | None = None,
    max_sessions: int | None = None,
    max_messages: int | None = None,
) -> list | None:
    """Mine earlier sessions' unmined messages now (see ``memory.catchup``); ``None`` when another
    process is catching up in this project."""
    from memagent.context.transcript import TranscriptError, iter_transcripts, read_records
    from memagent.memory import catchup
    from memagent.memory.learning_history import LearningHistory

    lock = catchup.hold_catch_up(paths.memory)
    if lock is None:
        return None
    try:
        files = [p for p in iter_transcripts(paths.transcripts) if only is None or p.stem == only]
        sessions = []
        for path in files[-catchup.SCAN_SESSIONS :]:
            try:
                sessions.append((path.stem, read_records(path).records))
            except TranscriptError:
                continue
        history = LearningHistory.for_paths(paths)
        pending, settled = catchup.plan(
            sessions,
            paths.memory,
            history,
            exclude=exclude,
            only=only,
            max_sessions=max_sessions or catchup.MAX_SESSIONS,
            max_messages=max_messages or catchup.MAX_MESSAGES,
        )

        return catchup.mine(
            pending, history, settled, lambda **session: _pipeline(paths, settings, model, service, **session)
        )
    finally:
        lock.release()


@dataclass
class MemoryOpening:
    """What :func:`open_memory` found: a feature, or the one-line reason memory is off."""

    feature: MemoryFeature | None
    off_reason: str | None = None


def open_memory(
    paths: ProjectPaths,
    settings: Settings,
    session_id: str,
    *,
    model: ChatModel,
    record: Callable[[dict], None],
    processed_ids: set[str],
    current_task: Callable[[], str | None],
    warn: Callable[[str], None],
    prefetch: bool = True,
    upkeep: bool = True,
    conversation: Conversation | None = None,
    transcript_session: str | None = None,
    exclude_sessions: Sequence[str] = (),
) -> MemoryOpening:
    """Open the stores, decay unused cards (at most daily), start the background learner and the
    warm-up (``prefetch``: also load the embedder and the vector index before the first search
    asks; off for a one-shot prompt that will not search; ``upkeep``: background scans, indexing
    and clean-up, off for a one-shot prompt)."""
    if not settings.memory_enabled:
        return MemoryOpening(None, "memory is off (--no-memory)")
    try:
        from memagent.memory.service import MemoryService, MemoryUnavailable
    except ImportError as exc:  # a broken install must not stop the agent
        return MemoryOpening(None, f"memory is off: {one_line(exc)}")
    from memagent.trust import is_trusted

    try:
        service = MemoryService.open(
            paths, settings, session_id, hold_repository_cards=not is_trusted(paths.home, paths.root)
        )
    except MemoryUnavailable as exc:
        return MemoryOpening(None, f"memory is off: {one_line(exc)}")
    _decay(service, paths, warn)
    _warm_up_in_background(service, warn, prefetch, upkeep)
    reflection = _reflect_in_background(paths, settings, model, service, warn) if upkeep else None
    learner = _start_learner(paths, settings, session_id, model, service, record, processed_ids, current_task)
    from memagent.memory.profiles import render_profile

    feature = MemoryFeature(
        service,
        learner,
        settings=settings,
        profile=lambda: render_profile(service, paths),
        current_task=current_task,
        warn=warn,
        conversation=conversation,
        transcript_session=transcript_session,
        catch_up=_start_catch_up(
            paths, settings, model, service, transcript_session or session_id, exclude_sessions, one_shot=not upkeep
        ),
    )
    feature.reflection = reflection
    return MemoryOpening(feature)


def _reflect_in_background(
    paths: ProjectPaths, settings: Settings, model: ChatModel, service: MemoryService, warn: Callable[[str], None]
) -> threading.Thread | None:
    """The periodic reflection pass (``memory_reflect_every_days``, off by default; ``memory.reflection``)."""
    if settings.memory_reflect_every_days <= 0:
        return None
    from memagent.memory.learning_history import LearningHistory
    from memagent.memory.reflection import model_ask, reflect_in_background

    try:
        return reflect_in_background(
            service,
            LearningHistory.for_paths(paths),
            settings.memory_reflect_every_days,
            model_ask(model, settings.small_model),
            warn,
        )
    except Exception as exc:
        warn(f"memory reflection skipped: {one_line(exc)}")
        return None


def _decay(service: MemoryService, paths: ProjectPaths, warn: Callable[[str], None]) -> None:
    """Confidence decay for never-used cards; runs at most once a day, bounded work."""
    try:
        from memagent.memory.hygiene import apply_decay
        from memagent.memory.learning_history import LearningHistory

        apply_decay(service, LearningHistory.for_paths(paths))
    except Exception as exc:
        warn(f"memory decay skipped: {one_line(exc)}")


def _warm_up_in_background(
    service: MemoryService, warn: Callable[[str], None], prefetch: bool = True, upkeep: bool = True
) -> None:
    """Bring the index up to date off the critical path (the first search would pay for it);
    what the user should know (an index rebuilt, a card file skipped) becomes a warning."""

    def warm() -> None:
        try:
            service.warm_up(prefetch=prefetch, upkeep=upkeep)
            for line in service.notices():
                warn(f"memory: {line}")
        except Exception:  # a failure shows up again, with its reason, on first real use
            pass

    threading.Thread(target=warm, name="memagent-memory-warm-up", daemon=True).start()


def _start_catch_up(
    paths: ProjectPaths,
    settings: Settings,
    model: ChatModel,
    service: MemoryService,
    session_id: str,
    exclude: Sequence[str],
    *,
    one_shot: bool,
) -> CatchUpRun:
    """Mark this session live, then learn earlier sessions' unmined messages in the background
    (one session for a one-shot prompt); nothing when automatic extraction is off."""
    from memagent.memory.catchup import hold_live_mark
    from memagent.memory.learning import auto_extract_enabled

    mark = hold_live_mark(paths.memory, session_id)
    if not auto_extract_enabled(settings):
        return CatchUpRun(mark, None)
    skip = [session_id, *exclude]
    return CatchUpRun(
        mark,
        lambda: catch_up_now(paths, settings, model, service, exclude=skip, max_sessions=1 if one_shot else None) or [],
    )


def _pipeline(paths: ProjectPaths, settings: Settings, model: ChatModel, service: MemoryService, **session):
    from memagent.llm.tokens import lazy_counter
    from memagent.memory.learning import LearningPipeline
    from memagent.memory.learning_history import LearningHistory

    return LearningPipeline(
        model,
        service,
        count_tokens=lazy_counter(settings.tokenizer, settings.tokenizer_json),
        settings=settings,
        history=LearningHistory.for_paths(paths),
        **session,
    )


def _start_learner(
    paths: ProjectPaths,
    settings: Settings,
    session_id: str,
    model: ChatModel,
    service: MemoryService,
    record: Callable[[dict], None],
    processed_ids: set[str],
    current_task: Callable[[], str | None],
) -> BackgroundLearner:
    """The pipeline writes its decision history, so `memory review` and `memory stats` see
    what was learned automatically."""
    from memagent.llm.tokens import lazy_counter
    from memagent.memory.learning import BackgroundLearner, LearningPipeline
    from memagent.memory.learning_history import LearningHistory

    pipeline = LearningPipeline(
        model,
        service,
        count_tokens=lazy_counter(settings.tokenizer, settings.tokenizer_json),
        session_id=session_id,
        settings=settings,
        history=LearningHistory.for_paths(paths),
        record=record,
        processed_ids=processed_ids,
        task_hint=current_task,
    )
    return BackgroundLearner(pipeline)


__all__ = ["MemoryFeature", "MemoryOpening", "open_memory", "recent_texts"]
