"""The memory service: the single entry point for the agent, the memory tools and the CLI.

It routes cards to their store (user cards to ``$MEMAGENT_HOME/memory/``, project and session
cards to ``<project>/.memory/``), keeps each store's catalog and vector index in step with its
card files (the truth: see ``memory.cardfiles`` and ``memory.store``), runs the write gate
before anything is written, retrieves with dense + lexical ranking over active cards, formats
citable context, and erases forgotten cards from every byte of a local store.

The service owns one :class:`memory.core.MemoryCore` (stores, embedder, settings, lock) and its
parts, each a plain class in its own module holding that core: ``saving`` (gate, duplicates,
corrections), ``reading`` (search, list, stats), ``injection`` (per-turn blocks, citations),
``erasure`` (forget) and ``transfer`` (import/export).

Failures of the store or the embedder surface as :class:`MemoryUnavailable` with a one-line
reason, so the agent can carry on with memory off and the CLI can print the reason and exit 1.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from memagent.embedding.embedders import Embedder
from memagent.embedding.handle import EmbedderHandle
from memagent.errors import one_line
from memagent.fsutil import UnsafePath, refuse_symlinks
from memagent.jsontypes import JsonObject
from memagent.memory.cardfiles import INDEX_DIR, PRIVATE_DIR, CardFileError
from memagent.memory.cards import MemoryCard
from memagent.memory.core import INLINE_EMBED_MAX, MemoryCore, MemoryKnobs
from memagent.memory.erasure import Erasure
from memagent.memory.errors import MemoryUnavailable, StoreError
from memagent.memory.gate import GateConfig
from memagent.memory.identity import project_identity
from memagent.memory.injection import CITE_INSTRUCTION, Injection, format_block
from memagent.memory.layout import LOCAL_DIR, VECTORS_NAME
from memagent.memory.provenance import (
    IMPORT,
    PROVENANCE_VERSION,
    REPOSITORY,
    REVIEW,
    Standing,
    Witness,
    ledger_for,
    refresh_catalog,
)
from memagent.memory.reading import Hit, Reading
from memagent.memory.recall import Recall, RetrievalParts
from memagent.memory.saving import SaveResult, Saving
from memagent.memory.store import Progress, Store
from memagent.memory.transfer import ImportReport, Transfer
from memagent.memory.vector_index import EmbedderInfo, StoreLocation

if TYPE_CHECKING:
    from memagent.config import ProjectPaths, Settings


def gate_of(settings: Settings) -> GateConfig:
    return GateConfig(
        min_confidence=settings.memory_min_confidence,
        duplicate_cosine=settings.memory_duplicate_cosine,
        duplicate_overlap=settings.memory_duplicate_overlap,
        max_auto_writes_per_session=settings.memory_auto_writes_per_session,
        max_auto_writes_per_day=settings.memory_auto_writes_per_day,
        max_cards=settings.memory_max_cards,
    )


def knobs_of(settings: Settings) -> MemoryKnobs:
    return MemoryKnobs(
        k=settings.memory_k,
        block_chars=settings.memory_block_chars,
        min_relevance=settings.memory_min_relevance,
        session_card_days=settings.memory_session_card_days,
        archive_after_days=settings.memory_archive_after_days,
        archive_below_confidence=settings.memory_archive_below_confidence,
    )


class MemoryService:
    """See the module docstring. Thread-safe: one lock (the core's) serialises every operation.

    The service owns one :class:`MemoryCore` and its parts, each a plain class over that core:
    ``saving``, ``reading``, ``injection``, ``erasure`` and ``transfer``. Its surface is their
    public methods, bound here under the same names (``service.save`` is ``service.saving.save``),
    plus the store-wide upkeep below; code that wants one part can take it (``service.reading``).
    """

    def __init__(self, core: MemoryCore) -> None:
        self.core = core
        self.saving = Saving(core)
        self.reading = Reading(core)
        self.injection = Injection(core, self.reading)
        self.erasure = Erasure(core)
        self.transfer = Transfer(core, self.saving, self.erasure)
        core.after_sync = self.saving.after_sync
        # finding cards, and the core's upkeep
        self.get, self.resolve, self.notices = core.get, core.resolve, core.notices
        self.embed_texts, self.wait_for_upkeep = core.embed_texts, core.wait_for_upkeep
        self.full_scan, self.index_pending = core.full_scan, core.index_pending
        # saving
        self.save, self.save_card, self.correct = self.saving.save, self.saving.save_card, self.saving.correct
        self.submit = self.saving.submit
        self.update_card, self.reinforce = self.saving.update_card, self.saving.reinforce
        self.judge_new_card, self.comparer = self.saving.judge_new_card, self.saving.comparer
        self.judge_new_cards = self.saving.judge_new_cards
        # reading
        self.search, self.list, self.stats = self.reading.search, self.reading.list, self.reading.stats
        self.where, self.chain = self.reading.where, self.reading.chain
        # the per-turn block and uses
        self.context_for_turn, self.note_citations = self.injection.context_for_turn, self.injection.note_citations
        self.note_retrieved, self.flush_usage = self.injection.note_retrieved, self.injection.flush_usage
        self.topic_distance, self.auto_write_refusal = self.injection.topic_distance, self.injection.auto_write_refusal
        # forgetting
        self.forget, self.forget_report, self.forget_where = (
            self.erasure.forget,
            self.erasure.forget_report,
            self.erasure.forget_where,
        )
        self.forget_scope, self.forget_session = self.erasure.forget_scope, self.erasure.forget_session
        self.forget_source, self.forget_all = self.erasure.forget_source, self.erasure.forget_all
        self.earlier_versions, self.tombstoned = self.erasure.earlier_versions, self.erasure.tombstoned
        self.withheld, self.readmit, self.revive = self.erasure.withheld, self.erasure.readmit, self.erasure.revive
        # import and export
        self.export, self.import_cards = self.transfer.export, self.transfer.import_cards

    # -- the core's settings, read and set through the service ------------------------------

    @property
    def session_id(self) -> str:
        return self.core.session_id

    @property
    def gate(self) -> GateConfig:
        return self.core.gate

    @property
    def knobs(self) -> MemoryKnobs:
        return self.core.knobs

    @property
    def retrieval(self) -> RetrievalParts:
        """Which retrieval parts are on (benchmarks switch them off one at a time)."""
        return self.core.retrieval

    @property
    def recall(self) -> Recall:
        return self.core.recall

    @property
    def embedder(self) -> Embedder:
        """The embedder, loaded on first use (list, show and forget never need it)."""
        return self.core.embedder

    @property
    def dim(self) -> int:
        return self.core.dim

    @property
    def progress(self) -> Progress | None:
        """Told the progress of index rebuilds (the CLI's progress bar), or ``None``."""
        return self.core.progress

    @progress.setter
    def progress(self, value: Progress | None) -> None:
        self.core.progress = value

    @property
    def clock(self) -> Callable[[], datetime]:
        """ "Now" for time questions ("last week"); tests set it."""
        return self.core.clock

    @clock.setter
    def clock(self, value: Callable[[], datetime]) -> None:
        self.core.clock = value

    @property
    def inline_embed_max(self) -> int | None:
        """How many pending cards a search embeds itself; ``None``: all (see ``warm_up``)."""
        return self.core.inline_embed_max

    @inline_embed_max.setter
    def inline_embed_max(self, value: int | None) -> None:
        self.core.inline_embed_max = value

    @property
    def hold_repository(self) -> bool:
        """Repository cards wait in review (a session or MCP server in an untrusted project)."""
        return self.core.hold_repository

    @hold_repository.setter
    def hold_repository(self, value: bool) -> None:
        self.core.hold_repository = value

    # -- opening and closing --------------------------------------------------------------

    @classmethod
    def open(
        cls,
        paths: ProjectPaths,
        settings: Settings,
        session_id: str = "",
        *,
        embedder: Embedder | None = None,
        check_embedder: bool = True,
        gate: GateConfig | None = None,
        hold_repository_cards: bool = False,
    ) -> MemoryService:
        """Open both stores. Cheap: nothing is created until the first write, and the embedder
        and the vector index are loaded on first use (list, show and forget never load them).

        Given an ``embedder`` and ``check_embedder``, the embedder is probed and compared with
        the one the stores' indexes were built with now rather than on first use.

        Project card files earn their provenance from the ledger in ``$MEMAGENT_HOME`` (see
        ``memory.provenance``); ``hold_repository_cards`` (a session or an MCP server in a
        project the user has not trusted) keeps repository cards out of searches and listings.
        """
        handle = (
            EmbedderHandle.of(embedder)
            if embedder is not None
            else EmbedderHandle(settings.embedder, cache_dir=paths.home / "cache", lender=_lender(paths, settings))
        )
        if embedder is not None and check_embedder:
            _probe_embedder(embedder)
        wait = settings.memory_lock_wait
        try:  # the project's cards live in a real folder, never through a symlink out of it
            refuse_symlinks(paths.root, paths.memory)
            for inside in (INDEX_DIR, PRIVATE_DIR, f"{LOCAL_DIR}/{VECTORS_NAME}"):  # nor out of its local part
                refuse_symlinks(paths.root, paths.memory / inside)
        except UnsafePath as exc:
            raise MemoryUnavailable(str(exc)) from None
        except OSError:
            pass  # a file where a folder should be: the writability check below names it
        identity = project_identity(paths.memory, paths.root, record=False)
        if settings.chroma_url:
            where = StoreLocation.remote("project", settings.chroma_url, paths.root, identity)
        else:
            where = StoreLocation.local("project", paths.memory / INDEX_DIR)
        witness = Witness(ledger_for(paths.home))
        stores = {
            "project": Store(
                "project",
                paths.memory,
                where,
                lock_wait=wait,
                identity=identity,
                witness=witness,
                commit_vectors=settings.memory_commit_vectors,
            ),
            "user": Store(
                "user", paths.user_memory, StoreLocation.local("user", paths.user_memory / INDEX_DIR), lock_wait=wait
            ),
        }

        for store in stores.values():  # a lent embedder's process searches the mirrors too
            store.mirror_lender = handle.borrowed

        def erase_elsewhere(ids: list[str]) -> None:
            from memagent.memory.learning import on_forget

            on_forget(paths, ids)

        service = cls(
            MemoryCore(
                stores,
                handle,
                session_id=session_id,
                project_root_id=identity,
                gate=gate or gate_of(settings),
                knobs=knobs_of(settings),
                on_forget=erase_elsewhere,
            )
        )
        service.core.project_root = paths.root
        service.core.witness = witness
        service.core.hold_repository = hold_repository_cards
        service.core.count_writes_on_disk(paths.memory)  # in .memory/local/index (memory.layout)
        try:
            service._check_locations(settings)
            service._refresh_provenance()
            if embedder is not None and check_embedder:
                service._check_indexes(EmbedderInfo.of(embedder))
        except (StoreError, MemoryUnavailable) as exc:
            service.close()
            raise MemoryUnavailable(str(exc)) from None
        return service

    def _check_locations(self, settings: Settings) -> None:
        from memagent.memory.legacy import migrate_legacy_store

        for store in self.core.stores.values():
            _check_writable(store)
            with self.core.guard("open"):
                store.migrate_layout()
                migrate_legacy_store(store)
        if settings.chroma_url:
            with self.core.guard("open"):
                self.core.stores["project"].vector_index(None, create=False)  # an unreachable server fails here

    def _check_indexes(self, info: EmbedderInfo) -> None:
        with self.core.guard("open"):
            for store in self.core.stores_in_use():
                store.check_embedder(info)
                index = store.vector_index(info, create=False)
                if index is not None:
                    index.check_embedder()

    def close(self) -> None:
        """Close the stores; background upkeep stops after the step it is in (never waited for
        longer than that). Uses noted and not yet written are written first."""
        try:
            self.flush_usage()
        except MemoryUnavailable:
            pass  # the store is failing anyway; use counts are a nicety
        self.core.closing = True
        with self.core.lock:
            for store in self.core.stores.values():
                store.close()
            if self.core.witness is not None:
                self.core.witness.ledger.close()

    def _refresh_provenance(self) -> None:
        """A catalog built before the ledger existed holds cards as their files claimed them:
        read them once more, as earned."""
        store = self.core.stores["project"]
        if not (store.exists or store.catalog.exists):
            return
        with self.core.lock, self.core.guard("open"):
            fresh = not store.catalog.exists or store.open_catalog().count() == 0
            catalog = store.open_catalog()
            if catalog.get_meta("provenance") == PROVENANCE_VERSION:
                return
            if fresh:  # it will be filled from the files as they are earned
                with store.locked(), catalog.transaction() as db:
                    catalog.set_meta(db, "provenance", PROVENANCE_VERSION)
            else:
                refresh_catalog(store)

    def warm_up(self, prefetch: bool = True, upkeep: bool = True) -> None:
        """Session start, on a background thread: get ready for the first search, then upkeep.

        In the order the first search needs them: the quick sync (no full scan), the embedder,
        the vector index (chromadb imported before the lock is taken); then, as background
        upkeep, the vectors the index lacks (a batch at a time), a full stamp scan, and the
        periodic clean-up (expired session cards, archival); the date parser is loaded first, off
        the first dated question. The lock is held one short step at a time, so a search waits at
        most for the step it needs; later searches leave big index
        work to the background (``inline_embed_max``). Without ``prefetch`` (a one-shot prompt that
        will not search) nothing heavy is imported or loaded. Without ``upkeep`` (a one-shot
        prompt: the process ends after one answer) there is no background scan, indexing or
        clean-up: a search does what it needs itself."""
        self.core.inline_embed_max = INLINE_EMBED_MAX if upkeep else None
        if prefetch:
            self.core.prepare_vector_search()
        with self.core.lock, self.core.guard("warm-up"):
            if self.core.closing:
                return
            for store in self.core.stores_in_use():
                store.sync_files()
        if not prefetch:
            return
        info = self.core.embedder_info()  # loads the embedder (without the lock: a search may wait for it)
        if info.dim > 0 and any(s.needs_index_library() for s in self.core.stores_in_use()):
            self.core.load_index_library()  # most of opening the index (begun above): not under the lock
        with self.core.lock, self.core.guard("warm-up"):
            if self.core.closing:
                return
            for store in self.core.stores_in_use():
                store.check_embedder(info)
                store.vector_index(info, create=False)
        if not upkeep:
            return
        from memagent.memory.timeline import warm_up as read_a_date

        read_a_date()  # dateparser's import and first parse (half a second) off the first question
        self.core.index_pending()
        if not self.core.closing:
            self.core.full_scan()
        if not self.core.closing:
            self.maintain()

    def maintain(self) -> int:
        """Erase session cards of other sessions older than the session-card lifetime, and archive
        active cards unused for ``archive_after_days`` whose confidence is below the threshold.
        Returns how many cards changed."""
        from memagent.memory.cards import iso_utc, utc_now

        now = utc_now()
        expiry = iso_utc(now - timedelta(days=self.core.knobs.session_card_days))
        old = iso_utc(now - timedelta(days=self.core.knobs.archive_after_days))
        expired = self.forget_where(
            "scope = 'session' AND scope_id != ? AND COALESCE(last_used_at, created_at) < ?",
            [self.core.session_id or "", expiry],
        )
        with self.core.lock, self.core.guard("archive"):
            stale = [
                i
                for s in self.core.stores_in_use()
                for i in s.open_catalog().ids_where(
                    "active = 1 AND confidence < ? AND COALESCE(last_used_at, created_at) < ?",
                    [self.core.knobs.archive_below_confidence, old],
                )
            ]
        for card_id in stale:
            self.update_card(card_id, status="archived")
        return len(expired.erased) + len(stale)

    def reindex(self, progress: Progress | None = None) -> int:
        """Rebuild every store's catalog and index from the card files with the current embedder."""
        with self.core.lock, self.core.guard("reindex"):
            info = self.core.embedder_info()
            return sum(
                store.rebuild(info, self.core.embed_all, progress)
                for store in self.core.stores.values()
                if store.exists or store.catalog.exists
            )

    def sync(self) -> None:
        """Bring every index up to date with the files now (a full stamp scan)."""
        with self.core.lock, self.core.guard("sync"):
            self.core.sync(vectors=False, force=True)

    def pending_index_work(self) -> int:
        """How many cards the next search must embed (a clone, a deleted index, a pull)."""
        with self.core.lock, self.core.guard("sync"):
            self.core.sync(vectors=False)
            return sum(s.open_catalog().pending_vectors() for s in self.core.stores_in_use())

    def near_duplicates(self) -> list[tuple[str, str, float]]:
        """Pairs of active cards a sync found saying the same thing (after a merge, a pull)."""
        with self.core.lock, self.core.guard("read"):
            pairs = [p for s in self.core.stores_in_use() if s.catalog.exists for p in s.catalog.near_duplicates()]
            entries = {}
            for s in self.core.stores_in_use():
                entries.update(s.catalog.entries([i for pair in pairs for i in pair[:2]]))
            return [p for p in pairs if all(i in entries and entries[i].status == "active" for i in p[:2])]

    def merge_near_duplicate(self, keep_id: str, drop_id: str) -> bool:
        """Resolve a near-duplicate pair: ``drop_id`` becomes superseded by ``keep_id``, whose
        card keeps the other's provenance. Returns whether both cards were there."""
        with self.core.lock, self.core.guard("merge"):
            cards = self.core.get_many([keep_id, drop_id])
            if len(cards) != 2:
                return False
            keep, drop = cards[keep_id], cards[drop_id]
            provenance = [*keep.merged_from, drop.provenance, *drop.merged_from]
        self.update_card(
            keep_id,
            merged_from=[p for i, p in enumerate(provenance) if p not in provenance[:i]],
            confidence=max(keep.confidence, drop.confidence),
        )
        self.update_card(drop_id, status="superseded", superseded_by=keep_id)
        with self.core.lock, self.core.guard("merge"):
            for store in self.core.stores_in_use():
                with store.locked(), store.open_catalog().transaction() as db:
                    store.catalog.drop_near_duplicate(db, keep_id, drop_id)
        return True

    def repository_cards(self, *, every_one: bool) -> list[Standing]:
        """Project card files this machine did not write, or that changed since (see
        ``memory.provenance``): what each claims and what it earned; ``every_one``, or only those
        that claim more than they earned. Newest first."""
        store = self.core.stores["project"]
        with self.core.lock, self.core.guard("read"):
            self.core.sync(vectors=False)
            if not store.catalog.exists:
                return []
            found = []
            for card_id in store.open_catalog().ids_where("source = ? ORDER BY created_at DESC", [REPOSITORY]):
                path = store.files.locate(card_id)
                try:
                    claimed, data = store.files.read_with_bytes(path) if path is not None else (None, b"")
                except CardFileError:
                    continue
                if claimed is None or path is None:
                    continue
                earned = self.core.witness.earned(claimed, data) if self.core.witness is not None else claimed
                standing = Standing(claimed, earned, path)
                if earned.source == REPOSITORY and (every_one or standing.overclaims):
                    found.append(standing)
            return found

    def accept(self, memory_id: str) -> MemoryCard | None:
        """The user vouches for a repository card: it stands as its file says from now on (a
        card memagent itself marked as from the repository becomes an imported one). ``None``
        when there is no such project card."""
        store = self.core.stores["project"]
        with self.core.lock, self.core.guard("accept"):
            path = store.files.locate(memory_id)
            if path is None or self.core.witness is None:
                return None
            card, data = store.files.read_with_bytes(path)
            if card.source == REPOSITORY:
                card = card.model_copy(update={"source": IMPORT})
                store.write(card, store.files.is_private(path), None, None)
            else:
                self.core.witness.wrote(card, data, how=REVIEW)
                refresh_catalog(store, [memory_id])
            return card

    def backend_info(self) -> JsonObject:
        """For `memagent doctor`: where the stores are, the embedder, and card counts."""
        with self.core.lock, self.core.guard("status"):
            stores: JsonObject = {}
            for label, store in self.core.stores.items():
                catalog = store.open_catalog() if store.exists or store.catalog.exists else None
                active = catalog.count(True) if catalog else 0
                total = catalog.count() if catalog else 0
                recorded = catalog.get_meta("embedder") if catalog else None
                stores[label] = {
                    "location": str(store.root),
                    "index": store.location.describe(),
                    "remote": store.is_remote,
                    "exists": store.exists,
                    "active": active,
                    "inactive": total - active,
                    "recorded_embedder": recorded,
                }
            embedder = self.core.embedder
            return {
                "embedder": {
                    "name": getattr(embedder, "name", "unknown"),
                    "model_id": getattr(embedder, "model_id", None),
                    "dim": self.core.dim,
                    "fallback_reasons": list(getattr(embedder, "fallback_reasons", []) or []),
                },
                "stores": stores,
                "session_id": self.core.session_id,
            }


def _check_writable(store: Store) -> None:
    """A store path blocked by a file or an unwritable directory is reported at open time."""
    import os

    path = store.root
    for candidate in (path, *path.parents):
        if candidate.exists():
            if not candidate.is_dir():
                raise StoreError(f"memory store path {path} is blocked: {candidate} is not a directory")
            if not os.access(candidate, os.W_OK | os.X_OK):
                raise StoreError(f"memory store directory {candidate} is not writable")
            return


def _lender(paths: ProjectPaths, settings: Settings) -> str | None:
    """Where a ``memagent mcp serve`` of this home lends its embedder (``None``: load our own)."""
    from memagent.embedding.shared import lending_address

    return lending_address(paths.home) if settings.shared_embedder else None


def _probe_embedder(embedder: Embedder) -> None:
    """A broken embedder is found at open time, not in the middle of the first turn."""
    dim = int(getattr(embedder, "dim", 0))
    name = getattr(embedder, "name", "?")
    try:
        vectors = embedder.embed(["memory probe"])
        shape = tuple(getattr(vectors, "shape", ()))
    except Exception as exc:
        raise MemoryUnavailable(f"embedding backend {name} is broken: {one_line(exc)}") from None
    if shape != (1, dim):
        raise MemoryUnavailable(f"embedding backend {name} returned vectors of shape {shape}, expected (1, {dim})")


__all__ = [
    "CITE_INSTRUCTION",
    "Hit",
    "ImportReport",
    "MemoryService",
    "MemoryUnavailable",
    "SaveResult",
    "format_block",
]
