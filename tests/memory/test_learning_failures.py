"""Memory says what it did: an extraction or consolidation that fails is counted, shown when the
session ends, and reported by ``memagent memory stats`` and ``memagent doctor`` — never counted
as a run that simply found nothing."""

from __future__ import annotations

import json

import pytest

from fakeapi import FakeAnthropic, error
from fakeapi.server import is_memory_extraction
from memory.learnkit import message_step, request_text

LEXICAL = {"MEMAGENT_EMBEDDER": "lexical"}
PROMPT = "Remember that we always deploy with make ship from the release branch."


def _run_session(run_cli, project, extraction, consolidation=None):
    """One ``-p`` session whose extraction requests ``extraction(prompt)`` answers (a string is
    sent as the answer text, a dict as a whole step, e.g. an HTTP error)."""

    def respond(body):
        system, prompt = request_text(body)
        if is_memory_extraction(body):
            answer = extraction(prompt)
            return answer if isinstance(answer, dict) else message_step(answer)
        if "CONTRADICT" in system and consolidation is not None:
            return message_step(consolidation(prompt))
        return message_step("Noted: make ship from the release branch.")

    with FakeAnthropic(responder=respond) as fake:
        result = run_cli("-C", str(project), "-p", PROMPT, env={"ANTHROPIC_BASE_URL": fake.url, **LEXICAL}, timeout=180)
    return result, fake


def _stats(run_cli, project) -> dict:
    result = run_cli("-C", str(project), "memory", "stats", "--json", env=LEXICAL)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["learning"]


@pytest.mark.timeout(600)  # real CLI runs: slow on a loaded machine
def test_malformed_extraction_json_is_a_failure_shown_at_exit_in_stats_and_in_doctor(run_cli, project):
    result, fake = _run_session(run_cli, project, lambda prompt: '{"memories": [{"content": "cut off')
    assert result.returncode == 0, result.stderr
    assert "memory learning: 1 of 1 extraction run failed" in result.stderr
    assert "unusable twice" in result.stderr and "memagent memory stats" in result.stderr
    stats = _stats(run_cli, project)
    assert (stats["extraction_runs"], stats["failed_runs"]) == (1, 1)
    text = run_cli("-C", str(project), "memory", "stats", env=LEXICAL).stdout
    assert "1 extraction runs (1 failed)" in text and "last failure:" in text
    doctor = run_cli("-C", str(project), "doctor", env=LEXICAL)
    assert "1 extraction run, 1 failed" in doctor.stdout and "last failure" in doctor.stdout
    extraction_calls = [r for r in fake.requests if is_memory_extraction(r)]
    assert len(extraction_calls) == 2  # one retry inside the run; an unusable answer is not retried again


@pytest.mark.timeout(600)  # real CLI runs: slow on a loaded machine
def test_an_api_error_during_extraction_is_counted_too(run_cli, project):
    result, _ = _run_session(run_cli, project, lambda prompt: error(400, "invalid request: prompt too odd"))
    assert result.returncode == 0, result.stderr
    assert "memory learning: 2 of 2 extraction runs failed" in result.stderr  # a model error is retried once
    stats = _stats(run_cli, project)
    assert stats["failed_runs"] == 2 and "prompt too odd" in stats["last_failure"]


@pytest.mark.timeout(600)  # real CLI runs: slow on a loaded machine
def test_an_unusable_consolidation_answer_is_counted(run_cli, project):
    # a first session stores the card; the second changes it in a way the correction rule cannot
    # read from the words (another branch, another phrasing), so consolidation is asked
    card = {
        "content": "The project deploys with make ship from the release branch.",
        "memory_type": "procedure",
        "scope": "project",
        "confidence": 0.9,
        "quote": "we always deploy with make ship from the release branch",
    }
    other = dict(card, content="Deploying the project is done with make ship from the main branch.")
    answers = iter([json.dumps({"memories": [card]}), json.dumps({"memories": [other]})])
    first, _ = _run_session(run_cli, project, lambda prompt: next(answers))
    assert first.returncode == 0 and "memory learning" not in first.stderr, first.stderr
    second, _ = _run_session(run_cli, project, lambda prompt: next(answers), consolidation=lambda prompt: "no idea")
    assert second.returncode == 0, second.stderr
    assert "consolidation answer was unusable" in second.stderr
    stats = _stats(run_cli, project)
    assert stats["consolidation_failed"] == 1 and stats["failed_runs"] == 0
