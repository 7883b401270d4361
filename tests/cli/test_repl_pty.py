"""The interactive REPL in a real pseudo-terminal (pexpect), against the fake API server."""

from __future__ import annotations

import time

import pexpect

from fakeapi import delay, text, tool
from repl_kit import PROMPT, expect_text

PTY_DIMENSIONS = (40, 120)


def _submit(child: pexpect.spawn, line: str) -> None:
    """Type a line and Enter, and wait for the terminal to echo it (so later matches start after it)."""
    child.send(line)
    child.expect_exact(line)
    child.send("\r")


def test_prompt_streamed_answer_commands_and_exit(spawn, fake, isolated_env):
    fake.add(delay(1.0, text("# Plan\n\nFirst **read** the code, then `run` the tests.")))
    child = spawn()
    child.expect(PROMPT)
    child.expect(r"session \d{8}-\d{6}-[0-9a-f]{4} · memory is off")
    _submit(child, "what is the plan?")
    child.expect("Thinking")  # the spinner before the first token
    child.send("/help\r")  # typed ahead while the turn runs: runs once the prompt is back
    expect_text(child, "First read the code, then run the tests.")  # rendered Markdown: no ** or `
    child.expect("/compact \\[focus\\]")
    child.expect("Esc then Enter")
    child.expect(PROMPT)
    child.send("half a line")
    child.sendintr()  # Ctrl-C at the prompt clears the line, the program goes on
    child.expect(PROMPT)
    _submit(child, "/frobnicate")
    child.expect("Unknown command /frobnicate — type /help")
    child.expect(PROMPT)
    _submit(child, "/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert fake.errors == [] and len(fake.requests) == 1
    history = (isolated_env / "history").read_text()
    assert "what is the plan?" in history and "/frobnicate" in history


def test_ctrl_c_cancels_a_long_tool_call_and_the_next_turn_works(spawn, fake):
    fake.add(
        tool("bash", {"command": "sleep 30"}, id="toolu_sleep"),
        text("Back after the cancel."),
        delay(30, text("This answer comes too late.")),
        text("Answer after the second cancel."),
    )
    child = spawn()
    child.expect(PROMPT)
    _submit(child, "sleep for a while")
    child.expect("bash wants to run: sleep 30")
    child.expect("Allow\\?")
    child.send("a")
    child.expect("runs without asking")
    time.sleep(0.5)  # let the command start
    started = time.monotonic()
    child.sendintr()
    child.expect("cancelled")
    assert time.monotonic() - started < 10
    child.expect(PROMPT)
    _submit(child, "are you there?")
    expect_text(child, "Back after the cancel.")
    child.expect(PROMPT)
    # Ctrl-C while waiting for the model (the spinner is up, no token yet)
    _submit(child, "think slowly")
    child.expect("Thinking")
    child.sendintr()
    child.expect("cancelled")
    child.expect(PROMPT)
    _submit(child, "and now?")
    expect_text(child, "Answer after the second cancel.")
    child.expect(PROMPT)
    child.sendeof()  # Ctrl-D quits cleanly
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert fake.errors == []  # every request after each cancel was valid
    assert len(fake.requests) == 4
    second = fake.requests[1]["messages"]
    result = next(b for m in second for b in m["content"] if b.get("type") == "tool_result")
    assert result["tool_use_id"] == "toolu_sleep" and result["is_error"] is True
    last = fake.requests[3]["messages"][-1]
    assert last["role"] == "user"
    assert any("and now?" in b.get("text", "") for b in last["content"])
