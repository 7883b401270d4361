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


def _plans_of_stats(service) -> list[tuple[str, str]]:
    """(statement, query plan) of every SELECT ``stats`` runs on the project catalog."""
    service.stats()  # opened and synced: what follows is stats' own work
    db = service.core.stores["project"].catalog.db()
    seen: list[str] = []
    db.set_trace_callback(seen.append)
    try:
        service.stats()
    finally:
        db.set_trace_callback(None)
    selects = [s for s in seen if s.lstrip().upper().startswith("SELECT")]
    return [(s, " / ".join(row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {s}"))) for s in selects]


def test_stats_reads_no_card_row_and_no_card_file(open_service, monkeypatch):
    """At 100k cards a scan of the cards table reads the whole catalog (content and card JSON);
    every count and size comes from an index instead, and no card file is opened."""
    from memagent.memory.cardfiles import CardFiles

    service = open_service("s")
    for i in range(5):
        service.save(f"Service {i} of the fleet runs behind the gateway on port {9000 + i}.", "fact")

    def no_file(*_args, **_kwargs):
        raise AssertionError("stats opened a card file")

    monkeypatch.setattr(CardFiles, "read_with_bytes", no_file)
    plans = _plans_of_stats(service)
    assert plans, "stats asked the catalog nothing"
    whole_table = [s for s, plan in plans if "SCAN cards" in plan and "COVERING INDEX" not in plan]
    assert whole_table == []


def test_stats_counts_every_status_kind_and_byte_as_the_cards_are(open_service, paths):
    service = open_service("s")
    kept = service.save("The API gateway terminates TLS with certificates from cert-manager.", "fact").card
    old = service.save("Payments run on the blue cluster.", "decision").card
    service.correct(old.id, "Payments moved to the green cluster in March.")
    archived = service.save("Prefer small pull requests of under 300 changed lines.", "preference").card
    service.update_card(archived.id, status="archived")
    service.save("Focus on the flaky login test this session.", "context", "session")
    stats = service.stats()
    cards = service.list(include_all=True)
    assert stats["total"] == len(cards) == 5
    assert stats["by_status"]["active"] == 3 and stats["by_status"]["superseded"] == 1
    assert stats["by_status"]["archived"] == 1
    active = [c for c in cards if c.status == "active"]
    assert {k: v for k, v in stats["by_type"].items() if v} == {
        t: sum(c.memory_type == t for c in active) for t in {c.memory_type for c in active}
    }
    assert stats["by_scope"]["session"] == 1 and stats["by_scope"]["project"] == 2
    project = stats["stores"]["project"]
    assert (project["active"], project["inactive"]) == (3, 2)
    files = [p for p in paths.memory.rglob("*.md")]
    assert project["size_bytes"] >= sum(p.stat().st_size for p in files) > 0
    assert kept.id in {c.id for c in active}


def test_a_catalog_made_before_the_stats_indexes_gets_them_and_answers_the_same(open_service, paths):
    service = open_service("s")
    for i in range(3):
        service.save(f"Queue {i} is drained by worker pool {i + 1}.", "fact")
    before = service.stats()
    db = service.core.stores["project"].catalog.db()
    db.execute("DROP INDEX cards_by_kind")
    db.execute("DROP INDEX cards_by_use")
    service.close()
    again = open_service("s2")
    after = again.stats()
    names = {r[0] for r in again.core.stores["project"].catalog.db().execute("SELECT name FROM sqlite_master")}
    assert {"cards_by_kind", "cards_by_use"} <= names
    assert {k: after[k] for k in ("total", "by_status", "by_type", "by_scope", "by_source", "most_used")} == {
        k: before[k] for k in ("total", "by_status", "by_type", "by_scope", "by_source", "most_used")
    }
