"""Retrieval quality of memagent's memory ranking on LoCoMo and on memagent's own paraphrase set.

Run by hand (not part of the test suite):

    /work/venv/bin/python bench/bench_locomo.py                       # default paths
    /work/venv/bin/python bench/bench_locomo.py --data ../shared/bench/locomo10.json --grid

LoCoMo (DESIGN §10): each conversation is its own index, each turn a card
``"<speaker>: <text>"`` (a shared photo's caption appended as ``[shares a photo: …]``) dated with
its session's date; each question of categories 1–4 is a query whose relevant cards are its
evidence turns. The paraphrase set (bench/paraphrase/*.json) holds coding-agent memory cards and
questions written to share no content word with the card that answers them.

Three retrievers run side by side on the same cards and queries: BM25 alone (memagent's
LexicalIndex), dense alone (MiniLM cosine), and memagent's hybrid ranking (``ranking.rank`` with
the default RankingWeights over over-fetched candidates of both, exactly as the store uses it).
Metrics: R_any@1/5/10 (some evidence in the top k), R_all@10 (all evidence in the top 10),
NDCG@10 (binary gains) and MRR@10. Query and card vectors are cached in bench/out/.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from memagent.embedding.embedders import load_embedder  # noqa: E402
from memagent.memory.lexical import LexicalIndex, tokenize  # noqa: E402
from memagent.memory.ranking import CardSignals, RankingWeights, candidate_pool, rank  # noqa: E402

# The hybrid without the signals that LoCoMo's shape rewards (a speaker named in the question,
# a session date named in it, the turns around the evidence): what is left generalises.
GENERIC_ONLY = RankingWeights(person=0.0, time=0.0, neighbour=0.0)
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
EVIDENCE_ID = re.compile(r"D:?(\d+):(\d+)")
K_VALUES = (1, 5, 10)
RANK_DEPTH = 10


@dataclass
class Query:
    text: str
    category: str
    evidence: frozenset[str]


@dataclass
class Corpus:
    """One independent memory: its cards and the questions asked of it."""

    name: str
    card_ids: list[str]
    card_texts: list[str]
    created_at: list[datetime]
    people: list[str | None]
    queries: list[Query] = field(default_factory=list)


# --------------------------------------------------------------------------- data


def parse_session_date(raw: str) -> datetime:
    return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def normalise_evidence(raw_ids: Sequence[str], known: set[str]) -> frozenset[str]:
    """``"D8:6; D9:17"`` → two ids, ``"D:11:26"`` → ``D11:26``, ``"D30:05"`` → ``D30:5``;
    ids that name no turn are dropped."""
    found = set()
    for raw in raw_ids:
        for session, turn in EVIDENCE_ID.findall(str(raw)):
            candidate = f"D{int(session)}:{int(turn)}"
            if candidate in known:
                found.add(candidate)
    return frozenset(found)


def turn_text(turn: dict) -> str:
    text = f"{turn['speaker']}: {turn.get('text', '')}".strip()
    caption = turn.get("blip_caption")
    return f"{text} [shares {caption}]" if caption else text


def load_locomo(path: Path) -> list[Corpus]:
    corpora = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conversation = sample["conversation"]
        ids, texts, dates, people = [], [], [], []
        sessions = sorted(
            (int(key.split("_")[1]), value)
            for key, value in conversation.items()
            if re.fullmatch(r"session_\d+", key) and isinstance(value, list)
        )
        for number, turns in sessions:
            when = parse_session_date(conversation[f"session_{number}_date_time"])
            for turn in turns:
                ids.append(turn["dia_id"])
                texts.append(turn_text(turn))
                dates.append(when)
                people.append(turn["speaker"])
        corpus = Corpus(sample.get("sample_id", f"conv-{len(corpora)}"), ids, texts, dates, people)
        known = set(ids)
        for qa in sample["qa"]:
            category = qa.get("category")
            if category not in CATEGORY_NAMES:
                continue
            evidence = normalise_evidence(qa.get("evidence", []), known)
            if evidence:
                corpus.queries.append(Query(qa["question"], CATEGORY_NAMES[category], evidence))
        corpora.append(corpus)
    return corpora


def load_paraphrase(directory: Path) -> list[Corpus]:
    """Each JSON file: {"cards": [{"id", "content", "days_ago"?}], "queries": [{"question", "evidence", "kind"?}]}."""
    corpora = []
    base = datetime(2026, 11, 1, tzinfo=UTC)
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        cards = data["cards"]
        corpus = Corpus(
            path.stem,
            [c["id"] for c in cards],
            [c["content"] for c in cards],
            [base - timedelta(days=c.get("days_ago", 0)) for c in cards],
            [c.get("person") for c in cards],
        )
        known = set(corpus.card_ids)
        for q in data["queries"]:
            missing = set(q["evidence"]) - known
            if missing:
                raise SystemExit(f"{path.name}: unknown evidence {sorted(missing)} for {q['question']!r}")
            corpus.queries.append(Query(q["question"], q.get("kind", "paraphrase"), frozenset(q["evidence"])))
        corpora.append(corpus)
    return corpora


def lexical_overlap(corpus: Corpus) -> list[tuple[str, str, set[str]]]:
    """Paraphrase questions that share an index term with an evidence card (should be none)."""
    texts = dict(zip(corpus.card_ids, corpus.card_texts))
    leaks = []
    for query in corpus.queries:
        q_terms = set(tokenize(query.text))
        for card_id in query.evidence:
            shared = q_terms & set(tokenize(texts[card_id]))
            if shared:
                leaks.append((query.text, card_id, shared))
    return leaks


# --------------------------------------------------------------------------- vectors


BACKSTORY_TURNS = 2


def previous_turns(corpus: Corpus, turns: int = BACKSTORY_TURNS) -> list[str]:
    """Each turn card's backstory: the ``turns`` turns before it in the same session (DESIGN §7
    ``backstory``, "how and why it came up"), oldest first; empty for a session's first turn."""
    backstories = []
    for i in range(len(corpus.card_texts)):
        session = corpus.card_ids[i].split(":")[0]
        earlier = [j for j in range(max(i - turns, 0), i) if corpus.card_ids[j].split(":")[0] == session]
        backstories.append(" ".join(corpus.card_texts[j] for j in earlier))
    return backstories


