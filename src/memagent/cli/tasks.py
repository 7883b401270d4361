"""`memagent tasks`: look at and edit the project's task graph (``.tasks/``) from the shell.

``memagent tasks`` alone is ``memagent tasks list``. Every read command takes ``--json``; every
command takes ``-C/--root DIR``. Exit codes: 0 ok, 1 a refused or failed operation (unknown id,
cycle, blocked task, problems found by ``check``), 2 a usage error.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterable
from enum import Enum
from pathlib import Path
from typing import TypeVar

import typer

from memagent.cli.common import EXIT_FAILURE, EXIT_USAGE, JsonOption, RootOption, fail, print_json, resolve_paths
from memagent.jsontypes import JsonObject
from memagent.tasks import Task, TaskBlocked, TaskError, TaskStore
from memagent.tasks.graph import TreeLine, tree_lines
from memagent.ui.safe_text import printable

app = typer.Typer(
    help="The project's persistent task graph (.tasks/).",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_ROOT_KEY = "memagent.tasks.root"
MAX_WARNINGS = 5
STATUS_STYLE = {
    "pending": "yellow",
    "in_progress": "bold cyan",
    "completed": "green",
    "cancelled": "dim",
}


class Status(str, Enum):
    pending = "pending"
    in_progress = "in_progress"
    completed = "completed"
    cancelled = "cancelled"


AfterOption = typer.Option(
    None,
    "--after",
    "--blocked-by",
    "-a",
    metavar="ID",
    help="Blocked by this task id (repeat, or comma-separate: --blocked-by 2,3).",
    show_default=False,
)


# --------------------------------------------------------------------------- helpers


def _store(ctx: typer.Context, root: Path | None) -> TaskStore:
    """The store for ``-C`` given here, on ``tasks``, or before ``tasks`` (in that order)."""
    return TaskStore(resolve_paths(ctx, root or ctx.meta.get(_ROOT_KEY)).tasks)


def _parse_ids(values: list[str] | None, option: str) -> list[int]:
    ids: list[int] = []
    for value in values or []:
        for part in re.split(r"[,\s]+", value.strip()):
            if not part:
                continue
            digits = part.lstrip("#")
            if not re.fullmatch(r"[0-9]+", digits) or int(digits) < 1:
                fail(f"{option} expects task ids like 3 or 2,5 — got {part!r}", EXIT_USAGE)
            ids.append(int(digits))
    return ids


def parse_task_id(value: str) -> int:
    """A task id as the user types it or the UI prints it: ``2`` or ``#2``."""
    digits = value.strip().lstrip("#").strip()
    if not re.fullmatch(r"[0-9]+", digits) or int(digits) < 1:
        fail(f"ID: {value!r} is not a task id (ids look like 2 or #2)", EXIT_USAGE)
    return int(digits)


def _plain_ids(message: str) -> str:
    """``#3`` → ``3``: an id copied from a message must not start a shell comment."""
    return re.sub(r"#(?=[0-9])", "", message)


ResultT = TypeVar("ResultT")


def _run(action: Callable[[], ResultT]) -> ResultT:
    """Turn store failures into one-line errors with exit code 1."""
    try:
        return action()
    except TaskBlocked as exc:
        fail(
            _plain_ids(
                f"task {exc.task.id} cannot be set {exc.status}: it is blocked by {', '.join(exc.blockers)} "
                "(finish those first, or pass --force)"
            ),
            EXIT_FAILURE,
        )
    except TaskError as exc:
        fail(_plain_ids(str(exc)), EXIT_FAILURE)
    except OSError as exc:
        fail(f"cannot access the task files: {exc.strerror or exc} ({exc.filename or ''})", EXIT_FAILURE)


def _warn(problems: list[str]) -> None:
    for problem in problems[:MAX_WARNINGS]:
        sys.stderr.write(f"memagent: warning: {problem}\n")
    if len(problems) > MAX_WARNINGS:
        sys.stderr.write(f"memagent: warning: … {len(problems) - MAX_WARNINGS} more; run `memagent tasks check`\n")


def _console():
    from rich.console import Console

    return Console(highlight=False)


def _ids_text(ids: list[int]) -> str:
    """Plain ids (``2, 3``): a word starting with ``#`` is a comment to the shell, so an id copied
    from here into a command line must not carry one."""
    return ", ".join(str(i) for i in ids) if ids else "—"


