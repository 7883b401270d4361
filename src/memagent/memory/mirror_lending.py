"""A long-lived process lends its embedder and searches other processes' vector mirrors.

:class:`Lending` is what ``memagent mcp serve`` starts once its memory is open: the embedder it
loaded, lent on the user's socket (``embedding.shared``), with the ``mirror-search`` operation of
:class:`LentMirrors` beside it.

A process that borrows the embedder does not read its store's ``vectors.mirror`` either (at 100k
cards its rows are ~65 MB): it sends the query vectors, the mirror's folder and the catalog
generation it needs, and the lender answers from the rows it keeps of that file, read and kept
current exactly as the borrower would (``FlatMirror.load`` / ``refresh``). A file that is not
current at that generation, or not a mirror of that embedder, is answered with an error, and the
borrower reads the file itself.

The lender serves only its own user (``embedding.shared`` checks the peer), so the folder named
in a request is one that user may read anyway; the file is read as strictly as by its owner.
The rows of the ``MAX_FOLDERS`` folders searched last are kept.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

from memagent.embedding.shared import BorrowedEmbedder, EmbedderLender, lending_address
from memagent.jsontypes import JsonObject
from memagent.memory.flat_mirror import MIRROR_FILE, FlatMirror, MirrorEmbedder, committed_generation

if TYPE_CHECKING:
    from memagent.memory.service import MemoryService

MAX_FOLDERS = 4
MAX_QUERIES = 64
MAX_RESULTS = 10_000


class Lending:
    """Lends a memory service's embedder to the user's other memagent processes of ``home``
    once it has loaded, unless it is borrowed itself or there is none (``home`` ``None``: off)."""

    def __init__(self, home: Path | None) -> None:
        self.address = lending_address(home) if home is not None else None
        self.lender: EmbedderLender | None = None

    def start(self, service: MemoryService) -> None:
        embedder = service.embedder  # loads it (the caller is a warm-up thread)
        if self.address is None or embedder.dim <= 0 or isinstance(embedder, BorrowedEmbedder):
            return
        mirrors = LentMirrors()
        lender = EmbedderLender(embedder, self.address, {"mirror-search": mirrors.answer})
        if lender.start():
            self.lender = lender
            mirrors.read_ahead(service)

    def close(self) -> None:
        if self.lender is not None:
            self.lender.close()


class LentMirrors:
    """The ``mirror-search`` operation and the mirrors it keeps; thread-safe (one search at a time)."""

    def __init__(self) -> None:
        self._mirrors: OrderedDict[tuple[str, MirrorEmbedder], FlatMirror] = OrderedDict()
        self._lock = threading.Lock()

    def answer(self, request: JsonObject) -> JsonObject:
        folder, embedder, generation = _where(request)
        vectors, n, inactive = _query(request, embedder.dim)
        with self._lock:
            mirror = self._mirror(folder, embedder)
            current = mirror.refresh(generation) if mirror.loaded else mirror.load(generation)
            if not current:
                self._mirrors.pop((str(folder), embedder), None)
                return {"error": "the mirror is not current"}
            found = mirror.search(vectors, n, inactive=inactive)
        return {
            "generation": mirror.generation,
            "found": [[[card_id, score] for card_id, score in hits] for hits in found],
        }

    def read_ahead(self, service: MemoryService) -> list[Path]:
        """Read the mirrors of the lending process's own stores (most borrowers work in the same
        project), so the first question asked from there is answered at once; the folders read."""
        info = service.core.embedder_info()
        embedder = MirrorEmbedder(info.model_id, info.name, info.dim)
        read = []
        for store in service.core.stores_in_use():
            folder = store.location.path
            generation = committed_generation(folder / MIRROR_FILE) if folder is not None else None
            if folder is None or generation is None:
                continue
            with self._lock:
                if self._mirror(folder, embedder).load(generation):
                    read.append(folder)
                else:
                    self._mirrors.pop((str(folder), embedder), None)
        return read

    def _mirror(self, folder: Path, embedder: MirrorEmbedder) -> FlatMirror:
        key = (str(folder), embedder)
        mirror = self._mirrors.pop(key, None) or FlatMirror(folder, embedder)
        self._mirrors[key] = mirror
        while len(self._mirrors) > MAX_FOLDERS:
            self._mirrors.popitem(last=False)
        return mirror


def _where(request: JsonObject) -> tuple[Path, MirrorEmbedder, int]:
    folder, generation, dim = request["folder"], request["generation"], request["dim"]
    if not isinstance(folder, str) or not Path(folder).is_absolute():
        raise ValueError("folder must be an absolute path")
    if not isinstance(generation, int) or not isinstance(dim, int) or not 0 < dim <= 65536:
        raise ValueError("generation and dim must be integers")
    return Path(folder), MirrorEmbedder(str(request["model_id"]), str(request["name"]), dim), generation


def _query(request: JsonObject, dim: int) -> tuple[list[list[float]], int, bool]:
    vectors, n, inactive = request["vectors"], request["n"], request["inactive"]
    if not isinstance(n, int) or not 0 <= n <= MAX_RESULTS or not isinstance(inactive, bool):
        raise ValueError("n must be an integer up to 10000 and inactive a boolean")
    if not isinstance(vectors, list) or not 0 < len(vectors) <= MAX_QUERIES:
        raise ValueError("vectors must be a list of 1 to 64 vectors")
    rows = [[float(x) for x in vector] for vector in vectors]  # type: ignore[union-attr]
    if any(len(row) != dim or not all(math.isfinite(x) for x in row) for row in rows):
        raise ValueError(f"every vector must hold {dim} finite numbers")
    return rows, n, inactive


__all__ = ["Lending", "LentMirrors"]
