"""Memory speed: search latency at 1k / 10k / 100k cards and bulk import throughput.

Run by hand (not in CI):

    /work/venv/bin/python bench/bench_memory_speed.py            # 1k, 10k, 100k
    /work/venv/bin/python bench/bench_memory_speed.py --sizes 1000 10000 --queries 200

What is measured
- search: ``MemoryService.search(query, k=5)`` end to end — query embedding (ONNX MiniLM),
  unfiltered Chroma query of the active collection in both stores, BM25 over the catalog,
  ranking, and fetching the winning cards. p50/p95 over ``--queries`` varied queries, after one
  warm-up search (the first search builds the in-memory lexical catalog; its time is reported
  separately as "cold").
- bulk import: ``MemoryService.import_cards`` of ``--import-n`` synthetic cards, i.e. the gate,
  real ONNX embedding of every card, the near-duplicate query and the Chroma writes (cards/s).
- store fill: raw ``CardStore.add`` throughput of the synthetic bulk.

Data: card texts are LoCoMo's conversation turns (``../shared/bench/locomo10.json``, 5,882
real turns with a natural vocabulary, cycled with a numbered suffix to reach the store size) and
queries are LoCoMo questions; ``--texts templates`` uses generated texts instead. To keep a 100k
store buildable in minutes on 2 cores, the bulk cards get *random unit vectors* instead of
embeddings; only the queries are embedded. Retrieval quality is not measured here (see
bench/bench_locomo.py).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

SUBJECTS = """parser tokenizer scheduler cache router migration deploy pipeline linter formatter
release worker queue database index frontend backend api gateway auth session logger metrics
dashboard cron webhook billing invoice search importer exporter compiler plugin theme editor
terminal shell config secret-manager container cluster node bucket cdn proxy""".split()
TOOLS = """pytest ruff black mypy uv poetry docker kubernetes helm terraform ansible postgres
redis sqlite kafka rabbitmq celery fastapi django flask react vue svelte vite webpack esbuild
rust go java kotlin swift node deno bun nginx caddy grafana prometheus sentry datadog s3 gcs""".split()
VERBS = """uses prefers requires avoids replaced deprecated caches retries validates
streams batches shards encrypts compresses logs monitors schedules""".split()
PEOPLE = "Alice Bob Carol Dave Erin Frank Grace Heidi Ivan Judy Mallory Niaj Olivia Peggy".split()
TEMPLATES = [
    "The {s} {v} {t} for {s2} since the {n} release",
    "{p} asked that the {s} never {v} {t} in production",
    "Run {t} before merging changes to the {s}; it catches {s2} regressions",
    "We decided to move the {s} from {t} to {t2} because of {s2} latency",
    "The {s} config lives in {s2}/{t}.toml and is loaded at startup",
    "{p} prefers {t} over {t2} for anything touching the {s}",
    "Known issue: the {s} {v} {t} twice when the {s2} restarts",
    "Procedure: to rotate the {s} keys, update {t}, then redeploy the {s2}",
]
QUERIES = [
    "how do we deploy the {s}?",
    "what does {p} prefer for the {s}",
    "which tool do we use for {s2}",
    "why did we move away from {t}",
    "where is the {s} configuration",
    "known issues with {t}",
    "how to rotate {s} keys",
    "{t} {s}",
]


def fill(template: str, rng: random.Random) -> str:
    return template.format(
        s=rng.choice(SUBJECTS),
        s2=rng.choice(SUBJECTS),
        t=rng.choice(TOOLS),
        t2=rng.choice(TOOLS),
        v=rng.choice(VERBS),
        p=rng.choice(PEOPLE),
        n=f"{rng.randint(1, 9)}.{rng.randint(0, 20)}",
    )


LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo10.json"


def locomo_texts() -> tuple[list[str], list[str]]:
    """(turn texts, questions) from LoCoMo."""
    import json

    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    turns, questions = [], []
    for sample in data:
        for key, value in sample["conversation"].items():
            if key.startswith("session_") and isinstance(value, list):
                turns.extend(f"{t['speaker']}: {t['text']}" for t in value if t.get("text"))
        questions.extend(q["question"] for q in sample["qa"] if q.get("question"))
    return turns, questions


def synthetic_cards(n: int, rng: random.Random, texts: list[str] | None = None):
    from memagent.memory.cards import MemoryCard

    types = ["fact", "decision", "preference", "procedure", "constraint", "event"]
    cards = []
    for i in range(n):
        if texts:
            body = texts[i % len(texts)][:1900]
            content = body if i < len(texts) else f"{body} (#{i // len(texts)})"
        else:
            content = f"{fill(rng.choice(TEMPLATES), rng)} (#{i})"
        cards.append(
            MemoryCard(
                content=content,
                memory_type=rng.choice(types),
                confidence=round(rng.uniform(0.7, 1.0), 2),
                importance=round(rng.uniform(0.2, 0.9), 2),
            )
        )
    return cards


def random_unit_vectors(n: int, dim: int, seed: int):
    import numpy as np

    vectors = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def bench_size(n: int, embedder, queries: list[str], rng: random.Random, texts: list[str] | None) -> dict:
    from memagent.config import Settings, project_paths
    from memagent.memory.service import MemoryService

    with tempfile.TemporaryDirectory(prefix=f"memspeed-{n}-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        os.environ["MEMAGENT_HOME"] = str(Path(tmp) / "home")
        paths = project_paths(root)
        service = MemoryService.open(paths, Settings(), "bench", embedder=embedder)
        cards = synthetic_cards(n, rng, texts)
        vectors = random_unit_vectors(n, embedder.dim, seed=n)
        store = service._stores["project"]  # the bulk bypasses the gate on purpose (see docstring)
        started = time.perf_counter()
        for start in range(0, n, 5000):
            store.add(cards[start : start + 5000], list(vectors[start : start + 5000]))
        fill_seconds = time.perf_counter() - started

        started = time.perf_counter()
        service.search(queries[0], k=5)
        cold_ms = (time.perf_counter() - started) * 1000

        timings = []
        for query in queries:
            started = time.perf_counter()
            service.search(query, k=5)
            timings.append((time.perf_counter() - started) * 1000)
        parts: dict[str, list[float]] = {"embed": [], "dense": [], "lexical": []}
        catalog = service._catalog(True)
        for query in queries:
            started = time.perf_counter()
            vector = embedder.embed([query])[0]
            parts["embed"].append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            store.nearest_ids(vector, 50)
            parts["dense"].append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            catalog.lexical.search(query, 50)
            parts["lexical"].append((time.perf_counter() - started) * 1000)
        service.close()
    return {
        "n": n,
        "fill_cards_per_s": n / fill_seconds,
        "cold_ms": cold_ms,
        "p50": statistics.median(timings),
        "p95": percentile(timings, 95),
        "embed_p50": statistics.median(parts["embed"]),
        "dense_p50": statistics.median(parts["dense"]),
        "lexical_p50": statistics.median(parts["lexical"]),
        "lexical_p95": percentile(parts["lexical"], 95),
    }


def bench_import(count: int, embedder, rng: random.Random, texts: list[str] | None) -> dict:
    from memagent.config import Settings, project_paths
    from memagent.memory.service import MemoryService

    records = [{"content": c.content, "memory_type": c.memory_type} for c in synthetic_cards(count, rng, texts)]
    with tempfile.TemporaryDirectory(prefix="memspeed-import-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        os.environ["MEMAGENT_HOME"] = str(Path(tmp) / "home")
        service = MemoryService.open(project_paths(root), Settings(), "bench", embedder=embedder)
        started = time.perf_counter()
        report = service.import_cards(records)
        seconds = time.perf_counter() - started
        service.close()
    return {"count": count, "seconds": seconds, "cards_per_s": count / seconds, "added": report.added,
            "duplicates": report.duplicates, "refused": len(report.refused)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--import-n", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--texts", choices=["locomo", "templates"], default="locomo")
    args = parser.parse_args(argv)

    from memagent.memory.embeddings import load_embedder

    embedder = load_embedder()
    print(f"embedder: {embedder.name} (dim {embedder.dim}); load average {os.getloadavg()[0]:.1f}", flush=True)
    rng = random.Random(args.seed)
    texts: list[str] | None = None
    if args.texts == "locomo":
        texts, questions = locomo_texts()
        rng.shuffle(texts)
        queries = rng.sample(questions, args.queries)
    else:
        queries = [fill(rng.choice(QUERIES), rng) for _ in range(args.queries)]
    print(f"texts: {args.texts}; {len(queries)} queries", flush=True)

    print(
        "| cards | search p50 (ms) | search p95 (ms) | parts p50: embed / Chroma top-50 / BM25 (ms) "
        "| BM25 p95 (ms) | first (cold) search (ms) | store fill (cards/s, random vectors) |"
    )
    print("|---:|---:|---:|---|---:|---:|---:|")
    for n in args.sizes:
        row = bench_size(n, embedder, queries, rng, texts)
        print(
            f"| {row['n']:,} | {row['p50']:.1f} | {row['p95']:.1f} | {row['embed_p50']:.1f} / "
            f"{row['dense_p50']:.1f} / {row['lexical_p50']:.1f} | {row['lexical_p95']:.1f} | "
            f"{row['cold_ms']:.0f} | {row['fill_cards_per_s']:,.0f} |",
            flush=True,
        )
    if args.import_n:
        imp = bench_import(args.import_n, embedder, rng, texts[: args.import_n] if texts else None)
        print(
            f"\nbulk import (gate + ONNX embedding + duplicate check + write): {imp['count']:,} cards in "
            f"{imp['seconds']:.1f} s = {imp['cards_per_s']:,.0f} cards/s "
            f"(added {imp['added']}, duplicates {imp['duplicates']}, refused {imp['refused']})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
