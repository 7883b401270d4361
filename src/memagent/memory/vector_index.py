"""The vector index of a store: Chroma, holding only ids and vectors (the card files hold the rest).

Layout
    Two collections: ``<prefix>active`` holds the vectors of active cards and is the only one
    searched on the hot path; ``<prefix>inactive`` those of superseded, contradicted and archived
    cards. So a search never needs a ``where`` filter (filtered queries cost 16 ms at 10k cards and
    ~215 ms at 100k, unfiltered ones 2-5 ms). A status change moves the vector across. No
    document and no metadata is stored: the card files are the truth and the catalog
    (``memory.catalog``) holds what search needs, so no card text ever reaches Chroma's files.

Vectors
    Always precomputed by memagent's embedder and passed as ``embeddings=``/``query_embeddings=``;
    no Chroma embedding function is ever attached (Chroma's default one downloads a model). The
    embedder's model id, name and dimension are recorded in each collection's metadata and a
    mismatch refuses to open (run ``memagent memory reindex``).

Erasure
    Chroma keeps rows of deleted records in its SQLite write-ahead queue and freed pages until
    vacuumed; :meth:`VectorIndex.purge` removes the queue rows of erased ids (keeping their delete
    markers so segments still replay correctly), vacuums and checkpoints. Chroma's HNSW segment
    files are written from a buffer allocated for the index's full capacity but only initialised
    for the elements in use, so the unused tail holds whatever the process heap held (seen in
    tests: card texts). It is zeroed (:func:`scrub_hnsw_segments`) after every local write, every
    erasure and on close. A Chroma *server* is purged only as far as its API allows (delete).

Nothing is created on disk until the first write.
"""

from __future__ import annotations

import os
import re
import sqlite3
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memagent.errors import one_line as _one_line
from memagent.fsutil import make_dirs
from memagent.memory.chroma_client import http_client, local_client
from memagent.memory.errors import StoreError

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection

    from memagent.embedding.embedders import Embedder

SCHEMA_VERSION = 1
PAGE_SIZE = 1000  # rows per get(): Chroma fails on unbounded gets of large collections
ID_BATCH = 500  # ids per get()/delete() call
WRITE_BATCH = 1000  # records per add()
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


def same_model(a: str, b: str) -> bool:
    """Two embedder ids name variants of one model (``all-MiniLM-L6-v2`` and ``…@int8``): their
    vectors are comparable in kind but must not share an index."""
    return a.split("@", 1)[0] == b.split("@", 1)[0]


class EmbedderMismatch(StoreError):
    """The store's vectors come from another embedding model or dimension."""


@dataclass(frozen=True)
class EmbedderInfo:
    """What a store records about the vectors it holds."""

    model_id: str
    name: str
    dim: int

    @classmethod
    def of(cls, embedder: Embedder) -> EmbedderInfo:
        name = str(getattr(embedder, "name", "unknown"))
        model_id = getattr(embedder, "model_id", None) or name.split("/")[0]
        return cls(model_id=str(model_id), name=name, dim=int(getattr(embedder, "dim", 0)))

    def metadata(self) -> dict[str, str | int]:
        return {
            "hnsw:space": "cosine",
            "memagent_schema": SCHEMA_VERSION,
            "embedder_model": self.model_id,
            "embedder": self.name,
            "embedder_dim": self.dim,
        }

    def describe(self) -> str:
        return f"{self.name} (dim {self.dim})"


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
    def local(cls, label: str, path: Path) -> StoreLocation:
        return cls(label=label, path=path)

    @classmethod
    def remote(cls, label: str, url: str, project_root: Path, identity: str) -> StoreLocation:
        """On a shared server each project gets collections named after its directory and its
        stable identity (see ``memory.identity``), so two projects never share memory."""
        return cls(label=label, url=url, prefix=f"memagent-{_slug(project_root.name)[:40]}-{identity[:12]}_")

    def describe(self) -> str:
        return self.url if self.url else str(self.path)


