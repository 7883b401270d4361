"""Prompt commands in ``-p`` with the real CLI, the real SDK and the loopback fake API: command files
in Claude Code's format (namespaces, ``$1``, ``!`cmd``` through the gate, ``allowed-tools``,
``model``), skills as ``/name``, and what happens to an unknown command."""

from __future__ import annotations

import pytest

from fakeapi import FakeAnthropic, text, tool

SMALL = "claude-haiku-4-5"


@pytest.fixture
def fake():
    with FakeAnthropic() as server:
        yield server


def _write(path, body):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)


def _print(run_cli, fake, project, prompt, *flags):
    return run_cli("-C", str(project), "--no-memory", "-p", prompt, *flags, env={"ANTHROPIC_BASE_URL": fake.url})


def _trust(run_cli, project):
    assert run_cli("trust", "-C", str(project)).returncode == 0


def _user_text(request) -> str:
    first = request["messages"][0]["content"]
    return "\n".join(b["text"] for b in first if b.get("type") == "text") if isinstance(first, list) else first


def test_a_namespaced_command_expands_runs_its_snippet_and_pre_approves_its_tools(run_cli, fake, project):
    _write(
        project / ".claude" / "commands" / "git" / "commit.md",
        "---\ndescription: Commit staged work\nargument-hint: TYPE SCOPE\n"
        "allowed-tools: Bash(echo:*), Bash(touch:*)\n---\n"
        "Write a $1 commit for $2 (all: $ARGUMENTS).\nStatus: !`echo staged-files-here`\n",
    )
    fake.add(tool("bash", {"command": "touch committed.txt"}, id="toolu_t"), text("Committed."))
    _trust(run_cli, project)
    result = _print(run_cli, fake, project, "/git:commit feat parser")  # no --yes: nobody to ask
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Committed.\n"
    assert (
        _user_text(fake.requests[0]) == "Write a feat commit for parser (all: feat parser).\nStatus: staged-files-here"
    )
    assert (project / "committed.txt").exists()  # the model's call matched the command's allowed-tools
    assert fake.errors == []


def test_a_snippet_the_gate_refuses_stops_the_command_before_anything_is_sent(run_cli, fake, project):
    _write(project / ".claude" / "commands" / "clean.md", "Cleaned: !`touch planted.txt && echo done`\n")
    result = _print(run_cli, fake, project, "/clean")
    assert result.returncode == 1
    assert fake.requests == [] and not (project / "planted.txt").exists()
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("memagent: /clean: !`touch planted.txt && echo done` was not run")
    assert "nothing was sent" in last and "Traceback" not in result.stderr


def test_a_failing_snippet_stops_the_command_and_names_the_exit_code(run_cli, fake, project):
    _write(
        project / ".claude" / "commands" / "check.md",
        "---\nallowed-tools: Bash(ls:*)\n---\nListing: !`ls no-such-folder`\n",
    )
    _trust(run_cli, project)
    result = _print(run_cli, fake, project, "/check")
    assert result.returncode == 1 and fake.requests == []
    assert "memagent: /check: !`ls no-such-folder` exited with 2: " in result.stderr


def test_allowed_tools_last_one_turn_and_the_model_setting_applies_to_it(run_cli, fake, project):
    _write(
        project / ".claude" / "commands" / "fast.md",
        "---\nmodel: claude-haiku-4-5\nallowed-tools: Bash(touch:*)\n---\nQuick one.\n",
    )
    fake.add(tool("bash", {"command": "rm -f x.txt"}, id="toolu_rm"), text("could not"))
    _trust(run_cli, project)
    result = _print(run_cli, fake, project, "/fast")
    assert result.returncode == 0, result.stderr
    assert [r["model"] for r in fake.requests] == [SMALL, SMALL]
    refused = fake.requests[1]["messages"][-1]["content"][0]
    assert refused["is_error"] is True  # rm is not among the allowed tools: -p without --yes refuses it
    fake.add(tool("bash", {"command": "touch later.txt"}, id="toolu_later"), text("no"))
    later = _print(run_cli, fake, project, "touch it", "-c")
    assert later.returncode == 0, later.stderr
    assert fake.requests[-1]["model"] != SMALL and not (project / "later.txt").exists()  # the grant ended with /fast


def test_a_skill_is_a_slash_command_in_print_mode(run_cli, fake, project):
    _write(
        project / ".claude" / "skills" / "hook-development" / "SKILL.md",
        "---\nname: Hook Development\ndescription: Develop hooks.\n---\nWrite a hook for $ARGUMENTS.\n",
    )
    fake.add(text("Here is a PreToolUse hook."))
    result = _print(run_cli, fake, project, "/hook-development PreToolUse")
    assert result.returncode == 0, result.stderr
    folder = (project / ".claude" / "skills" / "hook-development").resolve()
    assert _user_text(fake.requests[0]) == f"Base directory for this skill: {folder}\n\nWrite a hook for PreToolUse."


def test_unknown_and_interactive_only_commands_are_one_line_errors(run_cli, fake, project):
    _write(project / ".claude" / "commands" / "commit.md", "Commit.\n")
    typo = _print(run_cli, fake, project, "/comit now")
    assert (
        typo.returncode == 1
        and typo.stderr.strip().splitlines()[-1] == "memagent: unknown command /comit; did you mean /commit?"
    )
    builtin = _print(run_cli, fake, project, "/compact")
    assert builtin.returncode == 1 and "/compact is a command of the interactive chat" in builtin.stderr
    path = _print(run_cli, fake, project, "/etc/hosts is odd, why?")
    assert path.returncode == 1 and fake.requests  # a path is a message, not a command (script exhausted: 1)
    assert _user_text(fake.requests[0]) == "/etc/hosts is odd, why?"


def test_an_untrusted_projects_command_cannot_pre_approve_tools(run_cli, fake, project):
    (project / ".git").mkdir()
    _write(project / ".claude" / "commands" / "sneaky.md", "---\nallowed-tools: Bash\n---\nGo: !`touch pwned.txt`\n")
    result = _print(run_cli, fake, project, "/sneaky")
    assert result.returncode == 1 and fake.requests == [] and not (project / "pwned.txt").exists()
    assert "/sneaky: allowed-tools ignored, this project is not trusted" in result.stderr
