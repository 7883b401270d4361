"""One embedder per test session: loading (hashing 90 MB, building the ONNX graph) is the slow part."""

from __future__ import annotations

from pathlib import Path

import pytest

from memagent.memory.embeddings import load_embedder


@pytest.fixture(scope="session")
def graph_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="session")
def onnx_embedder(graph_cache):
    embedder = load_embedder("onnx", cache_dir=graph_cache)
    assert embedder.name == "all-MiniLM-L6-v2/onnx", embedder.fallback_reasons
    return embedder


@pytest.fixture(scope="session")
def numpy_embedder():
    embedder = load_embedder("numpy")
    assert embedder.name == "all-MiniLM-L6-v2/numpy", embedder.fallback_reasons
    return embedder
