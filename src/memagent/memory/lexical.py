"""BM25 over memory cards: an incremental inverted index in pure Python.

Scores are normalised to 0..1 by the query's best attainable BM25 and discounted for cards that
share only one or two of a longer query's terms (see ``LexicalIndex.search``). A card's context
(its backstory) is a second, down-weighted field (``LexicalIndex.add``).
Search touches only the postings of the query's terms, so its cost grows with how common those
terms are, not with the number of cards. Adding or removing a card updates the postings in place.

The tokenizer is deliberately simple and deterministic (it runs on both cards and queries):
lowercase Unicode words, identifiers split at ``_``/``-``/camelCase, a small English stopword
list, and light suffix stripping so that "tests", "testing" and "tested" meet at "test".
"""

from __future__ import annotations

import heapq
import math
import operator
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

_WORD = re.compile(r"[^\W_]+")
_BY_SCORE_THEN_ID = operator.itemgetter(1, 0)  # (doc_id, score) pairs: score, then id for ties

STOPWORDS = frozenset(
    """
    a about above after again all also am an and any are as at be been before being below
    between both but by can could did do does doing done down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    s t d ll m re ve
    """.split()
)

_VOWEL = re.compile(r"[aeiouy]")
_DOUBLE_END = re.compile(r"([bdfgklmnprt])\1$")