def turn_place(card_id: str) -> tuple[str | None, int | None]:
    """``"D3:7"`` → (``"D3"``, 7): the card's thread (session) and position, as provenance
    session id and turn would give them; (None, None) for ids of another shape."""
    match = re.fullmatch(r"(D\d+):(\d+)", card_id)
    return (match.group(1), int(match.group(2))) if match else (None, None)


def cached_vectors(embedder, texts: list[str], cache_dir: Path, label: str) -> np.ndarray:
    digest = hashlib.sha256(("\x00".join([embedder.name, *texts])).encode("utf-8")).hexdigest()[:16]
    path = cache_dir / f"{label}-{digest}.npy"
    if path.is_file():
        return np.load(path)
    vectors = embedder.embed(texts)
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, vectors)
    tmp.replace(path)
    return vectors


@dataclass
class PreparedCorpus:
    corpus: Corpus
    lexical: LexicalIndex
    card_vectors: np.ndarray
    query_vectors: np.ndarray
    signals: dict[str, CardSignals]
    now: datetime


def prepare(
    corpus: Corpus, embedder, cache_dir: Path, backstories: list[str] | None = None, **bm25_params: float
) -> PreparedCorpus:
    """Index a corpus as MemoryService does: BM25 over each card's text with its backstory as
    the (down-weighted) context field, vectors of the card texts alone."""
    index = LexicalIndex(**bm25_params)
    for card_id, text, backstory in zip(corpus.card_ids, corpus.card_texts, backstories or [""] * len(corpus.card_ids)):
        index.add(card_id, text, context=backstory)
    signals = {}
    for card_id, when, person in zip(corpus.card_ids, corpus.created_at, corpus.people):
        thread, position = turn_place(card_id)
        signals[card_id] = CardSignals(
            id=card_id,
            confidence=0.9,
            importance=0.5,
            scope="project",
            created_at=when,
            last_used_at=None,
            task_hint=None,
            status="active",
            person=person,
            thread=thread,
            position=position,
        )
    return PreparedCorpus(
        corpus=corpus,
        lexical=index,
        card_vectors=cached_vectors(embedder, corpus.card_texts, cache_dir, f"cards-{corpus.name}"),
        query_vectors=cached_vectors(embedder, [q.text for q in corpus.queries], cache_dir, f"queries-{corpus.name}"),
        signals=signals,
        now=max(corpus.created_at) + timedelta(days=1),
    )


