"""Reading cards: ranked search (dense + lexical), listing, supersede chains and counts."""

from __future__ import annotations

from dataclasses import dataclass, field

from memagent.jsontypes import JsonObject
from memagent.memory.cards import MEMORY_TYPES, SCOPES, STATUSES, MemoryCard
from memagent.memory.catalog import Entry, UsageRow
from memagent.memory.catalog_entry import parse_time
from memagent.memory.core import MemoryCore
from memagent.memory.provenance import REPOSITORY
from memagent.memory.store import Store

HISTORY_DEPTH = 2  # predecessors shown with a current card
HISTORY_CHARS = 120  # of each predecessor's text, in a history note
CHAIN_SLACK = 3  # extra ranked cards fetched, since folding chains can merge results


@dataclass
class Hit:
    """A ranked card; ``history`` holds the cards it corrected (newest first), which are shown
    only here, with their successor."""

    card: MemoryCard
    score: float
    parts: dict[str, float] = field(default_factory=dict)
    history: list[MemoryCard] = field(default_factory=list)

    def history_note(self, width: int = HISTORY_CHARS) -> str:
        """`` (corrects [Memory#m_…] of 2026-01-12: "…")`` for each card this one corrected, or ""."""
        notes = []
        for old in self.history:
            text = " ".join(old.content.split())
            text = text if len(text) <= width else text[: width - 1].rstrip() + "…"
            notes.append(f'{old.citation()} of {old.created_at.date().isoformat()}: "{text}"')
        return f" (corrects {'; '.join(notes)})" if notes else ""


@dataclass(frozen=True)
class SearchFilter:
    memory_type: str | None = None
    scope: str | None = None
    include_inactive: bool = False

    def wants(self, entry: Entry) -> bool:
        return (self.memory_type is None or entry.memory_type == self.memory_type) and (
            self.scope is None or entry.scope == self.scope
        )


