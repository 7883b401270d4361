"""Memory at 10k and 100k real cards: the table of "Fast at 100k", memagent side by side with the
plain baseline, in one run.

Usage (after ``python bench/bench_stores.py`` built the stores)::

    python bench/bench_memperf.py --stores /work/bench-stores --sizes 10000 100000 --runs 5

The baseline is a plain script with the same embedder (int8 MiniLM, or fp32 where the row says
so) and a plain ``chromadb`` collection holding the same texts and vectors (``store-*/plain``).
Every pair is interleaved (A, B, A, B …) so machine noise hits both alike; medians; CPU time
(user + system of the child processes) beside wall time for the commands. ``-p`` runs against the
loopback fake Messages API (in this process), answering at once.

Rows:

- ``memagent -p PROMPT``, memory on vs ``--no-memory``: ``hi`` (a greeting: no search) and a real
  question (one search).
- peak RSS of ``-p QUESTION``, memory on vs off: ``VmHWM`` of the ``memagent`` process itself, read
  at exit (``ru_maxrss`` of a child started by a large parent reports the parent's size: the
  artefact behind an earlier "memory on ≈ off").
- warm search p50 / p95: ``MemoryService.search(q, k=5)`` in a warmed-up process vs the plain
  embed + Chroma top-5 query, LoCoMo questions.
- cold ``memagent memory search`` vs a plain script (import chromadb, open the collection, load
  the embedder, embed, query).
- ``memory import`` throughput (through the write gate, int8) vs plain fp32 embedding + Chroma add.
- a teammate's clone: ``memory search`` on a copy of ``--rebuild-n`` committed card files and
  their vector cache (no index) vs plain: embed those texts (fp32) and add them to Chroma.
- ``memory stats`` vs ``memory list``.

``--lender`` measures the rows of one process (``-p``, peak RSS, cold ``memory search``) a second
time beside a running ``memagent mcp serve`` of the same home, which lends its embedder and
searches the mirror (``embedding.shared``): what a user who keeps another agent's memagent MCP
server open gets. The ``--no-memory`` side is the same process either way.

``--only stats import`` runs only those rows. ``--against SRC`` adds another revision to the
``stats`` and ``import`` rows, interleaved with this one in the same run (its ``memagent`` is
imported from ``SRC``, e.g. ``git archive main | tar -x -C /tmp/main-tree`` and
``--against /tmp/main-tree/src``); ``--against-stores`` gives it a copy of the stores of its own
(a revision whose catalog lacks an index this one adds must not be timed on a catalog that has it).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

QUESTION = "how do we deploy the parser and which tests must pass first?"
PLAIN_COLD = """
import sys, chromadb
from memagent.embedding.embedders import load_embedder
client = chromadb.PersistentClient(path=sys.argv[1], settings=chromadb.Settings(anonymized_telemetry=False))
collection = client.get_collection("plain", embedding_function=None)
vector = load_embedder(sys.argv[3]).embed([sys.argv[2]])[0].tolist()
result = collection.query(query_embeddings=[vector], n_results=5, include=["documents", "distances"])
print(len(result["ids"][0]))
"""
PLAIN_REBUILD = """
import sys, pathlib, chromadb
from memagent.memory.cardfiles import CardFiles
from memagent.embedding.embedders import load_embedder
files = CardFiles(pathlib.Path(sys.argv[1]))
cards = [files.read(pathlib.Path(path)) for path, _ in files.scan().values()]
vectors = load_embedder("onnx").embed([c.content for c in cards])
client = chromadb.PersistentClient(path=sys.argv[2], settings=chromadb.Settings(anonymized_telemetry=False))
collection = client.get_or_create_collection("plain", embedding_function=None, metadata={"hnsw:space": "cosine"})
for start in range(0, len(cards), 1000):
    collection.add(ids=[c.id for c in cards[start:start + 1000]], documents=[c.content for c in cards[start:start + 1000]],
                   embeddings=vectors[start:start + 1000].tolist())
