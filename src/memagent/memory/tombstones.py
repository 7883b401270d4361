"""Tombstones: the ids of forgotten cards and when, so that a forgotten id stays forgotten.

``<store>/local/tombstones.jsonl`` holds one JSON object per forget, ``{"id": "m_…",
"forgotten_at": "2026-11-20T10:04:05.123456Z"}``, never the text; it is local (see
``memory.layout``). An import skips a forgotten id unless forced, and a card file whose id is
here (a ``git pull`` or checkout brought it back) is withheld from the catalog until the user
erases it again or keeps it (``Store.withheld``, ``Store.readmit``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memagent.fsutil import atomic_write
from memagent.memory.cards import iso_utc, utc_now
from memagent.memory.layout import TOMBSTONE_NAME, ensure_local, local_dir


@dataclass(frozen=True)
class Tombstones:
    """The tombstone list of the store at ``root``."""

    root: Path

    @property
    def path(self) -> Path:
        return local_dir(self.root) / TOMBSTONE_NAME

    def all(self) -> dict[str, str]:
        """Forgotten ids and when (a line that cannot be read is skipped)."""
        found: dict[str, str] = {}
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return found
        for line in lines:
            card_id = _id_of(line)
            if card_id is not None:
                found[card_id] = str(json.loads(line).get("forgotten_at", ""))
        return found

    def add(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        ensure_local(self.root)
        stamp = iso_utc(utc_now())
        existing = self.path.read_text(encoding="utf-8") if self.path.exists() else ""
        lines = [json.dumps({"id": i, "forgotten_at": stamp}) for i in ids]
        atomic_write(self.path, existing + "\n".join(lines) + "\n")

    def remove(self, ids: Sequence[str]) -> None:
        """Take ids off the list (the user chose to have these cards again)."""
        drop = set(ids)
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return
        kept = [line for line in lines if _id_of(line) not in drop]
        if len(kept) != len(lines):
            atomic_write(self.path, "".join(line + "\n" for line in kept))


def came_back_reason(path: Path, card_id: str, when: str) -> str:
    """The one-line notice for a forgotten card whose file is back."""
    day = when[:10] or "earlier"
    return (
        f"{path}: {card_id} was forgotten here ({day}) and its file came back (a git pull or checkout?); "
        "not used. Keep or erase it with `memagent memory review`"
    )


def _id_of(line: str) -> str | None:
    try:
        record = json.loads(line)
        return str(record["id"]) if isinstance(record, dict) else None
    except (ValueError, KeyError, TypeError):
        return None


__all__ = ["Tombstones", "came_back_reason"]
