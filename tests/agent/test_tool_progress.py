"""Live tool output: the loop yields ToolProgress while the real bash tool runs, and a cancel
while it runs kills the command's processes and leaves a history the API accepts."""

from __future__ import annotations

import time
from pathlib import Path

from memagent.agent.loop import Agent
from memagent.context.conversation import Conversation
from memagent.events import ToolCallFinished, ToolProgress, TurnEnded
from memagent.llm.invariants import request_problems
from memagent.llm.scripted import ScriptedModel, reply, tool_call
from memagent.llm.types import text_block
from memagent.protocol import Submit
from memagent.session import Session
from memagent.tools.base import ToolContext, ToolRegistry
from memagent.tools.builtin import builtin_tools
from memagent.ui.printmode import follow_turn


def make_agent(root: Path, model: ScriptedModel) -> Agent:
    return Agent(
        model=model,
        tools=ToolRegistry.of(builtin_tools()),
        tool_context=ToolContext(root=root, bash_timeout=30),
        system=[text_block("system prompt")],
        conversation=Conversation(session_id="s1"),
        auto_approve=True,
    )


def pids_running(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_bash_output_arrives_as_progress_before_the_command_ends(tmp_path: Path) -> None:
    command = "for i in 1 2 3; do echo line-$i; sleep 0.3; done"
    model = ScriptedModel([reply(tool_call("bash", {"command": command}, id="b")), reply("done")])
    agent = make_agent(tmp_path, model)
    seen: list[tuple[float, object]] = []
    for event in agent.run_turn("run it"):
        seen.append((time.monotonic(), event))
    progress = [(t, e) for t, e in seen if isinstance(e, ToolProgress)]
    finished_at = next(t for t, e in seen if isinstance(e, ToolCallFinished))
    assert "".join(e.text for _, e in progress) == "line-1\nline-2\nline-3\n"
    first_line_at = next(t for t, e in progress if "line-1" in e.text)
    assert finished_at - first_line_at > 0.4  # line 1 was shown while the command still ran
    assert all(e.id == "b" and e.name == "bash" and e.elapsed >= 0 for _, e in progress)
    assert isinstance(seen[-1][1], TurnEnded) and seen[-1][1].final_text == "done"


def test_cancel_while_bash_streams_kills_it_and_keeps_history_valid(tmp_path: Path) -> None:
    command = "sleep 60.0303 & echo started; while true; do echo tick; sleep 0.1; done"
    model = ScriptedModel([reply(tool_call("bash", {"command": command}, id="b")), reply("after")])
    agent = make_agent(tmp_path, model)

    def handle(event: object) -> None:  # the user presses Ctrl-C once output is on screen
        if isinstance(event, ToolProgress) and "started" in event.text:
            raise KeyboardInterrupt

    session = _session_around(agent, tmp_path)
    started = time.monotonic()
    session.submit(Submit("run forever"))
    assert follow_turn(session, handle) is True  # the KeyboardInterrupt became a Cancel
    assert time.monotonic() - started < 10
    deadline = time.monotonic() + 5
    while pids_running("sleep 60.0303") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pids_running("sleep 60.0303") == []
    results = agent.conversation.messages[-1]["content"]
    assert results[0]["tool_use_id"] == "b" and results[0]["is_error"]
    list(agent.run_turn("go on"))
    assert all(request_problems(r.messages) == [] for r in model.requests)
    assert model.requests[-1].messages[-1]["content"][-1]["text"] == "go on"


def _partial_output_after(cancel, tmp_path: Path) -> dict:
    command = "for i in 1 2 3; do echo part-$i; done; sleep 30; echo never-printed"
    model = ScriptedModel([reply(tool_call("bash", {"command": command}, id="b")), reply("ok")])
    agent = make_agent(tmp_path, model)
    events = agent.run_turn("run it")
    seen = ""
    for event in events:
        if isinstance(event, ToolProgress):
            seen += event.text
            if "part-3" in seen:
                break
    cancel(agent, events)
    [result] = [b for b in agent.conversation.messages[-1]["content"] if b.get("type") == "tool_result"]
    assert request_problems(agent.conversation.messages) == []
    return result


def test_ctrl_c_in_the_loop_gives_the_model_the_partial_output(tmp_path: Path) -> None:
    def interrupt(agent, events):  # the KeyboardInterrupt lands while the loop waits on the tool
        ended = events.throw(KeyboardInterrupt())
        assert isinstance(ended, TurnEnded) and ended.stop_reason == "cancelled"

    result = _partial_output_after(interrupt, tmp_path)
    assert result["is_error"] is True and "interrupted" in result["content"]
    assert "part-1\npart-2\npart-3" in result["content"] and "never-printed" not in result["content"]


def test_ctrl_c_in_the_renderer_gives_the_model_the_partial_output(tmp_path: Path) -> None:
    def close(agent, events):  # the KeyboardInterrupt lands in the renderer: the turn is closed
        events.close()
        agent.repair_after_interrupt()

    result = _partial_output_after(close, tmp_path)
    assert result["is_error"] is True and "part-3" in result["content"] and "Partial output" in result["content"]


def _session_around(agent, tmp_path: Path) -> Session:
    """A real Session around a test agent, for driving it through the protocol."""
    from memagent.config import Settings, project_paths
    from memagent.context.transcript import TranscriptWriter
    from memagent.todo import TodoManager

    paths = project_paths(tmp_path)
    transcript = TranscriptWriter.open(paths.transcripts, "20261122-120000-abcd")
    return Session(agent, paths, Settings(), "20261122-120000-abcd", transcript, TodoManager(), list(agent.features))
