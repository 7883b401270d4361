"""`memagent memory`: review, search, add, correct, forget, export and import memory cards.

Every command takes ``-C/--root DIR``; listings take ``--json``. Exit codes: 0 ok, 1 a refused
write or an unusable store (the reason is one line on stderr), 2 a usage error. chromadb and the
embedder are imported inside the commands, so ``memagent --help`` stays light; nothing here
imports anthropic.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from enum import Enum
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

import typer

from memagent.cli.common import EXIT_FAILURE, EXIT_USAGE, JsonOption, RootOption, fail, print_json, resolve_paths
from memagent.jsontypes import JsonObject, json_object, json_str
from memagent.ui.safe_text import printable

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from memagent.memory.cards import MemoryCard
    from memagent.memory.saving import SaveResult
    from memagent.memory.service import Hit, MemoryService

T = TypeVar("T")

app = typer.Typer(
    help="Long-term memory cards (.memory/ and $MEMAGENT_HOME/memory/).",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
)

CONTENT_WIDTH = 90
INDEX_PROGRESS_FROM = 200  # cards to embed before a progress bar is worth showing
_ROOT_KEY = "memagent.memory.root"


class TypeChoice(str, Enum):
    preference = "preference"
    fact = "fact"
    skill = "skill"
    habit = "habit"
    event = "event"
    context = "context"
    constraint = "constraint"
    decision = "decision"
    procedure = "procedure"


class ScopeChoice(str, Enum):
    user = "user"
    project = "project"
    session = "session"


class StatusChoice(str, Enum):
    active = "active"
    superseded = "superseded"
    contradicted = "contradicted"
    archived = "archived"


TypeOption = typer.Option(None, "--type", "-t", help="Only cards of this memory type.", show_default=False)
ScopeOption = typer.Option(None, "--scope", "-s", help="Only this scope.", show_default=False)


# --------------------------------------------------------------------------- helpers


def _value(choice: Enum | None) -> str | None:
    return None if choice is None else str(choice.value)


def _open(ctx: typer.Context, root: Path | None) -> MemoryService:
    """Open the memory service, or exit 1 with the one-line reason.

    Opening is cheap: the embedder and the vector index load only when a command needs them
    (list, show, stats, forget and export never do). What the user should know about the stores
    (a damaged index rebuilt, a card file skipped) is printed on stderr when the command ends.
    """
    from memagent.config import ConfigError, load_settings
    from memagent.memory.service import MemoryService, MemoryUnavailable

    paths = resolve_paths(ctx, root or ctx.meta.get(_ROOT_KEY))
    try:
        settings = load_settings(paths)
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)
    try:
        service = MemoryService.open(paths, settings)
    except MemoryUnavailable as exc:
        fail(f"memory unavailable: {exc}", EXIT_FAILURE)
    ctx.call_on_close(lambda: _print_notices(service))
    return service


def _print_notices(service: MemoryService) -> None:
    try:
        notices = service.notices()
    except Exception:  # the command's own outcome is what matters; notices are a courtesy
        notices = []
    for notice in notices:
        sys.stderr.write(f"memagent: {notice}\n")
    service.close()


def _resolve(service: MemoryService, memory_id: str) -> str:
    """The full id of a card from an id or a unique prefix, or exit 1 saying why."""
    try:
        return _run(lambda: service.resolve(memory_id))
    except LookupError as exc:
        fail(str(exc), EXIT_FAILURE)


@contextlib.contextmanager
def _indexing(service: MemoryService) -> Iterator[None]:
    """A progress bar while the index catches up with many card files (a clone, a rebuild)."""
    pending = _run(service.pending_index_work)
    if pending < INDEX_PROGRESS_FROM:
        yield
        return
    with _StderrProgress(f"indexing {pending} memory cards") as progress:
        service.progress = progress
        try:
            yield
        finally:
            service.progress = None


def _run(action: Callable[[], T]) -> T:
    from memagent.memory.service import MemoryUnavailable

    try:
        return action()
    except MemoryUnavailable as exc:
        fail(f"memory unavailable: {exc}", EXIT_FAILURE)


def _card_json(card: MemoryCard) -> JsonObject:
    return card.model_dump(mode="json")


def _short(text: str, width: int = CONTENT_WIDTH) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _card_line(card: MemoryCard, where: str = "") -> str:
    place = f"{where:<8} " if where else ""
    return (
        f"{card.id}  {card.memory_type:<10} {place}{card.status:<12} "
        f"{card.confidence:.2f}  {card.created_at.date().isoformat()}  {_short(card.content)}"
    )


def _place(service: MemoryService, card: MemoryCard) -> str:
    """Where the card's file lives: ``repo`` (.memory/cards, committed), ``private``
    (.memory/local/private, git-ignored) or ``user`` ($MEMAGENT_HOME/memory)."""
    where = service.where(card.id) or ""
    if where.startswith("user"):
        return "user"
    return "private" if "private" in where.split(":")[0] else "repo"


def _out(text: str) -> None:
    """Write a line of the report; card text is user data, so control characters are escaped."""
    sys.stdout.write(printable(text) + "\n")


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


class _StderrProgress:
    """A rich progress bar on stderr; a no-op callback when stderr is not a terminal."""

    def __init__(self, label: str) -> None:
        self.label = label
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> _StderrProgress:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        console = Console(stderr=True)
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=not console.is_terminal,
        )
        self._progress.__enter__()
        self._task = self._progress.add_task(self.label, total=None)
        return self

    def __call__(self, done: int, total: int) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=done, total=total or None)

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._progress is not None:
            self._progress.__exit__(kind, error, trace)


# --------------------------------------------------------------------------- commands


@app.callback(invoke_without_command=True)
def memory_main(ctx: typer.Context, root: Path | None = RootOption) -> None:
    """Long-term memory cards. Alone, `memagent memory` lists the active cards."""
    if root is not None:
        ctx.meta[_ROOT_KEY] = root
    if ctx.invoked_subcommand is None:
        list_cards(ctx, None, None, None, False, 50, 0, False, None, None)


TASK_SCAN = 100_000


def _learned_under(task_hint: str | None, task: int) -> bool:
    """A card's ``task_hint`` names graph task ``task`` as ``#ID subject``."""
    return bool(task_hint) and (task_hint == f"#{task}" or task_hint.startswith(f"#{task} "))


