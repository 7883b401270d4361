"""Saving cards: the write gate, near-duplicates (restatements merge, corrections supersede),
explicit corrections and metadata updates.

Every rewrite of a card that exists (a correction marking the old card superseded, a merge, a
metadata update) happens under the store's cross-process lock after checking that the card's
file is still there: a ``memagent memory forget`` in another process that erased it meanwhile
wins, and the card never comes back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from pydantic import ValidationError

from memagent.memory.cards import MemoryCard, Provenance, utc_now
from memagent.memory.core import MemoryCore
from memagent.memory.corrections import correction_kind
from memagent.memory.gate import check_card, term_overlap


@dataclass
class SaveResult:
    status: str  # "added" | "duplicate" | "superseded" | "refused"
    card: MemoryCard | None
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.status != "refused"


def validation_reason(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or "card"
        problems.append(f"{loc}: {err.get('msg', 'invalid')}")
    return "invalid memory: " + "; ".join(problems)


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


class Saving(MemoryCore):
    """The saving part of the service (see the module docstring)."""

    def save(
        self,
        content: str,
        memory_type: str = "fact",
        scope: str = "project",
        *,
        confidence: float = 0.8,
        importance: float = 0.5,
        source: str = "assistant",
        provenance: Mapping[str, Any] | None = None,
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
        if scope == "session" and not self.session_id:
            return SaveResult("refused", None, "a session-scoped memory needs a session; use scope project or user")
        prov = dict(provenance or {})
        if self.session_id:
            prov.setdefault("session_id", self.session_id)
        try:
            card = MemoryCard(
                content=content, memory_type=memory_type, scope=scope, scope_id=self._scope_id(scope),
                source=source, provenance=prov, confidence=confidence, importance=importance, files=list(files),
                task_hint=task_hint, supersedes=supersedes, backstory=backstory, person=person,
                relationship=relationship,
            )
        except ValidationError as exc:
            return SaveResult("refused", None, validation_reason(exc))
        return self.save_card(SaveRequest(card, private=private or scope == "session", auto=auto))

    def save_card(self, request: SaveRequest) -> SaveResult:
        card = request.card
        reason = check_card(card, self.gate, private=request.private)
        if reason is None and request.auto:
            reason = self._rate.refusal(self.session_id)
        if reason is not None:
            return SaveResult("refused", None, reason)
        with self._lock, self._guard("save"):
            self._sync(vectors=True)  # before the duplicate check: see what others wrote
            old = None
            if card.supersedes is not None:
                old = self._get_many([card.supersedes]).get(card.supersedes)
                if old is None:
                    return SaveResult("refused", None, f"no memory {card.supersedes} to supersede")
                if not old.active:
                    newer = f" by {old.superseded_by}" if old.superseded_by else ""
                    return SaveResult("refused", None, f"{old.id} is already {old.status}{newer}; correct the current card")
            vector = self._embed([card.content])[0]
            excluded = {card.supersedes} if card.supersedes else set()
            duplicate = None if request.distinct else self._find_duplicate(card, vector, excluded)
            if duplicate is not None and old is None:
                existing, similarity = duplicate
                kind = correction_kind(existing.content, card.content)
                if kind is None:
                    merged = self._merge_into(existing, card)
                    return SaveResult("duplicate", merged,
                                      f"near-duplicate of {existing.id} (similarity {similarity:.2f}); kept the existing memory")
                card = card.model_copy(update={"supersedes": existing.id})
                old = existing
            if not self._write_new(card, vector, old, request.private):
                return SaveResult("refused", None, f"no memory {card.supersedes} to supersede (it was just forgotten)")
            if request.auto:
                self._rate.record(self.session_id)
            archived = self._enforce_quota(card)
        told = quota_note(archived, self.gate.max_cards)
        if old is not None:
            return SaveResult("superseded", card, "; ".join(filter(None, [f"supersedes {old.id}", told])))
        return SaveResult("added", card, told)

    def _write_new(self, card: MemoryCard, vector: list[float] | None, old: MemoryCard | None, private: bool) -> bool:
        """Write a new card (and mark the card it corrects superseded); False when the corrected
        card was forgotten meanwhile (nothing is written then)."""
        store = self._store_for_scope(card.scope)
        info = self._embedder_info()
        if old is None:
            store.write(card, private, vector, info)
            return True
        old_store = self._locate(old.id) or store
        with old_store.locked():
            path = old_store.files.locate(old.id)
            if path is None:
                return False
            store.write(card, private, vector, info)
            replaced = old.model_copy(update={"status": "superseded", "superseded_by": card.id, "updated_at": utc_now()})
            old_store.write(replaced, old_store.files.is_private(path), None, None)
        return True

    def _enforce_quota(self, card: MemoryCard) -> list[str]:
        """At ``memory_max_cards`` active cards in ``card``'s store, archive the lowest-value
        others (``memory.quota``); returns their ids, also told as a notice."""
        from memagent.memory.quota import over_quota

        limit = self.gate.max_cards
        store = self._store_for_scope(card.scope)
        if limit <= 0 or not store.catalog.exists:
            return []
        catalog = store.open_catalog()
        if catalog.count(True) <= limit:
            return []
        entries = list(catalog.all_entries(True))
        uses = {card_id: n for card_id, (_, n) in catalog.usage([e.id for e in entries]).items()}
        archived = [i for i in over_quota(entries, limit, card.id, uses)
                    if self.update_card(i, status="archived", touch=False) is not None]
        if archived:
            store.notices.append(quota_note(archived, limit))
        return archived

    def _rewrite(self, card: MemoryCard) -> bool:
        """Rewrite a stored card's file in place; False when it was forgotten meanwhile."""
        store = self._locate(card.id)
        if store is None:
            return False
        with store.locked():
            path = store.files.locate(card.id)
            if path is None:
                return False
            store.write(card, store.files.is_private(path), None, None)
        return True

    def _find_duplicate(self, card: MemoryCard, vector: list[float] | None, exclude: set[str]) -> tuple[MemoryCard, float] | None:
        store = self._store_for_scope(card.scope)
        candidates: list[tuple[str, float]] = []
        if vector is not None:
            index = store.vector_index(self._embedder_info(), create=False)
            if index is not None:
                candidates = [(i, s) for i, s in index.nearest_ids(vector, 5) if s >= self.gate.duplicate_cosine]
        elif store.catalog.exists:
            from memagent.memory.lexical import tokenize

            terms = tokenize(card.content)
            for card_id, _ in store.catalog.lexical(card.content, 5, True):
                other = self._read_file(store, card_id)
                if other is not None:
                    overlap = term_overlap(terms, tokenize(other.content))
                    if overlap >= self.gate.duplicate_overlap:
                        candidates.append((card_id, overlap))
        if not candidates or not store.catalog.exists:
            return None
        entries = store.catalog.entries([i for i, _ in candidates])
        for card_id, similarity in sorted(candidates, key=lambda c: -c[1]):
            entry = entries.get(card_id)
            if card_id in exclude or entry is None or not self._visible(entry) or entry.status != "active":
                continue
            found = self._read_file(store, card_id)
            if found is not None:
                return found, similarity
        return None

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
        with self._lock, self._guard("save"):
            existing = self._get_many([card_id]).get(card_id)
            if existing is None or not existing.active:
                return None
            return self._merge_into(existing, evidence)

    def correct(self, memory_id: str, new_content: str, **fields: Any) -> SaveResult:
        """A new card superseding ``memory_id``; unspecified fields are carried over."""
        old = self.get(memory_id)
        if old is None:
            return SaveResult("refused", None, f"no memory {memory_id}")
        carried: dict[str, Any] = {
            "memory_type": old.memory_type, "scope": old.scope, "confidence": old.confidence,
            "importance": old.importance, "files": list(old.files), "task_hint": old.task_hint,
            "source": old.source, "person": old.person, "relationship": old.relationship,
        }
        carried.update(fields)
        if carried["scope"] == "session" and old.scope_id and not self.session_id:
            carried["scope"] = "project"
        store = self._locate(memory_id)
        if store is not None and "private" not in carried:
            carried["private"] = self._is_private(store, memory_id)
        return self.save(new_content, supersedes=memory_id, **carried)

    def update_card(self, card_id: str, *, touch: bool = True, **changes: Any) -> MemoryCard | None:
        """Change metadata fields of a stored card in place (status, links, confidence, ...).

        ``content`` and ``id`` cannot change here: new content is a correction (:meth:`correct`),
        which keeps the old card. Returns the updated card, or ``None`` if there is no such card;
        raises ``ValueError`` for an invalid value.
        """
        fixed = {"id", "content"} & set(changes)
        if fixed:
            raise ValueError(f"cannot change {', '.join(sorted(fixed))} of a card; correct it instead")
        with self._lock:
            with self._guard("update"):
                store = self._locate(card_id)
                card = self._read_file(store, card_id) if store is not None else None
                if store is None or card is None:
                    return None
            try:
                updated = MemoryCard.model_validate({**card.model_dump(), **changes})
            except ValidationError as exc:
                raise ValueError(validation_reason(exc)) from None
            if touch:
                updated.updated_at = utc_now()
            with self._guard("update"):
                return updated if self._rewrite(updated) else None


def quota_note(archived: list[str], limit: int) -> str:
    """What a save at the quota did, in one line ("" when it archived nothing)."""
    if not archived:
        return ""
    shown = ", ".join(archived[:5]) + (", …" if len(archived) > 5 else "")
    return (f"memory_max_cards ({limit}) reached: archived {len(archived)} lowest-value "
            f"memor{'y' if len(archived) == 1 else 'ies'} ({shown}); `memagent memory list --status archived` "
            "shows them")


__all__ = ["quota_note", "SaveRequest", "SaveResult", "Saving", "validation_reason"]
