"""Card storage in Chroma: one embedded database per store (project, user), or a Chroma server.

Layout of a store
    Two collections: ``<prefix>active`` holds the active cards and is the only one searched on
    the hot path; ``<prefix>inactive`` holds superseded, contradicted and archived cards. So a
    search never needs a ``where`` filter (DESIGN §11: filtered queries cost 16 ms at 10k cards and
    ~215 ms at 100k, unfiltered ones 2-5 ms). A status change moves the record across, vector
    included.

Vectors
    Always precomputed by memagent's embedder and passed as ``embeddings=``/``query_embeddings=``;
    no Chroma embedding function is ever attached (Chroma's default one downloads a model). The
    embedder's model id, name and dimension are recorded in each collection's metadata and a
    mismatch refuses to open (run ``memagent memory reindex``). Lexical-only mode (dimension 0)
    still needs a vector per record for Chroma: each card gets a fixed 4-d vector derived from its
    id, which is never queried.

Erasure
    Chroma keeps deleted text in its SQLite file: the write-ahead ``embeddings_queue`` table keeps
    the document and metadata of every add/update until its segments are flushed, FTS5 index pages
    keep tokens until merged, and freed pages keep bytes until vacuumed. :meth:`CardStore.purge`
    removes the queue rows of erased ids (keeping their delete markers so segments still replay
    correctly), merges the FTS index, vacuums and checkpoints. A Chroma *server* is purged only as
    far as its API allows (delete); erasing its disk is the server operator's job.

    Chroma's HNSW segment files carry a second leak: ``data_level0.bin`` is written from a buffer
    allocated for the index's full capacity but only initialised for the elements in use, so the
    unused tail holds whatever the process heap held (seen in tests: card texts, metadata). It is
    zeroed (:func:`scrub_hnsw_segments`) after every local write, every erasure and on close.
    Vectors of deleted cards stay in the graph (marked deleted) until ``memagent memory reindex``
    rebuilds it; they are numbers, not text. Segment directories of deleted collections (Chroma
    leaves them behind) are removed after a reindex or an erasure.

Nothing is created on disk until the first write: opening a project that never saved a memory
leaves no ``.memory/`` behind.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence
from urllib.parse import urlparse

from memagent.memory.cards import MemoryCard

SCHEMA_VERSION = 1
PAGE_SIZE = 1000  # rows per get(): Chroma fails on unbounded gets of large collections
ID_BATCH = 500  # ids per get()/delete() call
WRITE_BATCH = 1000  # records per add()
PLACEHOLDER_DIM = 4  # lexical-only mode: each record still needs a vector for Chroma
SQLITE_FILE = "chroma.sqlite3"
_DELETE_OPERATION = 3  # embeddings_queue.operation for a delete (0 add, 1 update, 2 upsert)
_HNSW_HEADER = struct.Struct("<IQQQQ")


def scrub_hnsw_segment(segment: Path) -> bool:
    """Zero the unused tail of one HNSW segment's ``data_level0.bin`` and ``length.bin``.

    The header (``header.bin``: u32 format version, then u64 offset_level0, max_elements,
    cur_element_count, size_data_per_element) says how many element slots are in use; bytes past
    them are never read by the index. Returns whether anything was zeroed. Files in an unknown
    format are left alone.
    """
    try:
        raw = (segment / "header.bin").read_bytes()
    except OSError:
        return False
    if len(raw) < _HNSW_HEADER.size:
        return False
    version, _offset, max_elements, count, size = _HNSW_HEADER.unpack_from(raw)
    if version != 1 or size <= 0 or count > max_elements:
        return False
    changed = _zero_tail(segment / "data_level0.bin", count * size)
    return _zero_tail(segment / "length.bin", count * 4) or changed


def _zero_tail(path: Path, start: int) -> bool:
    """Overwrite ``path`` from ``start`` to its end with zeros, unless it is zero already."""
    chunk = 1 << 20
    try:
        length = path.stat().st_size
        if length <= start:
            return False
        with path.open("r+b") as fh:
            fh.seek(start)
            if not any(fh.read(chunk).strip(b"\0") for _ in range(0, length - start, chunk)):
                return False
            fh.seek(start)
            for offset in range(start, length, chunk):
                fh.write(bytes(min(chunk, length - offset)))
            fh.flush()
            os.fsync(fh.fileno())
    except OSError:
        return False
    return True


_SEGMENT_DIR = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def remove_orphan_segments(directory: Path) -> int:
    """Delete segment directories no collection uses any more (Chroma leaves them behind when
    a collection is deleted, vectors included). Returns how many were removed."""
    import shutil

    db_path = directory / SQLITE_FILE
    if not db_path.exists():
        return 0
    try:
        db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30.0)
        try:
            live = {row[0] for row in db.execute("SELECT id FROM segments")}
        finally:
            db.close()
    except sqlite3.Error:
        return 0
    removed = 0
    for child in directory.iterdir():
        if child.is_dir() and _SEGMENT_DIR.match(child.name) and child.name not in live:
            shutil.rmtree(child, ignore_errors=True)
            removed += 1
    return removed


def scrub_hnsw_segments(directory: Path) -> int:
    """Scrub every segment directory under a local store; returns how many files changed."""
    return sum(scrub_hnsw_segment(header.parent) for header in directory.glob("*/header.bin"))


class StoreError(Exception):
    """The store cannot be used; ``str()`` is a one-line reason."""


class EmbedderMismatch(StoreError):
    """The store's vectors come from another embedding model or dimension."""


