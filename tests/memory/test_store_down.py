"""Graceful degradation: unusable stores and embedders give MemoryUnavailable with one line."""

from __future__ import annotations

import numpy as np
import pytest

from memagent.config import Settings
from memagent.memory.service import MemoryService, MemoryUnavailable


def _unavailable(paths, embedder, **kwargs) -> str:
    with pytest.raises(MemoryUnavailable) as info:
        MemoryService.open(paths, Settings(), "s", embedder=embedder, **kwargs)
    message = str(info.value)
    assert message and "\n" not in message
    return message


def test_corrupt_sqlite_file(paths, embedder):
    paths.memory.mkdir()
    (paths.memory / "chroma.sqlite3").write_bytes(b"this is not a database" * 500)
    message = _unavailable(paths, embedder)
    assert str(paths.memory) in message and "not a database" in message


def test_store_path_blocked_by_a_file(paths, embedder):
    paths.memory.write_text("a file where the store directory should be")
    message = _unavailable(paths, embedder)
    assert "not a directory" in message


def test_user_store_under_a_file(paths, embedder, isolated_env):
    (isolated_env / "memory").write_text("not a directory")
    assert "not a directory" in _unavailable(paths, embedder)


class BrokenEmbedder:
    name = "broken/test"
    model_id = "broken"
    dim = 384

    def embed(self, texts):
        raise RuntimeError("onnxruntime session crashed\nwith a long traceback")


class WrongShapeEmbedder(BrokenEmbedder):
    def embed(self, texts):
        return np.zeros((len(texts), 12), dtype=np.float32)


def test_broken_embedder(paths):
    assert "onnxruntime session crashed" in _unavailable(paths, BrokenEmbedder())
    assert "shape" in _unavailable(paths, WrongShapeEmbedder())


def test_embedder_mismatch_then_reindex(open_service, paths, embedder, lexical_embedder):
    service = open_service()
    card = service.save("Deployments need a green CI run first", "constraint").card
    service.close()
    message = _unavailable(paths, lexical_embedder)
    assert "all-MiniLM-L6-v2" in message and "lexical-only" in message and "memagent memory reindex" in message

    lexical = open_service(embedder=lexical_embedder, check_embedder=False)
    assert lexical.reindex() == 1
    lexical.close()
    lexical = open_service(embedder=lexical_embedder)
    hits = lexical.search("deployments green CI")
    assert [h.card.id for h in hits] == [card.id]
    assert hits[0].parts["dense"] == 0.0
    lexical.close()
    assert "memagent memory reindex" in _unavailable(paths, embedder)
    back = open_service(check_embedder=False)
    assert back.reindex() == 1
    back.close()
    restored = open_service()
    assert [h.card.id for h in restored.search("deploy only after CI passes")] == [card.id]


def test_backend_info(service, paths):
    service.save("The user prefers tabs", "preference", "user")
    info = service.backend_info()
    assert info["embedder"]["dim"] == 384 and info["embedder"]["model_id"] == "all-MiniLM-L6-v2"
    assert info["stores"]["project"] == {
        "location": str(paths.memory),
        "index": str(paths.memory / "local" / "index"),
        "remote": False,
        "exists": False,
        "active": 0,
        "inactive": 0,
        "recorded_embedder": None,
    }
    assert info["stores"]["user"]["active"] == 1
    assert info["stores"]["user"]["recorded_embedder"] == "all-MiniLM-L6-v2:384"


def test_reindex_leaves_no_orphan_segments(open_service, paths):
    import sqlite3

    service = open_service()
    service.save("Feature branches are squashed on merge", "decision")
    service.save("Old decision kept for history", "decision", importance=0.2)
    index = paths.memory / "local" / "index"
    before = {p.name for p in index.iterdir() if p.is_dir()}
    assert service.reindex() == 2
    after = {p.name for p in index.iterdir() if p.is_dir()}
    db = sqlite3.connect(index / "chroma.sqlite3")
    live = {row[0] for row in db.execute("SELECT id FROM segments")}
    db.close()
    assert after <= live and not (before & after)
    assert [h.card.content for h in service.search("squash merges")][:1] == ["Feature branches are squashed on merge"]
