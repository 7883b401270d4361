"""Pure repair functions restore the API invariants from any broken history."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memagent.context.history import INTERRUPTED_TOOL, repair_history
from memagent.llm.invariants import request_problems


def user(*blocks):
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks):
    return {"role": "assistant", "content": list(blocks)}


def text(t):
    return {"type": "text", "text": t}


def use(i):
    return {"type": "tool_use", "id": i, "name": "bash", "input": {"command": "ls"}}


def result(i, content="ok"):
    return {"type": "tool_result", "tool_use_id": i, "content": content}


def test_dangling_tool_use_gets_error_result():
    fixed = repair_history([user(text("go")), assistant(text("running"), use("a"), use("b")), user(result("a"))])
    assert request_problems(fixed) == []
    results = fixed[-1]["content"]
    assert results[0] == result("a")
    assert results[1]["tool_use_id"] == "b" and results[1]["is_error"] and results[1]["content"] == INTERRUPTED_TOOL


def test_history_ending_in_tool_use_is_closed():
    fixed = repair_history([user(text("go")), assistant(use("a"))])
    assert fixed[-1]["role"] == "user" and fixed[-1]["content"][0]["tool_use_id"] == "a"
    assert request_problems(fixed) == []


def test_orphan_results_dropped_and_text_moves_after_results():
    fixed = repair_history([user(text("go")), assistant(use("a")), user(text("note"), result("a"), result("zzz"))])
    assert [b.get("tool_use_id") for b in fixed[-1]["content"]] == ["a", None]
    assert request_problems(fixed) == []


def test_consecutive_users_merge_and_empty_text_dropped():
    fixed = repair_history([user(text("one")), user(text("  ")), user(text("two")), assistant(text(""))])
    assert fixed == [user(text("one"), text("two"))]


def test_leading_assistant_gets_a_user_opener():
    fixed = repair_history([assistant(text("hello")), user(text("hi"))])
    assert fixed[0]["role"] == "user" and request_problems(fixed) == []


def test_input_is_not_mutated():
    original = [user(text("go")), assistant(use("a"))]
    snapshot = repr(original)
    repair_history(original)
    assert repr(original) == snapshot


ids = st.sampled_from(["a", "b", "c", "d"])
blocks = st.one_of(
    st.builds(text, st.sampled_from(["x", "", " ", "hello"])),
    st.builds(use, ids),
    st.builds(result, ids),
)
messages = st.lists(
    st.builds(
        lambda role, bs: {"role": role, "content": bs},
        st.sampled_from(["user", "assistant"]),
        st.lists(blocks, max_size=4),
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(messages)
def test_any_history_repairs_to_a_valid_request(history):
    # tool_use ids must be unique in a real history; make them so
    seen: dict[str, int] = {}
    for message in history:
        for block in message["content"]:
            if block["type"] == "tool_use":
                seen[block["id"]] = seen.get(block["id"], 0) + 1
                block["id"] = f"{block['id']}{seen[block['id']]}"
    fixed = repair_history(history)
    if fixed:
        assert request_problems(fixed) == []


def test_ids_stay_with_their_messages_when_a_repair_removes_one():
    from memagent.context.history import repair_history_with_ids

    messages = [
        user(text("go")),
        assistant(text("ok")),
        user(result("orphan")),  # only an orphan result: the message disappears
        assistant(text("later")),
        user(text("next")),
    ]
    fixed, ids = repair_history_with_ids(messages, ["1", "2", "3", "4", "5"])
    assert request_problems(fixed) == []
    by_id = dict(zip(ids, fixed))
    assert len(ids) == len(fixed)
    assert by_id["1"]["content"] == [text("go")]
    assert by_id["2"]["content"] == [text("ok"), text("later")]  # merged; the first id stays
    assert by_id["5"]["content"] == [text("next")]
    assert "3" not in ids and "4" not in ids


def test_ids_for_added_repairs_are_marked():
    from memagent.context.history import repair_history_with_ids

    fixed, ids = repair_history_with_ids([assistant(text("hi")), user(text("q")), assistant(use("a"))], ["1", "2", "3"])
    assert ids == ["resume", "1", "2", "3", "repair"]
    assert fixed[-1]["content"][0]["tool_use_id"] == "a" and request_problems(fixed) == []


@settings(max_examples=200, deadline=None)
@given(messages)
def test_repair_with_ids_matches_repair_and_keeps_alignment(history):
    from memagent.context.history import repair_history_with_ids

    seen: dict[str, int] = {}
    for message in history:
        for block in message["content"]:
            if block["type"] == "tool_use":
                seen[block["id"]] = seen.get(block["id"], 0) + 1
                block["id"] = f"{block['id']}{seen[block['id']]}"
    ids = [str(i) for i in range(len(history))]
    fixed, fixed_ids = repair_history_with_ids(history, ids)
    assert fixed == repair_history(history)
    assert len(fixed_ids) == len(fixed)
    kept = [i for i in fixed_ids if i.isdigit()]
    assert kept == sorted(kept, key=int)  # original ids keep their order
