"""Layer 1: old tool results become placeholders in batches; recall brings them back exactly."""

from __future__ import annotations

import re

from context.ctx_harness import PlannedBrain, file_text, settings_for
from memagent.context.elision import elide_old_tool_results, elision_boundary
from memagent.llm.invariants import request_problems
from memagent.llm.scripted import reply, tool_call
from memagent.llm.types import text_block, tool_result_block

WHERE = ".transcripts/s.jsonl"


def history(results: list[tuple[str, str, bool]]) -> list[dict]:
    """user, then one assistant tool call + user result per entry (name, output, is_error)."""
    messages = [{"role": "user", "content": [text_block("go")]}]
    for number, (name, output, is_error) in enumerate(results):
        tool_id = f"toolu_{number:03d}"
        messages.append({"role": "assistant", "content": [tool_call(name, {"path": f"f{number}"}, id=tool_id)]})
        messages.append({"role": "user", "content": [tool_result_block(tool_id, output, is_error)]})
    return messages


def test_boundary_moves_in_whole_batches_and_spares_the_newest():
    assert [elision_boundary(n, keep=3, batch=6) for n in (0, 3, 8, 9, 14, 15)] == [0, 0, 0, 6, 6, 12]
    assert elision_boundary(10, keep=3, batch=1) == 7


def test_old_long_results_become_placeholders_naming_tool_and_location():
    long = "x" * 500
    messages = history([("read_file", long, False)] * 5 + [("bash", "short", False)] + [("read_file", long, True)] * 4)
    view = elide_old_tool_results(messages, keep=3, batch=2, where=WHERE)
    assert request_problems(view) == []
    results = [b for m in view for b in m["content"] if b["type"] == "tool_result"]
    # 10 results, 7 eligible, boundary 6: the first five long ones elided, the short one kept
    assert [r["content"].startswith("[Previous:") for r in results] == [True] * 5 + [False] * 5
    assert results[0]["content"] == (
        "[Previous: used read_file — full output: .transcripts/s.jsonl#toolu_000; recall it with the recall tool]"
    )
    assert results[5]["content"] == "short"
    assert messages[2]["content"][0]["content"] == long  # the input is not mutated


def test_error_flag_survives_elision():
    messages = history([("read_file", "e" * 300, True)] + [("bash", "y" * 300, False)] * 4)
    view = elide_old_tool_results(messages, keep=3, batch=1, where=WHERE)
    assert view[2]["content"][0]["is_error"] is True
    assert view[2]["content"][0]["content"].startswith("[Previous: used read_file")


def test_between_batch_steps_each_request_extends_the_previous_one(make_session):
    """The cache-friendly property: the elided view only changes at batch steps."""
    brain = PlannedBrain()
    harness = make_session(brain, settings=settings_for(10**9, micro_compact_batch=6))
    for number in range(14):
        brain.add(reply(tool_call("read_file", {"path": f"src/m{number}.py"})), reply(f"read m{number}"))
        harness.turn(f"read module {number}")
    requests = harness.main_requests()
    rewrites = sum(
        1 for before, after in zip(requests, requests[1:]) if after.messages[: len(before.messages)] != before.messages
    )
    # 14 results, keep 3, batch 6: the boundary moves once (0 → 6, at the 9th result), so one rewrite
    assert rewrites == len({elision_boundary(n, 3, 6) for n in range(15)}) - 1 == 1
    harness.assert_requests_valid()


def test_recall_returns_the_exact_original_output(make_session):
    brain = PlannedBrain()
    harness = make_session(brain, settings=settings_for(10**9, micro_compact_batch=6), sizes={"big.py": 5_000})
    brain.add(reply(tool_call("read_file", {"path": "big.py"})), reply("read it"))
    harness.turn("read big.py")
    for number in range(9):
        brain.add(
            reply(tool_call("bash", {"command": f"echo {number} && cat big.py | wc -c && echo padding-{'p' * 120}"})),
            reply("ok"),
        )
        harness.turn(f"step {number}")
    placeholder = next(
        b["content"] for b in harness.policy.view(harness.conversation)[2]["content"] if b["type"] == "tool_result"
    )
    tool_id = re.search(r"#(toolu_\w+);", placeholder).group(1)
    brain.add(reply(tool_call("recall", {"tool_use_id": tool_id})), reply("recalled"))
    harness.turn("recall it")
    recalled = [e for e in harness.events if type(e).__name__ == "ToolCallFinished" and e.name == "recall"]
    assert recalled[-1].content == file_text("big.py", 5_000)
    assert not recalled[-1].is_error
    harness.assert_requests_valid()


def test_recall_by_query_and_unknown_id(make_session):
    brain = PlannedBrain()
    harness = make_session(brain, threshold=10**9)
    brain.add(reply(tool_call("read_file", {"path": "missing_config.toml"})), reply("the config is missing"))
    harness.turn("open the config")
    brain.add(
        reply(
            tool_call("recall", {"query": "MISSING_CONFIG"}),
            tool_call("recall", {"tool_use_id": "toolu_nope"}),
            tool_call("recall", {}),
        ),
        reply("done"),
    )
    harness.turn("what failed?")
    finished = {e.id: e for e in harness.events if type(e).__name__ == "ToolCallFinished" and e.name == "recall"}
    by_query, unknown, neither = list(finished.values())
    assert "missing_config.toml does not exist" in by_query.content  # the error output, found case-insensitively
    assert "(read_file output)" in by_query.content and "20261121-100000-aaaa" in by_query.content
    assert unknown.is_error and "toolu_nope" in unknown.content
    assert neither.is_error and "exactly one" in neither.content


def test_view_is_computed_once_per_conversation_state(make_session):
    brain = PlannedBrain()
    harness = make_session(brain, settings=settings_for(10**9, micro_compact_batch=6))
    brain.add(reply(tool_call("read_file", {"path": "src/m0.py"})), reply("read m0"))
    harness.turn("read module 0")
    first = harness.policy.view(harness.conversation)
    assert harness.policy.view(harness.conversation) is first  # same state: no second pass
    harness.conversation.append("user", [text_block("one more")])
    second = harness.policy.view(harness.conversation)
    assert second is not first and second[-1]["content"][0]["text"] == "one more"
    harness.conversation.replace(list(harness.conversation.messages), list(harness.conversation.ids))
    assert harness.policy.view(harness.conversation) is not second  # a replaced list is a new state


def test_a_placeholder_is_marked_and_a_tool_output_that_looks_like_one_is_not_counted():
    """An elided result carries its kind; a file whose text opens like a placeholder is the
    tool's output and is neither counted as elided nor taken for memagent's own text."""
    from memagent.context.elision import count_elided
    from memagent.llm.items import item, wire_block
    from memagent.markers import Marker

    lookalike = "[Previous: used read_file — full output: elsewhere#x; recall it with the recall tool]\n" + "z" * 10
    messages = history([("read_file", "x" * 500, False)] * 2 + [("read_file", lookalike, False)] * 3)
    assert count_elided(messages) == 0
    view = elide_old_tool_results(messages, keep=3, batch=1, where=WHERE)
    assert count_elided(view) == 2
    placeholder = view[2]["content"][0]
    assert item(placeholder).marker is Marker.ELIDED_RESULT
    assert "injected" not in wire_block(placeholder)  # the model reads the text only