@app.command("list")
def list_cards(
    ctx: typer.Context,
    memory_type: TypeChoice | None = TypeOption,
    scope: ScopeChoice | None = ScopeOption,
    status: StatusChoice | None = typer.Option(None, "--status", help="Only this status (default: active)."),
    show_all: bool = typer.Option(False, "--all", "-a", help="Every status, superseded cards included."),
    limit: int = typer.Option(50, "--limit", "-n", min=1, help="How many cards to show."),
    offset: int = typer.Option(0, "--offset", min=0, help="Skip this many (newest first)."),
    as_json: bool = JsonOption,
    root: Path | None = RootOption,
    task: int | None = typer.Option(
        None,
        "--task",
        min=1,
        help="Only cards learned while task #ID of the graph was in progress.",
        show_default=False,
    ),
) -> None:
    """List memory cards, newest first (active ones unless --status or --all)."""
    service = _open(ctx, root)
    query = {
        "memory_type": _value(memory_type),
        "scope": _value(scope),
        "status": _value(status),
        "include_all": show_all,
    }
    if task is None:
        cards = _run(lambda: service.list(**query, limit=limit, offset=offset))
    else:
        every = _run(lambda: service.list(**query, limit=TASK_SCAN, offset=0))
        cards = [c for c in every if _learned_under(c.task_hint, task)][offset : offset + limit]
    if as_json:
        print_json([_card_json(c) for c in cards])
        return
    if not cards:
        _out("No memories." if offset == 0 else "No more memories.")
        return
    _out(f"{'id':<14}  {'type':<10} {'where':<8} {'status':<12} conf  created     content")
    for card in cards:
        _out(_card_line(card, _place(service, card)))
    if len(cards) == limit:
        _out(f"(showing {offset + 1}-{offset + len(cards)}; --offset {offset + limit} for more)")


