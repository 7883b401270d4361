"""BM25 index: tokenizer, ranking behaviour, incremental updates and cost at scale."""

from __future__ import annotations

import random
import time

import pytest

from memagent.memory.lexical import LexicalIndex, tokenize


def test_tokenize_normalises_case_identifiers_stopwords_and_suffixes():
    assert tokenize("The Tests were RUNNING with pytest-xdist") == ["test", "run", "pytest", "xdist"]
    assert tokenize("getUserName in HTTPServer_config") == ["get", "user", "name", "http", "server", "config"]
    assert tokenize("libraries classes studies stopped") == ["library", "class", "study", "stop"]
    assert tokenize("Ünïcödé café, 日本語 and port 8080") == ["ünïcödé", "café", "日本語", "port", "8080"]
    assert tokenize("test tests tested testing") == ["test"] * 4


def test_tokenize_keeps_short_words_and_status_like_words_intact():
    assert tokenize("bus gas is") == ["bus", "gas"]  # no "bu"/"ga"
    assert tokenize("red bed need") == ["red", "bed", "need"]


def _index(docs: dict[str, str]) -> LexicalIndex:
    index = LexicalIndex()
    for doc_id, text in docs.items():
        index.add(doc_id, text)
    return index


def test_rare_terms_outrank_common_ones():
    index = _index(
        {
            "a": "run the tests with pytest",
            "b": "run the linter before you run anything else",
            "c": "the database is postgres",
        }
    )
    hits = index.search("run postgres", 3)
    assert hits[0][0] == "c"
    assert {doc_id for doc_id, _ in hits} == {"a", "b", "c"}
    assert all(score > 0 for _, score in hits)
    assert [score for _, score in hits] == sorted((score for _, score in hits), reverse=True)


def test_no_shared_terms_no_results_and_k_limits():
    index = _index({f"d{i}": f"alpha beta {i}" for i in range(10)})
    assert index.search("gamma", 5) == []
    assert len(index.search("alpha", 3)) == 3
    assert index.search("alpha", 0) == []
    assert LexicalIndex().search("alpha", 5) == []


def test_length_normalisation_prefers_focused_document():
    index = _index(
        {
            "short": "deploy with docker compose",
            "long": "deploy " + " ".join(f"filler{i}" for i in range(60)),
        }
    )
    assert index.search("deploy", 2)[0][0] == "short"


def test_incremental_add_remove_matches_fresh_build():
    docs = {f"m{i}": f"card {i} about {'pytest' if i % 3 else 'docker'} and port {i % 7}" for i in range(50)}
    index = _index(docs)
    index.add("extra", "docker docker docker")
    index.remove("extra")
    index.remove("m4")
    index.remove("missing-id")  # ignored
    index.add("m5", "now about kubernetes")  # replace
    expected = dict(docs)
    del expected["m4"]
    expected["m5"] = "now about kubernetes"
    fresh = _index(expected)
    assert len(index) == len(fresh) == 49
    assert "m4" not in index and "m5" in index
    for query in ("docker port 3", "pytest", "kubernetes", "card 12"):
        got = index.search(query, 10)
        want = fresh.search(query, 10)
        assert [d for d, _ in got] == [d for d, _ in want]
        assert [s for _, s in got] == pytest.approx([s for _, s in want])
    assert index.search("extra", 5) == []


def test_removing_everything_leaves_empty_index():
    index = _index({"a": "one two", "b": "two three"})
    index.remove("a")
    index.remove("b")
    assert len(index) == 0 and index.search("two", 5) == []
    index.add("c", "two")
    assert index.search("two", 5)[0][0] == "c"


def test_search_cost_at_20k_cards_touches_only_query_postings():
    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(5000)]
    index = LexicalIndex()
    for i in range(20_000):
        index.add(f"c{i}", " ".join(rng.choices(vocab, k=12)))
    index.add("needle", "zebra quokka")
    timings = []
    for _ in range(15):
        started = time.perf_counter()
        hits = index.search("zebra w1 w2", 10)
        timings.append(time.perf_counter() - started)
    assert hits[0][0] == "needle"
    assert sorted(timings)[7] < 0.02  # rare terms: a few hundred postings, far below a full scan


def test_scores_are_normalised_coverage_of_the_query():
    index = _index({"full": "docker compose", "half": "docker swarm notes", "none": "kubernetes"})
    hits = dict(index.search("docker compose", 5))
    raw = dict(index.search("docker compose", 5, raw=True))
    assert set(hits) == {"full", "half"}
    assert all(0 < score <= 1 for score in hits.values())
    assert hits["full"] > 2 * hits["half"]
    assert raw["full"] / hits["full"] == pytest.approx(index.max_score("docker compose"))
    # "half" shares one of the query's two terms: its coverage is discounted by (1/2) ** 2
    assert raw["half"] / hits["half"] == pytest.approx(index.max_score("docker compose") / 0.25)


def test_a_card_sharing_few_query_terms_is_discounted_but_keeps_its_place_alone():
    index = _index(
        {
            "rare-pair": "quokka zebra",
            "three": "deploy staging server quickly",
            "filler": "lunch menu today",
            "ops": "deploy staging server note",
        }
    )
    query = "deploy quokka zebra staging server"
    hits = dict(index.search(query, 5))
    raw = dict(index.search(query, 5, raw=True))
    assert raw["rare-pair"] > raw["three"]  # plain BM25: two rare words win
    assert hits["three"] > hits["rare-pair"]  # three shared terms count fully, two do not
    assert hits["rare-pair"] == pytest.approx(raw["rare-pair"] / index.max_score(query) * (2 / 3) ** 2)
    # a one-word query needs one shared word: no discount
    single = index.search("quokka", 1)
    assert single[0][0] == "rare-pair"
    assert single[0][1] == pytest.approx(index.search("quokka", 1, raw=True)[0][1] / index.max_score("quokka"))


def test_context_terms_find_a_card_but_count_less_than_its_own_words():
    index = LexicalIndex(context_weight=0.5)
    index.add("answer", "Tomorrow is going to be an awesome night", context="the grand opening of my bakery")
    index.add("opening", "The grand opening of the bakery is on Friday")
    index.add("other", "I painted a sunset last week")
    hits = [doc_id for doc_id, _ in index.search("bakery grand opening", 3)]
    assert hits[:2] == ["opening", "answer"]
    assert "other" not in hits
    index.add("answer", "Tomorrow is going to be an awesome night")  # re-adding replaces the context
    assert "answer" not in [doc_id for doc_id, _ in index.search("bakery grand opening", 3)]
    without_context = LexicalIndex(context_weight=0.0)
    without_context.add("answer", "an awesome night", context="grand opening")
    assert without_context.search("grand opening", 3) == []
