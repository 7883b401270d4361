"""The coding-memory retrieval set (bench/data/coding_memory.json) is well formed, and the
benchmark's metrics and retrievers do what they say."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
DATA = json.loads((BENCH / "data" / "coding_memory.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_retrieval_under_test", BENCH / "bench_retrieval.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def test_the_set_is_big_enough_and_mixes_projects_people_dates_and_corrections():
    cards, queries = DATA["cards"], DATA["queries"]
    assert len(cards) >= 150 and len(queries) >= 150
    assert len({c["id"] for c in cards}) == len(cards)
    assert len({q["question"] for q in queries}) == len(queries)
    projects = Counter(c["project"] for c in cards if c["scope"] == "project")
    assert len(projects) >= 4 and min(projects.values()) >= 25
    kinds = Counter(q["kind"] for q in queries)
    assert {"paraphrase", "correction", "person", "date"} <= set(kinds)
    assert sum(1 for c in cards if c.get("person")) >= 15


def test_corrections_name_an_older_card_and_are_the_answer_to_their_questions():
    by_id = {c["id"]: c for c in DATA["cards"]}
    corrections = [c for c in DATA["cards"] if c.get("supersedes")]
    assert len(corrections) >= 10
    for card in corrections:
        older = by_id[card["supersedes"]]
        assert datetime.fromisoformat(older["created_at"]) < datetime.fromisoformat(card["created_at"])
    for query in DATA["queries"]:
        if query["kind"] == "correction":
            assert all(by_id[e].get("supersedes") for e in query["evidence"]), query["id"]


def test_the_split_is_fixed_by_the_answer_card_and_both_halves_are_used():
    by_id = {c["id"] for c in DATA["cards"]}
    splits = Counter()
    for query in DATA["queries"]:
        assert set(query["evidence"]) <= by_id
        expected = "dev" if int(query["evidence"][0][1:]) % 2 else "test"
        assert query["split"] == expected, query["id"]
        splits[query["split"]] += 1
    assert min(splits.values()) >= 75


def test_metrics_on_a_known_ranking(bench):
    assert bench.score(["x", "a", "y"], frozenset({"a"})) == {"R@1": 0.0, "R@5": 1.0, "MRR@5": 0.5}
    assert bench.score(["x", "y", "z", "w", "v", "a"], frozenset({"a"}))["R@5"] == 0.0


def test_hiding_links_removes_only_the_supersedes_field(bench):
    prepared = bench.Prepared(
        card_ids=["a", "b"],
        card_vectors=None,
        lexical=None,
        signals={
            "a": bench.card_signals({"id": "a", "created_at": "2026-01-01T00:00:00Z"}),
            "b": bench.card_signals(
                {"id": "b", "created_at": "2026-02-01T00:00:00Z", "supersedes": "a", "person": "Hana"}
            ),
        },
        questions=[],
        query_vectors=None,
        now=datetime(2026, 3, 1),
    )
    seen = {}
    bench.without_links(lambda p, qi: seen.update(p.signals) or [])(prepared, 0)
    assert seen["b"].supersedes is None and seen["b"].person == "Hana"
    assert prepared.signals["b"].supersedes == "a"  # the original is untouched
