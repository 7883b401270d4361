"""Subagents meet main's Claude Code compatibility: a subagent's tool calls go through the
session's PreToolUse/PostToolUse hooks (by Claude Code's tool names, with the verdicts reaching
the subagent's gate and the hooks' context its own conversation), the ``task`` call itself is
``Task`` to a hook, and ``-c`` never continues a subagent's transcript."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from memagent.context.sessions import choose_session
from memagent.features.agent_definitions import parse_tools
from memagent.llm.scripted import FunctionModel, reply, tool_call
from memagent.llm.types import ModelRequest
from memagent.runtime import SessionOptions, open_session
from subagent_kit import answered, delegating, is_child

HOOK = """\
import json, sys
event = json.load(sys.stdin)
with open(sys.argv[1], "a") as log:
    log.write(json.dumps([event["hook_event_name"], event["tool_name"], event["tool_input"]]) + "\\n")
if event["hook_event_name"] == "PreToolUse" and event["tool_input"].get("file_path", "").endswith("alpha.py"):
    print("alpha.py is off limits", file=sys.stderr)
    sys.exit(2)
if event["hook_event_name"] == "PostToolUse" and event["tool_name"] == "Read":
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "beta was read"}}))
"""


def texts(request: ModelRequest) -> str:
    return json.dumps(request.messages)


@pytest.fixture
def root(tmp_path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "alpha.py").write_text("ALPHA = 1\n")
    (root / "beta.py").write_text("BETA = 2\n")
    return root


def test_a_subagents_calls_meet_the_sessions_hooks_by_claude_codes_names(root, isolated_env, tmp_path):
    script, log = tmp_path / "hook.py", tmp_path / "hook.log"
    script.write_text(HOOK)
    command = f"{sys.executable} {script} {log}"
    (isolated_env / "config.toml").write_text(
        f'[[hooks.PreToolUse]]\ncommand = "{command}"\n\n[[hooks.PostToolUse]]\ncommand = "{command}"\n'
    )

    def answer(request: ModelRequest):
        if is_child(request):
            done = sum(1 for m in request.messages if m["role"] == "user" and answered_message(m))
            if done == 0:
                return reply(tool_call("read_file", {"path": "alpha.py"}))
            if done == 1:
                return reply(tool_call("read_file", {"path": "beta.py"}))
            return reply("BETA is 2; alpha.py was refused")
        if answered(request):
            return reply("done")
        return reply(
            tool_call(
                "task",
                {"description": "read files", "prompt": "Read alpha.py then beta.py.", "subagent_type": "Explore"},
            )
        )

    model = FunctionModel(answer)
    session = open_session(SessionOptions(root=root, memory=False), model=model)
    events = list(session.agent.run_turn("go"))
    session.close()
    assert events[-1].final_text == "done"

    seen = [json.loads(line) for line in log.read_text().splitlines()]
    assert ["PreToolUse", "Task"] == seen[0][:2] and seen[0][2]["subagent_type"] == "Explore"
    reads = [entry for entry in seen if entry[1] == "Read"]
    assert [entry[0] for entry in reads] == ["PreToolUse", "PreToolUse", "PostToolUse"]  # alpha blocked, beta ran

    children = [r for r in model.requests if is_child(r)]
    assert "alpha.py is off limits" in texts(children[1])  # the hook's refusal reached the subagent
    assert "beta was read" in texts(children[2])  # PostToolUse context went to the subagent's conversation
    parents = [r for r in model.requests if not is_child(r)]
    assert "beta was read" not in texts(parents[-1])  # … and not to the parent's
    assert "BETA is 2" in texts(parents[-1])


def answered_message(message: dict) -> bool:
    return any(isinstance(b, dict) and b.get("type") == "tool_result" for b in message["content"])


def test_claude_code_names_of_mcp_resource_tools_and_skills_are_understood_in_a_definition():
    names, problems = parse_tools("Read, Skill, ListMcpResourcesTool, ReadMcpResourceTool")
    assert set(names) >= {"read_file", "skill", "list_mcp_resources", "read_mcp_resource"} and not problems


def test_continue_never_picks_a_subagents_transcript(root):
    def child(request: ModelRequest):
        return reply(tool_call("read_file", {"path": "beta.py"})) if not answered(request) else reply("BETA = 2")

    model = delegating(child, {"description": "read", "prompt": "Read beta.py.", "subagent_type": "Explore"}, "done")
    session = open_session(SessionOptions(root=root, memory=False, kind="headless"), model=model)
    list(session.agent.run_turn("go"))
    session.close()
    choice = choose_session(root / ".transcripts")
    assert choice is not None and choice.info.id == session.session_id
