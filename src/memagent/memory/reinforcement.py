"""Reinforcement: a fact said again grows stronger.

When the gate finds that a new card restates an active one (a near-duplicate with the same
meaning, or a consolidation NOOP naming its target), the existing card is kept and:

- its confidence rises by :data:`GAP_SHARE` of the way to its source's cap (:data:`SOURCE_CAPS`:
  what the user said may reach .98, an inference .9, tool output and repository text never more
  than they may have at all), never above the cap and never lower than it was;
- the new evidence (session, turn, message, quote) joins ``merged_from``;
- its decay clock restarts (``last_used_at`` is now: decay counts idle days from there).

:func:`reinforced` only computes the changed fields; the store writes them
(``memory.saving``), so the supersede rules, the index and the witness see one ordinary rewrite.
"""

from __future__ import annotations

from datetime import UTC, datetime

from memagent.memory.cards import MemoryCard, Provenance
from memagent.memory.extraction import TOOL_CONFIDENCE
from memagent.memory.provenance import REPOSITORY_CONFIDENCE

GAP_SHARE = 0.3
SOURCE_CAPS = {
    "user": 0.98,
    "system": 0.98,
    "assistant": 0.9,
    "import": 0.9,
    "tool": TOOL_CONFIDENCE,
    "repository": REPOSITORY_CONFIDENCE,
}


def cap_for(*sources: str) -> float:
    """The most confidence a restated card may reach: the cap of its strongest evidence."""
    return max(SOURCE_CAPS.get(source, 0.9) for source in sources)


def raised_confidence(current: float, restated: float, cap: float) -> float:
    """The stronger of the two statements, raised toward ``cap`` (a statement already above the
    cap keeps its own value: the cap bounds the raise, not the evidence)."""
    base = max(current, restated)
    if base >= cap:
        return base
    return round(min(cap, base + GAP_SHARE * (cap - base)), 3)


def reinforced(existing: MemoryCard, new: MemoryCard, now: datetime | None = None) -> dict[str, object]:
    """The fields of ``existing`` after ``new`` restated it (see the module docstring)."""
    evidence = list(existing.merged_from)
    if new.provenance != Provenance() and new.provenance != existing.provenance and new.provenance not in evidence:
        evidence.append(new.provenance)
    return {
        "confidence": raised_confidence(existing.confidence, new.confidence, cap_for(existing.source, new.source)),
        "importance": max(existing.importance, new.importance),
        "files": list(dict.fromkeys([*existing.files, *new.files])),
        "merged_from": evidence,
        "last_used_at": now or datetime.now(UTC),
    }


__all__ = ["GAP_SHARE", "SOURCE_CAPS", "cap_for", "raised_confidence", "reinforced"]