# --------------------------------------------------------------------------- retrievers

Retriever = Callable[[PreparedCorpus, int], list[str]]


def dense_candidates(prepared: PreparedCorpus, qi: int, n: int) -> list[tuple[str, float]]:
    sims = prepared.card_vectors @ prepared.query_vectors[qi]
    top = np.argsort(-sims, kind="stable")[:n]
    return [(prepared.corpus.card_ids[i], float(sims[i])) for i in top]


def bm25_only(prepared: PreparedCorpus, qi: int) -> list[str]:
    """Plain Okapi BM25 order (``raw``: without the partial-match discount of memagent's
    normalised scores) over the same index text as the hybrid."""
    return [d for d, _ in prepared.lexical.search(prepared.corpus.queries[qi].text, RANK_DEPTH, raw=True)]


def dense_only(prepared: PreparedCorpus, qi: int) -> list[str]:
    return [d for d, _ in dense_candidates(prepared, qi, RANK_DEPTH)]


def hybrid(weights: RankingWeights | None = None, min_score: float | None = None) -> Retriever:
    def retrieve(prepared: PreparedCorpus, qi: int) -> list[str]:
        pool = candidate_pool(RANK_DEPTH)
        hits = rank(
            dense_candidates(prepared, qi, pool),
            prepared.lexical.search(prepared.corpus.queries[qi].text, pool),
            prepared.signals,
            now=prepared.now,
            k=RANK_DEPTH,
            weights=weights,
            min_score=min_score,
            query=prepared.corpus.queries[qi].text,
        )
        return [h.id for h in hits]

    return retrieve


# --------------------------------------------------------------------------- metrics


def score_ranking(ranked: list[str], relevant: frozenset[str]) -> dict[str, float]:
    ranked = ranked[:RANK_DEPTH]
    out = {f"R_any@{k}": float(any(r in relevant for r in ranked[:k])) for k in K_VALUES}
    out["R_all@10"] = float(relevant <= set(ranked))
    dcg = sum(1.0 / math.log2(i + 2) for i, r in enumerate(ranked) if r in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(relevant), RANK_DEPTH)))
    out["NDCG@10"] = dcg / ideal
    first = next((i for i, r in enumerate(ranked) if r in relevant), None)
    out["MRR"] = 0.0 if first is None else 1.0 / (first + 1)
    return out


METRICS = ("R_any@1", "R_any@5", "R_any@10", "R_all@10", "NDCG@10", "MRR")


def evaluate(prepared: list[PreparedCorpus], retriever: Retriever) -> dict[str, dict[str, float]]:
    """Mean metrics per category and overall, plus ``n``."""
    rows: dict[str, list[dict[str, float]]] = {}
    for p in prepared:
        for qi, query in enumerate(p.corpus.queries):
            scores = score_ranking(retriever(p, qi), query.evidence)
            rows.setdefault(query.category, []).append(scores)
            rows.setdefault("overall", []).append(scores)
    return {
        group: {**{m: statistics.fmean(r[m] for r in rs) for m in METRICS}, "n": float(len(rs))}
        for group, rs in rows.items()
    }


# --------------------------------------------------------------------------- reporting


def format_table(title: str, results: dict[str, dict[str, dict[str, float]]]) -> str:
    groups = ["overall"] + sorted(g for g in next(iter(results.values())) if g != "overall")
    lines = [
        f"### {title}",
        "",
        "| group | n | method | " + " | ".join(METRICS) + " |",
        "|---|---:|---|" + "---:|" * len(METRICS),
    ]
    for group in groups:
        for method, by_group in results.items():
            row = by_group[group]
            cells = " | ".join(f"{row[m]:.3f}" for m in METRICS)
            lines.append(f"| {group} | {int(row['n'])} | {method} | {cells} |")
    return "\n".join(lines)


