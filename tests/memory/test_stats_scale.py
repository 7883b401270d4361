"""`memory stats` costs what `memory list` costs at any size: no card read into Python to find the
most and least used, no listing of the card folders to size the store."""

from __future__ import annotations

import os
from pathlib import Path

from memagent.fsutil import tree_bytes
from memagent.memory.catalog import Catalog


def test_stats_never_reads_every_card_and_keeps_the_usage_order(open_service, monkeypatch):
    service = open_service("s")
    cards = [
        service.save(f"Fact number {i}: the service on port {8000 + i} is the {i}th.", "fact").card for i in range(6)
    ]
    for card, times in zip(cards, (3, 1, 0, 2, 0, 1)):
        for _ in range(times):
            service.note_citations(f"As [Memory#{card.id}] says")

    def whole_store(*_args, **_kwargs):
        raise AssertionError("stats read every card of the store")

    monkeypatch.setattr(Catalog, "all_entries", whole_store)
    stats = service.stats()
    most = [(c["id"], c["uses"]) for c in stats["most_used"]]
    assert most[:2] == [(cards[0].id, 3), (cards[3].id, 2)]
    assert {c["id"] for c in stats["most_used"][2:4]} == {cards[1].id, cards[5].id}
    assert all(c["uses"] > 0 for c in stats["most_used"])
    least = [c["id"] for c in stats["least_used"][:2]]
    assert least == [cards[2].id, cards[4].id]  # never used: the older first
    assert all(isinstance(c["last_used_at"], str) for c in stats["most_used"])
    assert stats["least_used"][0]["last_used_at"] is None


def test_tree_bytes_counts_nested_files_and_never_lists_what_it_skips(tmp_path, monkeypatch):
    (tmp_path / "index" / "deep").mkdir(parents=True)
    (tmp_path / "index" / "a.bin").write_bytes(b"x" * 100)
    (tmp_path / "index" / "deep" / "b.bin").write_bytes(b"y" * 50)
    (tmp_path / "cards").mkdir()
    (tmp_path / "cards" / "m_1.md").write_bytes(b"z" * 1000)
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "big.bin").write_bytes(b"w" * 5000)
    (tmp_path / "link").symlink_to(outside)  # variant: a symlinked folder is not followed
    listed: list[str] = []
    scandir = os.scandir

    def recorded(path):
        listed.append(os.fspath(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", recorded)
    assert tree_bytes(tmp_path, frozenset({tmp_path / "cards"})) == 150
    assert os.fspath(tmp_path / "cards") not in listed
    assert tree_bytes(tmp_path) == 1150
    assert tree_bytes(Path(tmp_path / "missing")) == 0  # variant: a folder that is gone is empty
