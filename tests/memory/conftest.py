"""Shared fixtures for the memory store/service tests: one embedder for the whole session."""

from __future__ import annotations

from pathlib import Path

import pytest

from memagent.config import ProjectPaths, Settings, project_paths


@pytest.fixture(scope="session")
def embedder(tmp_path_factory):
    """The real MiniLM embedder (ONNX), loaded once; its graph cache lives in a temp dir."""
    from memagent.memory.embeddings import load_embedder

    loaded = load_embedder("onnx", cache_dir=tmp_path_factory.mktemp("onnx-graph"))
    assert loaded.dim == 384, f"MiniLM weights are not usable here: {loaded.fallback_reasons}"
    return loaded


@pytest.fixture
def lexical_embedder():
    from memagent.memory.embeddings import LexicalOnlyEmbedder

    return LexicalOnlyEmbedder()


@pytest.fixture
def paths(tmp_path, isolated_env) -> ProjectPaths:
    root = tmp_path / "project"
    root.mkdir()
    return project_paths(root)


@pytest.fixture
def open_service(paths, embedder):
    """Open services on ``paths`` (closed at teardown); keyword arguments go to ``open``."""
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
