"""A subagent's gate is its parent's, live (mode, rules, "always" answers), narrowed to reading
for a definition that lists no tools; the tools it is offered by default are those that declare
they only read."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from memagent.features.background_shells import background_tools
from memagent.features.subagent_gate import SubagentGate, is_read_only
from memagent.permissions import Effect, Gate, Policy, declares
from memagent.tools.background import ShellRegistry
from memagent.tools.base import Tool, ToolContext, tool
from memagent.tools.builtin import builtin_tools
from memagent.tools.executor import LocalExecutor

WRITE = declares(Effect.WRITE, paths=("notes.md",))
READ = declares(Effect.READ, paths=("notes.md",))


def parent_gate(root: Path, mode: str = "default", **rules: list[str]) -> Gate:
    return Gate(Policy.from_settings(mode, root=root, **rules))


def test_a_read_only_subagent_may_not_write_even_when_its_parent_may(tmp_path: Path) -> None:
    parent = parent_gate(tmp_path, "bypassPermissions")
    child = SubagentGate(parent, "Explore", read_only=True)
    refused = child.decide("write_file", WRITE, None, {"path": "notes.md"})
    assert refused.action == "deny"
    assert "Explore" in refused.reason and "writes in the project" in refused.reason
    assert child.decide("bash", declares(Effect.RUN, command="ls"), None, {"command": "ls"}).action == "deny"
    assert child.decide("read_file", READ, None, {"path": "notes.md"}).action == "allow"
    assert parent.decide("write_file", WRITE, None, {"path": "notes.md"}).action == "allow"  # the parent is unchanged


def test_a_subagent_that_lists_tools_is_judged_by_its_parents_mode_and_rules(tmp_path: Path) -> None:
    parent = parent_gate(tmp_path, "acceptEdits", deny=["Bash(curl:*)"])
    child = SubagentGate(parent, "writer", read_only=False)
    assert child.decide("write_file", WRITE, None, {"path": "notes.md"}).action == "allow"
    curl = declares(Effect.RUN, command="curl example.org")
    assert child.decide("bash", curl, None, {"command": "curl example.org"}).action == "deny"
    assert child.decide("bash", declares(Effect.RUN, command="make"), None, {"command": "make"}).action == "ask"


def test_the_parent_switching_to_plan_mode_reaches_a_child_already_built(tmp_path: Path) -> None:
    parent = parent_gate(tmp_path, "acceptEdits")
    child = SubagentGate(parent, "writer", read_only=False)
    assert child.decide("write_file", WRITE).action == "allow"
    parent.policy = parent.policy.with_mode("plan")
    assert child.mode == "plan"
    refused = child.decide("write_file", WRITE)
    assert refused.action == "deny" and "plan mode" in refused.reason


def test_an_always_answer_to_a_child_approves_that_call_for_the_parent_too(tmp_path: Path) -> None:
    saved: list[str] = []
    parent = Gate(Policy.from_settings("default", root=tmp_path), saved.append)
    child = SubagentGate(SubagentGate(parent, "outer", read_only=False), "inner", read_only=False)  # nested
    npm = declares(Effect.RUN, command="npm test")
    assert child.decide("bash", npm, None, {"command": "npm test"}).action == "ask"
    child.always("bash", npm, {"command": "npm test"})
    assert saved == ["Bash(npm test)"]
    assert parent.decide("bash", npm, None, {"command": "npm test"}).action == "allow"
    assert child.decide("bash", npm, None, {"command": "npm test"}).action == "allow"


class Nothing(BaseModel):
    pass


def test_default_tools_are_the_ones_that_declare_they_only_read(tmp_path: Path) -> None:
    @tool("peek", Nothing, effects=declares(Effect.READ))
    def peek(args: Nothing, ctx: ToolContext) -> str:
        """Reads."""
        return ""

    @tool("mystery", Nothing)
    def mystery(args: Nothing, ctx: ToolContext) -> str:
        """Declares nothing: taken to run code."""
        return ""

    registry = ShellRegistry(LocalExecutor(), lambda script, root: None)  # type: ignore[arg-type,return-value]
    tools: dict[str, Tool] = {t.name: t for t in [*builtin_tools(), *background_tools(registry), peek, mystery]}
    offered = {name for name, t in tools.items() if is_read_only(t)}
    assert {"read_file", "glob", "grep", "bash_output", "peek"} <= offered
    assert not offered & {"bash", "write_file", "edit_file", "kill_shell", "mystery"}