def _strip_suffix(word: str) -> str:
    """Light stemming: plurals, -ing, -ed and a few common endings; keeps at least 3 letters."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        stem = word[: -len(suffix)]
        if word.endswith(suffix) and len(stem) >= 3 and _VOWEL.search(stem):
            if _DOUBLE_END.search(stem):
                stem = stem[:-1]
            return stem
    return word


def _split_identifier(word: str) -> list[str]:
    """camelCase / PascalCase / HTTPServer / v2Beta split into parts (any script's letters)."""
    if word.islower() or word.isupper() or word.isdigit():
        return [word]
    parts: list[str] = []
    start = 0
    for i in range(1, len(word)):
        prev, ch = word[i - 1], word[i]
        nxt = word[i + 1] if i + 1 < len(word) else ""
        boundary = (
            (prev.islower() and ch.isupper())
            or (prev.isupper() and ch.isupper() and nxt.islower())
            or (prev.isdigit() != ch.isdigit())
        )
        if boundary:
            parts.append(word[start:i])
            start = i
    parts.append(word[start:])
    return parts


def tokenize(text: str) -> list[str]:
    """Index terms of ``text``, in order, duplicates kept (term frequency matters to BM25)."""
    terms: list[str] = []
    for raw in _WORD.findall(text):
        for part in _split_identifier(raw):
            word = part.lower()
            if word in STOPWORDS:
                continue
            terms.append(_strip_suffix(word))
    return terms


def term_counts(text: str, context: str = "", context_weight: float = 0.5) -> Counter:
    """A document's term frequencies: its text's terms, plus its context's at ``context_weight``."""
    counts: Counter = Counter(tokenize(text))
    if context and context_weight > 0:
        for term, tf in Counter(tokenize(context)).items():
            counts[term] += context_weight * tf
    return counts


@dataclass
class LexicalIndex:
    """Okapi BM25 with incremental ``add``/``remove``.

    ``k1`` controls term-frequency saturation, ``b`` document-length normalisation.
    Re-adding an existing id replaces its text.
    """

    k1: float = 0.8  # tuned on LoCoMo turns (short texts): less tf saturation headroom
    b: float = 0.4  # ... and milder length normalisation than the textbook 0.75
    context_weight: float = 0.5  # a term of a card's context (backstory) vs one of its own text
    full_match_terms: int = 3  # distinct shared query terms from which a match counts fully ...
    partial_match_power: float = 2.0  # ... and how steeply fewer shared terms are discounted
    _postings: dict[str, dict[str, float]] = field(default_factory=dict, init=False, repr=False)
    _doc_terms: dict[str, Counter] = field(default_factory=dict, init=False, repr=False)
    _doc_len: dict[str, float] = field(default_factory=dict, init=False, repr=False)
    _total_len: float = field(default=0.0, init=False, repr=False)

    def __len__(self) -> int:
        return len(self._doc_len)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._doc_len

    def add(self, doc_id: str, text: str, context: str = "") -> None:
        """Index ``text`` under ``doc_id``; ``context`` (a card's backstory: the talk around it)
        is indexed too, each of its terms counting ``context_weight`` of a term of ``text``
        (a BM25F-style field weight), so that a card is found by words of the exchange it came
        from without outranking a card that says those words itself."""
        if doc_id in self._doc_len:
            self.remove(doc_id)
        counts = term_counts(text, context, self.context_weight)
        for term, tf in counts.items():
            self._postings.setdefault(term, {})[doc_id] = tf
        self._doc_terms[doc_id] = counts
        length = sum(counts.values())
        self._doc_len[doc_id] = length
        self._total_len += length

    def remove(self, doc_id: str) -> None:
        """Forget a document; unknown ids are ignored."""
        counts = self._doc_terms.pop(doc_id, None)
        if counts is None:
            return
        for term in counts:
            posting = self._postings.get(term)
            if posting is None:
                continue
            posting.pop(doc_id, None)
            if not posting:
                del self._postings[term]
        self._total_len -= self._doc_len.pop(doc_id)

    def idf(self, term: str) -> float:
        """BM25 idf with the +1 inside the log, so it is never negative."""
        df = len(self._postings.get(term, ()))
        n = len(self._doc_len)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def max_score(self, query: str) -> float:
        """An upper bound of any document's BM25 score for ``query``: every term saturated."""
        return sum(self.idf(term) * tf * (self.k1 + 1.0) for term, tf in Counter(tokenize(query)).items())

    def search(self, query: str, k: int, *, raw: bool = False) -> list[tuple[str, float]]:
        """The ``k`` best (doc_id, score) pairs, best first; only documents sharing a term.

        The score (what :func:`memagent.memory.ranking.rank` expects) is BM25 divided by
        the query's best attainable BM25 (0..1: how much of the query, weighted by rarity, the
        document covers), times the partial-match factor ``(shared / min(full_match_terms,
        query terms)) ** partial_match_power`` (1 once a document shares ``full_match_terms``
        distinct query terms, or all of a shorter query's). One or two shared words are weak
        evidence, however rare: a paraphrased question that happens to share them with some
        other card must not let BM25 outvote the dense side. ``raw=True`` returns plain BM25,
        ranked as Okapi BM25 ranks.
        """
        if k <= 0 or not self._doc_len:
            return []
        postings = {term: self._postings.get(term, {}) for term in set(tokenize(query))}
        corpus = Corpus(len(self._doc_len), self._total_len, postings, self._doc_len)
        return score_query(self, corpus, query, k, raw=raw)


@dataclass
class Corpus:
    """What BM25 needs about a corpus for one query: its size and total length, and the
    postings (doc id -> term frequency) and lengths of the documents sharing a query term.
    The in-memory index and the persisted catalog both hand one to :func:`score_query`."""

    n_docs: int
    total_len: float
    postings: Mapping[str, Mapping[str, float]]  # only the query's terms are needed
    doc_len: Mapping[str, float]  # only the documents in ``postings`` are needed

    def idf(self, term: str) -> float:
        """BM25 idf with the +1 inside the log, so it is never negative."""
        df = len(self.postings.get(term, ()))
        return math.log(1.0 + (self.n_docs - df + 0.5) / (df + 0.5))


def score_query(
    params: LexicalIndex, corpus: Corpus, query: str, k: int, *, raw: bool = False
) -> list[tuple[str, float]]:
    """:meth:`LexicalIndex.search` over any :class:`Corpus`, with ``params``' BM25 settings."""
    if k <= 0 or not corpus.n_docs:
        return []
    query_tf = Counter(tokenize(query))
    scores, shared = _bm25(params, corpus, query_tf)
    if raw:
        return heapq.nlargest(k, scores.items(), key=_BY_SCORE_THEN_ID)
    needed = min(params.full_match_terms, len(query_tf)) or 1
    factor = [
        min(shared_terms / needed, 1.0) ** params.partial_match_power for shared_terms in range(len(query_tf) + 1)
    ]
    top = heapq.nlargest(
        k, ((doc_id, score * factor[shared[doc_id]]) for doc_id, score in scores.items()), key=_BY_SCORE_THEN_ID
    )
    best = sum(corpus.idf(term) * tf * (params.k1 + 1.0) for term, tf in query_tf.items())
    scale = 1.0 / (best or 1.0)
    return [(doc_id, score * scale) for doc_id, score in top]


def _bm25(params: LexicalIndex, corpus: Corpus, query_tf: Mapping[str, int]) -> tuple[dict[str, float], Counter]:
    """BM25 of every document sharing a term with the query, and how many distinct query
    terms each shares."""
    scores: dict[str, float] = {}
    shared: Counter = Counter()
    avg_len = corpus.total_len / corpus.n_docs or 1.0
    k1, b = params.k1, params.b
    doc_len = corpus.doc_len
    norm = k1 * (1.0 - b)
    slope = k1 * b / avg_len
    for term, tf_in_query in query_tf.items():
        posting = corpus.postings.get(term)
        if not posting:
            continue
        weight = corpus.idf(term) * tf_in_query
        for doc_id, tf in posting.items():
            gain = weight * tf * (k1 + 1.0) / (tf + norm + slope * doc_len[doc_id])
            scores[doc_id] = scores.get(doc_id, 0.0) + gain
        shared.update(posting.keys())  # counted in C: +1 per document of this term
    return scores, shared


WHOLE_POSTINGS = 1_000  # a longer posting list is scored inside SQLite, not read into Python
AGGREGATE_SLACK = 50  # rows fetched past the k-th, so that ties at the k-th score are all seen
AGGREGATE_TRIES = 3  # each fetches 4× the rows of the one before; then the lists are read whole
ESTIMATE_MARGIN = 1e-9  # relative: how far an estimate summed in another order may be from Python's


class PostingSource(Protocol):
    """A persisted inverted index as :func:`top_k_pruned` reads it (``memory.catalog``)."""

    def size(self) -> tuple[int, float]:
        """(number of documents, their total length)."""

    def doc_freqs(self, terms: Iterable[str]) -> Mapping[str, int]:
        """How many documents hold each term (absent: none)."""

    def postings(self, term: str) -> Sequence[tuple[str, float, float]]:
        """Every document holding ``term``: (doc id, term frequency, document length)."""

    def lookup(self, term: str, ids: list[str]) -> Sequence[tuple[str, float, float]]:
        """The same, for the given documents only."""

    def best_holding(
        self, scales: Mapping[str, float], norm: float, slope: float, factor: Sequence[float], limit: int
    ) -> Sequence[tuple[str, float]]:
        """The ``limit`` best documents holding any of the terms, by the score :func:`top_k_pruned`
        gives a document that holds none of the other query terms — the sum over its terms of
        ``scale × tf / (tf + norm + slope × length)``, times ``factor[number of its terms]`` —
        computed by the source itself (best first, ties by the larger id): (doc id, score)."""


@dataclass
class _Scoring:
    """One query's BM25 terms (see :func:`top_k_pruned`) and the partial scores read so far."""

    k: int
    scale: dict[str, float]  # idf × query tf × (k1 + 1): also the most a term can add
    norm: float
    slope: float
    factor: list[float]  # the partial-match factor by number of distinct shared terms
    raw: dict[str, float] = field(default_factory=dict)
    shared: Counter = field(default_factory=Counter)

    def add(self, term: str, rows: Sequence[tuple[str, float, float]]) -> None:
        scale, norm, slope, raw = self.scale[term], self.norm, self.slope, self.raw
        get = raw.get
        for doc_id, tf, length in rows:
            raw[doc_id] = get(doc_id, 0.0) + scale * tf / (tf + norm + slope * length)
        self.shared.update(row[0] for row in rows)

    def kth_best(self, extra: Iterable[float] = ()) -> float:
        """The ``k``-th best score so far (-1 while fewer are known), ``extra`` scores counted too."""
        scores = [*(self.raw[d] * self.factor[self.shared[d]] for d in self.raw), *extra]
        return heapq.nlargest(self.k, scores)[-1] if len(scores) >= self.k else -1.0

    def bound(self, rest: Sequence[str]) -> float:
        """The best score a document holding only terms of ``rest`` could reach."""
        return sum(self.scale[t] for t in rest) * self.factor[len(rest)]

    def hopeful(self, rest: Sequence[str], threshold: float) -> list[str]:
        """Documents seen so far that the terms of ``rest`` could still lift to ``threshold``."""
        headroom, top = sum(self.scale[t] for t in rest), len(self.factor) - 1
        return [
            d
            for d in self.raw
            if (self.raw[d] + headroom) * self.factor[min(self.shared[d] + len(rest), top)] >= threshold
        ]

    def best(self) -> list[tuple[str, float]]:
        best = heapq.nlargest(
            self.k, ((d, self.raw[d] * self.factor[self.shared[d]]) for d in self.raw), key=_BY_SCORE_THEN_ID
        )
        scale = 1.0 / (sum(self.scale.values()) or 1.0)
        return [(doc_id, score * scale) for doc_id, score in best]


def top_k_pruned(
    params: LexicalIndex, source: PostingSource, query: str, k: int, *, whole_postings: int = WHOLE_POSTINGS
) -> list[tuple[str, float]]:
    """Exactly :func:`score_query`'s top ``k`` (same scores, same order), reading far fewer postings.

    Terms are read rarest first (highest possible contribution, ``idf × qtf × (k1 + 1)``). Once
    the ``k``-th best score so far, which can only grow, is above the best score a document
    holding none of the terms read yet could reach, the remaining (common) terms' postings are
    not read whole: their frequencies are looked up only for the documents that could still
    reach the top ``k`` (MaxScore pruning). Common words of a query ("test", "run") thus cost a
    few indexed lookups instead of tens of thousands of postings.

    When that bound is not reached before a term of more than ``whole_postings`` documents (the
    rare terms match fewer documents than ``k``, or the query is all common words), the source
    ranks the documents holding only the remaining terms itself (:meth:`PostingSource.best_holding`,
    one aggregate query in SQLite) and only its best rows are scored here — kept only when the
    last row fetched provably scores below the ``k``-th best (else more rows, then the old way).
    """
    query_tf = Counter(tokenize(query))
    n_docs, total_len = source.size()
    if k <= 0 or not query_tf or not n_docs:
        return []
    df = source.doc_freqs(list(query_tf))
    idf = {t: math.log(1.0 + (n_docs - df.get(t, 0) + 0.5) / (df.get(t, 0) + 0.5)) for t in query_tf}
    k1 = params.k1
    needed = min(params.full_match_terms, len(query_tf)) or 1
    scoring = _Scoring(
        k,
        {t: idf[t] * tf * (k1 + 1.0) for t, tf in query_tf.items()},
        k1 * (1.0 - params.b),
        k1 * params.b / (total_len / n_docs or 1.0),
        [min(n / needed, 1.0) ** params.partial_match_power for n in range(len(query_tf) + 1)],
    )
    order = sorted((t for t in query_tf if df.get(t, 0) > 0), key=lambda t: (-scoring.scale[t], t))
    read = 0
    while read < len(order):
        rest = order[read:]
        if scoring.kth_best() > scoring.bound(rest):
            break  # no document outside those seen can reach the top k
        if df[order[read]] > whole_postings and _rest_ranked_by_source(scoring, source, rest):
            return scoring.best()
        scoring.add(order[read], source.postings(order[read]))
        read += 1
    rest = order[read:]
    if rest:
        hopeful = scoring.hopeful(rest, scoring.kth_best())
        for term in rest:
            scoring.add(term, source.lookup(term, hopeful))
    return scoring.best()


def _rest_ranked_by_source(scoring: _Scoring, source: PostingSource, rest: list[str]) -> bool:
    """Score the terms of ``rest`` for the documents that can still reach the top ``k``: those
    seen so far that ``rest`` could lift, and the source's best documents holding only ``rest``'s
    terms. False (nothing changed) when the source's rows cannot be shown to suffice."""
    limit = scoring.k + AGGREGATE_SLACK
    for _ in range(AGGREGATE_TRIES):
        ranked = [
            (d, s)
            for d, s in source.best_holding(
                {t: scoring.scale[t] for t in rest}, scoring.norm, scoring.slope, scoring.factor, limit
            )
        ]
        fresh = [(d, s) for d, s in ranked if d not in scoring.raw]
        # lower bounds of final scores: the estimates (less a margin) and the partial scores seen
        threshold = scoring.kth_best(s * (1.0 - ESTIMATE_MARGIN) for _, s in fresh)
        unseen_bound = ranked[-1][1] * (1.0 + ESTIMATE_MARGIN) if len(ranked) == limit else -1.0
        if unseen_bound < threshold or len(ranked) < limit:
            ids = scoring.hopeful(rest, threshold) + [d for d, _ in fresh]
            for term in rest:
                scoring.add(term, source.lookup(term, ids))
            return True
        limit *= 4
    return False
