"""The live message list of a session, mirrored to its transcript as it grows.

:class:`Conversation` is the one writer of a session's transcript (the core's record types are listed
in :mod:`memagent.context.transcript`, each feature's in its ``record_kinds``) and the one counter of its user turns.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from memagent.context.history import has_tool_results
from memagent.context.transcript import RECORD_TYPES, TranscriptWriter
from memagent.jsontypes import JsonMapping, JsonObject, JsonValue
from memagent.llm.items import own_texts
from memagent.llm.types import Block, Message


def opens_user_turn(message: JsonMapping) -> bool:
    """Does this message, as appended (one transcript record), open a user turn?

    A user message that answers no tool call and carries words of the user's own: text that is
    not injected (a :class:`~memagent.llm.items.Text` item). The note that the previous request got no
    answer does not open a turn by itself, but the request merged after it does.
    """
    if message.get("role") != "user" or has_tool_results(message):
        return False
    return bool(own_texts(message))


@dataclass
class Conversation:
    """Working memory: the messages the next request is built from.

    ``append`` records each message in the transcript before it joins the list, so what the
    model saw is always on disk first. Two user messages in a row (after a cancelled turn) are
    merged in memory; the transcript keeps both records and resume merges them the same way.

    ``user_turns`` counts the turns the user opened in this session (:func:`opens_user_turn`,
    counted as messages are appended, so a compaction that drops them does not change it);
    the messages a resumed session is seeded with (:meth:`seed`) open none: the turns among them
    are ``earlier_turns``, so the turn now running is number ``turn_number`` of the conversation
    the user sees (what ``/rewind`` lists).
    """

    messages: list[Message] = field(default_factory=list)
    recorder: TranscriptWriter | None = None
    session_id: str = ""
    # transcript message id of each entry in ``messages`` (merged messages keep the first id)
    ids: list[str] = field(default_factory=list)
    user_turns: int = 0
    earlier_turns: int = 0
    feature_records: set[str] = field(default_factory=set)  # record kinds its features write

    @property
    def turn_number(self) -> int:
        """Turns of the visible conversation so far: the seeded ones, then this session's."""
        return self.earlier_turns + self.user_turns

    def append(
        self, role: str, content: list[Block], usage: dict[str, int] | None = None, *, whole: list[Block] | None = None
    ) -> str:
        """Record and add one message. ``whole``: what the transcript keeps when the model is sent
        less (a message too large for the context goes as a preview: :mod:`memagent.context.oversize`)."""
        message: Message = {"role": role, "content": copy.deepcopy(content)}
        recorded: JsonObject = {"role": role, "content": [*(message["content"] if whole is None else whole)]}
        if whole is not None:
            recorded["sent_as_preview"] = True
        message_id = self.recorder.message(recorded, usage=usage) if self.recorder else str(len(self.ids) + 1)
        if opens_user_turn(message):
            self.user_turns += 1
        if self.messages and self.messages[-1]["role"] == role:
            self.messages[-1] = {"role": role, "content": [*self.messages[-1]["content"], *message["content"]]}
        else:
            self.messages.append(message)
            self.ids.append(message_id)
        return message_id

    def start(self, **fields: JsonValue) -> None:
        """The ``session_start`` record (session_id, model, cwd, version, kind, resumed_from).

        Written lazily, just before the first other record: a session that never says anything
        leaves no transcript behind."""
        if self.recorder:
            self.recorder.set_header({"type": "session_start", "session_id": self.session_id, **fields})

    def accept_records(self, kinds: Iterable[str]) -> None:
        """Record kinds a feature of this conversation's agent writes (``Feature.record_kinds``)."""
        self.feature_records |= {kind for kind in kinds if kind not in ("message", "session_start")}

    def record(self, record: JsonObject) -> None:
        """A non-message record (compaction, extraction, a feature's, …) — transcript only.

        Messages are recorded by :meth:`append` and :meth:`seed` alone; an unknown record type is
        a programming error (ValueError), so every type is listed where it is owned: the core's in
        :data:`~memagent.context.transcript.RECORD_TYPES`, a feature's in its ``record_kinds``."""
        kind = record.get("type")
        known = kind in RECORD_TYPES or kind in self.feature_records
        if not known or kind in ("message", "session_start"):
            raise ValueError(f"not a non-message transcript record type: {kind!r}")
        if self.recorder:
            self.recorder.append(record)

    def seed(
        self,
        messages: Sequence[Message],
        *,
        resumed_from: str,
        warnings: Sequence[str] = (),
        checkpoints: Sequence[str | None] = (),
    ) -> None:
        """Start from the messages of a resumed session, between ``resume`` and ``resume_end`` records.

        They are recorded again, so this session's transcript alone rebuilds the context on the
        next resume; they open no user turn (they count in ``earlier_turns``). ``checkpoints``
        (aligned with ``messages``) are the working-tree checkpoints of the turns they open, carried
        over as ``checkpoint`` records so a rewind can go back to those turns too."""
        self.record(
            {
                "type": "resume",
                "resumed_from": resumed_from,
                "seeded_messages": len(messages),
                "warnings": list(warnings),
            }
        )
        turns = self.user_turns
        for index, message in enumerate(messages):
            commit = checkpoints[index] if index < len(checkpoints) else None
            if commit and opens_user_turn(message):
                number = self.earlier_turns + self.user_turns - turns + 1
                self.record({"type": "checkpoint", "turn": number, "commit": commit, "carried_from": resumed_from})
            self.append(message["role"], message["content"])
        self.earlier_turns += self.user_turns - turns
        self.user_turns = turns
        if self.ids:
            self.record({"type": "resume_end", "seeded_through": self.ids[-1]})

    def rewind(self, record: JsonObject, messages: list[Message], ids: list[str], turns_before: int) -> None:
        """Go back to an earlier point: the ``rewind`` record is written first, then the history
        it leaves (rebuilt from the transcript by the caller) replaces the live one, and the turn
        count goes back with it: ``turns_before`` turns remain, so the next turn gets the number of
        the one rewound to."""
        self.record(record)
        self.messages = copy.deepcopy(messages)
        self.ids = list(ids)
        if turns_before <= self.earlier_turns:
            self.earlier_turns, self.user_turns = turns_before, 0
        else:
            self.user_turns = turns_before - self.earlier_turns

    def replace(self, messages: list[Message], ids: list[str]) -> None:
        """Swap in a compacted history. The transcript is never touched."""
        self.messages = messages
        self.ids = ids

    @property
    def last_role(self) -> str | None:
        return self.messages[-1]["role"] if self.messages else None


__all__ = ["Conversation", "opens_user_turn"]