def run_methods(prepared: list[PreparedCorpus], methods: dict[str, Retriever]) -> dict[str, dict]:
    return {name: evaluate(prepared, retriever) for name, retriever in methods.items()}


def grid_search(locomo: list[PreparedCorpus], paraphrase: list[PreparedCorpus]) -> None:
    """Score adaptive-fusion variants on both sets, best LoCoMo NDCG first among those that keep
    the paraphrase NDCG within 0.05 of the best seen."""
    base = RankingWeights()
    rows = []
    for dense_weight in (0.3, 0.4):
        for spread in (0.7, 1.0):
            for low, high in ((0.05, 0.25), (0.1, 0.25), (0.1, 0.3), (0.15, 0.35)):
                w = replace(
                    base,
                    dense_weight=dense_weight,
                    lexical_weight=1 - dense_weight,
                    dense_spread=spread,
                    lexical_gate_low=low,
                    lexical_gate_high=high,
                )
                lo = evaluate(locomo, hybrid(w))["overall"]
                pa = evaluate(paraphrase, hybrid(w))["overall"]
                rows.append((lo["NDCG@10"], lo["R_any@10"], pa["NDCG@10"], pa["R_any@10"], w))
    best_para = max(r[2] for r in rows)
    for lo_ndcg, lo_r10, pa_ndcg, pa_r10, w in sorted(rows, key=lambda r: (r[2] < best_para - 0.05, -r[0]))[:12]:
        print(
            f"locomo R@10 {lo_r10:.3f} NDCG {lo_ndcg:.3f} | paraphrase R@10 {pa_r10:.3f} NDCG {pa_ndcg:.3f} "
            f"| dw={w.dense_weight} spread={w.dense_spread} gate={w.lexical_gate_low}-{w.lexical_gate_high}"
        )


