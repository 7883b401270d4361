"""The catalog's inverted index as :func:`memagent.memory.lexical.top_k_pruned` reads it: one
activity class (active or inactive cards) of the ``postings``, ``lexicon`` and ``totals`` tables."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence


class CatalogPostings:
    """One activity class of the catalog's inverted index, as ``lexical.top_k_pruned`` reads it."""

    def __init__(self, db: sqlite3.Connection, active: int) -> None:
        self.db, self.active = db, active

    def size(self) -> tuple[int, float]:
        row = self.db.execute("SELECT n, length FROM totals WHERE active = ?", (self.active,)).fetchone()
        return (int(row[0]), float(row[1])) if row else (0, 0.0)

    def doc_freqs(self, terms: Iterable[str]) -> dict[str, int]:
        wanted = list(terms)
        marks = ",".join("?" * len(wanted))
        return dict(
            self.db.execute(
                f"SELECT term, df FROM lexicon WHERE active = ? AND term IN ({marks})", (self.active, *wanted)
            )
        )

    def postings(self, term: str) -> list[tuple[str, float, float]]:
        return self.db.execute(
            "SELECT id, tf, length FROM postings WHERE term = ? AND active = ?", (term, self.active)
        ).fetchall()

    def best_holding(
        self, scales: Mapping[str, float], norm: float, slope: float, factor: Sequence[float], limit: int
    ) -> list[tuple[str, float]]:
        """See ``lexical.PostingSource.best_holding``: one aggregate query, scored in SQLite."""
        terms = list(scales)
        scale = "CASE term " + "WHEN ? THEN ? " * len(terms) + "END"
        shared = "CASE COUNT(*) " + "WHEN ? THEN ? " * (len(factor) - 1) + "END"
        sql = (
            f"SELECT id, SUM(({scale}) * tf / ((tf + ?) + (? * length))) * ({shared}) AS score "
            f"FROM postings WHERE active = ? AND term IN ({','.join('?' * len(terms))}) "
            f"GROUP BY id ORDER BY score DESC, id DESC LIMIT ?"
        )
        args = [
            *(x for t in terms for x in (t, scales[t])),
            norm,
            slope,
            *(x for n in range(1, len(factor)) for x in (n, factor[n])),
            self.active,
            *terms,
            int(limit),
        ]
        return self.db.execute(sql, args).fetchall()

    def lookup(self, term: str, ids: list[str]) -> list[tuple[str, float, float]]:
        found: list[tuple[str, float, float]] = []
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            marks = ",".join("?" * len(batch))
            found.extend(
                self.db.execute(
                    f"SELECT id, tf, length FROM postings WHERE term = ? AND active = ? AND id IN ({marks})",
                    (term, self.active, *batch),
                )
            )
        return found
