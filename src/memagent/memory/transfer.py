"""Export and import: every card as JSON-ready dicts, and cards brought from dicts through the gate.

Importing is the user's own act, but not their own words: every imported card is project
knowledge the user vouched for, with source ``import`` (never user-stated) and at most project
scope. Imported records may come from another tool: an id that is not a memagent id is replaced
by a new one and kept as ``provenance.original_id``. Links (``supersedes``/``superseded_by``) to cards
that are neither in this store nor in the same import are dropped: re-importing an old export
after a ``forget`` never links a card to the erased one, and a record whose id was forgotten here
is skipped (named in the report) unless the import is forced, which takes the id off the
tombstone list.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from pydantic import ValidationError

from memagent.memory.cards import CARD_ID_RE, MemoryCard
from memagent.memory.erasure import Erasure
from memagent.memory.gate import check_card
from memagent.memory.saving import Saving, validation_reason
from memagent.memory.storage import Progress

IMPORT_BATCH = 256


@dataclass
class ImportReport:
    added: int = 0
    duplicates: int = 0
    refused: list[tuple[int, str]] = field(default_factory=list)  # (record index, reason)
    forgotten: list[tuple[int, str, str]] = field(default_factory=list)  # (record index, id, forgotten at)
    ids: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "duplicates": self.duplicates,
            "refused": [{"index": i, "reason": r} for i, r in self.refused],
            "skipped_forgotten": [{"index": i, "id": c, "forgotten_at": t} for i, c, t in self.forgotten],
            "ids": list(self.ids),
        }


@dataclass(frozen=True)
class _Known:
    incoming: set[str]  # ids of the records being imported
    tombstones: dict[str, str]  # ids forgotten here, and when
    force: bool  # import forgotten ids anyway


class Transfer(Saving, Erasure):
    """Import and export (see the module docstring)."""

    def export(self) -> list[dict[str, Any]]:
        """Every card (all statuses, both stores) as JSON-ready dicts, oldest first."""
        with self._lock, self._guard("export"):
            self._sync(vectors=False)
            ids = [i for s in self._stores_in_use() for i in s.open_catalog().ids_where("1 = 1")]
            cards = list(self._get_many(ids).values())
            cards.sort(key=lambda c: (c.created_at, c.id))
            return [card.model_dump(mode="json") for card in cards]

    def import_cards(self, records: Iterable[Mapping[str, Any]], progress: Progress | None = None, *,
                     force: bool = False) -> ImportReport:
        """Add cards from dicts (at least ``content``) through the gate, in batches. A record
        whose id was forgotten here is skipped unless ``force`` (see the module docstring)."""
        items = list(records)
        report = ImportReport()
        with self._lock, self._guard("import"):
            self._sync(vectors=True)
            incoming = {str(r.get("id")) for r in items if isinstance(r, Mapping) and r.get("id")}
            known = _Known(incoming, self.tombstoned(), force)
            for start in range(0, len(items), IMPORT_BATCH):
                self._import_batch(items[start : start + IMPORT_BATCH], start, report, known)
                if progress:
                    progress(min(start + IMPORT_BATCH, len(items)), len(items))
            if not items and progress:
                progress(0, 0)
            if force:
                self.revive([i for i in report.ids if i in known.tombstones])
        return report

    def _import_batch(self, batch: Sequence[Mapping[str, Any]], offset: int, report: ImportReport,
                      known: "_Known") -> None:
        """Gate, de-duplicate (against the store and within the batch) and add one batch."""
        candidates: list[MemoryCard] = []
        seen_ids = set(report.ids)
        for index, record in enumerate(batch, start=offset):
            card, reason = self._card_from_record(record, known)
            reason = reason or (check_card(card, self.gate) if card is not None else "invalid")
            if card is None or reason:
                report.refused.append((index, reason))
            elif card.id in known.tombstones and not known.force:
                report.forgotten.append((index, card.id, known.tombstones[card.id]))
            elif card.id in seen_ids or self._locate(card.id) is not None:
                report.duplicates += 1
            else:
                seen_ids.add(card.id)
                candidates.append(card)
        if not candidates:
            return
        vectors = self._embed([c.content for c in candidates])
        keep = self._not_duplicates(candidates, vectors)
        report.duplicates += len(candidates) - len(keep)
        by_store: dict[str, list[tuple[MemoryCard, bool, list[float] | None]]] = {}
        for card, vector in keep:
            store = self._store_for_scope(card.scope)
            by_store.setdefault(store.label, []).append((card, card.scope == "session", vector))
        info = self._embedder_info()
        for label, items in by_store.items():
            self._stores[label].write_many(items, info, durable=False)
            report.ids.extend(c.id for c, _, _ in items)
            report.added += len(items)

    def _not_duplicates(self, cards: Sequence[MemoryCard], vectors: Sequence[list[float] | None]
                        ) -> list[tuple[MemoryCard, list[float] | None]]:
        """Cards that are not near-duplicates of a stored active card nor of an earlier one here."""
        import numpy as np

        kept: list[tuple[MemoryCard, list[float] | None]] = []
        accepted: list[list[float]] = []
        for card, vector in zip(cards, vectors):
            if card.active and self._find_duplicate(card, vector, set()) is not None:
                continue
            if card.active and vector is not None and accepted:
                sims = np.asarray(accepted, dtype=np.float32) @ np.asarray(vector, dtype=np.float32)
                if float(sims.max()) >= self.gate.duplicate_cosine:
                    continue
            if card.active and vector is not None:
                accepted.append(vector)
            kept.append((card, vector))
        return kept

    def _card_from_record(self, record: Mapping[str, Any], known: "_Known") -> tuple[MemoryCard | None, str]:
        if not isinstance(record, Mapping):
            return None, "not a JSON object"
        data = {k: v for k, v in record.items() if k in MemoryCard.model_fields}
        if "memory_type" not in data and "type" in record:
            data["memory_type"] = record["type"]
        if not isinstance(data.get("content"), str) or not data["content"].strip():
            return None, "missing content"
        raw_id = data.get("id")
        if raw_id is not None and not (isinstance(raw_id, str) and CARD_ID_RE.match(raw_id)):
            data.pop("id")
            provenance = dict(data.get("provenance") or {}) if isinstance(data.get("provenance"), Mapping) else {}
            provenance["original_id"] = str(raw_id)[:200]
            data["provenance"] = provenance
        for link in ("supersedes", "superseded_by"):
            target = data.get(link)
            if target is not None and not self._linkable(target, known):
                data.pop(link)
        data["source"] = "import"
        if data.get("scope") == "user":
            data["scope"], data["scope_id"] = "project", None
        if data.get("scope") == "project" and not data.get("scope_id"):
            data["scope_id"] = self._project_scope_id
        try:
            return MemoryCard.model_validate(data), ""
        except ValidationError as exc:
            return None, validation_reason(exc)

    def _linkable(self, target: Any, known: _Known) -> bool:
        """A link survives only to a card that is here or comes with this import: never to a
        card forgotten since the export."""
        if not isinstance(target, str) or target in known.tombstones and not known.force:
            return False
        return target in known.incoming or self._locate(target) is not None


__all__ = ["ImportReport", "Transfer"]
