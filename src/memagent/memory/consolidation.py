"""Consolidation: decide, for each extracted candidate, ADD, UPDATE, CONTRADICT or NOOP.

One authority judges each candidate once. First the correction rule (the one every card meets,
``Saving.judge_new_cards``: the write gate, then ``memory.corrections.decide`` against the store
and the candidates said before it), in the order the candidates were said:
- refused by the write gate: REFUSED;
- a restatement of an active card: NOOP on that card (reinforced);
- a correction the rule is sure of: UPDATE of the card it corrects;
- a new fact with no similar card: ADD.
None of these costs a model call. Only the candidates the rule cannot settle — it finds nothing
to correct or restate, yet similar cards exist (a contradiction worded without a correction
word, a change of meaning the words do not show) — are put to the model, in one request, each
shown with its similar cards under short integer handles ("E1", "E2"; never raw ids, which models
garble); the model answers ``{"actions": [{"candidate": int, "action": "ADD" | "UPDATE" |
"CONTRADICT" | "NOOP", "target": int | null}]}``. Its answer is final: the card goes to
``Saving.submit`` with the decision made, never judged again.

Applying a decision (the candidate's own card, given to ``Saving.submit``), in the order said:
- ADD: save (the write gate's rate limit on automatic writes may still refuse it).
- UPDATE: a new card superseding the target (append-only: the old card keeps its text, status superseded).
- CONTRADICT: a new card; the target is marked ``contradicted`` and linked to it
  (``superseded_by``), the new card links back (``supersedes``).
- NOOP: nothing is written; the target is reinforced.
A card held for review (``require_review``, or instruction-like tool output) is written archived
and corrects nothing: its target is never touched until the user keeps it
(``memory.hygiene.approve`` makes the correction then).
Source trust orders conflicts: an explicit user statement outranks an assistant inference,
which outranks tool output. A candidate never replaces a card from a more trusted source; that
decision becomes a NOOP with the reason logged.

Every decision is appended to the learning history (:mod:`memagent.memory.learning_history`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from memagent.memory import corrections
from memagent.memory.cards import MemoryCard
from memagent.memory.extraction import find_json_object
from memagent.memory.procedures import PROCEDURE_RELEVANCE
from memagent.memory.saving import Judgement
from memagent.memory.screening import Candidate

if TYPE_CHECKING:
    from memagent.memory.reading import Hit
    from memagent.memory.service import MemoryService

Action = Literal["ADD", "UPDATE", "CONTRADICT", "NOOP"]
TRUST = {"user": 3, "system": 3, "assistant": 2, "import": 2, "tool": 1, "repository": 1}
NEIGHBOURS = 3  # similar cards shown per candidate
# Calibrated relevance (0..1) for a card to count as similar, and how far below the best
# neighbour another may be. Measured on bench/bench_learning.py: cards about the same subject
# score 0.67-0.91, unrelated cards of the same project up to 0.77 (they share its name).
MIN_RELEVANCE = 0.5
NEIGHBOUR_SPREAD = 0.2

CONSOLIDATION_SYSTEM = """\
You keep a coding agent's long-term memory consistent. Each candidate memory is listed with the \
most similar existing memories (E1, E2, ...). One action per candidate:
- ADD: new information no existing memory covers.
- UPDATE: changes or refines an existing memory about the same thing (new value, version, date, \
amount, name, added qualifier, what finally worked); replaces it (target).
- CONTRADICT: says an existing memory is wrong or no longer true (target).
- NOOP: an existing memory already says the same, same numbers, dates and qualifiers.
"budget is $10k" vs "budget is $15k" is an UPDATE, never a NOOP; different subjects are not \
duplicates. Answer with only JSON, target = the E-number (null for ADD):
{"actions": [{"candidate": 1, "action": "UPDATE", "target": 2}]}"""


@dataclass
class Decision:
    """What happened to one candidate."""

    candidate: Candidate
    action: str  # ADD, UPDATE, CONTRADICT, NOOP, DUPLICATE, REFUSED, SKIPPED, PENDING
    card_id: str | None = None  # the card written (or the existing card a duplicate/NOOP points at)
    target_id: str | None = None  # the card replaced / contradicted / matched
    reason: str = ""
    pending: bool = False  # written as archived, waiting for `memagent memory review`

    @property
    def stored(self) -> bool:
        return self.action in ("ADD", "UPDATE", "CONTRADICT") and self.card_id is not None


class ActionItem(BaseModel):
    model_config = ConfigDict(extra="ignore")

    candidate: int
    action: Action
    target: int | None = None

    @field_validator("action", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("target", mode="before")
    @classmethod
    def _handle(cls, value: object) -> object:
        # Accept "E2" as well as 2.
        if isinstance(value, str):
            text = value.strip().upper().lstrip("E")
            return int(text) if text.isdigit() else None
        return value


def parse_actions(text: str) -> dict[int, ActionItem] | None:
    """Valid actions by candidate number; ``None`` when the answer is unusable as a whole."""
    obj = find_json_object(text or "", "actions")
    listed = obj.get("actions") if obj is not None else None
    if not isinstance(listed, list):
        return None
    actions: dict[int, ActionItem] = {}
    for item in listed:
        if not isinstance(item, dict):
            continue
        try:
            parsed = ActionItem.model_validate(item)
        except ValidationError:
            continue
        actions.setdefault(parsed.candidate, parsed)
    return actions


# -- the store side ---------------------------------------------------------------------------


def similar_cards(
    service: MemoryService, candidate: Candidate, k: int = NEIGHBOURS, min_relevance: float = MIN_RELEVANCE
) -> list[MemoryCard]:
    """Active cards of the candidate's scope that are about the same thing, best first. A
    procedure with no procedure among them also meets the best procedure of its scope at a lower
    bar (``memory.procedures``): a new way to do a task shares few words with the old one."""
    hits = [
        h for h in service.search(candidate.content, k, scope=candidate.scope, min_score=min_relevance) if h.card.active
    ]
    if candidate.memory_type == "procedure" and not any(h.card.memory_type == "procedure" for h in hits):
        hits += [
            h
            for h in service.search(
                candidate.content,
                1,
                memory_type="procedure",
                scope=candidate.scope,
                min_score=min(min_relevance, PROCEDURE_RELEVANCE),
            )
            if h.card.active
        ]
        if hits and hits[-1].card.memory_type == "procedure":
            return [h.card for h in hits[:-1] if _near_best(h, hits[:-1])] + [hits[-1].card]
    return [h.card for h in hits if _near_best(h, hits)]


def _near_best(hit: Hit, hits: Sequence[Hit]) -> bool:
    best = max(h.parts.get("relevance", h.score) for h in hits)
    return hit.parts.get("relevance", hit.score) >= best - NEIGHBOUR_SPREAD


# -- the consolidator -------------------------------------------------------------------------

Ask = Callable[[str, str], str]  # (system, user) -> answer text; raises on model failure


@dataclass
class _Pending:
    number: int
    candidate: Candidate
    handles: list[int]
    position: int  # in the batch


@dataclass
class _Planned:
    """A candidate's decision before it is applied: by the rule, or by the model."""

    action: str
    target: MemoryCard | None = None
    why: str = ""
    earlier: int | None = None  # the target is the card an earlier candidate of the batch became


