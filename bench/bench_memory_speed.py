"""Memory speed at 1k / 10k / 100k cards: warm search, cold CLI commands against plain chromadb,
`memagent -p` start with memory on and off, peak RSS, and bulk import throughput.

Run by hand (not in CI):

    python bench/bench_memory_speed.py                         # 10k and 100k
    python bench/bench_memory_speed.py --sizes 10000 --runs 5 --queries 200

What is measured (medians of side-by-side runs in one process run, interleaved so machine noise
hits both sides alike):
- warm search: ``MemoryService.search(query, k=5)`` end to end in a warmed-up process — query
  embedding (ONNX MiniLM), Chroma query of the active collections, BM25 over the persisted
  catalog, ranking, reading the winning card files. p50/p95 over ``--queries`` queries.
- cold CLI search: ``memagent memory search Q`` as a fresh process, against a plain-chromadb
  script on the same index (import chromadb, open the collection, load the same embedder, embed
  the query, query top-5): the ratio is what memagent's files, catalog and ranking cost on top.
- cold ``memagent memory list`` / ``show`` (they never load the embedder or Chroma).
- ``memagent -p`` against a local fake Messages API, memory on vs ``--no-memory``; and the peak
  RSS (ru_maxrss) of both.
- bulk import: ``MemoryService.import_cards`` of ``--import-n`` cards (gate, ONNX embedding,
  duplicate checks, card files, catalog, index).

Data: card texts are LoCoMo's conversation turns (``../shared/bench/locomo10.json``), cycled with
a numbered suffix to reach the store size; queries are LoCoMo questions. To keep a 100k store
buildable in minutes on 2 cores, the bulk cards get *random unit vectors* instead of embeddings
(written as card files, catalog rows and index vectors in one pass); only queries are embedded.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
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


LOCOMO = next(
    (
        p / "shared" / "bench" / "locomo10.json"
        for p in Path(__file__).resolve().parents[1:4]
        if (p / "shared" / "bench" / "locomo10.json").exists()
    ),
    Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo10.json",
)


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


PLAIN_CHROMA = """
import sys, chromadb
from memagent.embedding.embedders import load_embedder
client = chromadb.PersistentClient(path=sys.argv[1], settings=chromadb.Settings(anonymized_telemetry=False))
collection = client.get_collection("memagent_active", embedding_function=None)
vector = load_embedder("onnx").embed([sys.argv[2]])[0].tolist()
result = collection.query(query_embeddings=[vector], n_results=5, include=["distances"])
print(len(result["ids"][0]))
"""

PEAK_RSS = """
import atexit, runpy, sys
def report():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                sys.stderr.write("\\nPEAK_RSS_KB " + line.split()[1] + "\\n")
atexit.register(report)
sys.argv = ["memagent", *sys.argv[1:]]
runpy.run_module("memagent", run_name="__main__")
"""
# VmHWM is this process's own high-water mark. ru_maxrss is not: a child started (fork/vfork +
# exec) by a large parent reports the parent's peak, which made memory on and off look equal.


def build_store(root: Path, n: int, embedder, rng: random.Random, texts: list[str] | None) -> float:
    """A store of ``n`` cards (files + catalog + index, random vectors); returns cards/s."""
    from memagent.config import Settings, project_paths
    from memagent.memory.service import MemoryService
    from memagent.memory.vector_index import EmbedderInfo

    service = MemoryService.open(project_paths(root), Settings(), "bench", embedder=embedder)
    store = service.core.stores["project"]  # the bulk bypasses the gate on purpose (see docstring)
    info = EmbedderInfo.of(embedder)
    cards = synthetic_cards(n, rng, texts)
    vectors = random_unit_vectors(n, embedder.dim, seed=n)
    started = time.perf_counter()
    for start in range(0, n, 2000):
        chunk = [(c, False, v) for c, v in zip(cards[start : start + 2000], vectors[start : start + 2000])]
        store.write_many(chunk, info, durable=False)
    seconds = time.perf_counter() - started
    service.close()
    return n / seconds


def warm_search(root: Path, embedder, queries: list[str]) -> dict:
    from memagent.config import Settings, project_paths
    from memagent.memory.service import MemoryService

    service = MemoryService.open(project_paths(root), Settings(), "bench", embedder=embedder)
    started = time.perf_counter()
    service.warm_up()
    warm_up_s = time.perf_counter() - started
    service.search(queries[0], k=5)
    timings, cpu = [], []
    for query in queries:
        started, started_cpu = time.perf_counter(), time.process_time()
        service.search(query, k=5)
        timings.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)  # all threads (ONNX's too)
    store = service.core.stores["project"]
    lexical = []
    for query in queries:
        started = time.perf_counter()
        store.catalog.lexical(query, 50, True)
        lexical.append((time.perf_counter() - started) * 1000)
    service.close()
    return {
        "p50": statistics.median(timings),
        "p95": percentile(timings, 95),
        "warm_up_s": warm_up_s,
        "cpu_p50": statistics.median(cpu),
        "cpu_p95": percentile(cpu, 95),
        "lexical_p50": statistics.median(lexical),
        "lexical_p95": percentile(lexical, 95),
    }


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    out = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=900)
    seconds = time.perf_counter() - started
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])}… failed ({out.returncode}): {out.stderr.strip()[-400:]}")
    return seconds


def peak_rss_mb(args: list[str], env: dict[str, str], cwd: Path) -> float:
    out = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=900
    )
    for line in out.stderr.splitlines():
        if line.startswith("PEAK_RSS_KB "):
            return int(line.split()[1]) / 1024
    raise SystemExit(f"no RSS figure: {out.stderr.strip()[-400:]}")


def cold_commands(root: Path, home: Path, queries: list[str], runs: int) -> dict:
    """Fresh processes, interleaved: memagent's cold search vs plain chromadb, list, -p on/off."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from fakeapi import FakeAnthropic, text

    memagent = str(Path(sys.executable).parent / "memagent")
    results: dict[str, list[float]] = {k: [] for k in ("search", "plain", "list", "show", "p_on", "p_off")}
    with FakeAnthropic(responder=lambda body: text("Done.")) as fake:
        env = {
            **os.environ,
            "MEMAGENT_HOME": str(home),
            "ANTHROPIC_API_KEY": "bench",
            "ANTHROPIC_BASE_URL": fake.url,
            "ANONYMIZED_TELEMETRY": "False",
        }
        some_id = next((root / ".memory" / "cards").iterdir()).stem
        for run in range(runs):
            query = queries[run % len(queries)]
            results["plain"].append(
                timed([sys.executable, "-c", PLAIN_CHROMA, str(root / ".memory" / "index"), query], env, root)
            )
            results["search"].append(timed([memagent, "memory", "search", query, "-C", str(root)], env, root))
            results["list"].append(timed([memagent, "memory", "list", "-C", str(root)], env, root))
            results["show"].append(timed([memagent, "memory", "show", some_id, "-C", str(root)], env, root))
            results["p_off"].append(timed([memagent, "-p", query, "--no-memory", "-C", str(root)], env, root))
            results["p_on"].append(timed([memagent, "-p", query, "-C", str(root)], env, root))
        rss_on = peak_rss_mb(["-p", queries[0], "-C", str(root)], env, root)
        rss_off = peak_rss_mb(["-p", queries[0], "--no-memory", "-C", str(root)], env, root)
    medians = {k: statistics.median(v) for k, v in results.items()}
    return {**medians, "rss_on": rss_on, "rss_off": rss_off}


