"""The int8 embedder's resident set and speed: the mapped session against the plain one, in one run.

Usage::

    python bench/bench_embedder_rss.py --runs 5

Each run starts one fresh process per variant, interleaved (plain, mapped, plain, mapped …) so
machine noise hits both alike, and every process measures, in order:

- ``create``: wall time of building the embedder (tokenizer and session) from a warm cache;
- ``rss_growth``: ``VmRSS`` after building it minus ``VmRSS`` before (numpy, tokenizers and
  onnxruntime already imported, so the figure is the tokenizer and the session);
- ``peak_query`` / ``peak_batch``: ``VmHWM`` after embedding one question, then after embedding
  64 card texts (two batches of 32, as the import does);
- ``query_ms``: median latency of 200 single questions, warm;
- ``texts_per_s``: 1,000 card texts embedded in batches of 32 (the import's path), per second of
  wall time and (``texts_per_cpu_s``) per second of the process's CPU time (all its threads), the
  steadier figure on a loaded machine;
- ``rss_end_mb``: ``VmRSS`` at the end, what the process keeps.

Variants: ``plain`` loads the cached int8 graph whole and lets onnxruntime optimise it (the old
way, :func:`memagent.embedding.embedders.plain_session`); ``mapped`` opens the graph optimised
once and saved with its weights apart (:func:`memagent.embedding.embedders.mapped_session`).
Texts: the cards and questions of ``bench/data/coding_memory.json``. Prints the medians and the
ratio mapped / plain, and checks the two variants' vectors agree.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "bench" / "data" / "coding_memory.json"
VARIANTS = ("plain", "mapped")
MEASURES = (
    "create_ms",
    "rss_growth_mb",
    "peak_query_mb",
    "peak_batch_mb",
    "query_ms",
    "texts_per_s",
    "texts_per_cpu_s",
    "rss_end_mb",
)


def _status_mb() -> dict[str, float]:
    values = {}
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) / 1024
    return values


def _texts() -> tuple[list[str], list[str]]:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    return [c["content"] for c in data["cards"]], [q["question"] for q in data["queries"]]


def child(variant: str, cache: Path, vectors_out: Path | None) -> dict:
    import numpy as np
    import onnxruntime  # noqa: F401 - imported before the first reading, like the embedder's caller
    import tokenizers  # noqa: F401

    from memagent.embedding import embedders
    from memagent.embedding.model_files import verified_model_files

    class PlainInt8(embedders.OnnxInt8Embedder):
        def _open_session(self, ort, graph):
            return embedders.plain_session(ort, graph)

    kind = PlainInt8 if variant == "plain" else embedders.OnnxInt8Embedder
    cards, questions = _texts()
    files = verified_model_files(cache_dir=cache)
    before = _status_mb()["VmRSS"]
    start = time.perf_counter()
    embedder = kind(files, cache_dir=cache)
    result = {"create_ms": (time.perf_counter() - start) * 1000, "rss_growth_mb": _status_mb()["VmRSS"] - before}
    first = embedder.embed([questions[0]])
    result["peak_query_mb"] = _status_mb()["VmHWM"]
    batch = embedder.embed(cards[:64])
    result["peak_batch_mb"] = _status_mb()["VmHWM"]
    latencies = []
    for question in (questions * 2)[:200]:
        tick = time.perf_counter()
        embedder.embed([question])
        latencies.append(time.perf_counter() - tick)
    result["query_ms"] = statistics.median(latencies) * 1000
    many = [f"{cards[i % len(cards)]} (#{i})" for i in range(1000)]
    tick, cpu = time.perf_counter(), time.process_time()
    embedder.embed(many)
    result["texts_per_s"] = len(many) / (time.perf_counter() - tick)
    result["texts_per_cpu_s"] = len(many) / (time.process_time() - cpu)
    result["rss_end_mb"] = _status_mb()["VmRSS"]
    if vectors_out is not None:
        np.save(vectors_out, np.vstack([first, batch]))
    return result


def _run_child(variant: str, cache: Path, vectors_out: Path | None) -> dict:
    argv = [sys.executable, __file__, "--child", variant, "--cache", str(cache)]
    if vectors_out is not None:
        argv += ["--vectors", str(vectors_out)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=REPO)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cache", type=Path, help="the embedder cache to use (default: a fresh one, warmed first)")
    parser.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--vectors", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.cache, args.vectors)))
        return 0
    import numpy as np

    with tempfile.TemporaryDirectory(prefix="bench-embedder-rss-") as scratch:
        cache = args.cache or Path(scratch) / "cache"
        for variant in VARIANTS:  # warm: quantize, optimise and save once, outside the timings
            _run_child(variant, cache, Path(scratch) / f"{variant}.npy")
        same = np.load(Path(scratch) / "plain.npy"), np.load(Path(scratch) / "mapped.npy")
        results: dict[str, list[dict]] = {variant: [] for variant in VARIANTS}
        for run in range(args.runs):
            for variant in VARIANTS if run % 2 == 0 else reversed(VARIANTS):
                results[variant].append(_run_child(variant, cache, None))
    print(f"{args.runs} fresh processes per variant, interleaved; medians (min-max)")
    print(f"| measure | {' | '.join(VARIANTS)} | mapped / plain |")
    print("|---|---:|---:|---:|")
    for measure in MEASURES:
        cells, medians = [], []
        for variant in VARIANTS:
            values = [r[measure] for r in results[variant]]
            medians.append(statistics.median(values))
            cells.append(f"{medians[-1]:.1f} ({min(values):.1f}-{max(values):.1f})")
        print(f"| {measure} | {' | '.join(cells)} | {medians[1] / medians[0]:.2f} |")
    print(f"max abs difference of the vectors, mapped vs plain: {float(np.abs(same[0] - same[1]).max()):.3g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
