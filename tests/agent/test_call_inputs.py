"""A tool call's input as the model sent it is JSON of any shape: the loop reports it as an object
(what front ends and hooks read), lets validation refuse anything else, and always answers."""

from __future__ import annotations

from pathlib import Path

from memagent.agent.loop import Agent
from memagent.context.conversation import Conversation
from memagent.events import ToolCallFinished, ToolCallStarted
from memagent.llm.invariants import request_problems
from memagent.llm.scripted import ScriptedModel, reply
from memagent.llm.types import text_block
from memagent.permissions import Effect, declares
from memagent.tools.base import ToolContext, ToolInput, ToolRegistry, tool


class EchoIn(ToolInput):
    text: str


def agent_with_echo(tmp_path: Path, model: ScriptedModel, ran: list[str]) -> Agent:
    @tool("echo", EchoIn, key_argument="text", effects=declares(Effect.READ))
    def echo(inp: EchoIn, ctx: ToolContext) -> str:
        """Echo the text back."""
        ran.append(inp.text)
        return f"echo: {inp.text}"

    return Agent(
        model=model,
        tools=ToolRegistry.of([echo]),
        tool_context=ToolContext(root=tmp_path),
        system=[text_block("system")],
        conversation=Conversation(session_id="s1"),
    )


def call_with(given: object) -> dict:
    block: dict = {"type": "tool_use", "id": "t1", "name": "echo"}
    if given is not ...:
        block["input"] = given
    return block


def test_an_input_that_is_not_an_object_is_refused_and_reported_as_an_empty_object(tmp_path):
    model = ScriptedModel([reply(call_with("just text")), reply("ok")])
    ran: list[str] = []
    events = list(agent_with_echo(tmp_path, model, ran).run_turn("go"))
    started = next(e for e in events if isinstance(e, ToolCallStarted))
    finished = next(e for e in events if isinstance(e, ToolCallFinished))
    assert started.input == {} and started.summary == ""
    assert finished.is_error and finished.content.startswith("Invalid input for echo")
    assert ran == []
    assert all(request_problems(r.messages) == [] for r in model.requests)


def test_a_call_without_input_is_validated_as_an_empty_object(tmp_path):
    model = ScriptedModel([reply(call_with(...)), reply("ok")])
    ran: list[str] = []
    events = list(agent_with_echo(tmp_path, model, ran).run_turn("go"))
    finished = next(e for e in events if isinstance(e, ToolCallFinished))
    assert finished.is_error and "text" in finished.content and ran == []


def test_a_nested_object_input_reaches_the_tool_and_the_event_as_sent(tmp_path):
    model = ScriptedModel([reply(call_with({"text": "a\nb"})), reply("ok")])
    ran: list[str] = []
    events = list(agent_with_echo(tmp_path, model, ran).run_turn("go"))
    started = next(e for e in events if isinstance(e, ToolCallStarted))
    assert started.input == {"text": "a\nb"} and started.summary == "a ⏎ b"
    assert ran == ["a\nb"]
