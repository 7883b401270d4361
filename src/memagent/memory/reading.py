"""Reading cards: ranked search (dense + lexical), listing, supersede chains and counts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memagent.memory.cards import MEMORY_TYPES, SCOPES, STATUSES, MemoryCard, utc_now
from memagent.memory.catalog import Entry
from memagent.memory.core import MemoryCore
from memagent.memory.provenance import REPOSITORY
from memagent.memory.storage import Store


@dataclass
class Hit:
    card: MemoryCard
    score: float
    parts: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class SearchFilter:
    memory_type: str | None = None
    scope: str | None = None
    include_inactive: bool = False

    def wants(self, entry: Entry) -> bool:
        return (self.memory_type is None or entry.memory_type == self.memory_type) and (
            self.scope is None or entry.scope == self.scope
        )


class Reading(MemoryCore):
    """The reading part of the service (see the module docstring)."""

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
        with self._lock, self._guard("search"):
            self._sync(vectors=True)
            return self._search(query, k, wanted, current_task, min_score)

    def _search(self, query: str, k: int, wanted: SearchFilter, current_task: str | None,
                min_score: float | None) -> list[Hit]:
        from memagent.memory.ranking import RankingWeights, candidate_pool, rank

        pool = candidate_pool(k) * (4 if wanted.memory_type or wanted.scope else 1)
        classes = (True, False) if wanted.include_inactive else (True,)
        vector = self._embed([query])[0] if self.dim > 0 else None
        dense: list[tuple[str, float]] = []
        lexical: list[tuple[str, float]] = []
        entries: dict[str, Entry] = {}
        for store in self._stores_in_use():
            found_dense, found_lexical = self._candidates(store, query, vector, pool, classes)
            known = store.catalog.entries([i for i, _ in found_dense + found_lexical])
            entries.update(known)
            dense.extend(d for d in found_dense if d[0] in known)  # else a teammate's card on a shared server
            lexical.extend(found_lexical)
        signals = {i: e.signals() for i, e in entries.items() if self._visible(e) and wanted.wants(e)}
        ranked = rank(
            [d for d in dense if d[0] in signals],
            [lx for lx in lexical if lx[0] in signals],
            signals,
            now=utc_now(),
            current_task=current_task,
            k=k,
            weights=None if vector is not None else RankingWeights(dense_weight=0.0, lexical_weight=1.0),
            min_score=self.knobs.min_relevance if min_score is None else min_score,
            active_only=not wanted.include_inactive,
            query=query,
        )
        cards = self._get_many([h.id for h in ranked])
        return [Hit(cards[h.id], h.score, dict(h.parts)) for h in ranked if h.id in cards]

    def _candidates(self, store: Store, query: str, vector: list[float] | None, pool: int,
                    classes: tuple[bool, ...]) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
        dense: list[tuple[str, float]] = []
        if vector is not None:
            index = store.vector_index(self._embedder_info(), create=False)
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
        if self.hold_repository:
            clauses.append("source != ?")
            args.append(REPOSITORY)
        active = None if include_all or (status and status != "active") else True
        if status and status != "active" and not include_all:
            active = False
        offset, limit = max(offset, 0), max(limit, 0)
        with self._lock, self._guard("list"):
            self._sync(vectors=False)
            rows: list[tuple[str, str]] = []
            for store in self._stores_in_use():
                rows.extend(store.open_catalog().newest(active=active, where=" AND ".join(clauses), args=args,
                                                         limit=offset + limit))
            rows.sort(reverse=True)
            page = [card_id for _, card_id in rows[offset : offset + limit]]
            found = self._get_many(page)
            return [found[i] for i in page if i in found]

    def where(self, memory_id: str) -> str | None:
        """Where a card's file lives (``project``, ``project, private``, ``user``) and its path."""
        for store in self._stores.values():
            path = store.files.locate(memory_id)
            if path is not None:
                kind = f"{store.label}, private" if store.files.is_private(path) else store.label
                return f"{kind}: {path}"
        return None

    def chain(self, memory_id: str) -> list[MemoryCard]:
        """The supersede chain through ``memory_id``, oldest first (forgotten links end it)."""
        with self._lock, self._guard("read"):
            start = self._get_many([memory_id]).get(memory_id)
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
            following = self._get_many([getattr(cursor, link)]).get(getattr(cursor, link))
            if following is None:
                break
            found.append(following)
            seen.add(following.id)
            cursor = following
        return found

    def stats(self) -> dict[str, Any]:
        """Counts by status (all cards) and by type, scope and source (active cards)."""
        with self._lock, self._guard("stats"):
            self._sync(vectors=False)
            by_status = {s: 0 for s in STATUSES}
            by_type = {t: 0 for t in MEMORY_TYPES}
            by_scope = {s: 0 for s in SCOPES}
            by_source: dict[str, int] = {}
            stores: dict[str, Any] = {}
            for label, store in self._stores.items():
                catalog = store.open_catalog() if store.exists or store.catalog.exists else None
                active = catalog.count(True) if catalog else 0
                total = catalog.count() if catalog else 0
                stores[label] = {"location": store.describe(), "active": active, "inactive": total - active,
                                 "size_bytes": store.disk_usage()}
                if catalog is None:
                    continue
                for key, count in catalog.grouped("status", None).items():
                    by_status[key] = by_status.get(key, 0) + count
                for target, column in ((by_type, "memory_type"), (by_scope, "scope"), (by_source, "source")):
                    for key, count in catalog.grouped(column, True).items():
                        target[key] = target.get(key, 0) + count
            return {
                "total": sum(by_status.values()),
                "active": by_status["active"],
                "by_status": by_status,
                "by_type": by_type,
                "by_scope": by_scope,
                "by_source": dict(sorted(by_source.items())),
                "stores": stores,
                "embedder": {"name": self._embedder.preference_name(), "dim": self._embedder.known_dim()},
                "near_duplicates": sum(len(s.catalog.near_duplicates()) for s in self._stores_in_use()
                                       if s.catalog.exists),
            }


__all__ = ["Hit", "Reading"]
