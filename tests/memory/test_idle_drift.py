"""Learning triggers from the conversation itself: the REPL left idle learns once per idle
period, a change of topic between consecutive user turns learns once, and neither fires while
the day's automatic-write limit (kept on disk) is reached."""

from __future__ import annotations

import threading
import time

import pytest

from fakeapi import FakeAnthropic
from memagent.agent.feature import TurnInput
from memagent.config import Settings
from memagent.context.conversation import Conversation
from memagent.features.memory import open_memory
from memagent.llm.types import text_block
from memagent.memory.drift import topic_distance
from memagent.memory.learning_history import LearningHistory
from memagent.memory.quota import WriteLedger
from memagent.memory.triggers import IDLE, TOPIC_DRIFT
from memagent.ui.idle import IdleTimer
from memory.learnkit import Brain, Fact
from repl_kit import PROMPT, expect_text, spawn  # noqa: F401  (pytest fixture)

UV = Fact("we always use uv", "The project manages dependencies with uv.", "procedure")
DEPLOY = "How do we deploy the billing service to the staging cluster?"
FONTS = "Which font family should the marketing landing page headline use?"
DEPLOY_AGAIN = "And for the billing service staging deploy, which cluster namespace applies?"


@pytest.fixture
def brain() -> Brain:
    return Brain(facts=[UV])


@pytest.fixture
def fake(brain):  # the pty fixture's fake API, answering as the brain
    with FakeAnthropic(responder=brain) as server:
        yield server


def _runs(project) -> list[str]:
    history = project / ".memory" / "local" / "history.jsonl"
    if not history.exists():
        return []
    import json

    return [r["reason"] for r in map(json.loads, history.read_text().splitlines()) if r.get("kind") == "run"]


def _wait_for(check, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return check()


@pytest.mark.timeout(300)
def test_an_idle_repl_learns_once_per_idle_period(spawn, cli_env, project, brain):  # noqa: F811
    cli_env.update({"MEMAGENT_MEMORY_IDLE_SECONDS": "2", "MEMAGENT_EMBEDDER": "lexical"})
    child = spawn(memory=True)
    expect_text(child, PROMPT)
    child.sendline("Note: we always use uv for this project.")
    expect_text(child, "unexpected request")
    assert _wait_for(lambda: _runs(project) == [IDLE]), _runs(project)
    time.sleep(5)  # more idle time: the same idle period, nothing new to learn
    assert _runs(project) == [IDLE] and len(brain.extraction_prompts) == 1
    child.sendline("Thanks; and we always use uv with a lock file for this project.")  # the same topic
    expect_text(child, "unexpected request")
    assert _wait_for(lambda: _runs(project) == [IDLE, IDLE]), _runs(project)  # a new idle period, new turns
    child.sendeof()
    child.expect(__import__("pexpect").EOF, timeout=120)
    assert _runs(project) == [IDLE, IDLE]  # the session end found nothing unmined


@pytest.mark.timeout(300)
def test_a_topic_change_between_turns_learns_once_and_same_topic_does_not(
    spawn,
    cli_env,
    project,  # noqa: F811
    brain,
):
    cli_env.update({"MEMAGENT_MEMORY_IDLE_SECONDS": "0", "MEMAGENT_EMBEDDER": "lexical"})
    child = spawn(memory=True)
    expect_text(child, PROMPT)
    for words in (DEPLOY, DEPLOY_AGAIN):
        child.sendline(words)
        expect_text(child, "unexpected request")
    time.sleep(2)
    assert _runs(project) == []  # the same topic twice: no trigger
    child.sendline(FONTS)
    expect_text(child, "unexpected request")
    assert _wait_for(lambda: _runs(project) == [TOPIC_DRIFT]), _runs(project)
    child.sendeof()
    child.expect(__import__("pexpect").EOF, timeout=120)
    assert _runs(project) == [TOPIC_DRIFT]


def _feature(paths, model, embedder, monkeypatch, **settings):
    import memagent.embedding.embedders as embeddings_module

    monkeypatch.setattr(embeddings_module, "load_embedder", lambda *args, **kwargs: embedder)
    opening = open_memory(
        paths,
        Settings(extract_every_turns=0, **settings),
        "sess-d",
        model=model,
        record=lambda r: None,
        processed_ids=set(),
        current_task=lambda: None,
        warn=print,
    )
    return opening.feature


def _turn(feature, conversation, words: str) -> None:
    feature.turn_context(TurnInput(text=words, messages=list(conversation.messages)))
    conversation.append("user", [text_block(words)])
    conversation.append("assistant", [text_block("Noted.")])
    feature.after_turn(conversation)


def test_the_daily_limit_on_disk_bounds_drift_and_idle_triggers(paths, model, embedder, monkeypatch):
    feature = _feature(paths, model, embedder, monkeypatch, memory_auto_writes_per_day=2)
    ledger = WriteLedger.of_store(paths.memory)
    for _ in range(2):
        ledger.add("an-earlier-p-run")  # another process used up today's allowance
    conversation = Conversation()
    _turn(feature, conversation, DEPLOY)
    _turn(feature, conversation, FONTS)
    assert feature.on_idle() is False
    feature.learner.drain(60)
    assert LearningHistory.for_paths(paths).records("run") == []
    feature.close()


def test_a_drift_learns_under_the_limit_and_the_next_idle_finds_nothing_new(paths, model, embedder, monkeypatch):
    feature = _feature(paths, model, embedder, monkeypatch)
    conversation = Conversation()
    _turn(feature, conversation, DEPLOY)
    _turn(feature, conversation, FONTS)
    feature.learner.drain(60)
    assert feature.on_idle() is False  # everything was mined at the drift
    feature.learner.drain(60)
    assert [r["reason"] for r in LearningHistory.for_paths(paths).records("run")] == [TOPIC_DRIFT]
    feature.close()


def test_topic_distance_lexically_and_with_an_embedder(embedder):
    assert topic_distance(DEPLOY, FONTS) == 1.0
    assert topic_distance(DEPLOY, DEPLOY_AGAIN) < 0.85
    assert topic_distance("thanks!", FONTS) is None and topic_distance(DEPLOY, "yes, go on") is None
    embed = lambda texts: embedder.embed(list(texts)).tolist()  # noqa: E731
    assert topic_distance(DEPLOY, FONTS, embed) > topic_distance(DEPLOY, DEPLOY_AGAIN, embed)


def test_measuring_drift_never_loads_the_embedder(paths):
    from memagent.memory.service import MemoryService

    service = MemoryService.open(paths, Settings(embedder="onnx"), "s-drift")  # loads on first use
    try:
        assert service.topic_distance(DEPLOY, FONTS) == 1.0  # measured lexically meanwhile
        assert not service.core.embedder_handle.loaded
    finally:
        service.close()


def test_the_idle_timer_fires_once_and_input_cancels_it():
    fired = []
    done = threading.Event()
    timer = IdleTimer(0.2, lambda: (fired.append(1), done.set()))
    timer.waiting()
    assert done.wait(5)
    time.sleep(0.5)
    assert fired == [1]
    timer.waiting()
    timer.active()  # a line arrived before the idle time passed
    time.sleep(0.5)
    assert fired == [1]
    IdleTimer(0, lambda: fired.append(2)).waiting()  # 0 seconds: never
    time.sleep(0.3)
    assert fired == [1]
