"""What memory puts into the conversation: citable blocks for a turn, and citations noted back.

Injected and retrieved cards are noted as used in memory and written by :meth:`Injection.flush_usage`
(``memory.usage``); citations are written as they come."""

from __future__ import annotations

import re
from collections.abc import Sequence

from memagent.markers import Marker
from memagent.memory.cards import MemoryCard, utc_now
from memagent.memory.consolidation import trust_label
from memagent.memory.core import MemoryCore
from memagent.memory.reading import Reading

CITATION_RE = re.compile(r"\[Memory#(m_[0-9a-f]{12})\]")
CITE_INSTRUCTION = (
    "When you rely on one of these memories, cite it as [Memory#id]; if they do not answer the "
    "question, say that memory holds no answer rather than guessing."
)


def format_block(card: MemoryCard) -> str:
    """``[Memory#m_…] (decision, project, conf 0.90, user-stated, session S turn 4, 2026-11-20) content``
    (the trust label says where the card was learned: see ``consolidation.trust_label``)."""
    origin = []
    if card.source == "repository":
        pass  # the trust label says it; its provenance fields are claims, not facts
    elif card.provenance.session_id:
        origin.append(f"session {card.provenance.session_id}")
        if card.provenance.turn is not None:
            origin.append(f"turn {card.provenance.turn}")
    else:
        origin.append(f"from {card.source}")
    parts = [
        card.memory_type,
        card.scope,
        f"conf {card.confidence:.2f}",
        trust_label(card.source),
        " ".join(origin),
        card.created_at.date().isoformat(),
    ]
    meta = ", ".join(part for part in parts if part)
    content = " ".join(card.content.split())
    return f"{card.citation()} ({meta}) {content}"


class Injection:
    """Per-turn memory context and citation bookkeeping, over the service's core; it finds
    cards through the reading part."""

    def __init__(self, core: MemoryCore, reading: Reading) -> None:
        self.core = core
        self.reading = reading

    def context_for_turn(
        self,
        user_text: str,
        recent: Sequence[str] = (),
        current_task: str | None = None,
        k: int | None = None,
    ) -> str | None:
        """Citable memory blocks for this turn, or ``None`` (trivial turn, or nothing relevant)."""
        from memagent.memory.query import build_query, is_trivial

        if is_trivial(user_text):
            return None
        query = build_query(user_text, list(recent))
        hits = self.reading.search(query, k or self.core.knobs.k, current_task=current_task)
        if not hits:
            return None
        lines = [Marker.MEMORIES.value]
        used = 0
        injected = []
        for hit in hits:  # best first, within the block's budget (the best card always goes in)
            block = self._block_with_staleness(hit.card) + hit.history_note()
            if len(lines) > 1 and used + len(block) > self.core.knobs.block_chars:
                break
            lines.append(block)
            injected.append(hit.card.id)
            used += len(block)
        self.core.usage.note(injected, utc_now())
        lines.append(CITE_INSTRUCTION)
        return "\n".join(lines)

    def _block_with_staleness(self, card: MemoryCard) -> str:
        """A card about files that are gone or changed since it was written says so."""
        block = format_block(card)
        if card.files and self.core.project_root is not None:
            from memagent.memory.hygiene import stale_note

            note = stale_note(card, self.core.project_root)
            if note:
                block += f" [{note}]"
        return block

    def note_citations(self, assistant_text: str) -> list[str]:
        """Mark every cited ``[Memory#id]`` as used; returns the ids of cards that exist."""
        ids = list(dict.fromkeys(CITATION_RE.findall(assistant_text or "")))
        if not ids:
            return []
        with self.core.lock, self.core.guard("update"):
            noted: set[str] = set()
            now = utc_now()
            for store in self.core.stores_in_use():
                catalog = store.open_catalog()
                with store.locked(), catalog.transaction() as db:
                    noted.update(catalog.note_use(db, [i for i in ids if i not in noted], now))
            return [i for i in ids if i in noted]

    def topic_distance(self, previous: str, current: str) -> float | None:
        """How far the user moved from ``previous`` to ``current`` (``memory.drift``): with the
        store's embedder when it is loaded already, else lexically (never loads it)."""
        from memagent.memory.drift import topic_distance

        embed = self.core.embed if self.core.embedder_handle.loaded and self.core.dim > 0 else None
        return topic_distance(previous, current, embed)

    def auto_write_refusal(self) -> str | None:
        """Why the rate limit (kept on disk, shared by the project's processes) would refuse an
        automatic write now, or ``None``."""
        return self.core.rate.refusal(self.core.session_id)

    def note_retrieved(self, ids: Sequence[str]) -> None:
        """Cards a search returned to the model: a use, written at the next :meth:`flush_usage`."""
        self.core.usage.note(ids, utc_now())

    def flush_usage(self) -> int:
        """Write the uses noted since the last flush, one transaction per store; returns how
        many cards were updated (uses that fail to be written wait for the next flush)."""
        pending = self.core.usage.take()
        if not pending:
            return 0
        done: set[str] = set()
        try:
            with self.core.lock, self.core.guard("update"):
                for store in self.core.stores_in_use():
                    rest = {i: use for i, use in pending.items() if i not in done}
                    if not rest or not store.catalog.exists:
                        continue
                    catalog = store.open_catalog()
                    with store.locked(), catalog.transaction() as db:
                        done.update(catalog.note_uses(db, rest))
                return len(done)
        except Exception:
            self.core.usage.put_back({i: use for i, use in pending.items() if i not in done})
            raise


__all__ = ["CITATION_RE", "CITE_INSTRUCTION", "Injection", "format_block"]
