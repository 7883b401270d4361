"""TodoManager rules, rendering, reminder timing, persistence, and the `todo` tool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memagent.features.todos import todo_tools
from memagent.todo import TodoError, TodoManager
from memagent.tools.base import ToolContext, ToolRegistry


def items(*specs: tuple) -> list[dict]:
    return [{"id": i, "text": t, "status": s} for i, t, s in specs]


def test_update_replaces_the_list_and_renders_marks_and_progress():
    manager = TodoManager()
    out = manager.update(
        items((1, "read the code", "completed"), (2, "write the fix", "in_progress"), (3, "run tests", "pending"))
    )
    assert out == "[x] #1 read the code\n[>] #2 write the fix\n[ ] #3 run tests\n(1/3 done)"
    manager.update(items((1, "only this", "pending")))
    assert manager.render() == "[ ] #1 only this\n(0/1 done)"
    assert manager.items == [{"id": "1", "text": "only this", "status": "pending"}]


def test_empty_list_renders_plainly():
    manager = TodoManager()
    assert manager.render() == "No todos."
    assert manager.update([]) == "No todos."


def test_at_most_twenty_items():
    manager = TodoManager()
    manager.update(items(*[(i, f"step {i}", "pending") for i in range(1, 21)]))
    with pytest.raises(TodoError, match=r"too many todo items \(21\); the limit is 20"):
        manager.update(items(*[(i, f"step {i}", "pending") for i in range(1, 22)]))
    assert len(manager.items) == 20  # the failed update left the previous list alone


def test_only_one_in_progress_names_the_offenders():
    manager = TodoManager(items((1, "a", "pending")))
    with pytest.raises(TodoError, match=r"only one item can be in_progress.*#1, #3"):
        manager.update(items((1, "a", "in_progress"), (2, "b", "pending"), (3, "c", "in_progress")))
    assert manager.items == [{"id": "1", "text": "a", "status": "pending"}]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (items((1, "a", "done")), r"item #1: status 'done' is not valid; use pending, in_progress or completed"),
        (items((1, "   ", "pending")), r"item #1: text is required"),
        ([{"id": 1, "status": "pending"}], r"item #1: text is required"),
        (items((1, "a", "pending"), (1, "b", "pending")), r"duplicate todo ids: #1"),
        (["just a string"], r"item 1 must be an object"),
        ("not a list", r"items must be a list"),
        (items((True, "a", "pending")), r"item 1: id must be"),
        (items((1, "x" * 501, "pending")), r"text is 501 characters"),
    ],
)
def test_invalid_lists_are_refused_with_a_readable_reason(bad, message):
    with pytest.raises(TodoError, match=message):
        TodoManager().update(bad)


def test_ids_are_normalised_and_missing_ids_numbered_by_position():
    manager = TodoManager()
    manager.update(
        [{"text": "first", "status": "pending"}, {"id": "#7", "text": "  spaced   out ", "status": "completed"}]
    )
    assert manager.items == [
        {"id": "1", "text": "first", "status": "pending"},
        {"id": "7", "text": "spaced out", "status": "completed"},
    ]
    assert manager.open_items() == [{"id": "1", "text": "first", "status": "pending"}]


def test_in_progress_item_is_exposed():
    manager = TodoManager(items((1, "a", "completed"), (2, "b", "in_progress")))
    assert manager.in_progress() == {"id": "2", "text": "b", "status": "in_progress"}
    manager.update(items((1, "a", "completed")))
    assert manager.in_progress() is None


def run_rounds(manager: TodoManager, calls: list[bool]) -> list[bool]:
    """Simulate the loop: note each round, then ask whether a reminder is due."""
    due = []
    for called in calls:
        manager.note_round(called)
        due.append(manager.reminder() is not None)
    return due


def test_reminder_after_three_quiet_rounds_then_every_three():
    manager = TodoManager(items((1, "a", "in_progress"), (2, "b", "pending")))
    due = run_rounds(manager, [False] * 9)
    assert due == [False, False, True, False, False, True, False, False, True]
    text = manager.reminder()
    assert text.startswith("<reminder>") and text.endswith("</reminder>")
    assert "9 rounds" in text and "[>] #1 a" in text and "2 item(s) are still open" in text


def test_a_todo_call_resets_the_count():
    manager = TodoManager(items((1, "a", "pending")))
    assert run_rounds(manager, [False, False, True, False, False]) == [False] * 5
    assert run_rounds(manager, [False]) == [True]


def test_update_itself_resets_the_count():
    manager = TodoManager(items((1, "a", "pending")))
    run_rounds(manager, [False, False])
    manager.update(items((1, "a", "in_progress")))
    assert run_rounds(manager, [False, False]) == [False, False]


def test_no_reminder_without_open_items():
    assert run_rounds(TodoManager(), [False] * 6) == [False] * 6
    done = TodoManager(items((1, "a", "completed"), (2, "b", "completed")))
    assert run_rounds(done, [False] * 6) == [False] * 6


def test_state_round_trips_through_json_for_resume():
    manager = TodoManager(items((1, "a", "completed"), (2, "b", "in_progress")))
    run_rounds(manager, [False, False])
    restored = TodoManager.from_dict(json.loads(json.dumps(manager.to_dict())))
    assert restored.items == manager.items
    assert restored.render() == manager.render()
    # the quiet-round count survives too: one more quiet round makes the reminder due
    assert run_rounds(restored, [False]) == [True]


def test_from_dict_refuses_invalid_saved_state():
    with pytest.raises(TodoError):
        TodoManager.from_dict({"items": items((1, "a", "in_progress"), (2, "b", "in_progress"))})
    with pytest.raises(TodoError):
        TodoManager.from_dict(["not", "a", "dict"])
    assert TodoManager.from_dict({"items": [], "quiet_rounds": "junk"}).to_dict() == {"items": [], "quiet_rounds": 0}


def test_todo_tool_updates_the_manager_and_reports_errors():
    manager = TodoManager()
    registry = ToolRegistry.of(todo_tools(manager))
    ctx = ToolContext(root=Path("."))
    ok = registry.run("todo", {"items": items((1, "plan", "in_progress"), (2, "do", "pending"))}, ctx)
    assert not ok.is_error
    assert ok.content == "[>] #1 plan\n[ ] #2 do\n(0/2 done)"
    assert manager.items[0]["status"] == "in_progress"

    two_active = registry.run("todo", {"items": items((1, "plan", "in_progress"), (2, "do", "in_progress"))}, ctx)
    assert two_active.is_error and "only one item can be in_progress" in two_active.content
    too_many = registry.run("todo", {"items": items(*[(i, "x", "pending") for i in range(25)])}, ctx)
    assert too_many.is_error and "limit is 20" in too_many.content
    bad_status = registry.run("todo", {"items": items((1, "plan", "finished"))}, ctx)
    assert bad_status.is_error and "status" in bad_status.content
    assert manager.items[0]["status"] == "in_progress"  # unchanged by the refused calls


def test_todo_tool_schema_matches_the_contract():
    schema = todo_tools(TodoManager())[0].schema()
    assert schema["name"] == "todo"
    props = schema["input_schema"]["properties"]
    assert list(props) == ["items"]
    item_schema = schema["input_schema"]["$defs"]["TodoItemInput"]
    assert set(item_schema["properties"]) == {"id", "text", "status"}
    assert item_schema["properties"]["status"]["enum"] == ["pending", "in_progress", "completed"]
