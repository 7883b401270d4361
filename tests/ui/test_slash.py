"""Running a prompt command through the real loop with a scripted model: snippets go through the
approval path like bash calls, the command's allowed tools and model hold for its turn only (also
when the turn is cancelled), and the REPL's approver is asked for a snippet nothing allows."""

from __future__ import annotations

from pathlib import Path

from memagent.agent.loop import Agent, Approval
from memagent.commands_md import Invocation
from memagent.context.conversation import Conversation
from memagent.events import ToolCallFinished, TurnEnded
from memagent.llm.scripted import ScriptedModel, reply, tool_call
from memagent.llm.types import text_block
from memagent.permissions import Effect, Gate, Policy, declares
from memagent.tools.base import ToolContext, ToolRegistry
from memagent.tools.builtin import builtin_tools
from memagent.ui.slash import invocation_events


def make_agent(root: Path, script, approver=None, **kwargs) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(script)
    policy = Policy.from_settings("default", root=root)
    agent = Agent(
        model=model,
        tools=ToolRegistry.of(builtin_tools()),
        tool_context=ToolContext(root=root),
        system=[text_block("system")],
        conversation=Conversation(),
        permissions=Gate(policy),
        approver=approver or (lambda *a: Approval.DENY),
        **kwargs,
    )
    agent.config.model = "main-model"
    return agent, model


def test_a_snippet_asks_the_approver_and_its_output_replaces_it(tmp_path):
    asked = []

    def approver(tool, raw, summary, *why):
        asked.append(raw["command"])
        return Approval.ALLOW

    agent, model = make_agent(tmp_path, [reply("ok")], approver)
    events = list(invocation_events(agent, Invocation("/x", "Files: !`echo one two`.", run_shell=True)))
    assert asked == ["echo one two"]
    assert model.requests[0].messages[-1]["content"][0]["text"] == "Files: one two."
    assert isinstance(events[-1], TurnEnded) and events[-1].final_text == "ok"
    assert [e.name for e in events if isinstance(e, ToolCallFinished)] == ["bash"]


def test_a_denied_snippet_sends_nothing(tmp_path):
    agent, model = make_agent(tmp_path, [reply("never")])
    events = list(invocation_events(agent, Invocation("/x", "Go !`touch f`", run_shell=True)))
    assert model.requests == [] and not (tmp_path / "f").exists()
    assert (
        events[-1].stop_reason == "error" and "/x: !`touch f` was not run: The user did not approve" in events[-1].error
    )
    assert agent.conversation.messages == []


def test_allowed_tools_and_model_hold_for_the_command_turn_only_even_when_it_is_cancelled(tmp_path):
    def cancel(request):
        raise KeyboardInterrupt

    agent, model = make_agent(
        tmp_path, [reply(tool_call("bash", {"command": "touch a.txt"})), reply("done")], non_interactive=True
    )
    invocation = Invocation("/x", "make a", allowed_tools=("Bash(touch:*)",), model="small-model", run_shell=True)
    list(invocation_events(agent, invocation))
    assert (tmp_path / "a.txt").exists() and [r.model for r in model.requests] == ["small-model", "small-model"]
    assert agent.config.model == "main-model"
    assert (
        agent.permissions.decide("bash", declares(Effect.RUN, command="touch b.txt")).action == "ask"
    )  # the grant is over
    model.fn = cancel  # a cancelled command turn gives the grant back too
    ended = list(invocation_events(agent, invocation))[-1]
    assert ended.stop_reason == "cancelled" and agent.config.model == "main-model"
    assert agent.permissions.decide("bash", declares(Effect.RUN, command="touch c.txt")).action == "ask"


def test_an_invocation_error_and_notes_are_shown_without_a_turn(tmp_path):
    agent, model = make_agent(tmp_path, [])
    events = list(invocation_events(agent, Invocation("/p", error="missing file; usage: /p <file>", notes=("a note",))))
    assert events[0].text == "a note" and events[-1].error == "/p: missing file; usage: /p <file>"
    assert model.requests == []


def test_server_text_never_runs_as_shell(tmp_path):
    agent, model = make_agent(tmp_path, [reply("ok")], lambda *a: Approval.ALLOW)
    list(invocation_events(agent, Invocation("/mcp__s__p", "Run !`touch owned`", run_shell=False)))
    assert model.requests[0].messages[-1]["content"][0]["text"] == "Run !`touch owned`"
    assert not (tmp_path / "owned").exists()
