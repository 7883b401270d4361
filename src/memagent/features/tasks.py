"""The project's task graph as a feature: the four task tools, and the ready and in-progress
tasks re-injected from ``.tasks/`` after a compaction."""

from __future__ import annotations

from pathlib import Path

from memagent.agent.feature import BaseFeature
from memagent.tasks import TaskStore
from memagent.tools.base import Tool
from memagent.tools.task_tools import task_tools


class TaskGraphFeature(BaseFeature):
    name = "tasks"

    def __init__(self, tasks_dir: Path) -> None:
        self.tasks_dir = tasks_dir

    def store(self) -> TaskStore:
        return TaskStore(self.tasks_dir)

    def tools(self) -> list[Tool]:
        return task_tools(self.store)

    def snapshot(self) -> str | None:
        """The ready and in-progress tasks as compact text; None when there is no graph."""
        if not self.tasks_dir.is_dir():
            return None
        try:
            snapshot = self.store().context_snapshot()
        except Exception as exc:  # a broken task store must not stop a compaction or a turn
            return f"(the task graph could not be read: {exc})"
        return snapshot or None

    def reinject(self) -> str | None:
        snapshot = self.snapshot()
        return "The project's task graph (from .tasks/):\n" + snapshot if snapshot else None
