"""A Claude Code project through the real CLI: ``.claude/settings.json`` and ``~/.claude/settings.json``
(hooks in Claude Code's format, ``env``, ``permissions``) with the real SDK and the fake API."""

from __future__ import annotations

import json
import sys

import pytest
from fakeapi import FakeAnthropic, text, tool

VALIDATOR = '''\
import json, re, sys
event = json.load(sys.stdin)
if event.get("tool_name") != "Bash":
    sys.exit(0)
if re.search(r"^grep\\b(?!.*\\|)", event["tool_input"].get("command", "")):
    print("Use 'rg' instead of 'grep'", file=sys.stderr)
    sys.exit(2)
'''


@pytest.fixture
def fake():
    with FakeAnthropic() as server:
        yield server


def _settings(project, data, name="settings.json"):
    folder = project / ".claude"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(data))


def _print(run_cli, fake, project, prompt, *flags):
    return run_cli("-C", str(project), "--no-memory", "-p", prompt, *flags, env={"ANTHROPIC_BASE_URL": fake.url})


def _result(request) -> dict:
    return [b for b in request["messages"][-1]["content"] if b.get("type") == "tool_result"][0]


def _project_with_hooks(project):
    (project / ".git").mkdir()
    (project / ".claude" / "hooks").mkdir(parents=True)
    (project / ".claude" / "hooks" / "validate.py").write_text(VALIDATOR)
    _settings(project, {
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": f'{sys.executable} "$CLAUDE_PROJECT_DIR/.claude/hooks/validate.py"'}]}]},
        "env": {"DEPLOY_TARGET": "staging"},
    })


def test_a_trusted_projects_hooks_and_env_work_unchanged(run_cli, fake, project):
    _project_with_hooks(project)
    assert run_cli("trust", "-C", str(project)).returncode == 0
    fake.add(tool("bash", {"command": "grep -r TODO ."}, id="toolu_grep"),
             tool("bash", {"command": "echo target=$DEPLOY_TARGET"}, id="toolu_env"), text("ok"))
    result = _print(run_cli, fake, project, "look", "--yes")
    assert result.returncode == 0, result.stderr
    blocked = _result(fake.requests[1])
    assert blocked["is_error"] is True and "Use 'rg' instead of 'grep'" in blocked["content"]
    assert _result(fake.requests[2])["content"].startswith("target=staging")


def test_an_untrusted_projects_hooks_and_env_wait_with_one_notice(run_cli, fake, project):
    _project_with_hooks(project)
    fake.add(tool("bash", {"command": "echo target=[$DEPLOY_TARGET]"}, id="toolu_env"), text("ok"))
    result = _print(run_cli, fake, project, "look", "--yes")
    assert result.returncode == 0, result.stderr
    assert _result(fake.requests[1])["content"].startswith("target=[]")
    notices = [line for line in result.stderr.splitlines() if ".claude/settings.json asks for" in line]
    assert notices == ["memagent: warning: .claude/settings.json asks for hooks, env; ignored because this project "
                       "is not trusted (run `memagent trust` in it to allow them)"]


def test_the_users_own_claude_settings_apply_in_any_project(run_cli, fake, project, cli_env):
    user = cli_env["HOME"]
    (project / ".git").mkdir()
    claude = __import__("pathlib").Path(user) / ".claude"
    claude.mkdir(parents=True, exist_ok=True)
    (claude / "settings.json").write_text(json.dumps({
        "env": {"TEAM": "core"},
        "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo 'ticket ABC-7 is in progress'"}]}],
                  "SubagentStop": [{"hooks": [{"type": "command", "command": "true"}]}]},
    }))
    fake.add(tool("bash", {"command": "echo team=$TEAM"}, id="toolu_team"), text("ok"))
    result = _print(run_cli, fake, project, "which team?", "--yes")
    assert result.returncode == 0, result.stderr
    first = fake.requests[0]["messages"][0]["content"]
    assert first[-1]["text"] == "[Context from the user's hooks, UserPromptSubmit:]\nticket ABC-7 is in progress"
    assert _result(fake.requests[1])["content"].startswith("team=core")
    assert "SubagentStop hooks never run in memagent (memagent has no subagents)" in result.stderr
