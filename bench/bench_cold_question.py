"""The question path and the cold search, this tree against another one, interleaved in one run.

Usage (a baseline tree made with ``git archive main src | tar -x -C /tmp/base``; the store a
*copy* of a bench store, since sessions write into it)::

    python bench/bench_cold_question.py --store /tmp/copy/store-10k --baseline-src /tmp/base/src --runs 5

Rows, each command run alternately with the others (after one untimed run of each), medians of
wall and CPU (user + system of the child), and the peak RSS (``VmHWM`` of the ``memagent`` process
itself, read at exit):

- ``memagent -p QUESTION``: baseline, this tree, and ``--no-memory``;
- cold ``memagent memory search QUESTION``: baseline, this tree, and the plain script of
  ``bench_memperf.py`` (import chromadb, open the collection, load the embedder, embed, query);
- with ``--hnsw-index DIR`` (a *copy* of a store's ``.memory/local/index``): the RSS of one process
  after opening the active collection and after its first query, beside what the HNSW segment's
  header says it holds (element slots in use, deleted ones included, and bytes per element).

The baseline runs with ``PYTHONPATH`` set to ``--baseline-src``, ahead of this tree's install.
``-p`` talks to the loopback fake Messages API, which answers at once.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

QUESTION = "how do we deploy the parser and which tests must pass first?"


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall s, CPU s of the child) of one command (``bench_memperf``'s)."""
    from bench_memperf import timed as run_timed

    return run_timed(argv, env, cwd)


def peak_mb(args: list[str], env: dict[str, str], cwd: Path) -> float:
    """``VmHWM`` of ``memagent ARGS`` itself, in MB (``bench_memperf``'s)."""
    from bench_memperf import peak_rss_mb

    return peak_rss_mb(args, env, cwd)


FIRST_QUERY = """
import struct, sys, time
from pathlib import Path
def rss():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) // 1024 for line in fh if line.startswith("VmRSS:"))
from memagent.memory.chroma_client import local_client
client = local_client(sys.argv[1])
collection = client.get_collection("memagent_active", embedding_function=None)
opened = rss()
started = time.perf_counter()
collection.query(query_embeddings=[[0.05] * 384], n_results=5, include=["distances"])
took = time.perf_counter() - started
queried = rss()
for header in Path(sys.argv[1]).glob("*/header.bin"):
    _, _, capacity, slots, size = struct.unpack_from("<IQQQQ", header.read_bytes())
    print(f"segment {header.parent.name[:8]}: {slots:,} element slots in use (capacity {capacity:,}), "
          f"{size} bytes each = {slots * size / 1e6:.1f} MB of data_level0.bin")
print(f"{collection.count():,} active vectors; RSS {opened} MB after opening, {queried} MB after the first "
      f"query (+{queried - opened} MB, {took:.2f} s)")
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True, help="a copy of a bench store (store-10k)")
    parser.add_argument("--baseline-src", type=Path, required=True, help="the baseline tree's src folder")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--hnsw-index", type=Path, help="a copy of a store's .memory/local/index")
    args = parser.parse_args(argv)
    from bench_memperf import PLAIN_COLD

    from fakeapi import FakeAnthropic, text

    memagent = str(Path(sys.executable).parent / "memagent")
    project = args.store / "project"
    with FakeAnthropic(responder=lambda body: text("Done.")) as fake:
        env = {
            **os.environ,
            "MEMAGENT_HOME": str(args.store / "home"),
            "ANTHROPIC_API_KEY": "bench",
            "ANTHROPIC_BASE_URL": fake.url,
            "ORT_DISABLE_TELEMETRY": "1",
        }
        base_env = {**env, "PYTHONPATH": str(args.baseline_src)}
        timed([memagent, "trust", "-C", str(project)], env, project)
        ask = ["-p", QUESTION, "-C", str(project)]
        search = ["memory", "search", QUESTION, "-C", str(project)]
        commands = {
            "-p question, baseline": ([memagent, *ask], base_env),
            "-p question, this tree": ([memagent, *ask], env),
            "-p question, --no-memory": ([memagent, *ask, "--no-memory"], env),
            "cold memory search, baseline": ([memagent, *search], base_env),
            "cold memory search, this tree": ([memagent, *search], env),
            "cold search, plain script": (
                [sys.executable, "-c", PLAIN_COLD, str(args.store / "plain"), QUESTION, "auto"],
                env,
            ),
        }
        for argv_, env_ in commands.values():
            timed(argv_, env_, project)
        walls: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        peaks: dict[str, list[float]] = {"baseline": [], "this tree": [], "--no-memory": []}
        print(f"load average {os.getloadavg()[0]:.1f}; runs {args.runs}", flush=True)
        for _ in range(args.runs):
            for name, (argv_, env_) in commands.items():
                walls[name].append(timed(argv_, env_, project))
            peaks["baseline"].append(peak_mb(ask, base_env, project))
            peaks["this tree"].append(peak_mb(ask, env, project))
            peaks["--no-memory"].append(peak_mb([*ask, "--no-memory"], env, project))
    print("| command | wall (median) | CPU (median) |\n|---|---:|---:|")
    for name, values in walls.items():
        wall = statistics.median(w for w, _ in values)
        cpu = statistics.median(c for _, c in values)
        print(f"| {name} | {wall:.2f} s | {cpu:.2f} s |")
    print("\n| peak RSS of -p question | MB (median) |\n|---|---:|")
    for name, values in peaks.items():
        print(f"| {name} | {statistics.median(values):.0f} |")
    if args.hnsw_index is not None:
        out = subprocess.run([sys.executable, "-c", FIRST_QUERY, str(args.hnsw_index)], capture_output=True, text=True)
        print(f"\n{out.stdout.strip() or out.stderr.strip()[-600:]}")
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
