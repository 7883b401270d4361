"""The per-process holder of the embedder: loads it on first use, or borrows the one a
``memagent mcp serve`` of the same user lends (``embedding.shared``)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from memagent.embedding import embedders
from memagent.embedding.embedders import Embedder
from memagent.embedding.shared import BorrowedEmbedder, borrow
from memagent.jsontypes import JsonObject


@dataclass
class EmbedderHandle:
    """Loads the embedder on first use and keeps it: the per-process cache a caller holds."""

    preference: str = "auto"
    cache_dir: Path | None = None
    lender: str | None = None  # where a lent embedder may answer (``embedding.shared``)
    _embedder: Embedder | None = field(default=None, init=False, repr=False)
    _loading: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @classmethod
    def of(cls, embedder: Embedder) -> EmbedderHandle:
        """A handle holding an embedder loaded already."""
        handle = cls(preference=getattr(embedder, "name", "auto"))
        handle._embedder = embedder
        return handle

    @property
    def loaded(self) -> bool:
        return self._embedder is not None

    def get(self) -> Embedder:
        """The embedder, loaded once even when two threads ask at the same time."""
        if self._embedder is None:
            with self._loading:
                if self._embedder is None:
                    self._embedder = self._borrowed() or self._own()
        return self._embedder

    def borrowed(self) -> BorrowedEmbedder | None:
        """The loaded embedder when it is a lent one still answering (``embedding.shared``)."""
        embedder = self._embedder
        return embedder if isinstance(embedder, BorrowedEmbedder) and embedder.borrowing else None

    def _own(self) -> Embedder:
        return embedders.load_embedder(self.preference, cache_dir=self.cache_dir)

    def _borrowed(self) -> Embedder | None:
        """The embedder a ``memagent mcp serve`` lends, when it is the one this handle would load."""
        if self.lender is None:
            return None
        return borrow(self.lender, embedders.expected_embedder(self.preference), self._own)

    def describe(self) -> JsonObject:
        """Name, model and dimension: of the loaded embedder, else of the one loading would give
        (:func:`expected_embedder`, which loads nothing)."""
        if self._embedder is not None:
            embedder = self._embedder
            return {"name": embedder.name, "model_id": getattr(embedder, "model_id", None), "dim": int(embedder.dim)}
        return embedders.expected_embedder(self.preference)


__all__ = ["EmbedderHandle"]