def _summary(task: Task) -> JsonObject:
    data = task.to_dict()
    data["ready"] = task.is_ready
    return data


def _listing(ctx: typer.Context, root: Path | None, as_json: bool, pick: Callable[[Task], bool], title: str) -> None:
    store = _store(ctx, root)
    tasks = [t for t in _run(store.list) if pick(t)]
    problems = store.problems()
    if as_json:
        _print_listing_json(tasks, problems)
        return
    _warn(problems)
    _print_table(tasks, title)


def _print_listing_json(tasks: list[Task], problems: list[str]) -> None:
    """``{"tasks": [...], "problems": [...]}`` with one task per line.

    Hand-assembled because ``json.dumps(indent=...)`` falls back to the pure-Python encoder,
    which makes a 10,000-task listing several times slower; this stays readable and valid JSON.
    """
    out = sys.stdout
    out.write('{\n  "tasks": [')
    out.write(",".join("\n    " + json.dumps(_summary(t), ensure_ascii=False) for t in tasks))
    out.write("\n  ],\n" if tasks else "],\n")
    out.write(f'  "problems": {json.dumps(problems, ensure_ascii=False)}\n}}\n')


# SGR codes for the few styles the table uses (see _print_table).
SGR = {"yellow": "33", "bold cyan": "1;36", "green": "32", "dim": "2", "bold green": "1;32", "red": "31", "bold": "1"}


def _fit(text: str, width: int) -> str:
    """Pad or crop ``text`` to ``width`` terminal cells, marking a crop with an ellipsis."""
    from rich.cells import cell_len, set_cell_size

    if cell_len(text) <= width:
        return set_cell_size(text, width)
    return set_cell_size(text, max(width - 1, 0)) + "…"


def _print_table(tasks: list[Task], title: str) -> None:
    """A plain column layout, styled only on a colour terminal.

    Not a rich Table: rich measures every cell of every row, which takes seconds for a few
    thousand tasks, while this is linear and writes once.
    """
    console = _console()
    if not tasks:
        console.print(f"No {title}.")
        return
    colour = console.color_system is not None

    def paint(text: str, style: str) -> str:
        return f"\x1b[{SGR[style]}m{text}\x1b[0m" if colour and style else text

    rows = []
    for task in tasks:
        status, style = ("ready", "bold green") if task.is_ready else (task.status, STATUS_STYLE[task.status])
        owner = printable(task.owner, newlines=False)
        rows.append((task, str(task.id), status, style, owner, _ids_text(task.blockedBy), _ids_text(task.blocks)))
    headers = ("ID", "Status", "Owner", "Blocked by", "Blocks")
    caps = (8, 11, 16, 24, 24)
    widths = [
        min(cap, max([len(h)] + [len(str(r[i])) for r in rows])) for h, cap, i in zip(headers, caps, (1, 2, 4, 5, 6))
    ]
    fixed = 2 + sum(w + 2 for w in widths)
    subject_width = max(
        12, min(max(len(printable(r[0].subject, newlines=False)) for r in rows), console.width - fixed - 1)
    )
    id_w, status_w, owner_w, by_w, blocks_w = widths

    def line(mark: str, ident: str, subject: str, status: str, owner: str, by: str, blocks: str) -> str:
        return "  ".join(
            [mark, ident.rjust(id_w), _fit(subject, subject_width), status, _fit(owner, owner_w), by, blocks]
        ).rstrip()

    out = [
        paint(line(" ", "ID", "Subject", "Status".ljust(status_w), "Owner", "Blocked by".ljust(by_w), "Blocks"), "bold")
    ]
    for task, ident, status, style, owner, by, blocks in rows:
        out.append(
            line(
                paint("▶", "bold green") if task.is_ready else " ",
                ident,
                printable(task.subject, newlines=False),
                paint(status.ljust(status_w), style),
                owner,
                paint(_fit(by, by_w), "red" if task.is_blocked else "dim"),
                _fit(blocks, blocks_w),
            )
        )
    ready = sum(1 for t in tasks if t.is_ready)
    out.append(paint(f"{len(tasks)} {title} · ▶ {ready} ready to start", "dim"))
    sys.stdout.write("\n".join(out) + "\n")


