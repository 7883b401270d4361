"""What ``memagent sessions list|show``, ``-c``, the ``-r`` picker and the hand-over need from the
transcripts, without a terminal library.

Every session records its kind in ``session_start``: ``interactive`` (the REPL), ``headless``
(``-p``) or ``subagent``. A session *did work* when it called a tool or had two user turns or
more (the tool calls of a resumed session include those it carried over). :func:`choose_session` picks the session to continue or hand over from: the newest one
that is interactive or did work, so that throw-away runs (``memagent -p hi``) never displace
the session that mattered; when every session is throw-away, simply the newest. A transcript
without a kind (written by an older version) counts as interactive.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from memagent.context.conversation import opens_user_turn
from memagent.context.resume import ResumeError, session_path
from memagent.context.transcript import LoadedTranscript, TranscriptError, iter_transcripts, read_records
from memagent.jsontypes import JsonObject, JsonValue, json_str
from memagent.llm.items import own_texts, tool_uses

FIRST_LINE_CHARS = 80
KINDS = ("interactive", "headless", "subagent")


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
    kind: str | None = None  # None: written before sessions recorded their kind
    tool_calls: int = 0

    def to_dict(self) -> JsonObject:
        return {**asdict(self), "did_work": self.did_work}

    @property
    def did_work(self) -> bool:
        """Called a tool, or had two user turns or more."""
        return self.tool_calls > 0 or self.turns >= 2

    @property
    def preferred(self) -> bool:
        """Worth continuing: interactive (or of unknown kind), or it did work; never a subagent's
        transcript (part of its parent's session)."""
        return self.kind != "subagent" and (self.kind in (None, "interactive") or self.did_work)

    def describe(self) -> str:
        """``interactive, 3 turns, 5 tool calls, started 2026-11-20 10:00: "fix the parser"``."""
        calls = f"{self.tool_calls} tool call{'s' if self.tool_calls != 1 else ''}"
        turns = f"{self.turns} turn{'s' if self.turns != 1 else ''}"
        started = f", started {(self.started or '')[:16].replace('T', ' ')}" if self.started else ""
        line = f': "{self.first_user_line}"' if self.first_user_line else ""
        return f"{self.kind or 'interactive'}, {turns}, {calls}{started}{line}"


def _mtime(path: Path) -> str | None:
    try:
        stamp = path.stat().st_mtime
    except OSError:
        return None
    return datetime.fromtimestamp(stamp, UTC).isoformat(timespec="milliseconds")


def _user_words(content: list[JsonValue]) -> str:
    """The first line the user typed in a message (no injected text)."""
    for text in own_texts({"content": content}):
        text = text.strip()
        if not text:
            continue
        line = text.splitlines()[0].strip()
        return line if len(line) <= FIRST_LINE_CHARS else line[: FIRST_LINE_CHARS - 1] + "…"
    return ""


def summarize_records(path: Path, loaded: LoadedTranscript) -> SessionInfo:
    """One row of ``sessions list`` from a transcript's records."""
    records = loaded.records
    start: JsonObject = next((r for r in records if r.get("type") == "session_start"), {})
    resumed_from = next((json_str(r.get("resumed_from")) for r in records if r.get("type") == "resume"), "")
    resumed_from = resumed_from or json_str(start.get("resumed_from"))
    turns = messages = compactions = tool_calls = 0
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
            if message["role"] == "assistant" and isinstance(message["content"], list):  # seeded ones too: a
                # resumed session carries the work of the one it continues
                tool_calls += len(tool_uses(message["content"]))
            if seeding or not isinstance(message["content"], list) or not opens_user_turn(message):
                continue
            turns += 1  # as Conversation.user_turns counts them live
            first_line = first_line or _user_words(message["content"])
    times = [str(r["time"]) for r in records if r.get("time")]
    return SessionInfo(
        id=path.stem,
        path=str(path),
        started=json_str(start.get("time")) or (times[0] if times else _mtime(path)),
        last_activity=times[-1] if times else _mtime(path),
        turns=turns,
        compactions=compactions,
        first_user_line=first_line,
        model=json_str(start.get("model")) or None,
        messages=messages,
        resumed_from=resumed_from or None,
        warnings=list(loaded.warnings),
        kind=_kind(start.get("kind")),
        tool_calls=tool_calls,
    )


def _kind(value: object) -> str | None:
    return value if isinstance(value, str) and value in KINDS else None


def session_info(path: Path) -> SessionInfo:
    """One transcript's row; an unreadable one is listed with a warning."""
    try:
        loaded = read_records(path)
    except TranscriptError as exc:
        loaded = LoadedTranscript(path=path, records=[], warnings=[str(exc)])
    return summarize_records(path, loaded)


def list_sessions(transcripts_dir: Path) -> list[SessionInfo]:
    """Every session of the project, oldest first; an unreadable transcript is listed with a warning."""
    return [session_info(path) for path in iter_transcripts(Path(transcripts_dir))]


@dataclass
class Choice:
    """The session :func:`choose_session` picked, and the newer throw-away ones it passed over."""

    info: SessionInfo
    skipped: list[SessionInfo] = field(default_factory=list)

    def describe(self) -> str:
        """``session X (interactive, 3 turns, …); skipped 2 newer headless runs without tool use``."""
        text = f"session {self.info.id} ({self.info.describe()})"
        if self.skipped:
            kinds = sorted({s.kind or "interactive" for s in self.skipped})
            count = len(self.skipped)
            text += (
                f"; skipped {count} newer {'/'.join(kinds)} run{'s' if count != 1 else ''} "
                "that did no work (no tool use, one turn)"
            )
        return text


def choose_session(transcripts_dir: Path, exclude: set[str] | frozenset[str] = frozenset()) -> Choice | None:
    """The newest session with messages that is interactive or did work (see the module
    docstring); the newest with messages when none is. A subagent's transcript is never chosen. Reads transcripts newest first and stops
    at the first it prefers."""
    passed: list[SessionInfo] = []
    for path in reversed(list(iter_transcripts(Path(transcripts_dir)))):
        if path.stem in exclude:
            continue
        info = session_info(path)
        if not info.messages or info.kind == "subagent":  # a subagent's work is its parent's session
            continue
        if info.preferred:
            return Choice(info, passed)
        passed.append(info)
    return Choice(passed[0]) if passed else None


def preferred_first(sessions: list[SessionInfo]) -> list[SessionInfo]:
    """Newest first, sessions worth continuing before throw-away runs (the ``-r`` picker)."""
    newest = list(reversed(sessions))
    return [s for s in newest if s.preferred] + [s for s in newest if not s.preferred]


def load_transcript(transcripts_dir: Path, session_id: str) -> LoadedTranscript:
    """All records of one session (exact id or unique prefix); ResumeError when it cannot be read."""
    path = session_path(Path(transcripts_dir), session_id)
    try:
        return read_records(path)
    except TranscriptError as exc:
        raise ResumeError(str(exc)) from None


__all__ = [
    "KINDS",
    "Choice",
    "SessionInfo",
    "choose_session",
    "list_sessions",
    "load_transcript",
    "preferred_first",
    "session_info",
    "summarize_records",
]
