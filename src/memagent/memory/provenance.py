"""Provenance of a card is earned, not claimed.

The front matter of a card file is a claim: a repository can ship a card saying ``scope: user``,
``source: user``, ``confidence: 1.0``. What a card may be trusted for comes from how it reached
this machine, which memagent records itself, outside the project.

The ledger
    ``$MEMAGENT_HOME/provenance.sqlite3`` (0600; never in a project, and hidden from sandboxed
    commands) holds one row per card file this machine's sessions and commands wrote: the card
    id, the SHA-256 of the file's bytes, how it was written and when. ``how`` is ``session``
    (memagent's model or its learning), ``command`` (``memagent memory add``/``edit``), ``mcp``
    (a client of ``memagent mcp serve``), ``import`` (``memagent memory import``: project
    knowledge the user vouched for, source ``import``, never user-stated), ``review`` (accepted
    in ``memagent memory review``) or ``repository`` (memagent rewrote a card it had not earned:
    a decay or a status change keeps it team knowledge). A batch of card files (an import) is
    recorded in one transaction, before the files are written: a file memagent wrote is never
    missing from the ledger, even when the write was interrupted.

The earned view
    A project card file is read through :meth:`Witness.earned`. A file whose (id, digest) the
    ledger holds, other than as ``repository``, stands as written. Every other file — a clone, a
    ``git pull``, a write by a tool or a sandboxed command, a hand edit (the digest changed) — is
    team knowledge: its source becomes ``repository`` (shown and injected as "from the
    repository", never as user-stated), its scope at most ``project`` (a ``scope: user`` claim
    is downgraded, so it never reaches the user profile) and its confidence at most
    :data:`REPOSITORY_CONFIDENCE`. Profiles leave repository cards out; in a project the user has
    not trusted they wait in ``memagent memory review`` and are never injected, nor returned to
    the model's searches. Accepting one there records the file in the ledger; forgetting erases
    it. The user's own store (``$MEMAGENT_HOME/memory/``) is the user's alone and stands as
    written.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from memagent.fsutil import PRIVATE_FILE_MODE, make_dirs
from memagent.memory.cards import MemoryCard

LEDGER_FILE = "provenance.sqlite3"
REPOSITORY = "repository"  # the source (and the ledger's "how") of a card not earned on this machine
IMPORT = "import"
REVIEW = "review"
REPOSITORY_CONFIDENCE = 0.6  # the most confidence a card from the repository gets
PROVENANCE_VERSION = "1"  # catalogs built before the ledger re-read every card once
_SCHEMA = "CREATE TABLE IF NOT EXISTS written (id TEXT, digest TEXT, how TEXT, at TEXT, PRIMARY KEY (id, digest))"


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def how_written(card: MemoryCard) -> str:
    """How memagent is writing ``card``, from what the card carries."""
    if card.source in (REPOSITORY, IMPORT):
        return card.source
    session = card.provenance.session_id or ""
    if session.startswith("mcp:"):
        return "mcp"
    return "session" if session else "command"


def repository_view(card: MemoryCard) -> MemoryCard:
    """What a card earns when this machine did not write it: team knowledge."""
    return card.model_copy(
        update={
            "scope": "project" if card.scope == "user" else card.scope,
            "scope_id": None if card.scope == "user" else card.scope_id,
            "source": REPOSITORY,
            "confidence": min(card.confidence, REPOSITORY_CONFIDENCE),
        }
    )


def overclaims(claimed: MemoryCard, earned: MemoryCard) -> list[str]:
    """What a card file claims beyond what it earned ("scope user", "source user", …)."""
    found = []
    if claimed.scope != earned.scope:
        found.append(f"scope {claimed.scope}")
    if claimed.source not in (earned.source, "tool"):
        found.append(f"source {claimed.source}")
    if claimed.confidence > earned.confidence + 1e-9:
        found.append(f"confidence {claimed.confidence:.2f}")
    return found


@dataclass
class Ledger:
    """The ledger file (see the module docstring): one connection, opened on first use and kept;
    thread-safe. Nothing is created until the first record."""

    path: Path
    _db: sqlite3.Connection | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _connect(self, create: bool) -> sqlite3.Connection | None:
        if self._db is not None:
            return self._db
        if not self.path.exists():
            if not create:
                return None
            make_dirs(self.path.parent)
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, PRIVATE_FILE_MODE))
        db = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None, check_same_thread=False)
        db.execute(_SCHEMA)
        self._db = db
        return db

    def how(self, card_id: str, digest: str) -> str | None:
        with self._lock:
            db = self._connect(create=False)
            if db is None:
                return None
            row = db.execute("SELECT how FROM written WHERE id = ? AND digest = ?", (card_id, digest)).fetchone()
        return row[0] if row else None

    def record(self, card_id: str, digest: str, how: str) -> None:
        self.record_many([(card_id, digest, how)])

    def record_many(self, rows: Sequence[tuple[str, str, str]]) -> None:
        """Record (card id, digest, how) rows in one transaction: a batch of card files costs
        the ledger one commit, not one per file."""
        if not rows:
            return
        at = datetime.now(UTC).isoformat(timespec="seconds")
        with self._lock:
            db = self._connect(create=True)
            assert db is not None
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany(
                    "INSERT OR REPLACE INTO written VALUES (?, ?, ?, ?)",
                    [(card_id, digest, how, at) for card_id, digest, how in rows],
                )
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def forget(self, ids: Iterable[str]) -> None:
        """Drop every row of these cards (forget leaves no digest of their text behind)."""
        wanted = list(ids)
        with self._lock:
            db = self._connect(create=False)
            if db is not None and wanted:
                db.executemany("DELETE FROM written WHERE id = ?", [(i,) for i in wanted])

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


@dataclass(frozen=True)
class Witness:
    """Records what memagent writes into a store, and judges what it reads from it."""

    ledger: Ledger

    def wrote(self, card: MemoryCard, data: bytes, how: str | None = None) -> None:
        self.ledger.record(card.id, digest_of(data), how or how_written(card))

    def wrote_many(self, written: Sequence[tuple[MemoryCard, bytes]]) -> None:
        """:meth:`wrote` for a batch of card files, in one ledger transaction."""
        self.ledger.record_many([(card.id, digest_of(data), how_written(card)) for card, data in written])

    def earned(self, card: MemoryCard, data: bytes) -> MemoryCard:
        how = self.ledger.how(card.id, digest_of(data))
        return card if how is not None and how != REPOSITORY else repository_view(card)


def ledger_for(home: Path) -> Ledger:
    return Ledger(Path(home) / LEDGER_FILE)


@dataclass
class Standing:
    """One card file as ``memory review`` shows it: what it claims, what it earned."""

    claimed: MemoryCard
    earned: MemoryCard
    path: Path

    @property
    def overclaims(self) -> list[str]:
        return overclaims(self.claimed, self.earned)


def refresh_catalog(store, ids: Sequence[str] | None = None) -> int:
    """Read card files into the store's catalog again (all of them when ``ids`` is None): after
    the ledger changed what they earned, or once for a catalog built before the ledger existed."""
    from memagent.memory.cardfiles import CardFileError, stamp_of

    catalog = store.open_catalog()
    found = store.files.scan()
    chosen = found if ids is None else {i: found[i] for i in ids if i in found}
    changed = 0
    with store.locked(), catalog.transaction() as db:
        for path_text, _ in chosen.values():
            path = Path(path_text)  # the scan gives paths as text
            try:
                card = store.files.read(path)
            except CardFileError:
                continue
            catalog.put(db, card, path, stamp_of(path), store.files.is_private(path))
            changed += 1
        if ids is None:
            catalog.set_meta(db, "provenance", PROVENANCE_VERSION)
    return changed


__all__ = [
    "IMPORT",
    "LEDGER_FILE",
    "Ledger",
    "PROVENANCE_VERSION",
    "REPOSITORY",
    "REPOSITORY_CONFIDENCE",
    "REVIEW",
    "Standing",
    "Witness",
    "digest_of",
    "how_written",
    "ledger_for",
    "overclaims",
    "refresh_catalog",
    "repository_view",
]
