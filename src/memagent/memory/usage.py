"""Use of cards, recorded without slowing the turn down.

A card is *used* when it is injected into a turn (``Injection.context_for_turn``) or returned
by a search the model asked for (the ``memory_search`` tool), besides being cited. Those uses
are noted in a :class:`UsageBuffer` in memory — no disk write on the turn's path — and written
in one catalog transaction per store when the buffer is flushed: at the end of each turn and
when the session closes (``MemoryFeature.after_turn`` / ``close``). A search run from the
command line (``memagent memory search``) is not a use.

What the catalog keeps per card (``uses``, ``last_used_at``) feeds:

- ranking: the ``usage`` signal (:func:`usage_signal`, 0 for a never-used card up to 1 at
  ``SATURATION`` uses) lifts a used card a little — a bounded term, never a penalty;
- decay: a card's idle clock restarts at its last use, and a card used often decays more
  slowly (:func:`decay_stretch`);
- ``memagent memory stats``: the most and least used cards.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable
from datetime import datetime

SATURATION = 20  # uses at which the ranking signal reaches 1 (it grows with log(1 + uses))
DECAY_STRETCH_USES = 10  # uses at which a card's decay half-life is twice as long


def usage_signal(uses: int) -> float:
    """0 for a never-used card, rising with ``log(1 + uses)`` to 1 at :data:`SATURATION` uses."""
    if uses <= 0:
        return 0.0
    return min(math.log1p(uses) / math.log1p(SATURATION), 1.0)


def decay_stretch(uses: int) -> float:
    """How much longer a used card's decay half-life is: 1 (never used) to 2 (often used)."""
    return 1.0 + min(max(uses, 0), DECAY_STRETCH_USES) / DECAY_STRETCH_USES


class UsageBuffer:
    """Uses noted since the last flush: card id -> (times, latest). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[int, datetime]] = {}

    def note(self, ids: Iterable[str], when: datetime) -> None:
        with self._lock:
            for card_id in dict.fromkeys(ids):
                times, latest = self._pending.get(card_id, (0, when))
                self._pending[card_id] = (times + 1, max(latest, when))

    def take(self) -> dict[str, tuple[int, datetime]]:
        """Everything noted, emptying the buffer."""
        with self._lock:
            pending, self._pending = self._pending, {}
            return pending

    def put_back(self, pending: dict[str, tuple[int, datetime]]) -> None:
        """Uses a failed flush could not write wait for the next one."""
        with self._lock:
            for card_id, (times, when) in pending.items():
                mine, latest = self._pending.get(card_id, (0, when))
                self._pending[card_id] = (mine + times, max(latest, when))

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)


__all__ = ["DECAY_STRETCH_USES", "SATURATION", "UsageBuffer", "decay_stretch", "usage_signal"]