class VectorIndex:
    """One store's vectors: an active and an inactive Chroma collection (see the module doc)."""

    def __init__(self, location: StoreLocation, embedder: EmbedderInfo) -> None:
        self.location = location
        self.embedder = embedder
        self._client: ClientAPI | None = None
        self._active: Collection | None = None
        self._inactive: Collection | None = None

    @property
    def is_remote(self) -> bool:
        return self.location.url is not None

    @property
    def exists(self) -> bool:
        """A remote index always "exists"; a local one once its directory holds a database."""
        if self.is_remote:
            return True
        assert self.location.path is not None
        return (self.location.path / SQLITE_FILE).exists()

    @property
    def opened(self) -> bool:
        return self._active is not None

    def open(self, *, create: bool = False, check_embedder: bool = True) -> bool:
        """Connect if the index exists (or ``create``); ``False`` when there is nothing to open.

        Raises :class:`StoreError` with a one-line reason for an unusable index and
        :class:`EmbedderMismatch` when the stored vectors are from another model.
        """
        if self.opened:
            return True
        if not self.exists and not create:
            return False
        if not self.is_remote:
            self._check_sqlite_file()
        try:
            client = self._client = self._make_client(create)
            self._active = self._collection(client, "active", create)
            self._inactive = self._collection(client, "inactive", create) if self._active is not None else None
        except StoreError:
            self._reset()
            raise
        except Exception as exc:  # chromadb raises many kinds; all mean "unusable"
            self._reset()
            raise StoreError(f"memory index at {self.location.describe()} cannot be opened: {_one_line(exc)}") from None
        if self._active is None or self._inactive is None:
            self._active = self._inactive = None  # reachable, but no collections yet: nothing to open
            return False
        if check_embedder:
            self.check_embedder()
        return True

    def _check_sqlite_file(self) -> None:
        """A zero-byte or foreign file is damage (Chroma would silently start afresh on it)."""
        assert self.location.path is not None
        db_path = self.location.path / SQLITE_FILE
        if not db_path.exists():
            return
        try:
            with db_path.open("rb") as fh:
                header = fh.read(16)
        except OSError as exc:
            raise StoreError(f"memory index file {db_path} cannot be read: {exc.strerror or exc}") from None
        if header != b"SQLite format 3\x00":
            what = "is empty" if not header else "is not a database"
            raise StoreError(f"memory index file {db_path} {what}")

    def _make_client(self, create: bool) -> ClientAPI:
        if self.is_remote:
            assert self.location.url is not None
            return http_client(self.location.url)
        path = self.location.path
        assert path is not None
        if create:
            try:
                make_dirs(path)
            except OSError as exc:
                raise StoreError(f"cannot create memory index {path}: {exc.strerror or exc}") from None
        return local_client(str(path))

    def _collection(self, client: ClientAPI, kind: str, create: bool = True) -> Collection | None:
        """Get the collection, creating it (with this embedder recorded) only when missing and
        ``create`` (else ``None``).

        Never ``get_or_create`` with metadata on an existing collection: the recorded embedder
        must stay what the vectors were made with.
        """
        name = f"{self.location.prefix}{kind}"
        try:
            return client.get_collection(name, embedding_function=None)
        except Exception as exc:
            if type(exc).__name__ != "NotFoundError" and "does not exist" not in str(exc):
                raise
        if not create:
            return None
        return client.get_or_create_collection(name, embedding_function=None, metadata=self.embedder.metadata())

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
        if (
            not self.is_remote
            and stored.dim == self.embedder.dim
            and same_model(stored.model_id, self.embedder.model_id)
        ):
            return  # another variant in a local index: the store drops these vectors and embeds again
        if stored.model_id != self.embedder.model_id or stored.dim != self.embedder.dim:
            raise EmbedderMismatch(
                f"the {self.location.label} memory index was built with {stored.describe()} but the active "
                f"embedder is {self.embedder.describe()}; run `memagent memory reindex`"
            )

    def _parts(self) -> tuple[ClientAPI, Collection, Collection]:
        """The client and the active and inactive collections of the open index."""
        if self._client is None or self._active is None or self._inactive is None:
            raise StoreError(f"memory index at {self.location.describe()} is not open")
        return self._client, self._active, self._inactive

    def _reset(self) -> None:
        self._client = self._active = self._inactive = None

    def scrub(self) -> None:
        """Zero uninitialised bytes Chroma wrote into HNSW files (local indexes only)."""
        if not self.is_remote and self.location.path is not None and self.location.path.is_dir():
            scrub_hnsw_segments(self.location.path)

    def reload(self) -> None:
        """Reconnect so that writes made by another process reach this process's vector index.

        Chroma's embedded HNSW index lives in each process's memory and does not follow other
        processes' writes; a fresh client replays them from the SQLite log.
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

    def counts(self) -> tuple[int, int]:
        if not self.opened:
            return 0, 0
        _, active, inactive = self._parts()
        return active.count(), inactive.count()

    def nearest_ids(self, vector: Sequence[float], n: int, *, inactive: bool = False) -> list[tuple[str, float]]:
        """(id, cosine similarity) of the nearest cards, best first: the search hot path."""
        return self.nearest_ids_many([vector], n, inactive=inactive)[0]

    def nearest_ids_many(
        self, vectors: Sequence[Sequence[float]], n: int, *, inactive: bool = False
    ) -> list[list[tuple[str, float]]]:
        """:meth:`nearest_ids` of each vector, in one Chroma query (a batch of new cards)."""
        if not vectors:
            return []
        if not self.opened or self.embedder.dim == 0 or n <= 0:
            return [[] for _ in vectors]
        _, active_cards, inactive_cards = self._parts()
        collection = inactive_cards if inactive else active_cards
        queries = []
        for vector in vectors:
            tolist = getattr(vector, "tolist", None)
            queries.append(tolist() if tolist is not None else [float(x) for x in vector])
        result = collection.query(query_embeddings=queries, n_results=n, include=["distances"])
        distances = result["distances"] or [[] for _ in vectors]
        return [
            [(card_id, 1.0 - float(dist)) for card_id, dist in zip(ids, dists)]
            for ids, dists in zip(result["ids"], distances)
        ]

    def vectors(self, ids: Sequence[str]) -> dict[str, list[float]]:
        """Stored vectors by id (active or inactive)."""
        found: dict[str, list[float]] = {}
        for collection in self._parts()[1:] if self.opened else ():
            missing = [i for i in ids if i not in found]
            for start in range(0, len(missing), ID_BATCH):
                result = collection.get(ids=missing[start : start + ID_BATCH], include=["embeddings"])
                embeddings = result.get("embeddings")
                if embeddings is None:
                    continue
                for card_id, vector in zip(result["ids"], embeddings):
                    found[card_id] = [float(x) for x in vector]
        return found

    # -- writing -------------------------------------------------------------------------

    def _as_list(self, card_id: str, vector: Sequence[float] | None) -> Sequence[float]:
        if vector is None or len(vector) != self.embedder.dim:
            raise StoreError(f"card {card_id} has no {self.embedder.dim}-d vector")
        tolist = getattr(vector, "tolist", None)  # numpy rows convert in C
        return tolist() if tolist is not None else [float(x) for x in vector]

    def upsert(self, items: Sequence[tuple[str, Sequence[float], bool]]) -> None:
        """Write (id, vector, active) triples, each into the collection matching its status
        (and out of the other one)."""
        if self.embedder.dim == 0 or not items:
            return
        self.open(create=True, check_embedder=False)
        _, active_cards, inactive_cards = self._parts()
        for active in (True, False):
            chosen = [(i, v) for i, v, a in items if a == active]
            target = active_cards if active else inactive_cards
            other = inactive_cards if active else active_cards
            for start in range(0, len(chosen), WRITE_BATCH):
                batch = chosen[start : start + WRITE_BATCH]
                ids = [i for i, _ in batch]
                target.upsert(ids=ids, embeddings=[self._as_list(i, v) for i, v in batch])
                present = other.get(ids=ids, include=[])["ids"]
                if present:
                    other.delete(ids=list(present))
        self.scrub()

    def move(self, moves: Sequence[tuple[str, bool]]) -> list[str]:
        """Move vectors between the collections without re-embedding; returns ids not found."""
        if self.embedder.dim == 0 or not moves:
            return []
        self.open(create=True, check_embedder=False)
        stored = self.vectors([i for i, _ in moves])
        self.upsert([(i, stored[i], active) for i, active in moves if i in stored])
        return [i for i, _ in moves if i not in stored]

    def delete(self, ids: Iterable[str]) -> list[str]:
        """Delete these ids from both collections; returns the ids that existed."""
        wanted = list(dict.fromkeys(ids))
        removed: list[str] = []
        for collection in self._parts()[1:] if self.opened else ():
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
            db.execute("VACUUM")
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as exc:
            raise StoreError(f"could not fully erase forgotten memories from {db_path}: {exc}") from None
        finally:
            db.close()
        remove_orphan_segments(self.location.path)
        self.scrub()

    def replace_all(self, items: Sequence[tuple[str, Sequence[float], bool]]) -> None:
        """Rebuild both collections (with this index's embedder recorded) from (id, vector, active).

        The new collections are filled first under temporary names and swapped in afterwards,
        so a failure half-way leaves the old ones intact.
        """
        self.open(create=True, check_embedder=False)
        client = self._parts()[0]
        temp = {kind: f"{self.location.prefix}{kind}-reindex" for kind in ("active", "inactive")}
        for name in temp.values():
            _drop_collection(client, name)
        fresh = {
            kind: client.create_collection(name, embedding_function=None, metadata=self.embedder.metadata())
            for kind, name in temp.items()
        }
        if self.embedder.dim > 0:
            for active, kind in ((True, "active"), (False, "inactive")):
                chosen = [(i, v) for i, v, a in items if a == active]
                for start in range(0, len(chosen), WRITE_BATCH):
                    batch = chosen[start : start + WRITE_BATCH]
                    fresh[kind].add(ids=[i for i, _ in batch], embeddings=[self._as_list(i, v) for i, v in batch])
        for kind, collection in fresh.items():
            final = f"{self.location.prefix}{kind}"
            _drop_collection(client, final)
            collection.modify(name=final)
        self._active = client.get_collection(f"{self.location.prefix}active", embedding_function=None)
        self._inactive = client.get_collection(f"{self.location.prefix}inactive", embedding_function=None)
        if not self.is_remote and self.location.path is not None:
            remove_orphan_segments(self.location.path)
        self.scrub()


def _drop_collection(client: ClientAPI, name: str) -> None:
    try:
        client.delete_collection(name)
    except Exception as exc:
        if type(exc).__name__ not in ("NotFoundError", "InvalidCollectionException", "ValueError"):
            raise


__all__ = [
    "VectorIndex",
    "EmbedderInfo",
    "EmbedderMismatch",
    "StoreError",
    "StoreLocation",
]