@dataclass(frozen=True)
class EmbedderInfo:
    """What a store records about the vectors it holds."""

    model_id: str
    name: str
    dim: int

    @classmethod
    def of(cls, embedder: Any) -> "EmbedderInfo":
        name = str(getattr(embedder, "name", "unknown"))
        model_id = getattr(embedder, "model_id", None) or name.split("/")[0]
        return cls(model_id=str(model_id), name=name, dim=int(getattr(embedder, "dim", 0)))

    def metadata(self) -> dict[str, Any]:
        return {
            "hnsw:space": "cosine",
            "memagent_schema": SCHEMA_VERSION,
            "embedder_model": self.model_id,
            "embedder": self.name,
            "embedder_dim": self.dim,
        }

    def describe(self) -> str:
        return f"{self.name} (dim {self.dim})"


def placeholder_vector(card_id: str) -> list[float]:
    """A fixed unit vector per id, for lexical-only stores (never used for ranking)."""
    digest = hashlib.sha256(card_id.encode()).digest()
    values = [v / 2**31 - 1.0 for v in struct.unpack("<4I", digest[:16])]
    norm = sum(v * v for v in values) ** 0.5 or 1.0
    return [v / norm for v in values]


def _slug(text: str) -> str:
    slug = re.sub(r"[^a-zA-Z0-9]+", "-", text).strip("-").lower()
    return slug[:60] or "project"


@dataclass(frozen=True)
class StoreLocation:
    """Where one store lives: a local directory or a Chroma server URL, plus collection names."""

    label: str  # "project" or "user"
    path: Path | None = None
    url: str | None = None
    prefix: str = "memagent_"

    @classmethod
    def local(cls, label: str, path: Path) -> "StoreLocation":
        return cls(label=label, path=path)

    @classmethod
    def remote(cls, label: str, url: str, project_root: Path) -> "StoreLocation":
        """On a shared server each project gets collections named after its directory."""
        return cls(label=label, url=url, prefix=f"memagent-{_slug(project_root.name)}_")

    def describe(self) -> str:
        return self.url if self.url else str(self.path)


def _chroma_settings():
    import chromadb

    return chromadb.Settings(anonymized_telemetry=False, allow_reset=False)


