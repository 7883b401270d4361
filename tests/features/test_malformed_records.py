"""Features read what others wrote — transcript records, an MCP server's schema — as JSON whose
fields may have any type: a field of the wrong type reads as absent, never as a crash or a value
misread (a string iterated as if it were a list)."""

from __future__ import annotations

import json

from memagent.features.continuity import summary_of_records
from memagent.features.mcp_client import _key_argument
from memagent.features.todos import TodoFeature
from memagent.todo import TodoManager


def _restored(records):
    written = []
    feature = TodoFeature(TodoManager(), written.append)
    feature.restore(records)
    return feature.manager.items, written


def test_the_todo_list_comes_from_the_last_record_that_holds_a_list():
    item = {"id": "1", "text": "write the parser", "status": "in_progress"}
    records = [
        {"type": "todo", "items": [item]},
        {"type": "todo", "items": "1,2,3"},  # damaged: a string, not a list
        {"type": "todo"},  # no items at all
    ]
    items, written = _restored(records)
    assert items == [item]
    assert written == [{"type": "todo", "items": [item]}]


def test_a_todo_record_with_items_of_the_wrong_type_restores_nothing():
    items, written = _restored([{"type": "todo", "items": {"id": "1"}}, {"type": "message", "items": []}])
    assert items == [] and written == []


def test_a_session_digest_skips_messages_of_the_wrong_shape():
    records = [
        {"type": "message", "role": "user", "content": ["a bare string", {"type": "text", "text": "fix the build"}]},
        {"type": "message", "role": 7, "content": [{"type": "text", "text": "not a role"}]},
        {"type": "message", "role": "assistant", "content": "not a list"},
        {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "the build is fixed"}]},
    ]
    summary = summary_of_records(records)
    assert summary is not None
    assert "fix the build" in summary and "the build is fixed" in summary
    assert "not a role" not in summary and "not a list" not in summary and "a bare string" not in summary


def test_a_summary_record_wins_over_the_digest():
    records = [
        {"type": "message", "role": "user", "content": [{"type": "text", "text": "hello"}]},
        {"type": "session_summary", "summary": "what was done"},
    ]
    assert summary_of_records(records) == "what was done"


def test_the_key_argument_of_an_mcp_schema_is_the_first_required_string():
    schema = {
        "type": "object",
        "properties": {"limit": {"type": "integer"}, "query": {"type": "string"}},
        "required": ["limit", "query"],
    }
    assert _key_argument(schema) == "query"


def test_an_mcp_schema_whose_required_or_properties_are_malformed_has_no_key_argument():
    # a strange server: "required" a string (its letters are not property names), properties a list
    assert _key_argument({"properties": {"q": {"type": "string"}}, "required": "q"}) is None
    assert _key_argument({"properties": [{"q": {"type": "string"}}], "required": ["q"]}) is None
    assert _key_argument({"properties": {"q": "string"}, "required": ["q", 3, None]}) is None
    assert _key_argument(json.loads('{"required": [{"q": 1}], "properties": {}}')) is None
