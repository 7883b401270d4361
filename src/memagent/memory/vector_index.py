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

Searching without Chroma
    A local index also keeps an exact int8 copy of its vectors, ``vectors.mirror``
    (``memory.flat_mirror``). Searches and counts read the mirror when it is current with the
    catalog's ``vector_generation``, so answering a question imports no chromadb and loads no
    HNSW segment; Chroma is opened only to write, to read stored vectors, or to rebuild a
    missing or stale mirror. Every write keeps the mirror in step (or removes it), and the store
    commits it at the generation it bumps (:meth:`VectorIndex.commit`).

Nothing is created on disk until the first write.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memagent.errors import one_line as _one_line
from memagent.fsutil import make_dirs
from memagent.memory.chroma_client import http_client, local_client
from memagent.memory.chroma_files import (
    SQLITE_FILE,
    erase_queue_rows,
    remove_orphan_segments,
    scrub_hnsw_segments,
)
from memagent.memory.errors import StoreError
from memagent.memory.flat_mirror import MIRROR_FILE, FlatMirror, Lender, MirrorEmbedder, StaleMirror

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection

    from memagent.embedding.embedders import Embedder

SCHEMA_VERSION = 1
PAGE_SIZE = 1000  # rows per get(): Chroma fails on unbounded gets of large collections
ID_BATCH = 500  # ids per get()/delete() call
ID_PAGE = 20_000  # ids per get() without vectors
WRITE_BATCH = 1000  # records per add()


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

    def __init__(
        self, location: StoreLocation, embedder: EmbedderInfo, lender: Callable[[], Lender | None] | None = None
    ) -> None:
        self.location = location
        self.embedder = embedder
        self.lender = lender  # who may search the mirror for this process (``FlatMirror``)
        self._client: ClientAPI | None = None
        self._active: Collection | None = None
        self._inactive: Collection | None = None
        self._mirror: FlatMirror | None = None

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
        return self._active is not None or self.mirror_ready

    @property
    def mirror_ready(self) -> bool:
        """Searches read the int8 mirror (Chroma may still be closed)."""
        return self._mirror is not None and self._mirror.loaded

    def _mirror_file(self) -> FlatMirror | None:
        """The mirror of a local index with a real embedder (``None`` otherwise)."""
        if self.is_remote or self.location.path is None or self.embedder.dim <= 0:
            return None
        wanted = MirrorEmbedder(self.embedder.model_id, self.embedder.name, self.embedder.dim)
        if self._mirror is None or self._mirror.embedder != wanted:
            self._mirror = FlatMirror(self.location.path, wanted, self.lender)
        return self._mirror

    def open(self, *, create: bool = False, check_embedder: bool = True, generation: int | None = None) -> bool:
        """Connect if the index exists (or ``create``); ``False`` when there is nothing to open.
        Given the catalog's ``generation``, a current mirror is read instead of opening Chroma.

        Raises :class:`StoreError` with a one-line reason for an unusable index and
        :class:`EmbedderMismatch` when the stored vectors are from another model.
        """
        if self.opened:
            return True
        if not self.exists and not create:
            return False
        mirror = self._mirror_file()
        if generation is not None and mirror is not None and self.exists:
            self._check_sqlite_file()  # a damaged index is reported and rebuilt, mirror or not
            if mirror.load(generation):
                return True
        return self._open_chroma(create=create, check_embedder=check_embedder)

    def _open_chroma(self, *, create: bool, check_embedder: bool = False) -> bool:
        if self._active is not None:
            return True
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
        if self._active is None and self.mirror_ready:
            return self.embedder  # the mirror's header named this embedder
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
        """The client and the active and inactive collections of the open index (Chroma is
        opened now if only the mirror was)."""
        if self._active is None and self.mirror_ready and not self._open_chroma(create=False):
            raise StoreError(f"memory index at {self.location.describe()} has no collections")
        if self._client is None or self._active is None or self._inactive is None:
            raise StoreError(f"memory index at {self.location.describe()} is not open")
        return self._client, self._active, self._inactive

    def _reset(self) -> None:
        self._client = self._active = self._inactive = None

    def scrub(self) -> None:
        """Zero uninitialised bytes Chroma wrote into HNSW files (local indexes only)."""
        if not self.is_remote and self.location.path is not None and self.location.path.is_dir():
            scrub_hnsw_segments(self.location.path)

    def reload(self, generation: int | None = None) -> None:
        """Reconnect so that writes made by another process (up to the catalog's ``generation``)
        reach this process's vector index.

        The mirror reads what was appended to it. Chroma's embedded HNSW index lives in each
        process's memory and does not follow other processes' writes; a fresh client replays
        them from the SQLite log.
        """
        if self.is_remote or not self.opened:
            return
        if self._mirror is not None and self._mirror.loaded and generation is not None:
            if self._mirror.refresh(generation):
                self._close_chroma()  # stale in memory: opened afresh when a write needs it
                return
        self.close()
        self.open(check_embedder=False, generation=generation)

    def close(self) -> None:
        if self._mirror is not None:
            self._mirror.forget()
        self._close_chroma()

    def _close_chroma(self) -> None:
        client = self._client
        was_open = self._active is not None
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
        if self._mirror is not None and self._mirror.loaded:
            try:
                return self._mirror.counts()
            except StaleMirror:  # lent rows that changed before they could be read here
                self._open_chroma(create=False)
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
        if self._mirror is not None and self._mirror.loaded:
            try:
                return self._mirror.search(vectors, n, inactive=inactive)
            except StaleMirror:  # lent rows that changed before they could be read here
                self._open_chroma(create=False)
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
        self._mirror_write(upserts=[(i, v, a) for i, v, a in items])

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
        if removed:
            self._mirror_write(deletes=removed)
        return removed

    def purge(self, ids: Sequence[str]) -> None:
        """Erase every byte of deleted records left in the local SQLite file (see module doc)."""
        if self.is_remote or not ids:
            return
        assert self.location.path is not None
        erase_queue_rows(self.location.path, ids)
        remove_orphan_segments(self.location.path)
        self.scrub()
        self._compact_mirror()

    # -- the mirror ----------------------------------------------------------------------

    def commit(self, generation: int) -> None:
        """The store bumped the catalog's generation with this process's write: close the
        mirror's pending batch at it."""
        mirror = self._mirror
        if mirror is not None and mirror.pending:
            self._guarded(mirror, lambda: mirror.commit(generation))

    def rebuild_mirror(self, generation: int | None, *, reopen: bool = True) -> bool:
        """Write the mirror afresh from Chroma, committed at ``generation`` (``None``: pending
        until the write under way commits). The caller holds the store's lock; with ``reopen``
        a fresh client replays every process's writes (else the open one is fresh enough)."""
        mirror = self._mirror_file()
        if mirror is None or not self.exists:
            return False
        if reopen:
            self._close_chroma()
        if not self._open_chroma(create=False):
            return False
        return self._guarded(mirror, lambda: mirror.replace_pages(self._vector_pages(), generation))

    def _vector_pages(self) -> Iterator[list[tuple[str, Sequence[float], bool]]]:
        """Every stored (id, vector, active), a page at a time."""
        _, active_cards, inactive_cards = self._parts()
        for active, collection in ((True, active_cards), (False, inactive_cards)):
            offset = 0
            # Ids first, then vectors by id: an offset page with vectors costs more the further it
            # starts (20,000 vectors of a 100k index: 1.2-2.1 s by offset, 0.6 s by id).
            while ids := collection.get(include=[], limit=ID_PAGE, offset=offset)["ids"]:
                for start in range(0, len(ids), PAGE_SIZE):
                    page = collection.get(ids=ids[start : start + PAGE_SIZE], include=["embeddings"])
                    embeddings = page.get("embeddings")
                    if embeddings is not None:
                        yield [(card_id, vector, active) for card_id, vector in zip(page["ids"], embeddings)]
                offset += len(ids)

    def _mirror_write(
        self, *, upserts: Sequence[tuple[str, Sequence[float], bool]] = (), deletes: Sequence[str] = ()
    ) -> None:
        """Keep the mirror in step with a write Chroma has just taken (rebuilt from Chroma when
        this process's copy is stale or was never read)."""
        mirror = self._mirror_file()
        if mirror is None:
            return
        if mirror.loaded:
            try:
                self._guarded(mirror, lambda: mirror.write(upserts, deletes))
                return
            except StaleMirror:
                pass
        self.rebuild_mirror(None)

    def _compact_mirror(self) -> None:
        """After an erasure no byte of a forgotten card's vector may stay in the mirror: its live
        rows are written afresh, or a mirror this process does not hold is removed."""
        mirror = self._mirror_file()
        if mirror is not None and mirror.loaded:
            self._guarded(mirror, lambda: mirror.rewrite(None if mirror.pending else mirror.generation))
        elif self.location.path is not None:
            (self.location.path / MIRROR_FILE).unlink(missing_ok=True)

    @staticmethod
    def _guarded(mirror: FlatMirror, job: Callable[[], object]) -> bool:
        """Run a mirror write; a failed one (a full disk…) removes the mirror, so readers fall
        back to Chroma instead of reading a stale copy."""
        try:
            job()
            return True
        except OSError:
            try:
                mirror.discard()
            except OSError:
                mirror.forget()
            return False

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
        mirror = self._mirror_file()
        if mirror is not None:
            self._guarded(mirror, lambda: mirror.replace(items, None))


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
