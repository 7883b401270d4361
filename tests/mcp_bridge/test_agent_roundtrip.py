"""MCP tools through the real agent loop, the real anthropic SDK and the loopback fake API."""

from __future__ import annotations

import pytest

from fakeapi import FakeAnthropic, text, tool
from mcp_kit import START_TIMEOUT, toy_stdio
from memagent.agent.loop import Agent, Approval
from memagent.events import ToolCallFinished, TurnEnded
from memagent.features.mcp_client import McpClientFeature
from memagent.llm.anthropic import AnthropicModel
from memagent.mcp_bridge.config import McpConfig
from memagent.tools.base import ToolContext, ToolRegistry


@pytest.fixture(scope="module")
def feature(tmp_path_factory):
    config = McpConfig(servers=[toy_stdio("toy"), toy_stdio("fragile")])
    made = McpClientFeature(config, env={}, root=tmp_path_factory.mktemp("root"), startup_wait=START_TIMEOUT)
    made.tools()
    yield made
    made.close()


def make_agent(fake: FakeAnthropic, feature: McpClientFeature, tmp_path, approvals: list[str], answer=Approval.ALLOW):
    def approver(t, tool_input, summary, reason):
        approvals.append(t.name)
        return answer

    model = AnthropicModel("claude-sonnet-5-5", api_key="test-key", base_url=fake.url, max_retries=0)
    return Agent(
        model=model,
        tools=ToolRegistry.of(feature.tools()),
        tool_context=ToolContext(root=tmp_path),
        system=[{"type": "text", "text": "You are a test."}],
        approver=approver,
    )


def results_of(request):
    return [b for b in request["messages"][-1]["content"] if b.get("type") == "tool_result"]


def test_a_tool_call_round_trips_with_text_and_an_image(feature, tmp_path):
    approvals: list[str] = []
    with FakeAnthropic() as fake:
        fake.add(
            tool("mcp__toy__echo", {"text": "hello"}, id="toolu_echo"),
            tool("mcp__toy__picture", {}, id="toolu_pic"),
            text("The server echoed and drew a red dot."),
        )
        agent = make_agent(fake, feature, tmp_path, approvals)
        events = list(agent.run_turn("use the toy server"))
        assert fake.errors == []
        sent_tools = {t["name"]: t for t in fake.requests[0]["tools"]}
        assert sent_tools["mcp__toy__echo"]["input_schema"]["required"] == ["text"]
        echo = results_of(fake.requests[1])[0]
        assert echo["tool_use_id"] == "toolu_echo" and echo["content"].startswith("toy says: hello")
        picture = results_of(fake.requests[2])[0]
        assert picture["content"][0] == {"type": "text", "text": "a red dot"}
        assert picture["content"][1]["type"] == "image"
        assert picture["content"][1]["source"]["media_type"] == "image/png"
    assert approvals == ["mcp__toy__echo", "mcp__toy__picture"]  # same approval path as bash
    assert events[-1] == TurnEnded(
        "end_turn", final_text="The server echoed and drew a red dot.", usage=events[-1].usage
    )


def test_a_denied_call_never_reaches_the_server(feature, tmp_path):
    with FakeAnthropic() as fake:
        fake.add(tool("mcp__toy__crash", {}, id="toolu_c"), text("ok, not crashing"))
        agent = make_agent(fake, feature, tmp_path, [], answer=Approval.DENY)
        list(agent.run_turn("crash it"))
        denied = results_of(fake.requests[1])[0]
        assert denied["is_error"] is True and "did not approve" in denied["content"]
    assert feature.manager.status("toy").status == "ready"


def test_a_crashing_server_leaves_the_session_working_and_comes_back(feature, tmp_path):
    """The call that crashed the server fails; the server is restarted in the background (with
    back-off) and the next call to it works again, while the other server never noticed."""
    with FakeAnthropic() as fake:
        fake.add(
            tool("mcp__fragile__crash", {}, id="toolu_crash"),
            text("It crashed."),
            tool("mcp__fragile__echo", {"text": "are you there"}, id="toolu_again"),
            tool("mcp__toy__add", {"a": 20, "b": 22}, id="toolu_add"),
            text("fragile is back, toy says 42."),
        )
        agent = make_agent(fake, feature, tmp_path, [])
        first = list(agent.run_turn("crash fragile"))
        assert first[-1].stop_reason == "end_turn"
        crash = results_of(fake.requests[1])[0]
        assert crash["is_error"] is True and "stopped working" in crash["content"]
        second = list(agent.run_turn("try again, then add"))
        assert second[-1].final_text == "fragile is back, toy says 42."
        again = results_of(fake.requests[3])[0]
        assert not again.get("is_error") and again["content"].startswith("toy says: are you there")
        added = results_of(fake.requests[4])[0]
        assert added["content"] == "42" and not added.get("is_error")
        finished = [e for e in second if isinstance(e, ToolCallFinished)]
        assert [e.is_error for e in finished] == [False, False]
        assert fake.errors == []
    assert feature.manager.status("fragile").reconnects == 1
