"""An exact int8 copy of a local vector index, searched without loading Chroma.

Why
    Chroma is the index of record (``memory.vector_index``), but answering a query through it
    costs a process ~0.4 s and ~50 MB to import chromadb, and then the whole HNSW segment in
    memory (~40 MB at 10k cards, ~250 MB at 100k). Up to a few hundred thousand cards an exact
    scan of int8 vectors is faster than that (≈ 2 ms at 10k, ≈ 10 ms at 100k on 2 cores), needs a
    quarter of float32's memory and, being exact, never misses a neighbour HNSW would. So every
    local index keeps this mirror beside Chroma's files, and searches read the mirror; Chroma is
    still written on every change, read for stored vectors, and rebuilds the mirror when it is
    missing or stale.

File (``vectors.mirror`` in the index folder)
    A 256-byte header: ``memagent-mirror`` and a format byte, then the dimension and the id width
    (two little-endian uint32), the embedder's model id and name (NUL-padded UTF-8, 100 bytes
    each). Then fixed-size records, appended in order and never edited in place::

        kind   uint8     1 active vector, 2 inactive vector, 0 delete, 3 commit
        id     63 bytes  the card id (ASCII, NUL-padded); for a commit, the generation in digits
        inv    float32   1 / the length of the int8 vector (0 for a delete or a commit)
        vec    int8[dim] the unit vector times 127 / its largest component

    A later record for an id wins. A commit record closes a batch: it carries the catalog's
    ``vector_generation`` that the index reached with that batch (``memory.catalog``). A reader
    uses only the records up to the last commit, and only if that generation is the catalog's
    current one; anything else (no file, another model, a torn or uncommitted tail, another
    process's writes it has not mirrored) means "stale", and the caller falls back to Chroma and
    rebuilds the mirror from it under the store's lock. Writers hold that lock, append a batch
    and its commit with one ``write``, and compact the file (an atomic replace) when most of its
    records are dead, and after an erasure so no byte of a forgotten card's vector remains.

Reading is strict, since a repository could ship anything in a git-ignored folder: a symlink, a
wrong header or a size that is not header + whole records is ignored; nothing is unpickled.

Lent rows
    A process that borrows its embedder (``embedding.shared``) does not read the rows either: it
    checks that the file's last commit is current (header and last record only) and asks the
    lender to search the file (``memory.mirror_lending``, which keeps the rows of the files it was
    asked about). Anything else that needs the rows (a write, counts, a card's vector), or a
    lender that does not answer, reads them here as usual.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from memagent.embedding.vector_cache import int8_rows
from memagent.fsutil import atomic_write
from memagent.jsontypes import JsonObject

if TYPE_CHECKING:
    import numpy as np
    from threadpoolctl import ThreadpoolController

MIRROR_FILE = "vectors.mirror"
MAGIC = b"memagent-mirror\x01"
HEADER_SIZE = 256
ID_BYTES = 63
DELETE, ACTIVE, INACTIVE, COMMIT = 0, 1, 2, 3
SCAN_ROWS = 4096  # rows converted to float32 at a time (~6 MB at 384 dimensions)
SCAN_QUERIES = 32  # queries scored at once (their scores: 12.8 MB at 100k rows)
_HEADER = struct.Struct("<16sII100s100s")


class Lender(Protocol):
    """A process that searches mirror files for this one (``embedding.shared.BorrowedEmbedder``)."""

    def request(self, request: JsonObject) -> JsonObject | None: ...


@dataclass(frozen=True)
class MirrorEmbedder:
    """The embedder the mirrored vectors come from (as recorded in the header)."""

    model_id: str
    name: str
    dim: int


def header_of(embedder: MirrorEmbedder) -> bytes:
    def field(text: str) -> bytes:
        return text.encode("utf-8", "replace")[:100]

    packed = _HEADER.pack(MAGIC, embedder.dim, ID_BYTES, field(embedder.model_id), field(embedder.name))
    return packed.ljust(HEADER_SIZE, b"\0")


def record_dtype(dim: int) -> np.dtype:
    import numpy as np

    return np.dtype([("kind", "u1"), ("id", f"S{ID_BYTES}"), ("inv", "<f4"), ("vec", "i1", (dim,))])


def quantize(vectors: Sequence[Sequence[float]], dim: int) -> tuple[np.ndarray, np.ndarray]:
    """(int8 rows, 1 / row length): the vector cache's int8 rule (``embedding.vector_cache``);
    only the direction matters for a cosine, so the scale is not kept."""
    import numpy as np

    scaled, _ = int8_rows(vectors, dim)
    length = np.sqrt((scaled.astype(np.float32) ** 2).sum(axis=1))
    return scaled, np.where(length > 0, 1.0 / np.where(length > 0, length, 1.0), 0.0).astype(np.float32)


class StaleMirror(Exception):
    """The file holds commits this process's rows lack (a write must rebuild the mirror first)."""


