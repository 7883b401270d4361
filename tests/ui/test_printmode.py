"""Print mode over a scripted model: stdout holds only the answer, exit codes, Ctrl-C repair."""

from __future__ import annotations

import io

from memagent.events import ToolCallFinished
from memagent.llm.invariants import request_problems
from memagent.llm.scripted import reply, tool_call
from memagent.llm.types import ModelError
from memagent.protocol import Submit
from memagent.ui.printmode import follow_turn, run_print


def test_answer_on_stdout_and_tool_lines_on_stderr(make_agent, session_of, tmp_path):
    agent = make_agent(
        [
            reply("I'll write it.", tool_call("write_file", {"path": "a.txt", "content": "hi\n"})),
            reply("Wrote **a.txt**."),
        ],
        auto_approve=True,
    )
    out, err = io.StringIO(), io.StringIO()
    code = run_print(session_of(agent), "write a.txt", out, err)
    assert code == 0
    assert out.getvalue() == "Wrote **a.txt**.\n"  # only the final answer, newline-terminated
    assert err.getvalue().startswith("• write_file(a.txt) → ")
    assert (tmp_path / "a.txt").read_text() == "hi\n"


def test_model_error_is_one_line_and_exit_1(make_agent, session_of):
    agent = make_agent([ModelError("the API is overloaded (529)\nafter 2 retries")])
    out, err = io.StringIO(), io.StringIO()
    assert run_print(session_of(agent), "hi", out, err) == 1
    assert out.getvalue() == ""
    assert err.getvalue() == "memagent: the API is overloaded (529) after 2 retries\n"


def test_without_approval_the_model_gets_the_refusal(make_agent, session_of, tmp_path):
    agent = make_agent(
        [reply(tool_call("write_file", {"path": "a.txt", "content": "x"})), reply("I could not write it.")],
        non_interactive=True,
    )
    out, err = io.StringIO(), io.StringIO()
    assert run_print(session_of(agent), "write", out, err) == 0
    assert not (tmp_path / "a.txt").exists()
    assert "• write_file(a.txt) ✗" in err.getvalue()
    result = agent.model.requests[1].messages[-1]["content"][0]
    assert result["is_error"] is True and "--yes" in result["content"]


def test_session_warnings_go_to_stderr(make_agent, session_of):
    agent = make_agent([reply("ok")])
    out, err = io.StringIO(), io.StringIO()
    run_print(session_of(agent, warnings=["memory is degraded"]), "hi", out, err)
    assert "memagent: warning: memory is degraded\n" in err.getvalue()
    assert out.getvalue() == "ok\n"


def test_ctrl_c_inside_a_tool_cancels_and_leaves_a_valid_history(make_agent, session_of, interrupting_tool):
    agent = make_agent([reply(tool_call("interrupt_me", {}))], extra_tools=[interrupting_tool], auto_approve=True)
    out, err = io.StringIO(), io.StringIO()
    assert run_print(session_of(agent), "go", out, err) == 130
    assert err.getvalue().endswith("memagent: interrupted\n")
    assert request_problems(agent.conversation.messages) == []


def test_ctrl_c_in_the_renderer_repairs_the_history(make_agent, session_of):
    agent = make_agent(
        # the turn runs on the session's worker, which may reach the second answer before the
        # Cancel does: a third one is there for the next turn either way
        [
            reply(tool_call("read_file", {"path": "x"}), tool_call("glob", {"pattern": "*"})),
            reply("done"),
            reply("more"),
        ],
        auto_approve=True,
    )

    def handle(event):
        if isinstance(event, ToolCallFinished):
            raise KeyboardInterrupt  # lands in our code, between two events of the generator

    session = session_of(agent)
    session.submit(Submit("go"))
    assert follow_turn(session, handle) is True  # the KeyboardInterrupt became a Cancel
    assert request_problems(agent.conversation.messages) == []
    # the next turn sends a valid request and completes
    events = list(agent.run_turn("go on"))
    assert events[-1].stop_reason == "end_turn"
    assert request_problems(agent.model.requests[-1].messages) == []
