"""Conversation: the one writer of transcript records and the one counter of user turns."""

from __future__ import annotations

import pytest

from context.ctx_harness import PlannedBrain, new_harness
from memagent.context.conversation import Conversation
from memagent.context.resume import load_session, seed_conversation
from memagent.context.sessions import list_sessions
from memagent.context.transcript import TranscriptWriter, read_records
from memagent.llm.scripted import reply, tool_call
from memagent.llm.types import text_block, tool_result_block
from memagent.markers import INTERRUPTED_TOOL, Marker, block, reminder


def test_only_the_users_own_words_open_a_turn(tmp_path):
    conversation = Conversation(recorder=TranscriptWriter.open(tmp_path, "s1"), session_id="s1")
    conversation.append("user", [text_block("[WIP] fix the bug"), text_block(block(Marker.MEMORIES, "[Memory#m1] x"))])
    conversation.append("assistant", [tool_call("bash", {"command": "pytest"}, id="toolu_1")])
    conversation.append(
        "user", [tool_result_block("toolu_1", INTERRUPTED_TOOL, is_error=True), text_block(reminder("todo"))]
    )
    assert conversation.user_turns == 1
    # a request after a cancelled tool round is merged in memory, and is a turn of its own
    conversation.append("user", [text_block(Marker.INTERRUPTED_REQUEST.value), text_block("go on")])
    assert conversation.user_turns == 2 and len(conversation.messages) == 3
    conversation.append("assistant", [text_block("done")])
    conversation.replace(conversation.messages[-1:], conversation.ids[-1:])  # a compaction drops turns, not the count
    assert conversation.user_turns == 2
    conversation.recorder.close()
    [info] = list_sessions(tmp_path)
    assert (info.turns, info.first_user_line) == (2, "[WIP] fix the bug")


def test_the_live_count_matches_the_sessions_listing_across_a_compaction_and_a_resume(tmp_path):
    brain = PlannedBrain()
    harness = new_harness(tmp_path, brain, threshold=3_000)
    for number in range(5):
        brain.add(reply(tool_call("read_file", {"path": f"src/m{number}.py"})), reply(f"m{number} ok"))
        harness.turn(f"check m{number}")
    harness.writer.close()
    assert any(r["type"] == "compaction" for r in harness.records())
    assert harness.conversation.user_turns == 5 == list_sessions(harness.transcripts)[0].turns

    resumed = load_session(harness.transcripts, harness.session_id)
    second = new_harness(tmp_path, brain, session_id="20261121-110000-bbbb", threshold=3_000)
    seed_conversation(second.conversation, resumed)
    assert second.conversation.user_turns == 0  # the seeded history belongs to the first session
    brain.add(reply("continuing"))
    second.turn("continue")
    second.writer.close()
    listed = {info.id: info.turns for info in list_sessions(harness.transcripts)}
    assert second.conversation.user_turns == 1 == listed["20261121-110000-bbbb"]
    kinds = [r["type"] for r in read_records(second.writer.path).records]
    assert kinds[:2] == ["session_start", "resume"] and "resume_end" in kinds


def test_records_go_through_conversation_and_unknown_types_are_refused(tmp_path):
    conversation = Conversation(recorder=TranscriptWriter.open(tmp_path, "s1"), session_id="s1")
    conversation.start(model="m", cwd="/p")
    with pytest.raises(ValueError):  # a feature's kind, until a feature of the agent declares it
        conversation.record({"type": "todo", "items": []})
    conversation.accept_records(["todo", "message"])  # a feature cannot claim the core's message kinds
    conversation.record({"type": "todo", "items": []})
    for bad in ({"type": "message", "role": "user", "content": []}, {"type": "todos"}, {}):
        with pytest.raises(ValueError):
            conversation.record(bad)
    conversation.recorder.close()
    records = read_records(tmp_path / "s1.jsonl").records
    assert [(r["type"], r.get("session_id"), r.get("model")) for r in records] == [
        ("session_start", "s1", "m"),
        ("todo", None, None),
    ]
