"""The second retrieval set (bench/data/team_memory.json) and the correction-pair table
(bench/data/correction_pairs.json) have the properties the benchmark relies on."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from memagent.memory.cards import MemoryCard

DATA_DIR = Path(__file__).resolve().parents[2] / "bench" / "data"
TEAM = json.loads((DATA_DIR / "team_memory.json").read_text(encoding="utf-8"))
PAIRS = json.loads((DATA_DIR / "correction_pairs.json").read_text(encoding="utf-8"))["pairs"]


def test_one_store_of_four_projects_with_enough_cards_and_questions():
    cards, queries = TEAM["cards"], TEAM["queries"]
    assert len(cards) >= 150 and len(queries) >= 100
    assert len({c["id"] for c in cards}) == len(cards)
    assert len({q["question"] for q in queries}) == len(queries)
    projects = Counter(c["project"] for c in cards if c["scope"] == "project")
    assert sum(1 for n in projects.values() if n >= 30) >= 4


def test_cards_import_as_they_are_in_creation_order_without_links():
    cards = TEAM["cards"]
    assert [c["created_at"] for c in cards] == sorted(c["created_at"] for c in cards)
    for record in cards:
        assert "supersedes" not in record and "superseded_by" not in record
        MemoryCard.model_validate({k: v for k, v in record.items() if k in MemoryCard.model_fields and k != "id"})


def test_corrections_come_after_the_card_they_change_and_answer_their_questions():
    by_id = {c["id"]: c for c in TEAM["cards"]}
    corrections = [c for c in TEAM["cards"] if c.get("corrects")]
    assert len(corrections) >= 10
    for card in corrections:
        assert by_id[card["corrects"]]["created_at"] < card["created_at"]
    for query in TEAM["queries"]:
        if query["kind"] == "correction":
            assert all(by_id[e].get("corrects") for e in query["evidence"]), query["id"]


def test_every_kind_is_in_both_splits_and_evidence_exists():
    known = {c["id"] for c in TEAM["cards"]}
    kinds = Counter((q["split"], q["kind"]) for q in TEAM["queries"])
    for kind in ("paraphrase", "correction", "description", "date", "person", "false_premise", "lookalike"):
        assert kinds[("dev", kind)] >= 2 and kinds[("test", kind)] >= 2, kind
    for query in TEAM["queries"]:
        assert set(query["evidence"]) <= known
        assert query["question"] not in {c["content"] for c in TEAM["cards"]}


def test_the_test_split_is_about_projects_the_dev_split_never_asks_about():
    by_id = {c["id"]: c for c in TEAM["cards"]}
    dev = {by_id[e]["project"] for q in TEAM["queries"] if q["split"] == "dev" for e in q["evidence"]}
    test = {by_id[e]["project"] for q in TEAM["queries"] if q["split"] == "test" for e in q["evidence"]}
    assert {"quill", "sluice"} <= dev and {"harbor", "beacon"} <= test
    assert not ({"quill", "sluice", "harbor", "beacon"} & dev & test)


def test_the_pair_table_is_balanced_and_split():
    assert len(PAIRS) >= 40
    counts = Counter((p["split"], p["correction"]) for p in PAIRS)
    assert min(counts.values()) >= 10 and len(counts) == 4