def _report(task: Task, as_json: bool, verb: str, released: list[Task] = ()) -> None:
    if as_json:
        print_json(_summary(task))
        return
    sys.stdout.write(f"{verb} task {task.id}: {printable(task.subject, newlines=False)} [{task.status}]\n")
    ready = [t for t in released if t.is_ready]
    if ready:
        shown = _ids_text([t.id for t in ready[:10]]) + (" …" if len(ready) > 10 else "")
        sys.stdout.write(f"Ready now: {shown}\n")


def _finish(
    store: TaskStore,
    task_id: int,
    status: str | None,
    force: bool = False,
    *,
    owner: str | None = None,
    add_blocked_by: Iterable[int] = (),
    add_blocks: Iterable[int] = (),
) -> tuple[Task, list[Task]]:
    """Apply the change; also return the tasks that waited for this one (to say which are ready).

    Reads only the tasks involved, so finishing a task stays fast however large the graph.
    """
    waiting = _run(lambda: store.get(task_id)).blocks if status in ("completed", "cancelled") else []
    task = _run(
        lambda: store.update(
            task_id, status=status, force=force, owner=owner, add_blocked_by=add_blocked_by, add_blocks=add_blocks
        )
    )
    released = []
    for dependent in waiting:
        try:
            released.append(store.get(dependent))
        except TaskError:
            continue
    return task, released


# --------------------------------------------------------------------------- commands


@app.callback(invoke_without_command=True)
def tasks_main(ctx: typer.Context, root: Path | None = RootOption, as_json: bool = JsonOption) -> None:
    """The project's persistent task graph (.tasks/). Without a command: list."""
    ctx.meta[_ROOT_KEY] = root
    if ctx.invoked_subcommand is None:
        list_tasks(ctx, root=None, as_json=as_json)


@app.command("list")
def list_tasks(ctx: typer.Context, root: Path | None = RootOption, as_json: bool = JsonOption) -> None:
    """All tasks: id, subject, status, owner, blocked by, blocks (▶ marks ready tasks)."""
    _listing(ctx, root, as_json, lambda t: True, "tasks")


@app.command("ready")
def ready(ctx: typer.Context, root: Path | None = RootOption, as_json: bool = JsonOption) -> None:
    """Tasks that can start now: pending with nothing blocking them."""
    _listing(ctx, root, as_json, lambda t: t.is_ready, "ready tasks")


@app.command("blocked")
def blocked(ctx: typer.Context, root: Path | None = RootOption, as_json: bool = JsonOption) -> None:
    """Open tasks still waiting for others."""
    _listing(ctx, root, as_json, lambda t: t.is_blocked, "blocked tasks")


@app.command("show")
def show(
    ctx: typer.Context,
    task_id: str = typer.Argument(..., metavar="ID", help="Task id (2 or #2)."),
    root: Path | None = RootOption,
    as_json: bool = JsonOption,
) -> None:
    """One task in full."""
    store = _store(ctx, root)
    number = parse_task_id(task_id)
    task = _run(lambda: store.get(number))
    if as_json:
        print_json(_summary(task))
        return
    from rich.text import Text

    console = _console()
    console.print(Text(f"task {task.id}: {printable(task.subject, newlines=False)}", style="bold"))
    status = Text(
        "ready" if task.is_ready else task.status, style="bold green" if task.is_ready else STATUS_STYLE[task.status]
    )
    console.print(Text("status:     ") + status)
    console.print(Text(f"owner:      {printable(task.owner, newlines=False) or '—'}"))
    console.print(Text(f"blocked by: {_describe_edges(store, task.blockedBy)}"))
    console.print(Text(f"blocks:     {_describe_edges(store, task.blocks)}"))
    console.print(Text(f"created:    {task.created_at or '—'}"))
    console.print(Text(f"updated:    {task.updated_at or '—'}"))
    for key, value in task.extra.items():
        console.print(Text(f"{key}: {value!r}", style="dim"))
    if task.description:
        console.print()
        console.print(Text(printable(task.description)))


def _describe_edges(store: TaskStore, ids: list[int]) -> str:
    parts = []
    for i in ids:
        try:
            other = store.get(i)
            parts.append(f"{i} {printable(other.subject, newlines=False)} ({other.status})")
        except TaskError:
            parts.append(f"{i} (missing or unreadable)")
    return "; ".join(parts) if parts else "—"