class FlatMirror:
    """The mirror file of one local index and its rows in memory (see the module doc)."""

    def __init__(
        self, folder: Path, embedder: MirrorEmbedder, lender: Callable[[], Lender | None] | None = None
    ) -> None:
        self.path = folder / MIRROR_FILE
        self.embedder = embedder
        self.generation: int | None = None  # the committed generation the rows reflect
        self.pending = False  # rows written since the last commit (this process, under the lock)
        self._lender = lender  # who searches for this process, if anyone (asked when loading)
        self._lent: Lender | None = None  # the rows are not read here: this lender searches them
        self._blas: ThreadpoolController | None = None
        self._clear()

    def _clear(self) -> None:
        self._columns: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # vec, inv, kind
        self.ids: list[str] = []
        self._row_of: dict[str, int] | None = None
        self._stamp: tuple[int, int] | None = None  # (inode, bytes read up to the last commit)
        self._records = 0  # records in the file up to the last commit

    # The rows' columns, made on first use: a process whose rows are lent imports no numpy.
    def _column(self, index: int) -> np.ndarray:
        if self._columns is None:
            import numpy as np

            empty = (np.zeros((0, self.embedder.dim), np.int8), np.zeros(0, np.float32), np.zeros(0, np.uint8))
            self._columns = empty
        return self._columns[index]

    def _set_column(self, index: int, value: np.ndarray) -> None:
        columns = [self._column(0), self._column(1), self._column(2)]
        columns[index] = value
        self._columns = (columns[0], columns[1], columns[2])

    vec = property(lambda self: self._column(0), lambda self, value: self._set_column(0, value))
    inv = property(lambda self: self._column(1), lambda self, value: self._set_column(1, value))
    kind = property(lambda self: self._column(2), lambda self, value: self._set_column(2, value))

    @property
    def loaded(self) -> bool:
        return self.generation is not None or self.pending

    def forget(self) -> None:
        """Drop the rows from memory (the file stays)."""
        self.generation, self.pending, self._lent = None, False, None
        self._clear()

    # -- reading -------------------------------------------------------------------------

    def load(self, expected: int, *, lend: bool = True) -> bool:
        """Read the whole file (or leave it to a lender); whether it is current at ``expected``
        (else nothing is kept). A file committed past ``expected`` is current too: a writer that
        finished after the caller read the catalog's generation."""
        self.forget()
        if lend and self._lend(expected):
            return True
        found = self._read(0, None)
        if found is None:
            return False
        records, inode, end = found
        generation = _newest_commit(records)
        if generation is None or generation < expected:
            return False
        self._adopt(records)
        self.generation, self._stamp, self._records = generation, (inode, end), len(records)
        return True

    def refresh(self, expected: int) -> bool:
        """Apply what other processes appended since the last read; whether the rows are now
        current at ``expected`` (a replaced file is read afresh)."""
        if self._lent is not None:
            return self.load(expected)
        if self.pending or self._stamp is None or self.generation is None:
            return self.load(expected)
        if self.generation >= expected:
            return True
        found = self._read(self._stamp[1], self._stamp[0])
        if found is None:
            return self.load(expected)
        records, inode, end = found
        generation = _newest_commit(records)
        if generation is None or generation < expected:
            return self.load(expected)
        self._apply(records)
        self.generation, self._stamp = generation, (inode, end)
        self._records += len(records)
        return True

    def _lend(self, expected: int) -> bool:
        """Leave the rows to the lender when there is one and the file is committed at or past
        ``expected`` (read from its header and last record alone)."""
        lender = self._lender() if self._lender is not None else None
        generation = committed_generation(self.path) if lender is not None else None
        if generation is None or generation < expected:
            return False
        self.generation, self._lent = generation, lender
        return True

    def _own_rows(self) -> None:
        """Read the rows the lender held (:class:`StaleMirror` when the file is no longer current)."""
        if self._lent is None:
            return
        generation = self.generation
        self._lent = None
        if generation is None or not self.load(generation, lend=False):
            self.forget()
            raise StaleMirror(f"{self.path} changed before it could be read")

    def _read(self, start: int, inode: int | None) -> tuple[np.ndarray, int, int] | None:
        """Records from byte ``start`` (header checked when reading from 0) up to the last whole
        commit, the file's inode and the byte where those records end; ``None`` when the file is
        unusable or was replaced (``inode`` given and changed)."""
        import numpy as np

        dtype = record_dtype(self.embedder.dim)
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            if inode is not None and info.st_ino != inode:
                return None
            if start == 0:
                if os.pread(fd, HEADER_SIZE, 0) != self._header():
                    return None
                start = HEADER_SIZE
            count = (info.st_size - start) // dtype.itemsize
            if count < 0:
                return None
            with os.fdopen(os.dup(fd), "rb") as fh:  # read straight into a writable array
                fh.seek(start)
                records = np.fromfile(fh, dtype=dtype, count=count) if count else np.zeros(0, dtype)
        except (OSError, ValueError):
            return None
        finally:
            os.close(fd)
        if len(records) != count:
            return None  # shrank while being read: a writer cut a torn tail; read again later
        last = _last_commit(records)
        committed = records[: 0 if last is None else last + 1]
        return committed, info.st_ino, start + len(committed) * dtype.itemsize

    def _header(self) -> bytes:
        return header_of(self.embedder)

    def _adopt(self, records: np.ndarray) -> None:
        """Make ``records`` the rows, without copying their vectors: a record a later one of the
        same id replaced, a delete and a commit become dead rows."""
        import numpy as np

        kinds = records["kind"].copy()
        candidates = np.flatnonzero(kinds != COMMIT)
        latest = np.zeros(len(records), dtype=bool)
        if len(candidates):
            _, first_from_end = np.unique(records["id"][candidates][::-1], return_index=True)
            latest[candidates[len(candidates) - 1 - first_from_end]] = True
        kinds[~(latest & ((kinds == ACTIVE) | (kinds == INACTIVE)))] = DELETE
        self.vec, self.inv, self.kind = records["vec"], records["inv"], kinds
        self.ids = [raw.decode("ascii", "replace") for raw in records["id"].tolist()]
        self._row_of = None

    def _apply(self, records: np.ndarray) -> None:
        """Apply a batch of records (a writer's, in file order) to the rows."""
        import numpy as np

        final: dict[str, int] = {}  # id -> its last record in the batch
        for position, (kind, raw) in enumerate(zip(records["kind"].tolist(), records["id"].tolist())):
            if kind != COMMIT:
                final[raw.decode("ascii", "replace")] = position
        rows = self._rows()
        new_ids: list[str] = []
        new_records: list[int] = []
        for card_id, position in final.items():
            kind = int(records["kind"][position])
            row = rows.get(card_id)
            if kind == DELETE:
                if row is not None:
                    del rows[card_id]
                    self.kind[row] = DELETE
            elif row is not None:
                self.vec[row], self.inv[row], self.kind[row] = records["vec"][position], records["inv"][position], kind
            else:
                new_ids.append(card_id)
                new_records.append(position)
        if not new_ids:
            return
        added = records[new_records]
        for offset, card_id in enumerate(new_ids):
            rows[card_id] = len(self.ids) + offset
        self.ids.extend(new_ids)
        self.vec = np.concatenate([self.vec, added["vec"]])
        self.inv = np.concatenate([self.inv, added["inv"].astype(np.float32)])
        self.kind = np.concatenate([self.kind, added["kind"].astype(np.uint8)])

    def _rows(self) -> dict[str, int]:
        self._own_rows()
        if self._row_of is None:
            self._row_of = {card_id: row for row, card_id in enumerate(self.ids) if self.kind[row] != DELETE}
        return self._row_of

    def held(self) -> dict[str, bool]:
        """Every card the rows hold: id -> whether its vector is active."""
        return {card_id: bool(self.kind[row] == ACTIVE) for card_id, row in self._rows().items()}

    def vector_of(self, card_id: str) -> np.ndarray | None:
        """A held card's unit vector as the mirror has it (int8, rescaled)."""
        import numpy as np

        row = self._rows().get(card_id)
        return None if row is None else self.vec[row].astype(np.float32) * self.inv[row]

    def counts(self) -> tuple[int, int]:
        self._own_rows()
        return int((self.kind == ACTIVE).sum()), int((self.kind == INACTIVE).sum())

    def search(self, vectors: Sequence[Sequence[float]], n: int, *, inactive: bool) -> list[list[tuple[str, float]]]:
        """(id, cosine similarity) of the ``n`` nearest rows of one kind, best first, per vector."""
        if self._lent is not None:
            found = self._lent_search(self._lent, vectors, n, inactive)
            if found is not None:
                return found
            self._lender = None  # it could not answer for this file: read the rows from now on
            self._own_rows()
        import numpy as np

        queries = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), self.embedder.dim)
        lengths = np.linalg.norm(queries, axis=1)
        queries = (queries / np.where(lengths > 0, lengths, 1.0)[:, None]).T
        if n <= 0 or not self.ids:
            return [[] for _ in vectors]
        wanted = INACTIVE if inactive else ACTIVE
        found: list[list[tuple[str, float]]] = []
        with self._one_blas_thread():
            for first in range(0, len(vectors), SCAN_QUERIES):
                scores = self._scores(np.ascontiguousarray(queries[:, first : first + SCAN_QUERIES]), wanted)
                found.extend(self._best(scores[:, column], n) for column in range(scores.shape[1]))
        return found

    def _lent_search(
        self, lender: Lender, vectors: Sequence[Sequence[float]], n: int, inactive: bool
    ) -> list[list[tuple[str, float]]] | None:
        """The lender's answer (``memory.mirror_lending``), or ``None`` when it gave none."""
        rows = [v.tolist() if hasattr(v, "tolist") else [float(x) for x in v] for v in vectors]
        answer = lender.request(
            {"op": "mirror-search", "folder": str(self.path.parent), "model_id": self.embedder.model_id,
             "name": self.embedder.name, "dim": self.embedder.dim, "generation": self.generation,
             "vectors": rows, "n": n, "inactive": inactive}
        )  # fmt: skip
        found = answer.get("found") if answer is not None else None
        if not isinstance(found, list) or len(found) != len(vectors):
            return None
        try:
            return [[(str(card_id), float(score)) for card_id, score in hits] for hits in found]
        except (TypeError, ValueError):
            return None

    def _one_blas_thread(self):
        """numpy's BLAS on one thread for the scan: its second thread, on a machine whose other
        core is busy, turned a 0.05 ms product into 12 ms while it waited to be scheduled."""
        from threadpoolctl import ThreadpoolController

        if self._blas is None:
            self._blas = ThreadpoolController()
        return self._blas.limit(limits=1, user_api="blas")

    def _scores(self, queries: np.ndarray, wanted: int) -> np.ndarray:
        """Cosine of every row with each query (a column each); ``-inf`` for rows of another kind."""
        import numpy as np

        scores = np.empty((len(self.ids), queries.shape[1]), dtype=np.float32)
        for start in range(0, len(self.ids), SCAN_ROWS):
            stop = min(start + SCAN_ROWS, len(self.ids))
            np.matmul(self.vec[start:stop].astype(np.float32), queries, out=scores[start:stop])
        scores *= self.inv[:, None]
        scores[self.kind != wanted] = -np.inf
        return scores

    def _best(self, scores: np.ndarray, n: int) -> list[tuple[str, float]]:
        import numpy as np

        n = min(n, len(scores))
        top = np.argpartition(-scores, n - 1)[:n]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(self.ids[row], float(scores[row])) for row in top if np.isfinite(scores[row])]

    # -- writing (the caller holds the store's lock) -------------------------------------

    def write(self, upserts: Sequence[tuple[str, Sequence[float], bool]], deletes: Iterable[str] = ()) -> bool:
        """Append upserts (id, vector, active) and deletes as one uncommitted batch; ``False``
        (and the file left for a rebuild) when an id does not fit the format."""
        import numpy as np

        self._own_rows()
        deletes = list(deletes)
        if any(not _fits(card_id) for card_id in [*deletes, *(i for i, _, _ in upserts)]):
            self.discard()
            return False
        dtype = record_dtype(self.embedder.dim)
        batch = np.zeros(len(deletes) + len(upserts), dtype=dtype)
        batch["id"][: len(deletes)] = [card_id.encode("ascii") for card_id in deletes]
        if upserts:
            scaled, inv = quantize([v for _, v, _ in upserts], self.embedder.dim)
            tail = batch[len(deletes) :]
            tail["kind"] = [ACTIVE if active else INACTIVE for _, _, active in upserts]
            tail["id"] = [card_id.encode("ascii") for card_id, _, _ in upserts]
            tail["inv"], tail["vec"] = inv, scaled
        self._append(batch.tobytes())
        self._apply(batch)
        self._records += len(batch)
        self.pending = True
        return True

    def commit(self, generation: int) -> None:
        """Close the pending batch at ``generation`` (the catalog's, bumped with this write)."""
        if not self.pending:
            return
        record = self._commit_record(generation)
        self._append(record.tobytes())
        self.generation, self.pending = generation, False
        if self._stamp is not None:
            self._stamp = (self._stamp[0], os.stat(self.path).st_size)
        self._records += 1
        if self._records > 4 * max(len(self._rows()), 1000):
            self.rewrite(generation)

    def _commit_record(self, generation: int) -> np.ndarray:
        import numpy as np

        record = np.zeros(1, dtype=record_dtype(self.embedder.dim))
        record["kind"], record["id"] = COMMIT, str(generation).encode("ascii")
        return record

    def _append(self, data: bytes) -> None:
        """Append ``data``. Outside a pending batch the file must end where this process last
        saw a commit: a tail without a commit (a writer that crashed) is cut off, while a commit
        this process has not seen means its rows are stale (:class:`StaleMirror`)."""
        with open(self.path, "r+b") as fh:
            if not self.pending and self._stamp is not None:
                end = self._stamp[1]
                if os.fstat(fh.fileno()).st_ino != self._stamp[0] or self._commit_after(fh, end):
                    raise StaleMirror(f"{self.path} was written by another process")
                fh.truncate(end)
            fh.seek(0, os.SEEK_END)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())

    def _commit_after(self, fh, end: int) -> bool:
        import numpy as np

        dtype = record_dtype(self.embedder.dim)
        fh.seek(end)
        tail = fh.read()
        records = np.frombuffer(tail, dtype=dtype, count=len(tail) // dtype.itemsize)
        return _last_commit(records) is not None

    def rewrite(self, generation: int | None) -> None:
        """Replace the file with the live rows (atomically), committed at ``generation`` or
        left pending (``None``) for the write that follows."""
        import numpy as np

        self._own_rows()
        dtype = record_dtype(self.embedder.dim)
        live = np.flatnonzero(self.kind != DELETE)
        rows = np.zeros(len(live), dtype=dtype)
        rows["kind"], rows["inv"], rows["vec"] = self.kind[live], self.inv[live], self.vec[live]
        rows["id"] = [self.ids[row].encode("ascii") for row in live]
        tail = self._commit_record(generation).tobytes() if generation is not None else b""
        atomic_write(self.path, self._header() + rows.tobytes() + tail, keep_mode=False)  # 0600: private cards too
        self._adopt(rows)
        self._records = len(rows) + (1 if generation is not None else 0)
        self.generation, self.pending = generation, generation is None
        size = os.stat(self.path).st_size
        self._stamp = (os.stat(self.path).st_ino, size)

    def replace(self, items: Sequence[tuple[str, Sequence[float], bool]], generation: int | None) -> bool:
        """The mirror holds exactly ``items`` (id, vector, active); ``False`` when an id does not fit."""
        return self.replace_pages([items[i : i + SCAN_ROWS] for i in range(0, len(items), SCAN_ROWS)], generation)

    def replace_pages(
        self, pages: Iterable[Sequence[tuple[str, Sequence[float], bool]]], generation: int | None
    ) -> bool:
        """:meth:`replace` from pages of items, each quantized as it comes (a rebuild of 100k
        vectors never holds them all as floats)."""
        import numpy as np

        self._lent = None  # every row is replaced
        ids: list[str] = []
        kinds: list[int] = []
        parts = [(np.zeros((0, self.embedder.dim), np.int8), np.zeros(0, np.float32))]
        for page in pages:
            if any(not _fits(card_id) for card_id, _, _ in page):
                self.discard()
                return False
            parts.append(quantize([vector for _, vector, _ in page], self.embedder.dim))
            ids.extend(card_id for card_id, _, _ in page)
            kinds.extend(ACTIVE if active else INACTIVE for _, _, active in page)
        self.vec = np.concatenate([vec for vec, _ in parts])
        self.inv = np.concatenate([inv for _, inv in parts])
        self.kind = np.array(kinds, dtype=np.uint8)
        self.ids, self._row_of = ids, None
        self.rewrite(generation)
        return True

    def discard(self) -> None:
        """Remove the file and the rows: readers fall back to Chroma until a rebuild."""
        self.forget()
        self.path.unlink(missing_ok=True)


def committed_generation(path: Path) -> int | None:
    """The generation the mirror file at ``path`` was last committed at, from its header and
    last record only (a cheap look before deciding what to load); ``None`` when there is no
    usable file or it does not end with a commit. The embedder is checked when it is loaded."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        header = os.pread(fd, HEADER_SIZE, 0)
        if len(header) != HEADER_SIZE or not header.startswith(MAGIC):
            return None
        dim, id_bytes = struct.unpack_from("<II", header, len(MAGIC))
        if id_bytes != ID_BYTES or not 0 < dim <= 65536:
            return None
        size = 1 + ID_BYTES + 4 + dim  # a record: kind, id, inv, vec (see the module doc)
        length = os.fstat(fd).st_size - HEADER_SIZE
        if length < size or length % size:
            return None
        last = os.pread(fd, size, HEADER_SIZE + length - size)
    except OSError:
        return None
    finally:
        os.close(fd)
    return _digits(last[1 : 1 + ID_BYTES]) if last[0] == COMMIT else None


def _fits(card_id: str) -> bool:
    return card_id.isascii() and 0 < len(card_id) <= ID_BYTES and "\0" not in card_id


def _last_commit(records: np.ndarray) -> int | None:
    import numpy as np

    commits = np.flatnonzero(records["kind"] == COMMIT)
    return int(commits[-1]) if len(commits) else None


def _newest_commit(records: np.ndarray) -> int | None:
    """The generation of the last record when it is a commit (records end at their last commit)."""
    if len(records) == 0 or int(records[-1]["kind"]) != COMMIT:
        return None
    return _generation_of(records[-1])


def _generation_of(record: np.void) -> int | None:
    return _digits(bytes(record["id"]))


def _digits(field: bytes) -> int | None:
    """A commit record's generation, written in its id field as decimal digits."""
    text = field.rstrip(b"\0")
    return int(text) if text.isdigit() and len(text) < 19 else None


__all__ = ["MIRROR_FILE", "FlatMirror", "MirrorEmbedder", "StaleMirror", "committed_generation", "quantize"]
