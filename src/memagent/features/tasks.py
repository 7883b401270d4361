"""The project's task graph as a feature: the four task tools, and the ready and in-progress
tasks re-injected from ``.tasks/`` after a compaction, and ``/tasks``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import Field

from memagent.agent.feature import BaseFeature, SlashCommand, SlashInput, SlashReply, SubagentContext
from memagent.permissions.effects import Effect, declares
from memagent.tasks import IN_PROGRESS, Task, TaskBlocked, TaskError, TaskStore
from memagent.tools.base import Tool, ToolContext, ToolError, ToolInput, tool

LIST_LIMIT = 200


class TaskCreateInput(ToolInput):
    subject: str = Field(description="A short imperative title, e.g. 'Add retry to the HTTP client'.")
    description: str = Field("", description="Details: what done looks like, files involved.")
    blocked_by: list[int] = Field(
        default_factory=list, alias="blockedBy", description="Ids of tasks that must be completed first."
    )


class TaskUpdateInput(ToolInput):
    task_id: int = Field(description="The task to change.")
    status: Literal["pending", "in_progress", "completed", "cancelled"] | None = Field(
        None, description="New status. A blocked task cannot be started or completed."
    )
    owner: str | None = Field(None, description="Who works on it (e.g. 'agent' or a name).")
    add_blocked_by: list[int] = Field(
        default_factory=list, alias="addBlockedBy", description="Ids of tasks this task must wait for."
    )
    add_blocks: list[int] = Field(
        default_factory=list, alias="addBlocks", description="Ids of tasks that must wait for this one."
    )


class TaskListInput(ToolInput):
    pass


class TaskGetInput(ToolInput):
    task_id: int = Field(description="The task to show.")


def task_json(task: Task) -> str:
    return json.dumps(task.to_dict(), indent=2, ensure_ascii=False)


def task_line(task: Task) -> str:
    """``#4 [ready] Subject`` — one line of the compact listing."""
    if task.is_ready:
        marker = "ready"
    elif task.is_blocked:
        marker = f"{task.status}, blocked by " + ", ".join(f"#{i}" for i in task.blockedBy)
    else:
        marker = task.status
    owner = f" (owner: {task.owner})" if task.owner else ""
    return f"#{task.id} [{marker}] {task.subject}{owner}"


def render_listing(tasks: list[Task], problems: list[str], limit: int = LIST_LIMIT) -> str:
    """Open tasks first (in progress, ready, blocked), then a count of finished ones."""
    open_tasks = [t for t in tasks if not t.terminal]
    order = {"in_progress": 0, "pending": 1}
    open_tasks.sort(key=lambda t: (order.get(t.status, 2), bool(t.blockedBy), t.id))
    finished = len(tasks) - len(open_tasks)
    if not tasks and not problems:
        return "No tasks yet. Create one with task_create."
    lines = [task_line(t) for t in open_tasks[:limit]]
    if len(open_tasks) > limit:
        lines.append(f"… and {len(open_tasks) - limit} more open tasks")
    if not open_tasks:
        lines.append("No open tasks.")
    if finished:
        lines.append(f"({finished} completed or cancelled not shown; task_get shows any task)")
    for problem in problems[:10]:
        lines.append(f"warning: {problem}")
    return "\n".join(lines)


def _refusal(exc: TaskError) -> ToolError:
    if isinstance(exc, TaskBlocked):
        return ToolError(
            f"task #{exc.task.id} cannot be set {exc.status}: it is blocked by {', '.join(exc.blockers)}. "
            "Complete (or cancel) those tasks first; only the user can override this "
            f"(`memagent tasks update {exc.task.id} --status {exc.status} --force`)."
        )
    return ToolError(str(exc))


def _already_done_note(requested: list[int], task: Task) -> str:
    skipped = [i for i in requested if i not in task.blockedBy]
    if not skipped:
        return ""
    return "\nNote: " + ", ".join(f"#{i}" for i in skipped) + " already finished, so not recorded as blockers."


def _existing(store: TaskStore, ids: list[int]) -> list[Task]:
    found = []
    for task_id in ids:
        try:
            found.append(store.get(task_id))
        except TaskError:
            continue
    return found


