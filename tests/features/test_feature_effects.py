"""Plan mode and the other modes judge a feature's tool by the effects the tool declares: the gate
names no feature's tool, and a new tool needs no change to permissions/."""

from __future__ import annotations

import ast
from pathlib import Path

from pydantic import BaseModel

from memagent.llm.scripted import ScriptedModel, reply, tool_call
from memagent.permissions import Effect, Policy, declares
from memagent.runtime import SessionOptions, open_session
from memagent.tools.base import ToolContext, tool
from memagent.tools.builtin import builtin_tools

SRC = Path(__file__).resolve().parents[2] / "src" / "memagent"


def _code_strings(path: Path) -> set[str]:
    """Every string constant of a module's code, docstrings left out."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    }


def _results(session) -> dict[str, dict]:
    calls, found = {}, {}
    for message in session.agent.conversation.messages:
        for block in message["content"]:
            if block.get("type") == "tool_use":
                calls[block["id"]] = block["name"]
            elif block.get("type") == "tool_result":
                found[calls[block["tool_use_id"]]] = block
    return found


def test_the_gate_names_no_features_tool(tmp_path):
    session = open_session(SessionOptions(root=tmp_path, memory=False), model=ScriptedModel([reply("hi")]))
    try:
        builtin = {t.name for t in builtin_tools()}
        feature_tools = [session.agent.tools.get(name) for name in session.tool_names() if name not in builtin]
    finally:
        session.close()
    names = {t.name for t in feature_tools} | {t.claude.name for t in feature_tools if t.claude is not None}
    assert {"todo", "task_create", "bash_output", "kill_shell", "task", "TodoWrite"} <= names
    for path in sorted((SRC / "permissions").glob("*.py")):
        assert not names & _code_strings(path), path.name


def test_plan_mode_runs_what_a_feature_tool_declares_read_only_and_refuses_the_rest(tmp_path):
    calls = reply(
        tool_call("todo", {"items": [{"id": 1, "text": "plan it", "status": "in_progress"}]}),  # session
        tool_call("task_create", {"subject": "write the code"}),  # changes the task graph
        tool_call("bash_output", {"bash_id": "bash_1"}),  # reads
        tool_call("kill_shell", {"shell_id": "bash_1"}),  # session
    )
    model = ScriptedModel([calls, reply("planned")])
    session = open_session(SessionOptions(root=tmp_path, memory=False, permission_mode="plan"), model=model)
    try:
        list(session.agent.run_turn("make a plan"))
        results = _results(session)
    finally:
        session.close()
    assert not results["todo"].get("is_error")
    assert results["task_create"].get("is_error") and "plan mode" in str(results["task_create"]["content"])
    assert "changes the task graph" in str(results["task_create"]["content"])
    for name in ("bash_output", "kill_shell"):  # they ran (no such shell), the gate let them
        assert "plan mode" not in str(results[name]["content"]) and "no background shell" in str(
            results[name]["content"]
        )
    assert not (tmp_path / ".tasks").exists() or not any((tmp_path / ".tasks").glob("task_*.json"))


class _Nothing(BaseModel):
    pass


def _tool_declaring(effects):
    """A new capability's tool, declaring ``effects`` (None: nothing)."""

    @tool("look_around", _Nothing, effects=effects)
    def look_around(args: _Nothing, ctx: ToolContext) -> str:
        """Look around."""
        return "looked"

    return look_around


def test_a_new_feature_tool_is_judged_by_its_declaration_alone(tmp_path):
    policy = Policy.from_sources("plan", [], root=tmp_path)
    reads = _tool_declaring(declares(Effect.READ))
    writes = _tool_declaring(declares(Effect.WRITE, paths=("notes.md",)))
    silent = _tool_declaring(None)
    assert policy.decide("look_around", reads.declare(_Nothing())).action == "allow"
    assert policy.decide("look_around", writes.declare(_Nothing())).action == "deny"
    refused = policy.decide("look_around", silent.declare(_Nothing()))
    assert refused.action == "deny" and "runs code" in refused.reason  # undeclared: taken to run code
    default = Policy.from_sources("default", [], root=tmp_path)
    assert default.decide("look_around", silent.declare(_Nothing())).action == "ask"
    assert default.decide("look_around", reads.declare(_Nothing())).action == "allow"
