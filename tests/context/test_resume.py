"""Resume: from the last compaction marker, repaired, todo restored, robust to damaged files."""

from __future__ import annotations

import json
import os
import random

import pytest

from context.ctx_harness import PlannedBrain, new_harness
from memagent.context.conversation import Conversation
from memagent.context.history import INTERRUPTED_TOOL
from memagent.context.resume import ResumeError, latest_session_id, load_session, seed_conversation
from memagent.context.sessions import list_sessions
from memagent.context.transcript import TranscriptWriter
from memagent.features.todos import TodoFeature
from memagent.llm.invariants import request_problems
from memagent.llm.scripted import reply, tool_call
from memagent.llm.types import text_block, tool_result_block
from memagent.markers import Marker
from memagent.todo import TodoManager

SUMMARY_OPEN = Marker.SUMMARY.value


def write_transcript(directory, session_id, records) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / f"{session_id}.jsonl", "w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record) + "\n")


def _restored_todo(resumed) -> list:
    """The todo list the todo feature restores from a resumed session's records."""
    feature = TodoFeature(TodoManager(), lambda record: None)
    feature.restore(resumed.records)
    return feature.manager.items


def msg(message_id, role, *blocks):
    return {"type": "message", "id": str(message_id), "role": role, "content": list(blocks)}


def use(tool_id, name="read_file"):
    return {"type": "tool_use", "id": tool_id, "name": name, "input": {"path": "a.py"}}


def test_resume_starts_at_the_last_compaction_and_restores_the_todo(tmp_path):
    brain = PlannedBrain()
    harness = new_harness(tmp_path, brain, threshold=3_000)
    harness.conversation.accept_records(TodoFeature.record_kinds)
    for number in range(6):
        brain.add(reply(tool_call("read_file", {"path": f"src/m{number}.py"})), reply(f"m{number} ok"))
        harness.turn(f"check m{number}")
        harness.conversation.record(
            {"type": "todo", "items": [{"id": "1", "text": f"check m{number}", "status": "in_progress"}]}
        )
    harness.writer.close()
    resumed = load_session(harness.transcripts, harness.session_id)
    assert resumed.compactions >= 1 and resumed.warnings == []
    assert resumed.messages == harness.conversation.messages  # exactly the live context
    assert resumed.ids[1:] == harness.conversation.ids[1:]
    assert resumed.messages[0]["content"][0]["text"].startswith(SUMMARY_OPEN)
    assert resumed.summary == "## Goal\nthe summary of the dropped part"
    assert _restored_todo(resumed) == [{"id": "1", "text": "check m5", "status": "in_progress"}]
    assert resumed.model == "main-model"


def test_a_dangling_tool_call_from_a_kill_is_answered_with_an_error(tmp_path):
    directory = tmp_path / ".transcripts"
    write_transcript(
        directory,
        "s1",
        [
            {"type": "session_start", "session_id": "s1"},
            msg(1, "user", text_block("read a.py and b.py")),
            msg(2, "assistant", text_block("Reading."), use("t1"), use("t2")),
            msg(3, "user", tool_result_block("t1", "contents of a")),
        ],
    )
    resumed = load_session(directory, "s1")
    assert request_problems(resumed.messages) == []
    results = resumed.messages[-1]["content"]
    assert results[0] == tool_result_block("t1", "contents of a")
    assert results[1] == tool_result_block("t2", INTERRUPTED_TOOL, is_error=True)
    assert resumed.ids == ["1", "2", "3"]


def test_orphan_results_and_empty_messages_are_repaired(tmp_path):
    directory = tmp_path / ".transcripts"
    write_transcript(
        directory,
        "s2",
        [
            msg(1, "user", tool_result_block("ghost", "orphan")),
            msg(2, "user", text_block("hello")),
            msg(3, "assistant", text_block("  ")),
            msg(4, "assistant", text_block("hi")),
            msg(5, "user", text_block("again")),
            msg(6, "user", text_block("and again")),
        ],
    )
    resumed = load_session(directory, "s2")
    assert request_problems(resumed.messages) == []
    assert [m["role"] for m in resumed.messages] == ["user", "assistant", "user"]
    assert resumed.ids == ["1", "4", "5"]  # merged messages keep the first id, as live


