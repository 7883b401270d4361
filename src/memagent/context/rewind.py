"""Rewinding a conversation: the user turns of a transcript, and the records still in effect.

A ``rewind`` record with ``conversation: true`` takes the conversation back to the start of one
user turn: every record from that turn's message up to the rewind record stops counting, and the
session goes on from there. :func:`active_records` applies the rewinds of a transcript in order
(a later rewind may go back further, or to a turn opened after an earlier rewind), so that a
resume, a compaction, ``sessions`` and the next rewind all see the same history.

User turns are numbered from 1 over the conversation the user sees, as
:attr:`~memagent.context.conversation.Conversation.turn_number` counts them live: a user message
that answers no tool call and holds the user's own words, the ones copied from a resumed session
(between ``resume`` and ``resume_end``) included. The ``checkpoint`` record naming a turn gives
the state of the working tree at its start (:mod:`memagent.checkpoints`); a resume carries the
checkpoints of the turns it copies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memagent.context.conversation import opens_user_turn
from memagent.jsontypes import JsonObject, JsonValue
from memagent.llm.items import own_texts

FIRST_LINE_CHARS = 100


class RewindError(Exception):
    """The transcript cannot be rewound as asked; ``str()`` is one line."""


@dataclass(frozen=True)
class TurnPoint:
    """The start of one user turn: where a rewind can go back to."""

    number: int  # 1-based, as the session counted it
    message_id: str  # the transcript id of the message that opened it
    text: str  # the user's words (the whole message, injected text left out)
    time: str | None  # when it was sent (UTC ISO 8601)
    checkpoint: str | None  # the tree at its start (a shadow-repository commit), when one was taken
    position: int  # index of its message record in the active records

    @property
    def first_line(self) -> str:
        line = (self.text.strip().splitlines() or [""])[0].strip()
        return line if len(line) <= FIRST_LINE_CHARS else line[: FIRST_LINE_CHARS - 1] + "…"

    def to_dict(self) -> JsonObject:
        return {
            "turn": self.number,
            "message_id": self.message_id,
            "text": self.first_line,
            "time": self.time,
            "checkpoint": self.checkpoint,
        }


def active_records(records: Sequence[JsonObject], warnings: list[str] | None = None) -> list[JsonObject]:
    """The records still in effect once every conversation rewind is applied, in file order."""
    active: list[JsonObject] = []
    for record in records:
        if record.get("type") == "rewind" and record.get("conversation"):
            cut = _message_position(active, str(record.get("message_id")))
            if cut is None:
                if warnings is not None:
                    warnings.append(
                        f"a rewind names message {record.get('message_id')}, which is not in the history; it is ignored"
                    )
            else:
                del active[cut:]
        active.append(record)
    return active


def _message_position(records: Sequence[JsonObject], message_id: str) -> int | None:
    for index in range(len(records) - 1, -1, -1):
        record = records[index]
        if record.get("type") == "message" and str(record.get("id")) == message_id:
            return index
    return None


def user_words(content: Sequence[JsonValue]) -> str:
    """The text the user typed in a message (injected blocks left out)."""
    texts = own_texts({"content": list(content)})
    return "\n".join(t for t in texts if t.strip())


def turn_points(active: Sequence[JsonObject]) -> list[TurnPoint]:
    """Every user turn of the active records, oldest first, with its checkpoint."""
    points: list[TurnPoint] = []
    checkpoints: dict[int, str] = {}
    for position, record in enumerate(active):
        kind = record.get("type")
        turn, content, time = record.get("turn"), record.get("content"), record.get("time")
        if kind == "checkpoint" and isinstance(turn, int) and record.get("commit"):
            checkpoints[turn] = str(record["commit"])
        elif kind == "message":
            if isinstance(content, list) and opens_user_turn({"role": record.get("role"), "content": content}):
                points.append(
                    TurnPoint(
                        len(points) + 1,
                        str(record.get("id")),
                        user_words(content),
                        time if isinstance(time, str) else None,
                        None,
                        position,
                    )
                )
    return [TurnPoint(p.number, p.message_id, p.text, p.time, checkpoints.get(p.number), p.position) for p in points]


def find_turn(points: Sequence[TurnPoint], number: int) -> TurnPoint:
    if not points:
        raise RewindError("this session has no user turns to rewind to")
    if not 1 <= number <= len(points):
        raise RewindError(f"no turn {number}: this session has turns 1 to {len(points)}")
    return points[number - 1]


def rewind_record(point: TurnPoint, *, code: bool, conversation: bool, **details: JsonValue) -> JsonObject:
    """The transcript record of a rewind to the start of ``point``."""
    return {
        "type": "rewind",
        "to_turn": point.number,
        "message_id": point.message_id,
        "code": code,
        "conversation": conversation,
        **details,
    }


__all__ = [
    "RewindError",
    "TurnPoint",
    "active_records",
    "find_turn",
    "rewind_record",
    "turn_points",
    "user_words",
]
