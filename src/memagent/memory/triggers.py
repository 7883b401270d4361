"""Event triggers of learning, beside the turn counter, compaction and session end.

:func:`trigger_of` names the event a finished tool call is: a task of the graph completed
(``task_update`` to ``completed``) or the todo list completed (``todo`` with every item
completed). Two more come from the conversation itself: the REPL left idle for
``memory_idle_seconds`` (``IDLE``: one extraction per idle period, fired by the REPL's idle
timer) and the user moving to another topic (``TOPIC_DRIFT``: ``memory.drift``, at the end of
the turn that changed the topic). A trigger only submits messages not mined yet, and none fires
while the day's automatic-write limit (kept on disk) is reached: an extraction whose cards the
gate would refuse is not worth its call. The memory feature submits the conversation for learning once, at the end of the
turn in which such an event happened (several events in one turn are one extraction); the
messages mined are recorded, so the session-end run does not mine them again. What a trigger
learns still passes the write gate and its limits kept on disk (``memory.quota``).
"""

from __future__ import annotations

from collections.abc import Mapping

from memagent.jsontypes import JsonMapping

TASK_COMPLETED = "task_completed"
TODO_COMPLETED = "todo_completed"
IDLE = "idle"
TOPIC_DRIFT = "topic_drift"


def trigger_of(name: str, arguments: JsonMapping, failed: bool) -> str | None:
    """The learning trigger a tool call that ran is, or ``None``."""
    if failed:
        return None
    if name == "task_update" and arguments.get("status") == "completed":
        return TASK_COMPLETED
    if name == "todo":
        items = arguments.get("items")
        if (
            isinstance(items, list)
            and items
            and all(isinstance(item, Mapping) and item.get("status") == "completed" for item in items)
        ):
            return TODO_COMPLETED
    return None


__all__ = ["IDLE", "TASK_COMPLETED", "TODO_COMPLETED", "TOPIC_DRIFT", "trigger_of"]
