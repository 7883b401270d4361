"""Slash commands against a real session (scripted model, memory off or faked)."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import pytest

from memagent.events import Notice
from memagent.llm.scripted import ScriptedModel, reply
from memagent.runtime import SessionOptions, open_session
from memagent.tasks import IN_PROGRESS, TaskStore
from memagent.ui.commands import COMMANDS, is_command, run_command


@pytest.fixture
def session(tmp_path):
    opened = open_session(SessionOptions(root=tmp_path, memory=False), model=ScriptedModel([reply("hello there")]))
    yield opened
    opened.close()


def _never():
    raise AssertionError("this command must not need the session")


def test_help_lists_every_command_and_the_input_keys():
    text = run_command("/help", _never).text
    for command in COMMANDS:
        assert command.usage in text
    assert "Esc then Enter" in text and "Ctrl-C" in text and "Ctrl-D" in text


@pytest.mark.parametrize("line", ["/exit", "/quit", " /EXIT "])
def test_exit_quits_without_waiting_for_the_session(line):
    assert run_command(line, _never).exit is True


def test_unknown_command_gets_a_clear_message():
    result = run_command("/foo bar", _never)
    assert result.text == "Unknown command /foo — type /help"
    assert result.style == "red" and not result.exit


def test_paths_are_messages_not_commands():
    assert is_command("/help") and is_command("/memory what did we decide")
    assert not is_command("/etc/hosts looks odd, why?")
    assert not is_command("hello /help")
    assert not is_command("/memory\n/exit")  # a multi-line paste is a message


def test_todos_renders_the_session_todo_list(session):
    assert run_command("/todos", lambda: session).text == "No todos."
    session.todo.update([{"id": "1", "text": "write tests", "status": "in_progress"}])
    assert "write tests" in run_command("/todos", lambda: session).text


def test_tasks_lists_in_progress_and_ready(session):
    assert run_command("/tasks", lambda: session).text == "No open tasks."
    store = TaskStore(session.paths.tasks)
    first = store.create("design the API")
    store.create("implement it", blocked_by=[first.id])
    store.create("write the docs")
    store.update(first.id, status=IN_PROGRESS)
    text = run_command("/tasks", lambda: session).text
    assert f"▶ #{first.id} design the API (in progress)" in text
    assert "write the docs" in text
    assert "implement it" not in text and "1 blocked" in text


def test_memory_off_says_why(session):
    assert run_command("/memory", lambda: session).text == (
        "memory is off (--no-memory)\ninstruction files: none (create AGENTS.md, or run /init to draft one)"
    )


def test_memory_search_and_stats_with_a_memory_service(session):
    card = SimpleNamespace(id="m_1", content="We use  pytest\nfor tests")
    calls = []

    class FakeMemory:
        def search(self, query):
            calls.append(query)
            return [SimpleNamespace(card=card, score=0.87)]

        def stats(self):
            return {"total": 1, "by_type": {"decision": 1}}

        def close(self):
            pass

    from memagent.config import Settings
    from memagent.features.memory import MemoryFeature

    session.features.append(
        MemoryFeature(
            FakeMemory(), None, settings=Settings(), profile=lambda: None, current_task=lambda: None, warn=print
        )
    )
    assert run_command("/memory test runner", lambda: session).text == "[m_1] (0.87) We use pytest for tests"
    assert calls == ["test runner"]
    assert run_command("/memory", lambda: session).text == (
        "total: 1\nby_type:\n  decision: 1\ninstruction files: none (create AGENTS.md, or run /init to draft one)"
    )


def test_sessions_lists_transcripts_and_marks_the_current_one(session):
    list(session.agent.run_turn("please remember the plan"))
    text = run_command("/sessions", lambda: session).text
    assert f"* {session.session_id}" in text
    assert "please remember the plan" in text


def test_context_and_compact_not_available_without_a_context_policy(session):
    from memagent.context.policy import PassThroughContext

    session.agent.context = PassThroughContext()
    assert run_command("/context", lambda: session).text == "/context: not available yet"
    assert run_command("/compact", lambda: session).text == "/compact: not available yet"


def test_context_reports_the_real_breakdown(session):
    text = run_command("/context", lambda: session).text
    assert "compaction at" in text
    for part in ("system", "tools", "messages", "tool results", "memory"):
        assert part in text
    assert f".transcripts/{session.session_id}.jsonl" in text


def test_context_and_compact_use_the_policy_when_present(session):
    seen = {}

    class Policy:
        def view(self, conversation):
            return conversation.messages

        def report(self):
            return {"tokens": 1200, "threshold": 50000}

        def force_compact(self, conversation, focus=None):
            seen["focus"] = focus
            yield Notice("Compacted 4 messages into a summary.")

    session.agent.context = Policy()
    assert run_command("/context", lambda: session).text == "tokens: 1200\nthreshold: 50000"
    assert run_command("/compact", lambda: session).text == "Nothing to compact yet."
    session.agent.conversation.append("user", [{"type": "text", "text": "hi"}])
    shown = []

    @contextlib.contextmanager
    def busy(message):
        shown.append(message)
        yield

    reply = run_command("/compact the API design", lambda: session, busy=busy)
    assert reply.text == "Compacted 4 messages into a summary."
    assert seen["focus"] == "the API design"
    assert shown == ["Compacting the conversation…"]


def test_context_report_of_a_compacting_policy_is_readable():
    from memagent.ui.commands import format_context_report

    report = {
        "system": 1500,
        "tools": 3200,
        "messages": 4000,
        "tool_results": 2500,
        "memory": 300,
        "total": 11500,
        "threshold": 50000,
        "message_count": 14,
        "elided_tool_results": 6,
        "compactions": 1,
        "transcript": ".transcripts/s1.jsonl",
    }
    assert format_context_report(report).splitlines() == [
        "context: 11,500 tokens (23% of the compaction threshold); compaction at 50,000",
        "  system 1,500 · tools 3,200 · messages 4,000 · tool results 2,500 · memory 300",
        "  14 messages, 6 old tool results elided, 1 compactions",
        "  full history: .transcripts/s1.jsonl",
    ]


def test_memory_stats_leave_out_zero_counts():
    from memagent.ui.commands import format_memory_stats

    stats = {
        "total": 5,
        "active": 4,
        "by_type": {"fact": 3, "decision": 1, "skill": 0},
        "by_scope": {"project": 4, "user": 0},
        "stores": {"project": {"location": "/p/.memory", "active": 4, "inactive": 1}},
        "embedder": {"name": "all-MiniLM-L6-v2/onnx", "dim": 384},
    }
    assert format_memory_stats(stats).splitlines() == [
        "memory: 4 active cards (5 in all)",
        "  by type: fact 3, decision 1",
        "  by scope: project 4",
        "  project store: /p/.memory (4 active)",
        "  embedder: all-MiniLM-L6-v2/onnx (dim 384)",
    ]


def test_expand_shows_a_collapsed_tool_result_in_full(tmp_path):
    from memagent.llm.scripted import tool_call

    script = [
        reply(tool_call("bash", {"command": "seq 1 30"}, id="t1")),
        reply(tool_call("read_file", {"path": "missing.txt"}, id="t2")),
        reply("done"),
    ]
    opened = open_session(SessionOptions(root=tmp_path, memory=False, auto_approve=True), model=ScriptedModel(script))
    try:
        assert run_command("/expand", lambda: opened).text == "No tool results in this session yet."
        list(opened.agent.run_turn("count then read"))
        newest = run_command("/expand", lambda: opened).text
        assert newest.startswith("── read_file(missing.txt) (error), result 2 of 2 ──\n")
        older = run_command("/expand 2", lambda: opened).text
        assert older.startswith("── bash(seq 1 30), result 1 of 2 ──\n1\n2\n")
        assert older.endswith("29\n30\n[exit code: 0]")
        too_far = run_command("/expand 3", lambda: opened)
        assert too_far.style == "red" and "has 2 tool results" in too_far.text
        assert run_command("/expand x", lambda: opened).text.startswith("usage: /expand [N]")
    finally:
        opened.close()


def test_a_context_report_with_a_damaged_count_reads_as_key_value_lines():
    from memagent.ui.commands import format_context_report

    needed = {"system": 1, "tools": 2, "messages": 3, "tool_results": 4, "memory": 5, "threshold": 100}
    text = format_context_report({**needed, "total": "lots"})
    assert "total: lots" in text.splitlines() and not text.startswith("context:")


def test_memory_stats_with_damaged_parts_leave_them_out():
    from memagent.ui.commands import format_memory_stats

    stats = {"active": 2, "total": 3, "by_type": ["fact"], "stores": {"project": "broken"}, "embedder": 7}
    assert format_memory_stats(stats).splitlines() == [
        "memory: 2 active cards (3 in all)",
        "  by type: none",
        "  by scope: none",
        "  project store: None (0 active)",
    ]


def test_exit_runs_before_the_session_is_open():
    from memagent.ui.commands import run_command

    def not_yet():
        raise AssertionError("/exit must not wait for the session")

    assert run_command("/exit", not_yet).exit and run_command("/quit", not_yet).exit