@dataclass
class Consolidator:
    """Decides and applies actions for a batch of candidates (see module docstring)."""

    service: MemoryService
    ask: Ask
    session_id: str = ""
    task_hint: str | None = None
    hold_for_review: bool = False
    record: Callable[[Decision], None] | None = None
    neighbours: int = NEIGHBOURS
    min_relevance: float = MIN_RELEVANCE
    model_calls: int = 0
    failures: int = 0  # answers unusable twice: their candidates are skipped, and counted
    _replaced: dict[str, str] = field(default_factory=dict)

    def run(self, candidates: Sequence[Candidate]) -> list[Decision]:
        judgements = self.service.judge_new_cards([c.card_for(self.session_id, self.task_hint) for c in candidates])
        plans: list[_Planned | None] = []
        pending: list[_Pending] = []
        handles: dict[str, int] = {}
        shown: dict[int, MemoryCard] = {}
        for position, (candidate, judgement) in enumerate(zip(candidates, judgements)):
            plan = self._by_rule(judgement)
            if plan is None:
                similar = similar_cards(self.service, candidate, self.neighbours, self.min_relevance)
                if not similar:
                    plan = _Planned("ADD", why="no similar memory")
                else:
                    numbers = []
                    for card in similar:
                        if card.id not in handles:
                            handles[card.id] = len(handles) + 1
                            shown[handles[card.id]] = card
                        numbers.append(handles[card.id])
                    pending.append(_Pending(len(pending) + 1, candidate, numbers, position))
            plans.append(plan)
        if pending:
            for position, plan in self._decide(pending, shown).items():
                plans[position] = plan
        written: dict[int, str] = {}  # batch position -> the card it became (or restated)
        decisions = []
        for position, (candidate, judgement, planned) in enumerate(zip(candidates, judgements, plans)):
            plan = planned or _Planned("SKIPPED", why="no decision")
            decision = self._apply_plan(candidate, judgement, plan, written)
            became = decision.card_id or (decision.target_id if decision.action == "NOOP" else None)
            if became is not None:
                written[position] = became
            decisions.append(decision)
        return decisions

    def _by_rule(self, judgement: Judgement) -> _Planned | None:
        """What the correction rule settles alone; ``None`` when it cannot (the model decides)."""
        if judgement.refusal is not None:
            return _Planned("REFUSED", why=judgement.refusal)
        decision = judgement.decision
        other = decision.other
        if other is None or decision.action == "add":
            return None
        why = f"correction rule: {decision.reason or decision.action}"
        if judgement.earlier is not None:  # about an earlier candidate: its card is known once applied
            action = {"duplicate": "NOOP", "supersedes": "UPDATE"}.get(decision.action)
            return _Planned(action, None, why, judgement.earlier) if action else None
        target = self.service.get(other.id)
        if target is None:
            return None  # forgotten meanwhile
        if decision.action == "superseded":  # an older statement of what ``target`` corrects: its history
            return _Planned("ADD", None, f"{why} (older than {target.id}, which corrects it)")
        return _Planned("NOOP" if decision.action == "duplicate" else "UPDATE", target, why)

    def _decide(self, pending: list[_Pending], shown: dict[int, MemoryCard]) -> dict[int, _Planned]:
        prompt = consolidation_prompt(pending, shown)
        actions = None
        for _ in range(2):  # one retry on an unusable answer
            self.model_calls += 1
            actions = parse_actions(self.ask(CONSOLIDATION_SYSTEM, prompt))
            if actions is not None:
                break
        if actions is None:
            self.failures += 1
        plans = {}
        for item in pending:
            chosen = (actions or {}).get(item.number)
            if chosen is None:
                why = "consolidation answer unusable" if actions is None else "no action given for it"
                plans[item.position] = _Planned("SKIPPED", why=why)
                continue
            target = shown.get(chosen.target) if chosen.target is not None else None
            if chosen.action in ("UPDATE", "CONTRADICT") and target is None:
                plans[item.position] = _Planned("SKIPPED", why=f"{chosen.action} without a valid target")
                continue
            plans[item.position] = _Planned(chosen.action, target, "model decision")
        return plans

    def _apply_plan(
        self, candidate: Candidate, judgement: Judgement, plan: _Planned, written: dict[int, str]
    ) -> Decision:
        if plan.action in ("REFUSED", "SKIPPED"):
            return self._log(Decision(candidate, plan.action, reason=plan.why))
        target = plan.target
        if plan.earlier is not None:  # about a card this batch wrote (or restated) a moment ago
            card_id = written.get(plan.earlier)
            target = self.service.get(card_id) if card_id is not None else None
            if target is None:
                return self._apply(candidate, "ADD", None, "the card it restates or corrects was not saved")
        return self._apply(candidate, plan.action, target, plan.why, judgement)

    def _current(self, card: MemoryCard | None) -> MemoryCard | None:
        """Follow replacements made earlier in this batch to the card that is now active."""
        if card is None:
            return None
        seen = set()
        card_id = card.id
        while card_id in self._replaced and card_id not in seen:
            seen.add(card_id)
            card_id = self._replaced[card_id]
        if card_id == card.id:
            return card
        return self.service.get(card_id) or card

    def _apply(
        self,
        candidate: Candidate,
        action: str,
        target: MemoryCard | None,
        why: str,
        judgement: Judgement | None = None,
    ) -> Decision:
        target = self._current(target)
        if action == "NOOP":
            if target is not None and self._reinforce(candidate, target):
                why = f"{why}; restated: {target.id} reinforced" if why else f"restated: {target.id} reinforced"
            return self._log(Decision(candidate, "NOOP", target_id=target.id if target else None, reason=why))
        if action in ("UPDATE", "CONTRADICT") and target is not None:
            if TRUST.get(candidate.source, 0) < TRUST.get(target.source, 0):
                reason = f"kept {target.id}: it comes from a more trusted source ({target.source}) than this ({candidate.source})"
                return self._log(Decision(candidate, "NOOP", target_id=target.id, reason=reason))
            if not target.active:
                action, target = "ADD", None
        # The decision is made: the card is saved as decided (``supersedes`` for a correction, the
        # judgement for an addition), never judged a second time.
        supersedes = target.id if action in ("UPDATE", "CONTRADICT") and target is not None else None
        held = self.hold_for_review or candidate.hold
        card = candidate.card_for(self.session_id, self.task_hint, None if held else supersedes)
        history = action == "ADD" and judgement is not None and judgement.decision.action == "superseded"
        vector = judgement.vector if judgement is not None else None
        judged = judgement if history else Judgement(corrections.Decision("add"), vector)
        result = self.service.submit(card, auto=True, held=held, judged=judged)
        if result.status == "refused" or result.card is None:
            return self._log(Decision(candidate, "REFUSED", reason=result.reason or "refused by the write gate"))
        if result.status == "duplicate":
            return self._log(
                Decision(candidate, "DUPLICATE", card_id=result.card.id, target_id=result.card.id, reason=result.reason)
            )
        card = result.card
        target_id = target.id if action in ("UPDATE", "CONTRADICT") and target is not None else None
        if held:
            # Held back: the new card was written archived and its target was never touched; the
            # correction is made when the user keeps the card (hygiene.approve links them).
            decision = Decision(
                candidate, action, card_id=card.id, target_id=target_id, reason=f"{why}; held for review"
            )
            decision.pending = True
            return self._log(decision)
        if target_id is not None:
            self._replaced[target_id] = card.id
        if action == "CONTRADICT" and target_id is not None:
            self.service.update_card(target_id, status="contradicted", superseded_by=card.id)
        return self._log(Decision(candidate, action, card_id=card.id, target_id=target_id, reason=why))

    def _reinforce(self, candidate: Candidate, target: MemoryCard) -> bool:
        """The candidate says again what ``target`` says: strengthen it (``memory.reinforcement``)."""
        if not target.active:
            return False
        return self.service.reinforce(target.id, candidate.card_for(self.session_id)) is not None

    def _log(self, decision: Decision) -> Decision:
        if self.record is not None:
            self.record(decision)
        return decision


