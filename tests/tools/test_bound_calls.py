"""A validated call is bound to its tool: what it would do (for the gate) and how it runs, whatever
the tool's input model; an MCP-style raw tool gets its JSON object whole."""

from __future__ import annotations

from pathlib import Path

from memagent.permissions import Effect, declares
from memagent.tools.base import BoundCall, RawArguments, RawSchemaTool, ToolContext, ToolOutcome, ToolRegistry
from memagent.tools.builtin import builtin_tools
from memagent.tools.shell import BashInput


def test_parse_binds_the_validated_input_and_declares_as_the_tool_does(tmp_path: Path):
    registry = ToolRegistry.of(builtin_tools())
    parsed = registry.parse("bash", {"command": "rm -rf build"})
    assert not isinstance(parsed, ToolOutcome)
    tool, call = parsed
    assert isinstance(call, BoundCall) and call.input == BashInput(command="rm -rf build")
    bash = registry.tools["bash"]
    assert call.declare() == bash.declare(bash.validate({"command": "rm -rf build"}))
    assert tool is bash


def test_a_bound_call_runs_its_own_input(tmp_path: Path):
    registry = ToolRegistry.of(builtin_tools())
    (tmp_path / "a.txt").write_text("hello\n")
    parsed = registry.parse("read_file", {"path": "a.txt"})
    assert not isinstance(parsed, ToolOutcome)
    outcome = registry.execute(parsed[0], parsed[1], ToolContext(root=tmp_path))
    assert "hello" in outcome.content and not outcome.is_error


def raw_tool(seen: list[dict]) -> RawSchemaTool:
    def run(arguments: RawArguments, ctx: ToolContext) -> str:
        seen.append(arguments.root)
        return "ok"

    return RawSchemaTool(
        name="mcp__toy__echo",
        description="echo",
        input_model=RawArguments,
        handler=run,
        effects=declares(Effect.READ),
        input_schema={"type": "object", "properties": {"x": {"type": "object"}}},
    )


def test_a_raw_schema_tool_gets_the_json_object_whole(tmp_path: Path):
    seen: list[dict] = []
    registry = ToolRegistry.of([raw_tool(seen)])
    payload = {"x": {"deep": [1, 2.5, None, True, "s"]}, "extra": "kept"}
    assert registry.run("mcp__toy__echo", payload, ToolContext(root=tmp_path)).content == "ok"
    assert seen == [payload]
    assert registry.schemas()[0]["input_schema"] == {"type": "object", "properties": {"x": {"type": "object"}}}


def test_a_raw_schema_tool_refuses_what_is_not_a_json_object(tmp_path: Path):
    seen: list[dict] = []
    registry = ToolRegistry.of([raw_tool(seen)])
    for bad in (["x"], "x", 3):
        outcome = registry.run("mcp__toy__echo", bad, ToolContext(root=tmp_path))
        assert outcome.is_error and outcome.content.startswith("Invalid input for mcp__toy__echo")
    assert seen == []
