"""Typed conversation items: every stored block maps to an item and back unchanged, an injected
text carries its kind as data, and the wire gets exactly the API's fields."""

from __future__ import annotations

import copy

import pytest

from memagent.llm.anthropic import build_params
from memagent.llm.items import (
    INJECTED_FIELD,
    Image,
    Injected,
    OtherBlock,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    accepted_blocks,
    block,
    injected,
    item,
    items,
    kind_of,
    own_texts,
    upgrade_legacy,
    wire_block,
    wire_message,
)
from memagent.llm.types import ModelRequest, text_block, tool_result_block
from memagent.markers import Marker, reminder

PNG = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}

STORED = [
    {"type": "text", "text": "fix the parser"},
    {"type": "text", "text": "see", "citations": [{"type": "char_location", "cited_text": "x", "document_index": 0}]},
    {"type": "text", "text": "Relevant long-term memories:\n[Memory#m1] tabs", INJECTED_FIELD: "memories"},
    {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}},
    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "print(1)"},
    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "boom", "is_error": True},
    {
        "type": "tool_result",
        "tool_use_id": "toolu_3",
        "content": [{"type": "text", "text": "shot"}, {"type": "image", "source": PNG}],
    },
    {
        "type": "tool_result",
        "tool_use_id": "toolu_4",
        "content": "[Previous: used bash — …]",
        INJECTED_FIELD: "elided_result",
    },
    {"type": "image", "source": PNG},
    {"type": "thinking", "thinking": "hmm", "signature": "sig"},
    {"type": "redacted_thinking", "data": "opaque"},
    {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "doc"}},
    {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "q"}},
]


@pytest.mark.parametrize("stored", STORED, ids=lambda b: f"{b['type']}-{sorted(b)}")
def test_every_stored_block_round_trips_through_its_item(stored):
    assert block(item(stored)) == stored


def test_each_block_is_the_item_it_says():
    found = items(STORED)
    assert found[0] == Text("fix the parser")
    assert found[2] == Injected(Marker.MEMORIES, "Relevant long-term memories:\n[Memory#m1] tabs")
    assert found[3] == ToolUse("toolu_1", "read_file", {"path": "a.py"})
    assert found[4] == ToolResult("toolu_1", "print(1)")
    assert found[5].is_error and found[5].text == "boom"
    assert found[6].text == "shot" and found[6].has_non_text and found[6].content[1] == Image(PNG)
    assert found[7].marker is Marker.ELIDED_RESULT
    assert found[9] == Thinking("hmm", "sig") and found[10] == Thinking(redacted="opaque")
    assert isinstance(found[11], OtherBlock) and found[11].kind == "document"


def test_the_kind_of_injected_text_is_data_not_its_opening_words():
    typed = text_block(reminder("the user typed this"))  # opens like a reminder, but the user wrote it
    made = injected(Marker.REMINDER, reminder("update your todos"))
    assert item(typed) == Text(reminder("the user typed this")) and kind_of(typed) is None
    assert item(made) == Injected(Marker.REMINDER, reminder("update your todos")) and kind_of(made) is Marker.REMINDER
    assert own_texts({"content": [typed, made]}) == [reminder("the user typed this")]


def test_a_plain_text_can_be_injected_of_any_kind():
    """The kind does not depend on the text: a hook's context need not open with its marker."""
    made = injected(Marker.HOOK_CONTEXT, "the branch is main")
    assert kind_of(made) is Marker.HOOK_CONTEXT and own_texts({"content": [made]}) == []


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "tool_use", "name": "no id"},
        {"type": "text", "text": None},
        {"type": "tool_result"},
        {"type": "text", "text": "x", INJECTED_FIELD: "no-such-marker"},
    ],
)
def test_malformed_blocks_never_raise(bad):
    value = item(bad)
    if bad.get(INJECTED_FIELD):  # an unknown kind is not trusted as injected: it is plain text
        assert value == Text("x")
    else:
        assert isinstance(value, OtherBlock) and block(value) == bad


def test_the_wire_gets_the_api_fields_only_and_unchanged_blocks_are_shared():
    made = injected(Marker.MEMORIES, "Relevant long-term memories:\n[Memory#m1] tabs")
    assert wire_block(made) == {"type": "text", "text": "Relevant long-term memories:\n[Memory#m1] tabs"}
    plain = text_block("hi")
    assert wire_block(plain) is plain
    nested = {"type": "tool_result", "tool_use_id": "t", "content": [made, plain]}
    assert wire_block(nested)["content"] == [wire_block(made), plain]
    message = {"role": "user", "content": [plain]}
    assert wire_message(message) is message


def test_the_adapter_sends_injected_text_exactly_as_before():
    messages = [
        {"role": "user", "content": [text_block("go"), injected(Marker.MEMORIES, "Relevant long-term memories:\nx")]}
    ]
    before = copy.deepcopy(messages)
    params = build_params(ModelRequest(system=[], messages=messages), "m")
    sent = params["messages"][0]["content"]
    assert all(INJECTED_FIELD not in b for b in sent)
    assert sent[1]["text"] == "Relevant long-term memories:\nx"
    assert messages == before  # the conversation keeps the kind


def test_legacy_blocks_get_their_kind_from_the_words_earlier_versions_used():
    old = [
        text_block("Relevant long-term memories:\n[Memory#m1] x"),
        text_block("What you know about this user (older spelling)"),
        text_block("do it"),
        tool_result_block("t1", "[Previous: used bash — full output: f#t1; recall it with the recall tool]"),
        tool_result_block("t2", "<context>a file that starts like a marker</context>"),
    ]
    upgraded = upgrade_legacy(old)
    assert [kind_of(b) for b in upgraded] == [Marker.MEMORIES, Marker.PROFILE, None, Marker.ELIDED_RESULT, None]
    assert upgrade_legacy(upgraded) == upgraded  # idempotent


def test_blocks_the_api_would_refuse_are_named():
    kept, refused = accepted_blocks([text_block("a"), {"type": "future_block"}, "junk", {"no": "type"}])
    assert kept == [text_block("a")] and refused == ["future_block"]
