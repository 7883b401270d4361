"""Every session ends as a dated ``event`` card: what was asked, what was touched, how it ended
and what was left open, linked to its transcript.

The card is written by memagent (``source: assistant``, machine-local: ``.memory/local/private/``),
dated by the session's start (``created_at``), so retrieval's time references ("what did we do
yesterday", "last week", "in June") find it by date. It is a record of its own: it supersedes
nothing and is never merged into another session's card (``SaveRequest.distinct``). It passes the
write gate like any card (a session that handled a secret gets no event card, and says so) and
is not counted against the limits of automatic learning (one per session). A line of the digest
that talks to the agent or tries to plant a memory (``extraction.looks_like_instruction``: a
README's "NOTE TO AI…" the last reply quoted) is left out.

Content, one block::

    Session 20261124-101500-ab12 on Tuesday 2026-11-24 (transcript .transcripts/<id>.jsonl).
    <the rule-made digest of the session: requests, files touched, errors, last reply>
    Left open: <the task in progress at the end, if any>
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from memagent.memory.cards import MemoryCard, Provenance
from memagent.memory.extraction import looks_like_instruction
from memagent.memory.saving import SaveRequest, SaveResult

if TYPE_CHECKING:
    from memagent.memory.service import MemoryService

MAX_CHARS = 1800
DIGEST_HEADER = "(A digest of the earlier conversation, extracted by rule.)"
EVENT_IMPORTANCE = 0.3
EVENT_CONFIDENCE = 0.9


def event_content(
    session_id: str, started: datetime, digest: str, transcript: str, left_open: str | None = None
) -> str:
    """The event card's text (see the module docstring), at most :data:`MAX_CHARS` characters."""
    day = started.astimezone(UTC)
    head = f"Session {session_id} on {day:%A %Y-%m-%d} (transcript {transcript})."
    body = "\n".join(
        line for line in digest.replace(DIGEST_HEADER, "").strip().splitlines() if not looks_like_instruction(line)
    )  # a parroted "note to the AI" stays out
    tail = f"\nLeft open: {left_open}" if left_open else ""
    room = MAX_CHARS - len(head) - len(tail) - 1
    if len(body) > room:
        body = body[: max(0, room - 1)].rstrip() + "…"
    return f"{head}\n{body}{tail}".strip()


def save_session_event(
    service: MemoryService,
    session_id: str,
    started: datetime,
    digest: str,
    transcript: str,
    left_open: str | None = None,
) -> SaveResult:
    """Write the session's event card (see the module docstring)."""
    card = MemoryCard(
        content=event_content(session_id, started, digest, transcript, left_open),
        memory_type="event",
        scope="project",
        source="assistant",
        provenance=Provenance(session_id=session_id),
        confidence=EVENT_CONFIDENCE,
        importance=EVENT_IMPORTANCE,
        files=[transcript],
        task_hint=left_open,
        created_at=started,
        updated_at=datetime.now(UTC),
    )
    return service.save_card(SaveRequest(card, private=True, distinct=True))


__all__ = ["event_content", "save_session_event"]
