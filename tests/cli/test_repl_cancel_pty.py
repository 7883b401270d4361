"""The REPL drives its turns through the session protocol: in a real pseudo-terminal against the
fake API, Ctrl-C or Esc while an answer streams sends Cancel, the stream's connection is closed
at once (the fake sees the client hang up), what had arrived is kept for the model, and the next
message works; Ctrl-C at an approval question cancels the turn and runs nothing."""

from __future__ import annotations

import time

import pexpect

from fakeapi import stall, text, tool
from repl_kit import PROMPT, expect_text

SILENCE = 120.0  # the fake model's pause mid-answer: a cancel must not wait for it
PROMPTLY = 15.0
ANSWER = "Alpha beta gamma delta epsilon zeta eta theta iota kappa"  # streamed in three pieces
FIRST_PIECE = "Alpha beta gamma"


def _submit(child: pexpect.spawn, line: str) -> None:
    child.send(line)
    child.expect_exact(line)
    child.send("\r")


def _cancel_mid_stream(child: pexpect.spawn, fake, key: str) -> None:
    _submit(child, "tell me everything")
    expect_text(child, FIRST_PIECE)
    started = time.monotonic()
    child.send(key)
    child.expect("cancelled")
    assert time.monotonic() - started < PROMPTLY
    assert fake.wait_for_hangups(1, timeout=PROMPTLY), "the client never closed the stalled stream"
    child.expect(PROMPT)


def _kept_partial(request: dict) -> str:
    assistant = request["messages"][1]
    assert assistant["role"] == "assistant"
    return assistant["content"][0]["text"]


def test_ctrl_c_while_an_answer_streams_closes_it_and_keeps_what_came(spawn, fake):
    fake.add(stall(4, SILENCE, text(ANSWER)), text("A fresh answer."))
    child = spawn()
    child.expect(PROMPT)
    _cancel_mid_stream(child, fake, "\x03")
    assert len(fake.hangups) == 1
    _submit(child, "again please")
    expect_text(child, "A fresh answer.")
    child.expect(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and fake.errors == []
    kept = _kept_partial(fake.requests[1])
    assert kept.startswith(FIRST_PIECE) and kept.endswith("[interrupted by the user]") and "kappa" not in kept


def test_esc_while_an_answer_streams_cancels_it_the_same_way(spawn, fake):
    fake.add(stall(4, SILENCE, text(ANSWER)), text("Still here."))
    child = spawn()
    child.expect(PROMPT)
    _cancel_mid_stream(child, fake, "\x1b")
    _submit(child, "hello?")
    expect_text(child, "Still here.")
    child.expect(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and fake.errors == []
    assert _kept_partial(fake.requests[1]).startswith(FIRST_PIECE)


def test_ctrl_c_at_an_approval_question_cancels_the_turn_and_writes_nothing(spawn, fake, project):
    fake.add(tool("write_file", {"path": "notes.md", "content": "never\n"}), text("After the cancel."))
    child = spawn()
    child.expect(PROMPT)
    _submit(child, "write the notes")
    child.expect("write_file wants to write notes.md")
    child.expect("Allow\\?")
    child.sendintr()
    child.expect("cancelled")
    child.expect(PROMPT)
    _submit(child, "what happened?")
    expect_text(child, "After the cancel.")
    child.expect(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and fake.errors == []
    assert not (project / "notes.md").exists()
    result = fake.requests[1]["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and result["is_error"] is True
