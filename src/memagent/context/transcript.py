"""Append-only JSONL transcripts: ``.transcripts/<session_id>.jsonl``.

One JSON object per line, written and flushed as each message is produced, so a ``kill -9``
loses at most the message in flight. Nothing here ever rewrites or deletes a line.

Record types:
- ``session_start``: session_id, model, cwd, memagent version, resumed_from (optional)
- ``message``: id (sequence number), role, content (wire-shaped blocks), usage (assistant only)
- ``compaction``: summary, kept_from (message id where the kept tail starts), tokens before/after
- ``todo``: items (the whole list after each change)
- ``extraction``: message ids already mined for memories
- ``session_end``
Every record carries ``type`` and ``time`` (UTC ISO 8601).
"""

from __future__ import annotations

import json
import os
import secrets
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Iterator


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def new_session_id(now: datetime | None = None) -> str:
    """Sortable and unique enough: ``20261121-094230-3fa2``."""
    now = now or datetime.now(timezone.utc)
    return now.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


class TranscriptError(Exception):
    """A transcript that cannot be read or written; ``str()`` names the file."""


@dataclass
class TranscriptWriter:
    path: Path
    _fh: IO[str] | None = field(default=None, repr=False)
    _next_id: int = 1
    # background memory extraction records from another thread: one line at a time
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def open(cls, directory: Path, session_id: str, start_id: int = 1) -> "TranscriptWriter":
        directory.mkdir(parents=True, exist_ok=True)
        writer = cls(path=directory / f"{session_id}.jsonl", _next_id=start_id)
        try:
            writer._fh = writer.path.open("a", encoding="utf-8")
        except OSError as exc:
            raise TranscriptError(f"cannot open transcript {writer.path}: {exc.strerror or exc}") from None
        return writer

    @property
    def session_id(self) -> str:
        return self.path.stem

    def append(self, record: dict[str, Any]) -> dict[str, Any]:
        record = {"type": record["type"], "time": utc_now(), **{k: v for k, v in record.items() if k != "type"}}
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        with self._lock:
            if self._fh is None:
                raise TranscriptError(f"transcript {self.path} is closed")
            try:
                self._fh.write(line + "\n")
                self._fh.flush()
            except OSError as exc:
                raise TranscriptError(f"cannot write transcript {self.path}: {exc.strerror or exc}") from None
        return record

    def message(self, message: dict[str, Any], usage: dict[str, int] | None = None) -> str:
        """Record one message; returns its id."""
        with self._lock:
            message_id = str(self._next_id)
            self._next_id += 1
        record: dict[str, Any] = {"type": "message", "id": message_id, "role": message["role"], "content": message["content"]}
        if usage:
            record["usage"] = usage
        self.append(record)
        return message_id

    def close(self) -> None:
        with self._lock:
            self._close_locked()

    def _close_locked(self) -> None:
        if self._fh is not None:
            try:
                self._fh.flush()
                os.fsync(self._fh.fileno())
            except OSError:
                pass
            self._fh.close()
            self._fh = None


@dataclass
class LoadedTranscript:
    path: Path
    records: list[dict[str, Any]]
    warnings: list[str]


def read_records(path: Path) -> LoadedTranscript:
    """Read every record; a truncated or garbage line is skipped with a warning, never fatal."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TranscriptError(f"cannot read transcript {path}: {exc.strerror or exc}") from None
    records: list[dict[str, Any]] = []
    warnings: list[str] = []
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            warnings.append(f"{path.name}:{number}: skipped an unreadable line (truncated or corrupt)")
            continue
        if not isinstance(record, dict) or "type" not in record:
            warnings.append(f"{path.name}:{number}: skipped a line that is not a transcript record")
            continue
        records.append(record)
    return LoadedTranscript(path=path, records=records, warnings=warnings)


def iter_transcripts(directory: Path) -> Iterator[Path]:
    """Transcript files, oldest first (session ids sort by start time)."""
    if not directory.is_dir():
        return iter(())
    return iter(sorted(directory.glob("*.jsonl")))
