"""`memagent rewind`: list a session's user turns, or go back to the start of one.

``memagent rewind --list [--session ID] [--json]`` — the turns of the session (the latest one by
default): number, time, the user's first line, whether its files can be restored.
``memagent rewind --to N [--session ID] [--code-only | --conversation-only] [--forget-learned]``
— restore the files as they were when turn N started (from its checkpoint) and take the
conversation back to just before the user's message of turn N; ``memagent -c`` then continues
from there. Memory cards the session learned since then are listed; ``--forget-learned`` erases
them. The same steps as the REPL's ``/rewind`` (:mod:`memagent.features.checkpoints`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from memagent.cli.common import EXIT_FAILURE, EXIT_USAGE, JsonOption, RootOption, fail, print_json, resolve_paths

if TYPE_CHECKING:
    from memagent.checkpoints import Change, Restored
    from memagent.config import ProjectPaths
    from memagent.features.checkpoints import RewindPlan
    from memagent.jsontypes import JsonObject
    from memagent.memory.cards import MemoryCard
    from memagent.memory.service import MemoryService

SessionOption = typer.Option(None, "--session", "-s", metavar="ID", help="The session (default: the latest one).")


def rewind(
    ctx: typer.Context,
    to: int | None = typer.Option(None, "--to", metavar="N", help="Go back to the start of user turn N (1-based)."),
    session: str | None = SessionOption,
    code_only: bool = typer.Option(False, "--code-only", help="Restore the files only; keep the conversation."),
    conversation_only: bool = typer.Option(
        False, "--conversation-only", help="Rewind the conversation only; keep the files."
    ),
    list_turns: bool = typer.Option(False, "--list", help="List the session's turns instead."),
    forget_learned: bool = typer.Option(False, "--forget-learned", help="Erase the memory cards learned since turn N."),
    as_json: bool = JsonOption,
    root: Path | None = RootOption,
) -> None:
    """Restore files and conversation to the start of an earlier user turn (--list shows them)."""
    if list_turns == (to is not None):
        fail("give --to N (the turn to go back to) or --list", EXIT_USAGE)
    if code_only and conversation_only:
        fail("--code-only and --conversation-only exclude each other (leave both out for both)", EXIT_USAGE)
    if list_turns and (code_only or conversation_only or forget_learned):
        fail("--list takes no --code-only, --conversation-only or --forget-learned", EXIT_USAGE)
    if to is not None and to < 1:
        fail(f"--to {to}: turns are numbered from 1", EXIT_USAGE)
    paths = resolve_paths(ctx, root)
    path = _transcript(paths.transcripts, session)
    if list_turns:
        _list(paths, path, as_json)
    else:
        assert to is not None
        _rewind(
            paths,
            path,
            to,
            code=not conversation_only,
            conversation=not code_only,
            forget=forget_learned,
            as_json=as_json,
        )


def _transcript(transcripts: Path, session: str | None) -> Path:
    from memagent.context.resume import ResumeError, latest_session_id, session_path

    session = session if session is not None else latest_session_id(transcripts)
    if session is None:
        fail("no session in this project to rewind (sessions live in .transcripts/)", EXIT_FAILURE)
    try:
        return session_path(transcripts, session)
    except ResumeError as exc:
        fail(str(exc), EXIT_FAILURE)


def _list(paths: ProjectPaths, path: Path, as_json: bool) -> None:
    from memagent.context.rewind import RewindError
    from memagent.features.checkpoints import read_turns
    from memagent.ui.safe_text import printable

    try:
        points, _, warnings = read_turns(path)
    except RewindError as exc:
        fail(str(exc), EXIT_FAILURE)
    _warn(warnings)
    if as_json:
        print_json({"session": path.stem, "turns": [p.to_dict() for p in points]})
        return
    if not points:
        _out(f"Session {path.stem} has no user turns.")
        return
    _out(f"Session {path.stem}: {len(points)} user turn{'s' if len(points) != 1 else ''}")
    for point in points:
        files = "" if point.checkpoint else "  (no checkpoint: conversation only)"
        _out(f"{point.number:>4}  {_when(point.time)}  {printable(point.first_line)}{files}")
    _out("Go back to the start of one with: memagent rewind --to N")


def _rewind(
    paths: ProjectPaths, path: Path, turn: int, *, code: bool, conversation: bool, forget: bool, as_json: bool
) -> None:
    from memagent.checkpoints import CheckpointError, ShadowRepo
    from memagent.context.rewind import RewindError
    from memagent.features.checkpoints import plan_rewind, record_for, restore_code

    try:
        plan = plan_rewind(path, turn)
    except RewindError as exc:
        fail(str(exc), EXIT_FAILURE)
    _warn(plan.warnings)
    service, learned = _learned(paths, plan)
    try:
        restored = restore_code(ShadowRepo.for_project(paths.home, paths.root), plan) if code else None
    except CheckpointError as exc:
        fail(f"{exc}; nothing was changed", EXIT_FAILURE)
    forgotten: list[str] = []
    if forget and learned and service is not None:
        forgotten = list(service.forget_report([c.id for c in learned]).erased)
    _append(
        paths.transcripts,
        path.stem,
        record_for(plan, code=code, conversation=conversation, restored=restored, forgotten=forgotten),
    )
    _report(plan, restored, conversation, learned, forgotten, as_json)


def _learned(paths: ProjectPaths, plan: RewindPlan) -> tuple[MemoryService | None, list[MemoryCard]]:
    """The memory service (or None) and the cards learned since the turn; a store that cannot
    open is reported and skipped."""
    if not paths.memory.exists() and not paths.user_memory.exists():
        return None, []
    from memagent.config import ConfigError, load_settings
    from memagent.features.checkpoints import learned_since
    from memagent.memory.errors import MemoryUnavailable
    from memagent.memory.service import MemoryService

    try:
        service = MemoryService.open(paths, load_settings(paths))
        return service, learned_since(service, plan)
    except (ConfigError, MemoryUnavailable, OSError) as exc:
        _warn([f"memory could not be read, so learned cards are not listed: {exc}"])
        return None, []


def _append(transcripts: Path, session_id: str, record: JsonObject) -> None:
    from memagent.context.transcript import TranscriptWriter

    writer = TranscriptWriter.open(transcripts, session_id)
    writer.append(record)
    writer.close()
    if writer.failure:
        fail(writer.failure, EXIT_FAILURE)


def _report(
    plan: RewindPlan,
    restored: Restored | None,
    conversation: bool,
    learned: list[MemoryCard],
    forgotten: list[str],
    as_json: bool,
) -> None:
    from memagent.ui.safe_text import printable

    point = plan.point
    if as_json:
        print_json(
            {
                "session": plan.session_id,
                "turn": point.number,
                "text": point.first_line,
                "conversation": conversation,
                "files": None
                if restored is None
                else {
                    "restored": [c.path for c in restored.changes if c.status != "removed"],
                    "removed": [c.path for c in restored.changes if c.status == "removed"],
                    "undo_checkpoint": restored.before,
                },
                "learned": [{"id": c.id, "content": c.content} for c in learned],
                "forgotten": forgotten,
            }
        )
        return
    _out(f"Rewound session {plan.session_id} to the start of turn {point.number}: {printable(point.first_line)!r}")
    if restored is not None:
        changed = [c for c in restored.changes if c.status != "removed"]
        removed = [c for c in restored.changes if c.status == "removed"]
        _out(f"  files: {len(changed)} restored, {len(removed)} removed" + _names(restored.changes))
    if conversation:
        _out("  conversation: back to just before that message (memagent -c continues from there)")
    for card in learned:
        verb = "forgotten" if card.id in forgotten else "learned since then"
        _out(f"  memory {verb}: [{card.id}] {printable(' '.join(card.content.split()))[:100]}")
    if learned and not forgotten:
        _out("  (erase them with --forget-learned, or memagent memory forget ID…)")


def _names(changes: Sequence[Change]) -> str:
    names = [c.path for c in changes][:8]
    return f" ({', '.join(names)}{', …' if len(changes) > 8 else ''})" if names else ""


def _when(stamp: str | None) -> str:
    from datetime import datetime

    if not stamp:
        return "-               "
    try:
        return datetime.fromisoformat(stamp).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return stamp[:16]


def _warn(lines: list[str]) -> None:
    for line in lines:
        sys.stderr.write(f"memagent: {line}\n")


def _out(text: str) -> None:
    sys.stdout.write(text + "\n")


__all__ = ["rewind"]
