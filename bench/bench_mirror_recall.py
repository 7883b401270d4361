"""How exact the index's int8 mirror is, against Chroma's HNSW graph, on real stores.

Usage (after ``python bench/bench_stores.py`` built the stores)::

    python bench/bench_mirror_recall.py --stores /work/bench-stores --sizes 10000 100000 --queries 200

For each question (the LoCoMo questions ``bench_memperf.py`` uses), the reference is the exact
top 10 over the float32 vectors Chroma stores (read back from the active collection). Reported:
recall@10 of the mirror's search (``memory.flat_mirror``: int8, exact scan) and of Chroma's own
HNSW query against that reference, and how often each agrees with it at rank 1; also the median
time of one mirror search (one question, top 10) and of reading the mirror file.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))


def float32_matrix(collection) -> tuple[list[str], object]:
    import numpy as np

    ids, pages, offset = [], [], 0
    while (page := collection.get(include=["embeddings"], limit=1000, offset=offset))["ids"]:
        ids += page["ids"]
        pages.append(np.asarray(page["embeddings"], dtype=np.float32))
        offset += len(page["ids"])
    matrix = np.concatenate(pages)
    return ids, matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def measure(store: Path, queries: list[str]) -> dict[str, float]:
    import numpy as np

    from memagent.embedding.embedders import load_embedder
    from memagent.memory.chroma_client import local_client
    from memagent.memory.flat_mirror import MIRROR_FILE, FlatMirror, MirrorEmbedder, committed_generation

    os.environ["MEMAGENT_HOME"] = str(store / "home")  # never the real home
    folder = store / "project" / ".memory" / "local" / "index"
    embedder = load_embedder()
    mirror = FlatMirror(folder, MirrorEmbedder(embedder.model_id, embedder.name, embedder.dim))
    generation = committed_generation(folder / MIRROR_FILE)
    if generation is None or not mirror.load(generation):
        raise SystemExit(f"no current mirror in {folder}: run a `memagent memory search` there first")
    collection = local_client(str(folder)).get_collection("memagent_active", embedding_function=None)
    ids, matrix = float32_matrix(collection)
    found: dict[str, list[float]] = {"mirror": [], "hnsw": [], "mirror_top1": [], "hnsw_top1": [], "scan_ms": []}
    loads = []
    for _ in range(5):
        started = time.perf_counter()
        mirror.load(generation)
        loads.append((time.perf_counter() - started) * 1000)
    for vector in embedder.embed(queries):
        unit = vector / np.linalg.norm(vector)
        reference = [ids[i] for i in np.argsort(-(matrix @ unit))[:10]]
        started = time.perf_counter()
        hits = mirror.search([vector], 10, inactive=False)[0]
        found["scan_ms"].append((time.perf_counter() - started) * 1000)
        ours = [card_id for card_id, _ in hits]
        hnsw = collection.query(query_embeddings=[vector.tolist()], n_results=10, include=[])["ids"][0]
        for name, got in (("mirror", ours), ("hnsw", hnsw)):
            found[name].append(len(set(got) & set(reference)) / 10)
            found[f"{name}_top1"].append(got[:1] == reference[:1])
    means = {name: float(np.mean(values)) for name, values in found.items()}
    return {**means, "scan_ms": float(np.median(found["scan_ms"])), "load_ms": float(np.median(loads))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", type=Path, default=Path("/work/bench-stores"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args(argv)
    from bench_memperf import questions

    queries = questions(args.queries, seed=11)
    print(
        "| store | mirror recall@10 | HNSW recall@10 | mirror top-1 | HNSW top-1 | mirror search, median "
        "| reading the mirror, median of 5 |\n|---|---:|---:|---:|---:|---:|---:|"
    )
    for size in args.sizes:
        got = measure(args.stores / f"store-{size // 1000}k", queries)
        print(
            f"| {size // 1000}k cards, {len(queries)} questions | {got['mirror']:.3f} | {got['hnsw']:.3f} "
            f"| {got['mirror_top1']:.3f} | {got['hnsw_top1']:.3f} | {got['scan_ms']:.1f} ms | {got['load_ms']:.0f} ms |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
