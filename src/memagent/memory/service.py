"""The memory service: the single entry point for the agent, the memory tools and the CLI.

It routes cards to their store (user cards to ``$MEMAGENT_HOME/memory/``, project and session
cards to ``<project>/.memory/``), keeps each store's catalog and vector index in step with its
card files (the truth: see ``memory.cardfiles`` and ``memory.storage``), runs the write gate
before anything is written, retrieves with dense + lexical ranking over active cards, formats
citable context, and erases forgotten cards from every byte of a local store.

The parts live in their own modules, stacked as mixins over :class:`memory.core.MemoryCore`:
``saving`` (gate, duplicates, corrections), ``reading`` (search, list, stats), ``injection``
(per-turn blocks, citations), ``erasure`` (forget) and ``transfer`` (import/export).

Failures of the store or the embedder surface as :class:`MemoryUnavailable` with a one-line
reason, so the agent can carry on with memory off and the CLI can print the reason and exit 1.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from memagent.errors import one_line
from memagent.fsutil import UnsafePath, refuse_symlinks
from memagent.memory.cardfiles import INDEX_DIR, PRIVATE_DIR, CardFileError
from memagent.memory.cards import MemoryCard
from memagent.memory.core import INLINE_EMBED_MAX, MemoryKnobs
from memagent.memory.embeddings import Embedder, EmbedderHandle
from memagent.memory.errors import MemoryUnavailable, StoreError
from memagent.memory.gate import GateConfig
from memagent.memory.identity import project_identity
from memagent.memory.injection import CITE_INSTRUCTION, format_block
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
from memagent.memory.reading import Hit
from memagent.memory.saving import SaveResult
from memagent.memory.storage import Progress, Store
from memagent.memory.store import EmbedderInfo, StoreLocation
from memagent.memory.transfer import ImportReport, Transfer

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


class MemoryService(Transfer):
    """See the module docstring. Thread-safe: one lock serialises every operation."""

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
            else EmbedderHandle(settings.embedder, cache_dir=paths.home / "cache")
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

        def erase_elsewhere(ids: list[str]) -> None:
            from memagent.memory.learning import on_forget

            on_forget(paths, ids)

        service = cls(
            stores,
            handle,
            session_id=session_id,
            project_root_id=identity,
            gate=gate or gate_of(settings),
            knobs=knobs_of(settings),
            on_forget=erase_elsewhere,
        )
        service.project_root = paths.root
        service.witness = witness
        service.hold_repository = hold_repository_cards
        service.count_writes_on_disk(paths.memory)  # in .memory/local/index (memory.layout)
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

        for store in self._stores.values():
            _check_writable(store)
            with self._guard("open"):
                store.migrate_layout()
                migrate_legacy_store(store)
        if settings.chroma_url:
            with self._guard("open"):
                self._stores["project"].vector_index(None, create=False)  # an unreachable server fails here

    def _check_indexes(self, info: EmbedderInfo) -> None:
        with self._guard("open"):
            for store in self._stores_in_use():
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
        self._closing = True
        with self._lock:
            for store in self._stores.values():
                store.close()
            if self.witness is not None:
                self.witness.ledger.close()

    def _refresh_provenance(self) -> None:
        """A catalog built before the ledger existed holds cards as their files claimed them:
        read them once more, as earned."""
        store = self._stores["project"]
        if not (store.exists or store.catalog.exists):
            return
        with self._lock, self._guard("open"):
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
        self.inline_embed_max = INLINE_EMBED_MAX if upkeep else None
        with self._lock, self._guard("warm-up"):
            if self._closing:
                return
            for store in self._stores_in_use():
                store.sync_files()
        if not prefetch:
            return
        info = self._embedder_info()  # loads the embedder (without the lock: a search may wait for it)
        if info.dim > 0 and any(s.is_remote or s.vectors_on_disk() for s in self._stores_in_use()):
            import chromadb  # noqa: F401  (the import is most of opening the index: not under the lock)
        with self._lock, self._guard("warm-up"):
            if self._closing:
                return
            for store in self._stores_in_use():
                store.check_embedder(info)
                store.vector_index(info, create=False)
        if not upkeep:
            return
        from memagent.memory.timeline import warm_up as read_a_date

        read_a_date()  # dateparser's import and first parse (half a second) off the first question
        self.index_pending()
        if not self._closing:
            self.full_scan()
        if not self._closing:
            self.maintain()

    def maintain(self) -> int:
        """Erase session cards of other sessions older than the session-card lifetime, and archive
        active cards unused for ``archive_after_days`` whose confidence is below the threshold.
        Returns how many cards changed."""
        from memagent.memory.cards import iso_utc, utc_now

        now = utc_now()
        expiry = iso_utc(now - timedelta(days=self.knobs.session_card_days))
        old = iso_utc(now - timedelta(days=self.knobs.archive_after_days))
        expired = self.forget_where(
            "scope = 'session' AND scope_id != ? AND COALESCE(last_used_at, created_at) < ?",
            [self.session_id or "", expiry],
        )
        with self._lock, self._guard("archive"):
            stale = [
                i
                for s in self._stores_in_use()
                for i in s.open_catalog().ids_where(
                    "active = 1 AND confidence < ? AND COALESCE(last_used_at, created_at) < ?",
                    [self.knobs.archive_below_confidence, old],
                )
            ]
        for card_id in stale:
            self.update_card(card_id, status="archived")
        return len(expired.erased) + len(stale)

    def reindex(self, progress: Progress | None = None) -> int:
        """Rebuild every store's catalog and index from the card files with the current embedder."""
        with self._lock, self._guard("reindex"):
            info = self._embedder_info()
            return sum(
                store.rebuild(info, self._embed_all, progress)
                for store in self._stores.values()
                if store.exists or store.catalog.exists
            )

    def sync(self) -> None:
        """Bring every index up to date with the files now (a full stamp scan)."""
        with self._lock, self._guard("sync"):
            self._sync(vectors=False, force=True)

    def pending_index_work(self) -> int:
        """How many cards the next search must embed (a clone, a deleted index, a pull)."""
        with self._lock, self._guard("sync"):
            self._sync(vectors=False)
            return sum(s.open_catalog().pending_vectors() for s in self._stores_in_use())

    def near_duplicates(self) -> list[tuple[str, str, float]]:
        """Pairs of active cards a sync found saying the same thing (after a merge, a pull)."""
        with self._lock, self._guard("read"):
            pairs = [p for s in self._stores_in_use() if s.catalog.exists for p in s.catalog.near_duplicates()]
            entries = {}
            for s in self._stores_in_use():
                entries.update(s.catalog.entries([i for pair in pairs for i in pair[:2]]))
            return [p for p in pairs if all(i in entries and entries[i].status == "active" for i in p[:2])]

    def merge_near_duplicate(self, keep_id: str, drop_id: str) -> bool:
        """Resolve a near-duplicate pair: ``drop_id`` becomes superseded by ``keep_id``, whose
        card keeps the other's provenance. Returns whether both cards were there."""
        with self._lock, self._guard("merge"):
            cards = self._get_many([keep_id, drop_id])
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
        with self._lock, self._guard("merge"):
            for store in self._stores_in_use():
                with store.locked(), store.open_catalog().transaction() as db:
                    store.catalog.drop_near_duplicate(db, keep_id, drop_id)
        return True

    def repository_cards(self, *, every_one: bool) -> list[Standing]:
        """Project card files this machine did not write, or that changed since (see
        ``memory.provenance``): what each claims and what it earned; ``every_one``, or only those
        that claim more than they earned. Newest first."""
        store = self._stores["project"]
        with self._lock, self._guard("read"):
            self._sync(vectors=False)
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
                earned = self.witness.earned(claimed, data) if self.witness is not None else claimed
                standing = Standing(claimed, earned, path)
                if earned.source == REPOSITORY and (every_one or standing.overclaims):
                    found.append(standing)
            return found

    def accept(self, memory_id: str) -> MemoryCard | None:
        """The user vouches for a repository card: it stands as its file says from now on (a
        card memagent itself marked as from the repository becomes an imported one). ``None``
        when there is no such project card."""
        store = self._stores["project"]
        with self._lock, self._guard("accept"):
            path = store.files.locate(memory_id)
            if path is None or self.witness is None:
                return None
            card, data = store.files.read_with_bytes(path)
            if card.source == REPOSITORY:
                card = card.model_copy(update={"source": IMPORT})
                store.write(card, store.files.is_private(path), None, None)
            else:
                self.witness.wrote(card, data, how=REVIEW)
                refresh_catalog(store, [memory_id])
            return card

    def backend_info(self) -> dict[str, Any]:
        """For `memagent doctor`: where the stores are, the embedder, and card counts."""
        with self._lock, self._guard("status"):
            stores = {}
            for label, store in self._stores.items():
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
            embedder = self.embedder
            return {
                "embedder": {
                    "name": getattr(embedder, "name", "unknown"),
                    "model_id": getattr(embedder, "model_id", None),
                    "dim": self.dim,
                    "fallback_reasons": list(getattr(embedder, "fallback_reasons", []) or []),
                },
                "stores": stores,
                "session_id": self.session_id,
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
