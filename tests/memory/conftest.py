"""Fixtures for the memory tests: store and service (the embedder and services come from
``tests/memory_fixtures.py``), one embedder per backend for the engine tests, and for the
learning tests a real service, the real Anthropic adapter pointed at the loopback fake API, and a
scripted "brain" that plays the extractor and the consolidator (``learnkit.py``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from memagent.config import Settings
from memagent.embedding.embedders import load_embedder
from memory.learnkit import Brain


@pytest.fixture
def lexical_embedder():
    from memagent.embedding.embedders import LexicalOnlyEmbedder

    return LexicalOnlyEmbedder()


def _files_containing(needle: bytes, *dirs: Path) -> list[Path]:
    """Every file under ``dirs`` whose raw bytes contain ``needle`` (case-insensitively for ASCII)."""
    hits = []
    lowered = needle.lower()
    for directory in dirs:
        if not directory.exists():
            continue
        for path in directory.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                if needle in data or lowered in data.lower():
                    hits.append(path)
    return hits


@pytest.fixture
def files_containing():
    """``files_containing(needle, *dirs)``: a raw byte search over every file under ``dirs``."""
    return _files_containing


# --- engine: one embedder per test session (hashing 90 MB and building the ONNX graph is slow)
@pytest.fixture(scope="session")
def graph_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="session")
def onnx_embedder(graph_cache):
    embedder = load_embedder("onnx", cache_dir=graph_cache)
    assert embedder.name == "all-MiniLM-L6-v2/onnx", embedder.fallback_reasons
    return embedder


@pytest.fixture(scope="session")
def int8_embedder(graph_cache):
    embedder = load_embedder("int8", cache_dir=graph_cache)
    assert embedder.name == "all-MiniLM-L6-v2/onnx-int8", embedder.fallback_reasons
    return embedder


@pytest.fixture(scope="session")
def numpy_embedder():
    embedder = load_embedder("numpy")
    assert embedder.name == "all-MiniLM-L6-v2/numpy", embedder.fallback_reasons
    return embedder


# --- learning
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
    from memagent.memory.learning_history import LearningHistory

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


@pytest.fixture
def stocked(service, paths, onnx_cache):
    """A project with cards and a vector index, and the embedding graphs already cached."""
    service.save("Deploys go out on Tuesdays after the standup", "procedure")
    service.save("The parser tests must pass before any deploy", "constraint")
    service.close()
    cache = paths.home / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    for item in onnx_cache.iterdir():
        shutil.copy2(item, cache / item.name)
    return paths
