"""What retrieval reads from a card beyond its words, kept in the catalog next to the card's row.

Three tables in ``index/catalog.sqlite3`` (rebuilt from the card files like the rest of it),
written by :func:`put` whenever the catalog writes a card and dropped by :func:`remove` when it
drops one (an erasure leaves nothing here: the catalog runs with ``secure_delete``):

``card_links`` (id, supersedes, superseded_by)
    the card's correction links, so a search can show a superseded card only under its
    successor and prefer the current card of a chain;
``card_periods`` (id, start, stop)
    the time windows its text names, read relative to when it was written
    (``memory.timeline``): "On 12 March 2026" is the day, "in Q2" the quarter;
``card_mentions`` (id, name, kind, description, role, topic)
    the names it defines or gives a role (``memory.entities``): "Harbor is our deploy CLI",
    "Kenji is the release manager for Harbor". All of a store's mentions make its
    :class:`~memagent.memory.entities.EntityIndex`.

A catalog written before these tables existed is filled once from the cards it holds
(:func:`fill`, recorded under the meta key ``card_facts``); ``card_facts_rev`` counts changes to
the mentions, so a reader rebuilds its entity index only when they changed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from datetime import datetime

from memagent.memory.cards import MemoryCard, iso_utc
from memagent.memory.entities import EntityIndex, Mention, mentions_in
from memagent.memory.timeline import Period, periods_in

VERSION = "1"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS card_links (id TEXT PRIMARY KEY, supersedes TEXT, superseded_by TEXT);
CREATE TABLE IF NOT EXISTS card_periods (id TEXT NOT NULL, start TEXT NOT NULL, stop TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS card_periods_by_id ON card_periods (id);
CREATE TABLE IF NOT EXISTS card_mentions (
    id TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL, description TEXT, role TEXT, topic TEXT
);
CREATE INDEX IF NOT EXISTS card_mentions_by_id ON card_mentions (id);
"""
_TABLES = ("card_links", "card_periods", "card_mentions")
_BATCH = 500


def create_tables(db: sqlite3.Connection) -> None:
    """Create the tables (idempotent; run when the catalog opens, outside any transaction). A
    catalog without cards yet has nothing to :func:`fill` later."""
    db.executescript(_SCHEMA)
    db.execute("INSERT OR IGNORE INTO meta SELECT 'card_facts', ? WHERE NOT EXISTS (SELECT 1 FROM cards)", (VERSION,))


def _bump(db: sqlite3.Connection) -> None:
    db.execute("INSERT OR IGNORE INTO meta VALUES ('card_facts_rev', '0')")
    db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'card_facts_rev'")


def put(db: sqlite3.Connection, card: MemoryCard) -> None:
    """Replace the card's rows (inside the catalog's transaction)."""
    had_mentions = db.execute("SELECT 1 FROM card_mentions WHERE id = ? LIMIT 1", (card.id,)).fetchone()
    for table in _TABLES:
        db.execute(f"DELETE FROM {table} WHERE id = ?", (card.id,))
    if card.supersedes or card.superseded_by:
        db.execute("INSERT INTO card_links VALUES (?, ?, ?)", (card.id, card.supersedes, card.superseded_by))
    db.executemany(
        "INSERT INTO card_periods VALUES (?, ?, ?)",
        [(card.id, iso_utc(start), iso_utc(stop)) for start, stop in periods_in(card.content, card.created_at)],
    )
    mentions = mentions_in(card.content)
    db.executemany(
        "INSERT INTO card_mentions VALUES (?, ?, ?, ?, ?, ?)",
        [(card.id, m.name, m.kind, m.description, m.role, m.topic) for m in mentions],
    )
    if mentions or had_mentions:
        _bump(db)


def remove(db: sqlite3.Connection, ids: Sequence[str]) -> None:
    for table in _TABLES:
        db.executemany(f"DELETE FROM {table} WHERE id = ?", [(card_id,) for card_id in ids])
    if ids:
        _bump(db)


