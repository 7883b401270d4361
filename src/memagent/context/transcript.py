"""Append-only JSONL transcripts: ``.transcripts/<session_id>.jsonl``.

One JSON object per line, written and flushed as each message is produced, so a ``kill -9``
loses at most the message in flight. Nothing here ever rewrites or deletes a line. The session's
:class:`~memagent.context.conversation.Conversation` is the one writer of its records.

Record types (:data:`RECORD_TYPES`):
- ``session_start``: session_id, model, cwd, memagent version, resumed_from (optional); written
  lazily, just before the first other record
- ``message``: id (sequence number), role, content (wire-shaped blocks), usage (assistant only)
- ``compaction``: summary, reinjected (state texts), current_request, transcript_name, kept_from
  (message id where the kept tail starts), dropped_from, dropped_messages, tokens_before/after,
  focus, summary_model (None for the rule-based digest), fallback (why no model wrote it)
- ``todo``: items (the whole list after each change)
- ``extraction``: ids (the messages just mined for memories), reason, stored (the cards saved)
- ``resume`` (resumed_from, seeded_messages, warnings) and ``resume_end`` (seeded_through): the
  messages between them were copied from the resumed session and open no user turn
- ``session_summary``: summary (a rule-made digest of the session), open_todos, ended_at; written
  at session end for the next session's continuity note
- ``session_end``: read when present; this version does not write it
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


RECORD_TYPES = frozenset(
    {"session_start", "message", "compaction", "todo", "extraction", "resume", "resume_end", "session_summary", "session_end"}
)


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
    """Appends records, one JSON line each, flushed as they come.

    A failed write (a full disk, a vanished directory) never loses a record and never ends the
    session: unwritten lines stay in memory, in order, and go out before the next record once
    writing works again. ``failure`` says why writing is failing (None when all is on disk).
    """

    path: Path
    _fh: IO[bytes] | None = field(default=None, repr=False)
    _next_id: int = 1
    # written just before the first other record, so a session that never says anything
    # leaves no file behind
    _header: dict[str, Any] | None = field(default=None, repr=False)
    _closed: bool = False
    # background memory extraction records from another thread: one line at a time
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _backlog: list[bytes] = field(default_factory=list, repr=False)
    _torn: bool = False  # a failed write may have left half a line on disk
    failure: str | None = None

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

    @staticmethod
    def _stamp(record: dict[str, Any]) -> dict[str, Any]:
        return {"type": record["type"], "time": utc_now(), **{k: v for k, v in record.items() if k not in ("type", "time")}}

    @staticmethod
    def _line(record: dict[str, Any]) -> bytes:
        return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")

    @property
    def session_id(self) -> str:
        return self.path.stem

    @property
    def pending(self) -> int:
        """Records kept in memory because they could not be written yet."""
        return len(self._backlog)

    def append(self, record: dict[str, Any]) -> dict[str, Any]:
        record = self._stamp(record)
        with self._lock:
            if self._closed:
                raise TranscriptError(f"transcript {self.path} is closed")
            if self._header is not None:
                header, self._header = self._header, None
                self._backlog.append(self._line(self._stamp(header)))
            self._backlog.append(self._line(record))
            self._drain_locked()
        return record

    def _drain_locked(self) -> None:
        """Write every pending line in order; on failure keep the rest for the next try."""
        try:
            if self._fh is None:
                self._fh = self.path.open("ab", buffering=0)
            if self._torn:
                self._write_all(b"\n")  # end a half-written line; readers skip blank lines
                self._torn = False
            while self._backlog:
                self._write_all(self._backlog[0])
                self._backlog.pop(0)
            self.failure = None
        except OSError as exc:
            self._torn = self._fh is not None
            self.failure = f"cannot write transcript {self.path}: {exc.strerror or exc}"

    def _write_all(self, data: bytes) -> None:
        assert self._fh is not None
        view = memoryview(data)
        while view:
            written = self._fh.write(view)
            view = view[written or 0 :]
            if not written:
                raise OSError(28, "no space left on device")

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
        """Write what is pending (one last try), then close; ``failure`` tells what was lost."""
        with self._lock:
            if self._backlog:
                self._drain_locked()
            if self._backlog:
                self.failure = f"{len(self._backlog)} transcript records could not be written to {self.path}: {self.failure}"
            self._closed = True
            if self._fh is not None:
                try:
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
