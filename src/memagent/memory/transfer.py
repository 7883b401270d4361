"""Export and import: every card as JSON-ready dicts, and cards brought from dicts through the gate.

Importing is the user's own act, but not their own words: every imported card is project
knowledge the user vouched for, with source ``import`` (never user-stated) and at most project
scope. Imported records may come from another tool: an id that is not a memagent id is replaced
by a new one and kept as ``provenance.original_id``, and links between records made with such ids
follow it. Links (``supersedes``/``superseded_by``) to cards
that are neither in this store nor in the same import are dropped: re-importing an old export
after a ``forget`` never links a card to the erased one, and a record whose id was forgotten here
is skipped (named in the report) unless the import is forced, which takes the id off the
tombstone list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import ValidationError

from memagent.jsontypes import JsonObject
from memagent.memory.cards import CARD_ID_RE, MemoryCard, new_card_id
from memagent.memory.core import MemoryCore
from memagent.memory.corrections import Decision, Neighbour
from memagent.memory.erasure import Erasure
from memagent.memory.gate import check_card
from memagent.memory.saving import NEIGHBOUR_COSINE, NEIGHBOURS, Saving, validation_reason
from memagent.memory.store import Progress

IMPORT_BATCH = 256


@dataclass
class ImportReport:
    added: int = 0
    duplicates: int = 0
    superseded: int = 0  # cards this import found corrected by a newer one
    refused: list[tuple[int, str]] = field(default_factory=list)  # (record index, reason)
    forgotten: list[tuple[int, str, str]] = field(default_factory=list)  # (record index, id, forgotten at)
    ids: list[str] = field(default_factory=list)

    def as_dict(self) -> JsonObject:
        return {
            "added": self.added,
            "duplicates": self.duplicates,
            "superseded": self.superseded,
            "refused": [{"index": i, "reason": r} for i, r in self.refused],
            "skipped_forgotten": [{"index": i, "id": c, "forgotten_at": t} for i, c, t in self.forgotten],
            "ids": [*self.ids],
        }


@dataclass(frozen=True)
class _Known:
    incoming: set[str]  # ids of the records being imported
    renamed: dict[str, str]  # foreign id (another tool's) -> the memagent id it gets here
    tombstones: dict[str, str]  # ids forgotten here, and when
    force: bool  # import forgotten ids anyway

    @classmethod
    def of(cls, items: Sequence[object], tombstones: dict[str, str], force: bool) -> _Known:
        ids = [str(r.get("id")) for r in items if isinstance(r, Mapping) and r.get("id") is not None]
        renamed = {raw: new_card_id() for raw in ids if not CARD_ID_RE.match(raw)}
        return cls(set(ids), renamed, tombstones, force)


class Transfer:
    """Import and export (see the module docstring), over the service's core: imported cards
    are judged by the saving part, forgotten ids are known through the erasure part."""

    def __init__(self, core: MemoryCore, saving: Saving, erasure: Erasure) -> None:
        self.core = core
        self.saving = saving
        self.erasure = erasure

    def export(self) -> list[JsonObject]:
        """Every card (all statuses, both stores) as JSON-ready dicts, oldest first."""
        with self.core.lock, self.core.guard("export"):
            self.core.sync(vectors=False)
            ids = [i for s in self.core.stores_in_use() for i in s.open_catalog().ids_where("1 = 1")]
            cards = list(self.core.get_many(ids).values())
            cards.sort(key=lambda c: (c.created_at, c.id))
            return [card.model_dump(mode="json") for card in cards]

    def import_cards(
        self, records: Iterable[object], progress: Progress | None = None, *, force: bool = False
    ) -> ImportReport:
        """Add cards from JSON objects (at least ``content``; anything else is refused) through the gate, oldest first, in batches.

        Each card meets the same rule as ``memory add`` (``corrections.decide``), against the
        store and the cards imported before it: a restatement is a duplicate, a correction
        supersedes the card it corrects (a teammate's export holding both versions of a fact
        leaves the newer one current), a look-alike fact is added. Cards that arrive with their
        own links or status (a memagent export) keep them. A record whose id was forgotten here
        is skipped unless ``force`` (see the module docstring)."""
        items = list(records)
        report = ImportReport()
        with self.core.lock, self.core.guard("import"):
            self.core.sync(vectors=True)
            known = _Known.of(items, self.erasure.tombstoned(), force)
            cards = self._gated(items, report, known)
            cards.sort(key=lambda c: c.created_at)  # stable: file order among equal times
            for start in range(0, len(cards), IMPORT_BATCH):
                self._import_batch(cards[start : start + IMPORT_BATCH], report)
                if progress:
                    progress(min(start + IMPORT_BATCH, len(cards)), len(cards))
            if not cards and progress:
                progress(0, 0)
            if force:
                self.erasure.revive([i for i in report.ids if i in known.tombstones])
        return report

    def _gated(self, items: Sequence[object], report: ImportReport, known: _Known) -> list[MemoryCard]:
        """Valid cards that pass the gate and are not here yet; refusals reported by record index."""
        accepted: list[MemoryCard] = []
        seen_ids: set[str] = set()
        for index, record in enumerate(items):
            card, reason = self._card_from_record(record, known)
            reason = reason or ((check_card(card, self.core.gate) or "") if card is not None else "invalid")
            if card is None or reason:
                report.refused.append((index, reason))
            elif card.id in known.tombstones and not known.force:
                report.forgotten.append((index, card.id, known.tombstones[card.id]))
            elif card.id in seen_ids or self.core.locate(card.id) is not None:
                report.duplicates += 1
            else:
                seen_ids.add(card.id)
                accepted.append(card)
        return accepted

    def _import_batch(self, batch: Sequence[MemoryCard], report: ImportReport) -> None:
        """Judge each card of one batch (in order) against the store and the batch so far; write."""
        vectors = self.core.embed([c.content for c in batch])
        similar = _Similarities(vectors)
        comparer = self.saving.comparer(bool(vectors) and vectors[0] is not None)
        pending: dict[str, tuple[MemoryCard, list[float] | None]] = {}
        stored_links: list[tuple[str, dict[str, str]]] = []
        # Nothing is written until the batch is judged, so the store's side of every card's
        # neighbours is looked up at once; the batch's own earlier cards come from ``similar``.
        judged = [p for p, card in enumerate(batch) if card.active and not (card.supersedes or card.superseded_by)]
        stored = dict(
            zip(judged, self.saving.stored_neighbours([batch[p] for p in judged], [vectors[p] for p in judged]))
        )
        for position, (card, vector) in enumerate(zip(batch, vectors)):
            if position in stored:
                earlier = similar.to_earlier(position, [c.id for c in batch[:position]], pending, card.scope)
                decision = self.saving.judge_new_card(card, vector, earlier, comparer, stored=stored[position])
                if decision.action == "duplicate":
                    report.duplicates += 1
                    continue
                card = self._apply_decision(card, decision, pending, stored_links, report)
            elif card.active and card.supersedes:  # the record says it corrects a card: retire that one
                self._retire(card.supersedes, card.id, pending, stored_links, report)
            pending[card.id] = (card, vector)
        by_store: dict[str, list[tuple[MemoryCard, bool, list[float] | None]]] = {}
        for card, vector in pending.values():
            by_store.setdefault(self.core.store_for_scope(card.scope).label, []).append(
                (card, card.scope == "session", vector)
            )
        info = self.core.embedder_info()
        for label, items in by_store.items():
            self.core.stores[label].write_many(items, info, durable=False)
            report.ids.extend(c.id for c, _, _ in items)
            report.added += len(items)
        for card_id, link in stored_links:
            self.saving.link_stored(card_id, **link)

    def _retire(
        self,
        older_id: str,
        newer_id: str,
        pending: dict[str, tuple[MemoryCard, list[float] | None]],
        stored_links: list[tuple[str, dict[str, str]]],
        report: ImportReport,
    ) -> None:
        """Mark ``older_id`` (imported earlier, or stored) superseded by ``newer_id`` if it is
        still active."""
        if older_id in pending:
            older, vector = pending[older_id]
            if older.active:
                pending[older_id] = (
                    older.model_copy(update={"status": "superseded", "superseded_by": newer_id}),
                    vector,
                )
                report.superseded += 1
            return
        stored = self.core.get_many([older_id]).get(older_id)
        if stored is not None and stored.active:
            stored_links.append((older_id, {"superseded_by": newer_id}))
            report.superseded += 1

    def _apply_decision(
        self,
        card: MemoryCard,
        decision: Decision,
        pending: dict[str, tuple[MemoryCard, list[float] | None]],
        stored_links: list[tuple[str, dict[str, str]]],
        report: ImportReport,
    ) -> MemoryCard:
        """The card as it will be written, with the correction ``decision`` found recorded on
        both ends (the other end is in ``pending`` or queued in ``stored_links``)."""
        other = decision.other
        if other is None or decision.action not in ("supersedes", "superseded"):
            return card
        report.superseded += 1
        if decision.action == "supersedes":
            card = card.model_copy(update={"supersedes": other.id})
            link, change = {"superseded_by": card.id}, {"status": "superseded", "superseded_by": card.id}
        else:
            card = card.model_copy(update={"status": "superseded", "superseded_by": other.id})
            link, change = {"supersedes": card.id}, {"supersedes": card.id}
        if other.id in pending:
            earlier, vector = pending[other.id]
            if decision.action == "supersedes" or earlier.supersedes is None:
                pending[other.id] = (earlier.model_copy(update=change), vector)
        else:
            stored_links.append((other.id, link))
        return card

    def _card_from_record(self, record: object, known: _Known) -> tuple[MemoryCard | None, str]:
        if not isinstance(record, Mapping):
            return None, "not a JSON object"
        data: dict[str, object] = {k: v for k, v in record.items() if k in MemoryCard.model_fields}
        if "memory_type" not in data and "type" in record:
            data["memory_type"] = record["type"]
        content = data.get("content")
        if not isinstance(content, str) or not content.strip():
            return None, "missing content"
        raw_id = data.get("id")
        if raw_id is not None and not (isinstance(raw_id, str) and CARD_ID_RE.match(raw_id)):
            data["id"] = known.renamed[str(raw_id)]
            given = data.get("provenance")
            provenance = dict(given) if isinstance(given, Mapping) else {}
            provenance["original_id"] = str(raw_id)[:200]
            data["provenance"] = provenance
        for link in ("supersedes", "superseded_by"):
            target = data.get(link)
            if target is None:
                continue
            target = known.renamed.get(str(target), target)  # a link by the other tool's id
            if self._linkable(target, known):
                data[link] = target
            else:
                data.pop(link)
        data["source"] = "import"
        if data.get("scope") == "user":
            data["scope"], data["scope_id"] = "project", None
        if data.get("scope") == "project" and not data.get("scope_id"):
            data["scope_id"] = self.core.project_scope_id
        try:
            return MemoryCard.model_validate(data), ""
        except ValidationError as exc:
            return None, validation_reason(exc)

    def _linkable(self, target: object, known: _Known) -> bool:
        """A link survives only to a card that is here or comes with this import: never to a
        card forgotten since the export."""
        if not isinstance(target, str) or target in known.tombstones and not known.force:
            return False
        return target in known.incoming or target in known.renamed.values() or self.core.locate(target) is not None


class _Similarities:
    """Cosines between the cards of one import batch (one matrix product per card)."""

    def __init__(self, vectors: Sequence[list[float] | None]) -> None:
        import numpy as np

        usable = bool(vectors) and all(v is not None for v in vectors)
        self._matrix = np.asarray(vectors, dtype=np.float32) if usable else None

    def to_earlier(
        self,
        position: int,
        earlier_ids: Sequence[str],
        pending: dict[str, tuple[MemoryCard, list[float] | None]],
        scope: str,
    ) -> list[Neighbour]:
        """Earlier active cards of the batch, still to be written, close to the card at ``position``."""
        if self._matrix is None or position == 0:
            return []
        sims = self._matrix[:position] @ self._matrix[position]
        close = []
        for card_id, similarity in zip(earlier_ids, sims.tolist()):
            other = pending.get(card_id, (None, None))[0]
            if other is not None and other.active and other.scope == scope and similarity >= NEIGHBOUR_COSINE:
                close.append(Neighbour(other.id, other.content, float(similarity), other.created_at))
        close.sort(key=lambda n: -n.similarity)
        return close[:NEIGHBOURS]


__all__ = ["ImportReport", "Transfer"]
