"""The REPL loop with scripted input lines (the pty tests in tests/cli drive the real terminal)."""

from __future__ import annotations

import threading

from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from memagent.config import project_paths
from memagent.llm.invariants import request_problems
from memagent.llm.scripted import ScriptedModel, reply, tool_call
from memagent.runtime import SessionOptions, SetupError, open_session
from memagent.ui.repl import Repl, make_prompt_session
from memagent.ui.session_loader import SessionLoader


def _lines(*items):
    """A read_line stub: strings are typed lines, exceptions are raised (Ctrl-C, Ctrl-D)."""
    queue = list(items)

    def read() -> str:
        if not queue:
            raise EOFError
        item = queue.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    return read


def _repl(tmp_path, console, script, lines, extra_tools=(), opened=None):
    con, buffer = console

    def factory(fresh: bool = False):
        session = open_session(SessionOptions(root=tmp_path, memory=False), model=ScriptedModel(script))
        for tool in extra_tools:
            session.agent.tools.add(tool)
        if opened is not None:
            opened.append(session)
        return session

    repl = Repl(
        paths=project_paths(tmp_path), model="scripted", session_factory=factory, console=con, read_line=_lines(*lines)
    )
    return repl, buffer


def test_a_chat_with_commands_then_exit(tmp_path, console, capsys):
    opened = []
    repl, buffer = _repl(
        tmp_path,
        console,
        [reply("Hello, **world**!")],
        ["hi", "", "/todos", "/nope", "/exit", "never read"],
        opened=opened,
    )
    assert repl.run() == 0
    out = buffer.getvalue()
    assert "scripted" in out and str(tmp_path) in out  # banner: model and project root
    assert "Hello, world!" in out
    assert "No todos." in out
    assert "Unknown command /nope — type /help" in out
    session = opened[0]
    assert f"session {session.session_id} · memory is off (--no-memory)" in capsys.readouterr().out
    assert session.transcript._fh is None  # closed on exit
    assert [m["role"] for m in session.agent.conversation.messages] == ["user", "assistant"]


def test_ctrl_c_at_the_prompt_clears_the_line_and_ctrl_d_quits(tmp_path, console):
    opened = []
    repl, buffer = _repl(
        tmp_path, console, [reply("still here")], [KeyboardInterrupt(), "hi", EOFError()], opened=opened
    )
    assert repl.run() == 0
    assert "still here" in buffer.getvalue()
    assert opened[0].transcript._fh is None


def test_ctrl_c_during_a_tool_cancels_the_turn_only(tmp_path, console, interrupting_tool):
    opened = []
    script = [reply("Working.", tool_call("interrupt_me", {})), reply("Fresh answer.")]
    repl, buffer = _repl(tmp_path, console, script, ["go", "try again", "/exit"], [interrupting_tool], opened)
    assert repl.run() == 0
    out = buffer.getvalue()
    assert "cancelled" in out and "Fresh answer." in out
    model = opened[0].agent.model
    assert len(model.requests) == 2
    assert request_problems(model.requests[1].messages) == []


def test_setup_failure_is_reported_with_its_exit_code(tmp_path, console, capsys):
    con, buffer = console
    release = threading.Event()
    reads = []

    def factory(fresh: bool = False):
        release.wait(10)
        raise SetupError("session 123 not found", code=2)

    def read_line():
        reads.append(1)
        release.set()  # the session fails while the user is typing
        repl._loader.wait()
        return "/help"

    repl = Repl(project_paths(tmp_path), "m", factory, console=con, read_line=read_line)
    assert repl.run() == 2
    assert reads == [1]  # the failure ends the REPL before the next prompt
    assert "Commands:" in buffer.getvalue()  # /help works without the session
    assert capsys.readouterr().err == "memagent: session 123 not found\n"


def test_session_loader_reports_errors_and_timing():
    done = []
    loader = SessionLoader(lambda: "session", on_done=done.append).start()
    assert loader.get() == "session" and loader.done and loader.seconds is not None
    assert done == [loader]
    failing = SessionLoader(lambda: (_ for _ in ()).throw(SetupError("no key"))).start()
    failing.wait()
    assert isinstance(failing.error, SetupError)


def test_prompt_session_history_and_multiline_keys(tmp_path):
    history = tmp_path / "home" / "nested" / "history"
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        prompt = make_prompt_session(history)
        pipe.send_text("first line\x1b\rsecond line\x1b\rthird\r")  # Esc-Enter twice, then Enter
        assert prompt.prompt("> ") == "first line\nsecond line\nthird"
        pipe.send_text("typed ahead\n")  # a line typed during a turn arrives with CR→LF: it submits
        assert prompt.prompt("> ") == "typed ahead"
        pipe.send_text("\x1b[200~pasted one\npasted two\x1b[201~\r")  # a bracketed paste keeps newlines
        assert prompt.prompt("> ") == "pasted one\npasted two"
    assert history.exists() and "first line" in history.read_text()
    # a new session (a later run of memagent) sees the earlier input in its history
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        again = make_prompt_session(history)
        assert "first line\nsecond line\nthird" in list(again.history.load_history_strings())
