"""Whole sessions through the real anthropic SDK and a loopback fake Messages API.

Each test opens real sessions with ``runtime.open_session`` (real tools, task store, memory
store, transcript) and checks what reached disk and what the next request carried.
"""

from __future__ import annotations

import json
import re

from fakeapi import FakeAnthropic, text, tool
from memagent.llm.anthropic import AnthropicModel
from memagent.runtime import SessionOptions, open_session


def model_for(fake: FakeAnthropic) -> AnthropicModel:
    return AnthropicModel("claude-sonnet-5-5", api_key="test-key", base_url=fake.url, max_retries=0)


def run_turn(session, prompt: str) -> list:
    return list(session.agent.run_turn(prompt))


def user_texts(request: dict) -> str:
    last = request["messages"][-1]
    return "\n".join(b.get("text", "") for b in last["content"] if b.get("type") == "text")


def test_model_builds_a_task_graph_and_completing_one_unblocks_the_next(project):
    script = [
        tool("task_create", {"subject": "Write the parser"}, id="t1"),
        tool("task_create", {"subject": "Write the evaluator", "blockedBy": [1]}, id="t2"),
        tool("task_create", {"subject": "Write the REPL", "blockedBy": [2]}, id="t3"),
        tool("task_update", {"task_id": 1, "status": "completed"}, id="t4"),
        tool("task_list", {}, id="t5"),
        text("Parser done; the evaluator is next."),
    ]
    with FakeAnthropic(script) as fake:
        session = open_session(SessionOptions(root=project, memory=False, auto_approve=True), model=model_for(fake))
        try:
            events = run_turn(session, "plan the interpreter and finish the parser")
        finally:
            session.close()
        assert fake.errors == []
    assert events[-1].final_text == "Parser done; the evaluator is next."
    tasks = {p.name: json.loads(p.read_text()) for p in (project / ".tasks").glob("task_*.json")}
    assert tasks["task_1.json"]["status"] == "completed"
    assert tasks["task_2.json"]["blockedBy"] == []  # ready on disk
    assert tasks["task_2.json"]["status"] == "pending"
    assert tasks["task_3.json"]["blockedBy"] == [2]
    assert tasks["task_2.json"]["blocks"] == [3]
    listing = fake.requests[-1]["messages"][-1]["content"][0]["content"]
    assert "Write the evaluator" in listing


def test_a_saved_memory_is_injected_into_the_next_sessions_first_request(project):
    fact = "The integration tests need Postgres 16 running on port 5433"
    first = [tool("memory_save", {"content": fact, "memory_type": "procedure", "confidence": 0.95}), text("Saved.")]
    with FakeAnthropic(first) as fake:
        session = open_session(SessionOptions(root=project, auto_approve=True), model=model_for(fake))
        try:
            run_turn(session, "remember how to run the integration tests")
        finally:
            session.close()
        saved = fake.requests[1]["messages"][-1]["content"][0]
        assert not saved.get("is_error"), saved
        assert fake.errors == []

    with FakeAnthropic([text("Start Postgres 16 on port 5433 first [Memory#x].")]) as fake:
        session = open_session(SessionOptions(root=project, auto_approve=True), model=model_for(fake))
        try:
            run_turn(session, "how do I run the integration tests against postgres?")
        finally:
            session.close()
        injected = user_texts(fake.requests[0])
        assert fake.errors == []
    block = re.search(r"\[Memory#(m_[0-9a-f]+)\][^\n]*Postgres 16", injected)
    assert block, injected
    assert "cite" in injected.lower()


def test_continue_rebuilds_the_conversation_and_restores_todos(project):
    todo = {"items": [{"id": "1", "text": "Fix the flaky test", "status": "in_progress"}]}
    with FakeAnthropic([tool("todo", todo), text("Working on the flaky test.")]) as fake:
        session = open_session(SessionOptions(root=project, memory=False), model=model_for(fake))
        first_id = session.session_id
        try:
            run_turn(session, "the test_login test is flaky, please fix it")
        finally:
            session.close()

    with FakeAnthropic([text("Continuing with test_login.")]) as fake:
        session = open_session(SessionOptions(root=project, memory=False, continue_latest=True), model=model_for(fake))
        try:
            assert session.resumed_from == first_id
            assert "Fix the flaky test" in session.todo.render()
            run_turn(session, "where were we?")
        finally:
            session.close()
        assert fake.errors == []
        sent = json.dumps(fake.requests[0]["messages"])
    assert "the test_login test is flaky" in sent
    assert "Working on the flaky test." in sent


def test_resume_after_a_kill_mid_tool_call_repairs_the_dangling_call(project):
    transcripts = project / ".transcripts"
    transcripts.mkdir()
    records = [
        {"type": "session_start", "session_id": "20261120-100000-aaaa", "model": "m", "cwd": str(project)},
        {"type": "message", "id": "1", "role": "user", "content": [{"type": "text", "text": "run the suite"}]},
        {
            "type": "message",
            "id": "2",
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "pytest"}}],
        },
    ]
    lines = "\n".join(json.dumps(r) for r in records) + '\n{"type": "message", "id": "3", "ro'
    (transcripts / "20261120-100000-aaaa.jsonl").write_text(lines)
    with FakeAnthropic([text("The previous run was interrupted; rerunning.")]) as fake:
        session = open_session(
            SessionOptions(root=project, memory=False, resume_id="20261120-100000-aaaa"), model=model_for(fake)
        )
        try:
            assert any("unreadable" in w or "skipped" in w for w in session.warnings)
            run_turn(session, "continue")
        finally:
            session.close()
        assert fake.errors == []
        messages = fake.requests[0]["messages"]
    assert messages[1]["content"][0]["type"] == "tool_use"
    assert messages[2]["content"][0]["tool_use_id"] == "toolu_1"
    assert messages[2]["content"][0]["is_error"] is True


def test_the_memory_profile_reaches_the_next_sessions_system_prompt(project):
    preference = "The user prefers type hints on every function and pytest over unittest"
    first = [
        tool("memory_save", {"content": preference, "memory_type": "preference", "confidence": 0.95}),
        text("Noted."),
    ]
    with FakeAnthropic(first) as fake:
        session = open_session(SessionOptions(root=project, auto_approve=True), model=model_for(fake))
        try:
            run_turn(session, "remember: I like type hints everywhere and pytest, not unittest")
        finally:
            session.close()
    with FakeAnthropic([text("ok")]) as fake:
        session = open_session(SessionOptions(root=project, auto_approve=True), model=model_for(fake))
        try:
            run_turn(session, "hi")
        finally:
            session.close()
        system = json.dumps(fake.requests[0]["system"])
    assert "type hints" in system
