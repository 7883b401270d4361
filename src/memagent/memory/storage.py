"""One store (project or user): its card files, its catalog and its vector index, kept in step.

The files are the truth (``memory.cardfiles``). :meth:`Store.sync_files` brings the catalog up to
date from them by file stamps: the folders' modification times tell cheaply whether a file was
added, removed or replaced; a full stamp scan (one ``stat`` per file) also catches files edited in
place, and runs on every sync of stores up to ``FULL_SCAN_MAX`` cards (at most once a second),
and for larger ones when the folders changed or a sync is forced. :meth:`Store.sync_vectors`
then embeds what the vector index lacks. A missing or damaged catalog or index is rebuilt from the
files, with a notice saying so.

Several processes share a store: every write to the catalog or the index happens under a
cross-process lock (``index/.lock``), waited for at most ``lock_wait`` seconds before giving up
with a one-line reason. A process that sees the index's generation moved (another process wrote
vectors) reconnects to Chroma once before using it (Chroma's in-process HNSW graph does not
follow other processes' writes) and remembers the generation it reconnected at.
"""

from __future__ import annotations

import json
import shutil
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from memagent.fsutil import atomic_write, make_dirs
from memagent.memory import arrivals
from memagent.memory.cardfiles import CardFileError, CardFiles, stamp_of
from memagent.memory.cards import MemoryCard, iso_utc, utc_now
from memagent.memory.catalog import CATALOG_FILE, Catalog, CatalogError
from memagent.memory.errors import StoreError
from memagent.memory.store import SQLITE_FILE, EmbedderInfo, EmbedderMismatch, StoreLocation, VectorIndex

if TYPE_CHECKING:
    from memagent.memory.provenance import Witness

Progress = Callable[[int, int], None]  # (done, total)
Embed = Callable[[Sequence[str]], list[list[float]]]

FULL_SCAN_MAX = 20_000  # a full stamp scan costs ~10 µs per file
FULL_SCAN_INTERVAL_S = 1.0
FULL_SCAN_SHARE = 20  # ... and runs at most once per 20 times its own cost (≤ 5% of the time)
EMBED_BATCH = 64
NEAR_DUPLICATE_CHECK_MAX = 200  # new cards from outside (a merge, a pull) checked per sync
TOMBSTONE_FILE = "tombstones.jsonl"


