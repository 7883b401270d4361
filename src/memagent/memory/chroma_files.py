"""Chroma's files on a local disk: what memagent does to them beside Chroma's own API.

Chroma keeps rows of deleted records in its SQLite write-ahead queue and freed pages until
vacuumed (:func:`erase_queue_rows` removes an erased card's rows, keeping the delete markers so
segments still replay correctly). Its HNSW segment files are written from a buffer allocated for
the index's full capacity but only initialised for the elements in use, so the unused tail holds
whatever the process heap held (seen in tests: card texts); :func:`scrub_hnsw_segments` zeroes
it. Deleting a collection leaves its segment directory behind (:func:`remove_orphan_segments`).
"""

from __future__ import annotations

import os
import re
import sqlite3
import struct
from collections.abc import Sequence
from pathlib import Path

from memagent.memory.errors import StoreError

SQLITE_FILE = "chroma.sqlite3"
ID_BATCH = 500  # ids per statement
_DELETE_OPERATION = 3  # embeddings_queue.operation for a delete (0 add, 1 update, 2 upsert)
_HNSW_HEADER = struct.Struct("<IQQQQ")


def scrub_hnsw_segment(segment: Path) -> bool:
    """Zero the unused tail of one HNSW segment's ``data_level0.bin`` and ``length.bin``.

    The header (``header.bin``: u32 format version, then u64 offset_level0, max_elements,
    cur_element_count, size_data_per_element) says how many element slots are in use; bytes past
    them are never read by the index. Returns whether anything was zeroed. Files in an unknown
    format are left alone.
    """
    try:
        raw = (segment / "header.bin").read_bytes()
    except OSError:
        return False
    if len(raw) < _HNSW_HEADER.size:
        return False
    version, _offset, max_elements, count, size = _HNSW_HEADER.unpack_from(raw)
    if version != 1 or size <= 0 or count > max_elements:
        return False
    changed = _zero_tail(segment / "data_level0.bin", count * size)
    return _zero_tail(segment / "length.bin", count * 4) or changed


def _zero_tail(path: Path, start: int) -> bool:
    """Overwrite ``path`` from ``start`` to its end with zeros, unless it is zero already."""
    chunk = 1 << 20
    try:
        length = path.stat().st_size
        if length <= start:
            return False
        with path.open("r+b") as fh:
            fh.seek(start)
            if not any(fh.read(chunk).strip(b"\0") for _ in range(0, length - start, chunk)):
                return False
            fh.seek(start)
            for offset in range(start, length, chunk):
                fh.write(bytes(min(chunk, length - offset)))
            fh.flush()
            os.fsync(fh.fileno())
    except OSError:
        return False
    return True


_SEGMENT_DIR = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def remove_orphan_segments(directory: Path) -> int:
    """Delete segment directories no collection uses any more (Chroma leaves them behind when
    a collection is deleted, vectors included). Returns how many were removed."""
    import shutil

    db_path = directory / SQLITE_FILE
    if not db_path.exists():
        return 0
    try:
        db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30.0)
        try:
            live = {row[0] for row in db.execute("SELECT id FROM segments")}
        finally:
            db.close()
    except sqlite3.Error:
        return 0
    removed = 0
    for child in directory.iterdir():
        if child.is_dir() and _SEGMENT_DIR.match(child.name) and child.name not in live:
            shutil.rmtree(child, ignore_errors=True)
            removed += 1
    return removed


def scrub_hnsw_segments(directory: Path) -> int:
    """Scrub every segment directory under a local store; returns how many files changed."""
    return sum(scrub_hnsw_segment(header.parent) for header in directory.glob("*/header.bin"))


def erase_queue_rows(directory: Path, ids: Sequence[str]) -> None:
    """Remove the write-ahead queue rows of erased ids (not their delete markers), vacuum and
    checkpoint, so that no byte of those records stays in the SQLite file."""
    db_path = directory / SQLITE_FILE
    if not db_path.exists():
        return
    try:
        db = sqlite3.connect(str(db_path), timeout=30.0, isolation_level=None)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {db_path} to erase forgotten memories: {exc}") from None
    try:
        db.execute("PRAGMA secure_delete = ON")
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), ID_BATCH):
            batch = unique[start : start + ID_BATCH]
            marks = ",".join("?" * len(batch))
            db.execute(
                f"DELETE FROM embeddings_queue WHERE id IN ({marks}) AND operation != ?",
                (*batch, _DELETE_OPERATION),
            )
        db.execute("VACUUM")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.Error as exc:
        raise StoreError(f"could not fully erase forgotten memories from {db_path}: {exc}") from None
    finally:
        db.close()


__all__ = ["SQLITE_FILE", "erase_queue_rows", "remove_orphan_segments", "scrub_hnsw_segment", "scrub_hnsw_segments"]
