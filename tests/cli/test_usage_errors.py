"""Usage errors from the real console script: one line on stderr, exit 2, no traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest


def memagent(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from memagent.cli.main import run; run()", *args],
        cwd=cwd, capture_output=True, text=True, timeout=60,
    )


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--bogus"], "No such option: --bogus"),
        (["tasks", "show"], "Missing argument 'ID'"),
        (["tasks", "show", "abc"], "Invalid value for 'ID'"),
        (["tasks", "nosuch"], "No such command 'nosuch'"),
        (["-p"], "Option '-p' requires an argument"),
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
    version = memagent("--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.startswith("memagent ")


def test_console_script_mounts_only_the_named_subapp():
    from memagent.cli.main import invoked_subcommand

    assert invoked_subcommand(["tasks", "list"]) == "tasks"
    assert invoked_subcommand(["-C", "tasks", "memory", "list"]) == "memory"  # "tasks" is -C's value
    assert invoked_subcommand(["-p", "tasks"]) is None  # a prompt, not a sub-command
    assert invoked_subcommand(["--yes", "doctor"]) == "doctor"
    assert invoked_subcommand(["taks"]) is None


def test_every_subcommand_runs_through_the_console_script(tmp_path):
    for args in (["tasks", "list", "--json"], ["sessions", "list", "--json"], ["memory", "--help"], ["doctor", "--help"]):
        result = memagent(*args, cwd=tmp_path)
        assert result.returncode == 0, (args, result.stderr)
