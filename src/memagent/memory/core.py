"""What every part of the memory service shares: the two stores, the embedder, the lock.

:class:`MemoryCore` is one object that :class:`memagent.memory.service.MemoryService` builds and
hands to each of its parts (``saving``, ``reading``, ``injection``, ``erasure``, ``transfer``):
each part is a plain class holding the core, never a base class of another. The core keeps the
indexes in step with the card files, finds cards, embeds texts and runs background upkeep; what
a part adds to a sync (the saving part judges card files that arrived from outside) it plugs in
as :attr:`MemoryCore.after_sync`.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memagent.embedding.embedders import Embedder
from memagent.embedding.handle import EmbedderHandle
from memagent.errors import one_line
from memagent.memory.cardfiles import CardFileError, stamp_of
from memagent.memory.cards import CARD_ID_RE, MemoryCard, utc_now
from memagent.memory.catalog import CatalogError, Entry, digest_of
from memagent.memory.chroma_client import load_chromadb
from memagent.memory.errors import MemoryUnavailable, StoreError
from memagent.memory.gate import GateConfig, RateLimiter
from memagent.memory.provenance import REPOSITORY, Witness
from memagent.memory.recall import Recall, RetrievalParts
from memagent.memory.store import CACHE_BATCH, Progress, Store, chunked
from memagent.memory.usage import UsageBuffer
from memagent.memory.vector_index import EmbedderInfo

INLINE_EMBED_MAX = 64  # with background upkeep on, a search embeds at most this many pending cards


@dataclass(frozen=True)
class MemoryKnobs:
    """The memory settings the service uses (built from ``config.Settings``)."""

    k: int = 6
    block_chars: int = 2400  # budget of the injected memory block
    min_relevance: float | None = None  # None: the ranking's default threshold
    session_card_days: float = 7.0
    archive_after_days: float = 180.0
    archive_below_confidence: float = 0.5


class MemoryCore:
    """Stores, embedder, settings and lock; see the module docstring. Thread-safe: one lock
    serialises every step that touches a store."""

    def __init__(
        self,
        stores: Mapping[str, Store],
        embedder: EmbedderHandle,
        *,
        session_id: str = "",
        project_root_id: str | None = None,
        gate: GateConfig | None = None,
        knobs: MemoryKnobs | None = None,
        on_forget: Callable[[list[str]], None] | None = None,
    ) -> None:
        self.stores = dict(stores)
        self.embedder_handle = embedder
        self.session_id = session_id
        self.project_scope_id = project_root_id
        self.gate = gate or GateConfig()
        self.knobs = knobs or MemoryKnobs()
        self.rate = RateLimiter(self.gate.max_auto_writes_per_session, self.gate.max_auto_writes_per_day)
        self.lock = threading.RLock()
        self.on_forget = on_forget
        self.progress: Progress | None = None  # set by the CLI to show index rebuilds
        # None: a search embeds every pending card itself (one-shot commands); a number: more
        # than that are left to the background upkeep (sessions, the MCP server; see warm_up)
        self.inline_embed_max: int | None = None
        self.closing = False
        self._jobs: dict[str, threading.Thread] = {}
        self._jobs_lock = threading.Lock()
        # judges the project's card files (see ``memory.provenance``); set by ``MemoryService.open``
        self.witness: Witness | None = None
        # a session or MCP server in an untrusted project: repository cards wait in review
        self.hold_repository = False
        self.clock: Callable[[], datetime] = utc_now  # "now" for time questions ("last week"); tests set it
        self.retrieval = RetrievalParts()
        self.recall = Recall(self.retrieval)
        self.usage = UsageBuffer()  # uses noted on the turn's path, written by ``flush_usage``
        self.project_root: Path | None = None  # the project's folder (stale-file notes, transcripts)
        # run after each sync of the stores in use, with whether vectors were brought up to date
        self.after_sync: Callable[[Store, bool], None] | None = None
        # imports the vector index's library (see ``prepare_vector_search``); tests replace it
        self.load_index_library: Callable[[], object] = load_chromadb

    def count_writes_on_disk(self, store_root: Path) -> None:
        """Keep the automatic-write limits in the index folder of the store at ``store_root``
        (``memory.quota``), shared by every process of the project, instead of in this process."""
        from memagent.memory.quota import WriteLedger

        self.rate = RateLimiter(
            self.gate.max_auto_writes_per_session,
            self.gate.max_auto_writes_per_day,
            ledger=WriteLedger.of_store(store_root),
        )

    # -- plumbing ------------------------------------------------------------------------

    @contextlib.contextmanager
    def guard(self, action: str) -> Iterator[None]:
        """Turn any store failure into :class:`MemoryUnavailable` with a one-line reason."""
        try:
            yield
        except MemoryUnavailable:
            raise
        except (StoreError, CatalogError) as exc:
            raise MemoryUnavailable(str(exc)) from None
        except Exception as exc:
            raise MemoryUnavailable(f"memory {action} failed: {one_line(exc)}") from None

    @property
    def embedder(self) -> Embedder:
        """The embedder, loaded on first use (list, show and forget never need it)."""
        return self.embedder_handle.get()

    @property
    def dim(self) -> int:
        return int(self.embedder.dim)

    def embedder_info(self) -> EmbedderInfo:
        return EmbedderInfo.of(self.embedder)

    def embed(self, texts: Sequence[str]) -> list[list[float] | None]:
        if self.dim == 0:
            return [None] * len(texts)
        embed_lists = getattr(self.embedder, "embed_lists", None)  # a borrowed embedder's, without numpy
        try:
            if embed_lists is not None:
                return list(embed_lists(list(texts)))
            vectors = self.embedder.embed(list(texts))
        except Exception as exc:
            raise MemoryUnavailable(f"embedding failed ({self.embedder.name}): {one_line(exc)}") from None
        tolist = getattr(vectors, "tolist", None)
        return tolist() if tolist is not None else [[float(x) for x in row] for row in vectors]

    def embed_texts(self, texts: Sequence[str]) -> list[list[float]] | None:
        """Vectors of ``texts`` with the store's embedder (loading it), or ``None`` in lexical mode."""
        with self.lock, self.guard("embed"):
            if self.dim == 0:
                return None
            return [v or [] for v in self.embed(texts)]

    def embed_all(self, texts: Sequence[str]) -> list[list[float]]:
        return [v for v in self.embed(texts) if v is not None]

    def store_for_scope(self, scope: str) -> Store:
        return self.stores["user" if scope == "user" else "project"]

    def stores_in_use(self) -> list[Store]:
        return [s for s in self.stores.values() if s.exists or s.catalog.exists]

    def notices(self) -> list[str]:
        """One line per thing the user should know: damaged indexes rebuilt, unreadable card files
        skipped. Each is reported once."""
        found: list[str] = []
        for store in self.stores.values():
            found.extend(store.notices)
            store.notices.clear()
            found.extend(f"skipped {problem}" for problem in store.problems())
            found.extend(f"skipped {problem}" for problem in misnamed_files(store))
        return found

    # -- keeping the index in step with the files ----------------------------------------

    def sync(self, *, vectors: bool, force: bool = False) -> None:
        """Catalog from files (the quick sync unless ``force``); vector index from catalog when
        ``vectors``. What is too big for the caller's path (a full scan of a large store, many
        cards to embed) is started in the background when background upkeep is on."""
        for store in self.stores_in_use():
            store.sync_files(force=force)
            if vectors:
                self._sync_vectors(store)
        if self.inline_embed_max is not None:
            if any(store.scan_wanted() for store in self.stores_in_use()):
                self._in_background("scan", self.full_scan)
        if self.after_sync is not None:
            for store in self.stores_in_use():
                self.after_sync(store, vectors)

    def _sync_vectors(self, store: Store) -> None:
        info = self.embedder_info()
        store.check_embedder(info)
        limit = self.inline_embed_max
        if limit is not None and store.catalog.exists and store.catalog.pending_vectors() > limit:
            store.follow_other_writers()
            self._in_background("index", self.index_pending)
            return
        store.sync_vectors(info, self.embed_all, progress=self.progress, duplicate_cosine=self.gate.duplicate_cosine)

    # -- background upkeep ---------------------------------------------------------------

    def prepare_vector_search(self) -> None:
        """Start importing the vector index's library (chromadb: most of a cold search) on a
        background thread, so that it overlaps with loading the embedder (whose ONNX session is
        built outside the GIL) instead of following it. Only when a search will need both: a store
        holds vectors, the embedder is not loaded yet and is not the lexical one. When chromadb is
        imported already the thread has nothing to do."""
        if self.embedder_handle.loaded or self.embedder_handle.preference == "lexical":
            return
        if any(store.needs_index_library() for store in self.stores_in_use()):
            # Both sides import numpy. Two threads importing one package at once can meet
            # Python's import-deadlock avoidance, which hands one of them a half-initialised
            # module; numpy's core cannot be loaded twice, so the embedder would fail. Importing
            # it here first (the embedder needs it anyway) leaves the two sides no module in common.
            importlib.import_module("numpy")
            self._in_background("index-library", self.load_index_library)

    def _in_background(self, name: str, job: Callable[[], object]) -> None:
        """Run ``job`` on a daemon thread unless one of that name is still running."""
        with self._jobs_lock:
            running = self._jobs.get(name)
            if self.closing or (running is not None and running.is_alive()):
                return
            thread = threading.Thread(target=_quietly, args=(job,), name=f"memagent-memory-{name}", daemon=True)
            self._jobs[name] = thread
            thread.start()

    def wait_for_upkeep(self, timeout: float = 60.0) -> bool:
        """Wait for the background jobs (tests, benchmarks); whether they all finished."""
        for thread in list(self._jobs.values()):
            thread.join(timeout)
        return not any(t.is_alive() for t in self._jobs.values())

    def full_scan(self) -> int:
        """A full stamp scan of every store: the file system part without the lock, applying what
        changed under it (one short step per store). Returns how many cards changed."""
        changed = 0
        with self.lock:
            stores = self.stores_in_use()
        for store in stores:
            if self.closing:
                break
            scan = store.scan_files()
            with self.lock, self.guard("scan"):
                if self.closing:
                    break
                changed += store.apply_scan(scan)
        return changed

    def index_pending(self) -> int:
        """Bring the vector indexes up to date in the background: first from the vector cache
        beside the cards (read without the lock), then by embedding a batch at a time (without
        the lock); each write happens under it, so a search waits at most for one write."""
        done = 0
        for store in list(self.stores.values()):
            with self.lock, self.guard("index"):
                if self.closing or not store.catalog.exists:
                    continue
                info = self.embedder_info()
                store.check_embedder(info)
                pending = store.catalog.pending_digests()
            for chunk in chunked(store.cached_vectors(info, pending), CACHE_BATCH):
                with self.lock, self.guard("index"):
                    if self.closing:
                        return done
                    store.store_vectors(info, chunk, remember=False)
                done += len(chunk)
        while not self.closing:
            with self.lock, self.guard("index"):
                info = self.embedder_info()
                store, batch = next(
                    ((s, b) for s in self.stores_in_use() for b in [s.next_vector_batch(info)] if b), (None, [])
                )
            if store is None:
                return done
            vectors = self.embed_all([content for _, content, _ in batch]) if info.dim > 0 else [[]] * len(batch)
            with self.lock, self.guard("index"):
                if self.closing:
                    break
                store.store_vectors(
                    info,
                    [(cid, digest_of(content), active, vec) for (cid, content, active), vec in zip(batch, vectors)],
                )
            done += len(batch)
        return done

    # -- finding cards -------------------------------------------------------------------

    def read_file(self, store: Store, card_id: str) -> MemoryCard | None:
        path = store.files.locate(card_id)
        if path is None:
            return None
        try:
            return store.files.read(path)
        except CardFileError:
            return None

    def locate(self, memory_id: str) -> Store | None:
        for store in self.stores.values():
            if store.files.locate(memory_id) is not None:
                return store
        return None

    def get_many(self, ids: Sequence[str]) -> dict[str, MemoryCard]:
        """Cards from their files, with the usage the catalog records (kept out of the files,
        so citing a card does not change a committed file)."""
        found: dict[str, MemoryCard] = {}
        wanted = list(dict.fromkeys(ids))
        for store in self.stores_in_use():
            if store.catalog.exists:
                found.update(_cached_cards(store, [i for i in wanted if i not in found]))
        missing = [card_id for card_id in wanted if card_id not in found]
        forgotten = self.tombstoned_ids() if missing else set()
        for card_id in missing:
            if card_id in forgotten:
                continue  # a forgotten card whose file came back is not used (see ``Store.withheld``)
            for store in self.stores.values():
                card = self.read_file(store, card_id)
                if card is not None:
                    found[card_id] = card
                    break
        for store in self.stores_in_use():
            if not store.catalog.exists or not found:
                continue
            for card_id, (last_used, uses) in store.catalog.usage(list(found)).items():
                card = found[card_id]
                if last_used is not None and (card.last_used_at is None or last_used > card.last_used_at):
                    card.last_used_at = last_used
                card.access_count = max(card.access_count, uses)
        return found

    def is_private(self, store: Store, card_id: str) -> bool:
        path = store.files.locate(card_id)
        return path is not None and store.files.is_private(path)

    def tombstoned_ids(self) -> set[str]:
        return {card_id for store in self.stores.values() for card_id in store.forgetting.tombstoned()}

    def get(self, memory_id: str) -> MemoryCard | None:
        """The card (read from its file), or ``None``."""
        with self.lock, self.guard("read"):
            return self.get_many([memory_id]).get(memory_id)

    def resolve(self, memory_id: str) -> str:
        """A full card id from an id or a unique prefix (``m_929b``); raises ``LookupError``
        with a one-line reason when there is no such card or the prefix is ambiguous."""
        text = memory_id.strip()
        if CARD_ID_RE.match(text):
            if self.locate(text) is None:
                raise LookupError(f"no memory {text}")
            return text
        if not text.startswith("m_") or len(text) < 4:
            raise LookupError(f"no memory {text} (ids look like m_3fa2c01d9e4b; a unique prefix such as m_3fa2 works)")
        with self.lock, self.guard("read"):
            self.sync(vectors=False)
            matches = sorted({i for s in self.stores_in_use() for i in s.open_catalog().ids_with_prefix(text)})
        if not matches:
            raise LookupError(f"no memory {text}")
        if len(matches) > 1:
            raise LookupError(f"{text} is ambiguous: {', '.join(matches[:3])}…")
        return matches[0]

    def visible(self, entry: Entry) -> bool:
        """Session cards of other sessions are not shown to this session, nor repository cards
        that wait in review (``hold_repository``)."""
        if self.hold_repository and entry.source == REPOSITORY:
            return False
        if entry.scope != "session" or not self.session_id:
            return True
        return entry.scope_id == self.session_id

    def scope_id(self, scope: str) -> str | None:
        if scope == "session":
            return self.session_id or None
        if scope == "project":
            return self.project_scope_id
        return None


