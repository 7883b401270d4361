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
    # written just before the first other record, so a session that never says anything
    # leaves no file behind
    _header: dict[str, Any] | None = field(default=None, repr=False)
    _closed: bool = False
    # background memory extraction records from another thread: one line at a time
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def open(cls, directory: Path, session_id: str, start_id: int = 1) -> "TranscriptWriter":
        directory.mkdir(parents=True, exist_ok=True)
        writer = cls(path=directory / f"{session_id}.jsonl", _next_id=start_id)
        if not os.access(directory, os.W_OK):
            raise TranscriptError(f"cannot write transcripts in {directory}: permission denied")
        return writer

    def set_header(self, record: dict[str, Any]) -> None:
        """The ``session_start`` record, written lazily with the first real record."""
        self._header = record

    def _ensure_open(self) -> IO[str]:
        if self._closed:
            raise TranscriptError(f"transcript {self.path} is closed")
        if self._fh is None:
            try:
                self._fh = self.path.open("a", encoding="utf-8")
            except OSError as exc:
                raise TranscriptError(f"cannot open transcript {self.path}: {exc.strerror or exc}") from None
            if self._header is not None:
                header, self._header = self._header, None
                self._write_line(self._fh, self._stamp(header))
        return self._fh

    @staticmethod
    def _stamp(record: dict[str, Any]) -> dict[str, Any]:
        return {"type": record["type"], "time": utc_now(), **{k: v for k, v in record.items() if k not in ("type", "time")}}

    def _write_line(self, fh: IO[str], record: dict[str, Any]) -> None:
        try:
            fh.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
            fh.flush()
        except OSError as exc:
            raise TranscriptError(f"cannot write transcript {self.path}: {exc.strerror or exc}") from None

    @property
    def session_id(self) -> str:
        return self.path.stem

    def append(self, record: dict[str, Any]) -> dict[str, Any]:
        record = self._stamp(record)
        with self._lock:
            self._write_line(self._ensure_open(), record)
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
        self._closed = True
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