class Reading:
    """The reading part of the service (see the module docstring), over the service's core."""

    def __init__(self, core: MemoryCore) -> None:
        self.core = core

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        memory_type: str | None = None,
        scope: str | None = None,
        include_inactive: bool = False,
        current_task: str | None = None,
        min_score: float | None = None,
    ) -> list[Hit]:
        """Ranked cards for ``query`` (active only unless ``include_inactive``), best first."""
        if not query.strip() or k <= 0:
            return []
        wanted = SearchFilter(memory_type, scope, include_inactive)
        self.core.prepare_vector_search()
        with self.core.lock, self.core.guard("search"):
            self.core.sync(vectors=True)
            return self._search(query, k, wanted, current_task, min_score)

    def _search(
        self, query: str, k: int, wanted: SearchFilter, current_task: str | None, min_score: float | None
    ) -> list[Hit]:
        from memagent.memory.ranking import RankingWeights, candidate_pool, rank

        stores = self.core.stores_in_use()
        now = self.core.clock()
        plan = self.core.recall.understand(query, stores, now)
        pool = candidate_pool(k) * (4 if wanted.memory_type or wanted.scope else 1)
        vector = self.core.embed([plan.dense_query])[0] if self.core.dim > 0 else None  # described systems by name
        dense: list[tuple[str, float]] = []
        lexical: list[tuple[str, float]] = []
        signals = {}
        for store in stores:
            # superseded cards answer through their successor: the inactive side is searched too
            # (only when this store holds any)
            classes = (True, False) if wanted.include_inactive or store.catalog.count(False) else (True,)
            found_dense, found_lexical = self._candidates(store, plan.lexical_query, vector, pool, classes)
            known = store.catalog.entries([i for i, _ in found_dense + found_lexical])
            dense.extend(d for d in found_dense if d[0] in known)  # else a teammate's card on a shared server
            lexical.extend(found_lexical)
            mine = {
                i: e.signals()
                for i, e in known.items()
                if self.core.visible(e)
                and wanted.wants(e)
                and (e.status in ("active", "superseded") or wanted.include_inactive)
            }
            self.core.recall.enrich(store, mine, plan)
            signals.update(mine)
        ranked = rank(
            [d for d in dense if d[0] in signals],
            [lx for lx in lexical if lx[0] in signals],
            signals,
            now=now,
            current_task=current_task,
            k=k + CHAIN_SLACK,
            weights=None if vector is not None else RankingWeights(dense_weight=0.0, lexical_weight=1.0),
            min_score=self.core.knobs.min_relevance if min_score is None else min_score,
            active_only=False,
            query=query,
            facts=plan.facts,
        )
        successors = {i: s.superseded_by for i, s in signals.items() if s.superseded_by}
        return self._fold_chains([(h.id, h.score, dict(h.parts)) for h in ranked], k, wanted, successors)

    def _fold_chains(
        self,
        ranked: list[tuple[str, float, dict[str, float]]],
        k: int,
        wanted: SearchFilter,
        successors: dict[str, str],
    ) -> list[Hit]:
        """Each ranked card as the current card of its correction chain, with the cards it
        corrected as its history: a superseded card is never a result of its own. ``successors``
        (older id -> newer id) holds the links the candidates' card facts already gave."""
        from memagent.memory.card_facts import successors as stated_successors

        cards = self.core.get_many([card_id for card_id, _, _ in ranked])
        for store in self.core.stores_in_use():  # a link only the newer card states (one query for all)
            if store.catalog.exists:
                found = stated_successors(store.catalog.db(), [i for i, _, _ in ranked if i not in successors])
                successors = {**found, **successors}
        hits: list[Hit] = []
        shown: set[str] = set()
        for card_id, score, parts in ranked:
            card = cards.get(card_id)
            if card is None:
                continue
            current = (
                self._current_of(card, wanted, successors) if card.id in successors or card.superseded_by else card
            )
            if current.id in shown:
                continue
            history = self._history_of(current)
            hits.append(Hit(current, score, parts, history))
            shown.update([current.id, *(c.id for c in history)])
            if len(hits) == k:
                break
        return hits

    def _current_of(self, card: MemoryCard, wanted: SearchFilter, successors: dict[str, str]) -> MemoryCard:
        """The newest card of ``card``'s chain that this search may show (itself if none)."""
        seen = {card.id}
        current = card
        while True:
            newer_id = current.superseded_by or successors.get(current.id) or self._successor_id(current.id)
            newer = self.core.get_many([newer_id]).get(newer_id) if newer_id and newer_id not in seen else None
            if newer is None or newer.status not in ("active", "superseded"):
                break
            entries = {}
            for store in self.core.stores_in_use():
                entries.update(store.catalog.entries([newer.id]))
            entry = entries.get(newer.id)
            if entry is None or not self.core.visible(entry) or not wanted.wants(entry):
                break
            seen.add(newer.id)
            current = newer
        return current

    def _successor_id(self, card_id: str) -> str | None:
        from memagent.memory.card_facts import successors

        for store in self.core.stores_in_use():
            if store.catalog.exists:
                found = successors(store.catalog.db(), [card_id]).get(card_id)
                if found:
                    return found
        return None

    def _history_of(self, card: MemoryCard) -> list[MemoryCard]:
        history: list[MemoryCard] = []
        seen = {card.id}
        cursor = card
        while cursor.supersedes and cursor.supersedes not in seen and len(history) < HISTORY_DEPTH:
            older = self.core.get_many([cursor.supersedes]).get(cursor.supersedes)
            if older is None:
                break
            history.append(older)
            seen.add(older.id)
            cursor = older
        return history

    def _candidates(
        self, store: Store, query: str, vector: list[float] | None, pool: int, classes: tuple[bool, ...]
    ) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
        dense: list[tuple[str, float]] = []
        if vector is not None:
            index = store.vector_index(self.core.embedder_info(), create=False)
            if index is not None:
                for active in classes:
                    dense.extend(index.nearest_ids(vector, pool, inactive=not active))
        lexical: list[tuple[str, float]] = []
        for active in classes:
            lexical.extend(store.catalog.lexical(query, pool, active))
        return dense, lexical

    def list(
        self,
        *,
        memory_type: str | None = None,
        scope: str | None = None,
        status: str | None = None,
        include_all: bool = False,
        limit: int = 50,
        offset: int = 0,
        session: str | None = None,
        source: str | None = None,
    ) -> list[MemoryCard]:
        """Cards newest first; active ones unless ``status`` or ``include_all`` say otherwise."""
        clauses, args = [], []
        for column, value in (("memory_type", memory_type), ("scope", scope), ("source", source)):
            if value:
                clauses.append(f"{column} = ?")
                args.append(value)
        if status and not include_all:
            clauses.append("status = ?")
            args.append(status)
        if session:
            clauses.append("(' ' || sessions || ' ') LIKE ?")
            args.append(f"% {session} %")
        if self.core.hold_repository:
            clauses.append("source != ?")
            args.append(REPOSITORY)
        active = None if include_all or (status and status != "active") else True
        if status and status != "active" and not include_all:
            active = False
        offset, limit = max(offset, 0), max(limit, 0)
        with self.core.lock, self.core.guard("list"):
            self.core.sync(vectors=False)
            rows: list[tuple[str, str]] = []
            for store in self.core.stores_in_use():
                rows.extend(
                    store.open_catalog().newest(
                        active=active, where=" AND ".join(clauses), args=args, limit=offset + limit
                    )
                )
            rows.sort(reverse=True)
            page = [card_id for _, card_id in rows[offset : offset + limit]]
            found = self.core.get_many(page)
            return [found[i] for i in page if i in found]

    def where(self, memory_id: str) -> str | None:
        """Where a card's file lives (``project``, ``project, private``, ``user``) and its path."""
        for store in self.core.stores.values():
            path = store.files.locate(memory_id)
            if path is not None:
                kind = f"{store.label}, private" if store.files.is_private(path) else store.label
                return f"{kind}: {path}"
        return None

    def chain(self, memory_id: str) -> list[MemoryCard]:
        """The supersede chain through ``memory_id``, oldest first (forgotten links end it)."""
        with self.core.lock, self.core.guard("read"):
            start = self.core.get_many([memory_id]).get(memory_id)
            if start is None:
                return []
            seen = {start.id}
            older = self._follow(start, "supersedes", seen)
            newer = self._follow(start, "superseded_by", seen)
            return [*reversed(older), start, *newer]

    def _follow(self, start: MemoryCard, link: str, seen: set[str]) -> list[MemoryCard]:
        found: list[MemoryCard] = []
        cursor = start
        while getattr(cursor, link) and getattr(cursor, link) not in seen:
            following = self.core.get_many([getattr(cursor, link)]).get(getattr(cursor, link))
            if following is None:
                break
            found.append(following)
            seen.add(following.id)
            cursor = following
        return found

    def stats(self) -> JsonObject:
        """Counts by status (all cards) and by type, scope and source (active cards), from each
        catalog's counts by kind (:meth:`Catalog.kinds`): no card row or file is read."""
        with self.core.lock, self.core.guard("stats"):
            self.core.sync(vectors=False)
            by_status = {s: 0 for s in STATUSES}
            by_type = {t: 0 for t in MEMORY_TYPES}
            by_scope = {s: 0 for s in SCOPES}
            by_source: dict[str, int] = {}
            stores: JsonObject = {}
            for label, store in self.core.stores.items():
                kinds = store.open_catalog().kinds() if store.exists or store.catalog.exists else []
                active = sum(k.cards for k in kinds if k.active)
                stores[label] = {
                    "location": store.describe(),
                    "active": active,
                    "inactive": sum(k.cards for k in kinds) - active,
                    "size_bytes": store.disk_usage(),
                }
                for kind in kinds:
                    by_status[kind.status] = by_status.get(kind.status, 0) + kind.cards
                    if kind.active:
                        for target, key in (
                            (by_type, kind.memory_type),
                            (by_scope, kind.scope),
                            (by_source, kind.source),
                        ):
                            target[key] = target.get(key, 0) + kind.cards
            return {
                "total": sum(by_status.values()),
                "active": by_status["active"],
                "by_status": by_status,
                "by_type": by_type,
                "by_scope": by_scope,
                "by_source": dict(sorted(by_source.items())),
                "stores": stores,
                "embedder": self.core.embedder_handle.describe(),
                "near_duplicates": sum(
                    len(s.catalog.near_duplicates()) for s in self.core.stores_in_use() if s.catalog.exists
                ),
                **self._usage_extremes(USAGE_SHOWN),
            }

    def _usage_extremes(self, n: int) -> dict[str, list[dict[str, object]]]:
        """The ``n`` most used active cards (used at least once) and the ``n`` least used (never
        or longest ago first): id, type, uses, last used. Each store sorts its own (no card is
        read into Python); the stores' top ``n`` are merged here by the same keys."""
        most: list[UsageRow] = []
        least: list[UsageRow] = []
        for store in self.core.stores_in_use():
            if store.catalog.exists:
                mine, theirs = store.open_catalog().usage_extremes(n)
                most += mine
                least += theirs

        def shown(row: UsageRow) -> dict[str, object]:
            uses, last, _, card_id, memory_type = row
            when = parse_time(last)
            return {"id": card_id, "memory_type": memory_type, "uses": uses, "last_used_at": when and when.isoformat()}

        most.sort(key=lambda r: (-r[0], r[1], r[3]))
        least.sort(key=lambda r: (r[0], r[1], r[2], r[3]))
        return {"most_used": [shown(r) for r in most[:n]], "least_used": [shown(r) for r in least[:n]]}


USAGE_SHOWN = 5  # cards listed as most and least used by ``stats``


__all__ = ["Hit", "Reading"]
