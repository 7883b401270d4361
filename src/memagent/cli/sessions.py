"""`memagent sessions`: list the project's sessions and show one transcript.

``memagent sessions`` / ``sessions list`` — a table, newest first: id, kind (interactive, headless,
subagent), start, last activity, turns, compactions, first user line (``--json`` for the same rows
as objects, with ``kind``, ``tool_calls`` and ``did_work``; ``--kind K`` keeps one kind).
``memagent sessions show ID`` — the transcript rendered: roles, tool calls and results, compaction
markers (``--full`` for untruncated tool output; ``--json`` for the raw records). ID may be a
unique prefix. An unknown id exits 1 with one line on stderr. rich is imported only to render.
``memagent sessions prune --older-than 30d`` — delete sessions last written longer ago than that
(``h``, ``d`` or ``w``; ``--dry-run`` only lists them).
``memagent sessions rm ID`` — delete one session (transcript and saved outputs); asks first
unless ``--yes``.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from memagent.cli.common import EXIT_FAILURE, EXIT_USAGE, JsonOption, RootOption, fail, print_json, resolve_paths
from memagent.jsontypes import JsonObject, json_list, json_object
from memagent.ui.render import one_line
from memagent.ui.safe_text import printable, printable_data

if TYPE_CHECKING:
    from datetime import timedelta

    from rich.console import Console

    from memagent.context.sessions import SessionInfo

app = typer.Typer(
    help="Inspect and delete past sessions (.transcripts/).",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
)

PREVIEW_LINES = 8
SUMMARY_LINES = 25
LINE_CHARS = 200
MIN_LINE_WIDTH = 30


def _when(stamp: str | None) -> str:
    """``2026-11-21 09:42`` in local time; the raw value when it is not a timestamp."""
    if not stamp:
        return "-"
    try:
        return datetime.fromisoformat(stamp).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return stamp


def _console() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False)


DEFAULT_LIMIT = 20

LimitOption = typer.Option(
    DEFAULT_LIMIT, "--limit", "-n", metavar="N", min=0, help="Show the N newest sessions (0: all).", show_default=True
)


KindOption = typer.Option(
    None, "--kind", metavar="KIND", help="Only sessions of this kind: interactive, headless or subagent."
)


def _list(
    ctx: typer.Context, root: Path | None, as_json: bool, limit: int = DEFAULT_LIMIT, kind: str | None = None
) -> None:
    from memagent.context.sessions import KINDS, list_sessions
    from memagent.ui.words import plural

    if kind is not None and kind not in KINDS:
        fail(f"--kind must be one of {', '.join(KINDS)}, not {kind!r}", EXIT_USAGE)
    paths = resolve_paths(ctx, root)
    every = list(reversed(list_sessions(paths.transcripts)))
    if kind is not None:  # a session from before kinds were recorded counts as interactive
        every = [info for info in every if (info.kind or "interactive") == kind]
    sessions = every[:limit] if limit else every
    hidden = len(every) - len(sessions)
    if as_json:
        print_json([s.to_dict() for s in sessions])
        return
    if not sessions:
        typer.echo(f"No {kind + ' ' if kind else ''}sessions in {paths.transcripts}.")
        return
    _print_table(sessions)
    if hidden:
        typer.echo(f"… {plural(hidden, 'more older session')} (--limit 0 shows all)")
    for info in sessions:
        for warning in info.warnings:
            sys.stderr.write(f"memagent: warning: {warning}\n")


def _print_table(sessions: list[SessionInfo]) -> None:
    """Plain aligned columns; on a terminal the first user line gets what is left of its width
    (piped output is never cut, so scripts see whole lines)."""
    headers = ("id", "kind", "start", "last activity", "turns", "compactions", "first user line")
    rows = [
        (
            info.id,
            info.kind or "-",
            _when(info.started),
            _when(info.last_activity),
            str(info.turns),
            str(info.compactions),
            printable(info.first_user_line or "-", newlines=False),
        )
        for info in sessions
    ]
    last_column = len(headers) - 1
    widths = [max(len(headers[c]), *(len(r[c]) for r in rows)) for c in range(last_column)]
    room = max(MIN_LINE_WIDTH, shutil.get_terminal_size((120, 24)).columns - sum(widths) - 2 * last_column)
    if not sys.stdout.isatty():
        room = max(len(r[last_column]) for r in [headers, *rows])
    for row in [headers, *rows]:
        cells = [row[c].rjust(widths[c]) if c in (4, 5) else row[c].ljust(widths[c]) for c in range(last_column)]
        last = row[last_column] if len(row[last_column]) <= room else row[last_column][: room - 1] + "…"
        typer.echo("  ".join(cells + [last]).rstrip())


@app.callback(invoke_without_command=True)
def sessions(
    ctx: typer.Context,
    root: Path | None = RootOption,
    as_json: bool = JsonOption,
    limit: int = LimitOption,
    kind: str | None = KindOption,
) -> None:
    """List this project's sessions (the same as `sessions list`)."""
    if root is not None:  # `sessions -C DIR show ID`: the sub-command finds it on the root context
        ctx.find_root().ensure_object(dict)["root"] = root
    if ctx.invoked_subcommand is None:
        _list(ctx, root, as_json, limit, kind)