print(collection.count())
"""
PEAK = """
import atexit, runpy, sys
def report():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                sys.stderr.write("\\nVMHWM_KB " + line.split()[1] + "\\n")
atexit.register(report)
sys.argv = ["memagent", *sys.argv[1:]]
runpy.run_module("memagent", run_name="__main__")
"""


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall s, CPU s of the child) of one command; exits on failure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:5])}… failed ({out.returncode}): {out.stderr.strip()[-600:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


Command = tuple[list[str], dict[str, str], Path]  # argv, environment, working directory


def interleaved(commands: dict[str, Command], runs: int) -> dict[str, float]:
    """Median wall time (``name``) and CPU time (``name_cpu``) of each command, the commands run
    in turn ``runs`` times (after one untimed run of each)."""
    for argv, env, cwd in commands.values():
        timed(argv, env, cwd)
    samples: dict[str, list[float]] = {}
    for _ in range(runs):
        for name, (argv, env, cwd) in commands.items():
            wall, cpu = timed(argv, env, cwd)
            samples.setdefault(name, []).append(wall)
            samples.setdefault(f"{name}_cpu", []).append(cpu)
    return {key: statistics.median(values) for key, values in samples.items()}


def pair(a: list[str], b: list[str], env: dict[str, str], cwd: Path, runs: int) -> dict[str, float]:
    """Medians of ``a`` and ``b`` run alternately (after one untimed run of each)."""
    return interleaved({"a": (a, env, cwd), "b": (b, env, cwd)}, runs)


def paired_row(row, what: str, ours: list[str], theirs: list[str], where, target: str) -> None:
    """One table row: ``ours`` and ``theirs`` run alternately (:func:`pair`), wall and CPU time.
    ``where`` is (environment, working directory, runs)."""
    env, cwd, runs = where
    p = pair(ours, theirs, env, cwd, runs)
    row(
        what,
        f"{p['a']:.2f} s; {p['a_cpu']:.2f} s",
        f"{p['b']:.2f} s; {p['b_cpu']:.2f} s",
        p["a"] / p["b"],
        target,
    )


def peak_rss_mb(args: list[str], env: dict[str, str], cwd: Path) -> float:
    out = subprocess.run(
        [sys.executable, "-c", PEAK, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=900
    )
    for line in out.stderr.splitlines():
        if line.startswith("VMHWM_KB "):
            return int(line.split()[1]) / 1024
    raise SystemExit(f"no RSS figure: {out.stderr.strip()[-400:]}")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def questions(n: int, seed: int = 7) -> list[str]:
    data = json.loads(Path("/work/shared/bench/locomo10.json").read_text(encoding="utf-8"))
    found = [q["question"] for sample in data for q in sample["qa"] if q.get("question")]
    return random.Random(seed).sample(found, n)


def warm_search(store: Path, queries: list[str], profile: bool = False) -> dict[str, float]:
    """memagent's search vs plain embed + Chroma query, interleaved per query, in this process;
    with ``profile``, then cProfile of memagent's searches (where a warm search's time goes)."""
    import chromadb

    from memagent.config import Settings, project_paths
    from memagent.embedding.embedders import load_embedder
    from memagent.memory.service import MemoryService

    os.environ["MEMAGENT_HOME"] = str(store / "home")  # as the CLI runs have it: never the real home
    embedder = load_embedder()
    service = MemoryService.open(project_paths(store / "project"), Settings(), "bench", embedder=embedder)
    service.warm_up()
    service.wait_for_upkeep()
    client = chromadb.PersistentClient(
        path=str(store / "plain"), settings=chromadb.Settings(anonymized_telemetry=False)
    )
    plain = client.get_collection("plain", embedding_function=None)
    ours, theirs = [], []
    for query in queries[:5]:
        service.search(query, k=5)
        plain.query(query_embeddings=[embedder.embed([query])[0].tolist()], n_results=5, include=["documents"])
    for query in queries:
        started = time.perf_counter()
        service.search(query, k=5)
        ours.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        plain.query(query_embeddings=[embedder.embed([query])[0].tolist()], n_results=5, include=["documents"])
        theirs.append((time.perf_counter() - started) * 1000)
    if profile:
        print_profile(lambda: [service.search(query, k=5) for query in queries], len(queries))
    service.close()
    return {
        "p50": statistics.median(ours),
        "p95": percentile(ours, 95),
        "plain_p50": statistics.median(theirs),
        "plain_p95": percentile(theirs, 95),
    }


def print_profile(job, calls: int) -> None:
    """cProfile of ``job``: memagent's functions by cumulative time, in ms per search."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.runcall(job)
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    rows = sorted(
        (
            (cumulative, f"{Path(file).name}:{line} {name}")
            for (file, line, name), (*_, cumulative, _) in stats.items()
            if "memagent" in file
        ),
        reverse=True,
    )
    for cumulative, where in rows[:25]:
        print(f"    {cumulative / calls * 1000:6.1f} ms  {where}", flush=True)


