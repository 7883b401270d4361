"""Fixtures for the learning tests: a real memory service on a temp project, the real Anthropic
adapter pointed at the loopback fake API, and a scripted "brain" that plays the extractor and
the consolidator by rules over the requests it receives."""

from __future__ import annotations

import pytest

from memagent.config import ProjectPaths, Settings, project_paths
from memory_learning.learnkit import Brain


@pytest.fixture(scope="session")
def embedder(tmp_path_factory):
    from memagent.memory.embeddings import load_embedder

    loaded = load_embedder("onnx", cache_dir=tmp_path_factory.mktemp("onnx-graph"))
    assert loaded.dim == 384, f"MiniLM weights are not usable here: {loaded.fallback_reasons}"
    return loaded


@pytest.fixture
def paths(tmp_path, isolated_env) -> ProjectPaths:
    root = tmp_path / "project"
    root.mkdir()
    return project_paths(root)


@pytest.fixture
def open_service(paths, embedder):
    from memagent.memory.service import MemoryService

    opened = []

    def factory(session_id: str = "s1"):
        service = MemoryService.open(paths, Settings(), session_id, embedder=embedder)
        opened.append(service)
        return service

    yield factory
    for service in opened:
        service.close()


@pytest.fixture
def service(open_service):
    return open_service()


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


