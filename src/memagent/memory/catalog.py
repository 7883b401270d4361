"""The catalog: a persisted, incrementally maintained summary of one store's card files.

It lives in ``index/catalog.sqlite3`` beside the Chroma index (git-ignored, rebuilt from the files
whenever it is missing or damaged) and holds, per card: the file's stamp (so a sync only reads
files that changed), the fields ranking, listing and profiles need, the content (so the vector
index can be brought up to date without re-reading files) and the BM25 postings of the card's
terms with each term's document frequency (``lexicon``), so a lexical search touches only the
postings it needs (see ``lexical.top_k_pruned``: common terms cost indexed lookups, not their
whole posting lists) and a fresh process needs no warm-up. A catalog of schema 2 (no lexicon) is
migrated in place on first open. It also records what the vector index holds for each card (a digest of the
content it embedded and the collection it is in), the ids whose vectors must still be deleted,
files that could not be read (so they are reported, not re-parsed on every sync), and
near-duplicate pairs found by a sync (offered by ``memagent memory review``).

Erasure: the connection runs with ``secure_delete`` and :meth:`Catalog.erase_checkpoint` truncates
the write-ahead log, so a forgotten card's text and terms leave no byte in the file.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from memagent.fsutil import make_dirs
from memagent.memory import card_facts
from memagent.memory.cardfiles import Stamp
from memagent.memory.cards import MemoryCard, iso_utc
from memagent.memory.catalog_entry import Entry, entry_from_row, parse_time
from memagent.memory.lexical import LexicalIndex, term_counts, top_k_pruned
from memagent.memory.postings import CatalogPostings

SCHEMA_VERSION = "3"
MIGRATABLE = {"2"}  # schemas brought up to date in place (else the catalog is rebuilt from the files)
CATALOG_FILE = "catalog.sqlite3"
UsageRow = tuple[int, str, str, str, str]  # uses, last used, created, id, type (catalog text)


class KindCount(NamedTuple):
    """Cards of one kind (see :meth:`Catalog.kinds`) and the bytes of their files."""

    active: bool
    status: str
    memory_type: str
    scope: str
    source: str
    cards: int
    size: int


BUSY_TIMEOUT_S = 10.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS cards (
    id TEXT PRIMARY KEY, path TEXT NOT NULL, mtime INTEGER, size INTEGER, inode INTEGER,
    private INTEGER NOT NULL, content TEXT NOT NULL, digest TEXT NOT NULL, length REAL NOT NULL,
    active INTEGER NOT NULL, status TEXT, memory_type TEXT, scope TEXT, scope_id TEXT,
    source TEXT, session TEXT, turn INTEGER, sessions TEXT, confidence REAL, importance REAL,
    created_at TEXT, last_used_at TEXT, task_hint TEXT, person TEXT,
    vec_digest TEXT, vec_active INTEGER, uses INTEGER NOT NULL DEFAULT 0, card TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS cards_by_time ON cards (active, created_at);
CREATE INDEX IF NOT EXISTS cards_by_scope_time ON cards (scope, active, created_at, id);
CREATE INDEX IF NOT EXISTS cards_by_kind ON cards (active, status, memory_type, scope, source, size);
CREATE INDEX IF NOT EXISTS cards_by_use ON cards (active, uses, last_used_at, created_at, id);
CREATE INDEX IF NOT EXISTS cards_needing_vectors ON cards (id)
    WHERE vec_digest IS NULL OR vec_digest != digest OR vec_active != active;
CREATE TABLE IF NOT EXISTS postings (
    term TEXT NOT NULL, id TEXT NOT NULL, tf REAL NOT NULL, length REAL NOT NULL, active INTEGER NOT NULL,
    PRIMARY KEY (term, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS postings_by_id ON postings (id);
CREATE TABLE IF NOT EXISTS lexicon (
    term TEXT NOT NULL, active INTEGER NOT NULL, df INTEGER NOT NULL, PRIMARY KEY (term, active)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS totals (active INTEGER PRIMARY KEY, n INTEGER NOT NULL, length REAL NOT NULL);
CREATE TABLE IF NOT EXISTS vector_deletes (id TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS problems (path TEXT PRIMARY KEY, reason TEXT, mtime INTEGER, size INTEGER, inode INTEGER);
CREATE TABLE IF NOT EXISTS near_duplicates (a TEXT, b TEXT, similarity REAL, PRIMARY KEY (a, b));
"""

