"""Cards that arrived as files from outside and have not met the correction rule yet.

``memory add``, the memory tools and import judge a card against the store before writing it
(``memory.corrections.decide``). A card file that appears by other means — a ``git pull`` of
teammates' cards, a copied folder, a rebuild of the catalog from the files — skipped that step:
the store may then hold an old fact and its correction, both active. The catalog sync notes such
new ids here (:func:`note`, in the sync's own transaction); the service judges them, oldest first,
the next time it brings the vectors up to date (``Saving._judge_arrivals``), and forgets them
(:func:`done`).

The table holds ids only, no card text (erasure has nothing to clean here). It lives in the
catalog file (``index/catalog.sqlite3``) and is created on first use.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

_SCHEMA = "CREATE TABLE IF NOT EXISTS arrivals (id TEXT PRIMARY KEY)"


def note(db: sqlite3.Connection, ids: Sequence[str]) -> None:
    """Record card ids read from new files (inside the sync's transaction)."""
    if not ids:
        return
    db.execute(_SCHEMA)
    db.executemany("INSERT OR IGNORE INTO arrivals VALUES (?)", [(card_id,) for card_id in ids])


def waiting(db: sqlite3.Connection, limit: int) -> list[str]:
    """Up to ``limit`` ids still to be judged."""
    try:
        return [row[0] for row in db.execute("SELECT id FROM arrivals LIMIT ?", (limit,))]
    except sqlite3.OperationalError:  # no arrivals table yet: nothing ever arrived
        return []


def done(db: sqlite3.Connection, ids: Sequence[str]) -> None:
    if ids:
        db.execute(_SCHEMA)
        db.executemany("DELETE FROM arrivals WHERE id = ?", [(card_id,) for card_id in ids])


__all__ = ["done", "note", "waiting"]
