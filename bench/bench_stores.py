"""Build the benchmark stores of real cards with real embeddings, once, outside the repository.

Usage::

    python bench/bench_stores.py --out /work/bench-stores --sizes 10000 100000

Stages (each cached in ``--out``, so a re-run only does what is missing):

1. ``corpus.json``: 100k+ distinct card texts — LoCoMo's conversation turns
   (``/work/shared/bench/locomo10.json``, read in place, as ``"<speaker>: <text>"``) followed by
   the paragraphs of the docstrings of the installed Python packages and the standard library
   (30–200 characters; technical prose much like what a coding agent remembers).
2. ``vectors-<model_id>.npy``: every text embedded by memagent's default embedder (int8 MiniLM),
   in batches of 32 as memagent embeds them.
3. ``store-<n>/``: a project (``project/.memory/``: card files, catalog, Chroma index) holding the
   first ``n`` texts as cards with those vectors, written through ``Store.write_many`` (the write
   gate is bypassed on purpose: its duplicate check would dominate the build), and ``plain/``, a
   plain ``chromadb`` collection of the same texts (as documents) and vectors: the baseline of
   ``bench_memperf.py``.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

LOCOMO = Path("/work/shared/bench/locomo10.json")
TYPES = ["fact", "decision", "preference", "procedure", "constraint", "event", "context", "skill", "habit"]


def locomo_turns(path: Path) -> list[str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    turns = []
    for sample in data:
        for key, value in sample["conversation"].items():
            if key.startswith("session_") and isinstance(value, list):
                turns.extend(f"{t['speaker']}: {t['text']}" for t in value if t.get("text"))
    return turns


def docstring_paragraphs() -> list[str]:
    """Paragraphs of every docstring of the installed packages and the standard library."""
    roots = sorted({Path(p) for p in sys.path if p.endswith(("site-packages", "python3.11"))})
    found: list[str] = []
    for root in roots:
        for source in sorted(root.rglob("*.py")):
            try:
                tree = ast.parse(source.read_text(encoding="utf-8"))
            except (SyntaxError, UnicodeDecodeError, OSError, ValueError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
                    doc = ast.get_docstring(node)
                    if doc:
                        found.extend(" ".join(p.split()) for p in doc.split("\n\n"))
    return [p for p in found if 30 <= len(p) <= 200]


def corpus(out: Path, need: int) -> list[str]:
    path = out / "corpus.json"
    if path.is_file():
        texts = json.loads(path.read_text(encoding="utf-8"))
        if len(texts) >= need:
            return texts
    started = time.perf_counter()
    texts = list(dict.fromkeys(locomo_turns(LOCOMO) + docstring_paragraphs()))
    path.write_text(json.dumps(texts), encoding="utf-8")
    print(f"corpus: {len(texts):,} distinct texts in {time.perf_counter() - started:.0f} s", flush=True)
    if len(texts) < need:
        raise SystemExit(f"only {len(texts):,} texts, {need:,} needed")
    return texts


def vectors(out: Path, texts: list[str], embedder):
    import numpy as np

    path = out / f"vectors-{embedder.model_id}.npy"
    done = np.load(path) if path.is_file() else np.zeros((0, embedder.dim), dtype=np.float32)
    if len(done) >= len(texts):
        return done[: len(texts)]
    started, first = time.perf_counter(), len(done)
    chunks = [done]
    for start in range(first, len(texts), 3200):
        chunk = np.asarray(embedder.embed(texts[start : start + 3200]), dtype=np.float32)
        chunks.append(chunk)
        partial = np.concatenate(chunks)
        np.save(out / "vectors.partial.npy", partial)
        os.replace(out / "vectors.partial.npy", path)
        rate = (len(partial) - first) / (time.perf_counter() - started)
        print(f"embedded {len(partial):,}/{len(texts):,} ({rate:.0f} texts/s)", flush=True)
    return np.concatenate(chunks)


def cards_for(texts: list[str], seed: int):
    from memagent.memory.cards import MemoryCard

    rng = random.Random(seed)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    return [
        MemoryCard(
            content=text,
            memory_type=rng.choice(TYPES),
            confidence=round(rng.uniform(0.7, 1.0), 2),
            importance=round(rng.uniform(0.2, 0.9), 2),
            created_at=start + timedelta(minutes=17 * i),
        )
        for i, text in enumerate(texts)
    ]


def cards_written(project: Path) -> int:
    """How many cards an earlier build wrote (the catalog's count; 0 without one)."""
    import sqlite3

    for catalog in (
        project / ".memory" / "local" / "index" / "catalog.sqlite3",
        project / ".memory" / "index" / "catalog.sqlite3",
    ):
        if catalog.exists():
            with sqlite3.connect(f"file:{catalog}?mode=ro", uri=True) as db:
                return int(db.execute("SELECT count(*) FROM cards").fetchone()[0])
    return 0


def build_store(where: Path, texts: list[str], vecs, embedder) -> None:
    from memagent.config import Settings, project_paths
    from memagent.memory.service import MemoryService
    from memagent.memory.vector_index import EmbedderInfo

    project = where / "project"
    done = cards_written(project)  # a build that stopped resumes after the cards it wrote
    if done >= len(texts):
        return
    project.mkdir(parents=True, exist_ok=True)
    os.environ["MEMAGENT_HOME"] = str(where / "home")
    service = MemoryService.open(project_paths(project), Settings(), "bench", embedder=embedder)
    store = service.core.stores["project"]
    info = EmbedderInfo.of(embedder)
    cards = cards_for(texts, seed=len(texts))
    started = time.perf_counter()
    for start in range(done, len(cards), 2000):
        chunk = [(c, False, v) for c, v in zip(cards[start : start + 2000], vecs[start : start + 2000])]
        store.write_many(chunk, info, durable=False)
        print(f"  {where.name}: {start + len(chunk):,} cards ({time.perf_counter() - started:.0f} s)", flush=True)
    service.close()


def build_plain(where: Path, texts: list[str], vecs) -> None:
    import chromadb

    plain = where / "plain"
    if (plain / "chroma.sqlite3").exists():
        return
    client = chromadb.PersistentClient(path=str(plain), settings=chromadb.Settings(anonymized_telemetry=False))
    collection = client.get_or_create_collection("plain", embedding_function=None, metadata={"hnsw:space": "cosine"})
    for start in range(0, len(texts), 2000):
        collection.add(
            ids=[f"d{i}" for i in range(start, min(start + 2000, len(texts)))],
            documents=texts[start : start + 2000],
            embeddings=vecs[start : start + 2000].tolist(),
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("/work/bench-stores"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--vectors-only", action="store_true", help="stop after stages 1 and 2")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    from memagent.embedding.embedders import load_embedder

    embedder = load_embedder()
    print(f"embedder {embedder.name}; load average {os.getloadavg()[0]:.1f}", flush=True)
    texts = corpus(args.out, max(args.sizes))[: max(args.sizes)]
    vecs = vectors(args.out, texts, embedder)
    if args.vectors_only:
        return 0
    for n in args.sizes:
        where = args.out / f"store-{n // 1000}k"
        build_store(where, texts[:n], vecs[:n], embedder)
        build_plain(where, texts[:n], vecs[:n])
        print(f"store {where}: {n:,} cards", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
