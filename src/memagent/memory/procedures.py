"""Procedures refined from outcomes, and offered as skills once they have proved themselves.

Refinement
    Extraction records a procedure as what finally worked when attempts failed first, and the
    consolidator (the one authority on updates: ``memory.consolidation``) treats a procedure
    saying what finally worked for the task of an existing procedure as an UPDATE of it: the new
    card supersedes the old one, which stays in the chain as its history. A procedure candidate is
    shown the procedures of its scope down to ``PROCEDURE_RELEVANCE`` (other cards need the
    consolidator's usual bar): a new command for the same task shares few words with the old.

Maturity
    :func:`maturity` counts how often a procedure proved itself over its whole correction chain
    (a refined procedure keeps the record of the one it replaced): every use (injected,
    retrieved for the model, cited: ``memory.usage``), every restatement (``merged_from``) and
    every refinement (each predecessor in the chain).

Skills
    :func:`skill_proposals` lists the active procedures whose maturity reached the
    ``memory_skill_after_uses`` setting (0: never), most mature first, leaving out those the user
    declined (a ``skill_declined`` record in the learning history, for any card of the chain)
    and those a skill was already made from (``made``: card ids named by existing skills).
    ``memagent memory review`` offers each one and asks before writing the skill.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memagent.memory.cards import MemoryCard

if TYPE_CHECKING:
    from memagent.memory.learning_history import LearningHistory
    from memagent.memory.service import MemoryService

PROCEDURE_RELEVANCE = 0.3  # relevance at which an existing procedure is shown to the consolidator
SCAN_LIMIT = 500  # newest active procedures considered per review
DECLINED = "skill_declined"


@dataclass(frozen=True)
class SkillProposal:
    card: MemoryCard
    maturity: int
    chain: tuple[str, ...]  # every card id of its correction chain, oldest first


def maturity(chain: Sequence[MemoryCard]) -> int:
    """Uses and restatements of every card of the chain, plus one per refinement."""
    return sum(card.access_count + len(card.merged_from) for card in chain) + max(len(chain) - 1, 0)


def skill_proposals(
    service: MemoryService, history: LearningHistory, threshold: int, made: Iterable[str] = ()
) -> list[SkillProposal]:
    """Mature procedures to offer as skills (see the module docstring)."""
    if threshold <= 0:
        return []
    declined = {str(r.get("card_id")) for r in history.records(DECLINED)}
    skip = declined | set(made)
    proposals = []
    for card in service.list(memory_type="procedure", limit=SCAN_LIMIT):
        chain = service.chain(card.id) or [card]
        ids = tuple(c.id for c in chain)
        if skip.intersection(ids):
            continue
        value = maturity(chain)
        if value >= threshold:
            proposals.append(SkillProposal(card, value, ids))
    proposals.sort(key=lambda p: (-p.maturity, p.card.id))
    return proposals


def decline(history: LearningHistory, proposal: SkillProposal) -> None:
    """Never offer this procedure (or a later refinement of it) as a skill again."""
    history.append({"kind": DECLINED, "card_id": proposal.card.id}, scope=proposal.card.scope)


__all__ = ["DECLINED", "PROCEDURE_RELEVANCE", "SkillProposal", "decline", "maturity", "skill_proposals"]
