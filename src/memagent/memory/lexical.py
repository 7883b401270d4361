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
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Protocol, Sequence

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


def score_query(params: LexicalIndex, corpus: Corpus, query: str, k: int, *, raw: bool = False) -> list[tuple[str, float]]:
    """:meth:`LexicalIndex.search` over any :class:`Corpus`, with ``params``' BM25 settings."""
    if k <= 0 or not corpus.n_docs:
        return []
    query_tf = Counter(tokenize(query))
    scores, shared = _bm25(params, corpus, query_tf)
    if raw:
        return heapq.nlargest(k, scores.items(), key=_BY_SCORE_THEN_ID)
    needed = min(params.full_match_terms, len(query_tf)) or 1
    factor = [min(shared_terms / needed, 1.0) ** params.partial_match_power
              for shared_terms in range(len(query_tf) + 1)]
    top = heapq.nlargest(k, ((doc_id, score * factor[shared[doc_id]]) for doc_id, score in scores.items()),
                         key=_BY_SCORE_THEN_ID)
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


def top_k_pruned(params: LexicalIndex, source: PostingSource, query: str, k: int) -> list[tuple[str, float]]:
    """Exactly :func:`score_query`'s top ``k`` (same scores, same order), reading far fewer postings.

    Terms are read rarest first (highest possible contribution, ``idf × qtf × (k1 + 1)``). Once
    the ``k``-th best score so far, which can only grow, is above the best score a document
    holding none of the terms read yet could reach, the remaining (common) terms' postings are
    not read whole: their frequencies are looked up only for the documents that could still
    reach the top ``k`` (MaxScore pruning). Common words of a query ("test", "run") thus cost a
    few indexed lookups instead of tens of thousands of postings.
    """
    query_tf = Counter(tokenize(query))
    n_docs, total_len = source.size()
    if k <= 0 or not query_tf or not n_docs:
        return []
    df = source.doc_freqs(list(query_tf))
    idf = {t: math.log(1.0 + (n_docs - df.get(t, 0) + 0.5) / (df.get(t, 0) + 0.5)) for t in query_tf}
    weight = {t: idf[t] * tf for t, tf in query_tf.items()}
    k1 = params.k1
    norm, slope = k1 * (1.0 - params.b), k1 * params.b / (total_len / n_docs or 1.0)
    needed = min(params.full_match_terms, len(query_tf)) or 1
    factor = [min(n / needed, 1.0) ** params.partial_match_power for n in range(len(query_tf) + 1)]
    ceiling = {t: weight[t] * (k1 + 1.0) for t in query_tf}
    order = sorted((t for t in query_tf if df.get(t, 0) > 0), key=lambda t: (-ceiling[t], t))
    raw: dict[str, float] = {}
    shared: Counter = Counter()

    def add(term: str, rows: Sequence[tuple[str, float, float]]) -> None:
        scale, get = weight[term] * (k1 + 1.0), raw.get
        for doc_id, tf, length in rows:
            raw[doc_id] = get(doc_id, 0.0) + scale * tf / (tf + norm + slope * length)
        shared.update(row[0] for row in rows)

    def kth_best() -> float:
        if len(raw) < k:
            return -1.0
        return heapq.nlargest(k, (raw[d] * factor[shared[d]] for d in raw))[-1]

    read = 0
    while read < len(order):
        rest = order[read:]
        if kth_best() > sum(ceiling[t] for t in rest) * factor[len(rest)]:
            break  # no document outside those seen can reach the top k
        add(order[read], source.postings(order[read]))
        read += 1
    rest = order[read:]
    if rest:
        threshold, headroom = kth_best(), sum(ceiling[t] for t in rest)
        top = len(query_tf)
        hopeful = [d for d in raw if (raw[d] + headroom) * factor[min(shared[d] + len(rest), top)] >= threshold]
        for term in rest:
            add(term, source.lookup(term, hopeful))
    best = heapq.nlargest(k, ((d, raw[d] * factor[shared[d]]) for d in raw), key=_BY_SCORE_THEN_ID)
    scale = 1.0 / (sum(ceiling.values()) or 1.0)
    return [(doc_id, score * scale) for doc_id, score in best]
