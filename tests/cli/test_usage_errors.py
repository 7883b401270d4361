"""Usage errors from the real console script: one line on stderr, exit 2, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def memagent(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from memagent.cli.main import run; run()", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--bogus"], "No such option: --bogus"),
        (["tasks", "show"], "missing argument ID"),
        (["tasks", "show", "abc"], "ID: 'abc' is not a task id"),
        (["tasks", "update", "1", "--status", "bogus"], "--status: 'bogus' is not one of 'pending'"),
        (["memory", "list", "--limit", "abc"], "--limit: 'abc' is not a whole number"),
        (["-p", "hi", "-m", ""], "--model: the model id is empty"),
        (["-p", "hi", "there"], "give the prompt once"),
        (["taks"], "no such command 'taks'; did you mean 'tasks'?"),
        (["-r", "-p", "hi"], "-r needs a session id"),
        (["tasks", "nosuch"], "No such command 'nosuch'"),
        (["-p"], "stdin was empty"),  # -p alone reads the prompt from stdin, as in Claude Code
        (["-c", "-r", "x", "-p", "hi"], "use either -c or -r"),
    ],
)
def test_usage_error_is_one_line_with_exit_2(tmp_path, args, expected):
    result = memagent(*args, cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memagent: ") and expected in lines[0]
    assert "Traceback" not in result.stderr


def test_help_and_version_exit_0(tmp_path):
    assert memagent("--help", cwd=tmp_path).returncode == 0
    for flag in ("--version", "-V"):
        version = memagent(flag, cwd=tmp_path)
        assert version.returncode == 0 and version.stdout.startswith("memagent ")


def test_validation_wording_is_plain_english(tmp_path):
    for args in (["tasks", "show", "abc"], ["memory", "list", "--limit", "x"], ["tasks", "update", "1", "-s", "no"]):
        err = memagent(*args, cwd=tmp_path).stderr
        for leak in ("Input should be", "unable to parse", "Value error", "int | None", "String should"):
            assert leak not in err, (args, err)


def test_non_utf8_arguments_are_refused_in_one_line(tmp_path):
    result = subprocess.run(
        [sys.executable.encode(), b"-c", b"from memagent.cli.main import run; run()", b"-p", b"caf\xe9"],
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 2
    err = result.stderr.decode("utf-8")
    assert err.count("\n") == 1 and "argument 2" in err and "not valid UTF-8" in err and "Traceback" not in err


def test_help_has_no_type_placeholders_and_lists_completion(tmp_path):
    env_width = {"COLUMNS": "60"}
    for args in (
        ["--help"],
        ["memory", "forget", "--help"],
        ["tasks", "update", "--help"],
        ["sessions", "list", "--help"],
    ):
        result = subprocess.run(
            [sys.executable, "-c", "from memagent.cli.main import run; run()", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, **env_width},
        )
        assert result.returncode == 0
        assert "<bool>" not in result.stdout and "<list[" not in result.stdout, result.stdout
    top = memagent("--help", cwd=tmp_path).stdout
    assert "--install-completion" in top and "--version" in top and "-V" in top
    forget = subprocess.run(
        [sys.executable, "-c", "from memagent.cli.main import run; run()", "memory", "forget", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "60"},
    ).stdout
    assert "--scope" in forget and "SCOPE" in forget and "<user|" not in forget
    words = " ".join(" ".join(line.strip("│ ").split()) for line in forget.splitlines())
    assert "One of: user, project, session." in words  # wrapped between words, never inside one


def _in_bash(*args: str, cwd, env=None) -> subprocess.CompletedProcess:
    """Run memagent from a bash process, as a user would (the shell is detected from the parent)."""
    # "; exit" keeps bash from exec-ing the command, so bash stays its parent
    command = " ".join([sys.executable, "-c", "'from memagent.cli.main import run; run()'", *args]) + "; exit"
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=60, env=env or dict(os.environ)
    )


def test_shell_completion_script_and_completion_of_subcommands(tmp_path):
    script = _in_bash("--show-completion", cwd=tmp_path)
    assert script.returncode == 0, script.stderr
    assert "_MEMAGENT_COMPLETE" in script.stdout
    env = {**os.environ, "_MEMAGENT_COMPLETE": "complete_bash", "COMP_WORDS": "memagent ta", "COMP_CWORD": "1"}
    done = subprocess.run(
        [sys.executable, "-c", "from memagent.cli.main import run; run()"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert "tasks" in done.stdout.split()
    env = {**env, "COMP_WORDS": "memagent tasks ca", "COMP_CWORD": "2"}
    done = subprocess.run(
        [sys.executable, "-c", "from memagent.cli.main import run; run()"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert "cancel" in done.stdout.split()


def test_install_completion_writes_into_the_temp_home(tmp_path, isolated_env):
    home = Path(os.environ["HOME"])
    result = _in_bash("--install-completion", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "bash completion installed" in result.stdout
    assert "memagent" in (home / ".bashrc").read_text()


def test_bare_words_become_the_first_message_and_subcommands_keep_priority():
    from memagent.cli.main import FIRST_MESSAGE_OPTION, PICK_OPTION, rewrite_argv

    assert rewrite_argv(["fix the bug", "--yes"]) == ["--yes", FIRST_MESSAGE_OPTION, "fix the bug"]
    assert rewrite_argv(["-m", "opus", "fix", "it"]) == ["-m", "opus", FIRST_MESSAGE_OPTION, "fix it"]
    assert rewrite_argv(["tasks", "list"]) == ["tasks", "list"]
    assert rewrite_argv(["-C", "proj", "sessions"]) == ["-C", "proj", "sessions"]
    assert rewrite_argv(["-p", "tasks"]) == ["-p", "tasks"]
    assert rewrite_argv(["-r"]) == [PICK_OPTION]
    assert rewrite_argv(["-r", "--yes"]) == [PICK_OPTION, "--yes"]
    assert rewrite_argv(["-r", "2026"]) == ["-r", "2026"]
    assert rewrite_argv(["-c", "--", "-weird start"]) == ["-c", FIRST_MESSAGE_OPTION, "-weird start"]


def test_console_script_mounts_only_the_named_subapp():
    from memagent.cli.main import invoked_subcommand

    assert invoked_subcommand(["tasks", "list"]) == "tasks"
    assert invoked_subcommand(["-C", "tasks", "memory", "list"]) == "memory"  # "tasks" is -C's value
    assert invoked_subcommand(["-p", "tasks"]) is None  # a prompt, not a sub-command
    assert invoked_subcommand(["--yes", "doctor"]) == "doctor"
    assert invoked_subcommand(["taks"]) is None


def test_every_subcommand_runs_through_the_console_script(tmp_path):
    for args in (
        ["tasks", "list", "--json"],
        ["sessions", "list", "--json"],
        ["memory", "--help"],
        ["doctor", "--help"],
    ):
        result = memagent(*args, cwd=tmp_path)
        assert result.returncode == 0, (args, result.stderr)
