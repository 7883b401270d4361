"""A card as the catalog knows it: what ranking, listing and filtering need without reading its file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memagent.memory.ranking import CardSignals


def parse_time(raw: str | None) -> datetime | None:
    if not raw:
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None


@dataclass(frozen=True)
class Entry:
    """What ranking, listing and filtering need about a card, without reading its file."""

    id: str
    memory_type: str
    scope: str
    scope_id: str | None
    confidence: float
    importance: float
    status: str
    created_at: datetime | None
    last_used_at: datetime | None
    task_hint: str | None
    person: str | None
    thread: str | None
    position: int | None
    private: bool
    source: str
    uses: int = 0  # times retrieved, injected or cited (``memory.usage``)

    def signals(self) -> CardSignals:
        return CardSignals(
            id=self.id,
            confidence=self.confidence,
            importance=self.importance,
            scope=self.scope,
            created_at=self.created_at,
            last_used_at=self.last_used_at,
            task_hint=self.task_hint,
            status=self.status,
            person=self.person,
            thread=self.thread,
            position=self.position,
            source=self.source,
            uses=self.uses,
        )


def entry_from_row(row: Sequence[Any]) -> Entry:
    """An :class:`Entry` from a row of the catalog's ``cards`` table (its ``_ENTRY_COLUMNS`` order)."""
    return Entry(
        id=row[0],
        memory_type=row[1],
        scope=row[2],
        scope_id=row[3],
        confidence=row[4],
        importance=row[5],
        status=row[6],
        created_at=parse_time(row[7]),
        last_used_at=parse_time(row[8]),
        task_hint=row[9],
        person=row[10],
        thread=row[11],
        position=row[12],
        private=bool(row[13]),
        source=row[14] or "assistant",
        uses=int(row[15] or 0),
    )
