"""Wire and stored JSON read field by field: a value of the wrong type is treated as absent, never
trusted as the type it should have had and never a crash."""

from __future__ import annotations

from memagent.jsontypes import json_int, json_list, json_object, json_str
from memagent.llm.items import INJECTED_FIELD, OtherBlock, ToolUse, item, wire_message
from memagent.llm.types import Message, Usage, tool_result_text


def test_usage_from_a_damaged_record_counts_what_is_a_number():
    usage = Usage.from_dict({"input_tokens": "many", "output_tokens": 7, "cache_read_input_tokens": None})
    assert usage == Usage(input_tokens=0, output_tokens=7)


def test_usage_takes_no_boolean_or_container_for_a_count():
    usage = Usage.from_dict({"input_tokens": True, "output_tokens": [3], "cache_creation_input_tokens": "12"})
    assert usage == Usage(cache_creation_input_tokens=12)


def test_a_tool_call_whose_input_is_not_an_object_is_no_tool_call():
    assert isinstance(item({"type": "tool_use", "id": "t", "name": "n", "input": "oops"}), OtherBlock)
    assert item({"type": "tool_use", "id": "t", "name": "n", "input": None}) == ToolUse("t", "n", {})


def test_the_wire_copy_of_a_message_keeps_its_role_and_drops_memagents_fields():
    message: Message = {"role": "user", "content": [{"type": "text", "text": "note", INJECTED_FIELD: "reminder"}]}
    sent = wire_message(message)
    assert sent == {"role": "user", "content": [{"type": "text", "text": "note"}]}
    assert message["content"][0][INJECTED_FIELD] == "reminder"  # the stored one is untouched
    plain: Message = {"role": "assistant", "content": [{"type": "text", "text": "hi"}]}
    assert wire_message(plain) is plain


def test_tool_result_text_of_anything():
    assert tool_result_text("done") == "done"
    assert (
        tool_result_text([{"type": "text", "text": "a"}, "junk", {"type": "image"}, {"type": "text", "text": "b"}])
        == "a\nb"
    )
    assert tool_result_text(42) == ""


def test_the_narrowing_helpers():
    assert json_object({"a": 1}) == {"a": 1} and json_object([1]) == {} and json_object(None) == {}
    assert json_list([1, "a"]) == [1, "a"] and json_list("abc") == [] and json_list({"a": 1}) == []
    assert json_str("x") == "x" and json_str(3) == "" and json_str(None, "none") == "none"
    assert json_int(3) == 3 and json_int(True) == 0 and json_int("3", -1) == -1 and json_int(2.5) == 0