@app.command("list")
def list_command(
    ctx: typer.Context,
    root: Path | None = RootOption,
    as_json: bool = JsonOption,
    limit: int = LimitOption,
    kind: str | None = KindOption,
) -> None:
    """List sessions, newest first: id, kind, start, last activity, turns, compactions, first user line."""
    _list(ctx, root, as_json, limit, kind)


@app.command("show")
def show_command(
    ctx: typer.Context,
    session_id: str = typer.Argument(..., metavar="ID", help="Session id (or a unique prefix)."),
    root: Path | None = RootOption,
    as_json: bool = JsonOption,
    full: bool = typer.Option(False, "--full", help="Show tool outputs and summaries in full."),
) -> None:
    """Show one session's transcript: messages, tool calls, compaction markers."""
    from memagent.context.resume import ResumeError
    from memagent.context.sessions import load_transcript, summarize_records

    paths = resolve_paths(ctx, root)
    try:
        loaded = load_transcript(paths.transcripts, session_id)
    except ResumeError as exc:
        fail(str(exc), EXIT_FAILURE)
    if as_json:
        print_json(
            {"id": loaded.path.stem, "path": str(loaded.path), "records": loaded.records, "warnings": loaded.warnings}
        )
        return
    info = summarize_records(loaded.path, loaded)
    render_transcript(_console(), info, loaded.records, full=full)
    for warning in loaded.warnings:
        sys.stderr.write(f"memagent: warning: {warning}\n")


_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([hdw]?)\s*$")
_AGE_UNITS = {"h": 1 / 24, "d": 1.0, "w": 7.0, "": 1.0}


def parse_age(text: str) -> timedelta:
    """``30d``, ``12h``, ``2w`` or a number of days; a usage error otherwise."""
    from datetime import timedelta

    match = _AGE.match(text or "")
    if not match or float(match.group(1)) <= 0:
        fail(f"--older-than {text!r}: use a positive age such as 30d, 12h or 2w", EXIT_USAGE)
    return timedelta(days=float(match.group(1)) * _AGE_UNITS[match.group(2)])


