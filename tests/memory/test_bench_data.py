"""The retrieval benchmark's own logic: evidence-id normalisation, metrics, and the paraphrase set."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_locomo_under_test", BENCH / "bench_locomo.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being created
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def test_evidence_ids_are_normalised_and_dangling_ids_dropped(bench):
    known = {"D8:6", "D9:17", "D11:26", "D30:5", "D1:3"}
    assert bench.normalise_evidence(["D8:6; D9:17"], known) == {"D8:6", "D9:17"}
    assert bench.normalise_evidence(["D:11:26"], known) == {"D11:26"}
    assert bench.normalise_evidence(["D30:05", "D1:3"], known) == {"D30:5", "D1:3"}
    assert bench.normalise_evidence(["D", "D99:1"], known) == frozenset()


def test_metrics_on_a_known_ranking(bench):
    scores = bench.score_ranking(["x", "a", "y", "b"], frozenset({"a", "b"}))
    assert scores["R_any@1"] == 0.0 and scores["R_any@5"] == 1.0 and scores["R_all@10"] == 1.0
    assert scores["MRR"] == 0.5
    import math

    ideal = 1 + 1 / math.log2(3)
    assert scores["NDCG@10"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / ideal)


def test_paraphrase_questions_share_no_index_term_with_their_answer(bench):
    corpora = bench.load_paraphrase(BENCH / "paraphrase")
    assert corpora and sum(len(c.queries) for c in corpora) >= 40
    for corpus in corpora:
        assert bench.lexical_overlap(corpus) == []
        assert len(set(corpus.card_ids)) == len(corpus.card_ids)


def test_paraphrase_files_are_well_formed():
    for path in (BENCH / "paraphrase").glob("*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        ids = {card["id"] for card in data["cards"]}
        assert all(set(q["evidence"]) <= ids and q["question"].strip() for q in data["queries"])


def test_backstory_is_the_previous_turns_of_the_same_session_only(bench):
    corpus = bench.Corpus(
        "c", ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"], ["A: one", "B: two", "A: three", "B: four", "A: five"], [], []
    )
    assert bench.previous_turns(corpus, 2) == ["", "A: one", "A: one B: two", "", "B: four"]
    assert bench.previous_turns(corpus, 1)[2] == "B: two"
    assert bench.turn_place("D12:7") == ("D12", 7)
    assert bench.turn_place("c03") == (None, None)
