"""The rule that spares a trivial one-turn session (``memagent -p "hi"``) an extraction call."""

from __future__ import annotations

from memagent.memory.session_end import worth_learning_at_end


def _user(text):
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def _answer(text="ok"):
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def test_a_greeting_or_a_one_off_question_is_not_worth_a_call():
    assert not worth_learning_at_end([_user("hi"), _answer("Hello!")])
    assert not worth_learning_at_end([_user("what does git rebase do?"), _answer("It replays commits.")])
    assert not worth_learning_at_end([_user("hello")])  # no answer yet: nothing to learn from


def test_durable_cues_tool_calls_long_briefs_and_conversations_are():
    assert worth_learning_at_end([_user("Remember: we deploy with make ship"), _answer()])
    assert worth_learning_at_end([_user("I prefer tabs over spaces"), _answer()])
    assert worth_learning_at_end([_user("x " * 200), _answer()])
    assert worth_learning_at_end([_user("a"), _answer(), _user("b"), _answer()])
    tool_round = [
        _user("run the tests"),
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
        _answer("All green."),
    ]
    assert worth_learning_at_end(tool_round)


def test_only_messages_not_yet_mined_count():
    messages = [_user("Remember the staging URL"), _answer(), _user("thanks"), _answer("welcome")]
    ids = ["1", "2", "3", "4"]
    assert worth_learning_at_end(messages, ids, processed=set())
    assert not worth_learning_at_end(messages, ids, processed={"1", "2"})


def test_injected_context_blocks_are_not_what_the_user_typed():
    injected = {
        "role": "user",
        "content": [{"type": "text", "text": "hi"}, {"type": "text", "text": "<memory>always use uv</memory>"}],
    }
    assert not worth_learning_at_end([injected, _answer()])
