"""Hybrid ranking: fusion, metadata blend, filters, threshold and the parts breakdown."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memagent.memory.ranking import CardSignals, RankingWeights, candidate_pool, rank

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def _cards(*ids: str, **overrides) -> dict[str, CardSignals]:
    return {
        i: CardSignals(
            id=i,
            confidence=0.9,
            importance=0.5,
            scope="project",
            created_at=NOW - timedelta(days=1),
            last_used_at=None,
            task_hint=None,
            status="active",
            **overrides,
        )
        for i in ids
    }


def _background(n: int = 30) -> list[tuple[str, float]]:
    """Weak dense candidates, as a vector store returns them around the real hits."""
    return [(f"bg{i}", 0.20 + 0.003 * i) for i in range(n)]


def test_card_found_by_both_retrievers_beats_single_source():
    cards = _cards("both", "dense_only", "lex_only", *[f"bg{i}" for i in range(30)])
    dense = [("both", 0.6), ("dense_only", 0.62), *_background()]
    hits = rank(dense, [("both", 0.5), ("lex_only", 0.55)], cards, now=NOW, k=3)
    assert hits[0].id == "both"
    assert {h.id for h in hits} == {"both", "dense_only", "lex_only"}


def test_lexical_match_that_covers_little_of_the_query_does_not_beat_a_clear_dense_hit():
    """A paraphrased question shares one incidental word with a wrong card: dense must win."""
    cards = _cards("answer", "incidental", *[f"bg{i}" for i in range(30)])
    dense = [("answer", 0.45), ("incidental", 0.25), *_background()]
    hits = rank(dense, [("incidental", 0.08)], cards, now=NOW, k=2)
    assert hits[0].id == "answer"


def test_strong_lexical_match_leads_when_dense_scores_are_flat():
    ids = [f"t{i}" for i in range(30)]
    cards = _cards(*ids)
    dense = [(doc_id, 0.50 + 0.001 * n) for n, doc_id in enumerate(ids)]
    hits = rank(dense, [("t3", 0.6), ("t20", 0.2)], cards, now=NOW, k=2)
    assert [h.id for h in hits] == ["t3", "t20"]


def test_parts_breakdown_is_complete_and_consistent():
    cards = _cards("a")
    (hit,) = rank([("a", 0.5)], [("a", 0.4)], cards, now=NOW, k=1)
    for key in (
        "dense",
        "lexical",
        "relevance",
        "fused",
        "confidence",
        "importance",
        "scope",
        "recency",
        "task",
        "person",
        "time",
    ):
        assert key in hit.parts
    assert hit.parts["dense"] == 0.5 and hit.parts["lexical"] == 0.4
    assert 0 < hit.parts["fused"] <= 1 and hit.score > 0


@pytest.mark.parametrize(
    "field,low,high",
    [
        ("confidence", 0.5, 1.0),
        ("importance", 0.1, 0.9),
        ("scope", "user", "session"),
    ],
)
def test_metadata_breaks_ties_between_equally_relevant_cards(field, low, high):
    cards = _cards("low", "high")
    setattr(cards["low"], field, low)
    setattr(cards["high"], field, high)
    hits = rank([("low", 0.5), ("high", 0.5)], [], cards, now=NOW)
    assert [h.id for h in hits] == ["high", "low"]


def test_scope_priority_session_project_user():
    cards = _cards("u", "p", "s")
    cards["u"].scope, cards["p"].scope, cards["s"].scope = "user", "project", "session"
    hits = rank([("u", 0.5), ("p", 0.5), ("s", 0.5)], [], cards, now=NOW)
    assert [h.id for h in hits] == ["s", "p", "u"]


def test_recent_and_recently_used_cards_rank_higher():
    cards = _cards("old", "new", "old_but_used")
    cards["old"].created_at = NOW - timedelta(days=400)
    cards["old_but_used"].created_at = NOW - timedelta(days=400)
    cards["old_but_used"].last_used_at = NOW - timedelta(hours=1)
    hits = rank([(i, 0.5) for i in cards], [], cards, now=NOW)
    assert hits[-1].id == "old"
    assert hits[0].parts["recency"] > 0.9 > hits[-1].parts["recency"]


def test_current_task_match_lifts_card():
    cards = _cards("other", "mine")
    cards["mine"].task_hint = "T-7"
    cards["other"].task_hint = "T-3"
    lexical = [("other", 0.42), ("mine", 0.40)]
    hits = rank([], lexical, cards, now=NOW, current_task="T-7")
    assert hits[0].id == "mine" and hits[0].parts["task"] == 1.0
    without = rank([], lexical, cards, now=NOW, current_task=None)
    assert without[0].id == "other"


def test_metadata_cannot_rescue_irrelevant_card():
    cards = _cards("relevant", "junk")
    cards["junk"].scope, cards["junk"].importance, cards["junk"].task_hint = "session", 1.0, "T"
    cards["relevant"].scope, cards["relevant"].importance = "user", 0.2
    hits = rank([("relevant", 0.7), ("junk", 0.3)], [], cards, now=NOW, current_task="T", min_score=0)
    assert hits[0].id == "relevant"


def test_inactive_cards_hidden_unless_asked_and_unknown_ids_skipped():
    cards = _cards("active", "old")
    cards["old"].status = "superseded"
    dense = [("active", 0.5), ("old", 0.6), ("deleted", 0.9)]
    assert [h.id for h in rank(dense, [], cards, now=NOW)] == ["active"]
    assert {h.id for h in rank(dense, [], cards, now=NOW, active_only=False)} == {"active", "old"}


def test_threshold_drops_junk_and_can_be_disabled():
    cards = _cards("good", "junk")
    dense = [("good", 0.5), ("junk", 0.10)]
    assert [h.id for h in rank(dense, [], cards, now=NOW)] == ["good"]
    assert [h.id for h in rank(dense, [], cards, now=NOW, min_score=0)] == ["good", "junk"]
    assert rank(dense, [], cards, now=NOW, min_score=0.99) == []


def test_k_limits_and_order_is_deterministic():
    cards = _cards(*[f"c{i}" for i in range(20)])
    dense = [(f"c{i}", 0.5) for i in range(20)]
    hits = rank(dense, [], cards, now=NOW, k=3)
    assert [h.id for h in hits] == ["c0", "c1", "c10"]
    assert rank(dense, [], cards, now=NOW, k=0) == []


def test_rrf_fusion_orders_by_ranks_but_thresholds_on_relevance():
    weights = RankingWeights(fusion="rrf", dense_weight=0.5, lexical_weight=0.5)
    cards = _cards("a", "b", "c")
    hits = rank([("a", 0.7), ("b", 0.5)], [("b", 0.6), ("a", 0.5), ("c", 0.01)], cards, now=NOW, weights=weights)
    assert {h.id for h in hits} == {"a", "b"}  # c's relevance (tiny BM25, no dense) is under the threshold
    assert hits[0].parts["fused"] == pytest.approx(hits[1].parts["fused"])
    with pytest.raises(ValueError):
        RankingWeights(fusion="max")


def test_naive_datetimes_are_treated_as_utc():
    cards = _cards("a")
    cards["a"].created_at = datetime(2026, 11, 21, 11, 0)
    (hit,) = rank([("a", 0.5)], [], cards, now=NOW)
    assert hit.parts["recency"] > 0.99


def test_weighted_fusion_uses_absolute_calibration():
    weights = RankingWeights(fusion="weighted")
    cards = _cards("a", "b")
    hits = rank([("a", 0.55), ("b", 0.3)], [("b", 0.3)], cards, now=NOW, weights=weights)
    assert [h.id for h in hits] == ["b", "a"]  # b: weaker cosine but a good lexical match
    assert all(0 <= h.parts["fused"] <= 1 for h in hits)


def test_person_named_in_query_lifts_their_cards():
    cards = _cards("alice_card", "bob_card")
    cards["alice_card"].person, cards["bob_card"].person = "Alice Smith", "Bob"
    lexical = [("bob_card", 0.42), ("alice_card", 0.40)]
    hits = rank([], lexical, cards, now=NOW, query="What editor does alice prefer?")
    assert hits[0].id == "alice_card"
    assert hits[0].parts["person"] == 1.0 and hits[1].parts["person"] == 0.0
    neutral = rank([], lexical, cards, now=NOW, query="Which editor is preferred?")
    assert neutral[0].id == "bob_card" and neutral[0].parts["person"] == 0.5


def test_period_named_in_query_lifts_cards_from_it():
    cards = _cards("july", "march")
    cards["july"].created_at = datetime(2026, 7, 20, tzinfo=UTC)
    cards["march"].created_at = datetime(2026, 3, 2, tzinfo=UTC)
    lexical = [("march", 0.42), ("july", 0.40)]
    hits = rank([], lexical, cards, now=NOW, query="What did we decide about caching in July?")
    assert hits[0].id == "july" and hits[0].parts["time"] == 1.0


def test_candidate_pool_over_fetches():
    assert candidate_pool(5) >= 25 and candidate_pool(30) >= 150


def test_lexical_only_mode_still_orders_weak_matches():
    """No embedder: even matches covering little of the query must be ordered by BM25, not by id."""
    cards = _cards("a_weak", "b_better")
    weights = RankingWeights(dense_weight=0.0, lexical_weight=1.0)
    hits = rank([], [("a_weak", 0.03), ("b_better", 0.08)], cards, now=NOW, weights=weights)
    assert [h.id for h in hits] == ["b_better", "a_weak"]
    assert hits[0].score > hits[1].score > 0


def _placed(places: dict[str, tuple[str | None, int | None]]) -> dict[str, CardSignals]:
    cards = _cards(*places)
    for doc_id, (thread, position) in places.items():
        cards[doc_id].thread, cards[doc_id].position = thread, position
    return cards


def test_a_turn_next_to_a_strong_hit_gains_a_share_of_its_score():
    """An answer ("Tomorrow's gonna be awesome") often only makes sense beside the turn that
    asked: the candidate adjacent to the best hit of the same thread overtakes an equal one."""
    cards = _placed(
        {"asked": ("s1", 4), "answer": ("s1", 5), "elsewhere": ("s2", 9), **{f"bg{i}": (None, None) for i in range(30)}}
    )
    dense = [("asked", 0.60), ("answer", 0.40), ("elsewhere", 0.40), *_background()]
    plain = rank(dense, [], cards, now=NOW, k=3, weights=RankingWeights(neighbour=0.0))
    assert [h.id for h in plain][0] == "asked"
    assert plain[1].score == pytest.approx(plain[2].score)  # answer and elsewhere tie
    hits = rank(dense, [], cards, now=NOW, k=3)
    assert [h.id for h in hits] == ["asked", "answer", "elsewhere"]
    by_id, before = {h.id: h for h in hits}, {h.id: h for h in plain}
    share = RankingWeights().neighbour
    assert by_id["answer"].parts["neighbour"] == pytest.approx(share * before["asked"].score)
    assert by_id["answer"].score == pytest.approx(before["answer"].score + share * before["asked"].score)
    assert by_id["asked"].score == pytest.approx(before["asked"].score + share * before["answer"].score)
    assert by_id["elsewhere"].parts["neighbour"] == 0.0


def test_neighbours_must_share_the_thread_and_be_one_turn_apart():
    cards = _placed(
        {
            "hit": ("s1", 4),
            "other_thread": ("s2", 5),
            "two_away": ("s1", 6),
            "unplaced": (None, None),
            **{f"bg{i}": (None, None) for i in range(30)},
        }
    )
    dense = [("hit", 0.60), ("other_thread", 0.40), ("two_away", 0.40), ("unplaced", 0.40), *_background()]
    hits = {h.id: h for h in rank(dense, [], cards, now=NOW, k=4)}
    assert hits["other_thread"].parts["neighbour"] == 0.0
    assert hits["two_away"].parts["neighbour"] == 0.0
    assert "neighbour" not in hits["unplaced"].parts
    assert hits["hit"].score > hits["other_thread"].score == pytest.approx(hits["two_away"].score)


def test_a_correction_outranks_the_card_it_supersedes_when_both_are_candidates():
    cards = _cards("old", "other", *[f"bg{i}" for i in range(30)])
    cards["new"] = CardSignals(id="new", created_at=NOW - timedelta(days=1), supersedes="old")
    dense = [("old", 0.70), ("new", 0.55), ("other", 0.50), *_background()]
    hits = rank(dense, [], cards, now=NOW, k=3, query="what is the tax client timeout")
    assert hits[0].id == "new"
    old = next(h for h in rank(dense, [], cards, now=NOW, k=40, min_score=0) if h.id == "old")
    assert old.parts["superseded"] == 1.0
    assert hits[0].score >= old.score / RankingWeights().superseded * 0.999  # took the old card's score


@pytest.mark.parametrize(
    "question, newest_first",
    [
        ("Which Go version does the service build with now?", True),
        ("Which Go version does the service build with these days?", True),
        ("Which Go version does the service build with?", False),
    ],
)
def test_a_question_about_the_present_prefers_the_newer_of_two_close_cards(question, newest_first):
    cards = {
        "older": CardSignals(id="older", created_at=NOW - timedelta(days=200)),
        "newer": CardSignals(id="newer", created_at=NOW - timedelta(days=60)),
        **{f"bg{i}": CardSignals(id=f"bg{i}", created_at=NOW - timedelta(days=100)) for i in range(30)},
    }
    dense = [("older", 0.62), ("newer", 0.60), *_background()]
    hits = rank(dense, [], cards, now=NOW, k=2, query=question, weights=RankingWeights(recency=0.0))
    assert hits[0].id == ("newer" if newest_first else "older")
    assert ("current" in hits[0].parts) and (hits[0].parts["current"] != 0.5) == newest_first


def test_a_period_no_leading_candidate_comes_from_is_ignored():
    """ "the talk in December", asked of cards written months before it: content decides."""
    cards = {
        "talk": CardSignals(id="talk", created_at=datetime(2026, 8, 20, tzinfo=UTC)),
        **{f"bg{i}": CardSignals(id=f"bg{i}", created_at=datetime(2026, 5, 1, tzinfo=UTC)) for i in range(30)},
    }
    dense = [("talk", 0.6), *_background()]
    hits = rank(dense, [], cards, now=NOW, k=1, query="Where is the user giving a talk in December?")
    assert hits[0].id == "talk" and hits[0].parts["time"] == 0.5


def test_a_card_learned_from_tool_output_never_ranks_above_a_user_card():
    cards = _cards("readme", *[f"bg{i}" for i in range(30)], source="assistant")
    cards["readme"] = CardSignals(id="readme", created_at=NOW, source="tool", confidence=1.0, importance=1.0)
    cards["said"] = CardSignals(id="said", created_at=NOW - timedelta(days=300), source="user", confidence=0.7)
    dense = [("readme", 0.80), ("said", 0.40), *_background()]
    hits = rank(dense, [("readme", 0.9)], cards, now=NOW, k=2)
    assert [h.id for h in hits] == ["said", "readme"]
    assert hits[1].parts["capped"] > hits[1].score
