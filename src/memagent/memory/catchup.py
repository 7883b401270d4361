"""Catch-up: learn from the messages of earlier sessions that were never mined.

A session learns every N user turns, before a compaction drops messages and at its end; a
session killed with SIGKILL (or whose last extraction failed) leaves its last turns unmined.
At the next start those messages are mined in the background, bounded per start
(:data:`MAX_SESSIONS` sessions, :data:`MAX_MESSAGES` messages); ``memagent memory learn
[--session ID]`` does the same in the foreground.

What counts as mined
    The ids a session recorded itself (its transcript's ``extraction`` records) and the ids a
    catch-up recorded for it: ``mined`` records of the project's learning history (session_id,
    ids; ``complete: true`` once nothing of the session is left). A session is never mined twice.

Which sessions
    Only sessions that ran with memory on: each holds a *live mark* while it runs (an exclusive
    ``flock`` on ``.memory/local/index/live/<session>.lock``, released by the kernel when the process
    dies, even by SIGKILL). A session whose mark is still held is running and learns for itself;
    one without a mark ran with memory off (or before this version) and is left alone. A session
    another one resumed is skipped: the resumer carried its messages over and learns them. One
    catch-up at a time per project (``.memory/local/index/catchup.lock``); a second process skips.

Nothing here reads transcripts itself: the caller passes each session's records (the
``context`` room owns the transcript format), oldest first.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from memagent.fsutil import make_dirs
from memagent.jsontypes import JsonMapping, JsonObject, JsonValue, json_list
from memagent.memory.layout import ensure_index, index_dir
from memagent.memory.learning_history import LearningHistory
from memagent.memory.session_end import worth_learning_at_end

if TYPE_CHECKING:
    from memagent.memory.learning import LearningPipeline, LearningReport

MAX_SESSIONS = 3  # sessions mined per start
MAX_MESSAGES = 400  # messages mined per start, across those sessions
SCAN_SESSIONS = 20  # newest transcripts looked at per start
MINED = "mined"
EXTRACTION_RECORD = "extraction"  # a session's own record of the ids it mined (see context.transcript)


def _lock_dir(memory_dir: Path) -> Path:
    return index_dir(memory_dir) / "live"  # machine-local, beside the catalog (see ``memory.layout``)


def _lock_path(memory_dir: Path, session_id: str) -> Path:
    return _lock_dir(memory_dir) / f"{session_id}.lock"


class FileLock:
    """An exclusive ``flock`` held on a file until :meth:`release` (or the process's death)."""

    def __init__(self, fd: int, path: Path) -> None:
        self._fd: int | None = fd
        self.path = path

    @classmethod
    def try_hold(cls, path: Path, memory_dir: Path) -> FileLock | None:
        """The lock on ``path`` (inside the index folder of the store at ``memory_dir``), or
        ``None`` when another process holds it."""
        ensure_index(memory_dir)  # the local part and its .gitignore first: a lock is never staged
        make_dirs(path.parent)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return None
        return cls(fd, path)

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with suppress(OSError):
                os.close(fd)


def hold_live_mark(memory_dir: Path, session_id: str) -> FileLock | None:
    """Mark ``session_id`` as running with memory on (held until released or the process dies)."""
    try:
        return FileLock.try_hold(_lock_path(memory_dir, session_id), memory_dir)
    except OSError:
        return None


def session_state(memory_dir: Path, session_id: str) -> str:
    """``"live"`` (its mark is held), ``"ended"`` (a mark nobody holds) or ``"unmarked"``."""
    path = _lock_path(memory_dir, session_id)
    if not path.is_file() or path.is_symlink():
        return "unmarked"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return "unmarked"
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return "live"
    finally:
        os.close(fd)
    return "ended"


@dataclass
class Unmined:
    """An earlier session's messages not mined yet (transcript ids as strings)."""

    session_id: str
    messages: list[JsonObject]
    ids: list[str]
    started: date
    mined: set[str] = field(default_factory=set)
    complete: bool = True  # every unmined message is in this slice (not cut by the bound)


def mined_in_history(history: LearningHistory) -> tuple[dict[str, set[str]], set[str]]:
    """(ids mined per session by catch-ups, sessions marked complete)."""
    ids: dict[str, set[str]] = {}
    complete: set[str] = set()
    for record in history.records(MINED):
        session = str(record.get("session_id") or "")
        ids.setdefault(session, set()).update(str(i) for i in json_list(record.get("ids")))
        if record.get("complete"):
            complete.add(session)
    return ids, complete


def _started(records: Sequence[JsonMapping]) -> date:
    for record in records:
        stamp = record.get("time")
        if isinstance(stamp, str):
            with suppress(ValueError):
                return datetime.fromisoformat(stamp).astimezone(UTC).date()
    return datetime.now(UTC).date()


def unmined_messages(session_id: str, records: Sequence[JsonMapping], mined_before: Iterable[str] = ()) -> Unmined:
    """The session's own messages (not those a resume copied in) that nobody mined yet."""
    mined = {str(i) for i in mined_before}
    for record in records:
        if record.get("type") == EXTRACTION_RECORD:
            mined.update(str(i) for i in json_list(record.get("ids")))
    messages: list[JsonObject] = []
    ids: list[str] = []
    seeding = False
    for record in records:
        kind = record.get("type")
        if kind in ("resume", "resume_end"):
            seeding = kind == "resume"
        elif kind == "message" and not seeding and _speaker(record) is not None:
            content = record.get("content")
            if isinstance(content, (list, str)) and str(record.get("id")) not in mined:
                messages.append({"role": _speaker(record), "content": content})
                ids.append(str(record.get("id")))
    return Unmined(session_id, messages, ids, _started(records), mined)


def _speaker(record: JsonMapping) -> str | None:
    role = record.get("role")
    return role if isinstance(role, str) and role in ("user", "assistant") else None


def resumed_sessions(records: Sequence[JsonMapping]) -> set[str]:
    """Sessions this one resumed (their messages were carried over and are learned here)."""
    found = set()
    for record in records:
        if record.get("type") in ("resume", "session_start") and record.get("resumed_from"):
            found.add(str(record["resumed_from"]))
    return found


SessionSource = Callable[[], Iterable[tuple[str, Sequence[JsonMapping]]]]


def plan(
    sessions: Sequence[tuple[str, Sequence[JsonMapping]]],
    memory_dir: Path,
    history: LearningHistory,
    *,
    exclude: Iterable[str] = (),
    only: str | None = None,
    max_sessions: int = MAX_SESSIONS,
    max_messages: int = MAX_MESSAGES,
) -> tuple[list[Unmined], list[str]]:
    """(what to mine now, newest session first; sessions found to have nothing worth mining,
    to be marked complete). ``sessions``: (id, records), oldest first. ``only``: that session
    alone, whatever its mark (``memory learn --session``), unless it is running."""
    skip = set(exclude)
    mined, complete = mined_in_history(history)
    for _, records in sessions:
        skip |= resumed_sessions(records)
    chosen: list[Unmined] = []
    settled: list[str] = []
    budget = max_messages
    for session_id, records in reversed(list(sessions)):
        if len(chosen) >= max_sessions or budget <= 0:
            break
        if only is not None and session_id != only:
            continue
        state = session_state(memory_dir, session_id)
        if state == "live" or (only is None and (session_id in skip or session_id in complete or state != "ended")):
            continue
        found = unmined_messages(session_id, records, mined.get(session_id, ()))
        if not worth_learning_at_end(found.messages, found.ids, ()):
            settled.append(session_id)
            continue
        if len(found.ids) > budget:  # the oldest part now, the rest at a later start
            found.messages, found.ids, found.complete = found.messages[:budget], found.ids[:budget], False
        budget -= len(found.ids)
        chosen.append(found)
    return chosen, settled


def record_mined(
    history: LearningHistory, session_id: str, ids: Sequence[str], *, complete: bool = False, stored: Sequence[str] = ()
) -> None:
    """Write down that ``ids`` of ``session_id`` were mined (never mined again)."""
    history.append(
        {
            "kind": MINED,
            "session_id": session_id,
            "ids": list(ids),
            "stored": list(stored) or None,
            "complete": True if complete else None,
        }
    )


class PipelineFactory(Protocol):
    """Builds the pipeline that mines one earlier session (its id and date, what it already mined,
    where each mined part is recorded)."""

    def __call__(
        self, *, session_id: str, session_date: date, processed_ids: set[str], record: Callable[[JsonObject], None]
    ) -> LearningPipeline: ...


def mine(
    pending: Sequence[Unmined], history: LearningHistory, settled: Sequence[str], make_pipeline: PipelineFactory
) -> list[LearningReport]:
    """Mine each pending session with its own pipeline (cards carry that session's id and date);
    every part mined is recorded as it succeeds. Returns the :class:`LearningReport` of each
    session; a failure is its report (``error`` set) and leaves the rest for a later start."""
    from memagent.memory.learning import LearningError

    for session_id in settled:
        record_mined(history, session_id, [], complete=True)
    reports = []
    for found in pending:
        pipeline = make_pipeline(
            session_id=found.session_id,
            session_date=found.started,
            processed_ids=found.mined,
            record=_recorder(history, found.session_id),
        )
        try:
            report = pipeline.process(found.messages, found.ids, "catch_up")
        except LearningError as exc:
            if exc.report is not None:
                exc.report.session_id = found.session_id
            reports.append(exc.report)
            continue
        report.session_id = found.session_id
        if found.complete:
            record_mined(history, found.session_id, [], complete=True)
        reports.append(report)
    return [r for r in reports if r is not None]


def _recorder(history: LearningHistory, session_id: str) -> Callable[[JsonObject], None]:
    """Records each part a pipeline mined (its ``extraction`` record) as mined for ``session_id``."""

    def record(extraction: JsonObject) -> None:
        record_mined(history, session_id, _strings(extraction.get("ids")), stored=_strings(extraction.get("stored")))

    return record


def _strings(value: JsonValue) -> list[str]:
    return [str(item) for item in json_list(value)]


def hold_catch_up(memory_dir: Path) -> FileLock | None:
    """One catch-up at a time per project; ``None`` when another process is catching up."""
    try:
        return FileLock.try_hold(index_dir(memory_dir) / "catchup.lock", memory_dir)
    except OSError:
        return None


__all__ = [
    "FileLock",
    "MAX_MESSAGES",
    "MAX_SESSIONS",
    "SCAN_SESSIONS",
    "Unmined",
    "hold_catch_up",
    "hold_live_mark",
    "mine",
    "mined_in_history",
    "plan",
    "record_mined",
    "resumed_sessions",
    "session_state",
    "unmined_messages",
]
