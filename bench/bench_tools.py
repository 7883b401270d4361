"""Speed of the built-in search tools and the bash tool, side by side with baselines in one run.

Usage: python bench/bench_tools.py [--runs 7] [--files 3000]

Builds a synthetic project (``--files`` Python files of ~60 lines in nested dirs, plus a
``node_modules`` and a ``.git`` tree of the same size that must be skipped), then measures the
median wall time of N interleaved runs of:

- memagent ``grep`` (a regex over the project) vs ``grep -rn -E`` with the same excludes,
- memagent ``glob`` ('**/*.py') vs ``pathlib.Path.rglob('*.py')`` (which does *not* skip the
  ignored trees, so it walks twice as many files),
- memagent ``bash`` ('true') vs a bare ``subprocess.run(['bash', '-c', 'true'])``,

and prints the ratios.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memagent.tools.base import ToolContext, ToolRegistry
from memagent.tools.builtin import builtin_tools


def build_project(root: Path, files: int) -> None:
    body = "".join(f"def function_{i}(x):\n    return x + {i}\n\n" for i in range(20))
    for tree in ("", "node_modules/", ".git/"):
        for i in range(files):
            path = root / f"{tree}pkg{i % 30}/sub{i % 7}/mod_{i}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body + ("# needle_marker\n" if i % 100 == 0 else ""))


def median_time(fn: Callable[[], object], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--files", type=int, default=3000)
    args = parser.parse_args()
    registry = ToolRegistry.of(builtin_tools())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build_project(root, args.files)
        ctx = ToolContext(root=root)
        cases: dict[str, Callable[[], object]] = {
            "memagent grep": lambda: registry.run("grep", {"pattern": r"needle_\w+"}, ctx),
            "grep -rn -E": lambda: subprocess.run(
                ["grep", "-rn", "-E", r"needle_\w+", "--exclude-dir=node_modules", "--exclude-dir=.git", "."],
                cwd=root,
                capture_output=True,
                check=False,
            ),
            "memagent glob": lambda: registry.run("glob", {"pattern": "**/*.py"}, ctx),
            "pathlib rglob": lambda: sorted(root.rglob("*.py")),
            "memagent bash": lambda: registry.run("bash", {"command": "true"}, ctx),
            "subprocess bash": lambda: subprocess.run(["bash", "-c", "true"], cwd=root, check=False),
        }
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.runs):  # interleaved so noise hits every case alike
            for name, fn in cases.items():
                samples[name].extend(median_time(fn, 1))
    medians = {name: statistics.median(values) for name, values in samples.items()}
    print(f"{args.files} files per tree, {args.runs} runs, median wall time")
    for name, value in medians.items():
        print(f"  {name:<18} {value * 1000:8.1f} ms")
    for ours, base in [
        ("memagent grep", "grep -rn -E"),
        ("memagent glob", "pathlib rglob"),
        ("memagent bash", "subprocess bash"),
    ]:
        print(f"  {ours} / {base}: {medians[ours] / medians[base]:.2f}x")


if __name__ == "__main__":
    main()