IMPORT_RUN = """
import json, sys, tempfile, time, pathlib
import chromadb  # imported before the clock starts, as on the plain side
from memagent.config import Settings, project_paths
try:
    from memagent.embedding.embedders import load_embedder
except ImportError:  # a revision (--against) from before the embedder had a package of its own
    from memagent.memory.embeddings import load_embedder
from memagent.memory.service import MemoryService
texts = json.loads(pathlib.Path(sys.argv[1]).read_text(encoding="utf-8"))[-int(sys.argv[2]):]
project = pathlib.Path(tempfile.mkdtemp(dir=sys.argv[3]))
service = MemoryService.open(project_paths(project), Settings(), "bench", embedder=load_embedder())
started = time.perf_counter()
report = service.import_cards([{"content": t, "memory_type": "fact"} for t in texts])
print(len(texts) / (time.perf_counter() - started), report.added)
"""
PLAIN_IMPORT = """
import json, sys, tempfile, time, pathlib
import chromadb
try:
    from memagent.embedding.embedders import load_embedder
except ImportError:  # a revision (--against) from before the embedder had a package of its own
    from memagent.memory.embeddings import load_embedder
texts = json.loads(pathlib.Path(sys.argv[1]).read_text(encoding="utf-8"))[-int(sys.argv[2]):]
fp32 = load_embedder("onnx")
started = time.perf_counter()
vectors = fp32.embed(texts)
client = chromadb.PersistentClient(path=tempfile.mkdtemp(dir=sys.argv[3]), settings=chromadb.Settings(anonymized_telemetry=False))
collection = client.get_or_create_collection("plain", embedding_function=None, metadata={"hnsw:space": "cosine"})
for start in range(0, len(texts), 1000):
    collection.add(ids=[f"d{i}" for i in range(start, min(start + 1000, len(texts)))], documents=texts[start:start + 1000],
                   embeddings=vectors[start:start + 1000].tolist())
print(len(texts) / (time.perf_counter() - started), len(texts))
"""


def import_rates(corpus: Path, n: int, workdir: Path, sides: dict[str, dict[str, str]], runs: int) -> dict[str, float]:
    """Median cards/s of each side: ``memory import`` of the corpus' last ``n`` texts into a fresh
    project through the gate (int8) per revision in ``sides`` (name -> environment), and the
    plain fp32 embed + Chroma add ("plain"), interleaved, after one untimed round."""
    scripts = {name: (IMPORT_RUN, env) for name, env in sides.items()}
    scripts["plain"] = (PLAIN_IMPORT, next(iter(sides.values())))
    rates: dict[str, list[float]] = {name: [] for name in scripts}
    for round_ in range(runs + 1):
        for name, (script, env) in scripts.items():
            out = subprocess.run(
                [sys.executable, "-c", script, str(corpus), str(n), str(workdir)],
                env=env,
                capture_output=True,
                text=True,
                timeout=1800,
            )
            if out.returncode != 0:
                raise SystemExit(f"import ({name}) failed: {out.stderr.strip()[-600:]}")
            if round_:
                rates[name].append(float(out.stdout.split()[0]))
    return {name: statistics.median(values) for name, values in rates.items()}


def clone_of(store: Path, n: int, target: Path) -> Path:
    """A project holding ``n`` committed card files and the vector cache, as a clone has them."""
    source = store / "project" / ".memory"
    memory = target / ".memory"
    (memory / "cards").mkdir(parents=True)
    for path in sorted((source / "cards").iterdir())[:n]:
        shutil.copy2(path, memory / "cards" / path.name)
    shutil.copytree(source / "local" / "vectors", memory / "vectors")  # committed, as a team does
    (memory / "project-id").write_text((source / "project-id").read_text())
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
    subprocess.run(["git", "init", "-q", str(target)], check=True)
    subprocess.run([*git, "-C", str(target), "add", "-f", ".memory"], check=True)
    subprocess.run([*git, "-C", str(target), "commit", "-q", "-m", "cards"], check=True)
    return target


