"""The int8 mirror file of a vector index on its own: exact ranking, batches and commits, other
writers, torn and hostile files (``memory.flat_mirror``)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from memagent.memory.flat_mirror import (
    HEADER_SIZE,
    MIRROR_FILE,
    FlatMirror,
    MirrorEmbedder,
    StaleMirror,
    committed_generation,
    record_dtype,
)

DIM = 32
EMBEDDER = MirrorEmbedder("test-model@int8", "test-model/int8", DIM)


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    rows = rng.standard_normal((n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _fresh(folder, items, generation: int = 1) -> FlatMirror:
    mirror = FlatMirror(folder, EMBEDDER)
    mirror.replace(items, generation)
    return mirror


def _ids(hits) -> list[str]:
    return [card_id for card_id, _ in hits]


def test_the_mirror_ranks_as_exact_cosine_does(tmp_path):
    rng = np.random.default_rng(3)
    vectors = _unit(rng, 3000)
    _fresh(tmp_path, [(f"m_{i:012x}", vectors[i], i % 5 != 0) for i in range(3000)])
    queries = _unit(rng, 20)
    exact = queries @ vectors.T
    exact[:, [i for i in range(3000) if i % 5 == 0]] = -np.inf  # inactive rows are not searched
    reader = FlatMirror(tmp_path, EMBEDDER)
    assert reader.load(1)
    for _query, row, hits in zip(queries, exact, reader.search(queries, 10, inactive=False)):
        best = np.argsort(-row)[:10]
        assert len(hits) == 10
        for (_card_id, similarity), index in zip(hits, best):
            assert abs(similarity - row[index]) < 0.01
        assert np.mean([card_id in {f"m_{i:012x}" for i in best} for card_id in _ids(hits)]) >= 0.9
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
        assert _ids(hits)[0] == f"m_{best[0]:012x}" or abs(row[best[0]] - row[best[1]]) < 0.01
    inactive = reader.search(queries[:1], 3000, inactive=True)[0]
    assert sorted(_ids(inactive)) == sorted(f"m_{i:012x}" for i in range(0, 3000, 5))


def test_more_wanted_than_held_returns_what_there_is(tmp_path):
    rng = np.random.default_rng(4)
    vectors = _unit(rng, 3)
    mirror = _fresh(tmp_path, [("a", vectors[0], True), ("b", vectors[1], True), ("c", vectors[2], False)])
    assert sorted(_ids(mirror.search([vectors[0]], 10, inactive=False)[0])) == ["a", "b"]
    assert mirror.search([vectors[0]], 0, inactive=False) == [[]]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _fresh(empty, []).search([vectors[0]], 5, inactive=False) == [[]]


def test_a_later_record_wins_and_a_delete_removes(tmp_path):
    rng = np.random.default_rng(5)
    a, b, c, d = _unit(rng, 4)
    writer = _fresh(tmp_path, [("a", a, True), ("b", b, True), ("c", c, True)])
    writer.write([("b", b, False), ("d", d, True), ("a", d, True)], deletes=["c"])
    writer.commit(2)
    reader = FlatMirror(tmp_path, EMBEDDER)
    assert reader.load(2)
    assert reader.counts() == (2, 1)
    assert _ids(reader.search([d], 2, inactive=False)[0]) in (["a", "d"], ["d", "a"])
    assert _ids(reader.search([b], 5, inactive=True)[0]) == ["b"]
    assert "c" not in _ids(reader.search([c], 5, inactive=False)[0])


def test_records_after_the_last_commit_are_not_read(tmp_path):
    rng = np.random.default_rng(6)
    a, b = _unit(rng, 2)
    writer = _fresh(tmp_path, [("a", a, True)])
    writer.write([("b", b, True)])  # the process dies before it commits
    assert committed_generation(tmp_path / MIRROR_FILE) is None
    reader = FlatMirror(tmp_path, EMBEDDER)
    assert reader.load(1) and reader.counts() == (1, 0)
    assert not FlatMirror(tmp_path, EMBEDDER).load(2)


def test_a_torn_tail_is_ignored_and_cut_by_the_next_writer(tmp_path):
    rng = np.random.default_rng(7)
    a, b = _unit(rng, 2)
    _fresh(tmp_path, [("a", a, True)])
    with open(tmp_path / MIRROR_FILE, "ab") as fh:
        fh.write(b"\x01torn" * 9)
    assert committed_generation(tmp_path / MIRROR_FILE) is None  # not whole records: look closer
    writer = FlatMirror(tmp_path, EMBEDDER)
    assert writer.load(1) and writer.counts() == (1, 0)
    writer.write([("b", b, True)])
    writer.commit(2)
    size = (tmp_path / MIRROR_FILE).stat().st_size
    assert (size - HEADER_SIZE) % record_dtype(DIM).itemsize == 0
    assert committed_generation(tmp_path / MIRROR_FILE) == 2
    reader = FlatMirror(tmp_path, EMBEDDER)
    assert reader.load(2) and reader.counts() == (2, 0)


def test_a_writer_that_missed_another_writers_commit_is_stale(tmp_path):
    rng = np.random.default_rng(8)
    a, b, c = _unit(rng, 3)
    _fresh(tmp_path, [("a", a, True)])
    first, second = FlatMirror(tmp_path, EMBEDDER), FlatMirror(tmp_path, EMBEDDER)
    assert first.load(1) and second.load(1)
    first.write([("b", b, True)])
    first.commit(2)
    with pytest.raises(StaleMirror):
        second.write([("c", c, True)])
    assert second.refresh(2) and second.held() == {"a": True, "b": True}
    second.write([("c", c, True)])
    second.commit(3)
    assert first.refresh(3) and first.held() == {"a": True, "b": True, "c": True}


def test_a_replaced_file_is_read_afresh(tmp_path):
    rng = np.random.default_rng(9)
    a, b = _unit(rng, 2)
    _fresh(tmp_path, [("a", a, True)])
    reader = FlatMirror(tmp_path, EMBEDDER)
    assert reader.load(1)
    _fresh(tmp_path, [("b", b, True)], generation=5)  # a rebuild by another process
    assert reader.refresh(5) and reader.held() == {"b": True}
    assert not reader.refresh(6) and not reader.loaded


def test_a_foreign_torn_or_linked_file_is_never_read(tmp_path):
    rng = np.random.default_rng(10)
    good = tmp_path / "good"
    good.mkdir()
    _fresh(good, [("a", _unit(rng, 1)[0], True)])
    cases = {
        "random": os.urandom(HEADER_SIZE + 3 * record_dtype(DIM).itemsize),
        "other model": (good / MIRROR_FILE).read_bytes().replace(b"test-model@int8", b"test-model@fp32"),
        "short": (good / MIRROR_FILE).read_bytes()[: HEADER_SIZE - 1],
        "empty": b"",
    }
    for name, data in cases.items():
        folder = tmp_path / name.replace(" ", "-")
        folder.mkdir()
        (folder / MIRROR_FILE).write_bytes(data)
        assert not FlatMirror(folder, EMBEDDER).load(1), name
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / MIRROR_FILE).symlink_to(good / MIRROR_FILE)
    assert not FlatMirror(linked, EMBEDDER).load(1)
    assert committed_generation(linked / MIRROR_FILE) is None
    assert committed_generation(tmp_path / "random" / MIRROR_FILE) is None


def test_an_id_the_format_cannot_hold_removes_the_mirror(tmp_path):
    rng = np.random.default_rng(11)
    mirror = _fresh(tmp_path, [("a", _unit(rng, 1)[0], True)])
    assert not mirror.write([("m_" + "x" * 80, _unit(rng, 1)[0], True)])
    assert not (tmp_path / MIRROR_FILE).exists() and not mirror.loaded
    assert not FlatMirror(tmp_path, EMBEDDER).replace([("é", _unit(rng, 1)[0], True)], 1)


def test_the_file_is_compacted_when_most_records_are_dead(tmp_path):
    rng = np.random.default_rng(12)
    vectors = _unit(rng, 10)
    mirror = _fresh(tmp_path, [(f"c{i}", vectors[i], True) for i in range(10)])
    record = record_dtype(DIM).itemsize
    for generation in range(2, 502):
        mirror.write([(f"c{i}", vectors[(i + generation) % 10], True) for i in range(10)])
        mirror.commit(generation)
    size = (tmp_path / MIRROR_FILE).stat().st_size
    assert size < HEADER_SIZE + 4100 * record  # 5,000 upserts written; compacted on the way
    reader = FlatMirror(tmp_path, EMBEDDER)
    assert reader.load(501) and reader.counts() == (10, 0)
    hit = reader.search([vectors[(3 + 501) % 10]], 1, inactive=False)[0][0]
    assert hit[0] == "c3" and hit[1] > 0.99


def test_a_mirror_committed_past_the_generation_asked_for_is_read(tmp_path):
    """A writer may finish its next batch between a reader's look at the catalog and its read
    of the mirror: the newer rows are read, never thrown away for Chroma."""
    rng = np.random.default_rng(13)
    a, b = _unit(rng, 2)
    writer = _fresh(tmp_path, [("a", a, True)])
    reader = FlatMirror(tmp_path, EMBEDDER)
    assert reader.load(1)
    writer.write([("b", b, True)])
    writer.commit(2)
    assert reader.refresh(1) and reader.held() == {"a": True}  # asked for 1: nothing to read yet
    assert FlatMirror(tmp_path, EMBEDDER).load(1)
    late = FlatMirror(tmp_path, EMBEDDER)
    assert late.load(1) and late.generation == 2 and late.held() == {"a": True, "b": True}
    assert reader.refresh(2) and reader.held() == {"a": True, "b": True}
    assert not FlatMirror(tmp_path, EMBEDDER).load(3)
