"""Checkpoints and rewind: the working tree recorded at the start of every user turn, and the
way back to the start of any of them.

:class:`CheckpointFeature` takes a checkpoint (:mod:`memagent.checkpoints`) when a turn starts,
in a worker thread so the model's first response is not delayed; no tool of the turn runs before
it is done (``check_tool`` waits), so whatever the turn changes — through ``write_file``,
``edit_file`` or a ``bash`` command — is covered. Each checkpoint is a ``checkpoint`` record of
the transcript.

A rewind (:func:`plan_rewind`, then :func:`restore_code` and/or the conversation) goes back to
the start of user turn N: the files as the checkpoint of turn N recorded them, the conversation
as it was before the user's message of turn N (a ``rewind`` record, so resume and compaction see
the same history), and the memory cards learned since then offered for forgetting
(:func:`learned_since`). The REPL's ``/rewind`` and ``memagent rewind`` share these steps.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from memagent.agent.feature import BaseFeature, ToolCall
from memagent.checkpoints import CheckpointError, Restored, ShadowRepo
from memagent.context.conversation import Conversation
from memagent.context.resume import History, ResumeError, rebuild_history
from memagent.context.rewind import RewindError, TurnPoint, active_records, find_turn, rewind_record, turn_points
from memagent.context.transcript import TranscriptError, read_records
from memagent.errors import one_line
from memagent.feature_settings import CheckpointSettings
from memagent.features.subagents import SUBAGENT_RECORD
from memagent.jsontypes import JsonObject, JsonValue, json_str

if TYPE_CHECKING:
    from memagent.memory.cards import MemoryCard
    from memagent.memory.service import MemoryService

CHECKPOINT_RECORD = "checkpoint"
MAX_PATHS_RECORDED = 200


class CheckpointFeature(BaseFeature):
    """Takes the checkpoint of every user turn (see the module docstring).

    ``record`` writes a transcript record (the conversation's ``record``); ``warn`` reports the
    first failure once (a later success says nothing)."""

    name = "checkpoints"
    settings_model = CheckpointSettings

    @classmethod
    def from_settings(
        cls,
        settings: CheckpointSettings,
        home: Path,
        root: Path,
        session_id: str,
        record: Callable[[JsonObject], None],
        warn: Callable[[str], None] | None = None,
    ) -> CheckpointFeature | None:
        """The session's checkpoints in the project's shadow repository; None when they are off."""
        if not settings.checkpoints:
            return None
        repo = ShadowRepo.for_project(
            home,
            root,
            max_file_bytes=settings.checkpoint_max_file_bytes,
            max_changed_files=settings.checkpoint_max_files,
        )
        return cls(repo, session_id, record, warn=warn)

    def __init__(
        self,
        repo: ShadowRepo,
        session_id: str,
        record: Callable[[JsonObject], None],
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.repo = repo
        self.session_id = session_id
        self._record = record
        self._warn = warn
        self._worker: threading.Thread | None = None
        self._warned = False
        self.last_error: str | None = None

    def turn_started(self, number: int) -> None:
        self.wait()
        self._worker = threading.Thread(target=self._take, args=(number,), name="memagent-checkpoint", daemon=True)
        self._worker.start()

    def _take(self, number: int) -> None:
        try:
            taken = self.repo.snapshot(self.session_id, f"turn {number}")
        except (CheckpointError, OSError) as exc:
            self.last_error = one_line(exc)
            self._record({"type": CHECKPOINT_RECORD, "turn": number, "error": self.last_error})
            if not self._warned and self._warn is not None:
                self._warned = True
                self._warn(f"checkpoints: {self.last_error} (/rewind cannot restore files of this turn)")
            return
        self.last_error = None
        self._record(
            {
                "type": CHECKPOINT_RECORD,
                "turn": number,
                "commit": taken.commit,
                "changed": taken.changed,
                "skipped": list(taken.skipped[:MAX_PATHS_RECORDED]),
                "seconds": round(taken.seconds, 3),
            }
        )

    def wait(self) -> None:
        """Until the checkpoint being taken is recorded (Ctrl-C stays responsive)."""
        worker = self._worker
        while worker is not None and worker.is_alive():
            worker.join(0.05)

    def check_tool(self, call: ToolCall) -> str | None:
        self.wait()  # nothing of the turn may change the tree before its checkpoint exists
        return None

    def after_turn(self, conversation: Conversation) -> None:
        self.wait()

    def close(self) -> None:
        self.wait()


# ---------------------------------------------------------------------- rewinding


@dataclass
class RewindPlan:
    """Where a rewind goes: the turn, and the history and records in effect before it."""

    session_id: str
    logical_session: str
    point: TurnPoint
    points: list[TurnPoint]
    history: History
    records: list[JsonObject]  # the records in effect before the turn's message
    warnings: list[str] = field(default_factory=list)
    subagents: list[str] = field(default_factory=list)  # sessions of the subagents started since


def read_turns(path: Path) -> tuple[list[TurnPoint], list[JsonObject], list[str]]:
    """The user turns of a transcript (after its rewinds), its active records and warnings."""
    if not path.exists():
        raise RewindError("this session has no user turns to rewind to")
    try:
        loaded = read_records(path)
    except TranscriptError as exc:
        raise RewindError(str(exc)) from None
    warnings = list(loaded.warnings)
    active = active_records(loaded.records, warnings)
    return turn_points(active), active, warnings


def plan_rewind(path: Path, turn: int) -> RewindPlan:
    """What rewinding the session of transcript ``path`` to the start of ``turn`` means."""
    points, active, warnings = read_turns(path)
    point = find_turn(points, turn)
    before = active[: point.position]
    try:
        history = rebuild_history(before, path, warnings)
    except ResumeError as exc:
        raise RewindError(str(exc)) from None
    start = next((r for r in active if r.get("type") == "session_start"), {})
    logical = json_str(start.get("logical_session")) or path.stem
    subagents = [
        str(r["session_id"])
        for r in active[point.position :]
        if r.get("type") == SUBAGENT_RECORD and r.get("session_id")
    ]
    return RewindPlan(path.stem, logical, point, points, history, before, warnings, list(dict.fromkeys(subagents)))


def restore_code(repo: ShadowRepo | None, plan: RewindPlan) -> Restored:
    """Put the files back as they were at the start of the planned turn."""
    if repo is None:
        raise CheckpointError("checkpoints are off in this session, so files cannot be restored")
    if plan.point.checkpoint is None:
        raise CheckpointError(
            f"turn {plan.point.number} has no checkpoint (taken by an older memagent, with "
            "checkpoints off, or it failed), so its files cannot be restored"
        )
    return repo.restore(plan.session_id, plan.point.checkpoint)


def record_for(
    plan: RewindPlan, *, code: bool, conversation: bool, restored: Restored | None, forgotten: Sequence[str] = ()
) -> JsonObject:
    """The ``rewind`` transcript record of a plan carried out."""
    details: dict[str, JsonValue] = {}
    if restored is not None:
        details = {
            "checkpoint": restored.target,
            "before": restored.before,
            "restored": _recorded(c.path for c in restored.changes if c.status != "removed"),
            "removed": _recorded(c.path for c in restored.changes if c.status == "removed"),
        }
    if forgotten:
        details["forgotten"] = list(forgotten)
    return rewind_record(plan.point, code=code, conversation=conversation, **details)


def _recorded(paths: Iterable[str]) -> list[JsonValue]:
    """The first :data:`MAX_PATHS_RECORDED` of ``paths``, as a record holds them."""
    return list(itertools.islice(paths, MAX_PATHS_RECORDED))


def turn_time(point: TurnPoint) -> datetime | None:
    if not point.time:
        return None
    try:
        when = datetime.fromisoformat(point.time.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def learned_since(service: MemoryService | None, plan: RewindPlan) -> list[MemoryCard]:
    """Memory cards this session (or a subagent it started) saved since the turn started: what a
    rewind offers to forget (none without a memory service)."""
    since = turn_time(plan.point)
    if service is None or since is None:
        return []
    found: list[MemoryCard] = []
    for session in dict.fromkeys((plan.logical_session, plan.session_id, *plan.subagents)):
        for card in service.list(session=session, include_all=True, limit=1000):
            created = card.created_at if card.created_at.tzinfo else card.created_at.replace(tzinfo=UTC)
            if created >= since and card.id not in {c.id for c in found}:
                found.append(card)
    return found


__all__ = [
    "CheckpointFeature",
    "RewindPlan",
    "learned_since",
    "plan_rewind",
    "read_turns",
    "record_for",
    "restore_code",
]
