"""The REPL is a front end of the session protocol: each message is a Submit whose events it
renders, an approval question is an ApprovalRequested it answers with AnswerApproval, Ctrl-C is a
Cancel. Scripted input lines and a scripted model; the operations are recorded at the session."""

from __future__ import annotations

import signal
import threading
import time

from memagent.agent.loop import Approval
from memagent.config import project_paths
from memagent.llm.scripted import ScriptedModel, reply, stream_response, tool_call
from memagent.llm.types import TextDelta
from memagent.protocol import AnswerApproval, Cancel, Submit
from memagent.runtime import SessionOptions, open_session
from memagent.ui.repl import Repl

INTERRUPTED = "[interrupted by the user]"


def _lines(*items):
    queue = list(items)

    def read() -> str:
        if not queue:
            raise EOFError
        return queue.pop(0)

    return read


def _repl(tmp_path, console, model, lines, answers=()):
    """A REPL whose session records every operation it is sent (``ops``)."""
    con, buffer = console
    ops, opened, said = [], [], list(answers)

    def factory(fresh: bool = False):
        session = open_session(SessionOptions(root=tmp_path, memory=False), model=model)
        carry_out = session.submit
        session.submit = lambda op: (ops.append(op), carry_out(op))[1]
        opened.append(session)
        return session

    ask = (lambda question: said.pop(0)) if answers else None
    repl = Repl(project_paths(tmp_path), "scripted", factory, console=con, read_line=_lines(*lines), ask=ask)
    return repl, buffer, ops, opened


def test_a_message_is_a_submit_and_a_question_is_answered_through_the_session(tmp_path, console):
    model = ScriptedModel(
        [reply(tool_call("write_file", {"path": "notes.md", "content": "hi\n"})), reply("written"), reply("two")]
    )
    repl, buffer, ops, opened = _repl(tmp_path, console, model, ["write it", "and again"], [Approval.ALLOW])
    assert repl.run() == 0
    assert [type(op) for op in ops] == [Submit, AnswerApproval, Submit]
    assert ops[0].text == "write it" and ops[1].decision == "allow" and ops[1].id.startswith("approval-")
    assert (tmp_path / "notes.md").read_text() == "hi\n"
    out = buffer.getvalue()
    assert "write_file wants to write notes.md" in out and "allowed once" in out and "written" in out


def test_always_shows_the_rule_the_session_reported(tmp_path, console):
    model = ScriptedModel([reply(tool_call("bash", {"command": "echo one > one.txt"})), reply("done")])
    repl, buffer, ops, _ = _repl(tmp_path, console, model, ["run it"], [Approval.ALWAYS])
    assert repl.run() == 0
    assert [op.decision for op in ops if isinstance(op, AnswerApproval)] == ["always"]
    assert "from now on Bash(echo one > one.txt) runs without asking" in buffer.getvalue()
    assert (tmp_path / "one.txt").exists()


def test_a_denied_question_runs_nothing(tmp_path, console):
    model = ScriptedModel([reply(tool_call("write_file", {"path": "a.txt", "content": "x"})), reply("ok")])
    repl, buffer, ops, _ = _repl(tmp_path, console, model, ["write"], [Approval.DENY])
    assert repl.run() == 0
    assert [op.decision for op in ops if isinstance(op, AnswerApproval)] == ["deny"]
    assert not (tmp_path / "a.txt").exists() and "denied" in buffer.getvalue()


class _InterruptedWhileStreaming:
    """Streams a few words, then Ctrl-C reaches the REPL's thread and the model waits for the
    cancel to abort its call (as a network stream would hang without it)."""

    name = "interrupted"

    def __init__(self) -> None:
        self.requests = []
        self.aborted: list[bool] = []

    def stream(self, request):
        self.requests.append(request)
        if len(self.requests) > 1:
            yield from stream_response(reply("back again"))
            return
        yield TextDelta("partial words")
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        deadline = time.monotonic() + 30
        while not request.abort.is_set and time.monotonic() < deadline:
            time.sleep(0.01)
        self.aborted.append(request.abort.is_set)


def test_ctrl_c_sends_cancel_which_aborts_the_model_call(tmp_path, console):
    model = _InterruptedWhileStreaming()
    repl, buffer, ops, opened = _repl(tmp_path, console, model, ["talk", "again"])
    assert repl.run() == 0
    assert [type(op) for op in ops] == [Submit, Cancel, Submit]
    assert model.aborted == [True]
    sent = model.requests[1].messages
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[1]["content"][0]["text"] == f"partial words\n\n{INTERRUPTED}"
    out = buffer.getvalue()
    assert out.count("cancelled") == 1 and "back again" in out
