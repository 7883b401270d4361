"""Slash commands a feature owns: declared on its class, listed by /help before a session is
open, dispatched by the REPL's table to the session's instance, answered without a terminal."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from memagent.agent.feature import BaseFeature, SlashCommand, SlashInput, SlashReply
from memagent.commands_md import discover_commands
from memagent.features import with_slash_commands
from memagent.features.background_shells import BackgroundShellsFeature
from memagent.features.mcp_client import McpClientFeature
from memagent.features.tasks import TaskGraphFeature
from memagent.features.todos import TodoFeature
from memagent.llm.scripted import ScriptedModel, reply
from memagent.mcp_bridge.config import McpConfig
from memagent.runtime import SessionOptions, open_session
from memagent.todo import TodoManager
from memagent.tools.background import ShellRegistry
from memagent.tools.executor import LocalExecutor
from memagent.ui.commands import COMMANDS, all_commands, builtin_names, find_command, run_command

SRC = Path(__file__).resolve().parents[2] / "src" / "memagent"
FEATURE_COMMANDS = {"todos", "tasks", "mcp", "bashes", "agents"}


def _never():
    raise AssertionError("this command must not need the session")


class _Only:
    """A session as the command table queries it: nothing but its features, by class."""

    def __init__(self, *features: BaseFeature) -> None:
        self.features = list(features)

    def feature(self, kind):
        return next((f for f in self.features if isinstance(f, kind)), None)


def _shells() -> BackgroundShellsFeature:
    def never_started(script: str, root: Path):
        raise AssertionError("no command is started")

    return BackgroundShellsFeature(ShellRegistry(LocalExecutor(), never_started))


@pytest.fixture
def session(tmp_path):
    opened = open_session(SessionOptions(root=tmp_path, memory=False), model=ScriptedModel([reply("hi")]))
    yield opened
    opened.close()


def test_the_front_end_table_holds_no_feature_command():
    """Each of these commands is its feature's: the UI's own table and source name none of them."""
    assert FEATURE_COMMANDS.isdisjoint(c.name for c in COMMANDS)
    declared = {c.name for kind in with_slash_commands() for c in kind.slash_commands}
    assert declared == FEATURE_COMMANDS
    source = (SRC / "ui" / "commands.py").read_text()
    imported = {node.module for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom) and node.module}
    owners = {"todos", "tasks", "mcp_client", "background_shells", "subagents", "agent_definitions"}
    assert not imported & ({f"memagent.features.{m}" for m in owners} | {"memagent.tasks"})
    for name in ("TodoFeature", "TaskStore", "BackgroundShellsFeature", "McpClientFeature", "SubagentsFeature"):
        assert name not in source


def test_help_lists_the_features_commands_before_the_session_is_open():
    text = run_command("/help", _never).text
    for command in all_commands():
        assert command.usage in text and command.help in text
    assert {"/todos", "/bashes [kill ID]", "/mcp [approve NAME]", "/agents", "/tasks"} <= set(text.split("  "))


def test_a_custom_command_file_cannot_take_a_features_name(tmp_path):
    root = tmp_path / "p"
    for name in ("bashes", "agents", "mcp"):
        (root / ".claude" / "commands").mkdir(parents=True, exist_ok=True)
        (root / ".claude" / "commands" / f"{name}.md").write_text("not the feature's command\n")
    custom = discover_commands(root, tmp_path / "home", builtin_names())
    assert all(custom.get(name) is None for name in ("bashes", "agents", "mcp"))
    assert FEATURE_COMMANDS <= builtin_names()


def test_a_features_command_runs_on_the_sessions_instance(session):
    feature = session.feature(TodoFeature)
    feature.manager.update([{"id": "1", "text": "ship the parser", "status": "in_progress"}])
    answer = run_command("/todos", lambda: session)
    assert "ship the parser" in answer.text and answer.style == ""
    assert run_command("/tasks", lambda: session).text == "No open tasks."
    assert run_command("/bashes", lambda: session).text.startswith("No background shells in this session")
    assert run_command("/agents", lambda: session).text.startswith("Subagents (the model starts them")


def test_a_command_is_a_function_of_the_feature_and_its_argument_alone(tmp_path):
    """No session, no terminal: the feature's declaration is called with a SlashInput."""
    [todos] = TodoFeature.slash_commands
    manager = TodoManager()
    manager.update([{"id": 1, "text": "write the test", "status": "pending"}])
    assert "write the test" in todos.run(TodoFeature(manager, lambda record: None), SlashInput()).text
    [bashes] = BackgroundShellsFeature.slash_commands
    shells = _shells()
    assert bashes.run(shells, SlashInput("kill bash_9")) == SlashReply(
        "no background shell 'bash_9' (this session has: none)"
    )
    assert bashes.run(shells, SlashInput("stop everything")) == SlashReply("usage: /bashes [kill ID]", error=True)


def test_a_missing_feature_says_so_and_an_error_is_red(tmp_path):
    assert run_command("/bashes", lambda: _Only()).text == "Background shells are not available in this session."
    assert run_command("/tasks", lambda: _Only()).text == "The task graph is off in this session."
    assert run_command("/todos", lambda: _Only()).text == "The todo list is off in this session."
    shells = _shells()
    wrong = run_command("/bashes kill", lambda: _Only(shells))
    assert wrong.text == "usage: /bashes [kill ID]" and wrong.style == "red"


def test_a_damaged_task_file_is_shown_even_with_no_open_task(tmp_path):
    tasks_dir = tmp_path / ".tasks"
    tasks_dir.mkdir()
    (tasks_dir / "task_1.json").write_text("{not json")
    lines = run_command("/tasks", lambda: _Only(TaskGraphFeature(tasks_dir))).text.splitlines()
    assert lines[0] == "No open tasks." and len(lines) == 2
    assert lines[1].startswith("! ") and "task_1.json" in lines[1]


def test_mcp_approve_of_an_unknown_server_is_refused(tmp_path):
    feature = McpClientFeature(McpConfig(), env={}, root=tmp_path, home=tmp_path / "home")
    answer = run_command("/mcp approve nowhere", lambda: _Only(feature))
    assert answer.text == "no running MCP server named 'nowhere'; /mcp lists them" and answer.style == "red"
    assert not (tmp_path / "home").exists()  # nothing was written


def test_a_new_feature_command_needs_no_change_to_the_ui(monkeypatch):
    """The declaration and the composition are all: a feature class's command is listed and run."""

    class Greeter(BaseFeature):
        name = "greeter"

        def greet(self, command: SlashInput) -> SlashReply:
            return SlashReply(f"hello {command.argument or 'world'}")

        slash_commands = (SlashCommand("greet", "/greet [name]", "say hello", greet, "no greeter here"),)

    assert find_command("greet") is None
    declared = with_slash_commands()
    monkeypatch.setattr("memagent.features.with_slash_commands", lambda: (*declared, Greeter))
    assert any(
        line.split() == ["/greet", "[name]", "say", "hello"] for line in run_command("/help", _never).text.splitlines()
    )
    assert run_command("/greet  ada ", lambda: _Only(Greeter())).text == "hello ada"
    assert run_command("/greet", lambda: _Only()).text == "no greeter here"
    assert "greet" in builtin_names()
