"""Warm search at 10k cards, this checkout against another one, side by side on a loaded machine.

Run by hand (not part of the test suite), from the repository root:

    git archive main | tar -x -C /tmp/main-tree
    python bench/bench_warm_search.py --against /tmp/main-tree/src
    python bench/bench_warm_search.py --against /tmp/main-tree/src --cards 10000 --rounds 5
    python bench/bench_warm_search.py --profile     # where this checkout's search time goes

Each side (this checkout's ``src/``, and ``--against``) builds its own store in a child process
with its own code: ``bench/data/team_memory.json``'s card texts first, then LoCoMo turns cycled
to ``--cards`` (random unit vectors for the bulk, as ``bench_memory_speed.py`` does, so a 10k
store builds in a minute). Then ``--rounds`` rounds alternate the sides, each a fresh process:
open the store, warm up, one untimed search, then ``MemoryService.search(q, k=5)`` over the
questions — the team set's (descriptions, roles, periods, corrections) and 100 LoCoMo questions.
Reported per side: the median over rounds of each round's p50 and p95, wall time and CPU time
(of all the process's threads: the steadier figure on a shared machine), and their ratios.

``--profile`` builds this checkout's store only and prints, for one pass over the questions under
``cProfile``, the time per search of each stage (query understanding, embedding, the vector
index, the lexical index, ranking, reading the winning cards): where the limit lies.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TEAM = REPO / "bench" / "data" / "team_memory.json"
LOCOMO_QUESTIONS = 100


def _texts_and_questions() -> tuple[list[str], list[str]]:
    import bench_memory_speed as speed

    turns, locomo_questions = speed.locomo_texts()
    team = json.loads(TEAM.read_text(encoding="utf-8"))
    texts = [card["content"] for card in team["cards"]] + turns
    questions = [q["question"] for q in team["queries"]] + locomo_questions[:LOCOMO_QUESTIONS]
    return texts, questions


def child(mode: str, src: str, root: Path, cards: int) -> None:
    """Build or measure one side's store with that side's code; prints a JSON line."""
    sys.path.insert(0, src)
    sys.path.insert(1, str(REPO / "bench"))
    import bench_memory_speed as speed

    import memagent
    from memagent.embedding.embedders import load_embedder

    if not Path(memagent.__file__).resolve().is_relative_to(Path(src).resolve()):
        raise SystemExit(f"memagent came from {memagent.__file__}, not {src}")
    texts, questions = _texts_and_questions()
    embedder = load_embedder("auto")
    if mode == "build":
        rate = speed.build_store(root, cards, embedder, random.Random(7), texts)
        print(json.dumps({"cards_per_s": rate}))
    elif mode == "profile":
        print(json.dumps(_profile(root, embedder, questions)))
    else:
        print(json.dumps(speed.warm_search(root, embedder, questions)))


STAGES = {  # stage -> (file suffix, function) whose cumulative time is that stage's
    "whole search": ("memory/reading.py", "search"),
    "query understanding (entities, dates)": ("memory/recall.py", "understand"),
    "embedding the query (ONNX)": ("memory/core.py", "_embed"),
    "vector index query (Chroma)": ("memory/vector_index.py", "nearest_ids"),
    "lexical index (catalog BM25)": ("memory/catalog.py", "lexical"),
    "catalog entries of the candidates": ("memory/catalog.py", "entries"),
    "card facts of the candidates (enrich)": ("memory/recall.py", "enrich"),
    "ranking": ("memory/ranking.py", "rank"),
    "reading the winning cards, chains": ("memory/reading.py", "_fold_chains"),
    "quick sync before the search": ("memory/core.py", "_sync"),
}


def _profile(root: Path, embedder, questions: list[str]) -> dict:
    import cProfile
    import pstats

    from memagent.config import Settings, project_paths
    from memagent.memory.service import MemoryService

    service = MemoryService.open(project_paths(root), Settings(), "bench", embedder=embedder)
    service.warm_up()
    service.search(questions[0], k=5)
    profile = cProfile.Profile()
    profile.enable()
    for query in questions:
        service.search(query, k=5)
    profile.disable()
    service.close()
    stats = pstats.Stats(profile).stats  # (file, line, name) -> (cc, nc, tottime, cumtime, callers)
    found = {}
    for stage, (suffix, name) in STAGES.items():
        found[stage] = sum(v[3] for (file, _, func), v in stats.items() if file.endswith(suffix) and func == name)
    return {stage: seconds * 1000 / len(questions) for stage, seconds in found.items()}


def _run(mode: str, src: str, root: Path, cards: int, home: Path) -> dict:
    env_home = {"MEMAGENT_HOME": str(home), "HOME": str(home)}
    import os

    done = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--src", src, "--root", str(root), "--cards", str(cards)],
        capture_output=True,
        text=True,
        env={**os.environ, **env_home},
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{mode} with {src} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _print_profile(cards: int) -> int:
    with tempfile.TemporaryDirectory(prefix="memagent-warm-") as tmp:
        root, home = Path(tmp) / "side", Path(tmp) / "home"
        root.mkdir()
        home.mkdir()
        _run("build", str(REPO / "src"), root, cards, home)
        stages = _run("profile", str(REPO / "src"), root, cards, home)
    whole = stages["whole search"]
    print(f"warm search at {cards} cards under cProfile (which slows Python more than C): ms per search\n")
    print("| stage | ms | share |\n|---|---:|---:|")
    for stage, ms in stages.items():
        print(f"| {stage} | {ms:.1f} | {ms / whole:.0%} |")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", help="the other checkout's src/ directory (required)")
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--stores", type=Path, help="keep the built stores here and reuse them on later runs")
    parser.add_argument("--profile", action="store_true", help="where this checkout's search time goes (cProfile)")
    parser.add_argument("--child", choices=["build", "measure", "profile"], help=argparse.SUPPRESS)
    parser.add_argument("--src", help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.src, args.root, args.cards)
        return 0
    if args.profile:
        return _print_profile(args.cards)
    if not args.against:
        parser.error("--against or --profile is required")
    sides = {"this checkout": str(REPO / "src"), "against": str(Path(args.against).resolve())}
    results: dict[str, list[dict]] = {name: [] for name in sides}
    with tempfile.TemporaryDirectory(prefix="memagent-warm-") as scratch:
        tmp = args.stores or Path(scratch)  # --stores: built once, reused by later runs
        roots = {}
        for i, (name, src) in enumerate(sides.items()):
            roots[name] = Path(tmp) / f"side{i}"
            if (roots[name] / ".built").exists():
                continue
            roots[name].mkdir(parents=True, exist_ok=True)
            (Path(tmp) / f"home{i}").mkdir(exist_ok=True)
            _run("build", src, roots[name], args.cards, Path(tmp) / f"home{i}")
            (roots[name] / ".built").write_text(src)
        for _ in range(args.rounds):
            for i, (name, src) in enumerate(sides.items()):
                results[name].append(_run("measure", src, roots[name], args.cards, Path(tmp) / f"home{i}"))
    print(f"warm search, {args.cards} cards, {args.rounds} rounds (median of the rounds' figures)\n")
    print("| side | search p50 ms | search p95 ms | CPU p50 ms | CPU p95 ms |\n|---|---:|---:|---:|---:|")
    keys = ("p50", "p95", "cpu_p50", "cpu_p95")
    medians = {}
    for name, rounds in results.items():
        medians[name] = [statistics.median(r[key] for r in rounds) for key in keys]
        print(f"| {name} | " + " | ".join(f"{value:.1f}" for value in medians[name]) + " |")
    ours, theirs = medians["this checkout"], medians["against"]
    print("\nratio this/against: " + ", ".join(f"{key} {a / b:.2f}×" for key, a, b in zip(keys, ours, theirs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