def bench_size(n: int, embedder, queries: list[str], rng: random.Random, texts: list[str] | None, runs: int) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"memspeed-{n}-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        home = Path(tmp) / "home"
        os.environ["MEMAGENT_HOME"] = str(home)
        fill = build_store(root, n, embedder, rng, texts)
        warm = warm_search(root, embedder, queries)
        cold = cold_commands(root, home, queries, runs)
    return {"n": n, "fill": fill, **warm, **cold}


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
    return {
        "count": count,
        "seconds": seconds,
        "cards_per_s": count / seconds,
        "added": report.added,
        "duplicates": report.duplicates,
        "refused": len(report.refused),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5, help="cold runs of each command (median)")
    parser.add_argument("--import-n", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--texts", choices=["locomo", "templates"], default="locomo")
    args = parser.parse_args(argv)

    from memagent.embedding.embedders import load_embedder

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
        "| cards | warm search p50 / p95 (ms) | BM25 p50 / p95 (ms) | cold search: memagent / plain chromadb (s, ratio) "
        "| cold list / show (s) | -p memory on / off (s, ratio) | peak RSS on / off (MB) | fill (cards/s) |"
    )
    print("|---:|---|---|---|---|---|---|---:|")
    for n in args.sizes:
        r = bench_size(n, embedder, queries, rng, texts, args.runs)
        print(
            f"| {r['n']:,} | {r['p50']:.1f} / {r['p95']:.1f} | {r['lexical_p50']:.1f} / {r['lexical_p95']:.1f} "
            f"| {r['search']:.2f} / {r['plain']:.2f} ({r['search'] / r['plain']:.2f}×) | {r['list']:.2f} / {r['show']:.2f} "
            f"| {r['p_on']:.2f} / {r['p_off']:.2f} ({r['p_on'] / r['p_off']:.2f}×) | {r['rss_on']:.0f} / {r['rss_off']:.0f} "
            f"| {r['fill']:,.0f} |",
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
