"""The persistent task graph: ``.tasks/task_<id>.json`` files with dependency edges.

Import-light on purpose (no typer, rich, anthropic or chromadb) so that ``memagent tasks …``
starts fast and the agent loop can use it without a terminal.
"""

from memagent.tasks.model import (
    CANCELLED,
    COMPLETED,
    IN_PROGRESS,
    PENDING,
    STATUSES,
    TERMINAL,
    MalformedTask,
    Task,
    TaskError,
)
from memagent.tasks.store import CheckResult, GraphState, TaskBlocked, TaskStore

__all__ = [
    "CANCELLED",
    "COMPLETED",
    "IN_PROGRESS",
    "PENDING",
    "STATUSES",
    "TERMINAL",
    "CheckResult",
    "GraphState",
    "MalformedTask",
    "Task",
    "TaskBlocked",
    "TaskError",
    "TaskStore",
]
