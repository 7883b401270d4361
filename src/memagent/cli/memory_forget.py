"""`memagent memory forget`: erase cards for good (registered on the `memory` app).

By ids (optionally with the older versions each replaced), a scope, a session, a source, or all;
asks first unless ``--yes``; says what git history and transcripts still hold."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from memagent.cli.common import EXIT_FAILURE, EXIT_USAGE, JsonOption, RootOption, fail, print_json
from memagent.cli.memory import ScopeChoice, _count, _open, _out, _resolve, _run

if TYPE_CHECKING:
    from memagent.memory.service import MemoryService


class SourceChoice(str, Enum):
    user = "user"
    assistant = "assistant"
    tool = "tool"
    system = "system"
    import_ = "import"
    repository = "repository"


def forget_command(
    ctx: typer.Context,
    memory_ids: list[str] | None = typer.Argument(
        None, help="Card ids (or unique prefixes) to erase.", show_default=False
    ),
    scope: ScopeChoice | None = typer.Option(None, "--scope", help="Erase every card of this scope."),
    session: str | None = typer.Option(
        None, "--session", help="Erase what this session taught (with --scope session: its session cards)."
    ),
    source: SourceChoice | None = typer.Option(None, "--source", help="Erase every card from this source."),
    erase_all: bool = typer.Option(False, "--all", help="Erase every memory, project and user."),
    with_history: bool = typer.Option(
        False, "--with-history", help="With card ids: also erase the older versions each card replaced."
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    as_json: bool = JsonOption,
    root: Path | None = RootOption,
) -> None:
    """Erase memories from disk for good: ids, a scope, a session's or a source's cards, or all.

    A card that replaced older versions of itself (a correction) is erased alone unless
    --with-history is given or the question about its earlier versions is answered yes."""
    chosen = sum(bool(x) for x in (memory_ids, scope, erase_all, source, session and scope is None))
    if chosen != 1:
        fail("give card ids, or --scope, --session, --source or --all (exactly one of them)", EXIT_USAGE)
    service = _open(ctx, root)
    ids = [_resolve(service, i) for i in memory_ids or []]  # a bad id fails before anything is asked
    older = _earlier_versions(service, ids)
    what = _forget_target(ids, scope, session, source, erase_all)
    if older and with_history:
        what += f" and the {_count(len(older), 'earlier version', 'earlier versions')} replaced ({', '.join(older)})"
    if not yes and not _confirm(f"Erase {what}? This cannot be undone"):
        fail("nothing erased", EXIT_FAILURE)
    if older and not with_history and not yes:
        with_history = _confirm(
            f"Also erase its {_count(len(older), 'earlier version', 'earlier versions')} "
            f"({', '.join(older)}), older wording of the same memory?"
        )
    if erase_all:
        report = _run(lambda: service.forget_where("1 = 1", []))
    elif scope is not None:
        where, args = "scope = ?", [scope.value]
        if session:
            where, args = where + " AND scope_id = ?", args + [session]
        report = _run(lambda: service.forget_where(where, args))
    elif source is not None:
        report = _run(lambda: service.forget_source(source.value))
    elif session:
        report = _run(lambda: service.forget_session(session))
    else:
        report = _run(lambda: service.forget_report(ids, with_history=with_history))
    erased = len(report.erased)
    kept = [] if with_history else older
    if as_json:
        print_json(
            {
                "erased": erased,
                "ids": report.erased,
                "kept_earlier_versions": kept,
                "tracked_by_git": [str(p) for p in report.tracked],
                "in_transcripts": report.transcripts,
            }
        )
    else:
        shown = f" ({', '.join(report.erased[:5])}{' …' if erased > 5 else ''})" if ids else ""
        _out(f"Erased {_count(erased, 'memory', 'memories')}{shown}.")
        if kept:
            _out(
                f"Kept {_count(len(kept), 'earlier version', 'earlier versions')} ({', '.join(kept)}); "
                f"erase them with `memagent memory forget {' '.join(kept)}`."
            )
    if report.tracked:
        _warn_git_history(report.tracked)
    if report.transcripts:
        sessions = report.transcripts
        shown = " ".join(sessions[:5]) + (" …" if len(sessions) > 5 else "")
        sys.stderr.write(
            f"memagent: the text is still in {_count(len(sessions), 'session transcript', 'session transcripts')} "
            f"(your record of the conversation, not rewritten): {shown}; "
            "`memagent sessions rm ID` deletes one.\n"
        )


def _earlier_versions(service: MemoryService, ids: list[str]) -> list[str]:
    """The older versions the given cards replaced (not themselves among the ids), in order."""
    found: dict[str, None] = {}
    for memory_id in ids:
        for older in _run(lambda: service.earlier_versions(memory_id)):
            if older not in ids:
                found[older] = None
    return list(found)


def _forget_target(
    ids: list[str], scope: ScopeChoice | None, session: str | None, source: SourceChoice | None, erase_all: bool
) -> str:
    if erase_all:
        return "every memory (project and user)"
    if scope is not None:
        return f"every {scope.value}-scope memory" + (f" of session {session}" if session else "")
    if source is not None:
        return f"every memory from source {source.value}"
    if session:
        return f"every memory learned in session {session}"
    return f"{_count(len(ids), 'memory', 'memories')} ({', '.join(ids)})"


def _warn_git_history(tracked: list[Path]) -> None:
    """Erasing the file does not erase git's copies: say so, and how to purge them."""
    names = " ".join(str(p) for p in tracked[:5]) + (" …" if len(tracked) > 5 else "")
    sys.stderr.write(
        f"memagent: {_count(len(tracked), 'file that held it is', 'files that held it are')} still in this "
        f"repository's git history: {names}\n"
        "  Commit the deletion; to purge the text from history too, rewrite it, e.g. "
        "`git filter-repo --invert-paths --path <file>` (then force-push and ask clones to re-clone).\n"
    )


def _confirm(question: str) -> bool:
    """Ask on stderr; no answer (end of input) means no."""
    try:
        return typer.confirm(question, default=False, err=True)
    except typer.Abort:
        sys.stderr.write("\n")
        return False
