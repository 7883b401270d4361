"""The approval prompt: what it shows, the keys it accepts, and how the agent obeys it."""

from __future__ import annotations

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from memagent.agent.loop import Approval
from memagent.llm.scripted import reply, tool_call
from memagent.ui.approval import TerminalApprover, ask_key, describe_call


def test_bash_shows_the_full_command_and_timeout():
    lines = describe_call("bash", {"command": "pytest -q tests/very/long/path", "timeout": 30}, "pytest -q…")
    assert lines == ["bash wants to run: pytest -q tests/very/long/path", "  (timeout 30 s)"]


def test_write_file_shows_path_and_a_short_preview():
    content = "\n".join(f"line {i}" for i in range(12))
    lines = describe_call("write_file", {"path": "src/app.py", "content": content}, "src/app.py")
    assert lines[0] == "write_file wants to write src/app.py (12 lines):"
    assert lines[1] == "  │ line 0"
    assert lines[-1] == "  │ … 4 more lines"
    assert len(lines) == 1 + 8 + 1


def test_edit_file_shows_old_and_new_text():
    lines = describe_call("edit_file", {"path": "a.py", "old_text": "x = 1", "new_text": "x = 2\ny = 3"}, "a.py")
    assert lines == ["edit_file wants to edit a.py:", "  - x = 1", "  + x = 2", "  + y = 3"]


def test_other_tools_show_their_summary_or_input():
    assert describe_call("custom", {"a": 1}, "key arg") == ["custom wants to run: key arg"]
    assert describe_call("custom", {"a": 1}, "") == ['custom wants to run: {"a": 1}']


def _press(keys: str):
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        pipe.send_text(keys)
        return ask_key("Allow?")


@pytest.mark.parametrize(
    "keys, decision",
    [
        ("y", Approval.ALLOW),
        ("a", Approval.ALWAYS),
        ("n", Approval.DENY),
        ("A", Approval.ALWAYS),
        ("xq y", Approval.ALLOW),
    ],  # keys that mean nothing are ignored
)
def test_ask_key_reads_one_decision(keys, decision):
    assert _press(keys) is decision


def test_ask_key_ctrl_c_interrupts():
    with pytest.raises(KeyboardInterrupt):
        _press("\x03")


def test_approver_always_approves_exactly_that_call_and_shows_why_and_the_rule(make_agent, console, tmp_path):
    con, buffer = console
    asked, events = [], []
    approver = TerminalApprover(
        con,
        before_prompt=lambda: events.append("pause"),
        after_prompt=lambda: events.append("resume"),
        ask=lambda question: asked.append(question) or Approval.ALWAYS,
    )
    agent = make_agent(
        [
            reply(tool_call("bash", {"command": "echo one > one.txt"})),
            reply(tool_call("bash", {"command": "echo one > one.txt"})),
            reply(tool_call("bash", {"command": "echo two > two.txt"})),
            reply("done"),
        ],
        approver=approver,
    )
    list(agent.run_turn("go"))
    assert (tmp_path / "one.txt").exists() and (tmp_path / "two.txt").exists()
    assert len(asked) == 2 and "always (exactly this call)" in asked[0]  # not asked again for the same call
    assert events == ["pause", "resume", "pause", "resume"]
    out = buffer.getvalue()
    assert "bash wants to run: echo one > one.txt" in out
    assert "why it asks: bash runs code: the command has a redirection to a file" in out
    assert "from now on Bash(echo one > one.txt) runs without asking" in out


def test_denied_call_is_not_run_and_the_model_is_told(make_agent, console, tmp_path):
    con, buffer = console
    approver = TerminalApprover(con, ask=lambda question: Approval.DENY)
    agent = make_agent(
        [reply(tool_call("write_file", {"path": "a.txt", "content": "x"})), reply("ok, I won't")],
        approver=approver,
    )
    list(agent.run_turn("write"))
    assert not (tmp_path / "a.txt").exists()
    result = agent.model.requests[1].messages[-1]["content"][0]
    assert result["is_error"] is True and "did not approve" in result["content"]
    assert "denied" in buffer.getvalue()
