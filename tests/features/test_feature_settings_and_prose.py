"""A feature's settings (its pydantic sub-model, composed by config.Settings with the keys as
they were) and its prose (its guidance paragraph, not the base prompt's)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from memagent.agent.feature import BaseFeature
from memagent.agent.prompt import BASE_PROMPT, build_system
from memagent.config import ConfigError, Settings, load_settings_with_notices, project_paths
from memagent.feature_settings import FEATURE_SETTINGS, BackgroundShellSettings, TodoSettings
from memagent.features.background_shells import BackgroundShellsFeature
from memagent.features.checkpoints import CheckpointFeature
from memagent.features.memory import MemoryFeature
from memagent.features.subagents import SubagentsFeature
from memagent.features.tasks import TaskGraphFeature
from memagent.features.todos import TodoFeature
from memagent.llm.scripted import ScriptedModel, reply, tool_call
from memagent.runtime import SessionOptions, open_session
from memagent.todo import TodoManager
from memagent.tools.background import ShellRegistry
from memagent.tools.executor import LocalExecutor

SRC = Path(__file__).resolve().parents[2] / "src" / "memagent"
WITH_SETTINGS = (TodoFeature, BackgroundShellsFeature, SubagentsFeature, CheckpointFeature)


def paths_with(tmp_path: Path, project: str = "", user: str = ""):
    root, home = tmp_path / "project", tmp_path / "home"
    root.mkdir(parents=True, exist_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    (root / ".memagent.toml").write_text(project)
    (home / "config.toml").write_text(user)
    return project_paths(root, env={"MEMAGENT_HOME": str(home)})


# ------------------------------------------------------------------ settings


def test_every_features_sub_model_is_composed_by_settings():
    claimed = [kind.settings_model for kind in WITH_SETTINGS]
    assert sorted(m.__name__ for m in claimed) == sorted(m.__name__ for m in FEATURE_SETTINGS)
    for model in claimed:
        assert model is not None and issubclass(Settings, model)
        assert set(model.model_fields) <= set(Settings.model_fields)
    assert BaseFeature.settings_model is None  # a feature without settings is given none


def test_the_keys_and_the_file_format_are_unchanged(tmp_path):
    user = "subagent_max_depth = 1\ncheckpoints = false\ncheckpoint_max_files = 7\ncheckpoint_max_file_bytes = 0\n"
    settings, notices = load_settings_with_notices(paths_with(tmp_path, user=user), env={})
    assert notices == []
    assert (settings.subagent_max_depth, settings.checkpoints, settings.checkpoint_max_files) == (1, False, 7)
    assert settings.checkpoint_max_file_bytes == 0
    env = {"MEMAGENT_SUBAGENT_MAX_DEPTH": "3", "MEMAGENT_TODO_REMINDER": "false"}
    from_env, _ = load_settings_with_notices(paths_with(tmp_path / "e"), env=env)
    assert from_env.subagent_max_depth == 3 and from_env.todo_reminder is False


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("subagent_max_depth = 9", "subagent_max_depth"),
        ("background_shell_limit = 0", "background_shell_limit"),
        ("todo_reminder = 'sometimes'", "todo_reminder"),
        ("todo_reminders = false", "todo_reminders"),
    ],
)
def test_a_bad_feature_setting_is_one_line_naming_the_key(tmp_path, line, words):
    with pytest.raises(ConfigError) as raised:
        load_settings_with_notices(paths_with(tmp_path, user=line + "\n"), env={})
    message = str(raised.value)
    assert words in message and "\n" not in message


def test_an_untrusted_project_may_lower_the_background_limit_but_not_raise_it(tmp_path):
    raised, notices = load_settings_with_notices(paths_with(tmp_path / "r", "background_shell_limit = 64\n"), env={})
    assert raised.background_shell_limit == 16
    assert len(notices) == 1 and "background_shell_limit" in notices[0]
    lowered, notices = load_settings_with_notices(paths_with(tmp_path / "l", "background_shell_limit = 2\n"), env={})
    assert lowered.background_shell_limit == 2 and notices == []


def test_a_feature_is_given_its_sub_model_alone():
    manager = TodoManager()
    manager.update([{"id": 1, "text": "open item", "status": "pending"}])
    quiet = TodoFeature(manager, lambda record: None, settings=TodoSettings(todo_reminder=False))
    assert all(quiet.after_tools(["read_file"]) is None for _ in range(9))
    talking = TodoFeature(TodoManager(manager.items), lambda record: None, settings=TodoSettings())
    assert any(talking.after_tools(["read_file"]) is not None for _ in range(9))


@pytest.mark.parametrize("on", [True, False])
def test_the_todo_reminder_setting_in_a_real_session(tmp_path, isolated_env, on):
    (isolated_env / "config.toml").write_text(f"todo_reminder = {str(on).lower()}\n")
    script = [reply(tool_call("todo", {"items": [{"id": 1, "text": "look", "status": "in_progress"}]}))]
    script += [reply(tool_call("glob", {"pattern": "*.py"})) for _ in range(4)] + [reply("done")]
    model = ScriptedModel(script)
    session = open_session(SessionOptions(root=tmp_path, memory=False), model=model)
    try:
        list(session.agent.run_turn("look around"))
    finally:
        session.close()
    last = str(model.requests[-1].messages)
    assert ("have not updated your todo list" in last) is on


def test_the_background_limit_reaches_the_sessions_registry(tmp_path, isolated_env):
    (isolated_env / "config.toml").write_text("background_shell_limit = 1\n")
    first, second = (
        tool_call("bash", {"command": "sleep 30", "run_in_background": True}),
        tool_call("bash", {"command": "sleep 31", "run_in_background": True}),
    )
    model = ScriptedModel([reply(first), reply(second), reply("done")])
    session = open_session(SessionOptions(root=tmp_path, memory=False, auto_approve=True), model=model)
    try:
        list(session.agent.run_turn("start two"))
        results = [
            block
            for m in session.agent.conversation.messages
            for block in m["content"]
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]
        assert len(results) == 2 and not results[0].get("is_error")
        assert results[1].get("is_error") and "limit" in str(results[1]["content"])
        assert session.feature(BackgroundShellsFeature).registry.limit == 1
    finally:
        started = time.monotonic()
        session.close()
        assert time.monotonic() - started < 20  # the one it started is killed, not waited for


def test_a_subagents_view_of_the_shells_leaves_the_sessions_limit_alone():
    def never_started(script: str, root: Path):
        raise AssertionError("no command is started")

    registry = ShellRegistry(LocalExecutor(), never_started)
    BackgroundShellsFeature(registry, settings=BackgroundShellSettings(background_shell_limit=3))
    assert registry.limit == 3
    BackgroundShellsFeature(registry, owner=False, settings=BackgroundShellSettings(background_shell_limit=40))
    assert registry.limit == 3


# ------------------------------------------------------------------ prose


def test_the_base_prompt_names_no_features_tool():
    source = (SRC / "agent" / "prompt.py").read_text()
    for word in ("todo", "task_create", "memory_save", "[Memory#", "subagent"):
        assert word not in source, word


def test_each_feature_brings_its_own_guidance():
    todo = TodoFeature(TodoManager(), lambda record: None).guidance()
    tasks = TaskGraphFeature(Path("/nonexistent/.tasks")).guidance()
    assert "todo tool" in todo and "task_create" in tasks
    memory = MemoryFeature.guidance(MemoryFeature.__new__(MemoryFeature))
    assert "memory_save" in memory and "[Memory#id]" in memory
    head = build_system(Path("/p"), guidance=[todo, None, " ", tasks, memory])[0]["text"]
    assert head.startswith(BASE_PROMPT)
    assert head.index("todo tool") < head.index("task_create") < head.index("memory_save") < head.index("Environment:")


def test_a_replaced_prompt_drops_the_guidance_with_it():
    blocks = build_system(Path("/p"), ["AGENTS text"], base="Only this.", guidance=["Todo list: use todo."])
    assert [b["text"] for b in blocks] == ["Only this.", "AGENTS text"]


def test_a_session_without_memory_is_not_told_about_memory_tools(tmp_path):
    session = open_session(SessionOptions(root=tmp_path, memory=False), model=ScriptedModel([reply("hi")]))
    try:
        head = session.agent.system[0]["text"]
        assert "memory_save" not in head and "memory_save" not in session.tool_names()
        assert "todo tool" in head and "task_create" in head
    finally:
        session.close()
