"""The catalog's lexical search: exactly the in-memory BM25's scores and order, while reading only
the postings it needs (rare terms whole, common ones by lookup); schema-2 catalogs migrate."""

from __future__ import annotations

import random
import sqlite3

import pytest

from memagent.memory.cards import MemoryCard
from memagent.memory.catalog import SCHEMA_VERSION, Catalog
from memagent.memory.lexical import LexicalIndex, top_k_pruned
from memagent.memory.postings import CatalogPostings

COMMON = ["test", "run", "use", "build", "deploy", "config"]


def _corpus(rng: random.Random, n: int) -> dict[str, tuple[str, str]]:
    """Zipf-like texts: a few very common words, a long tail of rare ones, some backstories."""
    rare = [f"w{i}x" for i in range(400)]
    docs = {}
    for i in range(n):
        words = [rng.choice(COMMON) for _ in range(rng.randint(0, 4))]
        words += [rare[min(int(rng.paretovariate(1.1)) - 1, len(rare) - 1)] for _ in range(rng.randint(1, 8))]
        rng.shuffle(words)
        backstory = " ".join(rng.choice(rare) for _ in range(rng.randint(0, 3))) if i % 3 == 0 else ""
        docs[f"m_{i:012x}"] = (" ".join(words), backstory)
    return docs


def _catalog(tmp_path, docs, inactive=()) -> Catalog:
    catalog = Catalog(tmp_path / "catalog.sqlite3")
    with catalog.transaction() as db:
        for card_id, (text, backstory) in docs.items():
            card = MemoryCard(
                id=card_id,
                content=text or "empty",
                memory_type="fact",
                backstory=backstory or None,
                status="archived" if card_id in inactive else "active",
            )
            catalog.put(db, card, tmp_path / f"{card_id}.md", (1, 1, 1), False)
    return catalog


def _same(got, want) -> bool:
    """Same ids in the same order, scores equal up to the order of floating-point additions."""
    return [d for d, _ in got] == [d for d, _ in want] and all(abs(a - b) < 1e-12 for (_, a), (_, b) in zip(got, want))


def _reference(docs, active_ids) -> LexicalIndex:
    index = LexicalIndex()
    for card_id in active_ids:
        text, backstory = docs[card_id]
        index.add(card_id, text or "empty", backstory)
    return index


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_catalog_scores_equal_the_in_memory_bm25_exactly(tmp_path, seed):
    rng = random.Random(seed)
    docs = _corpus(rng, 1500)
    inactive = set(rng.sample(sorted(docs), 200))
    catalog = _catalog(tmp_path, docs, inactive)
    for active, ids in ((True, [d for d in docs if d not in inactive]), (False, sorted(inactive))):
        reference = _reference(docs, ids)
        for _ in range(60):
            words = [rng.choice(COMMON) for _ in range(rng.randint(0, 3))]
            words += [f"w{rng.randint(0, 420)}x" for _ in range(rng.randint(0, 4))]  # some match nothing
            query = " ".join(words) + rng.choice(["", " test test", " run"])
            k = rng.choice([1, 5, 50])
            got = catalog.lexical(query, k, active)
            want = reference.search(query, k)
            assert _same(got, want), query
    catalog.close()


class _Counting:
    """A posting source that counts what it reads."""

    def __init__(self, inner):
        self.inner, self.whole, self.looked_up, self.ranked = inner, [], 0, []

    def size(self):
        return self.inner.size()

    def doc_freqs(self, terms):
        return self.inner.doc_freqs(terms)

    def postings(self, term):
        self.whole.append(term)
        return self.inner.postings(term)

    def lookup(self, term, ids):
        found = self.inner.lookup(term, ids)
        self.looked_up += len(found)
        return found

    def best_holding(self, scales, norm, slope, factor, limit):
        self.ranked.append((sorted(scales), limit))
        return self.inner.best_holding(scales, norm, slope, factor, limit)


def test_common_terms_are_looked_up_not_read_whole(tmp_path):
    docs = {f"m_{i:012x}": (f"run test build step {i}", "") for i in range(3000)}
    docs["m_aaaaaaaaaaaa"] = ("run the flaky quetzal suite", "")
    docs["m_bbbbbbbbbbbb"] = ("quetzal mirrors are slow", "")
    catalog = _catalog(tmp_path, docs)
    source = _Counting(CatalogPostings(catalog.db(), 1))
    hits = top_k_pruned(catalog.params, source, "run quetzal", 2)
    assert [d for d, _ in hits] == ["m_aaaaaaaaaaaa", "m_bbbbbbbbbbbb"]
    assert source.whole == ["quetzal"] and source.looked_up <= 2  # "run" (3,001 postings) never read whole
    assert _same(hits, _reference(docs, list(docs)).search("run quetzal", 2))
    catalog.close()


