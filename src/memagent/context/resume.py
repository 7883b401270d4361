"""Rebuild a session's working context from its transcript (``memagent -c`` / ``-r ID``).

Only the records still in effect count: a ``rewind`` record takes the conversation back to the
start of a user turn (:func:`memagent.context.rewind.active_records`). The context starts at the last ``compaction`` record: its summary (plus the state re-injected at
that time) followed by every message from its ``kept_from`` id onward, in file order. Then the
history is repaired so the Messages-API invariants hold (:mod:`memagent.context.history`):
empty blocks dropped, neighbours with the same role merged (the first id is kept, as
:class:`~memagent.context.conversation.Conversation` does live), a ``tool_use`` left without a
result by a ``kill -9`` answered with an error result, orphan results dropped. The other records in effect go to the features
(:attr:`Resumed.records`), each restoring what it recorded (the todo list).

A truncated last line (killed mid-write) or a garbage line costs only that line, with a warning;
a missing or unreadable transcript is a :class:`ResumeError` naming the file.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memagent.context.conversation import Conversation
from memagent.context.history import repair_history_with_ids
from memagent.context.oversize import AttachmentShelf
from memagent.context.rewind import active_records, turn_points
from memagent.context.summary import assemble, summary_head
from memagent.context.transcript import TranscriptError, iter_transcripts, read_records
from memagent.jsontypes import JsonObject, JsonValue, json_list, json_str
from memagent.llm.invariants import request_problems
from memagent.llm.items import accepted_blocks
from memagent.llm.types import Block, Message

MESSAGE_MARKERS = (b'"type":"message"', b'"type": "message"')
SUBAGENT_MARKERS = (b'"kind":"subagent"', b'"kind": "subagent"')


class ResumeError(Exception):
    """The session cannot be resumed; ``str()`` is one line naming the file or id."""


@dataclass
class Resumed:
    session_id: str
    messages: list[Message]
    ids: list[str]
    warnings: list[str]
    compactions: int
    summary: str | None = None  # the last compaction's summary, when there was one
    model: str | None = None  # the model the session started with
    path: Path | None = None
    logical_session: str = ""  # the first session of a chain of resumes (see runtime.logical_session_id)
    checkpoints: list[str | None] = field(default_factory=list)  # per message: the checkpoint of the turn it opens
    previewed: set[str] = field(default_factory=set)  # ids of messages the model got as a preview
    set_aside: dict[str, int] = field(default_factory=dict)  # message id -> the lower limit it was shrunk to
    # the records in effect other than messages: each feature restores its own state from them
    records: list[JsonObject] = field(default_factory=list)


def session_path(transcripts_dir: Path, session_id: str) -> Path:
    """The transcript of ``session_id`` (an exact id or a unique prefix)."""
    session_id = session_id.strip()
    if not session_id or "/" in session_id or "\\" in session_id or session_id.startswith("."):
        raise ResumeError(f"invalid session id {session_id!r}")
    exact = transcripts_dir / f"{session_id}.jsonl"
    if exact.is_file():
        return exact
    matches = [p for p in iter_transcripts(transcripts_dir) if p.stem.startswith(session_id)]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        shown = ", ".join(p.stem for p in matches[:5])
        raise ResumeError(f"session id {session_id!r} is ambiguous: {shown}")
    raise ResumeError(f"no session {session_id!r}: {exact} does not exist")


def _has_messages(path: Path) -> bool:
    """Holds a message, and is a session of its own (not a subagent's: its first line says)."""
    try:
        raw = path.read_bytes()
    except OSError:
        return False
    first = raw.split(b"\n", 1)[0]
    return any(marker in raw for marker in MESSAGE_MARKERS) and not any(m in first for m in SUBAGENT_MARKERS)


def latest_session_id(transcripts_dir: Path) -> str | None:
    """The newest session in this project that holds at least one message (a subagent's
    transcript is part of its parent's session, never one to continue)."""
    for path in reversed(list(iter_transcripts(transcripts_dir))):
        if _has_messages(path):
            return path.stem
    return None


def _logical_session_of(path: Path) -> str | None:
    """The logical session a transcript belongs to, from its first record (``session_start``);
    None for a subagent's transcript (part of its parent's session, never one to continue)."""
    try:
        with path.open("rb") as fh:
            record = json.loads(fh.readline(1 << 20) or b"null")
    except (OSError, ValueError):
        return None
    if isinstance(record, dict) and record.get("type") == "session_start" and record.get("kind") != "subagent":
        return json_str(record.get("logical_session")) or path.stem
    return None


def newest_of_logical_session(transcripts_dir: Path, logical_id: str) -> str | None:
    """The newest transcript of the logical session ``logical_id`` (the id a chain of resumes
    keeps reporting), or None when no transcript belongs to it."""
    wanted = logical_id.strip()
    for path in reversed(list(iter_transcripts(Path(transcripts_dir)))):
        if _logical_session_of(path) == wanted:
            return path.stem
    return None


def load_session(transcripts_dir: Path, session_id: str) -> Resumed:
    path = session_path(Path(transcripts_dir), session_id)
    try:
        loaded = read_records(path)
    except TranscriptError as exc:
        raise ResumeError(str(exc)) from None
    warnings = list(loaded.warnings)
    records = active_records(loaded.records, warnings)
    start = next((r for r in records if r.get("type") == "session_start"), {})
    history = rebuild_history(records, path, warnings)
    by_message = {p.message_id: p.checkpoint for p in turn_points(records)}
    return Resumed(
        session_id=path.stem,
        messages=history.messages,
        ids=history.ids,
        warnings=warnings,
        compactions=history.compactions,
        summary=history.summary,
        model=json_str(start.get("model")) or None,
        path=path,
        logical_session=json_str(start.get("logical_session")) or path.stem,
        checkpoints=[by_message.get(message_id) for message_id in history.ids],
        previewed={str(r.get("id")) for r in records if r.get("type") == "message" and r.get("sent_as_preview")},
        set_aside=_set_aside(records),
        records=[r for r in records if r.get("type") != "message"],
    )


@dataclass
class History:
    """A working context rebuilt from transcript records."""

    messages: list[Message]
    ids: list[str]
    compactions: int = 0
    summary: str | None = None  # the last compaction's summary, when there was one


def rebuild_history(records: Sequence[JsonObject], path: Path, warnings: list[str]) -> History:
    """The working context the records leave: from the last compaction on (its summary and
    re-injected state, then the messages it kept), repaired so the API accepts it. ``records``
    are the ones in effect (:func:`memagent.context.rewind.active_records`)."""
    compactions = [i for i, r in enumerate(records) if r.get("type") == "compaction"]
    head: list[Block] | None = None
    summary: str | None = None
    first = 0
    if compactions:
        marker = records[compactions[-1]]
        summary = str(marker.get("summary") or "")
        head = summary_head(
            summary,
            [str(s) for s in json_list(marker.get("reinjected"))],
            json_str(marker.get("transcript_name")) or f"{path.parent.name}/{path.name}",
            json_str(marker.get("current_request")) or None,
        )
        first = _kept_position(list(records), compactions[-1], str(marker.get("kept_from")), path, warnings)
    messages, ids = _message_records(records[first:], path, warnings)
    if head is not None:
        messages, ids = assemble(head, messages, ids, "compaction")
    messages, ids = repair_history_with_ids(messages, ids)
    problems = request_problems(messages) if messages else []
    if problems:
        raise ResumeError(f"cannot rebuild a valid conversation from {path}: {problems[0]}")
    return History(messages, ids, len(compactions), summary)


def _set_aside(records: Sequence[JsonObject]) -> dict[str, int]:
    """Message id -> the lowest limit a ``set_aside`` record shrank it to."""
    limits: dict[str, int] = {}
    for record in records:
        limit = record.get("limit")
        if record.get("type") == "set_aside" and isinstance(limit, int):
            for message_id in json_list(record.get("ids")):
                limits[str(message_id)] = min(limit, limits.get(str(message_id), limit))
    return limits


def _kept_position(
    records: list[JsonObject], marker_index: int, kept_from: str, path: Path, warnings: list[str]
) -> int:
    """Where the kept messages start: the record of ``kept_from`` (searched back from the marker)."""
    for index in range(marker_index - 1, -1, -1):
        record = records[index]
        if record.get("type") == "message" and str(record.get("id")) == kept_from:
            return index
    warnings.append(
        f"{path.name}: the message where the last compaction kept the history ({kept_from}) is missing; "
        "resuming from the compaction summary and the messages after it"
    )
    return marker_index + 1


def _known_blocks(content: list[JsonValue], where: str, warnings: list[str]) -> list[Block]:
    """The blocks the Messages API accepts back; anything else in a transcript (a newer format, a
    hand edit, a damaged file) is dropped with a warning, instead of making every request fail."""
    blocks, unknown = accepted_blocks(copy.deepcopy(content))
    if unknown:
        warnings.append(f"{where}: dropped content blocks of unknown type {', '.join(unknown)}")
    return blocks


def _message_records(records: Sequence[JsonObject], path: Path, warnings: list[str]) -> tuple[list[Message], list[str]]:
    messages: list[Message] = []
    ids: list[str] = []
    for record in records:
        if record.get("type") != "message":
            continue
        role, content = record.get("role"), record.get("content")
        if role not in ("user", "assistant") or not isinstance(content, list):
            warnings.append(f"{path.name}: skipped a malformed message record (id {record.get('id')})")
            continue
        blocks = _known_blocks(content, f"{path.name} (message {record.get('id')})", warnings)
        if content and not blocks:
            continue  # nothing left to send; the history repair below restores alternation
        messages.append({"role": role, "content": blocks})
        ids.append(str(record.get("id", "")))
    return messages, ids


# ------------------------------------------------------------ continuing


def seed_conversation(conversation: Conversation, resumed: Resumed, shelf: AttachmentShelf | None = None) -> list[str]:
    """Start a new session's conversation from a resumed one; returns notes on what was repaired.

    The messages are recorded in the new transcript (after a ``resume`` record naming the old
    session), so the new transcript alone rebuilds the context on the next resume; they open no
    user turn. A text too large for the context (a session that could never get an answer) is
    set aside on ``shelf`` first: the model gets its preview, the old transcript keeps it whole.
    What the features record of their own state is theirs to restore (``Feature.restore``).
    """
    messages, notes = _fit_resumed(resumed, shelf)
    conversation.seed(
        messages, resumed_from=resumed.session_id, warnings=[*resumed.warnings, *notes], checkpoints=resumed.checkpoints
    )
    return notes


def fit_rebuilt(
    messages: Sequence[Message], ids: Sequence[str], records: Sequence[JsonObject], shelf: AttachmentShelf | None
) -> list[Message]:
    """Messages rebuilt from ``records`` (a rewind) as the model got them: a text that was sent as
    a preview (the transcript keeps it whole) goes back as a preview, at the limit it was set aside
    to, instead of whole into a context it did not fit."""
    if shelf is None:
        return list(messages)
    limits = _set_aside(records)
    fitted: list[Message] = []
    for message, message_id in zip(messages, ids):
        [one], _ = shelf.fit_messages([message], limits.get(message_id))
        fitted.append(one)
    return fitted


def _fit_resumed(resumed: Resumed, shelf: AttachmentShelf | None) -> tuple[list[Message], list[str]]:
    """The resumed messages as they may be sent; a note for each text that was sent whole before
    (a wedged session: every request with it failed) and is set aside now."""
    if shelf is None:
        return resumed.messages, []
    messages: list[Message] = []
    notes: list[str] = []
    for message, message_id in zip(resumed.messages, resumed.ids):
        [fitted], found = shelf.fit_messages([message], resumed.set_aside.get(message_id))
        messages.append(fitted)
        if message_id not in resumed.previewed and message_id not in resumed.set_aside:
            notes += [f"repaired on resume: {a.note()[0].lower()}{a.note()[1:]}" for a in found]
    return messages, notes


__all__ = [
    "History",
    "ResumeError",
    "Resumed",
    "fit_rebuilt",
    "rebuild_history",
    "latest_session_id",
    "load_session",
    "newest_of_logical_session",
    "seed_conversation",
    "session_path",
]
