"""Hybrid ranking: fuse dense and lexical relevance, then blend in what we know about each card.

Inputs: ``dense`` = (id, cosine) from the vector store and ``lexical`` = (id, coverage 0..1)
from :meth:`memagent.memory.lexical.LexicalIndex.search`, both over-fetched
(:func:`candidate_pool`). Two stages, so that card metadata can reorder relevant cards but never
make an irrelevant one relevant:

1. **Fusion** (``fused``, 0..1) orders candidates. The default, ``"adaptive"``, combines each
   card's dense z-score among the query's candidates with its lexical score relative to the
   best lexical match, the lexical side gated by how much of the query that best match covers
   (see :func:`_adaptive_scores`). ``"weighted"`` sums absolute calibrated scores and
   ``"rrf"`` is reciprocal-rank fusion; both were measured and lose (memory_quality.md).
   **Relevance** (``relevance``, 0..1) is the stronger of the two absolutely calibrated
   scores (cosine mapped from ``dense_floor``..``dense_ceiling``, lexical coverage squashed by
   ``lexical_half``); ``min_score`` is compared with it, because relative scores say nothing
   about whether the best candidate is any good.
2. **Blend**: ``score = fused * (1 + Σ w_i * (signal_i - 0.5) + w_task * task)``, signals in
   0..1: confidence, importance, scope priority (session 1, project 0.5, user 0), recency
   (half-life decay from last use or creation), person (the query names the card's ``person``:
   1, names someone else: 0, names nobody: 0.5), time (the query names a period and the card
   was created in it: 1, outside it: 0, no period or no leading candidate from it: 0.5),
   current (the query asks how things stand now — "now", "these days", "still" — : the
   candidate's creation time scaled from the oldest candidate, 0, to the newest, 1; else 0.5),
   current-task match (1 or 0) and usage (``memory.usage``: 0 never used, up to 1 when used
   often; like the task it only lifts, by at most ``usage``).
3. **Neighbours**: a card from the turn just before or after a high-scoring candidate of the
   same thread (provenance session) gains ``neighbour`` times that candidate's score. An
   answer often only makes sense next to the turn that asked for it ("Tomorrow's gonna be an
   awesome night" answers a question about a grand opening). Only candidates are touched.
4. **Corrections and trust**: a candidate that ``supersedes`` another candidate takes at least
   its score and the older card keeps ``superseded`` of its own (query-time preference for the
   correction when both are still active, e.g. imported, or listed with inactive cards); a card
   learned from tool output (``source == "tool"``) never ranks above a card the user stated.

The LoCoMo-era defaults (fusion, person, time, neighbours) were tuned on LoCoMo
(bench/bench_locomo.py, bench/results/memory_quality.md); ``current``, ``superseded`` and the
time-evidence rule were chosen on the dev split of bench/data/coding_memory.json only
(bench/bench_retrieval.py), with LoCoMo checked not to fall.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from memagent.memory.usage import usage_signal

FUSIONS = ("adaptive", "weighted", "rrf")
SCOPE_PRIORITY = {"session": 1.0, "project": 0.5, "user": 0.0}
CURRENT_CANDIDATES = 5  # a present-tense question orders this many leading candidates by age
WRITTEN_THEN = 0.75  # time signal of a card written in the named period, when others' texts name a time in it
TIME_EVIDENCE_CANDIDATES = 20  # a period the query names counts if one of this many leading candidates is from it


@dataclass
class CardSignals:
    """What the ranker needs to know about a card besides its relevance to the query."""

    id: str
    confidence: float = 1.0
    importance: float = 0.5
    scope: str = "project"
    created_at: datetime | None = None
    last_used_at: datetime | None = None
    task_hint: str | None = None
    status: str = "active"
    person: str | None = None  # who the card is about (the card's "person" field), matched against the query
    thread: str | None = None  # the conversation it came from (provenance session id) ...
    position: int | None = None  # ... and its turn there: cards one turn apart are neighbours
    supersedes: str | None = None  # the card this one corrects (both may be candidates)
    superseded_by: str | None = None  # the card that corrects this one
    source: str = "assistant"  # user, assistant, tool or system: cards from tool output rank below user cards
    periods: tuple[tuple[datetime, datetime], ...] = ()  # time windows the card's text names
    systems: frozenset[str] = frozenset()  # the systems (code names) the card mentions
    names_person: bool = False  # the card names someone the store knows holds a role
    defines: frozenset[str] = frozenset()  # the systems this card introduces ("X is the billing backend")
    uses: int = 0  # times the card was injected, retrieved for the model or cited (``memory.usage``)


@dataclass(frozen=True)
class QueryFacts:
    """What the store understood about a query beyond its words (``memory.entities``,
    ``memory.timeline``): the systems it names or describes, whether it asks for a person
    ("who signs off on …"), and the time window it names (``memory.query.time_windows``).
    Without facts, :func:`rank` reads the time window from the query text itself."""

    systems: frozenset[str] = frozenset()
    asks_person: bool = False
    period: tuple[datetime, datetime] | None = None
    written: tuple[datetime, datetime] | None = None  # when a card about that period was probably written
    described: frozenset[str] = frozenset()  # the systems it called by a description, not by name


@dataclass
class RankedHit:
    id: str
    score: float
    parts: dict[str, float] = field(default_factory=dict)


@dataclass
class RankingWeights:
    """Tunable knobs of :func:`rank`; the defaults are the tuned ones (see module docstring)."""

    fusion: str = "adaptive"  # "adaptive", "weighted" or "rrf" (see fuse())
    dense_weight: float = 0.3
    lexical_weight: float = 0.7
    # adaptive fusion
    dense_center: float = 0.0  # z-score of a cosine that counts as half dense evidence
    dense_spread: float = 0.7
    lexical_gate_low: float = 0.10  # best lexical coverage below which BM25 is ignored
    lexical_gate_high: float = 0.25  # ... and above which it counts fully
    # absolute calibration: the "relevance" threshold and the "weighted" fusion
    dense_floor: float = 0.10  # cosine at or below this is no evidence at all
    dense_ceiling: float = 0.60  # cosine at or above this is full relevance
    lexical_half: float = 0.15  # lexical coverage (LexicalIndex score) that counts as half relevance
    rrf_k: float = 60.0
    confidence: float = 0.10
    importance: float = 0.10
    scope: float = 0.10
    recency: float = 0.05
    recency_half_life_days: float = 30.0
    task: float = 0.20
    usage: float = 0.05  # lift of an often-used card (only lifts; see memory.usage.usage_signal)
    person: float = 0.80  # query names a person: their cards up, other people's down
    time: float = 1.00  # query names a period ("in July 2022", "last week"): cards from it up
    time_outside: float = 0.0  # time signal of a card from outside that period (0: down as far as up)
    neighbour: float = 0.30  # share of the better neighbouring candidate's score a card gains
    current: float = 0.30  # query asks about the present ("now", "these days"): newer candidates up
    superseded: float = 0.50  # a candidate corrected by another candidate keeps this share of its score
    entity: float = 0.40  # query names or describes a system: cards about it up, cards about another down
    who: float = 0.40  # query asks for a person: cards naming someone with a role up
    definition: float = 0.50  # query describes a system: the card that only introduces it down
    min_score: float = 0.10  # default relevance threshold: below this a card is junk

    def __post_init__(self) -> None:
        if self.fusion not in FUSIONS:
            raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}, not {self.fusion!r}")


# --------------------------------------------------------------------------- relevance


def calibrate_dense(cosine: float, weights: RankingWeights) -> float:
    span = max(weights.dense_ceiling - weights.dense_floor, 1e-9)
    return min(max((cosine - weights.dense_floor) / span, 0.0), 1.0)


def calibrate_lexical(bm25: float, weights: RankingWeights) -> float:
    return bm25 / (bm25 + weights.lexical_half) if bm25 > 0 else 0.0


def _rrf_scores(ranked: Sequence[tuple[str, float]], rrf_k: float) -> dict[str, float]:
    ordered = sorted(ranked, key=lambda item: -item[1])
    return {doc_id: 1.0 / (rrf_k + position + 1) for position, (doc_id, _) in enumerate(ordered)}


def _standardise(values: Sequence[float]) -> list[float]:
    """z-scores; all zero when the values do not spread (one candidate, or all equal)."""
    if len(values) < 2:
        return [0.0] * len(values)
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    return [(v - mean) / std if std > 1e-12 else 0.0 for v in values]


def _logistic(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(min(x, 50.0), -50.0)))


def _adaptive_scores(ids, dense_map, lexical_map, floor_cosine, weights, total):
    """Relative dense evidence plus lexical evidence weighted by how well the query matched at all.

    Dense: the cosine's z-score among this query's candidates, squashed by a logistic. Absolute
    cosines say little (in one long conversation every turn is 0.4-0.6 similar to a question
    about it); standing out from the other candidates does.
    Lexical: each card's share of the best card's score, times a gate that rises from 0 to 1 as
    the best card's coverage of the query goes from ``lexical_gate_low`` to
    ``lexical_gate_high``. A question that shares one incidental word with some card (a
    paraphrase) leaves the dense side in charge; a question whose rare terms a card covers
    lets BM25 lead. Without any dense candidates the gate stays open.
    """
    z_dense = _standardise([dense_map.get(i, floor_cosine) for i in ids])
    best_lexical = max(lexical_map.values(), default=0.0)
    span = max(weights.lexical_gate_high - weights.lexical_gate_low, 1e-9)
    gate = min(max((best_lexical - weights.lexical_gate_low) / span, 0.0), 1.0)
    if not dense_map:
        gate = 1.0  # lexical-only mode (or no vectors yet): BM25 is all there is
    scores = {}
    for doc_id, z in zip(ids, z_dense):
        dense_part = _logistic(weights.dense_spread * (z - weights.dense_center))
        lexical_part = gate * lexical_map.get(doc_id, 0.0) / best_lexical if best_lexical > 0 else 0.0
        scores[doc_id] = (weights.dense_weight * dense_part + weights.lexical_weight * lexical_part) / total
    return scores


def fuse(
    dense: Sequence[tuple[str, float]],
    lexical: Sequence[tuple[str, float]],
    weights: RankingWeights,
) -> dict[str, dict[str, float]]:
    """Per candidate id: raw ``dense``/``lexical`` scores, the absolute ``relevance`` (0..1, the
    stronger of the two calibrated scores; what ``min_score`` is compared with) and the ``fused``
    score (0..1) that orders candidates.

    A candidate missing from the lexical list has BM25 0; one missing from the dense list is
    given the lowest cosine seen (it ranked below every listed one).
    """
    dense_map = dict(dense)
    lexical_map = dict(lexical)
    ids = sorted(dense_map.keys() | lexical_map.keys())
    floor_cosine = min(dense_map.values(), default=0.0)
    total = weights.dense_weight + weights.lexical_weight or 1.0
    fused = _fused_scores(ids, dense, lexical, dense_map, lexical_map, floor_cosine, weights, total)
    out: dict[str, dict[str, float]] = {}
    for doc_id in ids:
        d = dense_map.get(doc_id, 0.0)
        lex = lexical_map.get(doc_id, 0.0)
        dense_cal = calibrate_dense(d, weights) if doc_id in dense_map else 0.0
        lexical_cal = calibrate_lexical(lex, weights)
        out[doc_id] = {"dense": d, "lexical": lex, "relevance": max(dense_cal, lexical_cal), "fused": fused[doc_id]}
    return out


def _fused_scores(ids, dense, lexical, dense_map, lexical_map, floor_cosine, weights, total):
    if weights.fusion == "rrf":
        rrf_dense = _rrf_scores(dense, weights.rrf_k)
        rrf_lexical = _rrf_scores(lexical, weights.rrf_k)
        best = total / (weights.rrf_k + 1)
        return {
            i: (weights.dense_weight * rrf_dense.get(i, 0.0) + weights.lexical_weight * rrf_lexical.get(i, 0.0)) / best
            for i in ids
        }
    if weights.fusion == "adaptive":
        return _adaptive_scores(ids, dense_map, lexical_map, floor_cosine, weights, total)
    return {
        i: (
            weights.dense_weight * (calibrate_dense(dense_map[i], weights) if i in dense_map else 0.0)
            + weights.lexical_weight * calibrate_lexical(lexical_map.get(i, 0.0), weights)
        )
        / total
        for i in ids
    }


# --------------------------------------------------------------------------- blend


def _as_utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def recency(card: CardSignals, now: datetime, half_life_days: float) -> float:
    """1.0 for a card used or created now, halving every ``half_life_days``; 0.5 if undated."""
    moment = card.last_used_at or card.created_at
    if moment is None:
        return 0.5
    age_days = max((_as_utc(now) - _as_utc(moment)).total_seconds() / 86400.0, 0.0)
    return math.pow(0.5, age_days / max(half_life_days, 1e-9))


def signals_of(
    card: CardSignals,
    *,
    now: datetime,
    current_task: str | None,
    weights: RankingWeights,
    context: QueryContext | None = None,
) -> dict[str, float]:
    clamp = lambda value: min(max(float(value), 0.0), 1.0)  # noqa: E731
    context = context or QueryContext()
    return {
        "confidence": clamp(card.confidence),
        "importance": clamp(card.importance),
        "scope": SCOPE_PRIORITY.get(card.scope, 0.0),
        "recency": recency(card, now, weights.recency_half_life_days),
        "task": 1.0 if current_task and card.task_hint == current_task else 0.0,
        "usage": usage_signal(card.uses),
        "person": context.person_signal(card),
        "time": context.time_signal(card),
        "current": context.current_signal(card),
        "entity": context.entity_signal(card),
        "who": context.who_signal(card),
        "definition": context.definition_signal(card),
    }


@dataclass
class QueryContext:
    """What the query text says about people, time and the present; neutral (0.5 signals) when
    it says nothing.

    ``cards`` are the candidates, most relevant first. ``time_range`` is kept only when one of
    the ``TIME_EVIDENCE_CANDIDATES`` most relevant candidates was created in it: a question about
    a period none of them comes from ("the talk in December", said of a card written in
    August) is about the content, not about when it was said. ``age_span`` (oldest and newest
    creation time among the ``CURRENT_CANDIDATES`` most relevant candidates, the ``rivals``) is
    set when the query asks about the present ("now", "these days", "still"): of two close
    rivals the newer one describes the current state; cards further down are left alone.
    """

    words: frozenset[str] = frozenset()
    named_people: frozenset[str] = frozenset()
    time_range: tuple[datetime, datetime] | None = None
    age_span: tuple[datetime, datetime] | None = None
    outside_period: float = 0.0  # the time signal of a card created outside the named period
    rivals: frozenset[str] = frozenset()  # the leading candidates the present-tense preference orders
    named_window: tuple[datetime, datetime] | None = None  # the period itself, for dates in card text
    systems: frozenset[str] = frozenset()
    asks_person: bool = False
    described: frozenset[str] = frozenset()
    dated_in_text: bool = False  # a leading candidate's text names a time in the window

    @classmethod
    def from_query(
        cls,
        query: str | None,
        cards: Sequence[CardSignals],
        now: datetime,
        outside_period: float = 0.0,
        facts: QueryFacts | None = None,
    ) -> QueryContext:
        if not query:
            return cls()
        from memagent.memory.query import asks_about_present, time_windows

        if facts is None:
            windows = time_windows(query, now)
            facts = QueryFacts(period=windows[0], written=windows[1]) if windows else QueryFacts()
        words = frozenset(_name_words(query))
        people = frozenset(c.person for c in cards if c.person and _mentions(words, c.person))
        window, said_then = facts.period, facts.written
        leading = cards[:TIME_EVIDENCE_CANDIDATES]
        if window is not None and not any(_in_window(c, window, said_then) for c in leading):
            window = said_then = None
        dated_in_text = window is not None and any(_names_time_in(c, window) for c in leading)
        rivals = frozenset(c.id for c in cards[:CURRENT_CANDIDATES] if c.created_at is not None)
        rival_times = [_as_utc(c.created_at) for c in cards[:CURRENT_CANDIDATES] if c.created_at is not None]
        span = (min(rival_times), max(rival_times)) if rival_times and asks_about_present(query) else None
        return cls(
            words,
            people,
            said_then,
            span,
            outside_period,
            rivals,
            window,
            facts.systems,
            facts.asks_person,
            facts.described,
            dated_in_text,
        )

    def current_signal(self, card: CardSignals) -> float:
        """0..1 by creation time among the candidates when the query asks about the present."""
        if self.age_span is None or card.created_at is None or card.id not in self.rivals:
            return 0.5
        oldest, newest = self.age_span
        spread = (newest - oldest).total_seconds()
        return 0.5 if spread <= 0 else (_as_utc(card.created_at) - oldest).total_seconds() / spread

    def person_signal(self, card: CardSignals) -> float:
        if not self.named_people:
            return 0.5
        return 1.0 if card.person in self.named_people else 0.0

    def time_signal(self, card: CardSignals) -> float:
        if self.named_window is None:
            return 0.5
        if card.created_at is None and not card.periods:
            return 0.5
        if _names_time_in(card, self.named_window):
            return 1.0
        if _in_window(card, self.named_window, self.time_range):
            return WRITTEN_THEN if self.dated_in_text else 1.0  # a date in a text is better evidence
        return self.outside_period

    def entity_signal(self, card: CardSignals) -> float:
        """1 for a card about a system the query refers to, 0 for one only about others, else 0.5."""
        if not self.systems or not card.systems:
            return 0.5
        return 1.0 if card.systems & self.systems else 0.0

    def definition_signal(self, card: CardSignals) -> float:
        """0 for the card that introduces a system the query described (it matches the
        description, rarely the question), else 0.5."""
        return 0.0 if self.described & card.defines else 0.5

    def who_signal(self, card: CardSignals) -> float:
        if not self.asks_person:
            return 0.5
        return 1.0 if card.names_person else 0.0


def _names_time_in(card: CardSignals, window: tuple[datetime, datetime]) -> bool:
    return any(start < window[1] and window[0] < stop for start, stop in card.periods)


def _in_window(
    card: CardSignals, window: tuple[datetime, datetime], said_then: tuple[datetime, datetime] | None
) -> bool:
    """The card's text names a time inside ``window``, or it was written in ``said_then`` (the
    window widened by how long after an event people write about it)."""
    if any(start < window[1] and window[0] < stop for start, stop in card.periods):
        return True
    if card.created_at is None or said_then is None:
        return False
    return said_then[0] <= _as_utc(card.created_at) < said_then[1]


def _name_words(text: str) -> list[str]:
    return [w.lower() for w in re.findall(r"[^\W\d_]+", text)]


def _mentions(query_words: frozenset[str], person: str) -> bool:
    """The query names the person: any of their name's words (of 3+ letters) appears in it."""
    return any(len(w) >= 3 and w in query_words for w in _name_words(person))


