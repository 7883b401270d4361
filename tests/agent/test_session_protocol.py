"""The session protocol: a front end sends typed operations and reads typed events, approval
questions included, without reaching inside the session. Driven by tests/session_driver.py over a
scripted model and real tools in a temporary project."""

from __future__ import annotations

import threading

from memagent.events import AssistantText, ToolCallFinished, TurnEnded, TurnStarted
from memagent.llm.scripted import ScriptedModel, reply, tool_call
from memagent.protocol import (
    AnswerApproval,
    ApprovalRequested,
    Cancel,
    Compact,
    OpCompleted,
    OpRejected,
    Rewind,
    SetModel,
    SetPermissionMode,
    Submit,
)
from memagent.runtime import SessionOptions, open_session
from session_driver import TIMEOUT, drive, of, turn


def _session(tmp_path, script, **options):
    model = ScriptedModel(script)
    return open_session(SessionOptions(root=tmp_path, memory=False, **options), model=model), model


def _write(path="notes.md", content="hi\n"):
    return reply(tool_call("write_file", {"path": path, "content": content}))


def test_a_submitted_turn_streams_its_events_and_ends(tmp_path):
    session, _ = _session(tmp_path, [reply("hello there")])
    try:
        events = turn(session, "hi")
        assert isinstance(events[0], TurnStarted) and isinstance(events[-1], TurnEnded)
        assert "".join(e.text for e in of(AssistantText, events)) == "hello there"
        assert events[-1].final_text == "hello there"
        assert session.status().turns == 1 and not session.status().busy
        assert list(session.events()) == []  # nothing left once idle
    finally:
        session.close()


def test_an_approval_is_an_event_answered_through_the_same_session(tmp_path):
    session, model = _session(tmp_path, [_write(), reply("done")])
    try:
        asked = []
        events = turn(session, "write notes", answer=lambda request: asked.append(request) or "allow")
        assert len(asked) == 1
        request = asked[0]
        assert (request.tool, request.input["path"], request.asker) == ("write_file", "notes.md", "")
        assert request.summary and request.reason
        assert (tmp_path / "notes.md").read_text() == "hi\n"
        assert of(TurnEnded, events)[-1].final_text == "done"
    finally:
        session.close()


def test_a_denied_approval_runs_nothing_and_tells_the_model(tmp_path):
    session, model = _session(tmp_path, [_write(), reply("ok")])
    try:
        events = turn(session, "write notes", answer=lambda request: "deny")
        assert of(ApprovalRequested, events) and not (tmp_path / "notes.md").exists()
        finished = of(ToolCallFinished, events)[0]
        assert finished.is_error and "did not approve" in finished.content
    finally:
        session.close()


def test_always_is_remembered_for_the_same_call(tmp_path):
    session, _ = _session(tmp_path, [_write(), _write(), reply("twice")])
    try:
        events = turn(session, "write twice", answer=lambda request: "always")
        assert len(of(ApprovalRequested, events)) == 1  # the second identical call was not asked
        assert [e.is_error for e in of(ToolCallFinished, events)] == [False, False]
    finally:
        session.close()


def test_cancel_while_a_question_is_open_ends_the_turn_cancelled(tmp_path):
    session, _ = _session(tmp_path, [_write(), reply("never")])
    try:
        session.submit(Submit("write notes"))
        seen = []
        for event in session.events(TIMEOUT):
            seen.append(event)
            if isinstance(event, ApprovalRequested):
                session.submit(Cancel())
        assert of(TurnEnded, seen)[-1].stop_reason == "cancelled"
        assert not (tmp_path / "notes.md").exists()
        assert not session.status().busy
    finally:
        session.close()


def test_without_a_front_end_a_question_is_refused_not_left_waiting(tmp_path):
    session, _ = _session(tmp_path, [_write(), reply("ok")])
    try:
        done = []
        worker = threading.Thread(target=lambda: done.append(list(session.agent.run_turn("write notes"))))
        worker.start()
        worker.join(TIMEOUT)
        assert done, "a turn driven outside the protocol hung on its approval question"
        assert of(ToolCallFinished, done[0])[0].is_error and not (tmp_path / "notes.md").exists()
    finally:
        session.close()


def test_bad_answers_and_busy_operations_are_rejected_in_one_line(tmp_path):
    session, _ = _session(tmp_path, [_write(), reply("ok")])
    try:
        rejected = of(OpRejected, drive(session, AnswerApproval("approval-99", "allow")))
        assert len(rejected) == 1 and "approval-99" in rejected[0].error and "\n" not in rejected[0].error
        assert of(OpRejected, drive(session, Cancel()))[0].error == "no turn is running"
        session.submit(Submit("write notes"))
        seen = []
        for event in session.events(TIMEOUT):
            seen.append(event)
            if isinstance(event, ApprovalRequested):
                session.submit(Submit("another"))  # one turn at a time
                session.submit(SetModel("claude-opus-4-1"))  # nothing changes under a running turn
                session.submit(AnswerApproval(event.id, "maybe"))  # not a decision: still open
                session.submit(AnswerApproval(event.id, "deny"))
        errors = [e.error for e in of(OpRejected, seen)]
        assert len(errors) == 3 and "already running" in errors[0] and "turn is running" in errors[1]
        assert "unknown decision" in errors[2]
        assert of(TurnEnded, seen)[-1].stop_reason == "end_turn"
        assert session.status().model != "claude-opus-4-1"
    finally:
        session.close()


