"""What ``memagent sessions list|show`` needs from the transcripts, without a terminal library."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memagent.context.conversation import opens_user_turn
from memagent.context.resume import ResumeError, session_path
from memagent.context.transcript import LoadedTranscript, TranscriptError, iter_transcripts, read_records
from memagent.markers import kind_of

FIRST_LINE_CHARS = 80


@dataclass
class SessionInfo:
    id: str
    path: str
    started: str | None
    last_activity: str | None
    turns: int
    compactions: int
    first_user_line: str
    model: str | None = None
    messages: int = 0
    resumed_from: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _mtime(path: Path) -> str | None:
    try:
        stamp = path.stat().st_mtime
    except OSError:
        return None
    return datetime.fromtimestamp(stamp, timezone.utc).isoformat(timespec="milliseconds")


def _user_words(content: list[Any]) -> str:
    """The first line the user typed in a message (no injected text: :func:`~memagent.markers.kind_of`)."""
    for block in content:
        if not isinstance(block, dict) or block.get("type") != "text":
            continue
        text = str(block.get("text", "")).strip()
        if not text or kind_of(block) is not None:
            continue
        line = text.splitlines()[0].strip()
        return line if len(line) <= FIRST_LINE_CHARS else line[: FIRST_LINE_CHARS - 1] + "…"
    return ""


def summarize_records(path: Path, loaded: LoadedTranscript) -> SessionInfo:
    """One row of ``sessions list`` from a transcript's records."""
    records = loaded.records
    start = next((r for r in records if r.get("type") == "session_start"), None)
    resumed_from = next((r.get("resumed_from") for r in records if r.get("type") == "resume"), None)
    resumed_from = resumed_from or (start or {}).get("resumed_from")
    turns = messages = compactions = 0
    first_line = ""
    seeding = False
    for record in records:
        kind = record.get("type")
        if kind == "resume":
            seeding = True
        elif kind == "resume_end":
            seeding = False
        elif kind == "compaction":
            compactions += 1
        elif kind == "message":
            messages += 1
            message = {"role": record.get("role"), "content": record.get("content") or []}
            if seeding or not isinstance(message["content"], list) or not opens_user_turn(message):
                continue
            turns += 1  # as Conversation.user_turns counts them live
            first_line = first_line or _user_words(message["content"])
    times = [str(r["time"]) for r in records if r.get("time")]
    return SessionInfo(
        id=path.stem,
        path=str(path),
        started=(start or {}).get("time") or (times[0] if times else _mtime(path)),
        last_activity=times[-1] if times else _mtime(path),
        turns=turns,
        compactions=compactions,
        first_user_line=first_line,
        model=(start or {}).get("model"),
        messages=messages,
        resumed_from=resumed_from,
        warnings=list(loaded.warnings),
    )


def list_sessions(transcripts_dir: Path) -> list[SessionInfo]:
    """Every session of the project, oldest first; an unreadable transcript is listed with a warning."""
    sessions = []
    for path in iter_transcripts(Path(transcripts_dir)):
        try:
            loaded = read_records(path)
        except TranscriptError as exc:
            loaded = LoadedTranscript(path=path, records=[], warnings=[str(exc)])
        sessions.append(summarize_records(path, loaded))
    return sessions


def load_transcript(transcripts_dir: Path, session_id: str) -> LoadedTranscript:
    """All records of one session (exact id or unique prefix); ResumeError when it cannot be read."""
    path = session_path(Path(transcripts_dir), session_id)
    try:
        return read_records(path)
    except TranscriptError as exc:
        raise ResumeError(str(exc)) from None


__all__ = ["SessionInfo", "list_sessions", "load_transcript", "summarize_records"]
