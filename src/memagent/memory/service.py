"""The memory service: the single entry point for the agent, the memory tools and the CLI.

It routes cards to their store (user cards to ``$MEMAGENT_HOME/memory/``, project and session
cards to ``<project>/.memory/`` or a Chroma server), runs the write gate before anything is
written, retrieves with dense + lexical ranking over active cards, formats citable context, and
erases forgotten cards from every byte of a local store.

Failures of the store or the embedder surface as :class:`MemoryUnavailable` with a one-line
reason, so the agent can carry on with memory off and the CLI can print the reason and exit 1.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Sequence

from pydantic import ValidationError

from memagent.fsutil import atomic_write
from memagent.memory.cards import (
    MEMORY_TYPES,
    SCOPES,
    STATUSES,
    MemoryCard,
    iso_utc,
    utc_now,
)
from memagent.memory.gate import GateConfig, RateLimiter, check_card, term_overlap
from memagent.memory.store import (
    CardStore,
    EmbedderInfo,
    StoreError,
    StoreLocation,
)

if TYPE_CHECKING:
    from memagent.config import ProjectPaths, Settings

Progress = Callable[[int, int], None]  # (done, total)

CITATION_RE = re.compile(r"\[Memory#(m_[0-9a-f]{12})\]")
CITE_INSTRUCTION = (
    "When you rely on one of these memories, cite it as [Memory#id]; if they do not answer the "
    "question, say that memory holds no answer rather than guessing."
)
PROFILE_MAX_TOKENS = 400  # per profile (user, project)
EMBED_BATCH = 64
IMPORT_BATCH = 256
TOMBSTONE_FILE = "tombstones.jsonl"


class MemoryUnavailable(Exception):
    """Memory cannot be used right now; ``str()`` is a one-line reason for the user."""


@dataclass
class SaveResult:
    status: str  # "added" | "duplicate" | "superseded" | "refused"
    card: MemoryCard | None
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.status != "refused"


@dataclass
class Hit:
    card: MemoryCard
    score: float
    parts: dict[str, float] = field(default_factory=dict)


@dataclass
class ImportReport:
    added: int = 0
    duplicates: int = 0
    refused: list[tuple[int, str]] = field(default_factory=list)  # (record index, reason)
    ids: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "duplicates": self.duplicates,
            "refused": [{"index": i, "reason": r} for i, r in self.refused],
            "ids": list(self.ids),
        }


@dataclass
class _Entry:
    """What ranking, listing and profiles need about a card, kept in memory."""

    id: str
    store: str
    memory_type: str
    scope: str
    scope_id: str | None
    confidence: float
    importance: float
    status: str
    created_at: datetime | None
    last_used_at: datetime | None
    task_hint: str | None
    person: str | None = None
    thread: str | None = None  # provenance session id and turn: neighbours for the ranker
    position: int | None = None

    @classmethod
    def of_card(cls, card: MemoryCard, store: str) -> "_Entry":
        return cls(
            id=card.id,
            store=store,
            memory_type=card.memory_type,
            scope=card.scope,
            scope_id=card.scope_id,
            confidence=card.confidence,
            importance=card.importance,
            status=card.status,
            created_at=card.created_at,
            last_used_at=card.last_used_at,
            task_hint=card.task_hint,
            person=card.person,
            thread=card.provenance.session_id,
            position=card.provenance.turn,
        )

    @classmethod
    def of_metadata(cls, card_id: str, meta: Mapping[str, Any], store: str) -> "_Entry":
        return cls(
            id=card_id,
            store=store,
            memory_type=str(meta.get("memory_type", "fact")),
            scope=str(meta.get("scope", "project")),
            scope_id=meta.get("scope_id"),
            confidence=float(meta.get("confidence", 0.8)),
            importance=float(meta.get("importance", 0.5)),
            status=str(meta.get("status", "active")),
            created_at=_parse_time(meta.get("created_at")),
            last_used_at=_parse_time(meta.get("last_used_at")),
            task_hint=meta.get("task_hint"),
            person=meta.get("person"),
            **_place_of(meta.get("provenance")),
        )

    def signals(self):
        from memagent.memory.ranking import CardSignals

        return CardSignals(
            id=self.id,
            confidence=self.confidence,
            importance=self.importance,
            scope=self.scope,
            created_at=self.created_at,
            last_used_at=self.last_used_at,
            task_hint=self.task_hint,
            status=self.status,
            person=self.person,
            thread=self.thread,
            position=self.position,
        )


def _place_of(raw_provenance: Any) -> dict[str, Any]:
    """``thread``/``position`` from a record's provenance JSON (session id, turn); None when
    absent or malformed."""
    try:
        provenance = json.loads(raw_provenance) if isinstance(raw_provenance, str) else {}
    except json.JSONDecodeError:
        provenance = {}
    if not isinstance(provenance, dict):
        provenance = {}
    session, turn = provenance.get("session_id"), provenance.get("turn")
    return {
        "thread": session if isinstance(session, str) else None,
        "position": turn if isinstance(turn, int) and not isinstance(turn, bool) else None,
    }


def _parse_time(raw: Any) -> datetime | None:
    if not isinstance(raw, str) or not raw:
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None


class _Catalog:
    """The lexical index and per-card entries of one status class (active or inactive cards).

    Built lazily from the stores on first use, kept in sync by this process's own writes, and
    rebuilt when another process changed a store (its version token moved).
    """

    def __init__(self, active: bool) -> None:
        from memagent.memory.lexical import LexicalIndex

        self.active = active
        self.lexical = LexicalIndex()
        self.entries: dict[str, _Entry] = {}
        self.tokens: dict[str, tuple] | None = None

    def build(self, stores: Mapping[str, CardStore]) -> None:
        from memagent.memory.lexical import LexicalIndex

        self.lexical = LexicalIndex()
        self.entries = {}
        for label, store in stores.items():
            for card_id, doc, meta in store.iter_records(active=self.active, inactive=not self.active):
                self.lexical.add(card_id, doc or "", context=str(meta.get("backstory") or ""))
                self.entries[card_id] = _Entry.of_metadata(card_id, meta, label)
        self.tokens = {label: store.version_token() for label, store in stores.items()}

    def refresh(self, stores: Mapping[str, CardStore]) -> None:
        current = {label: store.version_token() for label, store in stores.items()}
        if self.tokens != current:
            self.build(stores)

    def put(self, card: MemoryCard, store: str) -> None:
        if self.tokens is None:
            return
        self.lexical.add(card.id, card.content, context=card.backstory or "")
        self.entries[card.id] = _Entry.of_card(card, store)

    def drop(self, card_id: str) -> None:
        if self.tokens is None:
            return
        self.lexical.remove(card_id)
        self.entries.pop(card_id, None)

    def acknowledge(self, stores: Mapping[str, CardStore]) -> None:
        """Our own write changed the stores' tokens; the catalog already reflects it."""
        if self.tokens is not None:
            self.tokens = {label: store.version_token() for label, store in stores.items()}


