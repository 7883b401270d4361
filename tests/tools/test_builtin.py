"""The public contract of the built-in tools: names, order, input schemas, approval flags."""

from __future__ import annotations

import pytest

from memagent.tools.base import ToolContext, ToolRegistry
from memagent.tools.builtin import builtin_tools

# DESIGN §4: (property names, required) for each built-in tool.
CONTRACT = {
    "bash": ({"command", "timeout", "run_in_background"}, ["command"]),
    "read_file": ({"path", "offset", "limit"}, ["path"]),
    "write_file": ({"path", "content"}, ["path", "content"]),
    "edit_file": ({"path", "old_text", "new_text"}, ["path", "old_text", "new_text"]),
    "glob": ({"pattern"}, ["pattern"]),
    "grep": ({"pattern", "path", "glob"}, ["pattern"]),
}


def test_order_is_stable() -> None:
    assert [t.name for t in builtin_tools()] == ["bash", "read_file", "write_file", "edit_file", "glob", "grep"]
    # the same objects every call: schemas stay byte-identical between turns
    assert [t.schema() for t in builtin_tools()] == [t.schema() for t in builtin_tools()]


@pytest.mark.parametrize("name", list(CONTRACT))
def test_input_schema_matches_design(name: str) -> None:
    tool = ToolRegistry.of(builtin_tools()).get(name)
    assert tool is not None
    schema = tool.schema()
    assert schema["name"] == name and schema["description"]
    input_schema = schema["input_schema"]
    properties, required = CONTRACT[name]
    assert set(input_schema["properties"]) == properties
    assert sorted(input_schema.get("required", [])) == sorted(required)
    assert input_schema["type"] == "object" and input_schema["additionalProperties"] is False
    for prop in input_schema["properties"].values():
        assert "anyOf" not in prop and "default" not in prop and prop.get("description")


def test_declared_effects_and_key_arguments() -> None:
    from memagent.permissions import Effect

    tools = {t.name: t for t in builtin_tools()}
    example = {
        "bash": {"command": "ls"},
        "read_file": {"path": "a"},
        "write_file": {"path": "a", "content": ""},
        "edit_file": {"path": "a", "old_text": "x", "new_text": "y"},
        "glob": {"pattern": "src/*.py"},
        "grep": {"pattern": "x"},
    }
    declared = {name: tools[name].declare(tools[name].validate(raw)) for name, raw in example.items()}
    assert {n for n, d in declared.items() if not d.reads_only} == {"bash", "write_file", "edit_file"}
    assert declared["bash"].command == "ls" and Effect.RUN in declared["bash"].effects
    assert declared["write_file"].paths == ("a",) and declared["glob"].paths == ("src",)
    assert declared["grep"].paths == (".",)
    assert tools["bash"].key_argument == "command"
    assert all(tools[n].key_argument == "path" for n in ("read_file", "write_file", "edit_file"))
    assert tools["glob"].key_argument == tools["grep"].key_argument == "pattern"
    assert tools["read_file"].summary({"path": "src/a.py"}) == "src/a.py"


def test_unknown_tool_and_bad_input_are_error_outcomes(registry: ToolRegistry, ctx: ToolContext) -> None:
    unknown = registry.run("delete_everything", {}, ctx)
    assert unknown.is_error and "Unknown tool 'delete_everything'" in unknown.content and "read_file" in unknown.content
    missing = registry.run("read_file", {}, ctx)
    assert missing.is_error and "path" in missing.content
    extra = registry.run("glob", {"pattern": "*", "recursive": True}, ctx)
    assert extra.is_error and "recursive" in extra.content
    wrong_type = registry.run("read_file", {"path": "a", "limit": "lots"}, ctx)
    assert wrong_type.is_error and "limit" in wrong_type.content