@app.command("show")
def show(
    ctx: typer.Context,
    memory_id: str = typer.Argument(..., help="The card id (m_…) or a unique prefix of it."),
    as_json: bool = JsonOption,
    root: Path | None = RootOption,
) -> None:
    """Show every field of one card, its provenance and its supersede chain."""
    service = _open(ctx, root)
    memory_id = _resolve(service, memory_id)
    card = _run(lambda: service.get(memory_id))
    if card is None:
        fail(f"no memory {memory_id}", EXIT_FAILURE)
    chain = _run(lambda: service.chain(memory_id))
    where = service.where(memory_id)
    from memagent.memory.learning_history import describe_record, history_for

    history = history_for(resolve_paths(ctx, root or ctx.meta.get(_ROOT_KEY)), card.id)
    if as_json:
        print_json(
            {"card": _card_json(card), "chain": [_chain_entry(c) for c in chain], "history": history, "file": where}
        )
        return
    _out(f"{'file':>13}: {where}")
    data = _card_json(card)
    content = json_str(data.pop("content"))
    provenance = json_object(data.pop("provenance"))
    for key, value in data.items():
        if value not in (None, [], ""):
            _out(f"{key:>13}: {value if not isinstance(value, list) else ', '.join(map(str, value))}")
    shown = {k: v for k, v in provenance.items() if v is not None}
    if shown:
        _out(f"{'provenance':>13}: " + ", ".join(f"{k}={v}" for k, v in shown.items()))
    _out("")
    _out(content)
    if len(chain) > 1:
        _out("")
        _out("Supersede chain (oldest first):")
        for link in chain:
            marker = "*" if link.id == card.id else " "
            _out(
                f" {marker} {link.id}  {link.status:<12} {link.created_at.date().isoformat()}  {_short(link.content, 70)}"
            )
    if history:
        _out("")
        _out("History:")
        for record in history:
            _out("  " + describe_record(record, card.id))


def _chain_entry(card: MemoryCard) -> JsonObject:
    return {
        "id": card.id,
        "status": card.status,
        "created_at": _card_json(card)["created_at"],
        "content": card.content,
    }


@app.command("search")
def search(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="What to look for."),
    k: int = typer.Option(5, "-k", min=1, max=100, help="How many results."),
    memory_type: TypeChoice | None = TypeOption,
    scope: ScopeChoice | None = ScopeOption,
    show_all: bool = typer.Option(False, "--all", "-a", help="Include superseded and archived cards."),
    as_json: bool = JsonOption,
    root: Path | None = RootOption,
) -> None:
    """Search memory (dense + lexical ranking), best first, with scores."""
    if not query.strip():
        fail(
            'the search query is empty; usage: memagent memory search "QUERY" (`memagent memory list` shows every card)',
            EXIT_USAGE,
        )
    service = _open(ctx, root)
    with _indexing(service):
        hits: list[Hit] = _run(
            lambda: service.search(
                query, k, memory_type=_value(memory_type), scope=_value(scope), include_inactive=show_all
            )
        )
    if as_json:
        print_json(
            [
                {
                    "score": round(h.score, 6),
                    "parts": {n: round(v, 6) for n, v in h.parts.items()},
                    "card": _card_json(h.card),
                    "history": [_card_json(c) for c in h.history],
                }
                for h in hits
            ]
        )
        return
    if not hits:
        _out("No matching memories.")
        return
    for hit in hits:
        _out(f"{hit.score:.3f}  {_card_line(hit.card, _place(service, hit.card))}")
        for old in hit.history:  # what this card corrected: shown only here
            _out(
                f"       was: {_short(old.content, 70)}  ({old.status}, {old.created_at.date().isoformat()}, {old.id})"
            )


@app.command("add")
def add(
    ctx: typer.Context,
    text: str = typer.Argument(..., help="The memory, one self-contained statement."),
    memory_type: TypeChoice = typer.Option(TypeChoice.fact, "--type", "-t", help="Memory type."),
    scope: ScopeChoice = typer.Option(
        ScopeChoice.project,
        "--scope",
        "-s",
        help="project (this repo, committed with it), user (every project) or session (this session only).",
    ),
    private: bool = typer.Option(False, "--private", help="Keep a project card out of git (.memory/local/private/)."),
    confidence: float = typer.Option(0.9, "--confidence", min=0.0, max=1.0, help="How sure (0-1)."),
    importance: float = typer.Option(0.5, "--importance", min=0.0, max=1.0, help="How important (0-1)."),
    as_json: bool = JsonOption,
    root: Path | None = RootOption,
) -> None:
    """Add a memory through the write gate (secrets, duplicates, length, confidence).

    A near-duplicate that changes a value, a date or a negation updates (supersedes) the card it
    corrects; a restatement is not added twice."""
    service = _open(ctx, root)
    with _indexing(service):
        result = _run(
            lambda: service.save(
                text,
                memory_type.value,
                scope.value,
                confidence=confidence,
                importance=importance,
                source="user",
                private=private,
            )
        )
    _report_save(result, as_json)


def _report_save(result: SaveResult, as_json: bool) -> None:
    if as_json:
        print_json(
            {
                "status": result.status,
                "reason": result.reason,
                "card": _card_json(result.card) if result.card is not None else None,
            }
        )
    if result.status == "refused" or result.card is None:
        fail(f"not saved: {result.reason}", EXIT_FAILURE)
    if as_json:
        return
    if result.status == "duplicate":
        _out(f"Already remembered as {result.card.id} ({result.reason}).")
    elif result.status == "superseded":
        _out(f"Saved {result.card.id}, superseding {result.card.supersedes}.")
    else:
        _out(f"Saved {result.card.id}.")


