"""Cancel through the session protocol: a streaming response is closed at once (the real anthropic
SDK over loopback to the fake Messages API), a running command is stopped, the turn ends as
``cancelled`` with what was kept recorded, and the next Submit works. Cancel while idle is an
OpRejected that changes nothing."""

from __future__ import annotations

import json
import os
import threading
import time

from fakeapi import FakeAnthropic, delay, stall, text, tool
from memagent.agent.feature import BaseFeature
from memagent.events import AssistantText, ToolCallStarted, TurnEnded
from memagent.llm.scripted import ScriptedModel, reply
from memagent.protocol import AnswerApproval, ApprovalRequested, Cancel, OpRejected, Submit
from memagent.runtime import SessionOptions, open_session
from session_driver import TIMEOUT, drive, of, turn

SILENCE = 120.0  # seconds the fake model goes quiet: a cancel must not wait for it
PROMPT = 15.0  # a cancel ends the turn well within this, even on a loaded machine
INTERRUPTED = "[interrupted by the user]"


def _open(tmp_path, fake, **options):
    env = {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake.url}
    return open_session(SessionOptions(root=tmp_path, memory=False, **options), env=env)


def _cancel_when(session, text_, when):
    """Submit ``text_``; send Cancel on the first event ``when(event)`` accepts. Returns the events
    and the seconds from the Cancel to the turn's end."""
    session.submit(Submit(text_))
    seen, sent = [], None
    for event in session.events(TIMEOUT):
        seen.append(event)
        if isinstance(event, ApprovalRequested):
            session.submit(AnswerApproval(event.id, "allow"))
        if sent is None and when(event):
            sent = time.monotonic()
            session.submit(Cancel())
        if isinstance(event, TurnEnded):
            took = time.monotonic() - sent if sent is not None else None
    assert sent is not None, "the moment to cancel never came"
    return seen, took


def test_cancel_mid_stream_closes_the_connection_and_keeps_the_partial_text(tmp_path):
    script = [stall(4, SILENCE, text("The first words, then a long silence")), text("second answer")]
    with FakeAnthropic(script) as fake:
        session = _open(tmp_path, fake)
        try:
            seen, took = _cancel_when(session, "talk", lambda e: isinstance(e, AssistantText))
            assert of(TurnEnded, seen)[-1].stop_reason == "cancelled"
            assert took < PROMPT, f"the turn ended {took:.1f} s after Cancel (the stream stalls {SILENCE} s)"
            assert fake.wait_for_hangups(1, timeout=PROMPT), "the client never closed the stalled stream"
            partial = "".join(e.text for e in of(AssistantText, seen))
            assert partial and "silence" not in partial  # only what had arrived
            kept = session.history()[-1]
            assert kept["role"] == "assistant" and kept["content"][0]["text"] == f"{partial}\n\n{INTERRUPTED}"
            assert INTERRUPTED in session.transcript.path.read_text()
            assert not session.status().busy
            assert of(TurnEnded, turn(session, "again"))[-1].final_text == "second answer"
            sent = fake.requests[-1]["messages"]
            assert [m["role"] for m in sent] == ["user", "assistant", "user"]
            assert partial in json.dumps(sent[1])
            assert fake.errors == []
        finally:
            session.close()


def test_cancel_before_the_first_byte_does_not_wait_for_the_server(tmp_path):
    """The model has not answered at all yet (the SDK still waits for the response's headers)."""
    with FakeAnthropic([delay(SILENCE, text("too late")), text("answered")]) as fake:
        session = _open(tmp_path, fake)
        try:
            session.submit(Submit("think hard"))
            assert fake.wait_for_requests(1, timeout=TIMEOUT)
            started = time.monotonic()
            session.submit(Cancel())
            ended = of(TurnEnded, list(session.events(TIMEOUT)))
            assert ended[-1].stop_reason == "cancelled" and time.monotonic() - started < PROMPT
            history = session.history()
            assert [m["role"] for m in history] == ["user"]  # nothing was said: nothing kept
            assert of(TurnEnded, turn(session, "again"))[-1].final_text == "answered"
            assert fake.requests[-1]["messages"][-1]["role"] == "user"
        finally:
            session.close()