_ENTRY_COLUMNS = (
    "id, memory_type, scope, scope_id, confidence, importance, status, created_at, last_used_at, "
    "task_hint, person, session, turn, private, source, uses"
)


class CatalogError(Exception):
    """The catalog file cannot be used (damaged, locked too long); one line."""


def digest_of(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


@dataclass(frozen=True)
class VectorWork:
    """What the vector index lacks: ids to delete, and (id, content, active) to (re)embed or move."""

    deletes: list[str]
    embed: list[tuple[str, str, bool]]
    moves: list[tuple[str, bool]]  # content unchanged, only the collection changes

    def __bool__(self) -> bool:
        return bool(self.deletes or self.embed or self.moves)


class Catalog:
    """One store's catalog (see the module docstring). Not thread-safe: the service serialises."""

    def __init__(self, path: Path, lexical: LexicalIndex | None = None) -> None:
        self.path = path
        self.params = lexical or LexicalIndex()
        self._db: sqlite3.Connection | None = None

    # -- opening -------------------------------------------------------------------------

    @property
    def exists(self) -> bool:
        return self.path.exists()

    def db(self) -> sqlite3.Connection:
        if self._db is None:
            make_dirs(self.path.parent)
            try:
                db = sqlite3.connect(
                    str(self.path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
                )
                db.execute("PRAGMA journal_mode = WAL")
                db.execute("PRAGMA secure_delete = ON")
                db.execute("PRAGMA synchronous = NORMAL")
                db.executescript(_SCHEMA)
                card_facts.create_tables(db)
                found = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
                if found is None:
                    db.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
                elif found[0] in MIGRATABLE:
                    _migrate(db, found[0])
                elif found[0] != SCHEMA_VERSION:
                    db.close()
                    raise CatalogError(f"catalog {self.path} has schema {found[0]}, expected {SCHEMA_VERSION}")
            except sqlite3.DatabaseError as exc:
                raise CatalogError(f"catalog {self.path} is damaged: {exc}") from None
            self._db = db
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        db = self.db()
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise CatalogError(f"catalog {self.path} is busy: {exc}") from None
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def get_meta(self, key: str) -> str | None:
        row = self.db().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, db: sqlite3.Connection, key: str, value: str) -> None:
        db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def generation(self) -> int:
        """Bumped by every write to the vector index, by any process."""
        return int(self.get_meta("vector_generation") or 0)

    def bump_generation(self, db: sqlite3.Connection) -> int:
        value = self.generation() + 1
        self.set_meta(db, "vector_generation", str(value))
        return value

    # -- cards ---------------------------------------------------------------------------

    def stamps(self) -> dict[str, tuple[str, Stamp]]:
        rows = self.db().execute("SELECT id, path, mtime, size, inode FROM cards")
        return {r[0]: (r[1], (r[2], r[3], r[4])) for r in rows}

    def card_bytes(self) -> int:
        """The total size of the card files, as their stamps recorded it."""
        return int(self.db().execute("SELECT COALESCE(SUM(size), 0) FROM cards").fetchone()[0])

    def paths(self) -> dict[str, str]:
        """Every card's file path by id."""
        return dict(self.db().execute("SELECT id, path FROM cards"))

    def known_problems(self) -> dict[str, tuple[str, Stamp]]:
        rows = self.db().execute("SELECT path, reason, mtime, size, inode FROM problems")
        return {r[0]: (r[1], (r[2], r[3], r[4])) for r in rows}

    def note_problem(self, db: sqlite3.Connection, path: Path, reason: str, stamp: Stamp) -> None:
        db.execute("INSERT OR REPLACE INTO problems VALUES (?, ?, ?, ?, ?)", (str(path), reason, *stamp))

    def clear_problems(self, db: sqlite3.Connection, paths: Sequence[str]) -> None:
        db.executemany("DELETE FROM problems WHERE path = ?", [(p,) for p in paths])

    def put(self, db: sqlite3.Connection, card: MemoryCard, path: Path, stamp: Stamp | None, private: bool) -> None:
        """Insert or replace a card's row and postings (inside ``transaction``)."""
        old = db.execute(
            "SELECT active, length, vec_digest, vec_active, last_used_at, uses FROM cards WHERE id = ?", (card.id,)
        ).fetchone()
        counts = term_counts(card.content, card.backstory or "", self.params.context_weight)
        length = float(sum(counts.values()))
        digest = digest_of(card.content)
        vec_digest, vec_active = (old[2], old[3]) if old else (None, None)
        # Usage lives here, not in the (committed) file: keep the later of the two.
        last_used = iso_utc(card.last_used_at) if card.last_used_at else None
        uses = card.access_count
        if old is not None:
            last_used = max(filter(None, (last_used, old[4])), default=None)
            uses = max(uses, int(old[5] or 0))
        if old is not None:
            self._adjust_totals(db, bool(old[0]), -1, -old[1])
            self._drop_postings(db, card.id, bool(old[0]))
        db.executemany(
            "INSERT INTO postings VALUES (?, ?, ?, ?, ?)",
            [(term, card.id, tf, length, int(card.active)) for term, tf in counts.items()],
        )
        db.executemany(
            "INSERT INTO lexicon VALUES (?, ?, 1) ON CONFLICT (term, active) DO UPDATE SET df = df + 1",
            [(term, int(card.active)) for term in counts],
        )
        self._adjust_totals(db, card.active, 1, length)
        sessions = " ".join(sorted({p.session_id for p in (card.provenance, *card.merged_from) if p.session_id}))
        db.execute(
            "INSERT OR REPLACE INTO cards VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                card.id,
                str(path),
                *(stamp or (None, None, None)),
                int(private),
                card.content,
                digest,
                length,
                int(card.active),
                card.status,
                card.memory_type,
                card.scope,
                card.scope_id,
                card.source,
                card.provenance.session_id,
                card.provenance.turn,
                sessions,
                card.confidence,
                card.importance,
                iso_utc(card.created_at),
                last_used,
                card.task_hint,
                card.person,
                vec_digest,
                vec_active,
                uses,
                card.model_dump_json(),
            ),
        )
        card_facts.put(db, card)

    def _drop_postings(self, db: sqlite3.Connection, card_id: str, active: bool) -> None:
        """Remove a card's postings and their share of the document frequencies (a term no card
        holds any more leaves the lexicon: no trace of a forgotten card's words)."""
        terms = [(r[0], int(active)) for r in db.execute("SELECT term FROM postings WHERE id = ?", (card_id,))]
        db.executemany("UPDATE lexicon SET df = df - 1 WHERE term = ? AND active = ?", terms)
        db.executemany("DELETE FROM lexicon WHERE term = ? AND active = ? AND df <= 0", terms)
        db.execute("DELETE FROM postings WHERE id = ?", (card_id,))

    def _adjust_totals(self, db: sqlite3.Connection, active: bool, n: int, length: float) -> None:
        db.execute("INSERT OR IGNORE INTO totals VALUES (?, 0, 0)", (int(active),))
        db.execute("UPDATE totals SET n = n + ?, length = length + ? WHERE active = ?", (n, length, int(active)))

    def remove(self, db: sqlite3.Connection, ids: Sequence[str]) -> list[str]:
        """Drop cards' rows and postings; their vectors are queued for deletion. Returns the ids
        that were known."""
        removed = []
        for card_id in ids:
            old = db.execute("SELECT active, length, vec_digest FROM cards WHERE id = ?", (card_id,)).fetchone()
            if old is None:
                continue
            self._adjust_totals(db, bool(old[0]), -1, -old[1])
            self._drop_postings(db, card_id, bool(old[0]))
            db.execute("DELETE FROM cards WHERE id = ?", (card_id,))
            db.execute("DELETE FROM near_duplicates WHERE a = ? OR b = ?", (card_id, card_id))
            if old[2] is not None:
                db.execute("INSERT OR IGNORE INTO vector_deletes VALUES (?)", (card_id,))
            removed.append(card_id)
        card_facts.remove(db, removed)
        return removed

    def clear(self, db: sqlite3.Connection) -> None:
        """Forget every row (the index is being rebuilt from the files)."""
        for table in ("cards", "postings", "lexicon", "totals", "vector_deletes", "problems", "near_duplicates"):
            db.execute(f"DELETE FROM {table}")
        db.execute("DELETE FROM meta WHERE key != 'schema'")
        card_facts.clear(db)

    def erase_checkpoint(self) -> None:
        """After an erasure: fold the write-ahead log into the file (zeroed pages) and empty it."""
        db = self.db()
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # -- reading -------------------------------------------------------------------------

    def entries(self, ids: Sequence[str]) -> dict[str, Entry]:
        found: dict[str, Entry] = {}
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), 500):
            batch = unique[start : start + 500]
            marks = ",".join("?" * len(batch))
            for row in self.db().execute(f"SELECT {_ENTRY_COLUMNS} FROM cards WHERE id IN ({marks})", batch):
                found[row[0]] = entry_from_row(row)
        return found

    def note_use(self, db: sqlite3.Connection, ids: Sequence[str], when: datetime) -> list[str]:
        """Record that cards were used (cited); returns the ids known here."""
        stamp = iso_utc(when)
        done = []
        for card_id in ids:
            cursor = db.execute("UPDATE cards SET last_used_at = ?, uses = uses + 1 WHERE id = ?", (stamp, card_id))
            if cursor.rowcount:
                done.append(card_id)
        return done

    def note_uses(self, db: sqlite3.Connection, pending: Mapping[str, tuple[int, datetime]]) -> list[str]:
        """Record batched uses (``memory.usage``): id -> (times, latest); returns the ids known here."""
        done = []
        for card_id, (times, when) in pending.items():
            stamp = iso_utc(when)
            cursor = db.execute(
                "UPDATE cards SET uses = uses + ?, last_used_at = CASE WHEN last_used_at IS NULL OR last_used_at < ? "
                "THEN ? ELSE last_used_at END WHERE id = ?",
                (times, stamp, stamp, card_id),
            )
            if cursor.rowcount:
                done.append(card_id)
        return done

    def usage(self, ids: Sequence[str]) -> dict[str, tuple[datetime | None, int]]:
        """(last used, times used) per known id."""
        found: dict[str, tuple[datetime | None, int]] = {}
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), 500):
            batch = unique[start : start + 500]
            marks = ",".join("?" * len(batch))
            for row in self.db().execute(f"SELECT id, last_used_at, uses FROM cards WHERE id IN ({marks})", batch):
                found[row[0]] = (parse_time(row[1]), int(row[2] or 0))
        return found

    def cards(self, ids: Sequence[str]) -> dict[str, tuple[str, Stamp, str]]:
        """(path, stamp, card JSON) per known id: the card as its file said at that stamp."""
        found: dict[str, tuple[str, Stamp, str]] = {}
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), 500):
            batch = unique[start : start + 500]
            marks = ",".join("?" * len(batch))
            for row in self.db().execute(
                f"SELECT id, path, mtime, size, inode, card FROM cards WHERE id IN ({marks})", batch
            ):
                found[row[0]] = (row[1], (row[2], row[3], row[4]), row[5])
        return found

    def usage_extremes(self, n: int) -> tuple[list[UsageRow], list[UsageRow]]:
        """The ``n`` most used active cards (used at least once; most uses, then least recently
        used first) and the ``n`` least used (fewest uses, never or longest ago used, oldest
        first), as (uses, last used, created, id, type): sorted by SQLite's top-n sorter, so a
        large store's cards never come into Python."""
        columns = "uses, COALESCE(last_used_at, ''), COALESCE(created_at, ''), id, memory_type"
        db = self.db()
        # ``cards_by_use`` holds this order (a never-used card's NULL time sorts first): the least
        # used are the index's first rows, the most used a range of it (the cards ever used)
        most = db.execute(
            f"SELECT {columns} FROM cards WHERE active = 1 AND uses > 0 ORDER BY uses DESC, last_used_at, id LIMIT ?",
            (n,),
        ).fetchall()
        least = db.execute(
            f"SELECT {columns} FROM cards WHERE active = 1 ORDER BY uses, last_used_at, created_at, id LIMIT ?", (n,)
        )
        return [tuple(row) for row in most], [tuple(row) for row in least.fetchall()]

    def all_entries(self, active: bool | None = None) -> Iterator[Entry]:
        where, args = ("WHERE active = ?", (int(active),)) if active is not None else ("", ())
        for row in self.db().execute(f"SELECT {_ENTRY_COLUMNS} FROM cards {where}", args):
            yield entry_from_row(row)

    def count(self, active: bool | None = None) -> int:
        if active is None:  # from the running totals: COUNT(*) reads a whole index
            return int(self.db().execute("SELECT COALESCE(SUM(n), 0) FROM totals").fetchone()[0])
        row = self.db().execute("SELECT n FROM totals WHERE active = ?", (int(active),)).fetchone()
        return int(row[0]) if row else 0

    def newest(
        self, *, active: bool | None, where: str = "", args: Sequence = (), limit: int, offset: int = 0
    ) -> list[tuple[str, str]]:
        """(created_at, id) newest first; ``where`` is extra SQL over the cards table's columns."""
        clauses = []
        params: list = []
        if active is not None:
            clauses.append("active = ?")
            params.append(int(active))
        if where:
            clauses.append(where)
            params.extend(args)
        sql = "SELECT created_at, id FROM cards"
        if clauses:
            sql += " WHERE " + " AND ".join(clauses)
        sql += " ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?"
        return [(r[0], r[1]) for r in self.db().execute(sql, (*params, limit, offset))]

    def ids_where(self, where: str, args: Sequence = ()) -> list[str]:
        return [r[0] for r in self.db().execute(f"SELECT id FROM cards WHERE {where}", args)]

    def ids_with_prefix(self, prefix: str) -> list[str]:
        return [
            r[0]
            for r in self.db().execute(
                "SELECT id FROM cards WHERE id >= ? AND id < ? LIMIT 3", (prefix, prefix + "\uffff")
            )
        ]

    def kinds(self) -> list[KindCount]:
        """How many cards there are of each (active, status, type, scope, source), and their
        files' bytes: one pass over the ``cards_by_kind`` index, no card row read (``memory
        stats`` at any size)."""
        rows = self.db().execute(
            "SELECT active, status, memory_type, scope, source, COUNT(*), COALESCE(SUM(size), 0) "
            "FROM cards GROUP BY 1, 2, 3, 4, 5"
        )
        return [KindCount(bool(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), int(r[5]), int(r[6])) for r in rows]

    def lexical(self, query: str, k: int, active: bool) -> list[tuple[str, float]]:
        """BM25 over this store's active (or inactive) cards, scored exactly as
        :class:`LexicalIndex` does (see ``lexical.top_k_pruned`` for what is read)."""
        return top_k_pruned(self.params, CatalogPostings(self.db(), int(active)), query, k)

    # -- vector bookkeeping --------------------------------------------------------------

    def vector_work(self, limit: int | None = None) -> VectorWork:
        db = self.db()
        deletes = [r[0] for r in db.execute("SELECT id FROM vector_deletes")]
        sql = (
            "SELECT id, content, active, vec_digest IS NOT NULL AND vec_digest = digest FROM cards "
            "WHERE vec_digest IS NULL OR vec_digest != digest OR vec_active != active"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        embed, moves = [], []
        for card_id, content, active, same in db.execute(sql):
            if same:
                moves.append((card_id, bool(active)))
            else:
                embed.append((card_id, content, bool(active)))
        return VectorWork(deletes, embed, moves)

    def pending_digests(self) -> list[tuple[str, str, bool]]:
        """(id, content digest, active) of every card the vector index lacks."""
        return [
            (r[0], r[1], bool(r[2]))
            for r in self.db().execute(
                "SELECT id, digest, active FROM cards WHERE vec_digest IS NULL OR vec_digest != digest"
            )
        ]

    def shared_ids(self, ids: Sequence[str]) -> set[str]:
        """Which of these cards are shared (committed), not private."""
        found: set[str] = set()
        for start in range(0, len(ids), 500):
            batch = list(ids[start : start + 500])
            marks = ",".join("?" * len(batch))
            found.update(
                r[0] for r in self.db().execute(f"SELECT id FROM cards WHERE private = 0 AND id IN ({marks})", batch)
            )
        return found

    def digests(self, ids: Sequence[str]) -> list[str]:
        """The content digests of these cards (before they are forgotten)."""
        found: list[str] = []
        for start in range(0, len(ids), 500):
            batch = list(ids[start : start + 500])
            marks = ",".join("?" * len(batch))
            found.extend(r[0] for r in self.db().execute(f"SELECT digest FROM cards WHERE id IN ({marks})", batch))
        return found

    def pending_vectors(self) -> int:
        row = (
            self.db()
            .execute(
                "SELECT COUNT(*) FROM cards WHERE vec_digest IS NULL OR vec_digest != digest OR vec_active != active"
            )
            .fetchone()
        )
        return int(row[0])

    def mark_indexed(
        self, db: sqlite3.Connection, done: Sequence[tuple[str, bool]], digests: Sequence[str] | None = None
    ) -> None:
        """Record that the index holds these cards' vectors; given the ``digests`` of the contents
        that were embedded, a card whose content changed since stays pending."""
        if digests is None:
            db.executemany(
                "UPDATE cards SET vec_digest = digest, vec_active = ? WHERE id = ?",
                [(int(active), card_id) for card_id, active in done],
            )
            return
        db.executemany(
            "UPDATE cards SET vec_digest = digest, vec_active = ? WHERE id = ? AND digest = ?",
            [(int(active), card_id, digest) for (card_id, active), digest in zip(done, digests)],
        )

    def mark_deleted(self, db: sqlite3.Connection, ids: Sequence[str]) -> None:
        db.executemany("DELETE FROM vector_deletes WHERE id = ?", [(i,) for i in ids])

    def forget_vectors(self, db: sqlite3.Connection) -> None:
        """The vector index is gone (rebuilt or replaced): every card needs embedding again."""
        db.execute("UPDATE cards SET vec_digest = NULL, vec_active = NULL")
        db.execute("DELETE FROM vector_deletes")

    # -- near-duplicates found by a sync -------------------------------------------------

    def note_near_duplicate(self, db: sqlite3.Connection, a: str, b: str, similarity: float) -> None:
        first, second = sorted((a, b))
        db.execute("INSERT OR REPLACE INTO near_duplicates VALUES (?, ?, ?)", (first, second, similarity))

    def near_duplicates(self) -> list[tuple[str, str, float]]:
        return [
            (r[0], r[1], r[2])
            for r in self.db().execute("SELECT a, b, similarity FROM near_duplicates ORDER BY similarity DESC")
        ]

    def drop_near_duplicate(self, db: sqlite3.Connection, a: str, b: str) -> None:
        first, second = sorted((a, b))
        db.execute("DELETE FROM near_duplicates WHERE a = ? AND b = ?", (first, second))


def read_stamps(path: Path) -> dict[str, tuple[str, Stamp]] | None:
    """Every card's (path, stamp), read through a read-only connection of its own (a background
    scan compares them without the service's lock); ``None`` when that cannot be done."""
    if not path.exists():
        return None
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
        try:
            rows = db.execute("SELECT id, path, mtime, size, inode FROM cards").fetchall()
        finally:
            db.close()
    except sqlite3.Error:
        return None
    return {r[0]: (r[1], (r[2], r[3], r[4])) for r in rows}


def _migrate(db: sqlite3.Connection, schema: str) -> None:
    """Schema 2 → 3: the lexicon (document frequencies) from the postings, in one transaction."""
    db.execute("BEGIN IMMEDIATE")
    try:
        if db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0] == schema:
            db.execute("DELETE FROM lexicon")
            db.execute("INSERT INTO lexicon SELECT term, active, COUNT(*) FROM postings GROUP BY term, active")
            db.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (SCHEMA_VERSION,))
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


__all__ = ["Catalog", "CatalogError", "Entry", "VectorWork", "digest_of", "read_stamps"]
