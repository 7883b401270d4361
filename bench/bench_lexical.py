"""The catalog's lexical search at 100k cards, this checkout's scorer against another checkout's.

Run by hand (not part of the test suite), from the repository root:

    git archive main | tar -x -C /tmp/main-tree
    python bench/bench_lexical.py --against /tmp/main-tree/src
    python bench/bench_lexical.py --against /tmp/main-tree/src --cards 100000 --rounds 3

The catalog (built once into ``--cache``, outside the repository): LoCoMo's turns cycled to
``--cards``, each copy after the first with a numbered suffix ("… (#3)"), as
``bench_memory_speed.py`` builds its bulk cards — the shape of the issue's store, where the
suffix numbers are common terms (5,882 cards each). Only the postings, the lexicon and the
totals are written: that is all lexical search reads. Then, in one process, the two scorers
(``lexical.top_k_pruned`` of each checkout over this checkout's catalog reader) alternate per
query over LoCoMo's questions, top 50 of the active cards, for ``--rounds`` rounds; each
result is checked against the in-memory BM25 (``lexical.score_query`` over every posting of the
query's terms). Reported: p50 / p95 / max per side (median over rounds) and how many top-50
lists equal the reference.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))


def build(path: Path, cards: int) -> None:
    import bench_memory_speed as speed

    from memagent.memory.catalog import Catalog
    from memagent.memory.lexical import term_counts

    turns, _ = speed.locomo_texts()
    catalog = Catalog(path)
    db = catalog.db()
    db.execute("BEGIN")
    lexicon: dict[str, int] = {}
    total, rows = 0.0, []
    for i in range(cards):
        body = turns[i % len(turns)]
        counts = term_counts(body if i < len(turns) else f"{body} (#{i // len(turns)})")
        length = float(sum(counts.values()))
        total += length
        rows.extend((term, f"m_{i:012x}", tf, length, 1) for term, tf in counts.items())
        for term in counts:
            lexicon[term] = lexicon.get(term, 0) + 1
        if len(rows) > 200_000:
            db.executemany("INSERT INTO postings VALUES (?, ?, ?, ?, ?)", rows)
            rows = []
    db.executemany("INSERT INTO postings VALUES (?, ?, ?, ?, ?)", rows)
    db.executemany("INSERT INTO lexicon VALUES (?, 1, ?)", list(lexicon.items()))
    db.execute("INSERT OR REPLACE INTO totals VALUES (1, ?, ?)", (cards, total))
    db.execute("COMMIT")
    catalog.close()


def other_scorer(src: Path):
    """``top_k_pruned`` of the other checkout (its ``lexical.py`` needs only the standard library)."""
    spec = importlib.util.spec_from_file_location("other_lexical", src / "memagent" / "memory" / "lexical.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["other_lexical"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module.top_k_pruned


def reference(catalog, source, query: str, k: int):
    from memagent.memory.lexical import Corpus, score_query, tokenize

    n_docs, total = source.size()
    postings, lengths = {}, {}
    for term in set(tokenize(query)):
        rows = source.postings(term)
        postings[term] = {doc_id: tf for doc_id, tf, _ in rows}
        lengths.update({doc_id: length for doc_id, _, length in rows})
    return score_query(catalog.params, Corpus(n_docs, total, postings, lengths), query, k)


def same(got, want) -> bool:
    return [d for d, _ in got] == [d for d, _ in want] and all(abs(a - b) < 1e-12 for (_, a), (_, b) in zip(got, want))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, required=True, help="the other checkout's src/ directory")
    parser.add_argument("--cards", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/memagent-bench-lexical"))
    args = parser.parse_args(argv)
    import bench_memory_speed as speed

    from memagent.memory.catalog import Catalog
    from memagent.memory.lexical import top_k_pruned

    try:
        from memagent.memory.postings import CatalogPostings
    except ImportError:  # a tree from before the postings had their own module
        from memagent.memory.catalog import _Postings as CatalogPostings

    path = args.cache / f"catalog-{args.cards}.sqlite3"
    if not path.exists():
        args.cache.mkdir(parents=True, exist_ok=True)
        build(path, args.cards)
    catalog = Catalog(path)
    source = CatalogPostings(catalog.db(), 1)
    questions = speed.locomo_texts()[1][: args.queries]
    wanted = {q: reference(catalog, source, q, 50) for q in questions}
    sides = {"this checkout": top_k_pruned, "against": other_scorer(args.against)}
    figures: dict[str, list[tuple[float, ...]]] = {name: [] for name in sides}
    equal = {name: 0 for name in sides}
    for _ in range(args.rounds):
        wall: dict[str, list[float]] = {name: [] for name in sides}
        cpu: dict[str, list[float]] = {name: [] for name in sides}
        for query in questions:
            for name, scorer in sides.items():
                started, started_cpu = time.perf_counter(), time.thread_time()
                got = scorer(catalog.params, source, query, 50)
                wall[name].append((time.perf_counter() - started) * 1000)
                cpu[name].append((time.thread_time() - started_cpu) * 1000)
                equal[name] += same(got, wanted[query])
        for name, values in wall.items():
            figures[name].append(
                (
                    statistics.median(values),
                    speed.percentile(values, 95),
                    max(values),
                    statistics.median(cpu[name]),
                    speed.percentile(cpu[name], 95),
                )
            )
    print(
        f"lexical top 50 at {args.cards} cards, {len(questions)} questions × {args.rounds} rounds "
        "(median over rounds)\n"
    )
    print(
        "| side | wall p50 ms | wall p95 ms | wall max ms | CPU p50 ms | CPU p95 ms | top-50 equal to the reference |\n"
        "|---|---:|---:|---:|---:|---:|---:|"
    )
    for name, rounds in figures.items():
        p50, p95, worst, cpu50, cpu95 = (statistics.median(r[i] for r in rounds) for i in range(5))
        print(
            f"| {name} | {p50:.1f} | {p95:.1f} | {worst:.1f} | {cpu50:.1f} | {cpu95:.1f} "
            f"| {equal[name]} / {len(questions) * args.rounds} |"
        )
    catalog.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