def _validation_reason(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or "card"
        problems.append(f"{loc}: {err.get('msg', 'invalid')}")
    return "invalid memory: " + "; ".join(problems)


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


class MemoryService:
    """See the module docstring. Thread-safe: one lock serialises every operation."""

    def __init__(
        self,
        stores: Mapping[str, CardStore],
        embedder: Any,
        *,
        session_id: str = "",
        project_root: Path | None = None,
        gate: GateConfig | None = None,
        check_embedder: bool = True,
        paths: "ProjectPaths | None" = None,
    ) -> None:
        self._stores = dict(stores)  # "project" and "user"
        self._check_embedder = check_embedder
        self._embedder = embedder
        self.session_id = session_id
        self._project_root = project_root
        self._paths = paths  # for erasing forgotten cards from the learning history
        self.gate = gate or GateConfig()
        self._rate = RateLimiter(self.gate.max_auto_writes_per_session)
        self._lock = threading.RLock()
        self._catalogs = {True: _Catalog(True), False: _Catalog(False)}
        self._seen_tokens: dict[str, tuple] = {}

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        paths: "ProjectPaths",
        settings: "Settings",
        session_id: str = "",
        *,
        embedder: Any = None,
        check_embedder: bool = True,
        gate: GateConfig | None = None,
    ) -> "MemoryService":
        """Open both stores (nothing is created until the first write).

        ``check_embedder=False`` skips the embedder mismatch check (for ``reindex`` and for
        commands that never embed, such as list/show/forget).
        """
        embedder = embedder if embedder is not None else _load_embedder()
        if check_embedder:
            _probe_embedder(embedder)
        info = EmbedderInfo.of(embedder)
        if settings.chroma_url:
            project = StoreLocation.remote("project", settings.chroma_url, paths.root)
        else:
            project = StoreLocation.local("project", paths.memory)
        stores = {
            "project": CardStore(project, info),
            "user": CardStore(StoreLocation.local("user", paths.user_memory), info),
        }
        try:
            import chromadb  # noqa: F401  (fail early and clearly if it is missing)
        except Exception as exc:
            raise MemoryUnavailable(f"chromadb cannot be imported: {_one_line(exc)}") from None
        try:
            for store in stores.values():
                store.open(check_embedder=check_embedder)
        except StoreError as exc:
            for store in stores.values():
                store.close()
            raise MemoryUnavailable(str(exc)) from None
        return cls(
            stores, embedder, session_id=session_id, project_root=paths.root, gate=gate, check_embedder=check_embedder,
            paths=paths,
        )

    def close(self) -> None:
        with self._lock:
            for store in self._stores.values():
                store.close()

    @contextlib.contextmanager
    def _guard(self, action: str) -> Iterator[None]:
        """Turn any store failure into :class:`MemoryUnavailable` with a one-line reason."""
        try:
            yield
        except MemoryUnavailable:
            raise
        except StoreError as exc:
            raise MemoryUnavailable(str(exc)) from None
        except Exception as exc:
            raise MemoryUnavailable(f"memory {action} failed: {_one_line(exc)}") from None

    @property
    def embedder(self) -> Any:
        return self._embedder

    @property
    def dim(self) -> int:
        return int(getattr(self._embedder, "dim", 0))

    def _store_for_scope(self, scope: str) -> str:
        return "user" if scope == "user" else "project"

    def _opened_stores(self) -> dict[str, CardStore]:
        """The stores that hold data; one created by another process since is opened now."""
        for store in self._stores.values():
            if not store.opened and store.exists:
                store.open(check_embedder=self._check_embedder)
        return {label: s for label, s in self._stores.items() if s.opened}

    def _embed(self, texts: Sequence[str]) -> list[list[float] | None]:
        if self.dim == 0:
            return [None] * len(texts)
        try:
            vectors = self._embedder.embed(list(texts))
        except Exception as exc:
            raise MemoryUnavailable(f"embedding failed ({self._embedder.name}): {_one_line(exc)}") from None
        tolist = getattr(vectors, "tolist", None)
        return tolist() if tolist is not None else [[float(x) for x in row] for row in vectors]

    def warm_up(self) -> None:
        """Build the in-memory lexical catalog now instead of on the first search.

        Safe to call from a background thread at session start (searches wait on the lock);
        worthwhile for large stores (about 2 s at 10k cards, 30 s at 100k on 2 busy cores).
        """
        with self._lock, self._guard("warm-up"):
            self._catalog(True)

    def _follow_other_writers(self, stores: Mapping[str, CardStore]) -> None:
        """Reload a store another process wrote to since we last looked (see CardStore.reload)."""
        for label, store in stores.items():
            token = store.version_token()
            seen = self._seen_tokens.get(label)
            if seen is not None and seen != token:
                store.reload()
            self._seen_tokens[label] = token

    def _catalog(self, active: bool) -> _Catalog:
        catalog = self._catalogs[active]
        stores = self._opened_stores()
        self._follow_other_writers(stores)
        if catalog.tokens is None or set(catalog.tokens) != set(stores):
            catalog.build(stores)
        else:
            catalog.refresh(stores)
        return catalog

    def _after_write(self) -> None:
        stores = self._opened_stores()
        self._seen_tokens = {label: store.version_token() for label, store in stores.items()}
        for catalog in self._catalogs.values():
            if catalog.tokens is not None and set(catalog.tokens) != set(stores):
                catalog.tokens = None  # a store was created: rebuild on next use
            else:
                catalog.acknowledge(stores)

    def _visible(self, entry: _Entry) -> bool:
        """Session cards of other sessions are not shown to this session."""
        if entry.scope != "session" or not self.session_id:
            return True
        return entry.scope_id == self.session_id

    # -- saving ----------------------------------------------------------------------------

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
    ) -> SaveResult:
        """Run the gate and store a card; ``supersedes`` makes it a correction of that card."""
        if scope == "session" and not self.session_id:
            return SaveResult("refused", None, "a session-scoped memory needs a session; use scope project or user")
        prov = dict(provenance or {})
        if self.session_id:
            prov.setdefault("session_id", self.session_id)
        try:
            card = MemoryCard(
                content=content,
                memory_type=memory_type,
                scope=scope,
                scope_id=self._scope_id(scope),
                source=source,
                provenance=prov,
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
            return SaveResult("refused", None, _validation_reason(exc))
        reason = check_card(card, self.gate)
        if reason is None and auto:
            reason = self._rate.refusal(self.session_id)
        if reason is not None:
            return SaveResult("refused", None, reason)
        with self._lock, self._guard("save"):
            self._follow_other_writers(self._opened_stores())  # before the duplicate check
            old = None
            if supersedes is not None:
                old = self.get(supersedes)
                if old is None:
                    return SaveResult("refused", None, f"no memory {supersedes} to supersede")
                if not old.active:
                    newer = f" by {old.superseded_by}" if old.superseded_by else ""
                    return SaveResult("refused", None, f"{old.id} is already {old.status}{newer}; correct the current card")
            vector = self._embed([card.content])[0]
            duplicate = self._find_duplicate(card, vector, exclude={supersedes} if supersedes else set())
            if duplicate is not None:
                existing, similarity = duplicate
                merged = self._merge_into(existing, card)
                return SaveResult(
                    "duplicate",
                    merged,
                    f"near-duplicate of {existing.id} (similarity {similarity:.2f}); kept the existing memory",
                )
            self._write_new(card, vector, old)
            if auto:
                self._rate.record(self.session_id)
        if old is not None:
            return SaveResult("superseded", card, f"supersedes {old.id}")
        return SaveResult("added", card, "")

    def _scope_id(self, scope: str) -> str | None:
        if scope == "session":
            return self.session_id or None
        if scope == "project" and self._project_root is not None:
            return str(self._project_root)
        return None

    def _write_new(self, card: MemoryCard, vector: list[float] | None, old: MemoryCard | None) -> None:
        label = self._store_for_scope(card.scope)
        self._stores[label].add([card], [vector])
        self._catalogs[True].put(card, label)
        if old is not None:
            old_label = self._locate(old.id) or label
            previous = old.status
            old.status = "superseded"
            old.superseded_by = card.id
            old.updated_at = utc_now()
            self._stores[old_label].update(old, previous)
            self._catalogs[True].drop(old.id)
            self._catalogs[False].put(old, old_label)
        self._after_write()

    def _find_duplicate(
        self, card: MemoryCard, vector: list[float] | None, exclude: set[str]
    ) -> tuple[MemoryCard, float] | None:
        best: tuple[MemoryCard, float] | None = None
        if vector is not None:
            for store in self._opened_stores().values():
                for candidate, similarity in store.query([vector], 5)[0]:
                    if candidate.id in exclude or not self._visible(_Entry.of_card(candidate, "")):
                        continue
                    if similarity >= self.gate.duplicate_cosine and (best is None or similarity > best[1]):
                        best = (candidate, similarity)
            return best
        from memagent.memory.lexical import tokenize

        terms = tokenize(card.content)
        catalog = self._catalog(True)
        ids = [i for i, _ in catalog.lexical.search(card.content, 5) if i not in exclude]
        for candidate in self._get_many(ids).values():
            overlap = term_overlap(terms, tokenize(candidate.content))
            if overlap >= self.gate.duplicate_overlap and (best is None or overlap > best[1]):
                best = (candidate, overlap)
        return best

    def _merge_into(self, existing: MemoryCard, new: MemoryCard) -> MemoryCard:
        """A duplicate strengthens the existing card instead of adding a new one."""
        merged = existing.model_copy(
            update={
                "confidence": max(existing.confidence, new.confidence),
                "importance": max(existing.importance, new.importance),
                "files": list(dict.fromkeys([*existing.files, *new.files])),
            }
        )
        if merged != existing:
            merged.updated_at = utc_now()
            label = self._locate(existing.id) or self._store_for_scope(existing.scope)
            self._stores[label].update(merged, existing.status)
            self._catalogs[True].put(merged, label)
            self._after_write()
        return merged

    def correct(self, memory_id: str, new_content: str, **fields: Any) -> SaveResult:
        """A new card superseding ``memory_id``; unspecified fields are carried over."""
        old = self.get(memory_id)
        if old is None:
            return SaveResult("refused", None, f"no memory {memory_id}")
        carried = {
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
        if carried["scope"] == "session" and old.scope_id and not self.session_id:
            carried["scope"] = "project"
        return self.save(new_content, supersedes=memory_id, **carried)

    def update_card(self, card_id: str, *, touch: bool = True, **changes: Any) -> MemoryCard | None:
        """Change metadata fields of a stored card in place (status, links, confidence, ...).

        ``content`` and ``id`` cannot change here: new content is a correction (:meth:`correct`),
        which keeps the old card. A status change moves the card between the active and the
        inactive collection. Returns the updated card, or ``None`` if there is no such card;
        raises ``ValueError`` for an invalid value.
        """
        fixed = {"id", "content"} & set(changes)
        if fixed:
            raise ValueError(f"cannot change {', '.join(sorted(fixed))} of a card; correct it instead")
        with self._lock:
            with self._guard("update"):
                label = self._locate(card_id)
                if label is None:
                    return None
                store = self._stores[label]
                card = store.get([card_id])[card_id]
            try:
                updated = MemoryCard.model_validate({**card.model_dump(), **changes})
            except ValidationError as exc:
                raise ValueError(_validation_reason(exc)) from None
            if touch:
                updated.updated_at = utc_now()
            with self._guard("update"):
                store.update(updated, card.status)
            self._catalogs[card.active].drop(card_id)
            self._catalogs[updated.active].put(updated, label)
            self._after_write()
            return updated

    # -- reading ---------------------------------------------------------------------------

    def _locate(self, memory_id: str) -> str | None:
        for label, store in self._opened_stores().items():
            if store.get([memory_id]):
                return label
        return None

    def _get_many(self, ids: Sequence[str]) -> dict[str, MemoryCard]:
        found: dict[str, MemoryCard] = {}
        for store in self._opened_stores().values():
            missing = [i for i in ids if i not in found]
            if not missing:
                break
            found.update(store.get(missing))
        return found

    def get(self, memory_id: str) -> MemoryCard | None:
        with self._lock, self._guard("read"):
            return self._get_many([memory_id]).get(memory_id)

    def chain(self, memory_id: str) -> list[MemoryCard]:
        """The supersede chain through ``memory_id``, oldest first (forgotten links end it)."""
        with self._lock, self._guard("read"):
            start = self.get(memory_id)
            if start is None:
                return []
            seen = {start.id}
            older = self._follow(start, "supersedes", seen)
            newer = self._follow(start, "superseded_by", seen)
            return [*reversed(older), start, *newer]

    def _follow(self, start: MemoryCard, link: str, seen: set[str]) -> list[MemoryCard]:
        """Cards reached by following ``link`` from ``start`` (cycle-safe via ``seen``)."""
        found: list[MemoryCard] = []
        cursor = start
        while getattr(cursor, link) and getattr(cursor, link) not in seen:
            following = self.get(getattr(cursor, link))
            if following is None:
                break
            found.append(following)
            seen.add(following.id)
            cursor = following
        return found

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
        with self._lock, self._guard("search"):
            return self._search(query, k, memory_type, scope, include_inactive, current_task, min_score)

    def _search(self, query, k, memory_type, scope, include_inactive, current_task, min_score) -> list[Hit]:
        from memagent.memory.ranking import RankingWeights, candidate_pool, rank

        pool = candidate_pool(k) * (4 if memory_type or scope else 1)
        classes = (True, False) if include_inactive else (True,)
        catalogs = [self._catalog(active) for active in classes]
        entries: dict[str, _Entry] = {}
        dense: list[tuple[str, float]] = []
        if self.dim > 0:
            vector = self._embed([query])[0]
            for store in self._opened_stores().values():
                for active, catalog in zip(classes, catalogs):
                    for card_id, similarity in store.nearest_ids(vector, pool, inactive=not active):
                        entry = catalog.entries.get(card_id)
                        if entry is not None:  # else written by another process a moment ago
                            entries[card_id] = entry
                            dense.append((card_id, similarity))
        lexical: list[tuple[str, float]] = []
        for catalog in catalogs:
            for card_id, score in catalog.lexical.search(query, pool):
                entry = catalog.entries.get(card_id)
                if entry is not None:
                    entries.setdefault(card_id, entry)
                    lexical.append((card_id, score))

        def wanted(entry: _Entry) -> bool:
            return (
                self._visible(entry)
                and (memory_type is None or entry.memory_type == memory_type)
                and (scope is None or entry.scope == scope)
            )

        signals = {i: e.signals() for i, e in entries.items() if wanted(e)}
        ranked = rank(
            [d for d in dense if d[0] in signals],
            [lx for lx in lexical if lx[0] in signals],
            signals,
            now=utc_now(),
            current_task=current_task,
            k=k,
            weights=None if self.dim > 0 else RankingWeights(dense_weight=0.0, lexical_weight=1.0),
            min_score=min_score,
            active_only=not include_inactive,
            query=query,
        )
        cards = self._get_many([h.id for h in ranked])
        return [Hit(cards[h.id], h.score, dict(h.parts)) for h in ranked if h.id in cards]

    def list(
        self,
        *,
        memory_type: str | None = None,
        scope: str | None = None,
        status: str | None = None,
        include_all: bool = False,
        limit: int = 50,
        offset: int = 0,
    ) -> list[MemoryCard]:
        """Cards newest first; active ones unless ``status`` or ``include_all`` say otherwise."""
        with self._lock, self._guard("list"):
            rows = self._matching_metadata(memory_type, scope, status, include_all)
            rows.sort(key=lambda row: (row[1].get("created_at", ""), row[0]), reverse=True)
            page = [card_id for card_id, _ in rows[max(offset, 0) : max(offset, 0) + max(limit, 0)]]
            found = self._get_many(page)
            return [found[i] for i in page if i in found]

    def _matching_metadata(self, memory_type, scope, status, include_all) -> list[tuple[str, dict[str, Any]]]:
        want_active = include_all or status in (None, "active")
        want_inactive = include_all or (status is not None and status != "active")
        rows = []
        for store in self._opened_stores().values():
            for card_id, _, meta in store.iter_records(active=want_active, inactive=want_inactive, documents=False):
                if memory_type and meta.get("memory_type") != memory_type:
                    continue
                if scope and meta.get("scope") != scope:
                    continue
                if status and not include_all and meta.get("status", "active") != status:
                    continue
                rows.append((card_id, meta))
        return rows

    def stats(self) -> dict[str, Any]:
        """Counts by status (all cards) and by type and scope (active cards)."""
        with self._lock, self._guard("stats"):
            by_status = {s: 0 for s in STATUSES}
            by_type = {t: 0 for t in MEMORY_TYPES}
            by_scope = {s: 0 for s in SCOPES}
            stores: dict[str, Any] = {}
            self._opened_stores()
            for label, store in self._stores.items():
                active, inactive = store.counts()
                stores[label] = {"location": store.location.describe(), "active": active, "inactive": inactive}
            for memory_type, scope in self._active_types_and_scopes():
                by_status["active"] += 1
                by_type[memory_type] = by_type.get(memory_type, 0) + 1
                by_scope[scope] = by_scope.get(scope, 0) + 1
            by_source: dict[str, int] = {}
            for store in self._opened_stores().values():
                for _, _, meta in store.iter_records(active=False, inactive=True, documents=False):
                    key = str(meta.get("status", "archived"))
                    by_status[key] = by_status.get(key, 0) + 1
                for _, _, meta in store.iter_records(active=True, inactive=False, documents=False):
                    source = str(meta.get("source", "assistant"))
                    by_source[source] = by_source.get(source, 0) + 1
            for label, store in self._stores.items():
                stores[label]["size_bytes"] = _directory_size(store.location.path)
            return {
                "total": sum(by_status.values()),
                "active": by_status["active"],
                "by_status": by_status,
                "by_type": by_type,
                "by_scope": by_scope,
                "by_source": dict(sorted(by_source.items())),
                "stores": stores,
                "embedder": {"name": getattr(self._embedder, "name", "unknown"), "dim": self.dim},
            }

    def _active_types_and_scopes(self) -> Iterator[tuple[str, str]]:
        """From the catalog when it is built (no store access), else from a metadata scan
        (cheaper than building the catalog just for counting)."""
        if self._catalogs[True].tokens is not None:
            for entry in self._catalog(True).entries.values():
                yield entry.memory_type, entry.scope
            return
        for store in self._opened_stores().values():
            for _, _, meta in store.iter_records(active=True, inactive=False, documents=False):
                yield str(meta.get("memory_type", "fact")), str(meta.get("scope", "project"))

    # -- injection -------------------------------------------------------------------------

    def context_for_turn(
        self,
        user_text: str,
        recent: Sequence[str] = (),
        current_task: str | None = None,
        k: int = 5,
    ) -> str | None:
        """Citable memory blocks for this turn, or ``None`` (trivial turn, or nothing relevant)."""
        from memagent.memory.query import build_query, is_trivial

        if is_trivial(user_text):
            return None
        query = build_query(user_text, list(recent))
        hits = self.search(query, k, current_task=current_task)
        if not hits:
            return None
        lines = ["Relevant long-term memories:"]
        lines.extend(self._block_with_staleness(hit.card) for hit in hits)
        lines.append(CITE_INSTRUCTION)
        return "\n".join(lines)

    def _block_with_staleness(self, card: MemoryCard) -> str:
        """A card about files that are gone or changed since it was written says so."""
        block = format_block(card)
        if card.files and self._project_root is not None:
            from memagent.memory.hygiene import stale_note

            note = stale_note(card, self._project_root)
            if note:
                block += f" [{note}]"
        return block

    def profile_text(self, max_tokens: int = PROFILE_MAX_TOKENS) -> str | None:
        """The user + project profile injected at session start (see ``memory.profiles``)."""
        from memagent.memory.profiles import render_profile

        return render_profile(self, self._paths, max_tokens)

    def note_citations(self, assistant_text: str) -> list[str]:
        """Mark every cited ``[Memory#id]`` as used; returns the ids of cards that exist."""
        ids = list(dict.fromkeys(CITATION_RE.findall(assistant_text or "")))
        if not ids:
            return []
        with self._lock, self._guard("update"):
            now = utc_now()
            noted = []
            for label, store in self._opened_stores().items():
                for card in store.get(ids).values():
                    previous = card.status
                    card.last_used_at = now
                    card.access_count += 1
                    store.update(card, previous)
                    catalog = self._catalogs[card.active]
                    if card.id in catalog.entries:
                        catalog.put(card, label)
                    noted.append(card.id)
            if noted:
                self._after_write()
            return [i for i in ids if i in noted]

    # -- forgetting ------------------------------------------------------------------------

    def forget(self, memory_ids: Iterable[str]) -> int:
        """Erase cards (and the older versions they superseded) from every byte of the store.

        Returns how many cards were erased. A tombstone keeps only each id and the time.
        """
        with self._lock, self._guard("forget"):
            targets: dict[str, set[str]] = {}
            for memory_id in dict.fromkeys(memory_ids):
                for card in self._with_predecessors(memory_id):
                    label = self._locate(card.id)
                    if label is not None:
                        targets.setdefault(label, set()).add(card.id)
            return self._erase(targets)

    def _with_predecessors(self, memory_id: str) -> list[MemoryCard]:
        out: list[MemoryCard] = []
        cursor = self._get_many([memory_id]).get(memory_id)
        seen: set[str] = set()
        while cursor is not None and cursor.id not in seen:
            out.append(cursor)
            seen.add(cursor.id)
            cursor = self._get_many([cursor.supersedes]).get(cursor.supersedes) if cursor.supersedes else None
        return out

    def forget_scope(self, scope: str, session_id: str | None = None) -> int:
        """Erase every card of ``scope`` (for ``session``, of one session when given)."""
        if scope not in SCOPES:
            raise ValueError(f"unknown scope {scope!r}; expected one of {', '.join(SCOPES)}")
        with self._lock, self._guard("forget"):
            label = self._store_for_scope(scope)
            store = self._stores[label]
            ids = {
                card_id
                for card_id, _, meta in store.iter_records(documents=False)
                if meta.get("scope") == scope and (session_id is None or meta.get("scope_id") == session_id)
            }
            return self._erase({label: ids})

    def forget_all(self) -> int:
        """Erase every card in both stores."""
        with self._lock, self._guard("forget"):
            targets = {
                label: {card_id for card_id, _, _ in store.iter_records(documents=False)}
                for label, store in self._opened_stores().items()
            }
            return self._erase(targets)

    def _erase(self, targets: Mapping[str, set[str]]) -> int:
        erased = 0
        for label, ids in targets.items():
            if not ids:
                continue
            store = self._stores[label]
            removed = store.delete(sorted(ids))
            for card_id in removed:
                for catalog in self._catalogs.values():
                    catalog.drop(card_id)
            store.purge(removed)
            self._write_tombstones(store, removed)
            self._erase_from_history(removed)
            erased += len(removed)
        if erased:
            self._after_write()
        return erased

    def _erase_from_history(self, ids: Sequence[str]) -> None:
        """Forget means everywhere: the learning history and cached profiles quote cards too."""
        if self._paths is None or not ids:
            return
        from memagent.memory.learning import on_forget

        on_forget(self._paths, list(ids))

    def _write_tombstones(self, store: CardStore, ids: Sequence[str]) -> None:
        if store.is_remote or not ids or store.location.path is None:
            return
        path = store.location.path / TOMBSTONE_FILE
        stamp = iso_utc(utc_now())
        existing = path.read_text(encoding="utf-8") if path.exists() else ""
        lines = [json.dumps({"id": i, "forgotten_at": stamp}) for i in ids]
        _atomic_write(path, existing + "\n".join(lines) + "\n")

    # -- maintenance -----------------------------------------------------------------------

    def reindex(self, progress: Progress | None = None) -> int:
        """Re-embed every card with the current embedder and record it in the stores."""
        with self._lock, self._guard("reindex"):
            work = [(label, list(store.iter_cards())) for label, store in self._opened_stores().items()]
            total = sum(len(cards) for _, cards in work)
            done = 0
            for label, cards in work:
                vectors: list[list[float] | None] = []
                for start in range(0, len(cards), EMBED_BATCH):
                    batch = cards[start : start + EMBED_BATCH]
                    vectors.extend(self._embed([c.content for c in batch]))
                    done += len(batch)
                    if progress:
                        progress(done, total)
                self._stores[label].replace_all(cards, vectors)
            for catalog in self._catalogs.values():
                catalog.tokens = None
            return total

    def export(self) -> list[dict[str, Any]]:
        """Every card (all statuses, both stores) as JSON-ready dicts, oldest first."""
        with self._lock, self._guard("export"):
            cards = [card for store in self._opened_stores().values() for card in store.iter_cards()]
            cards.sort(key=lambda c: (c.created_at, c.id))
            return [card.model_dump(mode="json") for card in cards]

    def import_cards(self, records: Iterable[Mapping[str, Any]], progress: Progress | None = None) -> ImportReport:
        """Add cards from dicts (at least ``content``) through the gate, in batches."""
        items = list(records)
        report = ImportReport()
        with self._lock, self._guard("import"):
            self._follow_other_writers(self._opened_stores())
            for start in range(0, len(items), IMPORT_BATCH):
                batch = items[start : start + IMPORT_BATCH]
                self._import_batch(batch, start, report)
                if progress:
                    progress(min(start + IMPORT_BATCH, len(items)), len(items))
            if not items and progress:
                progress(0, 0)
        return report

    def _import_batch(
        self,
        batch: Sequence[Mapping[str, Any]],
        offset: int,
        report: ImportReport,
    ) -> None:
        """Gate, de-duplicate (against the store and within the batch) and add one batch."""
        import numpy as np

        accepted_vectors: list[list[float]] = []

        candidates: list[tuple[int, MemoryCard]] = []
        for index, record in enumerate(batch, start=offset):
            card, reason = self._card_from_record(record)
            if card is None:
                report.refused.append((index, reason))
                continue
            reason = check_card(card, self.gate)
            if reason is not None:
                report.refused.append((index, reason))
                continue
            candidates.append((index, card))
        existing = self._get_many([c.id for _, c in candidates])
        seen_ids = set(report.ids)
        fresh = []
        for index, card in candidates:
            if card.id in existing or card.id in seen_ids:
                report.duplicates += 1
                continue
            seen_ids.add(card.id)
            fresh.append((index, card))
        if not fresh:
            return
        vectors = self._embed([c.content for _, c in fresh])
        to_add: dict[str, list[tuple[MemoryCard, list[float] | None]]] = {"project": [], "user": []}
        store_hits = self._nearest_active(vectors, [c for _, c in fresh])
        for (index, card), vector, nearest in zip(fresh, vectors, store_hits):
            if card.active and nearest >= self._dup_threshold:
                report.duplicates += 1
                continue
            if card.active and vector is not None and accepted_vectors:
                sims = np.asarray(accepted_vectors, dtype=np.float32) @ np.asarray(vector, dtype=np.float32)
                if float(sims.max()) >= self.gate.duplicate_cosine:
                    report.duplicates += 1
                    continue
            if card.active and vector is not None:
                accepted_vectors.append(vector)
            to_add[self._store_for_scope(card.scope)].append((card, vector))
        for label, pairs in to_add.items():
            if not pairs:
                continue
            self._stores[label].add([c for c, _ in pairs], [v for _, v in pairs])
            for card, _ in pairs:
                self._catalogs[card.active].put(card, label)
                report.ids.append(card.id)
                report.added += 1
        self._after_write()

    @property
    def _dup_threshold(self) -> float:
        return self.gate.duplicate_cosine if self.dim > 0 else self.gate.duplicate_overlap

    def _nearest_active(self, vectors: Sequence[list[float] | None], cards: Sequence[MemoryCard]) -> list[float]:
        """Per card, its highest similarity to an active card already stored (0 if none)."""
        best = [0.0] * len(cards)
        if not cards:
            return best
        if self.dim > 0:
            for store in self._opened_stores().values():
                rows = store.query([v for v in vectors if v is not None], 1)
                for i, row in enumerate(rows):
                    if row:
                        best[i] = max(best[i], row[0][1])
            return best
        from memagent.memory.lexical import tokenize

        catalog = self._catalog(True)
        for i, card in enumerate(cards):
            ids = [cid for cid, _ in catalog.lexical.search(card.content, 3)]
            terms = tokenize(card.content)
            for other in self._get_many(ids).values():
                best[i] = max(best[i], term_overlap(terms, tokenize(other.content)))
        return best

    def _card_from_record(self, record: Mapping[str, Any]) -> tuple[MemoryCard | None, str]:
        if not isinstance(record, Mapping):
            return None, "not a JSON object"
        data = {k: v for k, v in record.items() if k in MemoryCard.model_fields}
        if "memory_type" not in data and "type" in record:
            data["memory_type"] = record["type"]
        if not isinstance(data.get("content"), str) or not data["content"].strip():
            return None, "missing content"
        if data.get("scope") == "project" and not data.get("scope_id") and self._project_root is not None:
            data["scope_id"] = str(self._project_root)
        try:
            return MemoryCard.model_validate(data), ""
        except ValidationError as exc:
            return None, _validation_reason(exc)

    def backend_info(self) -> dict[str, Any]:
        """For `memagent doctor`: where the stores are, the embedder, and card counts."""
        with self._lock, self._guard("status"):
            stores = {}
            self._opened_stores()
            for label, store in self._stores.items():
                active, inactive = store.counts()
                recorded = store.stored_embedder() if store.opened else None
                stores[label] = {
                    "location": store.location.describe(),
                    "remote": store.is_remote,
                    "exists": store.exists,
                    "active": active,
                    "inactive": inactive,
                    "recorded_embedder": recorded.describe() if recorded else None,
                }
            return {
                "embedder": {
                    "name": getattr(self._embedder, "name", "unknown"),
                    "model_id": getattr(self._embedder, "model_id", None),
                    "dim": self.dim,
                    "fallback_reasons": list(getattr(self._embedder, "fallback_reasons", []) or []),
                },
                "stores": stores,
                "session_id": self.session_id,
            }


def format_block(card: MemoryCard) -> str:
    """``[Memory#m_…] (decision, project, conf 0.90, session S turn 4, 2026-11-20) content``."""
    origin = []
    if card.provenance.session_id:
        origin.append(f"session {card.provenance.session_id}")
        if card.provenance.turn is not None:
            origin.append(f"turn {card.provenance.turn}")
    else:
        origin.append(f"from {card.source}")
    meta = ", ".join(
        [card.memory_type, card.scope, f"conf {card.confidence:.2f}", " ".join(origin), card.created_at.date().isoformat()]
    )
    content = " ".join(card.content.split())
    return f"{card.citation()} ({meta}) {content}"


def _directory_size(path: Path | None) -> int | None:
    """Bytes on disk under a local store; None for a server store."""
    if path is None or not path.exists():
        return None if path is None else 0
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text, durable=True)


def _load_embedder() -> Any:
    try:
        from memagent.memory.embeddings import load_embedder

        return load_embedder()
    except Exception as exc:
        raise MemoryUnavailable(f"embedding backend failed to load: {_one_line(exc)}") from None


def _probe_embedder(embedder: Any) -> None:
    """A broken embedder is found at open time, not in the middle of the first turn."""
    dim = int(getattr(embedder, "dim", 0))
    try:
        vectors = embedder.embed(["memory probe"])
        shape = tuple(getattr(vectors, "shape", ()))
    except Exception as exc:
        raise MemoryUnavailable(f"embedding backend {getattr(embedder, 'name', '?')} is broken: {_one_line(exc)}") from None
    if shape != (1, dim):
        raise MemoryUnavailable(
            f"embedding backend {getattr(embedder, 'name', '?')} returned vectors of shape {shape}, expected (1, {dim})"
        )


__all__ = [
    "CITE_INSTRUCTION",
    "Hit",
    "ImportReport",
    "MemoryService",
    "MemoryUnavailable",
    "SaveResult",
    "format_block",
]
