"""Continuity: a new session starts where the last one stopped.

On the first turn of a session, the newest user message gets one compact, budgeted note (never
the system prompt, so the cached prefix stays stable): the in-progress and ready tasks with
their ids and blockers, the previous session's summary (what was asked, files touched, errors,
where it stopped), and — when resuming — the restored todo list. The previous session is the
one :func:`memagent.context.sessions.choose_session` prefers: the newest that is interactive or
did work, so a throw-away ``memagent -p hi`` never displaces the real work before it;
:meth:`ContinuityFeature.previous` tells the REPL which one it was.

At session end the feature writes a ``session_summary`` record into the transcript (summary: a
digest made by rule from the session's messages, no model call at exit; open_todos; ended_at). A session that never wrote one
(killed) is summarised from its last compaction record, else digested from its messages when
the next session starts.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import ClassVar

from memagent.agent.feature import BaseFeature, TurnInput
from memagent.context.conversation import Conversation
from memagent.context.digest import deterministic_digest
from memagent.context.sessions import Choice, choose_session
from memagent.context.transcript import TranscriptError, read_records
from memagent.jsontypes import JsonObject
from memagent.llm.items import Injected
from memagent.llm.types import Message
from memagent.markers import Marker, block
from memagent.todo import TodoManager

SESSION_SUMMARY_RECORD = "session_summary"
DEFAULT_BUDGET_CHARS = 4_000


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _messages(records: list[JsonObject]) -> list[Message]:
    """The conversation's messages, each with the blocks that are JSON objects."""
    found: list[Message] = []
    for record in records:
        role, content = record.get("role"), record.get("content")
        if record.get("type") == "message" and role in ("user", "assistant") and isinstance(content, list):
            found.append({"role": str(role), "content": [b for b in content if isinstance(b, dict)]})
    return found


def summary_of_records(records: list[JsonObject]) -> str | None:
    """A finished session's summary: its own record, else its last compaction's, else a digest."""
    for kind, key in ((SESSION_SUMMARY_RECORD, "summary"), ("compaction", "summary")):
        found = [r for r in records if r.get("type") == kind and r.get(key)]
        if found:
            return str(found[-1][key])
    messages = _messages(records)
    return deterministic_digest(messages) if messages else None


def previous_session(transcripts_dir: Path, exclude: set[str]) -> tuple[Choice, str] | None:
    """The session to hand over from (see :func:`memagent.context.sessions.choose_session`) and
    its summary; None when there is none."""
    choice = choose_session(transcripts_dir, exclude)
    if choice is None:
        return None
    try:
        records = read_records(Path(choice.info.path)).records
    except TranscriptError:
        return None
    summary = summary_of_records(records)
    return (choice, summary) if summary else None


class ContinuityFeature(BaseFeature):
    """``tasks_snapshot``: the open tasks as text (None without a graph); ``exclude``: sessions
    whose messages are already in the context (this one, and the one being resumed)."""

    name = "continuity"
    record_kinds: ClassVar[tuple[str, ...]] = (SESSION_SUMMARY_RECORD,)

    def __init__(
        self,
        transcripts_dir: Path,
        tasks_snapshot: Callable[[], str | None],
        todo: TodoManager,
        *,
        record: Callable[[JsonObject], None],
        exclude: set[str],
        resuming: bool,
        budget_chars: int = DEFAULT_BUDGET_CHARS,
    ) -> None:
        self.transcripts_dir = transcripts_dir
        self.tasks_snapshot = tasks_snapshot
        self.todo = todo
        self._record = record
        self.exclude = exclude
        self.resuming = resuming
        self.budget_chars = budget_chars
        self._given = False
        self._conversation: Conversation | None = None
        self._previous: tuple[Choice, str] | None = None
        self._looked_up = False

    def turn_context(self, turn: TurnInput) -> Injected | None:
        if self._given:
            return None
        self._given = True
        note = self.start_note()
        return Injected(Marker.CONTINUITY, block(Marker.CONTINUITY, note)) if note else None

    def previous(self) -> tuple[Choice, str] | None:
        """The session this one takes over from and its summary (looked up once; None when
        resuming, or when there is none)."""
        if not self._looked_up:
            self._looked_up = True
            self._previous = None if self.resuming else previous_session(self.transcripts_dir, self.exclude)
        return self._previous

    def start_note(self) -> str | None:
        """The note for the first turn, or None when there is nothing to carry over."""
        parts: list[str] = []
        tasks = self.tasks_snapshot()
        if tasks:
            parts.append("Open tasks in the project's task graph:\n" + tasks)
        if self.resuming and self.todo.items:
            parts.append("Your todo list, restored:\n" + self.todo.render())
        if not self.resuming:
            previous = self.previous()
            if previous:
                choice, summary = previous
                session_id, started = choice.info.id, choice.info.started or ""
                when = f" (started {started[:16].replace('T', ' ')})" if started else ""
                room = max(500, self.budget_chars - sum(len(p) for p in parts) - 200)
                parts.append(f"The previous session {session_id}{when} ended here:\n" + _cap(summary, room))
        if not parts:
            return None
        return _cap("\n\n".join(parts), self.budget_chars)

    def after_turn(self, conversation: Conversation) -> None:
        self._conversation = conversation

    def close(self) -> None:
        """Leave a summary for the next session (only when this one said anything)."""
        conversation = self._conversation
        if conversation is None or not any(m["role"] == "assistant" for m in conversation.messages):
            return
        self._record(
            {
                "type": SESSION_SUMMARY_RECORD,
                "summary": deterministic_digest(conversation.messages),
                "open_todos": [item for item in self.todo.items if item.get("status") != "completed"],
                "ended_at": datetime.now().astimezone().isoformat(timespec="seconds"),
            }
        )


__all__ = ["ContinuityFeature", "SESSION_SUMMARY_RECORD", "previous_session", "summary_of_records"]