def task_tools(store_factory: Callable[[], TaskStore]) -> list[Tool]:
    """The four task tools; ``store_factory`` returns the project's store (``TaskStore(root/'.tasks')``)."""

    @tool("task_create", TaskCreateInput, key_argument="subject", effects=declares(Effect.TASKS))
    def task_create(args: TaskCreateInput, ctx: ToolContext) -> str:
        """Create a task in the project's persistent task graph (.tasks/), which outlives this session.

        Use it for goals that span sessions or depend on each other; blockedBy lists tasks that
        must be completed first. Returns the new task as JSON.
        """
        try:
            task = store_factory().create(args.subject, args.description, blocked_by=args.blocked_by)
        except TaskError as exc:
            raise _refusal(exc) from None
        return task_json(task) + _already_done_note(args.blocked_by, task)

    @tool("task_update", TaskUpdateInput, key_argument="task_id", effects=declares(Effect.TASKS))
    def task_update(args: TaskUpdateInput, ctx: ToolContext) -> str:
        """Change a task: status (pending, in_progress, completed, cancelled), owner, or add dependencies.

        addBlockedBy: tasks this one waits for; addBlocks: tasks that wait for this one. Completing
        a task unblocks the tasks waiting for it. A task that is still blocked cannot be set
        in_progress or completed. Cycles and unknown ids are refused. Returns the task as JSON.
        """
        store = store_factory()
        try:
            finishing = args.status in ("completed", "cancelled")
            waiting = store.get(args.task_id).blocks if finishing else []
            task = store.update(
                args.task_id,
                status=args.status,
                owner=args.owner,
                add_blocked_by=args.add_blocked_by,
                add_blocks=args.add_blocks,
            )
        except TaskError as exc:
            raise _refusal(exc) from None
        text = task_json(task) + _already_done_note(args.add_blocked_by, task)
        ready = [t for t in _existing(store, waiting) if t.is_ready]
        if ready:
            text += "\nReady now: " + ", ".join(f"#{t.id} {t.subject}" for t in ready[:10])
        return text

    @tool("task_list", TaskListInput, effects=declares(Effect.READ))
    def task_list(args: TaskListInput, ctx: ToolContext) -> str:
        """List the project's tasks: id, [ready] or [status, blocked by …], subject."""
        store = store_factory()
        tasks = store.list()
        return render_listing(tasks, store.problems())

    @tool("task_get", TaskGetInput, key_argument="task_id", effects=declares(Effect.READ))
    def task_get(args: TaskGetInput, ctx: ToolContext) -> str:
        """Show one task in full as JSON (description, status, blockedBy, blocks, owner, times)."""
        try:
            return task_json(store_factory().get(args.task_id))
        except TaskError as exc:
            raise _refusal(exc) from None

    return [task_create, task_update, task_list, task_get]


class TaskGraphFeature(BaseFeature):
    name = "tasks"

    def __init__(self, tasks_dir: Path) -> None:
        self.tasks_dir = tasks_dir

    def store(self) -> TaskStore:
        return TaskStore(self.tasks_dir)

    def tools(self) -> list[Tool]:
        return task_tools(self.store)

    def guidance(self) -> str:
        return (
            "Task graph: for larger work that spans sessions, use the project's task graph\n"
            "(task_create / task_update / task_list / task_get) with dependencies."
        )

    def snapshot(self) -> str | None:
        """The ready and in-progress tasks as compact text; None when there is no graph."""
        if not self.tasks_dir.is_dir():
            return None
        try:
            snapshot = self.store().context_snapshot()
        except Exception as exc:  # a broken task store must not stop a compaction or a turn
            return f"(the task graph could not be read: {exc})"
        return snapshot or None

    def for_subagent(self, child: SubagentContext) -> TaskGraphFeature:
        return self  # one task graph per project

    def in_progress(self) -> str | None:
        """The graph's task in progress as ``#3 subject`` (the newest started one), or None: what
        memory learns cards under when no todo item is in progress."""
        if not self.tasks_dir.is_dir():
            return None
        try:
            started = [t for t in self.store().list() if t.status == "in_progress"]
        except Exception:  # a broken task store labels nothing
            return None
        if not started:
            return None
        task = max(started, key=lambda t: (str(t.updated_at or ""), t.id))
        return f"#{task.id} {task.subject}"

    def show(self, command: SlashInput) -> SlashReply:
        """``/tasks``: the tasks in progress and ready to start, and how many wait on others."""
        store = self.store()
        try:
            tasks = store.list()
        except (TaskError, OSError) as exc:
            return SlashReply(f"cannot read tasks: {exc}", error=True)
        active = [t for t in tasks if t.status == IN_PROGRESS]
        ready = [t for t in tasks if t.is_ready and t.status != IN_PROGRESS]
        blocked = sum(1 for t in tasks if t.is_blocked)
        lines = [f"▶ #{t.id} {t.subject} (in progress)" for t in active]
        lines += [f"○ #{t.id} {t.subject}" for t in ready]
        if not lines:
            lines.append("No open tasks." if not blocked else f"No ready tasks ({blocked} blocked).")
        elif blocked:
            lines.append(f"({blocked} blocked; `memagent tasks blocked` lists them)")
        lines += [f"! {problem}" for problem in store.problems()]  # a damaged file is never hidden
        return SlashReply("\n".join(lines))

    slash_commands = (
        SlashCommand(
            "tasks",
            "/tasks",
            "in-progress and ready tasks of the project's task graph",
            show,
            "The task graph is off in this session.",
        ),
    )

    def reinject(self) -> str | None:
        snapshot = self.snapshot()
        return "The project's task graph (from .tasks/):\n" + snapshot if snapshot else None