def test_truncated_and_garbage_lines_are_skipped_with_warnings(tmp_path):
    directory = tmp_path / ".transcripts"
    write_transcript(directory, "s3", [msg(1, "user", text_block("first")), msg(2, "assistant", text_block("answer"))])
    with open(directory / "s3.jsonl", "ab") as fh:
        fh.write(b"\x00\xffnot json at all\n")
        fh.write(json.dumps(msg(3, "user", text_block("second"))).encode() + b"\n")
        fh.write(b'{"type": "message", "id": "4", "role": "assistant", "content": [{"type": "te')
    resumed = load_session(directory, "s3")
    assert [m["content"][0]["text"] for m in resumed.messages] == ["first", "answer", "second"]
    assert len(resumed.warnings) == 2 and all("s3.jsonl" in w for w in resumed.warnings)


def test_missing_and_unreadable_transcripts_name_the_file(tmp_path):
    directory = tmp_path / ".transcripts"
    with pytest.raises(ResumeError, match=r"no session 'nope'.*nope\.jsonl"):
        load_session(directory, "nope")
    (directory / "bad.jsonl").mkdir(parents=True)  # a directory where the file should be
    with pytest.raises(ResumeError, match=r"bad\.jsonl"):
        load_session(directory, "bad")
    with pytest.raises(ResumeError, match="invalid session id"):
        load_session(directory, "../etc/passwd")


def test_latest_session_skips_empty_transcripts_and_prefixes_resolve(tmp_path):
    directory = tmp_path / ".transcripts"
    assert latest_session_id(directory) is None
    write_transcript(directory, "20261121-090000-aaaa", [msg(1, "user", text_block("old"))])
    write_transcript(directory, "20261121-100000-bbbb", [msg(1, "user", text_block("new"))])
    write_transcript(directory, "20261121-110000-cccc", [{"type": "session_start", "session_id": "x"}])
    assert latest_session_id(directory) == "20261121-100000-bbbb"
    assert load_session(directory, "20261121-09").messages[0]["content"][0]["text"] == "old"
    with pytest.raises(ResumeError, match="ambiguous"):
        load_session(directory, "20261121")


def test_seeding_a_new_session_makes_its_transcript_self_contained(tmp_path):
    brain = PlannedBrain()
    harness = new_harness(tmp_path, brain, threshold=3_000)
    harness.conversation.accept_records(TodoFeature.record_kinds)
    for number in range(5):
        brain.add(reply(tool_call("read_file", {"path": f"m{number}.py"})), reply("ok"))
        harness.turn(f"check m{number}")
    harness.conversation.record({"type": "todo", "items": [{"id": "1", "text": "x", "status": "pending"}]})
    harness.writer.close()
    first = load_session(harness.transcripts, harness.session_id)
    writer = TranscriptWriter.open(harness.transcripts, "20261121-120000-dddd")
    conversation = Conversation(recorder=writer, session_id="20261121-120000-dddd")
    seed_conversation(conversation, first)
    conversation.accept_records(TodoFeature.record_kinds)
    TodoFeature(TodoManager(), conversation.record).restore(first.records)  # as the session opens
    conversation.append("user", [text_block("continue please")])
    writer.close()
    second = load_session(harness.transcripts, "20261121-120000-dddd")
    assert second.messages[:-1] == first.messages
    assert second.messages[-1]["content"][-1]["text"] == "continue please"
    assert _restored_todo(second) == _restored_todo(first) == [{"id": "1", "text": "x", "status": "pending"}]
    assert latest_session_id(harness.transcripts) == "20261121-120000-dddd"
    listed = {info.id: info for info in list_sessions(harness.transcripts)}["20261121-120000-dddd"]
    assert listed.resumed_from == harness.session_id
    assert (listed.turns, listed.first_user_line) == (1, "continue please")  # seeded history is not counted


