"""Long-term memory as a feature: the memory tools, the profile in the system prompt, relevant
cards in each new user message, citation tracking, and background learning (every N user
turns, before a compaction drops messages, and at session end).

:func:`open_memory` does the opening work (store, confidence decay, learner) and degrades to
"memory off, because …" instead of failing the session.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

from memagent.agent.feature import BaseFeature, SubagentContext, TurnInput
from memagent.config import ProjectPaths, Settings
from memagent.context.conversation import Conversation
from memagent.errors import one_line
from memagent.llm.protocol import ChatModel
from memagent.llm.types import Message, ModelResponse
from memagent.markers import Marker, block, kind_of, text_of
from memagent.tools.base import Tool

if TYPE_CHECKING:
    from memagent.memory.learning import BackgroundLearner
    from memagent.memory.service import MemoryService

RECENT_TEXTS = 4
RECENT_CHARS = 500


def recent_texts(messages: Sequence[Message], limit: int = RECENT_TEXTS) -> list[str]:
    """The newest words of the user and the model (no injected text), oldest first: the
    retrieval query's context."""
    texts: list[str] = []
    for message in reversed(messages):
        for part in message.get("content", []):
            text = text_of(part)
            if text and kind_of(part) is None:
                texts.append(text[:RECENT_CHARS])
        if len(texts) >= limit:
            break
    return list(reversed(texts[:limit]))


class MemoryFeature(BaseFeature):
    """``current_task``: the task cards are learned and ranked under (the todo item in
    progress); ``warn``: where one-line problems go (retrieval trouble never breaks a turn)."""

    name = "memory"

    def __init__(
        self,
        service: "MemoryService",
        learner: "BackgroundLearner | None",
        *,
        settings: Settings,
        profile: Callable[[], str | None],
        current_task: Callable[[], str | None],
        warn: Callable[[str], None],
        end_of_session_wait: float = 30.0,
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
        self._conversation: Conversation | None = None

    def _render_profile(self) -> str | None:
        try:
            return self._profile_source()
        except Exception as exc:
            self.warn(f"memory profile unavailable: {one_line(exc)}")
            return None

    def tools(self) -> list[Tool]:
        from memagent.features.memory_tools import memory_tools

        service = self.service
        return memory_tools(lambda: service)

    def system_text(self) -> str | None:
        return block(Marker.PROFILE, self._profile) if self._profile else None

    def turn_context(self, turn: TurnInput) -> str | None:
        try:
            return self.service.context_for_turn(
                turn.text, recent_texts(turn.messages), current_task=self.current_task()
            )
        except Exception as exc:
            self.warn(f"memory retrieval failed: {one_line(exc)}")
            return None

    def after_response(self, response: ModelResponse) -> None:
        try:
            self.service.note_citations(response.text())
        except Exception as exc:
            self.warn(f"memory citation update failed: {one_line(exc)}")

    def after_turn(self, conversation: Conversation) -> None:
        self._conversation = conversation
        every = self.settings.extract_every_turns
        due = every > 0 and conversation.user_turns - self._extracted_at_turn >= every
        if self.learner is not None and due:
            self.learner.submit(conversation.messages, conversation.ids, "periodic")
            self._extracted_at_turn = conversation.user_turns

    def reinject(self) -> str | None:
        """The profile as it is now (cards may have been learned since the session started)."""
        profile = self._render_profile()
        return block(Marker.PROFILE, profile) if profile else None

    def before_drop(self, messages: list[Message], ids: list[str]) -> None:
        if self.learner is not None:
            self.learner.submit(messages, ids, "compaction")

    def for_subagent(self, child: SubagentContext) -> "MemoryFeature":
        """The same store: the subagent reads the project's memory (relevant cards in its task,
        the profile, the memory tools its definition allows). It learns nothing in the background;
        what it saves names it (``ToolContext.agent``)."""
        profile = self._profile
        return MemoryFeature(self.service, None, settings=self.settings, profile=lambda: profile,
                             current_task=lambda: None, warn=self.warn)

    def close(self) -> None:
        """Learn from what was not mined yet (bounded wait), then close the store."""
        learner, self.learner = self.learner, None
        try:
            if learner is not None:
                self._learn_at_end(learner)
        finally:
            self.service.close()

    def _learn_at_end(self, learner: "BackgroundLearner") -> None:
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
        service = MemoryService.open(paths, settings, session_id,
                                     hold_repository_cards=not is_trusted(paths.home, paths.root))
    except MemoryUnavailable as exc:
        return MemoryOpening(None, f"memory is off: {one_line(exc)}")
    _decay(service, paths, warn)
    _warm_up_in_background(service, warn, prefetch, upkeep)
    learner = _start_learner(paths, settings, session_id, model, service, record, processed_ids, current_task)
    from memagent.memory.profiles import render_profile

    feature = MemoryFeature(
        service, learner, settings=settings, profile=lambda: render_profile(service, paths),
        current_task=current_task, warn=warn,
    )
    return MemoryOpening(feature)


def _decay(service: "MemoryService", paths: ProjectPaths, warn: Callable[[str], None]) -> None:
    """Confidence decay for never-used cards; runs at most once a day, bounded work."""
    try:
        from memagent.memory.history import LearningHistory
        from memagent.memory.hygiene import apply_decay

        apply_decay(service, LearningHistory.for_paths(paths))
    except Exception as exc:
        warn(f"memory decay skipped: {one_line(exc)}")


def _warm_up_in_background(service: "MemoryService", warn: Callable[[str], None], prefetch: bool = True,
                           upkeep: bool = True) -> None:
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


def _start_learner(
    paths: ProjectPaths,
    settings: Settings,
    session_id: str,
    model: ChatModel,
    service: "MemoryService",
    record: Callable[[dict], None],
    processed_ids: set[str],
    current_task: Callable[[], str | None],
) -> "BackgroundLearner":
    """The pipeline writes its decision history, so `memory review` and `memory stats` see
    what was learned automatically."""
    from memagent.memory.history import LearningHistory
    from memagent.memory.learning import BackgroundLearner, LearningPipeline

    from memagent.llm.tokens import lazy_counter

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
