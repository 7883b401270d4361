"""Task graph at scale: 10,000 tasks on disk, CLI commands as real processes and the API in-process.

Run by hand (not in CI):

    /work/venv/bin/python bench/bench_tasks.py [--tasks 10000] [--runs 7] [--write bench/results/tasks.md]

Everything is measured side by side in one run; figures are medians over ``--runs`` runs (the
in-process ones over 3× as many), next to a bare ``python -c pass`` and a bare typer app of the
same command shape, so the ratios mean something on a noisy machine.
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
from collections.abc import Callable
from pathlib import Path

from memagent.tasks import TaskStore

HUB_DEPENDENTS = 50

BARE_TYPER = """
import typer
app = typer.Typer(add_completion=False)
tasks = typer.Typer()
app.add_typer(tasks, name="tasks")
@app.callback()
def main(root: str = typer.Option(None, "-C")):
    pass
@tasks.command("list")
def list_(json_: bool = typer.Option(False, "--json")):
    pass
app(["tasks", "list", "--json"])
"""


def build_graph(root: Path, count: int, hubs: int, seed: int = 7) -> list[int]:
    """Write ``count`` task files directly (a realistic mix), with ``hubs`` tasks that each block 50."""
    rng = random.Random(seed)
    root.mkdir(parents=True)
    tasks: dict[int, dict] = {}
    stamp = "2026-11-21T10:00:00+00:00"
    for tid in range(1, count + 1):
        tasks[tid] = {
            "id": tid,
            "subject": f"Task {tid}: "
            + " ".join(
                rng.choice(["fix", "add", "refactor", "test", "document", "parser", "cache", "api"]) for _ in range(5)
            ),
            "description": "Some details about what done looks like for this task. " * rng.randint(0, 3),
            "status": rng.choices(["pending", "in_progress", "completed"], [6, 1, 3])[0],
            "blockedBy": [],
            "blocks": [],
            "owner": rng.choice(["", "", "agent", "ana"]),
            "created_at": stamp,
            "updated_at": stamp,
        }
    hub_ids = list(range(count - hubs * (HUB_DEPENDENTS + 1) + 1, count + 1, HUB_DEPENDENTS + 1))
    for hub in hub_ids:
        tasks[hub]["status"] = "pending"
        for dep in range(hub + 1, hub + 1 + HUB_DEPENDENTS):
            tasks[dep]["status"] = "pending"
            _edge(tasks, hub, dep)
    first_hub = hub_ids[0]
    for tid in range(2, first_hub):  # ordinary tasks: up to two earlier open blockers
        if tasks[tid]["status"] == "completed":
            continue
        for blocker in rng.sample(range(max(1, tid - 200), tid), k=min(tid - 1, rng.choice([0, 0, 1, 2]))):
            if tasks[blocker]["status"] != "completed":
                _edge(tasks, blocker, tid)
    for tid, task in tasks.items():
        (root / f"task_{tid}.json").write_text(json.dumps(task, indent=2) + "\n")
    return hub_ids


def _edge(tasks: dict[int, dict], blocker: int, dependent: int) -> None:
    tasks[blocker]["blocks"].append(dependent)
    tasks[dependent]["blockedBy"].append(blocker)


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """Wall time and CPU time (ours plus any child process's) of one call, in ms.

    CPU time is what the code itself costs; on a shared machine the wall time adds waiting for
    the CPU and the disk, so both are reported.
    """

    def cpu() -> float:
        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    start, start_cpu = time.perf_counter(), cpu()
    fn()
    return (time.perf_counter() - start) * 1000, (cpu() - start_cpu) * 1000


def proc(args: list[str], cwd: Path) -> Callable[[], None]:
    def run() -> None:
        result = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
        if result.returncode != 0:
            raise SystemExit(f"{' '.join(args)} failed: {result.stderr.strip()}")

    return run


Case = tuple[str, Callable[[], object], Callable[[], object] | None, str]


def interleaved(cases: list[Case], rounds: int) -> dict[str, list[tuple[float, float]]]:
    """Run every case once per round, so all of them see the same machine noise; the order is
    shuffled each round so that no case always pays for the writeback its predecessor started."""
    samples: dict[str, list[tuple[float, float]]] = {label: [] for label, *_ in cases}
    rng = random.Random(11)
    for _ in range(rounds):
        for label, fn, before, _note in rng.sample(cases, len(cases)):
            if before is not None:
                before()
            samples[label].append(timed(fn))
    return samples


def floor_writes(root: Path, count: int, rounds: int) -> Callable[[], None]:
    """What the file system alone charges: ``count`` small files written to a temp name and
    renamed over an existing, settled file in the same directory, as a task update does (the
    names are not task files). Each round replaces a fresh set, like completing another hub."""
    for r in range(rounds):
        for i in range(count):
            (root / f".floor_{r}_{i}").write_bytes(b"{}")
    round_no = iter(range(rounds))
    payload = (root / "task_1.json").read_bytes()  # a task file's worth of bytes

    def run() -> None:
        r = next(round_no)
        for i in range(count):
            tmp = root / f".floor_{r}_{i}.tmp"
            tmp.write_bytes(payload)
            os.replace(tmp, root / f".floor_{r}_{i}")

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--write", type=Path, help="write the markdown table here")
    args = parser.parse_args()
    runs, api_runs = args.runs, args.runs * 3
    exe = str(Path(sys.executable).parent / "memagent")
    py = sys.executable
    workdir = Path(tempfile.mkdtemp(prefix="bench-tasks-"))
    root = workdir / ".tasks"
    rows: list[tuple[str, str, str, str]] = []

    def report(cases: list[Case], samples: dict[str, list[tuple[float, float]]], ref: str, ref_short: str) -> None:
        ref_median = statistics.median(w for w, _ in samples[ref])
        ref_cpu = statistics.median(c for _, c in samples[ref])
        for label, _fn, _before, note in cases:
            walls, cpus = [w for w, _ in samples[label]], [c for _, c in samples[label]]
            med, cpu_med = statistics.median(walls), statistics.median(cpus)
            ratio = (
                f"{med / ref_median:.2f}× {ref_short} (CPU {cpu_med / ref_cpu:.2f}×)"
                if label != ref and ref_cpu
                else ""
            )
            extra = "; ".join(x for x in (ratio, note) if x)
            rows.append((label, f"{med:.1f} ms ({min(walls):.0f}–{max(walls):.0f})", f"{cpu_med:.1f} ms", extra))
            print(
                f"{label:58s} {med:8.1f} ms [{min(walls):.0f}–{max(walls):.0f}] cpu {cpu_med:7.1f} ms  {extra}",
                flush=True,
            )

    try:
        t0 = time.perf_counter()
        hubs = build_graph(root, args.tasks, runs + api_runs + 2)
        print(
            f"wrote {args.tasks} task files in {time.perf_counter() - t0:.1f} s ({len(hubs)} hubs with {HUB_DEPENDENTS} dependents)"
        )
        store = TaskStore(root)
        cold, cold_cpu = timed(store.list)
        rows.append(
            (
                f"API: very first read (index built from {args.tasks} files, once)",
                f"{cold:.1f} ms (single run)",
                f"{cold_cpu:.1f} ms",
                "",
            )
        )
        print(f"first read, index built: {cold:.1f} ms (cpu {cold_cpu:.1f} ms)")
        hub_iter = iter(hubs)
        index = root / "index.json"

        typer_label = "baseline: bare typer app, `tasks list --json`"
        cli_cases: list[Case] = [
            ("baseline: python -c pass", proc([py, "-c", "pass"], workdir), None, ""),
            (typer_label, proc([py, "-c", BARE_TYPER], workdir), None, ""),
            ("CLI: tasks show 1 (start-up + one file)", proc([exe, "tasks", "show", "1"], workdir), None, ""),
            ("CLI: tasks list --json", proc([exe, "tasks", "list", "--json"], workdir), None, "target ≤ 1 s"),
            ("CLI: tasks ready --json", proc([exe, "tasks", "ready", "--json"], workdir), None, ""),
            ("CLI: tasks ready (table)", proc([exe, "tasks", "ready"], workdir), None, ""),
            (f"CLI: tasks list (table, {args.tasks} rows)", proc([exe, "tasks", "list"], workdir), None, ""),
            (
                "CLI: tasks list --json, index deleted first",
                proc([exe, "tasks", "list", "--json"], workdir),
                lambda: index.unlink(missing_ok=True),
                f"rebuild from {args.tasks} files",
            ),
            (
                f"CLI: tasks done ID ({HUB_DEPENDENTS} dependents)",
                lambda: subprocess.run(
                    [exe, "tasks", "done", str(next(hub_iter))], cwd=workdir, capture_output=True, check=True
                ),
                None,
                "",
            ),
            (
                "CLI: tasks add SUBJECT --after 1",
                proc([exe, "tasks", "add", "bench task", "--after", "1"], workdir),
                None,
                "",
            ),
        ]
        os.sync()  # start each phase with the freshly written graph on disk, not in flight
        report(cli_cases, interleaved(cli_cases, runs), typer_label, "bare typer")

        counter = iter(range(10**6))
        store.list()
        open_ids = iter([t.id for t in store.list() if t.status == "pending" and not t.blockedBy])
        floor_label = f"floor: {HUB_DEPENDENTS + 1} bare write+rename in .tasks/"
        api_cases: list[Case] = [
            (floor_label, floor_writes(root, HUB_DEPENDENTS + 1, api_runs), None, "file system alone"),
            (
                f"API: complete a task with {HUB_DEPENDENTS} dependents",
                lambda: TaskStore(root).update(next(hub_iter), status="completed"),
                None,
                "target ≤ 50 ms; 52 files written",
            ),
            (
                "API: create a task with one blocker",
                lambda: TaskStore(root).create(f"bench {next(counter)}", blocked_by=[2]),
                None,
                "target ≤ 50 ms",
            ),
            (
                "API: start a ready task",
                lambda: TaskStore(root).update(next(open_ids), status="in_progress"),
                None,
                "target ≤ 50 ms",
            ),
            ("API: TaskStore.list() (snapshot + log)", lambda: TaskStore(root).list(), None, ""),
            ("API: TaskStore.context_snapshot()", lambda: TaskStore(root).context_snapshot(), None, ""),
        ]
        os.sync()
        report(api_cases, interleaved(api_cases, api_runs), floor_label, "floor")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    if args.write:
        lines = [
            "# Task graph benchmark",
            "",
            f"Command: `/work/venv/bin/python bench/bench_tasks.py --tasks {args.tasks} --runs {runs} --write {args.write}`",
            "",
            f"{args.tasks:,} task files on disk (hub tasks with {HUB_DEPENDENTS} dependents each, the rest with 0–2 "
            f"blockers, 30% completed). Every case runs once per round, in a shuffled order, so all see the same noise; "
            f"{runs} rounds for processes, {api_runs} for in-process API calls. Wall time median (min–max), and "
            f"CPU time (user+sys, including child processes) median, which the other jobs on the machine disturb less. "
            f"Machine: {os.cpu_count()} cores, shared with other jobs — the ratios are the useful part.",
            "",
            "| what | wall: median (min–max) | CPU: median | note |",
            "|---|---:|---:|---|",
        ]
        lines += [f"| {label} | {value} | {cpu} | {note} |" for label, value, cpu, note in rows]
        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text("\n".join(lines) + "\n")
        print(f"wrote {args.write}")


if __name__ == "__main__":
    main()