def _quietly(job: Callable[[], object]) -> None:
    """A background job's failure shows up again, with its reason, on the next real use."""
    try:
        job()
    except Exception:
        return


def _cached_cards(store: Store, ids: list[str]) -> dict[str, MemoryCard]:
    """Cards whose file is unchanged since the catalog read it, from the catalog's copy (one
    ``stat`` each instead of parsing the YAML); a changed or missing file is left to the caller."""
    from pydantic import ValidationError

    found: dict[str, MemoryCard] = {}
    for card_id, (path, stamp, raw) in store.catalog.cards(ids).items():
        if stamp_of(Path(path)) != stamp:
            continue
        try:
            found[card_id] = MemoryCard.model_validate_json(raw)
        except ValidationError:
            continue
    return found


__all__ = ["MemoryCore", "MemoryKnobs", "MemoryUnavailable"]


def misnamed_files(store: Store) -> list[str]:
    """``store.files.misnamed()``, listed again only when a card folder changed since the listing
    kept in the catalog: listing 100k card files costs about a second, on every session's start.
    A name added or renamed changes its folder's time, so nothing new is missed."""
    folders = repr(store.files.folder_stamps())  # taken first: a change meanwhile forces a new listing
    if not store.exists:
        return []
    if not store.catalog.exists:
        return store.files.misnamed()
    catalog = store.open_catalog()
    stamp, _, kept = (catalog.get_meta("misnamed") or "").partition("\n")
    if stamp == folders:
        try:
            names = json.loads(kept)
        except ValueError:
            names = None
        if isinstance(names, list) and all(isinstance(name, str) for name in names):
            return names
    found = store.files.misnamed()
    with contextlib.suppress(sqlite3.Error):  # only a cache: a read-only catalog lists each time
        with catalog.transaction() as db:
            catalog.set_meta(db, "misnamed", folders + "\n" + json.dumps(found))
    return found
