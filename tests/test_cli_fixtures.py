"""The CLI fixtures (``cli_fixtures.py``). The warm starter (``warm_cli.py``) gives what a cold
``subprocess.run`` gives: the same exit codes, stdout and stderr, stdin, working directory and
environment, each run in a process of its own. The seeded embedding cache is one the product
takes as it is (it never rebuilds it) and no test can change."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from cli_fixtures import run_cold
from fakeapi import FakeAnthropic, text


@pytest.fixture
def env(cli_env):
    return {**cli_env, "NO_COLOR": "1", "COLUMNS": "100"}


def test_a_warm_run_answers_as_a_cold_one(warm_starters, env, project):
    for args in (["--version"], ["--no-such-flag"], ["tasks", "list", "-C", str(project)], ["trust", "--help"]):
        warm = warm_starters.run(args, env, "", 60)
        assert warm is not None, "the starter refused an ordinary run"
        reference = run_cold(args, env)
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
    reference = run_cold(["--no-such-flag"], seeded)
    assert warm is not None
    assert (warm.returncode, warm.stdout, warm.stderr) == (reference.returncode, reference.stdout, reference.stderr)


def test_a_cli_run_uses_the_seeded_embedding_cache_as_it_is(run_cli, cli_env, project, embedder_cache_seed):
    assert {p.name for p in embedder_cache_seed} >= {"minilm-verified.json"}, "the seed was not built"
    assert any(p.suffix == ".onnx" for p in embedder_cache_seed)
    report = run_cli("-C", str(project), "doctor", "--json", timeout=180)
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["embedding"]["dim"] == 384
    cache = Path(cli_env["MEMAGENT_HOME"]) / "cache"
    for seeded in embedder_cache_seed:
        if seeded.suffix == ".onnx":  # not rebuilt: still the seed's file
            assert os.path.samefile(cache / seeded.name, seeded), f"{seeded.name} was rebuilt"
    assert sorted(p.name for p in cache.iterdir() if p.suffix == ".onnx") == sorted(
        p.name for p in embedder_cache_seed if p.suffix == ".onnx"
    )


def test_a_run_too_large_for_one_message_starts_cold_and_the_starter_keeps_serving(warm_starters, env):
    assert warm_starters.run(["--version", *["x" * 10_000] * 40], env, "", 60) is None
    after = warm_starters.run(["--version"], env, "", 60)
    assert after is not None and after.returncode == 0 and after.stdout.startswith("memagent ")
