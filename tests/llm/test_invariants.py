"""memagent.llm.invariants.request_problems, and its agreement with the fake server's own checks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fakeapi import check_request
from memagent.llm.invariants import request_problems


def user(*blocks):
    return {"role": "user", "content": [b if isinstance(b, dict) else {"type": "text", "text": b} for b in blocks]}


def assistant(*blocks):
    return {"role": "assistant", "content": [b if isinstance(b, dict) else {"type": "text", "text": b} for b in blocks]}


def call(tool_id, name="read_file"):
    return {"type": "tool_use", "id": tool_id, "name": name, "input": {"path": "a"}}


def result(tool_id, text="ok"):
    return {"type": "tool_result", "tool_use_id": tool_id, "content": text}


VALID = [
    user("hi"),
    assistant("Reading.", call("t1"), call("t2")),
    user(result("t1"), result("t2"), "Reminder: keep the todo list current."),
    assistant("Done."),
    user("thanks"),
]


def test_a_valid_conversation_has_no_problems():
    assert request_problems(VALID) == []
    assert request_problems([user("just one")]) == []
    assert request_problems([user("q"), assistant("prefilled answer")]) == []


def test_string_content_is_accepted_when_not_blank():
    assert request_problems([{"role": "user", "content": "hi"}]) == []
    assert request_problems([{"role": "user", "content": "  "}]) == ["message 0: empty content"]


def test_no_messages_is_a_problem():
    assert request_problems([]) == ["the conversation has no messages"]


def test_the_first_message_must_be_from_the_user():
    problems = request_problems([assistant("hello"), user("hi")])
    assert "message 0: role is 'assistant', expected 'user' (roles alternate from user)" in problems


def test_roles_must_alternate():
    problems = request_problems([user("a"), user("b")])
    assert problems == ["message 1: role is 'user', expected 'assistant' (roles alternate from user)"]


def test_a_tool_use_needs_its_result_in_the_next_user_message():
    problems = request_problems([user("hi"), assistant(call("t1"), call("t2")), user(result("t1"))])
    assert problems == ["message 1: tool_use t2 has no tool_result in the next user message"]


def test_a_trailing_tool_use_is_unanswered():
    problems = request_problems([user("hi"), assistant(call("t1"))])
    assert problems == ["message 1: tool_use t1 has no tool_result in the next user message"]


def test_results_in_a_later_message_do_not_count():
    messages = [user("hi"), assistant(call("t1")), user("interjection"), assistant("ok"), user(result("t1"))]
    problems = request_problems(messages)
    assert "message 1: tool_use t1 has no tool_result in the next user message" in problems
    assert "message 4 block 0: tool_result t1 has no tool_use in the previous assistant message" in problems


def test_tool_results_must_come_before_text():
    problems = request_problems([user("hi"), assistant(call("t1")), user("first!", result("t1"))])
    assert problems == ["message 2 block 1: tool_result after other content (results must come first)"]


def test_a_result_without_its_tool_use_is_a_problem():
    problems = request_problems([user(result("ghost"))])
    assert problems == ["message 0 block 0: tool_result ghost has no tool_use in the previous assistant message"]


def test_a_second_result_for_one_call_is_a_problem():
    problems = request_problems([user("hi"), assistant(call("t1")), user(result("t1"), result("t1"))])
    assert problems == ["message 2 block 1: second tool_result for t1"]


def test_duplicate_tool_use_ids_are_a_problem():
    messages = [user("hi"), assistant(call("t1")), user(result("t1")), assistant(call("t1")), user(result("t1"))]
    assert request_problems(messages) == ["message 3: duplicate tool_use id t1"]


def test_empty_content_and_blank_text_are_problems():
    assert request_problems([{"role": "user", "content": []}]) == ["message 0: empty content"]
    assert request_problems([user("hi"), assistant(""), user("x")]) == ["message 1 block 0: empty text block"]
    assert request_problems([user(" \n")]) == ["message 0 block 0: empty text block"]


def test_blocks_on_the_wrong_side_are_problems():
    assert request_problems([user(call("t1"))]) == ["message 0 block 0: tool_use block in a user message"]
    problems = request_problems([user("hi"), assistant(result("t1"))])
    assert "message 1 block 0: tool_result block in a assistant message" in problems


def test_an_empty_answer_message_still_reports_the_missing_results():
    problems = request_problems([user("hi"), assistant(call("t1")), {"role": "user", "content": []}])
    assert problems == [
        "message 2: empty content",
        "message 1: tool_use t1 has no tool_result in the next user message",
    ]


def test_the_input_is_not_modified():
    import copy

    messages = copy.deepcopy(VALID)
    request_problems(messages)
    assert messages == VALID


# --- both checkers agree on what is sendable ------------------------------------------------------


@st.composite
def conversations(draw, mutate=True):
    """A valid conversation by construction, then (when ``mutate``) zero or one random mutation."""
    messages, pending, next_id = [], [], 0
    for position in range(draw(st.integers(1, 6))):
        if position % 2 == 0:
            content = [result(tool_id) for tool_id in pending]
            if not content or draw(st.booleans()):
                content.append({"type": "text", "text": "hello"})
            messages.append({"role": "user", "content": content})
            pending = []
        else:
            content = [{"type": "text", "text": "thinking aloud"}] if draw(st.booleans()) else []
            for _ in range(draw(st.integers(0, 2))):
                next_id += 1
                content.append(call(f"t{next_id}"))
                pending.append(f"t{next_id}")
            messages.append({"role": "assistant", "content": content or [{"type": "text", "text": "ok"}]})
    if pending:
        messages.append({"role": "user", "content": [result(tool_id) for tool_id in pending]})
    if not mutate:
        return messages
    mutation = draw(
        st.sampled_from(
            [
                "none",
                "drop_message",
                "drop_block",
                "duplicate_block",
                "reverse_blocks",
                "blank_text",
                "flip_role",
                "orphan_result",
                "empty_content",
            ]
        )
    )
    target = messages[draw(st.integers(0, len(messages) - 1))]
    blocks = target["content"]
    if mutation == "drop_message" and len(messages) > 1:
        messages.remove(target)
    elif mutation == "drop_block" and len(blocks) > 1:
        blocks.pop(draw(st.integers(0, len(blocks) - 1)))
    elif mutation == "duplicate_block":
        blocks.append(dict(blocks[draw(st.integers(0, len(blocks) - 1))]))
    elif mutation == "reverse_blocks":
        blocks.reverse()
    elif mutation == "blank_text":
        blocks.append({"type": "text", "text": draw(st.sampled_from(["", " ", "\n"]))})
    elif mutation == "flip_role":
        target["role"] = "user" if target["role"] == "assistant" else "assistant"
    elif mutation == "orphan_result":
        blocks.insert(0, result("ghost"))
    elif mutation == "empty_content":
        target["content"] = []
    return messages


@settings(max_examples=400, deadline=None)
@given(conversations())
def test_memagent_and_the_fake_server_agree_on_validity(messages):
    ours = request_problems(messages)
    theirs = check_request({"model": "m", "max_tokens": 10, "messages": messages})
    assert (ours == []) == (theirs == []), (ours, theirs)


@settings(max_examples=200, deadline=None)
@given(conversations(mutate=False))
def test_well_formed_conversations_pass_both_checkers(messages):
    assert request_problems(messages) == []
    assert check_request({"model": "m", "max_tokens": 10, "messages": messages}) == []
