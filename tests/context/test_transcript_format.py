"""The transcript format (docs/transcript.md): a transcript written by an earlier version (format
1, injected text known only by its opening words) resumes to the very request that version sent,
with every injected text typed; a new transcript says its format and stores the kinds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from memagent.context.resume import load_session
from memagent.context.transcript import FORMAT, TranscriptWriter, read_records
from memagent.llm.anthropic import build_params
from memagent.llm.items import INJECTED_FIELD, Injected, Text, ToolResult, ToolUse, injected, message_items
from memagent.llm.types import ModelRequest, text_block
from memagent.markers import Marker, reminder

DATA = Path(__file__).parent / "data"
OLD_SESSION = "20261125-162725-7e38"  # written by memagent before the format field existed


def old_transcripts(tmp_path: Path) -> Path:
    directory = tmp_path / ".transcripts"
    directory.mkdir()
    shutil.copy(DATA / "main_v1_transcript.jsonl", directory / f"{OLD_SESSION}.jsonl")
    return directory


def without_cache_control(messages: list[dict]) -> list[dict]:
    return [
        {**m, "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]]} for m in messages
    ]


def test_a_transcript_of_the_earlier_format_resumes_to_the_request_it_sent(tmp_path):
    resumed = load_session(old_transcripts(tmp_path), OLD_SESSION)
    assert resumed.warnings == []
    expected = json.loads((DATA / "main_v1_resumed_request.json").read_text())["messages"]
    params = build_params(ModelRequest(system=[], messages=resumed.messages), "m")
    # the earlier version's own next request began with exactly these messages (its newest one
    # carried a cache breakpoint, which the adapter puts wherever the newest message is)
    assert without_cache_control(params["messages"]) == without_cache_control(expected)


def test_the_earlier_formats_injected_texts_are_typed_on_reading(tmp_path):
    resumed = load_session(old_transcripts(tmp_path), OLD_SESSION)
    head = message_items(resumed.messages[0])
    assert [type(part) for part in head] == [Injected, Injected, Text, Injected]
    assert [part.kind for part in head if isinstance(part, Injected)] == [Marker.SUMMARY, Marker.STATE, Marker.MEMORIES]
    assert head[2] == Text("make a plan to read the rest")
    later = message_items(resumed.messages[4])
    assert later[0] == Text("read mod1.py, indentation again") and later[1].kind is Marker.MEMORIES
    assert isinstance(message_items(resumed.messages[1])[0], ToolUse)
    assert isinstance(message_items(resumed.messages[2])[0], ToolResult)


def test_a_new_transcript_says_its_format_and_keeps_the_kinds(tmp_path):
    writer = TranscriptWriter.open(tmp_path, "s1")
    writer.set_header({"type": "session_start", "session_id": "s1"})
    typed = text_block(reminder("typed by the user"))  # opens like a reminder: still the user's words
    made = injected(Marker.REMINDER, reminder("update your todos"))
    writer.message({"role": "user", "content": [typed, made]})
    writer.close()
    lines = [json.loads(line) for line in (tmp_path / "s1.jsonl").read_text().splitlines()]
    assert lines[0]["type"] == "session_start" and lines[0]["format"] == FORMAT
    assert lines[1]["content"][1][INJECTED_FIELD] == "reminder" and INJECTED_FIELD not in lines[1]["content"][0]
    records = read_records(tmp_path / "s1.jsonl").records
    assert message_items(records[1]) == [
        Text(reminder("typed by the user")),
        Injected(Marker.REMINDER, reminder("update your todos")),
    ]


def test_a_resumed_old_session_is_written_again_in_the_new_format(tmp_path):
    directory = old_transcripts(tmp_path)
    resumed = load_session(directory, OLD_SESSION)
    writer = TranscriptWriter.open(directory, "s2")
    writer.set_header({"type": "session_start", "session_id": "s2"})
    for message in resumed.messages:
        writer.message(message)
    writer.close()
    again = load_session(directory, "s2")
    assert again.messages == resumed.messages
    assert message_items(again.messages[0])[0].kind is Marker.SUMMARY


def test_a_damaged_header_reads_as_the_earlier_format(tmp_path):
    """No session_start (a truncated file) or a format that is not a number: the words decide, as before."""
    path = tmp_path / "s3.jsonl"
    memories = {"type": "text", "text": "Relevant long-term memories:\n[Memory#m1] x"}
    path.write_text(
        json.dumps({"type": "session_start", "session_id": "s3", "format": "two"})
        + "\n"
        + json.dumps({"type": "message", "id": "1", "role": "user", "content": [text_block("hi"), memories]})
        + "\n"
    )
    records = read_records(path).records
    assert message_items(records[1])[1].kind is Marker.MEMORIES