def test_cancel_during_a_command_stops_it_and_records_the_call_as_interrupted(tmp_path):
    marker = tmp_path / "started"
    command = f"touch {marker} && sleep 97.25"
    with FakeAnthropic([tool("bash", {"command": command}), text("after the cancel")]) as fake:
        session = _open(tmp_path, fake, permission_mode="bypassPermissions")
        try:
            seen, took = _cancel_when(session, "run it", lambda e: isinstance(e, ToolCallStarted) and _appeared(marker))
            assert of(TurnEnded, seen)[-1].stop_reason == "cancelled" and took < PROMPT
            assert not _sleeping("97.25"), "the cancelled command is still running"
            result = session.history()[-1]["content"][0]
            assert result["type"] == "tool_result" and result["is_error"]
            assert of(TurnEnded, turn(session, "and now?"))[-1].final_text == "after the cancel"
            assert fake.errors == []
        finally:
            session.close()


def test_cancel_twice_and_cancel_after_the_turn_change_nothing_more(tmp_path):
    script = [stall(4, SILENCE, text("Some words, then quiet")), text("fine")]
    with FakeAnthropic(script) as fake:
        session = _open(tmp_path, fake)
        try:
            session.submit(Submit("talk"))
            seen = []
            for event in session.events(TIMEOUT):
                seen.append(event)
                if isinstance(event, AssistantText) and len(of(AssistantText, seen)) == 1:
                    session.submit(Cancel())
                    session.submit(Cancel())  # still running: accepted, no second effect
            assert [e.stop_reason for e in of(TurnEnded, seen)] == ["cancelled"]
            turns = session.status().turns
            rejected = of(OpRejected, drive(session, Cancel()))
            assert [r.error for r in rejected] == ["no turn is running"]
            assert session.status().turns == turns  # the idle Cancel changed nothing
            events = turn(session, "next")  # and it does not cancel the next turn
            assert of(TurnEnded, events)[-1].final_text == "fine"
        finally:
            session.close()


def _appeared(path, wait=PROMPT):
    deadline = time.monotonic() + wait
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return path.exists()


def _sleeping(argument, wait=PROMPT):
    """True while a ``sleep argument`` process is still alive after ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        alive = False
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                cmdline = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            except OSError:
                continue
            if cmdline[:2] == [b"sleep", argument.encode()]:
                alive = True
        if not alive:
            return False
        time.sleep(0.1)
    return True


class _SlowToFinish(BaseFeature):
    """Holds a turn open after its last step (as memory's after-turn work does): a Cancel sent
    then reaches a turn that has already ended."""

    name = "slow-to-finish"

    def __init__(self) -> None:
        self.finishing = threading.Event()

    def after_turn(self, conversation) -> None:
        if not self.finishing.is_set():
            self.finishing.set()
            time.sleep(0.5)


def test_a_cancel_that_comes_as_the_turn_ends_does_not_stop_the_next_one(tmp_path):
    model = ScriptedModel([reply("first"), reply("second")])
    session = open_session(SessionOptions(root=tmp_path, memory=False), model=model)
    slow = _SlowToFinish()
    session.agent.features = [*session.agent.features, slow]
    try:
        session.submit(Submit("one"))
        assert slow.finishing.wait(TIMEOUT)
        session.submit(Cancel())  # the turn still runs (its after-turn work), so this is accepted
        first = list(session.events(TIMEOUT))
        assert of(TurnEnded, first)[-1].final_text == "first" and not of(OpRejected, first)
        ended = of(TurnEnded, turn(session, "two"))
        assert [e.stop_reason for e in ended] == ["end_turn"] and ended[-1].final_text == "second"
    finally:
        session.close()