def clear(db: sqlite3.Connection) -> None:
    """Forget every row (the catalog is being rebuilt: every card will be put again)."""
    for table in _TABLES:
        db.execute(f"DELETE FROM {table}")
    db.execute("INSERT OR REPLACE INTO meta VALUES ('card_facts', ?)", (VERSION,))
    _bump(db)


def is_filled(db: sqlite3.Connection) -> bool:
    found = db.execute("SELECT value FROM meta WHERE key = 'card_facts'").fetchone()
    return found is not None and found[0] == VERSION


def fill(db: sqlite3.Connection) -> int:
    """Annotate every card of a catalog written before these tables existed (once); returns how
    many cards were read. Call inside a transaction."""
    if is_filled(db):
        return 0
    rows = db.execute("SELECT card FROM cards").fetchall()
    for (raw,) in rows:
        try:
            put(db, MemoryCard.model_validate_json(raw))
        except ValueError:
            continue
    db.execute("INSERT OR REPLACE INTO meta VALUES ('card_facts', ?)", (VERSION,))
    return len(rows)


# --------------------------------------------------------------------------- reading


def _in_batches(db: sqlite3.Connection, sql: str, ids: Sequence[str]) -> Iterable[tuple]:
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), _BATCH):
        batch = unique[start : start + _BATCH]
        yield from db.execute(sql.format(marks=",".join("?" * len(batch))), batch)


def links(db: sqlite3.Connection, ids: Sequence[str]) -> dict[str, tuple[str | None, str | None]]:
    """(supersedes, superseded_by) of the given cards that have a link."""
    return {
        row[0]: (row[1], row[2])
        for row in _in_batches(db, "SELECT id, supersedes, superseded_by FROM card_links WHERE id IN ({marks})", ids)
    }


def successors(db: sqlite3.Connection, ids: Sequence[str]) -> dict[str, str]:
    """older id -> newer id, for cards another card says it supersedes."""
    return {
        row[0]: row[1]
        for row in _in_batches(db, "SELECT supersedes, id FROM card_links WHERE supersedes IN ({marks})", ids)
    }


def periods(db: sqlite3.Connection, ids: Sequence[str]) -> dict[str, list[Period]]:
    found: dict[str, list[Period]] = {}
    for card_id, start, stop in _in_batches(db, "SELECT id, start, stop FROM card_periods WHERE id IN ({marks})", ids):
        found.setdefault(card_id, []).append((_time(start), _time(stop)))
    return found


def _time(raw: str) -> datetime:
    return datetime.fromisoformat(raw.replace("Z", "+00:00"))


def contents(db: sqlite3.Connection, ids: Sequence[str]) -> list[tuple[str, str]]:
    """(id, content) of the given cards, from the catalog."""
    return [(row[0], row[1]) for row in _in_batches(db, "SELECT id, content FROM cards WHERE id IN ({marks})", ids)]


def definitions(db: sqlite3.Connection, ids: Sequence[str]) -> dict[str, list[str]]:
    """The systems each of the given cards defines ("X is the billing backend")."""
    found: dict[str, list[str]] = {}
    for card_id, name in _in_batches(
        db, "SELECT id, name FROM card_mentions WHERE kind = 'system' AND id IN ({marks})", ids
    ):
        found.setdefault(card_id, []).append(name)
    return found


def revision(db: sqlite3.Connection) -> int:
    row = db.execute("SELECT value FROM meta WHERE key = 'card_facts_rev'").fetchone()
    return int(row[0]) if row else 0


def entity_index(db: sqlite3.Connection) -> EntityIndex:
    rows = db.execute("SELECT name, kind, description, role, topic FROM card_mentions ORDER BY rowid")
    return EntityIndex.of(
        Mention(name, kind, description or "", role or "", topic or "") for name, kind, description, role, topic in rows
    )


__all__ = [
    "VERSION",
    "clear",
    "contents",
    "definitions",
    "create_tables",
    "entity_index",
    "fill",
    "is_filled",
    "links",
    "periods",
    "put",
    "remove",
    "revision",
    "successors",
]
