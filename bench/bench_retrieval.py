"""Retrieval quality on coding-agent memory: memagent's ranking against dense, BM25 and RRF.

Run by hand (not part of the test suite), from the repository root:

    python bench/bench_retrieval.py                     # both splits, side by side
    python bench/bench_retrieval.py --by-kind           # ... plus a breakdown per question kind
    python bench/bench_retrieval.py --markdown out.md   # also write the tables to a file

Data: ``bench/data/coding_memory.json`` (written for this benchmark): cards from four projects
plus user-level cards, confusable across projects, with corrections (a newer card naming the
older one in ``supersedes``; both stay active so the older one is a distractor), people and
dated events, and paraphrased questions. Each question belongs to the ``dev`` split (tune on it)
or the ``test`` split (never tuned on); see the file's ``split_rule``. All cards are indexed for
both splits.

Retrievers, all over the same cards and queries:

- **memagent**: ``ranking.rank`` with the default ``RankingWeights`` over 50 dense and 50
  lexical candidates, the query text passed, card signals (scope, dates, person, supersedes)
  taken from the card as ``MemoryService`` would;
- **dense**: plain MiniLM cosine order over card contents;
- **BM25**: plain Okapi BM25 order (memagent's tokenizer, ``search(raw=True)``);
- **RRF**: reciprocal-rank fusion (k = 60) of the dense and BM25 orders, equal weights.

A second memagent row hides the cards' ``supersedes`` links, to show what is left for a
correction the ranking is not told about.

Metrics: R@1, R@5 (the answer card in the top 1 / 5) and MRR@5. Vectors are cached in bench/out/.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from memagent.embedding.embedders import load_embedder  # noqa: E402
from memagent.memory.lexical import LexicalIndex  # noqa: E402
from memagent.memory.ranking import CardSignals, RankingWeights, candidate_pool, rank  # noqa: E402

DEFAULT_DATA = REPO / "bench" / "data" / "coding_memory.json"
DEPTH = 5
RRF_K = 60.0
METRICS = ("R@1", "R@5", "MRR@5")


@dataclass
class Question:
    id: str
    text: str
    evidence: frozenset[str]
    kind: str
    split: str


@dataclass
class Prepared:
    """The indexed cards of the benchmark and every question's vector."""

    card_ids: list[str]
    card_vectors: np.ndarray
    lexical: LexicalIndex
    signals: dict[str, CardSignals]
    questions: list[Question]
    query_vectors: np.ndarray
    now: datetime


def _time(raw: str) -> datetime:
    return datetime.fromisoformat(raw.replace("Z", "+00:00"))


def card_signals(card: dict) -> CardSignals:
    """What ``MemoryService`` hands the ranker for a card: defaults where the card says nothing."""
    return CardSignals(
        id=card["id"],
        confidence=float(card.get("confidence", 0.8)),
        importance=float(card.get("importance", 0.5)),
        scope=card.get("scope", "project"),
        created_at=_time(card["created_at"]),
        person=card.get("person"),
        supersedes=card.get("supersedes"),
    )


def load(path: Path) -> tuple[list[dict], list[Question], datetime]:
    data = json.loads(path.read_text(encoding="utf-8"))
    cards = data["cards"]
    known = {card["id"] for card in cards}
    questions = []
    for raw in data["queries"]:
        missing = set(raw["evidence"]) - known
        if missing:
            raise SystemExit(f"{path.name}: {raw['id']} names unknown cards {sorted(missing)}")
        if raw["split"] not in ("dev", "test"):
            raise SystemExit(f"{path.name}: {raw['id']} has split {raw['split']!r}")
        questions.append(Question(raw["id"], raw["question"], frozenset(raw["evidence"]), raw["kind"], raw["split"]))
    return cards, questions, _time(data["now"])


def cached_vectors(embedder, texts: list[str], cache_dir: Path, label: str) -> np.ndarray:
    digest = hashlib.sha256("\x00".join([embedder.name, *texts]).encode("utf-8")).hexdigest()[:16]
    path = cache_dir / f"{label}-{digest}.npy"
    if path.is_file():
        return np.load(path)
    vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, vectors)
    tmp.replace(path)
    return vectors


def prepare(path: Path, cache_dir: Path, embedder_name: str = "auto") -> Prepared:
    cards, questions, now = load(path)
    embedder = load_embedder(embedder_name)
    lexical = LexicalIndex()
    for card in cards:
        lexical.add(card["id"], card["content"])
    return Prepared(
        card_ids=[card["id"] for card in cards],
        card_vectors=cached_vectors(embedder, [c["content"] for c in cards], cache_dir, "coding-cards"),
        lexical=lexical,
        signals={card["id"]: card_signals(card) for card in cards},
        questions=questions,
        query_vectors=cached_vectors(embedder, [q.text for q in questions], cache_dir, "coding-queries"),
        now=now,
    )


# --------------------------------------------------------------------------- retrievers

Retriever = Callable[[Prepared, int], list[str]]


def dense_pairs(prepared: Prepared, qi: int, n: int) -> list[tuple[str, float]]:
    sims = prepared.card_vectors @ prepared.query_vectors[qi]
    top = np.argsort(-sims, kind="stable")[:n]
    return [(prepared.card_ids[i], float(sims[i])) for i in top]


def dense_only(prepared: Prepared, qi: int) -> list[str]:
    return [card_id for card_id, _ in dense_pairs(prepared, qi, DEPTH)]


def bm25_only(prepared: Prepared, qi: int) -> list[str]:
    return [card_id for card_id, _ in prepared.lexical.search(prepared.questions[qi].text, DEPTH, raw=True)]


