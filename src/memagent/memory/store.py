"""One store (project or user): its card files, its catalog and its vector index, kept in step.

The files are the truth (``memory.cardfiles``). :meth:`Store.sync_files` brings the catalog up to
date from them without reading a file that did not change, in two depths:

- the **quick sync** (every search, list, …) never stamps every file. The folders' modification
  times move when a file is added, removed or replaced (an atomic save, ``git pull``, a checkout);
  memagent's own writers update the catalog and the recorded folder times in the same locked
  step (the catalog is their change journal), so only a change made by something else leaves
  them different. Then the folder listings (names only, no ``stat``) give what was added, removed
  or moved, and git, when the store is in a repository, gives every card file that differs
  between the commit the catalog last saw and ``HEAD`` (what a pull, merge or checkout changed);
  those files alone are read. Stores of at most ``INLINE_SCAN_MAX`` cards (a few ms) are also
  stamp-scanned here, at most every ``full_scan_interval`` seconds.
- the **full scan** (one ``stat`` per file, ~3 µs each) also catches a file rewritten in place,
  which moves no folder time. It runs on ``memagent memory reindex`` and ``sync``, and for larger
  stores only in the background: at session start, after a quick sync saw a foreign change, and
  then at most every ``BACKGROUND_SCAN_INTERVAL_S`` (see :meth:`Store.scan_wanted`). Its file
  system part (:meth:`Store.scan_files`) takes no lock; only applying what it found does.

:meth:`Store.sync_vectors` then embeds what the vector index lacks. A missing or damaged catalog
or index is rebuilt from the files, with a notice saying so; vectors of another variant of the
same model are never mixed in one index (``memory.index_embedder``).

Several processes share a store: every write to the catalog or the index happens under a
cross-process lock (``index/.lock``), waited for at most ``lock_wait`` seconds before giving up
with a one-line reason. Every write to the index bumps the catalog's ``vector_generation``; a
process that sees it moved (another process wrote vectors) reads what was appended to the index's
int8 mirror, or reconnects to Chroma once before using it (Chroma's in-process HNSW graph does
not follow other processes' writes), and remembers the generation it caught up with. A mirror
that is missing or behind the catalog is written afresh from Chroma, once, under the lock
(``memory.flat_mirror``).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from memagent.embedding.vector_cache import VectorCache
from memagent.fsutil import make_dirs, refuse_symlinks, tree_bytes
from memagent.memory import gitview
from memagent.memory.cardfiles import CardFiles, Scan, stamp_of
from memagent.memory.cards import MemoryCard
from memagent.memory.catalog import CATALOG_FILE, Catalog, CatalogError, digest_of, read_stamps
from memagent.memory.catalog_sync import apply_changes
from memagent.memory.errors import StoreBusy, StoreError
from memagent.memory.flat_mirror import MIRROR_FILE, Lender, committed_generation
from memagent.memory.index_embedder import check_index_embedder
from memagent.memory.layout import migrate_store, vectors_dir
from memagent.memory.store_forgetting import StoreForgetting
from memagent.memory.tombstones import Tombstones
from memagent.memory.vector_index import SQLITE_FILE, EmbedderInfo, EmbedderMismatch, StoreLocation, VectorIndex

if TYPE_CHECKING:
    from memagent.memory.provenance import Witness

Progress = Callable[[int, int], None]  # (done, total)
Embed = Callable[[Sequence[str]], list[list[float]]]
VectorItem = tuple[str, str, bool, Sequence[float]]  # (card id, content digest, active, vector)


def chunked(items: Sequence, size: int) -> Iterator[Sequence]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


INLINE_SCAN_MAX = 2_000  # a full stamp scan costs ~3 µs per file: inline only up to a few ms
FULL_SCAN_INTERVAL_S = 1.0
FULL_SCAN_SHARE = 20  # ... and runs at most once per 20 times its own cost (≤ 5% of the time)
BACKGROUND_SCAN_INTERVAL_S = 60.0  # larger stores: a background full scan at most this often
EMBED_BATCH = 64
CACHE_BATCH = 1000  # cached vectors written to the index per step
MIRROR_LOCK_WAIT = 0.5  # seconds a search waits for the lock to write a missing mirror
NEAR_DUPLICATE_CHECK_MAX = 200  # new cards from outside (a merge, a pull) checked per sync


class Store:
    """See the module docstring."""

    def __init__(
        self,
        label: str,
        root: Path,
        location: StoreLocation,
        *,
        lock_wait: float = 10.0,
        identity: str | None = None,
        witness: Witness | None = None,
        commit_vectors: bool = False,
    ) -> None:
        from filelock import FileLock

        self.label = label
        self.files = CardFiles(root, identity, witness)
        self.catalog = Catalog(self.files.index / CATALOG_FILE)
        self.location = location
        self.vectors: VectorIndex | None = None
        self.mirror_lender: Callable[[], Lender | None] | None = None  # who may search the mirror for us
        self.notices: list[str] = []
        self.lock_wait = lock_wait
        self._lock = FileLock(str(self.files.index / ".lock"), timeout=lock_wait)
        self._seen_generation: int | None = None
        self._mirror_wanted = False  # writing the mirror waits for a busy lock to be free
        self._last_full_scan = 0.0  # monotonic time of the last full scan by this process (0: none)
        self._scan_cost = 0.0
        self._looked_at: str | None = None  # folder times a quick sync already handled
        self._foreign_change = False  # a quick sync saw a change only a full scan can finish
        self.full_scan_interval = FULL_SCAN_INTERVAL_S
        self.reloads = 0  # how often Chroma was reconnected to follow another process
        self.commit_vectors = commit_vectors  # the vector cache beside the cards (see ``memory.layout``)
        self.tombstones = Tombstones(root)
        self.forgetting = StoreForgetting(self)  # erasing cards, and the tombstones that keep them erased

    @property
    def root(self) -> Path:
        return self.files.root

    @property
    def exists(self) -> bool:
        return self.files.shared.is_dir() or self.files.private.is_dir()

    @property
    def is_remote(self) -> bool:
        return self.location.url is not None

    def describe(self) -> str:
        where = str(self.root)
        return f"{where} (index on {self.location.url})" if self.is_remote else where

    # -- locking -------------------------------------------------------------------------

    @contextmanager
    def locked(self, wait: float | None = None) -> Iterator[None]:
        """The store's cross-process lock, waited for ``wait`` seconds (default ``lock_wait``);
        :class:`StoreBusy` when another process holds it longer."""
        from filelock import Timeout

        try:
            refuse_symlinks(self.root, self.files.index)  # a repository may ship local/ as a symlink
            make_dirs(self.files.index)
        except OSError as exc:
            raise StoreError(
                f"cannot create the memory index folder {self.files.index}: {exc.strerror or exc}"
            ) from None
        try:
            self._lock.acquire(timeout=wait)  # None: the lock's own timeout, lock_wait
        except Timeout:
            raise StoreBusy(
                f"the {self.label} memory store {self.root} is busy in another memagent process "
                f"(lock {self.files.index / '.lock'}); gave up after {self.lock_wait:.0f} s"
            ) from None
        try:
            yield
        finally:
            self._lock.release()

    # -- catalog -------------------------------------------------------------------------

    def open_catalog(self) -> Catalog:
        """The catalog, rebuilt (with a notice) when its file is damaged."""
        try:
            self.catalog.db()
        except CatalogError as exc:
            self.catalog.close()
            with self.locked():
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{self.catalog.path}{suffix}").unlink(missing_ok=True)
                if self.location.path is not None:  # its commits count the old catalog's generations
                    (self.location.path / MIRROR_FILE).unlink(missing_ok=True)
            self.notices.append(f"{exc}; rebuilding it from the card files")
            self.catalog.db()
        return self.catalog

    def sync_files(self, *, force: bool = False) -> int:
        """Bring the catalog up to date with the card files (see the module docstring): a full
        scan when ``force`` (or a due inline scan of a small store), else the quick sync.
        Returns how many cards changed."""
        if not self.exists and not self.catalog.exists:
            return 0
        catalog = self.open_catalog()
        if force or self._inline_scan_due(catalog):
            return self.apply_scan(self.scan_files())
        return self._quick_sync(catalog)

    def _inline_scan_due(self, catalog: Catalog) -> bool:
        if catalog.count() > INLINE_SCAN_MAX:
            return False
        wait = max(self.full_scan_interval, FULL_SCAN_SHARE * self._scan_cost)
        return time.monotonic() - self._last_full_scan >= wait

    def scan_wanted(self) -> bool:
        """A background full scan is due: none yet in this process, a quick sync saw a foreign
        change, or the last one is older than the background interval (and 20× its cost)."""
        if not self.exists:
            return False
        if self._last_full_scan == 0.0 or self._foreign_change:
            return True
        wait = max(BACKGROUND_SCAN_INTERVAL_S, FULL_SCAN_SHARE * self._scan_cost)
        return time.monotonic() - self._last_full_scan >= wait

    def _quick_sync(self, catalog: Catalog) -> int:
        folders = repr(self.files.folder_stamps())
        if catalog.get_meta("folders") == folders or folders == self._looked_at:
            return 0
        self._looked_at = folders
        self._foreign_change = True  # a file replaced in place of another is left to the full scan
        on_disk = self.files.listing()
        known = catalog.paths()
        changed = {cid for cid, path in on_disk.items() if known.get(cid) != path}
        removed = [cid for cid in known if cid not in on_disk]
        head = gitview.head_commit(self.root)
        recorded = catalog.get_meta("git_head")
        if head is not None and recorded is not None and head != recorded:
            pulled = gitview.changed_between(self.root, recorded, head, self.files.folders())
            if pulled is None:
                head = None  # git cannot tell: the full scan will
            else:
                changed.update(p.stem for p in pulled if p.stem in on_disk)
        found = {cid: (on_disk[cid], stamp_of(Path(on_disk[cid]))) for cid in changed}
        return apply_changes(
            self,
            catalog,
            {c: (p, st) for c, (p, st) in found.items() if st is not None},
            removed,
            folders=None,
            head=head if recorded is not None else None,
        )

    def scan_files(self) -> Scan:
        """The file-system half of a full scan, with the catalog's stamps read through a
        connection of its own: no lock, safe on any thread (a search never waits for it)."""
        started = time.monotonic()
        folders = repr(self.files.folder_stamps())
        head = gitview.head_commit(self.root)
        return Scan(folders, head, self.files.scan(), started, read_stamps(self.catalog.path))

    def apply_scan(self, scan: Scan) -> int:
        """The catalog half of a full scan: read the files whose stamps changed, drop the gone."""
        catalog = self.open_catalog()
        known = scan.known if scan.known is not None else catalog.stamps()
        on_disk = scan.found
        changed = {cid: entry for cid, entry in on_disk.items() if known.get(cid) != entry}
        removed = [cid for cid in known if cid not in on_disk]
        self._scan_cost = time.monotonic() - scan.started
        self._last_full_scan = time.monotonic()
        self._foreign_change = False
        # Folder times are recorded only when nothing moved them during the scan.
        settled = repr(self.files.folder_stamps()) == scan.folders
        return apply_changes(self, catalog, changed, removed, folders=scan.folders if settled else None, head=scan.head)

    def disk_usage(self) -> int:
        """Bytes the store uses: the card files as the catalog last saw them (no ``stat`` per
        card), plus every other file under the store (history, index, tombstones…)."""
        if not self.root.is_dir():
            return 0
        cards = self.catalog.card_bytes() if self.catalog.exists else 0
        return cards + tree_bytes(self.root, frozenset({self.files.shared, self.files.private}))

    def problems(self) -> list[str]:
        """One line per card file that could not be read (each is skipped)."""
        if not self.catalog.exists:
            return []
        return [reason for reason, _ in self.open_catalog().known_problems().values()]

    # -- vector index --------------------------------------------------------------------

    def vector_index(self, embedder: EmbedderInfo | None, *, create: bool) -> VectorIndex | None:
        """The vector index, opened (``None`` when it does not exist and ``create`` is false).

        A damaged local index is reported and rebuilt from the files.
        """
        if self.vectors is None:
            info = embedder or EmbedderInfo(model_id="unknown", name="unknown", dim=0)
            self.vectors = VectorIndex(self.location, info, self.mirror_lender)
        elif embedder is not None:
            self.vectors.embedder = embedder
        if self.vectors.opened:
            if self._mirror_wanted:
                self._rebuild_mirror(opened_at=self._seen_generation)
            return self.vectors
        if not self.vectors.exists and not create:
            return None
        if not self.vectors.exists and self._vectors_recorded():
            with self.locked(), self.catalog.transaction() as db:
                self.catalog.forget_vectors(db)  # the index folder was deleted: embed everything again
                db.execute("DELETE FROM meta WHERE key = 'embedder'")
        generation = self.catalog.generation() if self.catalog.exists else None
        try:
            opened = self.vectors.open(create=create, check_embedder=False, generation=generation)
        except EmbedderMismatch:
            raise
        except StoreError as exc:
            if self.is_remote:
                raise
            self._rebuild_damaged_index(str(exc))
            opened = self.vectors.open(create=True, check_embedder=False)
        if not opened:
            return None
        self._seen_generation = self.catalog.generation() if self.catalog.exists else 0
        if not self.vectors.mirror_ready and self.catalog.exists:
            self._rebuild_mirror(opened_at=generation)
        return self.vectors

    def _rebuild_mirror(self, opened_at: int | None) -> None:
        """Write the index's int8 mirror from Chroma (once: later writes keep it in step), so
        that the next searches, here and in other processes, need no Chroma. Chroma was opened
        at generation ``opened_at``; it is opened afresh if another process wrote since."""
        assert self.vectors is not None
        with ExitStack() as held:
            try:
                held.enter_context(self.locked(wait=MIRROR_LOCK_WAIT))
            except StoreBusy:
                self._mirror_wanted = True  # this search reads Chroma, the next one tries again
                return
            except StoreError:
                return  # a store this process cannot write: searches read Chroma
            self._mirror_wanted = False
            generation = self.catalog.generation()
            if self.vectors.rebuild_mirror(generation, reopen=generation != opened_at):
                self._seen_generation = generation

    def needs_index_library(self) -> bool:
        """A search will open Chroma: a remote index, or a local one whose mirror is missing
        or stale (so importing chromadb early pays off)."""
        if self.is_remote:
            return True
        if not self.vectors_on_disk():
            return False
        if self.vectors is not None and self.vectors.mirror_ready:
            return False
        assert self.location.path is not None
        committed = committed_generation(self.location.path / MIRROR_FILE)
        return committed is None or not self.catalog.exists or committed < self.catalog.generation()

    def vectors_on_disk(self) -> bool:
        """A local vector index exists (opening it imports chromadb)."""
        return self.location.path is not None and (self.location.path / SQLITE_FILE).exists()

    def _vectors_recorded(self) -> bool:
        """The catalog says the vector index holds vectors (of a real embedder)."""
        if not self.catalog.exists:
            return False
        recorded = self.catalog.get_meta("embedder")
        return recorded is not None and not recorded.endswith(":0")

    def _rebuild_damaged_index(self, reason: str) -> None:
        index_dir = self.location.path
        assert index_dir is not None
        with self.locked():
            for child in index_dir.iterdir():
                if child.name in (SQLITE_FILE, MIRROR_FILE) or (child.is_dir() and len(child.name) == 36):
                    shutil.rmtree(child) if child.is_dir() else child.unlink()
            with self.open_catalog().transaction() as db:
                self.catalog.forget_vectors(db)
        self.notices.append(f"{reason}; rebuilding the index from the card files")

    def follow_other_writers(self) -> None:
        """Reconnect once when another process wrote vectors since we last looked."""
        if self.vectors is None or not self.vectors.opened or not self.catalog.exists:
            return
        current = self.catalog.generation()
        if self._seen_generation is not None and current != self._seen_generation:
            self.vectors.reload(current)
            self.reloads += 1
            if not self.vectors.mirror_ready and not self.is_remote and self.vectors.embedder.dim > 0:
                self._rebuild_mirror(opened_at=current)  # a writer that does not keep it
        self._seen_generation = current

    def note_generation(self, generation: int) -> None:
        """This process wrote the index at ``generation`` (no reconnect needed to see it): the
        mirror's pending batch is committed at it."""
        self._seen_generation = generation
        if self.vectors is not None:
            self.vectors.commit(generation)

    def check_embedder(self, embedder: EmbedderInfo) -> None:
        """Refuse another model's index; drop another variant's (``memory.index_embedder``)."""
        check_index_embedder(self, embedder)

    def sync_vectors(
        self,
        embedder: EmbedderInfo,
        embed: Embed,
        *,
        progress: Progress | None = None,
        duplicate_cosine: float | None = None,
        use_cache: bool = True,
    ) -> int:
        """Index, move and delete what the vector index lacks (from the vector cache beside the
        cards when ``use_cache`` and it has them, else by embedding); returns how many were indexed."""
        if not self.catalog.exists:
            return 0
        self.check_embedder(embedder)
        total = self.catalog.pending_vectors()
        if not total and not self.catalog.vector_work(limit=0).deletes:
            self.follow_other_writers()
            return 0
        check_duplicates = duplicate_cosine is not None and 0 < total <= NEAR_DUPLICATE_CHECK_MAX
        done = 0
        cached = self.cached_vectors(embedder, self.catalog.pending_digests()) if use_cache else []
        for chunk in chunked(cached, CACHE_BATCH):
            self.store_vectors(
                embedder, chunk, remember=False, duplicate_cosine=duplicate_cosine if check_duplicates else None
            )
            done += len(chunk)
            if progress is not None:
                progress(min(done, total), total)
        while batch := self.next_vector_batch(embedder):
            vectors = embed([content for _, content, _ in batch]) if embedder.dim > 0 else [None] * len(batch)
            items = [(cid, digest_of(content), active, vec) for (cid, content, active), vec in zip(batch, vectors)]
            self.store_vectors(embedder, items, duplicate_cosine=duplicate_cosine if check_duplicates else None)
            done += len(batch)
            if progress is not None:
                progress(min(done, total), total)
        return done

    def vector_cache(self, embedder: EmbedderInfo) -> VectorCache:
        return VectorCache(vectors_dir(self.root, self.commit_vectors), embedder.model_id, embedder.dim)

    def cached_vectors(self, embedder: EmbedderInfo, pending: Sequence[tuple[str, str, bool]]) -> list[VectorItem]:
        """(id, digest, active, vector) of the pending (id, digest, active) whose vector the cache
        beside the cards holds (file reads only: no lock, no catalog)."""
        if embedder.dim == 0 or not pending:
            return []
        found = self.vector_cache(embedder).get({digest for _, digest, _ in pending})
        return [(cid, digest, active, found[digest]) for cid, digest, active in pending if digest in found]

    def next_vector_batch(self, embedder: EmbedderInfo, limit: int = EMBED_BATCH) -> list[tuple[str, str, bool]]:
        """Apply the pending deletes and moves (cheap), then return the next (id, content, active)
        to embed; empty when the index is complete."""
        if not self.catalog.exists:
            return []
        while work := self.catalog.vector_work(limit=limit):
            index = self.vector_index(embedder, create=embedder.dim > 0)
            if work.deletes or work.moves:
                with self.locked():
                    self.follow_other_writers()
                    self._apply_deletes_and_moves(index, work.deletes, work.moves, embedder)
            if work.embed:
                return work.embed
        return []

    def store_vectors(
        self,
        embedder: EmbedderInfo,
        items: Sequence[VectorItem],
        *,
        remember: bool = True,
        duplicate_cosine: float | None = None,
    ) -> None:
        """Write (id, content digest, active, vector) items and mark them indexed (a card edited
        meanwhile stays pending); ``remember`` adds shared cards' vectors to the cache beside the
        cards."""
        index = self.vector_index(embedder, create=embedder.dim > 0)
        with self.locked(), self.catalog.transaction() as db:
            self.follow_other_writers()
            if index is not None and embedder.dim > 0:
                index.upsert([(cid, vec, active) for cid, _, active, vec in items])
            self.catalog.mark_indexed(
                db, [(cid, active) for cid, _, active, _ in items], digests=[digest for _, digest, _, _ in items]
            )
            self.catalog.set_meta(db, "embedder", f"{embedder.model_id}:{embedder.dim}")
            self.note_generation(self.catalog.bump_generation(db))
            if duplicate_cosine is not None and index is not None:
                batch = [(cid, "", active) for cid, _, active, _ in items]
                self._note_near_duplicates(db, index, batch, [vec for *_, vec in items], duplicate_cosine)
            shared = self.catalog.shared_ids([cid for cid, *_ in items]) if remember and embedder.dim > 0 else set()
        if shared:
            self.vector_cache(embedder).put({digest: vec for cid, digest, _, vec in items if cid in shared})

    def _apply_deletes_and_moves(
        self, index: VectorIndex | None, deletes: list[str], moves: list[tuple[str, bool]], embedder: EmbedderInfo
    ) -> None:
        with self.catalog.transaction() as db:
            if index is not None and deletes:
                index.delete(deletes)
            self.catalog.mark_deleted(db, deletes)
            if moves:
                missing = set(index.move(moves)) if index is not None and embedder.dim > 0 else set()
                self.catalog.mark_indexed(db, [m for m in moves if m[0] not in missing])
                if missing:  # the vector is gone: embed it again
                    db.executemany("UPDATE cards SET vec_digest = NULL WHERE id = ?", [(i,) for i in missing])
            if deletes or moves:
                self.note_generation(self.catalog.bump_generation(db))

    def _note_near_duplicates(self, db, index: VectorIndex, batch, vectors, threshold: float) -> None:
        for (card_id, _, active), vector in zip(batch, vectors):
            if not active:
                continue
            for other, similarity in index.nearest_ids(vector, 2):
                if other != card_id and similarity >= threshold:
                    self.catalog.note_near_duplicate(db, card_id, other, similarity)

    # -- writing -------------------------------------------------------------------------

    def write(
        self,
        card: MemoryCard,
        private: bool,
        vector: Sequence[float] | None,
        embedder: EmbedderInfo | None,
        *,
        durable: bool = True,
    ) -> Path:
        """Write a card's file, its catalog row and (given a vector) its vector, under the lock."""
        return self.write_many([(card, private, vector)], embedder, durable=durable)[0]

    def write_many(
        self,
        items: Sequence[tuple[MemoryCard, bool, Sequence[float] | None]],
        embedder: EmbedderInfo | None,
        *,
        durable: bool = True,
    ) -> list[Path]:
        catalog = self.open_catalog()
        if embedder is not None and embedder.dim > 0:
            from memagent.memory.chroma_client import load_chromadb

            load_chromadb()  # seconds on a busy machine: not while holding the lock
        items = [(self.files.portable(card, private), private, vector) for card, private, vector in items]
        with self.locked():
            before = repr(self.files.folder_stamps())
            index = None
            if embedder is not None and embedder.dim > 0 and any(v is not None for _, _, v in items):
                index = self.vector_index(embedder, create=True)
                self.follow_other_writers()
            with catalog.transaction() as db:
                recorded = catalog.get_meta("folders")
                paths = self.files.write_many([(card, private) for card, private, _ in items], durable=durable)
                for (card, private, _), path in zip(items, paths):
                    catalog.put(db, card, path, stamp_of(path), private)
                indexed = [(c.id, v, c.active) for c, _, v in items if v is not None]
                if index is not None and indexed:
                    index.upsert(indexed)
                if embedder is not None and (indexed or embedder.dim == 0):
                    done = [(c.id, c.active) for c, _, v in items if v is not None or embedder.dim == 0]
                    catalog.mark_indexed(db, done)
                    catalog.set_meta(db, "embedder", f"{embedder.model_id}:{embedder.dim}")
                    self.note_generation(catalog.bump_generation(db))
                if recorded in (None, before):
                    catalog.set_meta(db, "folders", repr(self.files.folder_stamps()))
        if index is not None:
            self.vector_cache(embedder).put(
                {digest_of(c.content): v for c, private, v in items if v is not None and not private}
            )
        return paths

    def migrate_layout(self) -> list[str]:
        """Move local files of the earlier layout into ``local/`` (see ``memory.layout``)."""
        try:
            moved = migrate_store(self.root, commit_vectors=self.commit_vectors, lock_wait=self.lock_wait)
        except TimeoutError:
            raise StoreError(f"the {self.label} memory store {self.root} is busy in another memagent process") from None
        except OSError as exc:
            raise StoreError(f"cannot move the local files of {self.root} into local/: {exc.strerror or exc}") from None
        if moved:
            self.notices.append(f"moved the local memory files of {self.root} into local/ ({', '.join(moved)})")
        return moved

    def rebuild(self, embedder: EmbedderInfo, embed: Embed, progress: Progress | None = None) -> int:
        """Rebuild the catalog and the index from the files (``memagent memory reindex``)."""
        catalog = self.open_catalog()
        with self.locked():
            with catalog.transaction() as db:
                catalog.clear(db)
            if embedder.dim > 0 or self.vector_index(None, create=False) is not None:
                index = self.vector_index(embedder, create=True)
                assert index is not None
                index.embedder = embedder
                index.replace_all([])
        self.sync_files(force=True)
        self.sync_vectors(embedder, embed, progress=progress, use_cache=False)  # afresh: replaces the cache's lines
        return catalog.count()

    def close(self) -> None:
        if self.vectors is not None:
            self.vectors.close()
        self.catalog.close()


__all__ = ["EMBED_BATCH", "Progress", "Store"]