def test_set_model_takes_effect_from_the_next_request(tmp_path):
    session, model = _session(tmp_path, [reply("a"), reply("b")])
    try:
        turn(session, "one")
        done = of(OpCompleted, drive(session, SetModel("claude-haiku-4-5")))
        assert done and done[0].text.endswith("→ claude-haiku-4-5")
        turn(session, "two")
        assert model.requests[-1].model == "claude-haiku-4-5"
        assert session.status().model == "claude-haiku-4-5"
        assert of(OpRejected, drive(session, SetModel("two words")))
    finally:
        session.close()


def test_permission_mode_switches_and_an_unknown_mode_changes_nothing(tmp_path):
    session, _ = _session(tmp_path, [_write(), reply("refused")])
    try:
        assert session.status().permission_mode == "default"
        assert of(OpRejected, drive(session, SetPermissionMode("yolo")))
        assert session.status().permission_mode == "default"
        assert of(OpCompleted, drive(session, SetPermissionMode("plan")))
        events = turn(session, "write notes", answer=lambda request: "allow")
        assert not of(ApprovalRequested, events)  # plan mode refuses a write without asking
        assert not (tmp_path / "notes.md").exists()
        assert session.status().permission_mode == "plan"
    finally:
        session.close()


def test_compact_and_rewind_between_turns(tmp_path):
    session, _ = _session(tmp_path, [reply("a"), reply("b")])
    try:
        assert of(OpCompleted, drive(session, Compact()))[0].text == "Nothing to compact yet."
        turn(session, "one")
        turn(session, "two")
        assert of(OpRejected, drive(session, Rewind(9)))
        done = of(OpCompleted, drive(session, Rewind(2, code=False)))
        assert done and session.status().turns == 1
    finally:
        session.close()


def test_a_subagents_question_comes_through_the_channel_naming_it(tmp_path):
    from memagent.llm.scripted import FunctionModel

    def answer(request):
        system = "\n".join(block.get("text", "") for block in request.system)
        last = request.messages[-1]
        answered = last["role"] == "user" and any(b.get("type") == "tool_result" for b in last["content"])
        if "a subagent of memagent" in system:
            return reply("child done") if answered else reply(tool_call("bash", {"command": "echo hi > out.txt"}))
        if answered:
            return reply("parent done")
        return reply(
            tool_call("task", {"description": "run", "prompt": "Run echo.", "subagent_type": "general-purpose"})
        )

    session = open_session(SessionOptions(root=tmp_path, memory=False), model=FunctionModel(answer))
    try:
        events = turn(session, "go", answer=lambda request: "allow")
        [request] = of(ApprovalRequested, events)
        assert (request.asker, request.tool) == ("general-purpose", "bash")
        assert (tmp_path / "out.txt").read_text() == "hi\n"  # the child ran once the user allowed it
        assert of(TurnEnded, events)[-1].final_text == "parent done"
    finally:
        session.close()


def test_status_permissions_and_context_are_typed_views(tmp_path):
    from memagent.llm.types import Usage

    session, _ = _session(tmp_path, [reply("hi", usage=Usage(1200, 30))])
    try:
        before = session.status()
        assert (before.turns, before.context_tokens, before.busy, before.can_compact) == (0, 0, False, True)
        turn(session, "hello")
        after = session.status()
        assert after.turns == 1 and after.context_tokens > 0 and after.compaction_threshold > 0
        view = session.permissions()
        assert view.mode == "default" and view.rules and view.asks_for
        report = session.context_report()
        assert report is not None and report["threshold"] == after.compaction_threshold
        assert [m["role"] for m in session.history()] == ["user", "assistant"]
    finally:
        session.close()


def test_a_turn_that_crashes_ends_as_an_error_and_the_session_takes_the_next(tmp_path):
    session, _ = _session(tmp_path, [RuntimeError("adapter bug"), reply("fine again")])
    try:
        ended = of(TurnEnded, turn(session, "one"))
        assert ended[-1].stop_reason == "error" and "adapter bug" in ended[-1].error
        assert not session.status().busy
        assert of(TurnEnded, turn(session, "two"))[-1].final_text == "fine again"
    finally:
        session.close()


def test_the_protocol_over_the_real_sdk_and_the_fake_api(tmp_path):
    """A session opened as the CLI opens it (real anthropic SDK, metered, loopback fake API):
    approval by event, a model switch, the cost in the status."""
    from fakeapi import FakeAnthropic, text, tool

    with FakeAnthropic(
        [tool("write_file", {"path": "a.txt", "content": "one\n"}), text("wrote it"), text("second answer")]
    ) as fake:
        env = {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake.url}
        session = open_session(SessionOptions(root=tmp_path, memory=False), env=env)
        try:
            events = turn(session, "write a.txt", answer=lambda request: "allow")
            assert [e.tool for e in of(ApprovalRequested, events)] == ["write_file"]
            assert (tmp_path / "a.txt").read_text() == "one\n"
            assert of(TurnEnded, events)[-1].final_text == "wrote it"
            drive(session, SetModel("claude-haiku-4-5"))
            assert of(TurnEnded, turn(session, "again"))[-1].final_text == "second answer"
            assert fake.requests[-1]["model"] == "claude-haiku-4-5" and fake.errors == []
            status = session.status()
            assert status.cost is not None and status.cost > 0 and status.context_tokens > 0
        finally:
            session.close()
