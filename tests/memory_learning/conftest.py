"""Fixtures for the learning tests: a real memory service on a temp project, the real Anthropic
adapter pointed at the loopback fake API, and a scripted "brain" that plays the extractor and
the consolidator by rules over the requests it receives."""

from __future__ import annotations

import pytest

from memagent.config import Settings
from memory_learning.learnkit import Brain


@pytest.fixture
def brain():
    return Brain()


@pytest.fixture
def fake(brain):
    from fakeapi import FakeAnthropic

    with FakeAnthropic(responder=brain, api_key="test") as server:
        yield server
    assert server.errors == [], server.errors


@pytest.fixture
def model(fake):
    from memagent.llm.anthropic import AnthropicModel

    return AnthropicModel("claude-haiku-4-5", api_key="test", base_url=fake.url, max_retries=0, timeout=20)


@pytest.fixture
def history(paths):
    from memagent.memory.history import LearningHistory

    return LearningHistory.for_paths(paths)


@pytest.fixture
def make_pipeline(model, service, history):
    from datetime import date

    from memagent.memory.learning import LearningPipeline

    def factory(**kwargs):
        kwargs.setdefault("session_id", "sess-1")
        kwargs.setdefault("session_date", date(2026, 11, 21))
        kwargs.setdefault("settings", Settings())
        kwargs.setdefault("history", history)
        return LearningPipeline(kwargs.pop("model", model), kwargs.pop("service", service), **kwargs)

    return factory