@app.command("prune")
def prune_command(
    ctx: typer.Context,
    older_than: str = typer.Option(..., "--older-than", help="Age such as 30d, 12h or 2w."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only list the sessions that would be deleted."),
    root: Path | None = RootOption,
) -> None:
    """Delete sessions (transcripts and saved outputs) last written longer ago than --older-than."""
    import time

    from memagent.context.transcript import iter_transcripts, prune_transcripts, written_by_memagent

    age = parse_age(older_than)
    paths = resolve_paths(ctx, root)
    if dry_run:
        cutoff = time.time() - age.total_seconds()
        stale = [
            p.stem for p in iter_transcripts(paths.transcripts) if p.stat().st_mtime < cutoff and written_by_memagent(p)
        ]
        typer.echo("\n".join(stale) if stale else f"No sessions older than {older_than}.")
        return
    try:
        removed = prune_transcripts(paths.transcripts, age)
    except OSError as exc:
        fail(f"cannot delete sessions in {paths.transcripts}: {exc.strerror or exc}", EXIT_FAILURE)
    noun = "session" if len(removed) == 1 else "sessions"
    typer.echo(f"Deleted {len(removed)} {noun} older than {older_than.strip()}.")


@app.command("rm")
def rm_command(
    ctx: typer.Context,
    session_id: str = typer.Argument(..., metavar="ID", help="Session id (or a unique prefix)."),
    yes: bool = typer.Option(False, "-y", "--yes", help="Delete without asking."),
    root: Path | None = RootOption,
) -> None:
    """Delete one session: its transcript and its saved outputs."""
    from memagent.context.resume import ResumeError, session_path
    from memagent.context.transcript import remove_session

    paths = resolve_paths(ctx, root)
    try:
        path = session_path(paths.transcripts, session_id)
    except ResumeError as exc:
        fail(str(exc), EXIT_FAILURE)
    if not yes:
        if not sys.stdin.isatty():
            fail(f"not deleting session {path.stem} without --yes (no terminal to ask)", EXIT_USAGE)
        if not typer.confirm(f"Delete session {path.stem} (transcript and saved outputs)?", default=False):
            typer.echo("Nothing deleted.")
            return
    try:
        remove_session(path)
    except OSError as exc:
        fail(f"cannot delete {path}: {exc.strerror or exc}", EXIT_FAILURE)
    typer.echo(f"Deleted session {path.stem}.")


# ------------------------------------------------------------------ rendering


def render_transcript(console: Console, info: SessionInfo, records: list[JsonObject], *, full: bool) -> None:
    from rich.rule import Rule
    from rich.text import Text

    records = [json_object(printable_data(record)) for record in records]  # user data: no control characters
    header = Text(f"session {info.id}", style="bold")
    header.append(
        f"  {info.kind or 'interactive'}  model {info.model or '-'}  started {_when(info.started)}  turns {info.turns}"
        f"  compactions {info.compactions}",
        style="dim",
    )
    console.print(header)
    names: dict[str, str] = {}
    for record in records:
        kind = record.get("type")
        if kind == "message":
            _render_message(console, record, names, full)
        elif kind == "compaction":
            console.print(Rule(_compaction_title(record), style="yellow"))
            console.print(Text(_clip(str(record.get("summary", "")), None if full else SUMMARY_LINES), style="dim"))
            console.print(Rule(style="yellow"))
        elif kind == "todo":
            items = json_list(record.get("items"))
            done = sum(1 for i in items if isinstance(i, dict) and i.get("status") == "completed")
            console.print(Text(f"· todo list: {len(items)} items, {done} done", style="dim"))
        elif kind == "resume":
            console.print(Text(f"· resumed from session {record.get('resumed_from')}", style="dim"))
        elif kind == "session_end":
            console.print(Text("· session ended", style="dim"))


def _compaction_title(record: JsonObject) -> str:
    before, after = record.get("tokens_before"), record.get("tokens_after")
    size = f"{before:,} → {after:,} tokens" if isinstance(before, int) and isinstance(after, int) else "tokens ?"
    focus = f", focus: {record['focus']}" if record.get("focus") else ""
    fallback = ", summary by rule (model failed)" if record.get("fallback") else ""
    return f"compacted: {size}, kept from message {record.get('kept_from')}{focus}{fallback}"


def _render_message(console: Console, record: JsonObject, names: dict[str, str], full: bool) -> None:
    from rich.text import Text

    role = record.get("role")
    label = message_label(record)
    style = {"you": "bold cyan", "memagent": "bold green"}.get(label, "bold magenta")
    console.print(Text(f"{label} #{record.get('id')}", style=style))
    limit = None if full else PREVIEW_LINES
    from memagent.llm import items

    for part in items.message_items(record):
        if isinstance(part, (items.Text, items.Injected)):
            console.print(Text(part.text if full or role == "assistant" else _clip(part.text, 40, 2_000)))
        elif isinstance(part, items.ToolUse):
            names[part.id] = part.name
            args = json.dumps(dict(part.input), ensure_ascii=False)
            console.print(Text(f"  ⚙ {part.name} {args if full else one_line(args, 160)}", style="magenta"))
        elif isinstance(part, items.ToolResult):
            error = " error" if part.is_error else ""
            console.print(
                Text(
                    f"  ↳ {names.get(part.tool_use_id, 'tool')} result{error} ({part.tool_use_id})",
                    style="red" if error else "dim",
                )
            )
            console.print(Text(_indent(_clip(part.text, limit)), style="dim"))


def message_label(record: JsonObject) -> str:
    """``you`` for what the user typed, ``tool results`` for a user message carrying only the
    results of the previous tool calls, ``memagent`` for the assistant."""
    if record.get("role") != "user":
        return "memagent"
    from memagent.llm import items

    typed = bool(items.own_texts(record))
    if items.tool_results(record.get("content")) and not typed:
        return "tool results"
    return "you"


def _clip(text: str, lines: int | None, width: int = LINE_CHARS) -> str:
    """At most ``lines`` lines of at most ``width`` characters (None: everything)."""
    if lines is None:
        return text
    rows = text.splitlines() or [""]
    shown = [row if len(row) <= width else row[: width - 1] + "…" for row in rows[:lines]]
    extra = len(rows) - lines
    more = f"\n… ({extra} more {'line' if extra == 1 else 'lines'}; --full shows everything)" if extra > 0 else ""
    return "\n".join(shown) + more


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())