ROWS = ("p", "rss", "warm", "cold", "stats", "import", "clone")


def against_env(args: argparse.Namespace, env: dict[str, str], size: int) -> dict[str, str]:
    """The environment of the ``--against`` revision: its code, and its copy of the store."""
    stores = args.against_stores or args.stores
    return {**env, "PYTHONPATH": str(args.against), "MEMAGENT_HOME": str(stores / f"store-{size // 1000}k" / "home")}


def size_rows(args: argparse.Namespace, n: int, env: dict[str, str], queries: list[str], row) -> None:
    """The rows measured on the store of ``n`` cards."""
    memagent = str(Path(sys.executable).parent / "memagent")
    store = args.stores / f"store-{n // 1000}k"
    project = store / "project"
    label = f"{n // 1000}k"
    wanted = set(args.only)
    if wanted & {"p", "rss", "warm", "cold"}:
        # The cards were written by the build, not by a session this machine's ledger saw:
        # trusting the project lets sessions use them (see memory.provenance).
        timed([memagent, "trust", "-C", str(project)], env, project)
    process_rows(args, store, env, row, label)
    if args.lender and wanted & {"p", "rss", "cold"}:
        from mcp_kit import lending_mcp_serve  # tests/mcp_kit.py

        with lending_mcp_serve(project, env):
            process_rows(args, store, env, row, f"{label}, beside `mcp serve`")
    if "warm" in wanted:
        warm = warm_search(store, queries, profile=args.profile)
        row(
            f"warm search p50 / p95, {label}",
            f"{warm['p50']:.1f} / {warm['p95']:.1f} ms",
            f"{warm['plain_p50']:.1f} / {warm['plain_p95']:.1f} ms",
            warm["p95"] / warm["plain_p95"],
            "≤ 1.5×, p95 ≤ 25 ms",
        )
    if "stats" in wanted:
        stats_row(args, n, env, row)


def process_rows(args: argparse.Namespace, store: Path, env: dict[str, str], row, label: str) -> None:
    """The rows of one memagent process: ``-p``, its peak RSS and a cold ``memory search``."""
    memagent = str(Path(sys.executable).parent / "memagent")
    project = store / "project"
    wanted = set(args.only)
    for prompt, name in (("hi", "hi"), (QUESTION, "a question")) if "p" in wanted else ():
        paired_row(
            row,
            f"`-p {name}` on / off, {label} (wall; CPU)",
            [memagent, "-p", prompt, "-C", str(project)],
            [memagent, "-p", prompt, "--no-memory", "-C", str(project)],
            (env, project, args.runs),
            "≤ 1.2× (10k), ≤ 1.3× (100k)",
        )
    if "rss" in wanted:
        on = peak_rss_mb(["-p", QUESTION, "-C", str(project)], env, project)
        off = peak_rss_mb(["-p", QUESTION, "--no-memory", "-C", str(project)], env, project)
        row(f"peak RSS of `-p a question`, {label}", f"{on:.0f} MB", f"{off:.0f} MB", on / off, "≤ 1.6×")
    if "cold" in wanted:
        paired_row(
            row,
            f"cold `memory search`, {label} (wall; CPU)",
            [memagent, "memory", "search", QUESTION, "-C", str(project)],
            [sys.executable, "-c", PLAIN_COLD, str(store / "plain"), QUESTION, "auto"],
            (env, project, args.runs),
            "≤ 1.1×",
        )


