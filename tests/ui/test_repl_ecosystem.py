"""/init and /clear in the REPL loop with scripted input lines and a scripted model."""

from __future__ import annotations

from memagent.config import project_paths
from memagent.llm.scripted import ScriptedModel, reply, tool_call
from memagent.runtime import SessionOptions, open_session
from memagent.ui.commands import INIT_PROMPT
from memagent.ui.repl import Repl


def _lines(*items):
    queue = list(items)

    def read() -> str:
        if not queue:
            raise EOFError
        return queue.pop(0)

    return read


def test_init_drafts_agents_md_and_clear_starts_a_new_session(tmp_path, console):
    con, buffer = console
    (tmp_path / "README.md").write_text("# Demo\n")
    script = [
        reply(tool_call("write_file", {"path": "AGENTS.md", "content": "# Demo\nRun `make test`.\n"})),
        reply("Wrote AGENTS.md."),
        reply("Fresh."),
    ]
    model = ScriptedModel(script)
    opened = []

    def factory(fresh: bool = False):
        options = SessionOptions(root=tmp_path, memory=False, auto_approve=True)
        session = open_session(options, model=model)
        opened.append((session, fresh))
        return session

    lines = _lines("/init keep it short", "/clear", "hello again", "/exit")
    repl = Repl(paths=project_paths(tmp_path), model="scripted", session_factory=factory, console=con, read_line=lines)
    assert repl.run() == 0
    assert (tmp_path / "AGENTS.md").read_text() == "# Demo\nRun `make test`.\n"
    (first, first_fresh), (second, second_fresh) = opened
    assert (first_fresh, second_fresh) == (False, True)
    sent = model.requests[0].messages[0]["content"][0]["text"]
    assert sent == INIT_PROMPT + "\n\nAlso: keep it short"
    assert "Wrote AGENTS.md." in buffer.getvalue() and "Fresh." in buffer.getvalue()
    assert first.transcript._fh is None  # closed by /clear
    assert second.session_id != first.session_id
    assert [m["role"] for m in second.agent.conversation.messages] == ["user", "assistant"]
    # the new session reads the AGENTS.md the first one wrote; the first one's prompt had none
    assert any("Run `make test`." in b["text"] for b in second.agent.system)
    assert not any("Run `make test`." in b["text"] for b in first.agent.system)


def test_model_switch_shows_in_the_status_line_with_the_metered_cost(tmp_path, console):
    from memagent.llm.metered import MeteredModel
    from memagent.llm.types import Usage

    con, _ = console
    first = reply("one", usage=Usage(1000, 200))
    first.model = "claude-sonnet-5-5"
    model = MeteredModel(ScriptedModel([first]))

    def factory(fresh: bool = False):
        return open_session(SessionOptions(root=tmp_path, memory=False), model=model)

    repl = Repl(
        paths=project_paths(tmp_path),
        model="claude-sonnet-5-5",
        session_factory=factory,
        console=con,
        read_line=_lines("hi", "/model claude-haiku-4-5", "/exit"),
    )
    assert repl.run() == 0
    status = repl._status.text()
    assert status.startswith("claude-haiku-4-5 · ")
    assert status.endswith("· $0.006")  # 1,000 in + 200 out at Sonnet prices: the same meter as /cost