def test_a_kill_at_any_byte_loses_no_completed_message(tmp_path):
    brain = PlannedBrain()
    harness = new_harness(tmp_path, brain, threshold=2_500)
    for number in range(6):
        brain.add(
            reply("Reading.", tool_call("read_file", {"path": f"m{number}.py"}), tool_call("bash", {"command": "ls"})),
            reply(f"m{number} done"),
        )
        harness.turn(f"check m{number}")
    harness.writer.close()
    raw = harness.writer.path.read_bytes()
    assert b'"type":"compaction"' in raw  # cuts land before, inside and after compaction markers
    line_ends = [i + 1 for i, byte in enumerate(raw) if byte == ord("\n")]
    rng = random.Random(7)
    cuts = sorted(rng.sample(range(1, len(raw)), 25)) + [len(raw) - 1]
    for cut in cuts:
        directory = tmp_path / f"cut{cut}"
        directory.mkdir()
        (directory / "s.jsonl").write_bytes(raw[:cut])
        resumed = load_session(directory, "s")
        assert request_problems(resumed.messages) == [] if resumed.messages else True
        complete = [json.loads(line) for line in raw[: max([e for e in line_ends if e <= cut], default=0)].splitlines()]
        kept = [r for r in complete if r["type"] == "message"]
        compactions = [i for i, r in enumerate(complete) if r["type"] == "compaction"]
        if compactions:
            kept_from = complete[compactions[-1]]["kept_from"]
            kept = kept[[r["id"] for r in kept].index(kept_from) :]
        # every completed message after the last marker is in the resumed context, in order
        resumed_blocks = [b for m in resumed.messages for b in m["content"]]
        for record in kept:
            for block in record["content"]:
                assert block in resumed_blocks, f"cut at {cut}: lost {block}"
        os.remove(directory / "s.jsonl")


def _compaction(**fields):
    return {"type": "compaction", "summary": "the work so far", "kept_from": "2", **fields}


def test_a_compaction_record_with_fields_of_the_wrong_type_resumes_as_if_they_were_absent(tmp_path):
    # a hand-edited or damaged marker: a string where a list of reinjected texts belongs, a number
    # for the current request and the transcript's name; none of it may reach the model as text
    records = [
        {"type": "session_start", "session_id": "s1", "format": 2, "model": 7},
        msg(1, "user", text_block("first")),
        msg(2, "user", text_block("second")),
        _compaction(reinjected="abc", current_request=42, transcript_name=["x"]),
    ]
    write_transcript(tmp_path, "s1", records)
    resumed = load_session(tmp_path, "s1")
    head = json.dumps(resumed.messages[0]["content"])
    assert resumed.summary == "the work so far" and resumed.model is None
    assert "42" not in head and "abc" not in head and "s1.jsonl" in head
    assert resumed.messages[-1]["content"][-1]["text"] == "second"


def test_set_aside_records_with_a_malformed_limit_or_ids_are_ignored(tmp_path):
    from memagent.context.resume import _set_aside

    records = [
        {"type": "set_aside", "ids": "12", "limit": 100},  # ids a string, not a list
        {"type": "set_aside", "ids": ["3"], "limit": "100"},  # limit a string
        {"type": "set_aside", "ids": ["4"], "limit": 50},
        {"type": "set_aside", "ids": ["4"], "limit": 80},
    ]
    assert _set_aside(records) == {"4": 50}


def test_sessions_list_reads_a_start_record_of_the_wrong_types_as_absent(tmp_path):
    transcripts = tmp_path / ".transcripts"
    records = [
        {"type": "session_start", "session_id": "s2", "format": 2, "model": {"id": "x"}, "time": 5},
        msg(1, "user", text_block("hello")),
        {"type": "resume", "resumed_from": ["s0"]},
    ]
    write_transcript(transcripts, "s2", records)
    [info] = list_sessions(transcripts)
    assert info.model is None and info.resumed_from is None
    assert isinstance(info.started, str) and info.first_user_line == "hello"


def test_a_logical_session_id_that_is_not_a_text_reads_as_absent(tmp_path):
    from memagent.context.resume import newest_of_logical_session

    records = [
        {"type": "session_start", "session_id": "s3", "format": 2, "logical_session": {"id": "s0"}},
        msg(1, "user", text_block("hello")),
    ]
    write_transcript(tmp_path, "s3", records)
    assert load_session(tmp_path, "s3").logical_session == "s3"
    assert newest_of_logical_session(tmp_path, "s3") == "s3"
    assert newest_of_logical_session(tmp_path, "{'id': 's0'}") is None
