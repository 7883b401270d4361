"""Fixtures shared by every memory test directory: one real MiniLM embedder per test session,
a temp project, and real MemoryService instances on it (closed at teardown)."""

from __future__ import annotations

import pytest

from memagent.config import ProjectPaths, Settings, project_paths


@pytest.fixture(scope="session")
def onnx_cache(tmp_path_factory):
    """Where the ONNX graph is cached for this test session (subprocesses may reuse it)."""
    return tmp_path_factory.mktemp("onnx-graph")


@pytest.fixture(scope="session")
def embedder(onnx_cache):
    """The real MiniLM embedder (ONNX), loaded once; its graph cache lives in a temp dir."""
    from memagent.embedding.embedders import load_embedder

    loaded = load_embedder("onnx", cache_dir=onnx_cache)
    assert loaded.dim == 384, f"MiniLM weights are not usable here: {loaded.fallback_reasons}"
    import chromadb  # noqa: F401  (imported once here: its import takes seconds on a busy machine)

    return loaded


@pytest.fixture
def paths(tmp_path, isolated_env) -> ProjectPaths:
    root = tmp_path / "project"
    root.mkdir()
    return project_paths(root)


@pytest.fixture
def open_service(paths, embedder):
    """Open services on ``paths``; keyword arguments go to ``MemoryService.open``."""
    from memagent.memory.service import MemoryService

    opened = []

    def factory(session_id: str = "s1", **kwargs):
        kwargs.setdefault("embedder", embedder)
        settings = kwargs.pop("settings", Settings())
        service = MemoryService.open(kwargs.pop("paths", paths), settings, session_id, **kwargs)
        opened.append(service)
        return service

    yield factory
    for service in opened:
        service.close()


@pytest.fixture
def service(open_service):
    return open_service()