@app.command("tree")
def tree(ctx: typer.Context, root: Path | None = RootOption, as_json: bool = JsonOption) -> None:
    """Dependency tree: tasks nothing blocks first, each followed by what waits for it."""
    store = _store(ctx, root)
    state = _run(store.load)
    lines = tree_lines(state.tasks)
    if as_json:
        print_json({"lines": [_tree_json(line, state.tasks) for line in lines], "problems": state.problems})
        return
    _warn(state.problems)
    console = _console()
    if not lines:
        console.print("No tasks.")
        return
    sys.stdout.write(_tree_text(lines, state.tasks, console.width, console.color_system is not None) + "\n")


def _tree_json(line: TreeLine, tasks: dict[int, Task]) -> JsonObject:
    task = tasks.get(line.id)
    return {
        "id": line.id,
        "depth": line.depth,
        "subject": task.subject if task else None,
        "status": task.status if task else None,
        "ready": task.is_ready if task else False,
        "repeat": line.repeat,
        "missing": line.missing,
        "detached": line.detached,
    }


def _tree_text(lines: list[TreeLine], tasks: dict[int, Task], width: int, colour: bool) -> str:
    """Draw pre-order lines with box guides. Linear in the number of lines (a rich Tree takes
    seconds for thousands of tasks); indentation stops at a depth that fits the width and
    deeper tasks say their depth instead."""
    max_depth = max(4, (width - 30) // 4)

    def paint(text: str, style: str) -> str:
        return f"\x1b[{SGR[style]}m{text}\x1b[0m" if colour else text

    out = [paint("Tasks", "bold")]
    attached = [line for line in lines if not line.detached]
    detached = [line for line in lines if line.detached]
    for group in (attached, detached):
        if group is detached and detached:
            out.append(
                paint("Not reachable from a root (a cycle or a one-sided edge; see `memagent tasks check`):", "red")
            )
        last = _last_child_flags(group)
        guides: list[str] = []
        for line, is_last in zip(group, last):
            depth = min(line.depth, max_depth)
            del guides[depth:]
            out.append("".join(guides) + ("└── " if is_last else "├── ") + _tree_label(line, tasks, max_depth, paint))
            guides.append("    " if is_last else "│   ")
    return "\n".join(out)


def _last_child_flags(lines: list[TreeLine]) -> list[bool]:
    """For each line: is it the last child of its parent? (A reverse scan over depths.)"""
    flags = [False] * len(lines)
    later: list[bool] = []  # later[d]: a following sibling at depth d exists
    for i in range(len(lines) - 1, -1, -1):
        depth = lines[i].depth
        del later[depth + 1 :]
        later.extend([False] * (depth + 1 - len(later)))
        flags[i] = not later[depth]
        later[depth] = True
    return flags


def _tree_label(line: TreeLine, tasks: dict[int, Task], max_depth: int, paint: Callable[[str, str], str]) -> str:
    if line.missing:
        return paint(f"{line.id} (missing task)", "red")
    task = tasks[line.id]
    status, style = ("ready", "bold green") if task.is_ready else (task.status, STATUS_STYLE[task.status])
    label = f"{task.id} {printable(task.subject, newlines=False)} " + paint(f"[{status}]", style)
    if line.repeat:
        label += paint(" (shown above)", "dim")
    if line.depth > max_depth:
        label += paint(f" (depth {line.depth})", "dim")
    return label


@app.command("add")
def add(
    ctx: typer.Context,
    subject: str = typer.Argument(..., help="Short title of the task."),
    desc: str = typer.Option("", "--desc", "-d", metavar="TEXT", help="Longer description."),
    after: list[str] | None = AfterOption,
    owner: str = typer.Option("", "--owner", metavar="NAME", help="Who works on it."),
    root: Path | None = RootOption,
    as_json: bool = JsonOption,
) -> None:
    """Create a task (optionally blocked by others with --blocked-by / --after)."""
    if not subject.strip():
        fail('the task subject is empty; usage: memagent tasks add "SUBJECT"', EXIT_USAGE)
    blockers = _parse_ids(after, "--blocked-by/--after")
    store = _store(ctx, root)
    task = _run(lambda: store.create(subject, desc, blocked_by=blockers, owner=owner))
    _report(task, as_json, "Created")


@app.command("update")
def update(
    ctx: typer.Context,
    task_id: str = typer.Argument(..., metavar="ID", help="Task id (2 or #2)."),
    status: Status | None = typer.Option(
        None, "--status", "-s", metavar="STATUS", help="New status: pending, in_progress, completed or cancelled."
    ),
    owner: str | None = typer.Option(None, "--owner", metavar="NAME", help="New owner (empty string clears it)."),
    after: list[str] | None = AfterOption,
    before: list[str] | None = typer.Option(
        None,
        "--before",
        "--blocks",
        "-b",
        metavar="ID",
        help="Blocks this task id (repeat, or comma-separate).",
        show_default=False,
    ),
    force: bool = typer.Option(False, "--force", "-f", help="Start or complete the task even though it is blocked."),
    root: Path | None = RootOption,
    as_json: bool = JsonOption,
) -> None:
    """Change a task's status or owner, or add dependencies."""
    blockers = _parse_ids(after, "--blocked-by/--after")
    dependents = _parse_ids(before, "--blocks/--before")
    if status is None and owner is None and not blockers and not dependents:
        fail("nothing to change: give --status, --owner, --blocked-by (--after) or --blocks (--before)", EXIT_USAGE)
    store = _store(ctx, root)
    task, released = _finish(
        store,
        parse_task_id(task_id),
        status.value if status else None,
        force,
        owner=owner,
        add_blocked_by=blockers,
        add_blocks=dependents,
    )
    _report(task, as_json, "Updated", released)


@app.command("done")
def done(
    ctx: typer.Context,
    task_id: str = typer.Argument(..., metavar="ID", help="Task id (2 or #2)."),
    force: bool = typer.Option(False, "--force", "-f", help="Complete it even though it is blocked."),
    root: Path | None = RootOption,
    as_json: bool = JsonOption,
) -> None:
    """Mark a task completed; the tasks waiting only for it become ready."""
    task, released = _finish(_store(ctx, root), parse_task_id(task_id), "completed", force)
    _report(task, as_json, "Completed", released)


@app.command("cancel")
def cancel(
    ctx: typer.Context,
    task_id: str = typer.Argument(..., metavar="ID", help="Task id (2 or #2)."),
    root: Path | None = RootOption,
    as_json: bool = JsonOption,
) -> None:
    """Mark a task cancelled; tasks waiting for it are released."""
    task, released = _finish(_store(ctx, root), parse_task_id(task_id), "cancelled")
    _report(task, as_json, "Cancelled", released)


def _check_advice(store: TaskStore, fixed: bool) -> str:
    """What to do about what is left: --fix when it would repair something, else the files."""
    from memagent.tasks import graph

    state = _run(store.load)
    repairable = bool(graph.plan_repairs(state.tasks, state.unreadable).actions)
    if repairable and not fixed:
        return "Run `memagent tasks check --fix` to repair the edges."
    if state.unreadable:
        names = ", ".join(str(store.root / graph.file_name(i)) for i in sorted(state.unreadable))
        return (
            f"--fix cannot repair an unreadable file: correct it in an editor or delete it ({names}), "
            "then run `memagent tasks check` again."
        )
    return "These cannot be repaired automatically; edit the task files named above by hand."


@app.command("check")
def check(
    ctx: typer.Context,
    fix: bool = typer.Option(False, "--fix", help="Repair what can be repaired (edges); report the rest."),
    root: Path | None = RootOption,
    as_json: bool = JsonOption,
) -> None:
    """Find malformed task files and broken edges (exit 1 if any remain)."""
    store = _store(ctx, root)
    result = _run(lambda: store.check(fix=fix))
    if as_json:
        print_json(
            {"ok": result.ok, "problems": result.problems, "fixed": result.actions, "remaining": result.remaining}
        )
    else:
        out = sys.stdout
        if not result.problems:
            out.write("Task graph OK.\n")
        for action in result.actions:
            out.write(f"fixed: {action}\n")
        for problem in result.remaining:
            out.write(f"problem: {problem}\n")
        if result.remaining:
            out.write(_check_advice(store, fix) + "\n")
    if not result.ok:
        raise typer.Exit(EXIT_FAILURE)
