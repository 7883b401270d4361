"""Limits kept on disk, shared by every process of a project.

:class:`WriteLedger` counts automatic memory writes per day and per session in
``.memory/local/index/auto_writes.json`` (machine-local, git-ignored with the index): ``{"day":
"2026-11-25", "sessions": {"<session id>": 3, ...}}``. Reads and updates hold an exclusive
``flock`` on ``auto_writes.lock`` beside it and replace the file atomically, so three ``-p``
runs started together count every write once. A new day starts a new count; a file that cannot
be read counts as empty (a limit, never a reason to fail a save).
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from memagent.fsutil import atomic_write, make_dirs
from memagent.memory.layout import ensure_index, index_dir

if TYPE_CHECKING:
    from memagent.memory.catalog_entry import Entry

LEDGER_NAME = "auto_writes.json"


def _today() -> str:
    return datetime.now(UTC).date().isoformat()


class WriteLedger:
    """Per-day, per-session counts of automatic writes for one project (see the module docstring)."""

    def __init__(self, folder: Path, today: Callable[[], str] = _today) -> None:
        self.path = Path(folder) / LEDGER_NAME
        self._today = today
        self._store: Path | None = None

    @classmethod
    def of_store(cls, root: Path, today: Callable[[], str] = _today) -> WriteLedger:
        """The ledger of the store at ``root``, in its index folder (``memory.layout``)."""
        ledger = cls(index_dir(root), today)
        ledger._store = Path(root)
        return ledger

    @contextmanager
    def _locked(self) -> Iterator[None]:
        if self._store is not None:
            ensure_index(self._store)  # the local part and its .gitignore first: never staged
        make_dirs(self.path.parent)
        fd = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _read(self) -> dict[str, int]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("day") != self._today() or not isinstance(data.get("sessions"), dict):
            return {}
        return {str(k): int(v) for k, v in data["sessions"].items() if isinstance(v, int) and v > 0}

    def counts(self, session_id: str) -> tuple[int, int]:
        """(writes of ``session_id`` today, writes of every session today)."""
        with self._locked():
            sessions = self._read()
        return sessions.get(session_id, 0), sum(sessions.values())

    def add(self, session_id: str) -> None:
        with self._locked():
            sessions = self._read()
            sessions[session_id] = sessions.get(session_id, 0) + 1
            payload = json.dumps({"day": self._today(), "sessions": sessions}, sort_keys=True)
            atomic_write(self.path, payload + "\n", durable=False, keep_mode=False)


# -- the size quota -------------------------------------------------------------------------------
#
# ``memory_max_cards`` (0: none) bounds the active cards of each store (the project's, the
# user's). The count is the store's catalog on disk, so every process sees the same number. A
# save that takes a store past it archives the lowest-value active cards of that store (never
# the card just saved): status ``archived``, file kept, ``memory list --status archived`` shows
# them, ``memory edit ID --status active`` brings one back. Nothing is dropped, and the save
# says what it archived.

USER_STATED_BONUS = 0.25  # what the user said outlives what was inferred


def card_value(entry: Entry, uses: int = 0) -> float:
    """How much a card is worth keeping: confidence × (½ + importance), more for the user's own
    words and for use (``uses``: times it was retrieved or cited)."""
    value = float(entry.confidence) * (0.5 + float(entry.importance))
    if entry.source in ("user", "system"):
        value += USER_STATED_BONUS
    return value + 0.05 * min(uses, 10)


def over_quota(entries: Iterable[Entry], limit: int, keep: str, uses: Mapping[str, int] | None = None) -> list[str]:
    """Ids of the active cards to archive so that at most ``limit`` stay active, lowest value
    first (ties: the one idle longest), never ``keep``."""
    active = [e for e in entries if e.status == "active"]
    excess = len(active) - limit
    if limit <= 0 or excess <= 0:
        return []
    uses = uses or {}
    floor = datetime.min.replace(tzinfo=UTC)
    ranked = sorted(
        (e for e in active if e.id != keep),
        key=lambda e: (card_value(e, uses.get(e.id, 0)), e.last_used_at or e.created_at or floor),
    )
    return [e.id for e in ranked[:excess]]


def quota_note(archived: list[str], limit: int) -> str:
    """What a save at the quota did, in one line ("" when it archived nothing)."""
    if not archived:
        return ""
    shown = ", ".join(archived[:5]) + (", …" if len(archived) > 5 else "")
    return (
        f"memory_max_cards ({limit}) reached: archived {len(archived)} lowest-value "
        f"memor{'y' if len(archived) == 1 else 'ies'} ({shown}); `memagent memory list --status archived` "
        "shows them"
    )


__all__ = ["LEDGER_NAME", "WriteLedger", "card_value", "over_quota", "quota_note"]
