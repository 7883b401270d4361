"""The headless run is a front end of the session protocol: it starts the turn with Submit and
builds every JSON line from the events it reads, never by plugging itself into the agent."""

from __future__ import annotations

import io
import json

from memagent.llm.scripted import reply, tool_call
from memagent.ui.headless import HeadlessRun


def test_the_run_reads_events_and_leaves_the_agents_features_alone(make_agent, session_of):
    agent = make_agent(
        [
            reply("Writing it.", tool_call("write_file", {"path": "a.txt", "content": "x"}, id="toolu_w")),
            reply("I could not write it."),
        ]
    )
    session = session_of(agent)
    features = list(agent.features)
    out = io.StringIO()
    result = HeadlessRun(session, out, io.StringIO(), streaming=True).send("write a.txt")
    assert list(agent.features) == features
    assert result["permission_denials"] == [
        {"tool_name": "write_file", "tool_use_id": "toolu_w", "tool_input": {"path": "a.txt", "content": "x"}}
    ]
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    kinds = [(line["type"], line.get("subtype")) for line in lines]
    assert kinds == [
        ("system", "init"),
        ("assistant", None),
        ("assistant", None),
        ("user", None),
        ("assistant", None),
        ("result", "success"),
    ]
    assert result["result"] == "I could not write it." and result["num_turns"] == 2


def test_a_call_that_ran_and_failed_is_no_denial(make_agent, session_of):
    agent = make_agent(
        [reply(tool_call("read_file", {"path": "missing.txt"}, id="toolu_r")), reply("not there")],
        auto_approve=True,
    )
    result = HeadlessRun(session_of(agent), io.StringIO(), io.StringIO(), streaming=False).send("read")
    assert result["permission_denials"] == [] and result["result"] == "not there"