def stats_row(args: argparse.Namespace, n: int, env: dict[str, str], row) -> None:
    """``memory stats`` vs ``memory list`` (and the ``--against`` revision's stats), interleaved."""
    memagent = str(Path(sys.executable).parent / "memagent")
    label = f"{n // 1000}k"
    project = args.stores / f"store-{label}" / "project"
    commands: dict[str, Command] = {
        "stats": ([memagent, "memory", "stats", "-C", str(project)], env, project),
        "list": ([memagent, "memory", "list", "-C", str(project)], env, project),
    }
    if args.against:
        theirs = (args.against_stores or args.stores) / f"store-{label}" / "project"
        commands["before"] = ([memagent, "memory", "stats", "-C", str(theirs)], against_env(args, env, n), theirs)
    t = interleaved(commands, args.runs)
    before = f"; `--against` {t['before']:.2f} s" if args.against else ""
    row(
        f"`memory stats` vs `memory list`, {label}",
        f"{t['stats']:.2f} s (CPU {t['stats_cpu']:.2f} s)",
        f"{t['list']:.2f} s{before}",
        t["stats"] / t["list"],
        "≤ 0.5 s",
    )


def write_rows(args: argparse.Namespace, work: Path, row) -> None:
    """``memory import`` throughput and a clone's first search, on the smallest store's home."""
    memagent = str(Path(sys.executable).parent / "memagent")
    size = min(args.sizes)
    store = args.stores / f"store-{size // 1000}k"
    env = {**os.environ, "MEMAGENT_HOME": str(store / "home")}
    if "import" in args.only:
        sides = {"ours": env, **({"before": against_env(args, env, size)} if args.against else {})}
        rate = import_rates(args.stores / "corpus.json", args.import_n, work, sides, args.runs)
        before = f"; `--against` {rate['before']:.0f} ({rate['before'] / rate['plain']:.2f}×)" if args.against else ""
        row(
            f"`memory import` of {args.import_n:,} real cards (cards/s)",
            f"{rate['ours']:.0f}",
            f"{rate['plain']:.0f} (fp32){before}",
            rate["ours"] / rate["plain"],
            "≥ 2×",
        )
    if "clone" in args.only:
        clone = clone_of(store, args.rebuild_n, work / "clone")
        ours = timed([memagent, "memory", "search", QUESTION, "-C", str(clone)], env, clone)
        theirs = timed(
            [sys.executable, "-c", PLAIN_REBUILD, str(clone / ".memory"), str(work / "plain-rebuild")], env, clone
        )
        row(
            f"a clone's first search: index {args.rebuild_n:,} committed cards (wall; CPU)",
            f"{ours[0]:.1f} s; {ours[1]:.1f} s",
            f"{theirs[0]:.1f} s; {theirs[1]:.1f} s (fp32)",
            ours[0] / theirs[0],
            "≥ 2× faster",
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", type=Path, default=Path("/work/bench-stores"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--import-n", type=int, default=1000)
    parser.add_argument("--rebuild-n", type=int, default=1000)
    parser.add_argument("--only", nargs="+", choices=ROWS, default=list(ROWS), help="the rows to measure")
    parser.add_argument(
        "--lender",
        action="store_true",
        help="measure the -p, rss and cold rows again beside a running `memagent mcp serve` (its embedder lent)",
    )
    parser.add_argument("--profile", action="store_true", help="print where a warm search's time goes (cProfile)")
    parser.add_argument("--against", type=Path, help="another revision's src folder, for the stats and import rows")
    parser.add_argument("--against-stores", type=Path, help="that revision's copy of --stores (default: the same)")
    args = parser.parse_args(argv)
    from fakeapi import FakeAnthropic, text

    queries = questions(args.queries) if "warm" in args.only else []

    def row(what: str, ours: str, theirs: str, ratio: float | None, target: str) -> None:
        print(f"| {what} | {ours} | {theirs} | {'' if ratio is None else f'{ratio:.2f}×'} | {target} |", flush=True)

    print(f"load average {os.getloadavg()[0]:.1f}; runs {args.runs}", flush=True)
    print("| measure | memagent | plain / memory off | ratio | target |\n|---|---:|---:|---:|---:|", flush=True)
    with FakeAnthropic(responder=lambda body: text("Done.")) as fake, tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            env = {
                **os.environ,
                "MEMAGENT_HOME": str(args.stores / f"store-{n // 1000}k" / "home"),
                "ANTHROPIC_API_KEY": "bench",
                "ANTHROPIC_BASE_URL": fake.url,
            }
            size_rows(args, n, env, queries, row)
        write_rows(args, Path(tmp), row)
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
