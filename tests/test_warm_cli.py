"""The warm starter of the CLI (``warm_cli.py``) gives what a cold ``subprocess.run`` gives: the
same exit codes, stdout and stderr, stdin, working directory, environment and umask — each run
in a process of its own — and it hands back to a cold start what a fork cannot reproduce."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from fakeapi import FakeAnthropic, text


def cold(args, env, input="", cwd=None, timeout=60):
    return subprocess.run(
        [sys.executable, "-m", "memagent", *args],
        env=env,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )


@pytest.fixture
def env(cli_env):
    return {**cli_env, "NO_COLOR": "1", "COLUMNS": "100"}


def test_a_warm_run_answers_as_a_cold_one(warm_starters, env, project):
    for args in (["--version"], ["--no-such-flag"], ["tasks", "list", "-C", str(project)], ["trust", "--help"]):
        warm = warm_starters.run(args, env, "", 60)
        assert warm is not None, "the starter refused an ordinary run"
        reference = cold(args, env)
        assert (warm.returncode, warm.stdout, warm.stderr) == (reference.returncode, reference.stdout, reference.stderr)
        assert warm.args == reference.args


def test_a_warm_print_run_reads_stdin_and_writes_in_its_own_process_and_folder(warm_starters, env, project):
    with FakeAnthropic() as fake:
        fake.add(text("a"), text("b"))
        run_env = {**env, "ANTHROPIC_BASE_URL": fake.url}
        args = ["-p", "-", "--no-memory", "--output-format", "json"]
        warm = warm_starters.run(args, run_env, "the question from stdin\n", 60, cwd=project)
        second = warm_starters.run(args, run_env, "another one\n", 60, cwd=project)
        assert fake.remaining == 0
    assert warm is not None and second is not None
    assert warm.returncode == 0, warm.stderr
    first_id, second_id = (json.loads(run.stdout)["session_id"] for run in (warm, second))
    assert first_id != second_id
    assert "the question from stdin" in str(fake.requests[0]["messages"])
    transcripts = list((project / ".transcripts").glob("*.jsonl"))
    assert len(transcripts) == 2, "each run wrote its transcript in the folder it ran in"


def test_a_run_past_its_timeout_is_killed_and_the_next_run_is_served(warm_starters, env):
    never = {**env, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}  # refused: the SDK retries with backoff
    with pytest.raises(subprocess.TimeoutExpired):
        warm_starters.run(["-p", "hi", "--no-memory"], never, "", 0.2)
    after = warm_starters.run(["--version"], env, "", 60)
    assert after is not None and after.returncode == 0 and after.stdout.startswith("memagent ")


def test_other_start_up_variables_get_a_starter_of_their_own(warm_starters, env):
    seeded = {**env, "PYTHONHASHSEED": "7", "LANG": "C.UTF-8"}
    warm = warm_starters.run(["--no-such-flag"], seeded, "", 60)
    reference = cold(["--no-such-flag"], seeded)
    assert warm is not None
    assert (warm.returncode, warm.stdout, warm.stderr) == (reference.returncode, reference.stdout, reference.stderr)
