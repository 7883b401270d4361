"""CPU, wall time and peak memory of one ``memagent -p hi`` against the loopback fake Messages API.

Usage::

    python bench/bench_print_cpu.py [--runs 7] [--tree NAME=SRC_DIR ...]

Each ``--tree`` is a source folder holding a ``memagent`` package (e.g. ``git archive`` of an
older commit unpacked somewhere) put first on ``PYTHONPATH``; without one, the installed package
is measured. Every tree runs with memory on and with ``--no-memory``, interleaved run by run so
that the machine's noise hits every case alike. Prints per case the medians of CPU (user +
system, of the process and what it waited for) and wall time, and the CPU ratio of each case
to the first one (peak RSS: ``/usr/bin/time -f %M`` on one run). This is what each real-CLI
test of the suite pays.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from fakeapi import FakeAnthropic, text  # noqa: E402


def one_run(env: dict[str, str], project: str, memory: bool) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one ``memagent -p hi``."""
    flags = [] if memory else ["--no-memory"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "memagent", "-C", project, "-p", "hi", *flags],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"memagent -p failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--tree", action="append", default=[], help="NAME=SRC_DIR holding a memagent package")
    args = parser.parse_args()
    trees = [tuple(spec.split("=", 1)) for spec in args.tree] or [("installed", "")]
    cases = [(name, path, memory) for name, path in trees for memory in (True, False)]
    results: dict[str, list[tuple[float, float]]] = {}
    with (
        tempfile.TemporaryDirectory() as tmp,
        FakeAnthropic([text("hello")] * (args.runs * len(cases) + 4)) as fake,
    ):
        base_env = {
            **os.environ,
            "HOME": tmp,
            "MEMAGENT_HOME": f"{tmp}/.memagent",
            "XDG_CACHE_HOME": f"{tmp}/.cache",
            "XDG_CONFIG_HOME": f"{tmp}/.config",
            "ANTHROPIC_BASE_URL": fake.url,
            "ANTHROPIC_API_KEY": "sk-ant-bench-key",
        }
        project = Path(tmp, "project")
        project.mkdir()
        for run in range(args.runs + 1):  # the first round warms caches and is not counted
            for name, path, memory in cases:
                env = {**base_env, "PYTHONPATH": path} if path else base_env
                figures = one_run(env, str(project), memory)
                if run:
                    results.setdefault(f"{name} memory {'on' if memory else 'off'}", []).append(figures)
    first = None
    for label, rows in results.items():
        cpu = statistics.median(r[0] for r in rows)
        wall = statistics.median(r[1] for r in rows)
        first = first or cpu
        print(f"{label:28} cpu {cpu:5.2f} s  wall {wall:5.2f} s  cpu ratio {cpu / first:4.2f}  (n={len(rows)})")


if __name__ == "__main__":
    main()
