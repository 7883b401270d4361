"""Limits kept on disk, shared by every process of a project.

:class:`WriteLedger` counts automatic memory writes per day and per session in
``.memory/index/auto_writes.json`` (machine-local, git-ignored with the index): ``{"day":
"2026-11-25", "sessions": {"<session id>": 3, ...}}``. Reads and updates hold an exclusive
``flock`` on ``auto_writes.lock`` beside it and replace the file atomically, so three ``-p``
runs started together count every write once. A new day starts a new count; a file that cannot
be read counts as empty (a limit, never a reason to fail a save).
"""

from __future__ import annotations

import fcntl
import json
import os
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

from memagent.fsutil import atomic_write, make_dirs

LEDGER_NAME = "auto_writes.json"


def _today() -> str:
    return datetime.now(timezone.utc).date().isoformat()


class WriteLedger:
    """Per-day, per-session counts of automatic writes for one project (see the module docstring)."""

    def __init__(self, folder: Path, today: Callable[[], str] = _today) -> None:
        self.path = Path(folder) / LEDGER_NAME
        self._today = today

    @contextmanager
    def _locked(self) -> Iterator[None]:
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


__all__ = ["LEDGER_NAME", "WriteLedger"]
