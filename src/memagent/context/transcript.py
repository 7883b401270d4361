"""Append-only JSONL transcripts: ``.transcripts/<session_id>.jsonl``.

One JSON object per line, written and flushed as each message is produced, so a ``kill -9``
loses at most the message in flight. The session's
:class:`~memagent.context.conversation.Conversation` is the one writer of its records. The
writer only appends; ``memagent sessions prune``/``rm`` delete and :func:`redact_in_transcripts`
rewrites (atomically) what the user asks to erase.

Nothing secret reaches the file: every string of a record is passed through
:func:`memagent.redact.redact` as it is written (the live conversation keeps the value the user
gave). The folder is created 0700 with a ``.gitignore`` of ``*``, files 0600.

Record types of the core (:data:`RECORD_TYPES`); a feature adds the kinds it writes (its
``record_kinds``, described in its module) and restores its state from them itself. Every kind,
and the blocks of a ``message`` record and the ``format`` number of ``session_start``, are
described in ``docs/transcript.md``.

- ``session_start``: format (of the message blocks; see :data:`FORMAT`), session_id, model, cwd,
  memagent version, kind (``interactive``,
  ``headless`` or ``subagent``), logical_session, resumed_from (optional); for a subagent also
  agent, description, parent_session; written lazily, just before the first other record
- ``message``: id (sequence number), role, content (wire-shaped blocks), usage (assistant only),
  sent_as_preview (true when a text of it was too large for the context: the record keeps it
  whole, the model got a preview and a file under ``<session>/attachments/``)
- ``compaction``: summary, reinjected (state texts), current_request, transcript_name, kept_from
  (message id where the kept tail starts), dropped_from, dropped_messages, tokens_before/after,
  focus, summary_model (None for the rule-based digest), fallback (why no model wrote it)
- ``set_aside``: ids (messages whose texts above ``limit`` tokens the model got as previews from
  then on, because the context was too large for the model); resume sets them aside the same way
- ``extraction``: ids (the messages just mined for memories), reason, stored (the cards saved)
- ``resume`` (resumed_from, seeded_messages, warnings) and ``resume_end`` (seeded_through): the
  messages between them were copied from the resumed session and open no user turn
- ``checkpoint``: turn (the user turn about to start), commit (the working tree at that moment,
  in the shadow repository of :mod:`memagent.checkpoints`), changed (files changed since the
  previous checkpoint), skipped (files too large to keep, nested repositories), seconds; or
  error (why no checkpoint could be taken)
- ``rewind``: to_turn, message_id (the message that opened that turn), conversation (true: the
  conversation goes back to the start of that turn; every record from that message to this one
  stops counting, see :mod:`memagent.context.rewind`), code (true: the files were restored),
  checkpoint (the commit restored), before (a checkpoint of the tree just before, to undo it),
  restored / removed (paths), forgotten (memory card ids erased as learned after that point)
- ``session_end``: read when present; this version does not write it
Every record carries ``type`` and ``time`` (UTC ISO 8601).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO

from memagent.decoding import scrub
from memagent.fsutil import UnsafePath, atomic_write, open_private_append, private_dir, refuse_symlinks
from memagent.jsontypes import JsonObject, JsonValue
from memagent.llm.items import upgrade_legacy
from memagent.redact import redact_value

FORMAT = 2
"""The transcript format: 2 stores an injected text's kind in its block (``injected``); 1 (no
``format`` field) left it to the text's opening words."""


RECORD_TYPES = frozenset(
    {
        "session_start",
        "message",
        "compaction",
        "extraction",
        "resume",
        "resume_end",
        "session_end",
        "checkpoint",
        "rewind",
        "set_aside",
    }
)


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


SUFFIX_LIMIT = 0x10000  # four hex digits after the second


def new_session_id(now: datetime | None = None, transcripts: Path | None = None) -> str:
    """Sortable by start: ``20261121-094230-3fa2`` (UTC second, four random hex digits).

    Sessions are listed, continued (``-c``) and picked by the order of their ids, so a session
    started in the same second as one already in ``transcripts`` gets a larger suffix (past the
    last one of that second, the next second): started one after the other, the newer sorts after.
    """
    now = now or datetime.now(UTC)
    while True:
        second = now.strftime("%Y%m%d-%H%M%S")
        low = _next_free_suffix(transcripts, second) if transcripts is not None else 0
        if low < SUFFIX_LIMIT:
            return f"{second}-{low + secrets.randbelow(SUFFIX_LIMIT - low):04x}"
        now += timedelta(seconds=1)