class Store:
    """See the module docstring."""

    def __init__(self, label: str, root: Path, location: StoreLocation, *, lock_wait: float = 10.0,
                 identity: str | None = None, witness: "Witness | None" = None) -> None:
        from filelock import FileLock

        self.label = label
        self.files = CardFiles(root, identity, witness)
        self.catalog = Catalog(self.files.index / CATALOG_FILE)
        self.location = location
        self.vectors: VectorIndex | None = None
        self.notices: list[str] = []
        self.lock_wait = lock_wait
        self._lock = FileLock(str(self.files.index / ".lock"), timeout=lock_wait)
        self._seen_generation: int | None = None
        self._last_full_scan = 0.0
        self._scan_cost = 0.0
        self.full_scan_interval = FULL_SCAN_INTERVAL_S
        self.reloads = 0  # how often Chroma was reconnected to follow another process

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
    def locked(self) -> Iterator[None]:
        from filelock import Timeout

        try:
            make_dirs(self.files.index)
        except OSError as exc:
            raise StoreError(f"cannot create the memory index folder {self.files.index}: {exc.strerror or exc}") from None
        try:
            self._lock.acquire()
        except Timeout:
            raise StoreError(
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
            self.notices.append(f"{exc}; rebuilding it from the card files")
            self.catalog.db()
        return self.catalog

    def sync_files(self, *, force: bool = False) -> int:
        """Bring the catalog up to date with the card files; returns how many cards changed."""
        if not self.exists and not self.catalog.exists:
            return 0
        catalog = self.open_catalog()
        folders = repr(self.files.folder_stamps())
        now = time.monotonic()
        wait = max(self.full_scan_interval, FULL_SCAN_SHARE * self._scan_cost)
        due = now - self._last_full_scan >= wait and catalog.count() <= FULL_SCAN_MAX
        if not force and not due and catalog.get_meta("folders") == folders:
            return 0
        on_disk = self.files.scan()
        known = catalog.stamps()
        self._scan_cost = time.monotonic() - now
        self._last_full_scan = time.monotonic()
        changed = [(cid, p, s) for cid, (p, s) in on_disk.items() if known.get(cid) != (str(p), s)]
        removed = [cid for cid in known if cid not in on_disk]
        problems = catalog.known_problems()
        gone_problems = [p for p in problems if not Path(p).exists()]
        if not changed and not removed and not gone_problems and catalog.get_meta("folders") == folders:
            return 0
        with self.locked(), catalog.transaction() as db:
            arrived = []
            for card_id, path, stamp in changed:
                if problems.get(str(path), ("", None))[1] == stamp:
                    continue  # still the same bad file: reported already
                try:
                    card = self.files.read(path)
                except CardFileError as exc:
                    catalog.note_problem(db, path, str(exc), stamp)
                    removed.append(card_id)
                    continue
                catalog.put(db, card, path, stamp, self.files.is_private(path))
                catalog.clear_problems(db, [str(path)])
                if card_id not in known:
                    arrived.append(card_id)
            arrivals.note(db, arrived)  # new files from outside still meet the correction rule
            catalog.remove(db, [cid for cid in removed if cid in known])
            catalog.clear_problems(db, gone_problems)
            catalog.set_meta(db, "folders", folders)
        return len(changed) + len(removed)

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
            self.vectors = VectorIndex(self.location, info)
        elif embedder is not None:
            self.vectors.embedder = embedder
        if self.vectors.opened:
            return self.vectors
        if not self.vectors.exists and not create:
            return None
        if not self.vectors.exists and self._vectors_recorded():
            with self.locked(), self.catalog.transaction() as db:
                self.catalog.forget_vectors(db)  # the index folder was deleted: embed everything again
                db.execute("DELETE FROM meta WHERE key = 'embedder'")
        try:
            opened = self.vectors.open(create=create, check_embedder=False)
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
        return self.vectors

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
                if child.name == SQLITE_FILE or (child.is_dir() and len(child.name) == 36):
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
            self.vectors.reload()
            self.reloads += 1
        self._seen_generation = current

    def check_embedder(self, embedder: EmbedderInfo) -> None:
        recorded = self.catalog.get_meta("embedder") if self.catalog.exists else None
        wanted = f"{embedder.model_id}:{embedder.dim}"
        if recorded is not None and recorded != wanted:
            raise EmbedderMismatch(
                f"the {self.label} memory index was built with {recorded.replace(':', ' (dim ')}) but the "
                f"active embedder is {embedder.describe()}; run `memagent memory reindex`"
            )

    def sync_vectors(self, embedder: EmbedderInfo, embed: Embed, *, progress: Progress | None = None,
                     duplicate_cosine: float | None = None) -> int:
        """Embed, move and delete what the vector index lacks; returns how many cards were embedded."""
        if not self.catalog.exists:
            return 0
        self.check_embedder(embedder)
        work = self.catalog.vector_work()
        if not work:
            self.follow_other_writers()
            return 0
        index = self.vector_index(embedder, create=embedder.dim > 0)
        total, done = len(work.embed), 0
        check_duplicates = duplicate_cosine is not None and 0 < total <= NEAR_DUPLICATE_CHECK_MAX
        with self.locked():
            self.follow_other_writers()
            self._apply_deletes_and_moves(index, work.deletes, work.moves, embedder)
        for start in range(0, total, EMBED_BATCH):
            batch = work.embed[start : start + EMBED_BATCH]
            vectors = embed([content for _, content, _ in batch]) if embedder.dim > 0 else []
            with self.locked(), self.catalog.transaction() as db:
                self.follow_other_writers()
                if index is not None and embedder.dim > 0:
                    index.upsert([(cid, vec, active) for (cid, _, active), vec in zip(batch, vectors)])
                self.catalog.mark_indexed(db, [(cid, active) for cid, _, active in batch])
                self.catalog.set_meta(db, "embedder", f"{embedder.model_id}:{embedder.dim}")
                self._seen_generation = self.catalog.bump_generation(db)
                if check_duplicates and index is not None:
                    self._note_near_duplicates(db, index, batch, vectors, duplicate_cosine or 1.0)
            done += len(batch)
            if progress is not None:
                progress(done, total)
        return total

    def _apply_deletes_and_moves(self, index: VectorIndex | None, deletes: list[str],
                                 moves: list[tuple[str, bool]], embedder: EmbedderInfo) -> None:
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
                self._seen_generation = self.catalog.bump_generation(db)

    def _note_near_duplicates(self, db, index: VectorIndex, batch, vectors, threshold: float) -> None:
        for (card_id, _, active), vector in zip(batch, vectors):
            if not active:
                continue
            for other, similarity in index.nearest_ids(vector, 2):
                if other != card_id and similarity >= threshold:
                    self.catalog.note_near_duplicate(db, card_id, other, similarity)

    # -- writing -------------------------------------------------------------------------

    def write(self, card: MemoryCard, private: bool, vector: Sequence[float] | None,
              embedder: EmbedderInfo | None, *, durable: bool = True) -> Path:
        """Write a card's file, its catalog row and (given a vector) its vector, under the lock."""
        return self.write_many([(card, private, vector)], embedder, durable=durable)[0]

    def write_many(self, items: Sequence[tuple[MemoryCard, bool, Sequence[float] | None]],
                   embedder: EmbedderInfo | None, *, durable: bool = True) -> list[Path]:
        catalog = self.open_catalog()
        paths = []
        if embedder is not None and embedder.dim > 0:
            import chromadb  # noqa: F401  (seconds on a busy machine: not while holding the lock)
        with self.locked():
            before = repr(self.files.folder_stamps())
            index = None
            if embedder is not None and embedder.dim > 0 and any(v is not None for _, _, v in items):
                index = self.vector_index(embedder, create=True)
                self.follow_other_writers()
            with catalog.transaction() as db:
                recorded = catalog.get_meta("folders")
                for card, private, _ in items:
                    path = self.files.write(card, private, durable=durable)
                    catalog.put(db, card, path, stamp_of(path), private)
                    paths.append(path)
                indexed = [(c.id, v, c.active) for c, _, v in items if v is not None]
                if index is not None and indexed:
                    index.upsert(indexed)
                if embedder is not None and (indexed or embedder.dim == 0):
                    done = [(c.id, c.active) for c, _, v in items if v is not None or embedder.dim == 0]
                    catalog.mark_indexed(db, done)
                    catalog.set_meta(db, "embedder", f"{embedder.model_id}:{embedder.dim}")
                    self._seen_generation = catalog.bump_generation(db)
                if recorded in (None, before):
                    catalog.set_meta(db, "folders", repr(self.files.folder_stamps()))
        return paths

    def erase(self, ids: Sequence[str]) -> list[str]:
        """Delete cards' files, catalog rows and vectors (every byte of a local index); a
        tombstone keeps each id and the time. Returns the ids erased."""
        catalog = self.open_catalog()
        with self.locked():
            for card_id in ids:
                self.files.delete(card_id)
            with catalog.transaction() as db:
                erased = catalog.remove(db, ids)
            index = self.vector_index(None, create=False)
            if index is not None and erased:
                self.follow_other_writers()
                index.delete(erased)
                index.purge(erased)
            with catalog.transaction() as db:
                catalog.mark_deleted(db, erased)
                catalog.set_meta(db, "folders", repr(self.files.folder_stamps()))
                self._seen_generation = catalog.bump_generation(db)
            catalog.erase_checkpoint()
            self._write_tombstones(erased)
        return erased

    def _write_tombstones(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        path = self.root / TOMBSTONE_FILE
        stamp = iso_utc(utc_now())
        existing = path.read_text(encoding="utf-8") if path.exists() else ""
        lines = [json.dumps({"id": i, "forgotten_at": stamp}) for i in ids]
        atomic_write(path, existing + "\n".join(lines) + "\n")

    def tombstoned(self) -> dict[str, str]:
        """Forgotten ids and when."""
        path = self.root / TOMBSTONE_FILE
        found: dict[str, str] = {}
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError:
            return found
        for line in lines:
            try:
                record = json.loads(line)
                found[str(record["id"])] = str(record.get("forgotten_at", ""))
            except (ValueError, KeyError, TypeError):
                continue
        return found

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
        self.sync_vectors(embedder, embed, progress=progress)
        return catalog.count()

    def close(self) -> None:
        if self.vectors is not None:
            self.vectors.close()
        self.catalog.close()


__all__ = ["EMBED_BATCH", "Progress", "Store", "TOMBSTONE_FILE"]
