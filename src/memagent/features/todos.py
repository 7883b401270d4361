"""The todo list as a feature: the ``todo`` tool, the nudge after quiet rounds, the list saved
in the transcript after each change and re-injected after a compaction."""

from __future__ import annotations

from typing import Any, Callable

from memagent.agent.feature import BaseFeature
from memagent.todo import TodoManager
from memagent.tools.base import Tool
from memagent.tools.todo_tools import todo_tools

TODO_RECORD = "todo"


class TodoFeature(BaseFeature):
    """``record`` writes a non-message transcript record (the conversation's ``record``)."""

    name = "todos"

    def __init__(self, manager: TodoManager, record: Callable[[dict[str, Any]], None]) -> None:
        self.manager = manager
        self._record = record

    def tools(self) -> list[Tool]:
        return todo_tools(self.manager)

    def after_tools(self, names: list[str]) -> str | None:
        called = "todo" in names
        self.manager.note_round(called)
        if called:
            self._record({"type": TODO_RECORD, "items": self.manager.items})
        return self.manager.reminder()

    def reinject(self) -> str | None:
        if not self.manager.items:
            return None
        return "Your todo list (restored from the session):\n" + self.manager.render()