TRUST_LABELS = {
    "user": "user-stated",
    "system": "user-stated",
    "assistant": "agent-inferred",
    "tool": "from tool output, unverified",
    "import": "imported by the user",
    "repository": "from the repository, unverified",
}


def trust_label(source: str) -> str:
    """How far to trust a card, by where it was learned, for the injected ``[Memory#id]`` block:
    ``user-stated``, ``agent-inferred``, ``imported by the user``, ``from tool output,
    unverified`` or ``from the repository, unverified``."""
    return TRUST_LABELS.get(source, "unverified")


def _describe(card: MemoryCard) -> str:
    day = card.created_at.date().isoformat()
    return f"({card.memory_type}, {card.scope}, from {card.source}, {day}) {' '.join(card.content.split())}"


def consolidation_prompt(pending: Sequence[_Pending], shown: dict[int, MemoryCard]) -> str:
    lines = []
    for item in pending:
        c = item.candidate
        lines.append(
            f"Candidate {item.number}: ({c.memory_type}, {c.scope}, from {c.source}) {' '.join(c.content.split())}"
        )
        for number in item.handles:
            lines.append(f"  E{number}: {_describe(shown[number])}")
    return "Decide an action for each candidate (ADD, UPDATE, CONTRADICT or NOOP):\n\n" + "\n".join(lines)


__all__ = [
    "CONSOLIDATION_SYSTEM",
    "Consolidator",
    "Decision",
    "TRUST",
    "consolidation_prompt",
    "parse_actions",
    "similar_cards",
    "trust_label",
]