@app.command("edit")
def edit(
    ctx: typer.Context,
    memory_id: str = typer.Argument(..., help="The card to correct (id or unique prefix)."),
    text: str = typer.Argument(..., help="The corrected memory."),
    memory_type: TypeChoice | None = typer.Option(
        None, "--type", "-t", help="Memory type of the corrected card (default: the old card's).", show_default=False
    ),
    confidence: float | None = typer.Option(None, "--confidence", min=0.0, max=1.0, help="New confidence."),
    as_json: bool = JsonOption,
    root: Path | None = RootOption,
) -> None:
    """Correct a memory: a new card supersedes it (the old one is kept, hidden from retrieval)."""
    service = _open(ctx, root)
    memory_id = _resolve(service, memory_id)
    fields: dict[str, str | float] = {"source": "user"}
    if memory_type is not None:
        fields["memory_type"] = memory_type.value
    if confidence is not None:
        fields["confidence"] = confidence
    result = _run(lambda: service.correct(memory_id, text, **fields))
    _report_save(result, as_json)


@app.command("stats")
def stats(
    ctx: typer.Context,
    as_json: bool = JsonOption,
    root: Path | None = RootOption,
) -> None:
    """Counts by status, type and scope, and where the stores are."""
    from memagent.memory.learning_history import learning_stats

    service = _open(ctx, root)
    data = _run(service.stats)
    data["learning"] = learning_stats(resolve_paths(ctx, root or ctx.meta.get(_ROOT_KEY)))
    if as_json:
        print_json(data)
        return
    _out(f"{_count(data['active'], 'active memory', 'active memories')}, {data['total']} in all.")
    for title, key in (("status", "by_status"), ("type", "by_type"), ("scope", "by_scope"), ("source", "by_source")):
        shown = ", ".join(f"{k} {v}" for k, v in data[key].items() if v) or "none"
        _out(f"  by {title}: {shown}")
    for label, info in data["stores"].items():
        size = info.get("size_bytes")
        on_disk = f", {size / 1_048_576:.1f} MiB on disk" if size else ""
        _out(f"  {label} store: {info['location']} ({info['active']} active, {info['inactive']} inactive{on_disk})")
    embedder = data["embedder"]
    _out(f"  embedder: {embedder['name']} ({embedder.get('model_id') or 'no model'}, dim {embedder['dim']})")
    for title, key in (("most used", "most_used"), ("least used", "least_used")):
        shown = ", ".join(f"{c['id']} ({c['memory_type']}, {c['uses']}×)" for c in data.get(key, [])) or "none"
        _out(f"  {title}: {shown}")
    learning = data["learning"]
    _out(
        f"  learning: {learning['extraction_runs']} extraction runs ({learning['failed_runs']} failed), "
        f"{learning['consolidation_calls']} consolidation calls ({learning['consolidation_failed']} failed), "
        f"{learning['candidates']} candidates, {learning['pending_review']} pending review"
    )
    if learning.get("last_failure"):
        _out(f"    last failure: {_short(str(learning['last_failure']), 120)}")
    for title, key in (("decisions", "decisions"), ("gate refusals", "gate_refusals"), ("dropped", "dropped")):
        shown = ", ".join(f"{k} {v}" for k, v in learning[key].items()) or "none"
        _out(f"    {title}: {shown}")


@app.command("reindex")
def reindex(
    ctx: typer.Context,
    root: Path | None = RootOption,
) -> None:
    """Rebuild the index from the card files with the current embedder.

    After a model change or a mismatch, or to pick up in-place hand edits of a big store at once."""
    service = _open(ctx, root)
    with _StderrProgress("re-embedding") as progress:
        count = _run(lambda: service.reindex(progress=progress))
    info = _run(service.backend_info)
    _out(
        f"Re-embedded {_count(count, 'memory', 'memories')} with {info['embedder']['name']} (dim {info['embedder']['dim']})."
    )


def _register_transfer_commands() -> None:
    from memagent.cli.memory_transfer import export_command, import_command

    app.command("export")(export_command)
    app.command("import")(import_command)


def _register_forget_command() -> None:
    from memagent.cli.memory_forget import forget_command

    app.command("forget")(forget_command)


def _register_learning_commands() -> None:
    from memagent.cli.memory_learn import learn_command

    app.command("learn")(learn_command)


_register_transfer_commands()
_register_forget_command()
_register_learning_commands()
