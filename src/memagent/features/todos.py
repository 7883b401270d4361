"""The todo list as a feature: the ``todo`` tool, the nudge after quiet rounds, ``/todos``, the
list saved in the transcript after each change (a ``todo`` record: ``items``, the whole list),
re-injected after a compaction, and put back as the last record in effect left it when a session
is resumed or the conversation is rewound."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from memagent.agent.feature import BaseFeature, SlashCommand, SlashInput, SlashReply, SubagentContext
from memagent.feature_settings import TodoSettings
from memagent.jsontypes import JsonObject, JsonValue
from memagent.llm.items import Injected
from memagent.markers import Marker
from memagent.permissions.effects import Effect, declares
from memagent.todo import TodoError, TodoManager
from memagent.tools import claude_names
from memagent.tools.base import RegisteredTool, ToolContext, ToolError, ToolInput, tool

TODO_RECORD = "todo"


class TodoItemInput(BaseModel):
    # Extra keys are tolerated inside an item: they are dropped, not an error worth a round trip.
    model_config = ConfigDict(extra="ignore")

    id: int | str = Field(description="A short stable id, e.g. 1, 2, 3.")
    text: str = Field(description="What to do, in one line.")
    status: Literal["pending", "in_progress", "completed"] = Field(
        description="Exactly one item may be in_progress at a time."
    )


class TodoInput(ToolInput):
    items: list[TodoItemInput] = Field(
        description=f"The complete list (it replaces the previous one); at most {TodoManager.MAX_ITEMS} items."
    )


def todo_tools(manager: TodoManager) -> list[RegisteredTool]:
    """The ``todo`` tool bound to one session's manager."""

    @tool("todo", TodoInput, effects=declares(Effect.SESSION), claude=claude_names.TODO_WRITE)
    def todo(args: TodoInput, ctx: ToolContext) -> str:
        """Keep a short checklist for the current piece of work and update it as you go.

        Send the whole list every time (it replaces the previous one): at most 20 items, each
        {id, text, status} with status pending, in_progress or completed, and at most one item
        in_progress. Use it for work with several steps; mark an item in_progress before starting
        it and completed as soon as it is done. Returns the rendered list.
        """
        try:
            return manager.update([item.model_dump() for item in args.items])
        except TodoError as exc:
            raise ToolError(str(exc)) from None

    return [todo]


class TodoFeature(BaseFeature):
    """``record`` writes a non-message transcript record (the conversation's ``record``)."""

    name = "todos"

    record_kinds: ClassVar[tuple[str, ...]] = (TODO_RECORD,)
    settings_model = TodoSettings

    def __init__(
        self,
        manager: TodoManager,
        record: Callable[[JsonObject], None],
        warn: Callable[[str], None] = lambda line: None,
        settings: TodoSettings | None = None,
    ) -> None:
        self.manager = manager
        self._record = record
        self._warn = warn
        self.settings = settings or TodoSettings()

    def tools(self) -> list[RegisteredTool]:
        return todo_tools(self.manager)

    def guidance(self) -> str:
        return (
            "Todo list: for work with several steps keep a checklist with the todo tool (one item\n"
            "in_progress at a time) and mark items completed as you go."
        )

    def after_tools(self, names: list[str]) -> Injected | None:
        called = "todo" in names
        self.manager.note_round(called)
        if called:
            self._record({"type": TODO_RECORD, "items": list(self.manager.items)})
        reminder = self.manager.reminder() if self.settings.todo_reminder else None
        return Injected(Marker.REMINDER, reminder) if reminder else None

    def restore(self, records: Sequence[JsonObject]) -> None:
        """The list as the last ``todo`` record in effect left it (empty without one), recorded
        again in this transcript when there is one or the list changes. A saved list this version
        cannot take (hand-edited, from a newer version) is dropped with a warning."""
        saved = _last_saved_list(records)
        had_items = bool(self.manager.items)
        try:
            self.manager.update(saved if saved is not None else [])
        except TodoError as exc:
            self._warn(f"the saved todo list could not be restored: {exc}")
            self.manager.update([])
        if saved is not None or had_items:
            self._record({"type": TODO_RECORD, "items": list(self.manager.items)})

    def for_subagent(self, child: SubagentContext) -> TodoFeature:
        """A subagent keeps a checklist of its own, saved in its own transcript."""
        return TodoFeature(TodoManager(), child.record, settings=self.settings)

    def show(self, command: SlashInput) -> SlashReply:
        """``/todos``: the list as the model last left it."""
        return SlashReply(self.manager.render())

    slash_commands = (
        SlashCommand("todos", "/todos", "the session's todo list", show, "The todo list is off in this session."),
    )

    def reinject(self) -> str | None:
        if not self.manager.items:
            return None
        return "Your todo list (restored from the session):\n" + self.manager.render()


def _last_saved_list(records: Sequence[JsonObject]) -> list[JsonValue] | None:
    """The items of the last ``todo`` record that holds a list of them (None without one)."""
    for record in reversed(records):
        items = record.get("items")
        if record.get("type") == TODO_RECORD and isinstance(items, list):
            return items
    return None
