"""The background learner: never delays the caller, retries once, never raises into the session."""

from __future__ import annotations

import time

import pytest

from fakeapi import delay, error, text
from memagent.config import Settings
from memagent.llm.scripted import FunctionModel
from memagent.llm.types import ModelError
from memagent.memory.learning import BackgroundLearner, LearningError, LearningPipeline, should_extract
from memory.learnkit import Fact, Session, all_cards, assistant, user


def _session() -> Session:
    session = Session()
    session.add(user("Heads up: the CI runs on GitHub Actions."), assistant("ok"))
    return session


def test_submit_returns_at_once_and_drain_waits(brain, fake, make_pipeline, service):
    brain.facts = [Fact("the CI runs on GitHub Actions", "The project's CI runs on GitHub Actions.", "fact")]
    fake.add(
        delay(
            3.0,
            text(
                '{"memories": [{"content": "The project\'s CI runs on GitHub Actions.", '
                '"memory_type": "fact", "scope": "project", "confidence": 0.9, '
                '"importance": 0.5, "files": [], "quote": "the CI runs on GitHub Actions"}]}'
            ),
        )
    )
    learner = BackgroundLearner(make_pipeline())
    session = _session()
    started = time.monotonic()
    assert learner.submit(session.messages, session.ids, "turns") is True
    assert time.monotonic() - started < 1.0  # far less than the model's 3 s: the reply is never delayed
    assert learner.busy
    assert learner.drain(0.05) is False  # bounded: gives up when the time is up
    assert learner.drain(20) is True
    assert [c.content for c in all_cards(service)] == ["The project's CI runs on GitHub Actions."]
    assert learner.close(5) is True


def test_a_failure_is_retried_once_and_logged(brain, fake, make_pipeline, service):
    brain.facts = [Fact("the CI runs on GitHub Actions", "The project's CI runs on GitHub Actions.", "fact")]
    fake.add(error(500, "boom"))
    learner = BackgroundLearner(make_pipeline(), retry_delay=0.01)
    session = _session()
    learner.submit(session.messages, session.ids, "turns")
    assert learner.drain(20)
    assert len(learner.warnings) == 1 and "attempt 1" in learner.warnings[0]
    assert len(learner.reports) == 1 and len(learner.reports[0].stored) == 1
    assert len(all_cards(service)) == 1


def test_two_failures_are_logged_never_raised_and_leave_messages_unprocessed(make_pipeline, service, history):
    calls = []

    def broken(request):
        calls.append(request)
        raise ModelError("overloaded")

    pipeline = make_pipeline(model=FunctionModel(broken))
    learner = BackgroundLearner(pipeline, retry_delay=0.01)
    session = _session()
    learner.submit(session.messages, session.ids, "turns")
    assert learner.drain(10)
    assert len(calls) == 2 and len(learner.warnings) == 2
    assert pipeline.processed_ids == frozenset()  # the session-end run may still mine them
    assert all_cards(service) == []
    runs = history.records("run")
    assert [r["error"] for r in runs] == ["ModelError: overloaded", "ModelError: overloaded"]


def test_memory_off_is_a_logged_failure(model, history):
    pipeline = LearningPipeline(model, lambda: None, session_id="s", settings=Settings(), history=history)
    learner = BackgroundLearner(pipeline, retry_delay=0.0)
    session = _session()
    learner.submit(session.messages, session.ids, "turns")
    assert learner.drain(10)
    assert learner.warnings and "memory is off" in learner.warnings[-1]


def test_should_extract_every_n_user_turns():
    settings = Settings(extract_every_turns=10)
    assert not should_extract(9, settings)
    assert should_extract(10, settings)
    assert not should_extract(50, Settings(extract_every_turns=0))


def test_report_counts_tokens_and_summarises(brain, make_pipeline):
    brain.facts = [Fact("the CI runs on GitHub Actions", "The project's CI runs on GitHub Actions.", "fact")]
    report = make_pipeline().process(_session().messages, ["1", "2"], "turns")
    assert report.model_calls == 1 and report.input_tokens > 100
    assert report.summary() == "learned 1 memory"


def test_a_long_slice_is_sent_in_parts_and_a_failed_part_stays_unprocessed(brain, fake, make_pipeline, service):
    records = []
    pipeline = make_pipeline(record=records.append, slice_tokens=50)
    session = _session()
    session.add(user("second part: " + "p" * 150), assistant("ok"))
    session.add(user("third part: " + "t" * 150), assistant("ok"))

    def fail_third(prompt):
        if "third part" in prompt:
            raise RuntimeError("scripted failure")  # the fake answers 500
        return '{"memories": []}'

    brain.extraction_answer = fail_third
    with pytest.raises(LearningError):
        pipeline.process(session.messages, session.ids, "turns")
    fake.errors.clear()  # the responder's failure is reported by the fake server on purpose
    assert [r["ids"] for r in records] == [["1", "2"], ["3", "4"]]
    assert pipeline.processed_ids == frozenset({"1", "2", "3", "4"})
    assert len(brain.extraction_prompts) == 3
    assert "third part" in brain.extraction_prompts[2] and "second part" not in brain.extraction_prompts[2]
