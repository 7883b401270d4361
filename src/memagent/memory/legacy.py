"""Stores written by earlier memagent versions kept every card inside Chroma (``chroma.sqlite3``
and segment folders directly in the store directory). On first open such a store is migrated:
each record becomes a card file, then the old Chroma files are removed (the new index is built
from the files on first use). A record that cannot be read is skipped and named in a notice."""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from memagent.errors import one_line
from memagent.memory.cards import MemoryCard
from memagent.memory.errors import StoreError
from memagent.memory.store import Store
from memagent.memory.vector_index import SQLITE_FILE, StoreLocation

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection

PAGE_SIZE = 1000


def _records(collection: Collection) -> Iterator[tuple[str, str | None, dict]]:
    offset = 0
    while True:
        page = collection.get(limit=PAGE_SIZE, offset=offset, include=["documents", "metadatas"])
        ids = page.get("ids") or []
        docs: Sequence[str | None] = page.get("documents") or [None] * len(ids)
        metas = page.get("metadatas") or [{}] * len(ids)
        yield from zip(ids, docs, (dict(m or {}) for m in metas))
        if len(ids) < PAGE_SIZE:
            return
        offset += PAGE_SIZE


def migrate_legacy_store(store: Store) -> int:
    """Turn an old all-in-Chroma store into card files; returns how many cards were migrated."""
    old_db = store.root / SQLITE_FILE
    if store.is_remote and store.label == "project" or not old_db.is_file() or store.files.shared.exists():
        return 0
    from memagent.memory.chroma_client import local_client

    location = StoreLocation.local(store.label, store.root)
    try:
        client = local_client(str(store.root))
        cards, skipped = [], 0
        for kind in ("active", "inactive"):
            try:
                collection = client.get_collection(f"{location.prefix}{kind}", embedding_function=None)
            except Exception:
                continue
            for card_id, doc, meta in _records(collection):
                try:
                    cards.append(MemoryCard.from_record(card_id, doc, meta))
                except ValueError:
                    skipped += 1
    except Exception as exc:
        raise StoreError(f"the old memory store {old_db} cannot be migrated to card files: {one_line(exc)}") from None
    with store.locked():
        for card in cards:
            store.files.write(card, card.scope == "session", durable=False)
        for child in store.root.iterdir():
            if child.name == SQLITE_FILE or (child.is_dir() and len(child.name) == 36 and child.name.count("-") == 4):
                shutil.rmtree(child) if child.is_dir() else child.unlink()
    note = f"migrated {len(cards)} memory cards of {store.root} to card files"
    store.notices.append(note + (f" ({skipped} unreadable records skipped)" if skipped else ""))
    return len(cards)


__all__ = ["migrate_legacy_store"]