def _http_client(url: str):
    import chromadb

    parsed = urlparse(url if "://" in url else f"http://{url}")
    if not parsed.hostname:
        raise StoreError(f"MEMAGENT_CHROMA_URL {url!r} has no host")
    ssl = parsed.scheme == "https"
    port = parsed.port or (443 if ssl else 8000)
    client = chromadb.HttpClient(host=parsed.hostname, port=port, ssl=ssl, settings=_chroma_settings())
    client.heartbeat()
    return client


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class CardStore:
    """One store: an active and an inactive collection of cards with precomputed vectors."""

    def __init__(self, location: StoreLocation, embedder: EmbedderInfo) -> None:
        self.location = location
        self.embedder = embedder
        self._client: Any = None
        self._active: Any = None
        self._inactive: Any = None

    # -- opening -------------------------------------------------------------------------

    @property
    def is_remote(self) -> bool:
        return self.location.url is not None

    @property
    def exists(self) -> bool:
        """A remote store always "exists"; a local one once its directory holds a database."""
        if self.is_remote:
            return True
        assert self.location.path is not None
        return (self.location.path / SQLITE_FILE).exists()

    @property
    def opened(self) -> bool:
        return self._active is not None

    def open(self, *, create: bool = False, check_embedder: bool = True) -> bool:
        """Connect if the store exists (or ``create``); ``False`` when there is nothing to open.

        Raises :class:`StoreError` with a one-line reason for an unusable store and
        :class:`EmbedderMismatch` when the stored vectors are from another model.
        """
        if self.opened:
            return True
        if not self.exists and not create:
            self._check_local_path()
            return False
        try:
            self._client = self._make_client(create)
            self._active = self._collection("active")
            self._inactive = self._collection("inactive")
        except StoreError:
            self._reset()
            raise
        except Exception as exc:  # chromadb raises many kinds; all mean "unusable"
            self._reset()
            raise StoreError(f"memory store at {self.location.describe()} cannot be opened: {_one_line(exc)}") from None
        if check_embedder:
            self.check_embedder()
        return True

    def _check_local_path(self) -> None:
        path = self.location.path
        if path is None:
            return
        for candidate in (path, *path.parents):
            if candidate.exists():
                if not candidate.is_dir():
                    raise StoreError(f"memory store path {path} is blocked: {candidate} is not a directory")
                if not os.access(candidate, os.W_OK | os.X_OK):
                    raise StoreError(f"memory store directory {candidate} is not writable")
                return

    def _make_client(self, create: bool):
        if self.is_remote:
            assert self.location.url is not None
            return _http_client(self.location.url)
        import chromadb

        path = self.location.path
        assert path is not None
        self._check_local_path()
        if create:
            try:
                path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create memory store {path}: {exc.strerror or exc}") from None
        return chromadb.PersistentClient(path=str(path), settings=_chroma_settings())

    def _collection(self, kind: str):
        """Get the collection, creating it (with this embedder recorded) only when missing.

        Never ``get_or_create`` with metadata on an existing collection: the recorded embedder
        must stay what the vectors were made with.
        """
        name = f"{self.location.prefix}{kind}"
        try:
            return self._client.get_collection(name, embedding_function=None)
        except Exception as exc:
            if type(exc).__name__ != "NotFoundError" and "does not exist" not in str(exc):
                raise
        return self._client.get_or_create_collection(name, embedding_function=None, metadata=self.embedder.metadata())

    def stored_embedder(self) -> EmbedderInfo | None:
        meta = (self._active.metadata or {}) if self._active is not None else {}
        if "embedder_dim" not in meta:
            return None
        return EmbedderInfo(
            model_id=str(meta.get("embedder_model", "")),
            name=str(meta.get("embedder", "")),
            dim=int(meta.get("embedder_dim", -1)),
        )

    def check_embedder(self) -> None:
        stored = self.stored_embedder()
        if stored is None:
            return
        if stored.model_id != self.embedder.model_id or stored.dim != self.embedder.dim:
            raise EmbedderMismatch(
                f"the {self.location.label} memory store was built with {stored.describe()} but the active "
                f"embedder is {self.embedder.describe()}; run `memagent memory reindex`"
            )

    def _reset(self) -> None:
        self._client = self._active = self._inactive = None

    def scrub(self) -> None:
        """Zero uninitialised bytes Chroma wrote into HNSW files (local stores only)."""
        if not self.is_remote and self.location.path is not None and self.location.path.is_dir():
            scrub_hnsw_segments(self.location.path)

    def reload(self) -> None:
        """Reconnect so that writes made by another process reach this process's vector index.

        Chroma's embedded HNSW index lives in each process's memory and does not follow other
        processes' writes; a fresh client replays them from the SQLite log. (When another
        client in this process shares the database, Chroma keeps the shared one alive.)
        """
        if self.is_remote or not self.opened:
            return
        self.close()
        self.open(check_embedder=False)

    def close(self) -> None:
        client = self._client
        was_open = self.opened
        self._reset()
        if was_open:
            self.scrub()
        close = getattr(client, "close", None)
        if close is not None and not self.is_remote:
            try:
                close()
            except Exception:  # closing is best effort: the process may be exiting anyway
                return

    # -- reading -------------------------------------------------------------------------

    def _collections(self, active: bool, inactive: bool) -> list[Any]:
        if not self.opened:
            return []
        return [c for c, wanted in ((self._active, active), (self._inactive, inactive)) if wanted]

    def counts(self) -> tuple[int, int]:
        if not self.opened:
            return 0, 0
        return self._active.count(), self._inactive.count()

    def get(self, ids: Sequence[str]) -> dict[str, MemoryCard]:
        """The cards among ``ids`` that exist here, active or not."""
        found: dict[str, MemoryCard] = {}
        wanted = list(dict.fromkeys(ids))
        for collection in self._collections(True, True):
            missing = [i for i in wanted if i not in found]
            for start in range(0, len(missing), ID_BATCH):
                batch = missing[start : start + ID_BATCH]
                result = collection.get(ids=batch, include=["documents", "metadatas"])
                for card in _cards_of(result):
                    found[card.id] = card
        return found

    def iter_records(
        self, *, active: bool = True, inactive: bool = True, documents: bool = True
    ) -> Iterator[tuple[str, str | None, dict[str, Any]]]:
        """Every (id, document, metadata), page by page."""
        include = ["metadatas", "documents"] if documents else ["metadatas"]
        for collection in self._collections(active, inactive):
            offset = 0
            while True:
                page = collection.get(limit=PAGE_SIZE, offset=offset, include=include)
                ids = page.get("ids") or []
                docs = page.get("documents") or [None] * len(ids)
                metas = page.get("metadatas") or [{}] * len(ids)
                for card_id, doc, meta in zip(ids, docs, metas):
                    yield card_id, doc, dict(meta or {})
                if len(ids) < PAGE_SIZE:
                    break
                offset += PAGE_SIZE

    def iter_cards(self, *, active: bool = True, inactive: bool = True) -> Iterator[MemoryCard]:
        for card_id, doc, meta in self.iter_records(active=active, inactive=inactive):
            try:
                yield MemoryCard.from_record(card_id, doc, meta)
            except ValueError:
                continue  # a record another tool wrote badly is skipped, never fatal

    def query(self, vectors: Sequence[Sequence[float]], n: int) -> list[list[tuple[MemoryCard, float]]]:
        """Nearest active cards per query vector as (card, cosine similarity), best first."""
        return self._query(self._active, vectors, n)

    def query_inactive(self, vectors: Sequence[Sequence[float]], n: int) -> list[list[tuple[MemoryCard, float]]]:
        """Like :meth:`query` over superseded, contradicted and archived cards."""
        return self._query(self._inactive, vectors, n)

    def nearest_ids(self, vector: Sequence[float], n: int, *, inactive: bool = False) -> list[tuple[str, float]]:
        """(id, cosine similarity) of the nearest cards, best first: the search hot path.

        Only ids and distances come back (hydrating documents and metadata triples the cost of
        a query); the caller knows the cards' signals already and fetches just its winners.
        """
        collection = self._inactive if inactive else self._active
        if not self.opened or self.embedder.dim == 0:
            return []
        tolist = getattr(vector, "tolist", None)
        result = collection.query(
            query_embeddings=[tolist() if tolist is not None else [float(x) for x in vector]],
            n_results=n,
            include=["distances"],
        )
        return [(card_id, 1.0 - float(dist)) for card_id, dist in zip(result["ids"][0], result["distances"][0])]

    def _query(self, collection: Any, vectors: Sequence[Sequence[float]], n: int) -> list[list[tuple[MemoryCard, float]]]:
        if not self.opened or self.embedder.dim == 0 or not len(vectors):
            return [[] for _ in vectors]
        result = collection.query(
            query_embeddings=[list(map(float, v)) for v in vectors],
            n_results=n,
            include=["documents", "metadatas", "distances"],
        )
        out: list[list[tuple[MemoryCard, float]]] = []
        for ids, docs, metas, dists in zip(
            result["ids"], result["documents"], result["metadatas"], result["distances"]
        ):
            row = []
            for card_id, doc, meta, dist in zip(ids, docs, metas, dists):
                try:
                    row.append((MemoryCard.from_record(card_id, doc, meta), 1.0 - float(dist)))
                except ValueError:
                    continue
            out.append(row)
        return out

    def vectors(self, ids: Sequence[str]) -> dict[str, list[float]]:
        """Stored vectors by id (active or inactive)."""
        found: dict[str, list[float]] = {}
        for collection in self._collections(True, True):
            missing = [i for i in ids if i not in found]
            for start in range(0, len(missing), ID_BATCH):
                result = collection.get(ids=missing[start : start + ID_BATCH], include=["embeddings"])
                embeddings = result.get("embeddings")
                if embeddings is None:
                    continue
                for card_id, vector in zip(result["ids"], embeddings):
                    found[card_id] = [float(x) for x in vector]
        return found

    def version_token(self) -> tuple:
        """Changes whenever another writer changed the store (cheap: a stat, or two counts)."""
        if self.is_remote:
            return self.counts() if self.opened else (0, 0)
        assert self.location.path is not None
        try:
            st = (self.location.path / SQLITE_FILE).stat()
        except OSError:
            return (0, 0)
        return (st.st_mtime_ns, st.st_size)

    # -- writing -------------------------------------------------------------------------

    def _vector_for(self, card: MemoryCard, vector: Sequence[float] | None) -> list[float]:
        if self.embedder.dim == 0:
            return placeholder_vector(card.id)
        if vector is None or len(vector) != self.embedder.dim:
            raise StoreError(f"card {card.id} has no {self.embedder.dim}-d vector")
        tolist = getattr(vector, "tolist", None)  # numpy rows convert in C
        return tolist() if tolist is not None else [float(x) for x in vector]

    def add(self, cards: Sequence[MemoryCard], vectors: Sequence[Sequence[float] | None]) -> None:
        """Add cards (each to the collection matching its status)."""
        self.open(create=True)
        for active in (True, False):
            chosen = [(c, v) for c, v in zip(cards, vectors) if c.active == active]
            collection = self._active if active else self._inactive
            for start in range(0, len(chosen), WRITE_BATCH):
                batch = chosen[start : start + WRITE_BATCH]
                collection.add(
                    ids=[c.id for c, _ in batch],
                    documents=[c.content for c, _ in batch],
                    metadatas=[c.to_metadata() for c, _ in batch],
                    embeddings=[self._vector_for(c, v) for c, v in batch],
                )
        self.scrub()

    def update(self, card: MemoryCard, previous_status: str) -> None:
        """Write a changed card; a change between active and inactive moves the record."""
        was_active = previous_status == "active"
        if card.active == was_active:
            target = self._active if card.active else self._inactive
            target.update(ids=[card.id], metadatas=[card.to_metadata()])
            return
        source = self._active if was_active else self._inactive
        target = self._active if card.active else self._inactive
        stored = source.get(ids=[card.id], include=["embeddings"])
        embeddings = stored.get("embeddings")
        if embeddings is None or not len(embeddings):
            raise StoreError(f"card {card.id} is missing from the {self.location.label} store")
        target.add(
            ids=[card.id],
            documents=[card.content],
            metadatas=[card.to_metadata()],
            embeddings=[[float(x) for x in embeddings[0]]],
        )
        source.delete(ids=[card.id])
        self.scrub()

    def delete(self, ids: Iterable[str]) -> list[str]:
        """Delete these ids from both collections; returns the ids that existed."""
        wanted = list(dict.fromkeys(ids))
        removed: list[str] = []
        for collection in self._collections(True, True):
            for start in range(0, len(wanted), ID_BATCH):
                batch = wanted[start : start + ID_BATCH]
                present = collection.get(ids=batch, include=[])["ids"]
                if present:
                    collection.delete(ids=list(present))
                    removed.extend(present)
        return removed

    def purge(self, ids: Sequence[str]) -> None:
        """Erase every byte of deleted records left in the local SQLite file (see module doc)."""
        if self.is_remote or not ids:
            return
        assert self.location.path is not None
        db_path = self.location.path / SQLITE_FILE
        if not db_path.exists():
            return
        try:
            db = sqlite3.connect(str(db_path), timeout=30.0, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {db_path} to erase forgotten memories: {exc}") from None
        try:
            db.execute("PRAGMA secure_delete = ON")
            unique = list(dict.fromkeys(ids))
            for start in range(0, len(unique), ID_BATCH):
                batch = unique[start : start + ID_BATCH]
                marks = ",".join("?" * len(batch))
                db.execute(
                    f"DELETE FROM embeddings_queue WHERE id IN ({marks}) AND operation != ?",
                    (*batch, _DELETE_OPERATION),
                )
            if _has_table(db, "embedding_fulltext_search"):
                db.execute("INSERT INTO embedding_fulltext_search(embedding_fulltext_search) VALUES('optimize')")
            db.execute("VACUUM")
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as exc:
            raise StoreError(f"could not fully erase forgotten memories from {db_path}: {exc}") from None
        finally:
            db.close()
        remove_orphan_segments(self.location.path)
        self.scrub()

    # -- reindexing ----------------------------------------------------------------------

    def replace_all(self, cards: Sequence[MemoryCard], vectors: Sequence[Sequence[float] | None]) -> None:
        """Rebuild both collections with new vectors (and this store's embedder recorded).

        The new collections are filled first under temporary names and swapped in afterwards,
        so a failure half-way leaves the old ones intact.
        """
        self.open(create=True, check_embedder=False)
        client = self._client
        temp = {kind: f"{self.location.prefix}{kind}-reindex" for kind in ("active", "inactive")}
        for name in temp.values():
            _drop_collection(client, name)
        fresh = {
            kind: client.create_collection(name, embedding_function=None, metadata=self.embedder.metadata())
            for kind, name in temp.items()
        }
        for active, kind in ((True, "active"), (False, "inactive")):
            chosen = [(c, v) for c, v in zip(cards, vectors) if c.active == active]
            for start in range(0, len(chosen), WRITE_BATCH):
                batch = chosen[start : start + WRITE_BATCH]
                fresh[kind].add(
                    ids=[c.id for c, _ in batch],
                    documents=[c.content for c, _ in batch],
                    metadatas=[c.to_metadata() for c, _ in batch],
                    embeddings=[self._vector_for(c, v) for c, v in batch],
                )
        for kind, collection in fresh.items():
            final = f"{self.location.prefix}{kind}"
            _drop_collection(client, final)
            collection.modify(name=final)
        self._active = client.get_collection(f"{self.location.prefix}active", embedding_function=None)
        self._inactive = client.get_collection(f"{self.location.prefix}inactive", embedding_function=None)
        if not self.is_remote and self.location.path is not None:
            remove_orphan_segments(self.location.path)
        self.scrub()


def _drop_collection(client: Any, name: str) -> None:
    try:
        client.delete_collection(name)
    except Exception as exc:
        if type(exc).__name__ not in ("NotFoundError", "InvalidCollectionException", "ValueError"):
            raise


def _has_table(db: sqlite3.Connection, name: str) -> bool:
    row = db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone()
    return row is not None


def _cards_of(result: dict[str, Any]) -> Iterator[MemoryCard]:
    ids = result.get("ids") or []
    docs = result.get("documents") or [None] * len(ids)
    metas = result.get("metadatas") or [{}] * len(ids)
    for card_id, doc, meta in zip(ids, docs, metas):
        try:
            yield MemoryCard.from_record(card_id, doc, meta)
        except ValueError:
            continue


__all__ = [
    "CardStore",
    "EmbedderInfo",
    "EmbedderMismatch",
    "StoreError",
    "StoreLocation",
    "placeholder_vector",
]
