"""What a search knows beyond its two candidate lists, read from the catalog's card facts
(``memory.card_facts``): the names the store's cards define and the roles they give
(``memory.entities``), the time windows their texts name (``memory.timeline``), and their
correction links.

For a query, :meth:`Recall.understand` finds the systems it names or describes and the people
whose role it mentions (their names join the lexical query: "the deploy CLI" also searches for
"Harbor"), whether it asks for a person, and the time window it names. :meth:`Recall.enrich`
adds to each candidate's signals what ranking compares with that: the windows its text names,
the systems and people it mentions, and its links to the card it corrects or that corrects it.

:class:`RetrievalParts` switches each part off (the benchmarks measure what each contributes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

from memagent.memory import card_facts
from memagent.memory.entities import EntityIndex, Understanding
from memagent.memory.ranking import CardSignals, QueryFacts

if TYPE_CHECKING:
    from memagent.memory.store import Store


@dataclass
class RetrievalParts:
    """Which parts of retrieval run (all by default)."""

    corrections: bool = True  # the correction rule on import and for card files from outside
    entities: bool = True  # names, descriptions and roles from the cards
    timeline: bool = True  # dates named in card texts


@dataclass(frozen=True)
class Plan:
    """One query, understood: the text to search lexically and what ranking should know."""

    lexical_query: str
    dense_query: str
    facts: QueryFacts
    understanding: Understanding
    index: EntityIndex


class Recall:
    """Per service: each store's entity index, rebuilt when its cards' mentions change."""

    def __init__(self, parts: RetrievalParts) -> None:
        self.parts = parts
        self._indexes: dict[str, tuple[int, EntityIndex]] = {}
        self._merged: tuple[tuple, EntityIndex] | None = None

    def entity_index(self, stores: Sequence[Store]) -> EntityIndex:
        """The stores' entity indexes, merged; rebuilt only when a store's mentions changed."""
        if not self.parts.entities:
            return EntityIndex()
        parts = []
        for store in stores:
            if not store.catalog.exists:
                continue
            db = store.catalog.db()
            revision = card_facts.revision(db)
            cached = self._indexes.get(store.label)
            if cached is None or cached[0] != revision:
                cached = self._indexes[store.label] = (revision, card_facts.entity_index(db))
            parts.append((store.label, cached[0], cached[1]))
        key = tuple((label, revision) for label, revision, _ in parts)
        if self._merged is None or self._merged[0] != key:
            merged = EntityIndex()
            for _, _, index in parts:
                for name, descriptions in index.systems.items():
                    merged.systems.setdefault(name, []).extend(descriptions)
                for name, roles in index.people.items():
                    merged.people.setdefault(name, []).extend(roles)
            self._merged = (key, merged)
        return self._merged[1]

    def understand(self, query: str, stores: Sequence[Store], now: datetime) -> Plan:
        from memagent.memory.query import asks_for_person, time_windows

        index = self.entity_index(stores)
        understanding = index.understand(query) if index else Understanding()
        windows = time_windows(query, now)
        facts = QueryFacts(
            systems=understanding.systems,
            asks_person=bool(index.people) and asks_for_person(query),
            period=windows[0] if windows else None,
            written=windows[1] if windows else None,
            described=frozenset() if understanding.about_itself else understanding.described,
        )
        return Plan(understanding.lexical_query(query), understanding.rewritten(query), facts, understanding, index)

    def enrich(self, store: Store, signals: dict[str, CardSignals], plan: Plan) -> None:
        """Add card facts to the signals of this store's candidates, in place."""
        ids = [i for i in signals]
        if not ids or not store.catalog.exists:
            return
        db = store.catalog.db()
        links = card_facts.links(db, ids)
        windows = card_facts.periods(db, ids) if self.parts.timeline else {}
        mentions = _mentions(db, ids, plan) if plan.index else {}
        defines = card_facts.definitions(db, ids) if plan.facts.described else {}
        for card_id in ids:
            supersedes, superseded_by = links.get(card_id, (None, None))
            systems, person = mentions.get(card_id, (frozenset(), False))
            periods, defined = tuple(windows.get(card_id, ())), frozenset(defines.get(card_id, ()))
            if supersedes or superseded_by or periods or systems or person or defined:  # else nothing to add
                signals[card_id] = replace(
                    signals[card_id],
                    supersedes=supersedes,
                    superseded_by=superseded_by,
                    periods=periods,
                    systems=systems,
                    names_person=person,
                    defines=defined,
                )


def _mentions(db, ids: Sequence[str], plan: Plan) -> dict[str, tuple[frozenset[str], bool]]:
    """Per card: the systems its text mentions (when the query refers to one) and whether it
    names a person of the index (when the query asks who)."""
    want_systems, want_people = bool(plan.facts.systems), plan.facts.asks_person
    if not (want_systems or want_people):
        return {}
    finder = plan.index.finder()
    return {
        card_id: (
            finder.systems_in(content) if want_systems else frozenset(),
            want_people and finder.names_someone(content),
        )
        for card_id, content in card_facts.contents(db, ids)
    }


__all__ = ["Plan", "Recall", "RetrievalParts"]