def blend_factor(signals: Mapping[str, float], weights: RankingWeights) -> float:
    """Multiplier around 1.0: each signal above 0.5 lifts the score, below 0.5 lowers it.

    The task and usage signals only lift (a card from another task, or never used, is not penalised).
    """
    factor = 1.0
    for name in (
        "confidence",
        "importance",
        "scope",
        "recency",
        "person",
        "time",
        "current",
        "entity",
        "who",
        "definition",
    ):
        factor += getattr(weights, name) * (signals[name] - 0.5)
    factor += weights.task * signals["task"] + weights.usage * signals.get("usage", 0.0)
    return max(factor, 0.0)


# --------------------------------------------------------------------------- entry point


def rank(
    dense: list[tuple[str, float]],
    lexical: list[tuple[str, float]],
    signals: Mapping[str, CardSignals],
    *,
    now: datetime,
    current_task: str | None = None,
    k: int = 5,
    weights: RankingWeights | None = None,
    min_score: float | None = None,
    active_only: bool = True,
    query: str | None = None,
    facts: QueryFacts | None = None,
) -> list[RankedHit]:
    """The ``k`` best cards, best first, each with a ``parts`` breakdown of its score.

    ``dense`` holds (id, cosine) from the vector store, ``lexical`` (id, BM25) from
    :class:`~memagent.memory.lexical.LexicalIndex`; over-fetch both (see :func:`candidate_pool`).
    Ids without an entry in ``signals`` are skipped (the card is gone); with ``active_only``,
    so are cards whose status is not ``active``. ``min_score`` (default
    ``weights.min_score``; pass 0 to keep everything) drops cards whose calibrated relevance is
    below it. ``query`` (the query text, optional) enables the person and time signals;
    ``facts`` (what the store understood about it) the entity, who and text-date signals.
    """
    weights = weights or RankingWeights()
    threshold = weights.min_score if min_score is None else min_score
    candidates = []
    for doc_id, relevance in fuse(dense, lexical, weights).items():
        card = signals.get(doc_id)
        if card is None or (active_only and card.status != "active"):
            continue
        if relevance["relevance"] >= threshold:
            candidates.append((doc_id, card, relevance))
    by_relevance = sorted(candidates, key=lambda item: -item[2]["fused"])
    context = QueryContext.from_query(query, [card for _, card, _ in by_relevance], now, weights.time_outside, facts)
    hits: list[RankedHit] = []
    for doc_id, card, relevance in candidates:
        card_signals = signals_of(card, now=now, current_task=current_task, weights=weights, context=context)
        score = relevance["fused"] * blend_factor(card_signals, weights)
        hits.append(RankedHit(id=doc_id, score=score, parts={**relevance, **card_signals}))
    _share_with_neighbours(hits, signals, weights.neighbour)
    _prefer_corrections(hits, signals, weights.superseded)
    _tool_cards_below_user_cards(hits, signals)
    hits.sort(key=lambda hit: (-hit.score, hit.id))
    return hits[: max(k, 0)]