def test_rare_terms_matching_fewer_cards_than_k_do_not_read_common_terms_whole(tmp_path):
    """The pool is filled from the common terms' documents, ranked inside SQLite: "run" (3,001
    postings) is never read into Python, and the top 10 is still exactly the in-memory one."""
    docs = {f"m_{i:012x}": ("run step" + " pad" * (i % 300) + (" run" if i % 7 == 0 else ""), "") for i in range(3000)}
    docs["m_aaaaaaaaaaaa"] = ("run the flaky quetzal suite", "")
    docs["m_bbbbbbbbbbbb"] = ("quetzal mirrors are slow", "")
    catalog = _catalog(tmp_path, docs)
    source = _Counting(CatalogPostings(catalog.db(), 1))
    hits = top_k_pruned(catalog.params, source, "run quetzal", 10)
    assert source.whole == ["quetzal"] and source.ranked == [(["run"], 60)]
    assert _same(hits, _reference(docs, list(docs)).search("run quetzal", 10))
    catalog.close()


def test_a_query_of_common_terms_only_is_ranked_by_the_source_exactly(tmp_path):
    docs = _corpus(random.Random(11), 1500)
    catalog = _catalog(tmp_path, docs)
    reference = _reference(docs, list(docs))
    for query in ("test run", "build deploy config use", "run run test", "use"):
        source = _Counting(CatalogPostings(catalog.db(), 1))
        for k in (1, 5, 50):
            got = top_k_pruned(catalog.params, source, query, k, whole_postings=100)
            assert _same(got, reference.search(query, k)), (query, k)
        assert source.ranked and not source.whole, query
    catalog.close()


def test_ties_at_the_kth_score_are_broken_as_the_in_memory_index_breaks_them(tmp_path):
    """Copies of the same texts score exactly alike: the rows fetched past the k-th (and more
    when a tie spans them) keep the in-memory order (score, then the larger id)."""
    texts = ["run the build", "run test", "deploy run config", "use the test build", "quetzal build"]
    docs = {f"m_{i:012x}": (texts[i % len(texts)], "") for i in range(1000)}
    catalog = _catalog(tmp_path, docs)
    reference = _reference(docs, list(docs))
    for query in ("run build", "test build use", "quetzal run", "config"):
        for k in (1, 7, 50, 199, 401):
            source = _Counting(CatalogPostings(catalog.db(), 1))
            got = top_k_pruned(catalog.params, source, query, k, whole_postings=50)
            assert _same(got, reference.search(query, k)), (query, k)
    catalog.close()


@pytest.mark.parametrize("seed", [4, 5])
def test_the_source_ranked_path_equals_the_in_memory_bm25_on_random_queries(tmp_path, seed):
    rng = random.Random(seed)
    docs = _corpus(rng, 1500)
    inactive = set(rng.sample(sorted(docs), 300))
    catalog = _catalog(tmp_path, docs, inactive)
    ranked = 0
    for active, ids in ((1, [d for d in docs if d not in inactive]), (0, sorted(inactive))):
        reference = _reference(docs, ids)
        for _ in range(60):
            words = [rng.choice(COMMON) for _ in range(rng.randint(1, 3))]
            words += [f"w{rng.randint(0, 420)}x" for _ in range(rng.randint(0, 3))]
            query, k = " ".join(words), rng.choice([1, 5, 50])
            source = _Counting(CatalogPostings(catalog.db(), active))
            got = top_k_pruned(catalog.params, source, query, k, whole_postings=rng.choice([10, 40]))
            assert _same(got, reference.search(query, k)), query
            ranked += bool(source.ranked)
    assert ranked > 30  # most queries went through the source's ranking
    catalog.close()


def test_a_schema_2_catalog_is_migrated_in_place(tmp_path):
    docs = _corpus(random.Random(5), 300)
    catalog = _catalog(tmp_path, docs)
    db = catalog.db()
    db.execute("DELETE FROM lexicon")
    db.execute("UPDATE meta SET value = '2' WHERE key = 'schema'")
    catalog.close()
    reopened = Catalog(tmp_path / "catalog.sqlite3")
    assert reopened.get_meta("schema") == SCHEMA_VERSION
    assert reopened.count() == 300
    reference = _reference(docs, list(docs))
    for query in ("test run w0x", "w1x w2x config", "deploy"):
        assert _same(reopened.lexical(query, 10, True), reference.search(query, 10))
    reopened.close()


def test_a_forgotten_cards_terms_leave_the_lexicon(tmp_path):
    docs = {"m_aaaaaaaaaaaa": ("the quetzal vault", ""), "m_bbbbbbbbbbbb": ("the sparrow vault", "")}
    catalog = _catalog(tmp_path, docs)
    with catalog.transaction() as db:
        catalog.remove(db, ["m_aaaaaaaaaaaa"])
    terms = {r[0]: r[2] for r in catalog.db().execute("SELECT * FROM lexicon")}
    assert terms == {"vault": 1, "sparrow": 1}
    assert _same(
        catalog.lexical("quetzal vault", 5, True), _reference(docs, ["m_bbbbbbbbbbbb"]).search("quetzal vault", 5)
    )
    catalog.close()
    assert b"quetzal" not in (tmp_path / "catalog.sqlite3").read_bytes()
    with sqlite3.connect(tmp_path / "catalog.sqlite3") as raw:
        assert raw.execute("SELECT COUNT(*) FROM postings WHERE term = 'quetzal'").fetchone()[0] == 0