def rrf(prepared: Prepared, qi: int) -> list[str]:
    pool = candidate_pool(DEPTH)
    scores: dict[str, float] = {}
    for ranked in (
        dense_pairs(prepared, qi, pool),
        prepared.lexical.search(prepared.questions[qi].text, pool, raw=True),
    ):
        for position, (card_id, _) in enumerate(ranked):
            scores[card_id] = scores.get(card_id, 0.0) + 1.0 / (RRF_K + position + 1)
    return sorted(scores, key=lambda card_id: (-scores[card_id], card_id))[:DEPTH]


def memagent(weights: RankingWeights | None = None) -> Retriever:
    def retrieve(prepared: Prepared, qi: int) -> list[str]:
        pool = candidate_pool(DEPTH)
        text = prepared.questions[qi].text
        hits = rank(
            dense_pairs(prepared, qi, pool),
            prepared.lexical.search(text, pool),
            prepared.signals,
            now=prepared.now,
            k=DEPTH,
            weights=weights,
            query=text,
        )
        return [hit.id for hit in hits]

    return retrieve


def without_links(retriever: Retriever) -> Retriever:
    """``retriever`` on cards whose ``supersedes`` links are hidden: what the ranking does for a
    correction it is not told about (only the query-time preference for newer cards is left)."""
    unlinked: dict[int, dict[str, CardSignals]] = {}

    def retrieve(prepared: Prepared, qi: int) -> list[str]:
        key = id(prepared)
        if key not in unlinked:
            unlinked[key] = {i: replace(s, supersedes=None) for i, s in prepared.signals.items()}
        return retriever(replace(prepared, signals=unlinked[key]), qi)

    return retrieve


# --------------------------------------------------------------------------- metrics


def score(ranked: list[str], relevant: frozenset[str]) -> dict[str, float]:
    first = next((i for i, card_id in enumerate(ranked[:DEPTH]) if card_id in relevant), None)
    return {
        "R@1": float(first == 0),
        "R@5": float(first is not None),
        "MRR@5": 0.0 if first is None else 1.0 / (first + 1),
    }


def evaluate(prepared: Prepared, retriever: Retriever, split: str, kind: str | None = None) -> dict[str, float]:
    rows = [
        score(retriever(prepared, qi), q.evidence)
        for qi, q in enumerate(prepared.questions)
        if q.split == split and (kind is None or q.kind == kind)
    ]
    return {**{m: statistics.fmean(r[m] for r in rows) if rows else 0.0 for m in METRICS}, "n": len(rows)}


def table(prepared: Prepared, methods: dict[str, Retriever], kind: str | None = None) -> str:
    header = "| method | " + " | ".join(f"{s} {m}" for s in ("dev", "test") for m in METRICS) + " |"
    lines = [header, "|---|" + "---:|" * (2 * len(METRICS))]
    counts = {}
    for name, retriever in methods.items():
        cells = []
        for split in ("dev", "test"):
            result = evaluate(prepared, retriever, split, kind)
            counts[split] = result["n"]
            cells += [f"{result[m]:.3f}" for m in METRICS]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    title = f"questions: dev {counts['dev']}, test {counts['test']}" + (f" (kind: {kind})" if kind else "")
    return title + "\n\n" + "\n".join(lines)


USAGE_WEIGHTS = (0.0, 0.025, 0.05, 0.1, 0.2)
USAGE_COUNTS = (0, 0, 0, 1, 2, 3, 5, 10, 20)  # drawn per card: most never used, a few often


def usage_sweep(prepared: Prepared, seed: int = 7) -> str:
    """The usage weight with use counts drawn at random, unrelated to relevance (the worst case
    for a usage term: it can only reorder by noise). The weight is chosen on dev; test is shown
    to check the choice, not to make it."""
    rng = random.Random(seed)
    noisy = replace(
        prepared, signals={i: replace(s, uses=rng.choice(USAGE_COUNTS)) for i, s in prepared.signals.items()}
    )
    lines = ["| usage weight | dev R@1 | dev MRR@5 | test R@1 | test MRR@5 |", "|---:|---:|---:|---:|---:|"]
    for weight in USAGE_WEIGHTS:
        dev, test = (evaluate(noisy, memagent(RankingWeights(usage=weight)), split) for split in ("dev", "test"))
        lines.append(f"| {weight} | {dev['R@1']:.3f} | {dev['MRR@5']:.3f} | {test['R@1']:.3f} | {test['MRR@5']:.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--cache-dir", type=Path, default=REPO / "bench" / "out")
    parser.add_argument("--by-kind", action="store_true", help="add a table per question kind")
    parser.add_argument("--markdown", type=Path, help="also write the report to this file")
    parser.add_argument(
        "--embedder",
        default="auto",
        choices=["auto", "int8", "onnx", "numpy"],
        help="the embedding backend (auto: int8, as memagent uses)",
    )
    parser.add_argument(
        "--usage-sweep", action="store_true", help="add the usage weight's table, with random use counts (memory.usage)"
    )
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"error: no benchmark data at {args.data}", file=sys.stderr)
        return 2
    prepared = prepare(args.data, args.cache_dir, args.embedder)
    methods = {
        "memagent": memagent(),
        "memagent, supersedes links hidden": without_links(memagent()),
        "dense (MiniLM)": dense_only,
        "BM25": bm25_only,
        "RRF (dense+BM25)": rrf,
    }
    sections = [f"### Coding memory ({len(prepared.card_ids)} cards), all questions\n\n" + table(prepared, methods)]
    if args.by_kind:
        for kind in sorted({q.kind for q in prepared.questions}):
            sections.append(f"#### kind: {kind}\n\n" + table(prepared, methods, kind))
    if args.usage_sweep:
        sections.append("#### usage weight, random use counts\n\n" + usage_sweep(prepared))
    report = "\n\n".join(sections)
    print(report)
    if args.markdown:
        args.markdown.write_text(report + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
