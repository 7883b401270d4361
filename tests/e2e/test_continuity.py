"""A new session starts where the last one stopped: tasks, the last session's summary, the
todo list on resume — through the real SDK and the loopback fake Messages API."""

from __future__ import annotations

import json
from pathlib import Path

from fakeapi import FakeAnthropic, text, tool
from memagent.llm.anthropic import AnthropicModel
from memagent.markers import Marker, kind_of
from memagent.runtime import SessionOptions, open_session


def model_for(fake: FakeAnthropic) -> AnthropicModel:
    return AnthropicModel("claude-sonnet-5-5", api_key="test-key", base_url=fake.url, max_retries=0)


def continuity_blocks(request: dict) -> list[str]:
    last = request["messages"][-1]
    # the wire has no kinds: the model reads the text, which opens with the marker's words
    return [b["text"] for b in last["content"] if b.get("type") == "text" and kind_of(b["text"]) is Marker.CONTINUITY]


def run_session(project: Path, script: list, prompts: list[str], **options) -> FakeAnthropic:
    with FakeAnthropic(script) as fake:
        session = open_session(
            SessionOptions(root=project, memory=False, auto_approve=True, **options), model=model_for(fake)
        )
        try:
            for prompt in prompts:
                list(session.agent.run_turn(prompt))
        finally:
            session.close()
        assert fake.errors == []
    return fake


def test_the_next_session_opens_with_the_ready_tasks_and_where_the_last_one_stopped(project):
    run_session(
        project,
        [
            tool("task_create", {"subject": "Write the parser"}, id="t1"),
            tool("task_create", {"subject": "Write the evaluator", "blockedBy": [1]}, id="t2"),
            tool("task_update", {"task_id": 1, "status": "completed"}, id="t3"),
            tool("read_file", {"path": "grammar.txt"}, id="t4"),
            text("The parser is done; next is the evaluator in eval.py."),
        ],
        ["plan the interpreter and finish the parser"],
    )
    fake = run_session(project, [text("We finished the parser.")], ["what did we do last time?"])
    first = fake.requests[0]
    notes = continuity_blocks(first)
    assert len(notes) == 1, first["messages"][-1]
    note = notes[0]
    assert "#2 Write the evaluator" in note and "Ready" in note
    assert "plan the interpreter and finish the parser" in note  # the last session's request
    assert "next is the evaluator in eval.py" in note  # where it stopped
    assert all("continuity" not in json.dumps(b).lower() for b in first["system"])  # not in the cached prefix
    assert len(note) <= 4_100


def test_the_note_is_given_once_and_not_on_later_turns(project):
    run_session(project, [text("Hello.")], ["hi there, set things up"])
    fake = run_session(project, [text("One."), text("Two.")], ["first question", "second question"])
    assert continuity_blocks(fake.requests[0])
    assert not continuity_blocks(fake.requests[1])


def test_a_fresh_project_gets_no_note(project):
    fake = run_session(project, [text("Hello.")], ["hi"])
    assert continuity_blocks(fake.requests[0]) == []


def test_resume_restores_the_todo_list_and_tasks_but_not_its_own_summary(project):
    run_session(
        project,
        [
            tool("todo", {"items": [{"id": 1, "text": "fix the flaky test", "status": "in_progress"}]}, id="a"),
            tool("task_create", {"subject": "Ship 1.0"}, id="b"),
            text("Working on it."),
        ],
        ["start the release work"],
    )
    fake = run_session(project, [text("Continuing.")], ["go on"], continue_latest=True)
    note = continuity_blocks(fake.requests[0])[0]
    assert "fix the flaky test" in note and "#1 Ship 1.0" in note
    assert "previous session" not in note  # its messages are already in the context


def test_a_killed_session_is_still_summarised_from_its_messages(project):
    transcripts = project / ".transcripts"
    transcripts.mkdir()
    lines = [
        {"type": "session_start", "session_id": "20260101-000000-abcd", "time": "2026-01-01T00:00:00Z"},
        {
            "type": "message",
            "id": "1",
            "role": "user",
            "content": [{"type": "text", "text": "migrate the db to postgres"}],
        },
        {
            "type": "message",
            "id": "2",
            "role": "assistant",
            "content": [{"type": "text", "text": "Half done: schema copied."}],
        },
    ]
    (transcripts / "20260101-000000-abcd.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    fake = run_session(project, [text("ok")], ["continue"])
    note = continuity_blocks(fake.requests[0])[0]
    assert "migrate the db to postgres" in note and "Half done: schema copied." in note


def test_resumes_stay_one_logical_session(project):
    """Session-scope memories are keyed by the logical session: the first one of a resume chain."""
    run_session(project, [text("One.")], ["first"])
    run_session(project, [text("Two.")], ["second"], continue_latest=True)
    run_session(project, [text("Three.")], ["third"], continue_latest=True)
    headers = [json.loads(p.read_text().splitlines()[0]) for p in (project / ".transcripts").glob("*.jsonl")]
    assert len(headers) == 3
    (first,) = [h for h in headers if "resumed_from" not in h]  # ids of one second may sort either way
    assert [h["logical_session"] for h in headers] == [first["session_id"]] * 3