def _next_free_suffix(transcripts: Path, second: str) -> int:
    """One past the largest suffix of the sessions started in ``second`` (0 when none was)."""
    taken = [-1]
    with suppress(OSError):
        for path in transcripts.glob(f"{second}-*.jsonl"):
            suffix = path.stem[len(second) + 1 :]
            if len(suffix) == 4 and all(c in "0123456789abcdef" for c in suffix):
                taken.append(int(suffix, 16))
    return max(taken) + 1


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
    _header: JsonObject | None = field(default=None, repr=False)
    _closed: bool = False
    # background memory extraction records from another thread: one line at a time
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _backlog: list[bytes] = field(default_factory=list, repr=False)
    _torn: bool = False  # a failed write may have left half a line on disk
    failure: str | None = None

    @classmethod
    def open(cls, directory: Path, session_id: str, start_id: int = 1) -> TranscriptWriter:
        """A writer for ``directory/<session_id>.jsonl``; a symlinked ``directory`` is refused."""
        try:
            private_dir(directory, gitignore=True, inside=directory.parent)
        except UnsafePath as exc:
            raise TranscriptError(str(exc)) from None
        writer = cls(path=directory / f"{session_id}.jsonl", _next_id=start_id)
        if not os.access(directory, os.W_OK):
            raise TranscriptError(f"cannot write transcripts in {directory}: permission denied")
        return writer

    def set_header(self, record: JsonObject) -> None:
        """The ``session_start`` record, written lazily with the first real record."""
        self._header = {"type": record["type"], "format": FORMAT, **{k: v for k, v in record.items() if k != "type"}}

    @staticmethod
    def _stamp(record: JsonObject) -> JsonObject:
        return {
            "type": record["type"],
            "time": utc_now(),
            **{k: v for k, v in record.items() if k not in ("type", "time")},
        }

    @staticmethod
    def _line(record: JsonObject) -> bytes:
        """One JSON line, secrets replaced by placeholders naming their kind; a lone surrogate
        (undecodable input that slipped through) becomes U+FFFD instead of failing the write."""
        redacted = redact_value(record)
        return (scrub(json.dumps(redacted, ensure_ascii=False, separators=(",", ":"))) + "\n").encode("utf-8")

    @property
    def session_id(self) -> str:
        return self.path.stem

    @property
    def pending(self) -> int:
        """Records kept in memory because they could not be written yet."""
        return len(self._backlog)

    def append(self, record: JsonObject) -> JsonObject:
        record = self._stamp(record)
        line = self._line(record)  # redacting a long tool output takes a few ms: not under the lock
        with self._lock:
            if self._closed:
                raise TranscriptError(f"transcript {self.path} is closed")
            if self._header is not None:
                header, self._header = self._header, None
                self._backlog.append(self._line(self._stamp(header)))
            self._backlog.append(line)
            self._drain_locked()
        return record

    def _drain_locked(self) -> None:
        """Write every pending line in order; on failure keep the rest for the next try."""
        try:
            if self._fh is None:
                self._fh = open_private_append(self.path)
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

    def message(self, message: JsonObject, usage: dict[str, int] | None = None) -> str:
        """Record one message; returns its id."""
        with self._lock:
            message_id = str(self._next_id)
            self._next_id += 1
        record: JsonObject = {
            "type": "message",
            "id": message_id,
            "role": message["role"],
            "content": message["content"],
        }
        if message.get("sent_as_preview"):
            record["sent_as_preview"] = True
        if usage:
            record["usage"] = {**usage}
        self.append(record)
        return message_id

    def close(self) -> None:
        """Write what is pending (one last try), then close; ``failure`` tells what was lost."""
        with self._lock:
            if self._backlog:
                self._drain_locked()
            if self._backlog:
                self.failure = (
                    f"{len(self._backlog)} transcript records could not be written to {self.path}: {self.failure}"
                )
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
    records: list[JsonObject]
    warnings: list[str]