def fusion_table(sets: dict[str, list[PreparedCorpus]]) -> str:
    """Fusion methods side by side (overall figures), all other weights at their defaults."""
    base = RankingWeights()
    variants = {
        "adaptive (default)": base,
        "adaptive, no person/time signals": replace(base, person=0.0, time=0.0),
        "adaptive, no neighbour sharing": replace(base, neighbour=0.0),
        "weighted sum of calibrated scores": replace(base, fusion="weighted"),
        "reciprocal-rank fusion": replace(base, fusion="rrf"),
    }
    lines = [
        "### Fusion methods (overall)",
        "",
        "| fusion | " + " | ".join(f"{name} R_any@10 | {name} NDCG@10" for name in sets) + " |",
        "|---|" + "---:|---:|" * len(sets),
    ]
    for label, weights in variants.items():
        cells = []
        for prepared in sets.values():
            row = evaluate(prepared, hybrid(weights))["overall"]
            cells += [f"{row['R_any@10']:.3f}", f"{row['NDCG@10']:.3f}"]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def embedding_speed(questions: Sequence[str], cards: Sequence[str], repeats: int = 31) -> str:
    """ONNX vs numpy backends on the same texts, interleaved in one run (so machine noise hits
    both alike): median/p95 ms per single query, and seconds per 1,000 card texts (median of 3)."""
    embedders = [load_embedder("int8"), load_embedder("onnx"), load_embedder("numpy")]
    single: dict[str, list[float]] = {e.name: [] for e in embedders}
    bulk: dict[str, list[float]] = {e.name: [] for e in embedders}
    for embedder in embedders:
        embedder.embed(list(questions[:2]))  # warm up
    for text in questions[:repeats]:
        for embedder in embedders:
            t0 = time.perf_counter()
            embedder.embed([text])
            single[embedder.name].append((time.perf_counter() - t0) * 1000)
    for _ in range(3):
        for embedder in embedders:
            t0 = time.perf_counter()
            embedder.embed(list(cards[:1000]))
            bulk[embedder.name].append(time.perf_counter() - t0)
    lines = [
        "### Embedding backends (interleaved, same run)",
        "",
        "| backend | query p50 ms | query p95 ms | 1,000 LoCoMo turns s (median of 3) |",
        "|---|---:|---:|---:|",
    ]
    for name, times in single.items():
        times.sort()
        p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
        lines.append(f"| {name} | {statistics.median(times):.1f} | {p95:.1f} | {statistics.median(bulk[name]):.1f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/work/shared/bench/locomo10.json"))
    parser.add_argument("--paraphrase", type=Path, default=REPO / "bench" / "paraphrase")
    parser.add_argument("--cache-dir", type=Path, default=REPO / "bench" / "out")
    parser.add_argument(
        "--embedder",
        default="int8",
        choices=["int8", "onnx", "numpy"],
        help="the embedding backend (int8: what memagent uses by default)",
    )
    parser.add_argument("--grid", action="store_true", help="also search fusion weights on both sets")
    parser.add_argument("--markdown", type=Path, help="write the tables to this file")
    parser.add_argument("--embed-speed", action="store_true", help="also time the ONNX and numpy backends")
    args = parser.parse_args(argv)

    if not args.data.is_file():
        print(f"LoCoMo data not found: {args.data}", file=sys.stderr)
        return 1
    embedder = load_embedder(args.embedder)
    if embedder.dim == 0:
        print(f"no embedder: {embedder.fallback_reasons}", file=sys.stderr)
        return 1
    started = time.perf_counter()
    raw_locomo = load_locomo(args.data)
    locomo_backstory = [prepare(c, embedder, args.cache_dir, previous_turns(c)) for c in raw_locomo]
    locomo = [prepare(c, embedder, args.cache_dir) for c in raw_locomo]
    paraphrase_corpora = load_paraphrase(args.paraphrase) if args.paraphrase.is_dir() else []
    for corpus in paraphrase_corpora:
        for question, card, shared in lexical_overlap(corpus):
            print(f"warning: paraphrase question shares {sorted(shared)} with {card}: {question}", file=sys.stderr)
    paraphrase = [prepare(c, embedder, args.cache_dir) for c in paraphrase_corpora]
    prep_seconds = time.perf_counter() - started

    methods = {"memagent hybrid": hybrid(), "BM25 only": bm25_only, "dense only": dense_only}
    sections = [
        format_table(
            f"LoCoMo ({args.data.name}, categories 1-4), turn cards with the "
            f"{BACKSTORY_TURNS} previous turns as backstory (headline)",
            run_methods(locomo_backstory, methods),
        ),
        format_table("LoCoMo, plain turn cards (no backstory)", run_methods(locomo, methods)),
        format_table(
            "LoCoMo, plain turn cards, LoCoMo-only signals off (person, time and neighbouring turns weighted 0)",
            run_methods(
                locomo,
                {
                    "memagent hybrid, generic signals only": hybrid(GENERIC_ONLY),
                    "BM25 only": bm25_only,
                    "dense only": dense_only,
                },
            ),
        ),
    ]
    sets = {"LoCoMo+backstory": locomo_backstory, "LoCoMo plain": locomo}
    if paraphrase:
        cards = sum(len(p.corpus.card_ids) for p in paraphrase)
        queries = sum(len(p.corpus.queries) for p in paraphrase)
        sections.append(
            format_table(f"Paraphrase set ({cards} cards, {queries} questions)", run_methods(paraphrase, methods))
        )
        sets["paraphrase"] = paraphrase
    sections.append(fusion_table(sets))
    if args.embed_speed:
        questions = [q.text for corpus in raw_locomo for q in corpus.queries]
        sections.append(embedding_speed(questions, [t for c in raw_locomo for t in c.card_texts]))
    report = "\n\n".join(sections)
    print(report)
    print(f"\nembedder {embedder.name}; preparation (index + vectors, cached in {args.cache_dir}) {prep_seconds:.1f} s")
    if args.markdown:
        args.markdown.write_text(report + "\n", encoding="utf-8")
    if args.grid and paraphrase:
        grid_search(locomo_backstory, paraphrase)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