def _share_with_neighbours(hits: list[RankedHit], signals: Mapping[str, CardSignals], share: float) -> None:
    """Add ``share`` of the better adjacent candidate's score (same thread, position ±1) to
    each hit, in place; scores are read before any is changed. ``parts["neighbour"]`` records
    the gain."""
    if share <= 0:
        return
    by_place: dict[tuple[str, int], float] = {}
    for hit in hits:
        card = signals[hit.id]
        if card.thread is not None and card.position is not None:
            place = (card.thread, card.position)
            by_place[place] = max(by_place.get(place, 0.0), hit.score)
    for hit in hits:
        card = signals[hit.id]
        if card.thread is None or card.position is None:
            continue
        best = max(by_place.get((card.thread, card.position + step), 0.0) for step in (-1, 1))
        hit.parts["neighbour"] = share * best
        hit.score += share * best


def _prefer_corrections(hits: list[RankedHit], signals: Mapping[str, CardSignals], keep: float) -> None:
    """The current card of a correction chain over its predecessors, in place: a candidate that
    was corrected (it has a successor, or its status says so) keeps only ``keep`` of its score,
    and a candidate that corrects another candidate answers whatever the older one answers: it
    gets at least the older one's (reduced) score. ``parts["superseded"]`` marks the demoted card;
    one whose successor is not a candidate is shown as that successor (``Reading._fold_chains``)."""
    by_id = {hit.id: hit for hit in hits}
    pairs = [(hit, by_id.get(signals[hit.id].supersedes or "")) for hit in hits]
    pairs += [(by_id.get(signals[hit.id].superseded_by or ""), hit) for hit in hits]
    for newer, older in pairs:
        if newer is not None and older is not None and older is not newer:
            newer.score = max(newer.score, older.score)
            older.parts["superseded"] = 1.0
    for hit in hits:
        if hit.parts.get("superseded") or signals[hit.id].superseded_by or signals[hit.id].status == "superseded":
            hit.parts["superseded"] = 1.0
            hit.score *= keep


def _tool_cards_below_user_cards(hits: list[RankedHit], signals: Mapping[str, CardSignals]) -> None:
    """What tool output taught (a README, a command's output) never outranks what the user said:
    a ``source == "tool"`` hit scoring above the lowest user-stated hit is lowered just below it."""
    user_scores = [hit.score for hit in hits if signals[hit.id].source == "user"]
    if not user_scores:
        return
    ceiling = min(user_scores) * 0.999
    for hit in hits:
        if signals[hit.id].source == "tool" and hit.score > ceiling:
            hit.parts["capped"] = hit.score
            hit.score = ceiling


def candidate_pool(k: int) -> int:
    """How many candidates to fetch from each retriever for a final top-``k``."""
    return max(50, 5 * k)