def read_records(path: Path) -> LoadedTranscript:
    """Read every record; a truncated or garbage line is skipped with a warning, never fatal."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TranscriptError(f"cannot read transcript {path}: {exc.strerror or exc}") from None
    records: list[JsonObject] = []
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
    return LoadedTranscript(path=path, records=_upgraded(records), warnings=warnings)


def _upgraded(records: list[JsonObject]) -> list[JsonObject]:
    """The records of a transcript written before :data:`FORMAT` 2 with each injected text's
    kind written down (those versions told it by the text's opening words); a newer one as is."""
    start = next((r for r in records if r.get("type") == "session_start"), {})
    fmt = start.get("format")
    if isinstance(fmt, int) and fmt >= FORMAT:
        return records
    upgraded: list[JsonObject] = []
    for record in records:
        content = record.get("content")
        if record.get("type") == "message" and isinstance(content, list):
            record = {**record, "content": upgrade_legacy(content)}
        upgraded.append(record)
    return upgraded


def iter_transcripts(directory: Path) -> Iterator[Path]:
    """Transcript files, oldest first (session ids sort by start time). A symlinked folder (or
    file) is not followed: its transcripts are not this project's."""
    if directory.is_symlink() or not directory.is_dir():
        return iter(())
    return iter(sorted(p for p in directory.glob("*.jsonl") if not p.is_symlink()))


HEADER_PEEK_BYTES = 64 * 1024


def written_by_memagent(path: Path) -> bool:
    """True when ``path`` is a regular file whose first record is memagent's ``session_start``
    for the session its name says: what retention and ``sessions prune`` may delete."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        with open(path, "rb") as fh:
            first = fh.readline(HEADER_PEEK_BYTES)
        record = json.loads(first.decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(record, dict) and record.get("type") == "session_start" and record.get("session_id") == path.stem


# ------------------------------------------------------------------ erasing

FORGOTTEN = "[REDACTED:forgotten]"


def remove_session(path: Path) -> None:
    """Delete a transcript and its folder of saved outputs (``.transcripts/<id>/``); a symlink
    in their place is not followed (nor removed: it is not memagent's)."""
    with suppress(FileNotFoundError):
        if not stat.S_ISLNK(os.lstat(path).st_mode):
            path.unlink()
    folder = path.with_suffix("")
    with suppress(FileNotFoundError):
        if stat.S_ISDIR(os.lstat(folder).st_mode):
            shutil.rmtree(folder)


def prune_transcripts(
    directory: Path, older_than: timedelta, *, keep: Iterable[str] = (), now: float | None = None
) -> list[str]:
    """Delete sessions whose transcript was last written more than ``older_than`` ago (one
    ``stat`` per file, so cheap enough for every session start); returns the ids removed.

    Only memagent's own transcripts go (:func:`written_by_memagent`), with their output folders,
    and only inside a real folder: a symlinked ``directory`` raises :class:`UnsafePath`."""
    refuse_symlinks(directory.parent, directory)
    cutoff = (time.time() if now is None else now) - older_than.total_seconds()
    kept = set(keep)
    removed = []
    for path in iter_transcripts(directory):
        try:
            stale = path.stem not in kept and path.stat().st_mtime < cutoff
        except FileNotFoundError:
            continue
        if stale and written_by_memagent(path):
            remove_session(path)
            removed.append(path.stem)
    return removed


def _replace_strings(value: JsonValue, replace: Callable[[str], str]) -> JsonValue:
    if isinstance(value, str):
        return replace(value)
    if isinstance(value, list):
        return [_replace_strings(item, replace) for item in value]
    if isinstance(value, dict):
        return {key: _replace_strings(item, replace) for key, item in value.items()}
    return value


def _erase_in_line(line: bytes, text: str, needles: set[bytes]) -> bytes:
    try:
        record = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):  # a damaged line: replace the raw bytes
        for needle in needles:
            line = line.replace(needle, FORGOTTEN.encode())
        return line
    erased = _replace_strings(record, lambda s: s.replace(text, FORGOTTEN))
    return json.dumps(erased, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _erase_in_file(path: Path, text: str, needles: set[bytes]) -> int:
    """Rewrite one transcript (or saved output) without ``text``; the number of lines changed."""
    try:
        raw = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return 0
    if not any(needle in raw for needle in needles):
        return 0
    if path.suffix != ".jsonl":  # a saved command output: plain text
        count = raw.count(text.encode("utf-8"))
        if count:
            atomic_write(path, raw.replace(text.encode("utf-8"), FORGOTTEN.encode()))
        return count
    lines = raw.split(b"\n")
    new_lines = [_erase_in_line(line, text, needles) if any(n in line for n in needles) else line for line in lines]
    count = sum(1 for old, new in zip(lines, new_lines) if old != new)
    if count:
        atomic_write(path, b"\n".join(new_lines))
    return count


def redact_in_transcripts(transcripts_dir: Path, text: str, *, skip: Iterable[str] = ()) -> int:
    """Replace every occurrence of ``text`` in the project's transcripts, saved command outputs
    and attachments with a placeholder; returns the number of records (and output occurrences) changed.

    Each file that holds it is rewritten atomically (a reader sees the old file or the new one).
    ``skip`` names sessions to leave alone: a transcript still being written by a running
    session must not be replaced under it.
    """
    text = text.strip()
    if not text:
        return 0
    needles = {
        text.encode("utf-8"),
        json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8"),
        json.dumps(text)[1:-1].encode("ascii"),
    }
    skipped = set(skip)
    changed = 0
    for path in iter_transcripts(transcripts_dir):
        if path.stem in skipped:
            continue
        changed += _erase_in_file(path, text, needles)
        for folder in ("outputs", "attachments"):
            saved_files = path.with_suffix("") / folder
            if saved_files.is_dir():
                for saved in sorted(saved_files.iterdir()):
                    changed += _erase_in_file(saved, text, needles)
    return changed
