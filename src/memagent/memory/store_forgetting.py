"""The forgetting part of a :class:`~memagent.memory.store.Store` (``store.forgetting``):
erasing cards, and the tombstones that keep a forgotten id forgotten (see ``memory.tombstones``).

A card file whose id is on the tombstone list (a ``git pull`` or a checkout brought it back) is
withheld from the catalog (``memory.catalog_sync.apply_changes``) until the user erases it again or keeps it
(:meth:`StoreForgetting.readmit`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memagent.embedding.vector_cache import VectorCache
from memagent.memory.layout import VECTORS_NAME, committed_vector_files, local_dir

if TYPE_CHECKING:
    from memagent.memory.store import Store


class StoreForgetting:
    """Held by a ``Store``: works on its files, catalog, lock, vector index and tombstones."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def erase(self, ids: Sequence[str]) -> list[str]:
        """Delete cards' files, catalog rows and vectors (every byte of a local index); a
        tombstone keeps each id and the time. Returns the ids erased."""
        catalog = self.store.open_catalog()
        with self.store.locked():
            deleted = {card_id for card_id in ids if self.store.files.delete(card_id) is not None}
            digests = catalog.digests(ids)
            with catalog.transaction() as db:
                erased = sorted(set(catalog.remove(db, ids)) | deleted)
            for folder in (self.store.root / VECTORS_NAME, local_dir(self.store.root) / VECTORS_NAME):
                VectorCache(folder, "", 0).forget(digests)
            index = self.store.vector_index(None, create=False)
            if index is not None and erased:
                self.store.follow_other_writers()
                index.delete(erased)
                index.purge(erased)
            with catalog.transaction() as db:
                catalog.mark_deleted(db, erased)
                catalog.set_meta(db, "folders", repr(self.store.files.folder_stamps()))
                self.store.note_generation(catalog.bump_generation(db))
            catalog.erase_checkpoint()
            self.store.tombstones.add(erased)
        return erased

    def committed_vector_files(self, ids: Sequence[str]) -> list[Path]:
        """The committed vector cache files holding these cards' vectors (git keeps their old
        lines in its history after a forget)."""
        return (
            committed_vector_files(self.store.root, self.store.catalog.digests(ids))
            if self.store.catalog.exists
            else []
        )

    def revive(self, ids: Sequence[str]) -> None:
        """Take ids off the tombstone list (the user chose to have these cards again)."""
        self.store.tombstones.remove(ids)

    def withheld(self) -> dict[str, tuple[Path, str]]:
        """Forgotten ids whose card file is back (a ``git pull``, a checkout): the file and when
        the id was forgotten. They are not in the catalog, so nothing searches or injects them."""
        found: dict[str, tuple[Path, str]] = {}
        for card_id, when in self.tombstoned().items():
            path = self.store.files.locate(card_id)
            if path is not None:
                found[card_id] = (path, when)
        return found

    def readmit(self, ids: Sequence[str]) -> None:
        """Use cards that came back after a forget again: off the tombstone list, and read at
        the next sync."""
        self.revive(ids)
        paths = [str(p) for p in (self.store.files.locate(i) for i in ids) if p is not None]
        catalog = self.store.open_catalog()
        with self.store.locked(), catalog.transaction() as db:
            catalog.clear_problems(db, paths)
        self.store.sync_files(force=True)

    def tombstoned(self) -> dict[str, str]:
        """Forgotten ids and when."""
        return self.store.tombstones.all()


__all__ = ["StoreForgetting"]
