"""Retrieval as a user meets it: cards imported into one real store, questions searched through
the real ``MemoryService``, against plain dense and BM25 baselines over the same cards.

Run by hand (not part of the test suite), from the repository root:

    python bench/bench_service_retrieval.py                               # bench/data/team_memory.json
    python bench/bench_service_retrieval.py --data bench/data/coding_memory.json
    python bench/bench_service_retrieval.py --by-kind --markdown out.md

What it does, per data set: a temporary project and ``$MEMAGENT_HOME``; every card record goes
through ``MemoryService.import_cards`` (the code behind ``memagent memory import``: the write
gate, duplicates, corrections found on import) in the file's order; each question goes through
``MemoryService.search(question, k=5)`` (the code behind ``memagent memory search -k 5``) with
the service's clock set to the set's ``now``. Cards are matched back to the set's ids through
``provenance.original_id`` (import keeps a foreign id there). A superseded card is not a search
result of its own; it is shown with its successor.

Baselines, over the same card texts and questions: **dense** = plain MiniLM cosine order;
**BM25** = plain Okapi BM25 order (memagent's tokenizer, ``LexicalIndex.search(raw=True)``).
Metrics: R@1, R@5 (an evidence card in the top 1 / 5) and MRR@5, per split and per kind.

``--without-dates`` imports the cards without their ``created_at`` (a hand-written file): they
are then dated at import time, in file order, and only the dates in their text remain.

``--ablate`` adds one memagent row per part switched off (corrections on import, entity
expansion, dates from the text, and all three), each on a fresh store.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

DEFAULT_DATA = REPO / "bench" / "data" / "team_memory.json"
DEPTH = 5
METRICS = ("R@1", "R@5", "MRR@5")


@dataclass
class Question:
    id: str
    text: str
    evidence: frozenset[str]
    kind: str
    split: str


def _time(raw: str) -> datetime:
    return datetime.fromisoformat(raw.replace("Z", "+00:00"))


def load(path: Path) -> tuple[list[dict], list[Question], datetime]:
    data = json.loads(path.read_text(encoding="utf-8"))
    questions = [
        Question(q["id"], q["question"], frozenset(q["evidence"]), q["kind"], q["split"]) for q in data["queries"]
    ]
    return data["cards"], questions, _time(data["now"])


def score(ranked: Sequence[str], relevant: frozenset[str]) -> dict[str, float]:
    first = next((i for i, card_id in enumerate(ranked[:DEPTH]) if card_id in relevant), None)
    return {
        "R@1": float(first == 0),
        "R@5": float(first is not None),
        "MRR@5": 0.0 if first is None else 1.0 / (first + 1),
    }


# --------------------------------------------------------------------------- memagent


def open_store(workdir: Path, embedder, **service_options):
    """A fresh project and home under ``workdir``; the memory service over them."""
    os.environ["MEMAGENT_HOME"] = str(workdir / "home")
    from memagent.config import Settings, project_paths
    from memagent.memory.service import MemoryService

    root = workdir / "project"
    root.mkdir(parents=True)
    return MemoryService.open(project_paths(root), Settings(), "", embedder=embedder, **service_options)


def memagent_rankings(
    cards: list[dict], questions: list[Question], now: datetime, embedder, configure: Callable | None = None
) -> tuple[dict[str, list[str]], dict]:
    """Import ``cards`` into a fresh store, then search every question; returns the ranked set ids
    per question id and what the import reported."""
    with tempfile.TemporaryDirectory(prefix="memagent-bench-") as tmp:
        service = open_store(Path(tmp), embedder)
        try:
            service.clock = lambda: now
            if configure is not None:
                configure(service)
            started = time.perf_counter()
            report = service.import_cards(cards)
            imported = {"seconds": time.perf_counter() - started, **report.as_dict()}
            original = {}
            for card in service.list(include_all=True, limit=100_000):
                original[card.id] = card.provenance.original_id or card.id
            imported["superseded"] = sorted(original[c.id] for c in service.list(status="superseded", limit=100_000))
            ranked = {}
            for question in questions:
                hits = service.search(question.text, DEPTH)
                ranked[question.id] = [original.get(hit.card.id, hit.card.id) for hit in hits]
            return ranked, imported
        finally:
            service.close()


# --------------------------------------------------------------------------- baselines


def baseline_rankings(cards: list[dict], questions: list[Question], embedder) -> dict[str, dict[str, list[str]]]:
    from memagent.memory.lexical import LexicalIndex

    ids = [c["id"] for c in cards]
    card_vectors = np.asarray(embedder.embed([c["content"] for c in cards]), dtype=np.float32)
    query_vectors = np.asarray(embedder.embed([q.text for q in questions]), dtype=np.float32)
    lexical = LexicalIndex()
    for card in cards:
        lexical.add(card["id"], card["content"])
    dense, bm25 = {}, {}
    for qi, question in enumerate(questions):
        sims = card_vectors @ query_vectors[qi]
        dense[question.id] = [ids[i] for i in np.argsort(-sims, kind="stable")[:DEPTH]]
        bm25[question.id] = [i for i, _ in lexical.search(question.text, DEPTH, raw=True)]
    return {"dense (MiniLM)": dense, "BM25": bm25}


# --------------------------------------------------------------------------- report


def evaluate(
    rankings: dict[str, list[str]], questions: list[Question], split: str | None, kind: str | None = None
) -> dict[str, float]:
    rows = [
        score(rankings[q.id], q.evidence)
        for q in questions
        if (split is None or q.split == split) and (kind is None or q.kind == kind)
    ]
    return {**{m: statistics.fmean(r[m] for r in rows) if rows else 0.0 for m in METRICS}, "n": len(rows)}


def table(methods: dict[str, dict[str, list[str]]], questions: list[Question], kind: str | None = None) -> str:
    splits = sorted({q.split for q in questions})
    header = "| method | " + " | ".join(f"{s} {m}" for s in splits for m in METRICS) + " |"
    lines = [header, "|---|" + "---:|" * (len(splits) * len(METRICS))]
    counts = {}
    for name, rankings in methods.items():
        cells = []
        for split in splits:
            result = evaluate(rankings, questions, split, kind)
            counts[split] = result["n"]
            cells += [f"{result[m]:.3f}" for m in METRICS]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    title = "questions: " + ", ".join(f"{s} {counts[s]}" for s in splits) + (f" (kind: {kind})" if kind else "")
    return title + "\n\n" + "\n".join(lines)


def misses(rankings: dict[str, list[str]], questions: list[Question], split: str) -> list[str]:
    lines = []
    for q in questions:
        if q.split == split and not (set(rankings[q.id][:1]) & q.evidence):
            lines.append(f"- {q.id} [{q.kind}] {q.text} -> want {sorted(q.evidence)}, got {rankings[q.id]}")
    return lines


def ablations() -> dict[str, Callable]:
    """One switch per part of the retrieval work; each returns a ``configure(service)``."""

    def off(*names: str) -> Callable:
        def configure(service) -> None:
            for name in names:
                setattr(service.retrieval, name, False)

        return configure

    return {
        "memagent, no corrections on import": off("corrections"),
        "memagent, no entity expansion": off("entities"),
        "memagent, no dates from the text": off("timeline"),
        "memagent, none of the three": off("corrections", "entities", "timeline"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--by-kind", action="store_true", help="add a table per question kind")
    parser.add_argument("--ablate", action="store_true", help="add a row per part switched off")
    parser.add_argument("--misses", choices=["dev", "test"], help="list the questions missed at rank 1")
    parser.add_argument("--markdown", type=Path, help="also write the report to this file")
    parser.add_argument(
        "--without-dates",
        action="store_true",
        help="import the cards without created_at (they are dated at import, in file order)",
    )
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"error: no benchmark data at {args.data}", file=sys.stderr)
        return 2
    from memagent.embedding.embedders import load_embedder

    cards, questions, now = load(args.data)
    if args.without_dates:
        cards = [{k: v for k, v in card.items() if k != "created_at"} for card in cards]
    embedder = load_embedder("onnx")
    ranked, imported = memagent_rankings(cards, questions, now, embedder)
    methods = {"memagent": ranked}
    if args.ablate:
        for name, configure in ablations().items():
            methods[name] = memagent_rankings(cards, questions, now, embedder, configure)[0]
    methods.update(baseline_rankings(cards, questions, embedder))
    sections = [
        f"### {args.data.name}: {len(cards)} cards imported in {imported['seconds']:.1f} s "
        f"(added {imported['added']}, duplicates {imported['duplicates']}, refused {len(imported['refused'])}, "
        f"superseded on import: {', '.join(imported['superseded']) or 'none'})\n\n" + table(methods, questions)
    ]
    if args.by_kind:
        for kind in sorted({q.kind for q in questions}):
            sections.append(f"#### kind: {kind}\n\n" + table(methods, questions, kind))
    if args.misses:
        sections.append(
            f"#### memagent misses at rank 1 ({args.misses})\n\n" + "\n".join(misses(ranked, questions, args.misses))
        )
    report = "\n\n".join(sections)
    print(report)
    if args.markdown:
        args.markdown.write_text(report + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
