"""json / stream-json over a scripted model: event order, result fields, metering, exit codes."""

from __future__ import annotations

import io
import json

from memagent.agent.loop import AgentConfig
from memagent.llm.metered import MeteredModel
from memagent.llm.scripted import ScriptedModel, reply, tool_call
from memagent.llm.types import ModelError, Usage
from memagent.ui.commands import run_command
from memagent.ui.printmode import run_print


def _lines(out: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_stream_json_events_in_order_with_a_tool_error(make_agent, tmp_path, session_of):
    agent = make_agent(
        [reply("Reading.", tool_call("read_file", {"path": "nope.txt"}, id="toolu_1")), reply("It is missing.")],
    )
    out, err = io.StringIO(), io.StringIO()
    assert run_print(session_of(agent), "read nope", out, err, output_format="stream-json") == 0
    events = _lines(out)
    assert [(e["type"], e.get("subtype")) for e in events] == [
        ("system", "init"),
        ("assistant", None),
        ("assistant", None),
        ("user", None),
        ("assistant", None),
        ("result", "success"),
    ]
    assert events[0]["session_id"] == "20261122-120000-abcd" and "read_file" in events[0]["tools"]
    assert events[1]["message"]["content"] == [{"type": "text", "text": "Reading."}]
    assert events[2]["message"]["content"][0]["type"] == "tool_use"
    assert events[1]["message"]["id"] == events[2]["message"]["id"]  # two blocks of one message
    [block] = events[3]["message"]["content"]
    assert block["type"] == "tool_result" and block["is_error"] is True and block["tool_use_id"] == "toolu_1"
    assert events[-1]["result"] == "It is missing." and events[-1]["num_turns"] == 2
    assert events[-1]["permission_denials"] == []  # the call ran (and failed): not a denial
    assert err.getvalue() == ""  # stdout carries everything; stderr only warnings and errors


def test_session_warnings_are_notices_in_the_stream_and_lines_on_stderr(make_agent, session_of):
    session = session_of(make_agent([reply("ok")]))
    session.warnings.append("skill skipped: x/SKILL.md: bad front matter")
    out, err = io.StringIO(), io.StringIO()
    assert run_print(session, "hi", out, err, output_format="stream-json") == 0
    events = _lines(out)
    notice = events[1]
    assert (notice["type"], notice["subtype"], notice["level"]) == ("system", "notice", "warning")
    assert notice["text"] == "skill skipped: x/SKILL.md: bad front matter"
    assert err.getvalue() == "memagent: warning: skill skipped: x/SKILL.md: bad front matter\n"


def _open(root, model):
    """A real session over ``model`` (the slash commands speak the session protocol)."""
    from memagent.runtime import SessionOptions, open_session

    return open_session(SessionOptions(root=root, memory=False), model=model)


def test_metered_model_sums_every_call_and_prices_it(make_agent, tmp_path, session_of):
    first, second = (
        reply("a", tool_call("glob", {"pattern": "*"}), usage=Usage(1000, 50, 4000, 200)),
        reply("done", usage=Usage(10, 5)),
    )
    first.model = second.model = "claude-haiku-4-5"  # the model that answered is the one priced
    agent = make_agent([first, second])
    agent.model = MeteredModel(agent.model)
    out, err = io.StringIO(), io.StringIO()
    assert run_print(session_of(agent), "go", out, err, output_format="json") == 0
    [result] = _lines(out)
    meter = agent.model.snapshot()
    assert meter.calls == 2
    assert result["usage"] == {
        "input_tokens": 1010,
        "output_tokens": 55,
        "cache_read_input_tokens": 4000,
        "cache_creation_input_tokens": 200,
    }
    expected = (1010 * 1.0 + 55 * 5.0 + 4000 * 0.1 + 200 * 1.25) / 1e6  # Haiku 4.5 list prices
    assert result["total_cost_usd"] == round(expected, 6) == round(meter.cost, 6)
    opened = _open(tmp_path, agent.model)
    cost = run_command("/cost", lambda: opened).text
    opened.close()
    assert cost.splitlines()[:2] == ["tokens: 1,010 in · 55 out (2 model calls)", "cache: 4,000 read · 200 written"]
    assert cost.splitlines()[2].startswith("estimated cost: $0.002")


def test_model_error_and_max_turns_are_errors_with_exit_1(make_agent, session_of):
    failing = make_agent([ModelError("the API is overloaded (529)")])
    out, err = io.StringIO(), io.StringIO()
    assert run_print(session_of(failing), "hi", out, err, output_format="json") == 1
    [result] = _lines(out)
    assert result["subtype"] == "error_during_execution" and result["error"] == "the API is overloaded (529)"
    assert err.getvalue() == "memagent: the API is overloaded (529)\n"

    looping = make_agent(
        [reply(tool_call("glob", {"pattern": "*"})) for _ in range(5)], config=AgentConfig(max_rounds=3)
    )
    out, err = io.StringIO(), io.StringIO()
    assert run_print(session_of(looping), "loop", out, err, output_format="json") == 1
    [result] = _lines(out)
    assert result["subtype"] == "error_max_turns" and result["num_turns"] == 3 and result["is_error"] is True
    assert len(looping.model.requests) == 3


def test_cost_and_model_commands_of_an_unmetered_model(tmp_path):
    session = _open(tmp_path, ScriptedModel([reply("x")]))
    agent = session.agent
    assert run_command("/cost", lambda: session).text.startswith("tokens: 0 in · 0 out (0 model calls)")
    agent.config.model = "claude-sonnet-5-5"
    assert "model: claude-sonnet-5-5" in run_command("/model", lambda: session).text
    assert run_command("/model two words", lambda: session).text == "usage: /model [NAME] (one model id)"
    assert run_command("/model bad!id", lambda: session).text == "not a model id: 'bad!id'"
    assert run_command("/model claude-opus-4-6", lambda: session).text == (
        "model: claude-sonnet-5-5 → claude-opus-4-6 (from the next message on)"
    )
    assert agent.config.model == "claude-opus-4-6"
    init = run_command("/init focus on the tests", lambda: session)
    assert "AGENTS.md" in init.send and "write_file" in init.send and init.text
    assert init.send.endswith("Also: focus on the tests")
    assert run_command("/clear", lambda: session).action == "clear"
    session.close()


def test_the_session_exposes_the_metered_usage_and_summaries_do_not_move_the_context(tmp_path):
    from memagent.llm.scripted import ScriptedModel
    from memagent.llm.types import ModelRequest
    from memagent.runtime import SessionOptions, open_session
    from memagent.ui.status import session_meter

    answer = reply("hi", usage=Usage(100, 10, 900, 0))
    summary = reply("summary", usage=Usage(5000, 300))
    metered = MeteredModel(ScriptedModel([answer, summary]))
    session = open_session(SessionOptions(root=tmp_path, memory=False), model=metered)
    try:
        list(session.agent.run_turn("hello"))
        list(
            metered.stream(
                ModelRequest(system=[], messages=[{"role": "user", "content": [{"type": "text", "text": "x"}]}])
            )
        )
        meter = session.usage
        assert meter is metered.meter and session_meter(session) is meter  # the status line reads the same meter
        assert (meter.calls, meter.input_tokens, meter.output_tokens) == (2, 5100, 310)
        assert meter.context_tokens == 1000  # the agent's own request, not the summary's
    finally:
        session.close()
