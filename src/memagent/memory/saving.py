"""Saving cards: the write gate, the correction rule (restatements merge, corrections supersede,
look-alike facts are added: ``memory.corrections``), explicit corrections and metadata updates.

The correction rule is applied once to every card, wherever it arrives: here for ``memory add``,
the memory tools and MCP saves; in ``memory.transfer`` for import; for card files that appeared
from outside (a pull, a rebuild of the catalog), on the next sync of the vectors
(``memory.arrivals``); and for learned candidates in :meth:`Saving.judge_new_cards`, before the
consolidator decides whether a model needs to be asked at all. A :class:`Judgement` made there
travels with the card to :meth:`Saving.submit`, which applies it and never judges again.

Every rewrite of a card that exists (a correction marking the old card superseded, a merge, a
metadata update) happens under the store's cross-process lock after checking that the card's
file is still there: a ``memagent memory forget`` in another process that erased it meanwhile
wins, and the card never comes back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict, Unpack

from pydantic import ValidationError

from memagent.memory import arrivals, card_facts
from memagent.memory.cards import MemoryCard, utc_now
from memagent.memory.core import MemoryCore
from memagent.memory.corrections import Comparer, Decision, Neighbour, decide
from memagent.memory.gate import check_card, term_overlap
from memagent.memory.provenance import REPOSITORY
from memagent.memory.quota import quota_note

if TYPE_CHECKING:
    from memagent.memory.store import Store

ARRIVALS_PER_SYNC = 500  # card files from outside judged per sync (the rest wait for the next one)
NEIGHBOURS = 8  # stored cards a new card is judged against (most similar first)
NEIGHBOUR_COSINE = 0.40  # ... at least this similar: a correction can reword a good deal


@dataclass
class SaveResult:
    status: str  # "added" | "duplicate" | "superseded" | "refused"
    card: MemoryCard | None
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.status != "refused"


@dataclass(frozen=True)
class Judgement:
    """The correction rule's word on one new card, given once and carried to :meth:`Saving.submit`,
    which applies it without judging again.

    ``decision``: add, duplicate, supersedes or superseded (``memory.corrections.Decision``; a
    model's verdict on a card the rule left open is handed on as the same type). ``vector``: the
    card's vector, embedded once. ``refusal``: why the write gate refuses the card (then the
    decision means nothing). ``earlier``: the decision is about the card at this position of the
    same batch, not about a stored card (its neighbour's id is then only a placeholder).
    """

    decision: Decision
    vector: list[float] | None = None
    refusal: str | None = None
    earlier: int | None = None


BATCH_ID = "batch:"  # the placeholder id of an earlier card of the same batch, in a Neighbour


def validation_reason(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or "card"
        problems.append(f"{loc}: {err.get('msg', 'invalid')}")
    return "invalid memory: " + "; ".join(problems)


class CorrectionFields(TypedDict, total=False):
    """What a correction may set on its new card (:meth:`Saving.correct`); the rest is carried over
    from the card it corrects."""

    memory_type: str
    scope: str
    confidence: float
    importance: float
    source: str
    provenance: Mapping[str, object] | None
    files: Sequence[str]
    task_hint: str | None
    backstory: str | None
    person: str | None
    relationship: str | None
    private: bool


@dataclass(frozen=True)
class SaveRequest:
    """A card to save and how: ``private`` keeps a project card out of git, ``auto`` counts
    against the rate limit of automatic writes."""

    card: MemoryCard
    private: bool = False
    auto: bool = False
    # a record of its own (a session's event card): never merged into a near-duplicate, never
    # taken for a correction of one
    distinct: bool = False
    # held for review: written archived as it is, correcting nothing, merged into nothing and
    # counting against no quota, until the user keeps it (``memory.hygiene.approve`` then links it
    # to the card it corrects)
    held: bool = False
    # judged already (``Saving.judge_new_cards``, or a model's final word): applied, not judged again
    judged: Judgement | None = None


class Saving:
    """The saving part of the service (see the module docstring), over the service's core."""

    def __init__(self, core: MemoryCore) -> None:
        self.core = core

    def save(
        self,
        content: str,
        memory_type: str = "fact",
        scope: str = "project",
        *,
        confidence: float = 0.8,
        importance: float = 0.5,
        source: str = "assistant",
        provenance: Mapping[str, object] | None = None,
        files: Sequence[str] = (),
        task_hint: str | None = None,
        supersedes: str | None = None,
        auto: bool = False,
        backstory: str | None = None,
        person: str | None = None,
        relationship: str | None = None,
        private: bool = False,
    ) -> SaveResult:
        """Run the gate and store a card; ``supersedes`` makes it a correction of that card.

        A near-duplicate of an active card that only restates it strengthens that card (a
        no-op for the text); one that changes a value, a date, a negation or an opposite word
        supersedes it. Session cards are always private (they never reach git).
        """
        if scope == "session" and not self.core.session_id:
            return SaveResult("refused", None, "a session-scoped memory needs a session; use scope project or user")
        try:
            card = MemoryCard(
                content=content,
                memory_type=memory_type,
                scope=scope,
                source=source,
                provenance=dict(provenance or {}),
                confidence=confidence,
                importance=importance,
                files=list(files),
                task_hint=task_hint,
                supersedes=supersedes,
                backstory=backstory,
                person=person,
                relationship=relationship,
            )
        except ValidationError as exc:
            return SaveResult("refused", None, validation_reason(exc))
        return self.submit(card, private=private, auto=auto)

    def submit(
        self,
        card: MemoryCard,
        *,
        private: bool = False,
        auto: bool = False,
        held: bool = False,
        judged: Judgement | None = None,
    ) -> SaveResult:
        """Save a card made elsewhere (a learned candidate, or :meth:`save`'s) as this service
        saves: its scope's id, this session in its provenance unless it names one, a session card
        private (it never reaches git); ``held`` keeps it for review, ``judged`` is the decision
        already made about it (see ``SaveRequest``)."""
        if card.scope == "session" and not self.core.session_id:
            return SaveResult("refused", None, "a session-scoped memory needs a session; use scope project or user")
        update: dict[str, object] = {"scope_id": self.core.scope_id(card.scope)}
        if self.core.session_id and card.provenance.session_id is None:
            update["provenance"] = card.provenance.model_copy(update={"session_id": self.core.session_id})
        request = SaveRequest(
            card.model_copy(update=update),
            private=private or card.scope == "session",
            auto=auto,
            held=held,
            judged=judged,
        )
        return self.save_card(request)

    def save_card(self, request: SaveRequest) -> SaveResult:
        card = request.card
        reason = check_card(card, self.core.gate, private=request.private)
        if reason is None and request.auto:
            reason = self.core.rate.refusal(self.core.session_id)
        if reason is not None:
            return SaveResult("refused", None, reason)
        with self.core.lock, self.core.guard("save"):
            self.core.sync(vectors=True)  # before the duplicate check: see what others wrote
            old = None
            if request.held:  # it corrects nothing until kept: the card it names stays as it is
                card = card.model_copy(update={"status": "archived", "supersedes": None})
            if card.supersedes is not None:
                old = self.core.get_many([card.supersedes]).get(card.supersedes)
                if old is None:
                    return SaveResult("refused", None, f"no memory {card.supersedes} to supersede")
                if not old.active:
                    newer = f" by {old.superseded_by}" if old.superseded_by else ""
                    return SaveResult(
                        "refused", None, f"{old.id} is already {old.status}{newer}; correct the current card"
                    )
            judged = request.judged
            vector = judged.vector if judged is not None and judged.vector is not None else None
            vector = vector if vector is not None else self.core.embed([card.content])[0]
            if old is None and not request.distinct and not request.held:
                decision = judged.decision if judged is not None else self.judge_new_card(card, vector)
                other = self.core.get_many([decision.other.id]).get(decision.other.id) if decision.other else None
                if decision.action == "duplicate" and other is not None:  # (gone: forgotten meanwhile)
                    merged = self._merge_into(other, card)
                    return SaveResult(
                        "duplicate",
                        merged,
                        f"near-duplicate of {other.id} (similarity "
                        f"{decision.other.similarity:.2f}); kept the existing memory",
                    )
                if decision.action == "supersedes" and other is not None and other.active:
                    old = other
                    card = card.model_copy(update={"supersedes": old.id})
                elif decision.action == "superseded" and other is not None:
                    card = card.model_copy(update={"status": "superseded", "superseded_by": other.id})
            if not self._write_new(card, vector, old, request.private):
                return SaveResult("refused", None, f"no memory {card.supersedes} to supersede (it was just forgotten)")
            if request.auto:
                self.core.rate.record(self.core.session_id)
            archived = [] if request.held else self._enforce_quota(card)
        told = quota_note(archived, self.core.gate.max_cards)
        if old is not None:
            return SaveResult("superseded", card, "; ".join(filter(None, [f"supersedes {old.id}", told])))
        return SaveResult("added", card, told)

    def _write_new(self, card: MemoryCard, vector: list[float] | None, old: MemoryCard | None, private: bool) -> bool:
        """Write a new card (and mark the card it corrects superseded); False when the corrected
        card was forgotten meanwhile (nothing is written then)."""
        store = self.core.store_for_scope(card.scope)
        info = self.core.embedder_info()
        if old is None:
            store.write(card, private, vector, info)
            if card.superseded_by:  # an older card than the one that corrects it
                self.link_stored(card.superseded_by, supersedes=card.id)
            return True
        old_store = self.core.locate(old.id) or store
        with old_store.locked():
            path = old_store.files.locate(old.id)
            if path is None:
                return False
            store.write(card, private, vector, info)
            replaced = old.model_copy(
                update={"status": "superseded", "superseded_by": card.id, "updated_at": utc_now()}
            )
            old_store.write(replaced, old_store.files.is_private(path), None, None)
        return True

    def _enforce_quota(self, card: MemoryCard) -> list[str]:
        """At ``memory_max_cards`` active cards in ``card``'s store, archive the lowest-value
        others (``memory.quota``); returns their ids, also told as a notice."""
        from memagent.memory.quota import over_quota

        limit = self.core.gate.max_cards
        store = self.core.store_for_scope(card.scope)
        if limit <= 0 or not store.catalog.exists:
            return []
        catalog = store.open_catalog()
        if catalog.count(True) <= limit:
            return []
        entries = list(catalog.all_entries(True))
        uses = {card_id: n for card_id, (_, n) in catalog.usage([e.id for e in entries]).items()}
        archived = [
            i
            for i in over_quota(entries, limit, card.id, uses)
            if self.update_card(i, status="archived", touch=False) is not None
        ]
        if archived:
            store.notices.append(quota_note(archived, limit))
        return archived

    def _rewrite(self, card: MemoryCard) -> bool:
        """Rewrite a stored card's file in place; False when it was forgotten meanwhile."""
        store = self.core.locate(card.id)
        if store is None:
            return False
        with store.locked():
            path = store.files.locate(card.id)
            if path is None:
                return False
            store.write(card, store.files.is_private(path), None, None)
        return True

    def link_stored(self, card_id: str, *, superseded_by: str | None = None, supersedes: str | None = None) -> None:
        """Record a correction on a stored card: it is ``superseded_by`` a newer card, or (when it
        has no such link yet) it ``supersedes`` an older one."""
        found = self.core.get_many([card_id]).get(card_id)
        if found is None:
            return
        if superseded_by is not None:
            update = {"status": "superseded", "superseded_by": superseded_by, "updated_at": utc_now()}
        elif found.supersedes is None:
            update = {"supersedes": supersedes, "updated_at": utc_now()}
        else:
            return
        self._rewrite(found.model_copy(update=update))

    def judge_new_card(
        self,
        card: MemoryCard,
        vector: list[float] | None,
        extra: Sequence[Neighbour] = (),
        comparer: Comparer | None = None,
        *,
        stored: Sequence[Neighbour] | None = None,
    ) -> Decision:
        """Restatement, correction or new fact: ``card`` against the active cards of its store
        (and ``extra`` neighbours, e.g. earlier cards of the same import). See
        ``memory.corrections.decide``; ``comparer`` (one per operation) remembers parsed texts;
        ``stored``: the card's stored neighbours when the caller looked them up already, for a
        batch of cards at once (:meth:`stored_neighbours`)."""
        found = self.stored_neighbours([card], [vector])[0] if stored is None else stored
        neighbours = [*found, *extra]
        if not neighbours:
            return Decision("add")
        duplicate_at = self.core.gate.duplicate_cosine if vector is not None else self.core.gate.duplicate_overlap
        if not self.core.retrieval.corrections:  # switched off (a benchmark's ablation): near-duplicates only
            best = max(neighbours, key=lambda n: n.similarity)
            return Decision("duplicate", best) if best.similarity >= duplicate_at else Decision("add")
        return decide(
            card.content,
            card.created_at,
            neighbours,
            duplicate_at=duplicate_at,
            comparer=comparer or self.comparer(vector is not None),
        )

    def comparer(self, with_vectors: bool) -> Comparer:
        """A fresh :class:`~memagent.memory.corrections.Comparer` using this store's embedder."""
        return Comparer(self.core.embed if with_vectors and self.core.dim > 0 else None)

    def judge_new_cards(self, cards: Sequence[MemoryCard]) -> list[Judgement]:
        """The one judgement of each card of a batch (learned candidates, in the order they were
        said): the write gate, then the correction rule against the store and against the cards
        before it in the batch (a restatement or correction of one of those names its position,
        :attr:`Judgement.earlier`). Nothing is written."""
        if not cards:
            return []
        with self.core.lock, self.core.guard("save"):
            self.core.sync(vectors=True)
            vectors = self.core.embed([c.content for c in cards])
            comparer = self.comparer(vectors[0] is not None)
            judged: list[Judgement] = []
            for position, (card, vector) in enumerate(zip(cards, vectors)):
                refusal = check_card(card, self.core.gate, private=card.scope == "session")
                if refusal is not None:
                    judged.append(Judgement(Decision("add"), vector, refusal))
                    continue
                earlier = _batch_neighbours(cards, vectors, judged, position)
                decision = self.judge_new_card(card, vector, earlier, comparer)
                at = decision.other.id if decision.other is not None else ""
                judged.append(
                    Judgement(decision, vector, None, int(at[len(BATCH_ID) :]) if at.startswith(BATCH_ID) else None)
                )
            return judged

    def stored_neighbours(
        self, cards: Sequence[MemoryCard], vectors: Sequence[list[float] | None]
    ) -> list[list[Neighbour]]:
        """For each card, the active, visible cards of its store close to it (by vector, or by
        shared terms without vectors), most similar first. A batch costs one vector query per
        store and one catalog read, not one of each per card (an import judges 256 at a time)."""
        found: list[list[tuple[str, float]]] = [[] for _ in cards]
        by_store: dict[str, list[int]] = {}
        for position, card in enumerate(cards):
            by_store.setdefault(self.core.store_for_scope(card.scope).label, []).append(position)
        result: list[list[Neighbour]] = [[] for _ in cards]
        for label, positions in by_store.items():
            store = self.core.stores[label]
            if not store.catalog.exists:
                continue
            self._close_ids(store, [cards[p] for p in positions], [vectors[p] for p in positions], positions, found)
            entries = store.catalog.entries(sorted({i for p in positions for i, _ in found[p]}))
            usable = {i for i, e in entries.items() if self.core.visible(e) and e.status == "active"}
            texts = self.core.get_many(sorted(usable))
            for p in positions:
                result[p] = [
                    Neighbour(i, texts[i].content, s, texts[i].created_at)
                    for i, s in found[p]
                    if i != cards[p].id and i in usable and i in texts
                ]
        return result

    def _close_ids(
        self,
        store: Store,
        cards: Sequence[MemoryCard],
        vectors: Sequence[list[float] | None],
        positions: Sequence[int],
        found: list[list[tuple[str, float]]],
    ) -> None:
        """Fill ``found[position]`` with (id, similarity) of the cards of ``store`` close to each
        card: one index query for all the cards with vectors, term overlap for the others."""
        with_vectors = [k for k, v in enumerate(vectors) if v is not None]
        queries = [v for v in vectors if v is not None]
        if queries:
            index = store.vector_index(self.core.embedder_info(), create=False)
            if index is not None:
                nearest = index.nearest_ids_many(queries, NEIGHBOURS)
                for k, hits in zip(with_vectors, nearest):
                    found[positions[k]] = [(i, s) for i, s in hits if s >= NEIGHBOUR_COSINE]
        from memagent.memory.lexical import tokenize

        for k, card in enumerate(cards):
            if vectors[k] is not None:
                continue
            terms = tokenize(card.content)
            for card_id, _ in store.catalog.lexical(card.content, NEIGHBOURS, True):
                other = self.core.read_file(store, card_id)
                if other is not None:
                    found[positions[k]].append((card_id, term_overlap(terms, tokenize(other.content))))

    def after_sync(self, store: Store, vectors: bool) -> None:
        """What a sync of the core leaves to saving (plugged in as ``MemoryCore.after_sync``):
        card facts for a catalog written before they existed, and, once vectors are up to date,
        the correction rule for card files that arrived from outside."""
        self._fill_card_facts(store)
        if vectors and self.core.retrieval.corrections:
            self._judge_arrivals(store)

    def _fill_card_facts(self, store: Store) -> None:
        """A catalog written before card facts existed gets them once (``memory.card_facts``)."""
        catalog = store.open_catalog()
        if card_facts.is_filled(catalog.db()):
            return
        with store.locked(), catalog.transaction() as db:
            card_facts.fill(db)

    def _judge_arrivals(self, store: Store) -> None:
        """Judge new card files (a pull, a rebuild) oldest first, as ``memory add`` would have:
        a correction found links both cards and retires the older one; see ``memory.arrivals``."""
        catalog = store.open_catalog()
        ids = arrivals.waiting(catalog.db(), ARRIVALS_PER_SYNC)
        if not ids:
            return
        cards = self.core.get_many(ids)
        todo = sorted(
            (c for c in cards.values() if c.active and not (c.supersedes or c.superseded_by)),
            key=lambda c: c.created_at,
        )
        index = store.vector_index(self.core.embedder_info(), create=False) if self.core.dim > 0 else None
        vectors = index.vectors([c.id for c in todo]) if index is not None else {}
        if index is not None:  # a card still waiting for its vector (background indexing) waits here too
            unready = {c.id for c in todo if c.id not in vectors}
            todo = [c for c in todo if c.id not in unready]
            ids = [i for i in ids if i not in unready]
        comparer = self.comparer(bool(vectors))
        for card in todo:
            current = self.core.get_many([card.id]).get(card.id)
            if current is None or not current.active:
                continue
            decision = self.judge_new_card(current, vectors.get(card.id), comparer=comparer)
            if decision.other is None or decision.action not in ("supersedes", "superseded"):
                continue
            older, newer = (
                (decision.other.id, card.id) if decision.action == "supersedes" else (card.id, decision.other.id)
            )
            if not self._may_correct(newer, older):
                continue
            self.link_stored(newer, supersedes=older)
            self.link_stored(older, superseded_by=newer)
        with store.locked(), catalog.transaction() as db:
            arrivals.done(db, ids)

    def _may_correct(self, newer_id: str, older_id: str) -> bool:
        """A card from the repository (a pull, a clone: see ``memory.provenance``) never retires a
        card this machine earned; the other way round is fine."""
        cards = self.core.get_many([newer_id, older_id])
        newer, older = cards.get(newer_id), cards.get(older_id)
        if newer is None or older is None:
            return False
        return newer.source != REPOSITORY or older.source == REPOSITORY

    def _merge_into(self, existing: MemoryCard, new: MemoryCard) -> MemoryCard:
        """A restatement strengthens the existing card (``memory.reinforcement``)."""
        from memagent.memory.reinforcement import reinforced

        merged = existing.model_copy(update=reinforced(existing, new))
        merged.updated_at = utc_now()
        self._rewrite(merged)
        return merged

    def reinforce(self, card_id: str, evidence: MemoryCard) -> MemoryCard | None:
        """``evidence`` restates the active card ``card_id``: strengthen it (the consolidator's
        NOOP with a target). ``None`` when there is no such active card."""
        with self.core.lock, self.core.guard("save"):
            existing = self.core.get_many([card_id]).get(card_id)
            if existing is None or not existing.active:
                return None
            return self._merge_into(existing, evidence)

    def correct(self, memory_id: str, new_content: str, **fields: Unpack[CorrectionFields]) -> SaveResult:
        """A new card superseding ``memory_id``; unspecified fields are carried over."""
        old = self.core.get(memory_id)
        if old is None:
            return SaveResult("refused", None, f"no memory {memory_id}")
        carried: CorrectionFields = {
            "memory_type": old.memory_type,
            "scope": old.scope,
            "confidence": old.confidence,
            "importance": old.importance,
            "files": list(old.files),
            "task_hint": old.task_hint,
            "source": old.source,
            "person": old.person,
            "relationship": old.relationship,
        }
        carried.update(fields)
        if carried["scope"] == "session" and old.scope_id and not self.core.session_id:
            carried["scope"] = "project"
        store = self.core.locate(memory_id)
        if store is not None and "private" not in carried:
            carried["private"] = self.core.is_private(store, memory_id)
        return self.save(new_content, supersedes=memory_id, **carried)

    def update_card(self, card_id: str, *, touch: bool = True, **changes: object) -> MemoryCard | None:
        """Change metadata fields of a stored card in place (status, links, confidence, ...).

        ``content`` and ``id`` cannot change here: new content is a correction (:meth:`correct`),
        which keeps the old card. Returns the updated card, or ``None`` if there is no such card;
        raises ``ValueError`` for an invalid value.
        """
        fixed = {"id", "content"} & set(changes)
        if fixed:
            raise ValueError(f"cannot change {', '.join(sorted(fixed))} of a card; correct it instead")
        with self.core.lock:
            with self.core.guard("update"):
                store = self.core.locate(card_id)
                card = self.core.read_file(store, card_id) if store is not None else None
                if store is None or card is None:
                    return None
            try:
                updated = MemoryCard.model_validate({**card.model_dump(), **changes})
            except ValidationError as exc:
                raise ValueError(validation_reason(exc)) from None
            if touch:
                updated.updated_at = utc_now()
            with self.core.guard("update"):
                return updated if self._rewrite(updated) else None


def _batch_neighbours(
    cards: Sequence[MemoryCard], vectors: Sequence[list[float] | None], judged: Sequence[Judgement], position: int
) -> list[Neighbour]:
    """The cards before ``position`` in a batch that the gate let through, of the same scope and
    close enough to ``cards[position]`` to be judged against it (as stored cards are)."""
    from memagent.memory.lexical import tokenize

    card, vector = cards[position], vectors[position]
    close = []
    for index, (other, other_vector) in enumerate(zip(cards[:position], vectors[:position])):
        if judged[index].refusal is not None or other.scope != card.scope:
            continue
        if vector is not None and other_vector is not None:
            similarity = float(sum(x * y for x, y in zip(vector, other_vector)))
        else:
            similarity = term_overlap(tokenize(card.content), tokenize(other.content))
        if similarity >= NEIGHBOUR_COSINE:
            close.append(Neighbour(f"{BATCH_ID}{index}", other.content, similarity, other.created_at))
    return close


__all__ = [
    "CorrectionFields",
    "Judgement",
    "SaveRequest",
    "SaveResult",
    "Saving",
    "validation_reason",
]
