"""Start-up time of memagent's light commands, side by side with baselines in one run.

Usage: python bench/bench_startup.py [--runs 10]

Measures wall time (median of N, interleaved so machine noise hits every command alike) of:
- ``python -c pass`` (the floor),
- a bare typer app with memagent's command shape (DESIGN §11's reference: typer itself costs
  ~0.35 s because it imports pydantic and rich),
- ``memagent --help``, ``memagent tasks --help``, ``memagent tasks list``,
and prints ratios to both baselines. It also checks that none of the light commands imported
``anthropic`` or ``chromadb``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BARE_TYPER_APP = '''
import typer
app = typer.Typer(add_completion=False)
tasks = typer.Typer()
memory = typer.Typer()
sessions = typer.Typer()
app.add_typer(tasks, name="tasks")
app.add_typer(memory, name="memory")
app.add_typer(sessions, name="sessions")

@app.callback(invoke_without_command=True)
def main(ctx: typer.Context, prompt: str = typer.Option(None, "-p"), yes: bool = typer.Option(False, "--yes")):
    """Chat."""

@tasks.callback(invoke_without_command=True)
def tasks_main(ctx: typer.Context, root: str = typer.Option(None, "-C"), json_out: bool = typer.Option(False, "--json")):
    """Tasks."""

@tasks.command("list")
def tasks_list(root: str = typer.Option(None, "-C"), json_out: bool = typer.Option(False, "--json")):
    """List tasks."""
    print("[]")

@tasks.command("show")
def tasks_show(task_id: int, json_out: bool = typer.Option(False, "--json")):
    """Show a task."""

@app.command()
def doctor():
    """Doctor."""

app()
'''

HEAVY_CHECK = (
    "import runpy, sys; sys.argv = ['memagent'] + sys.argv[1:]\n"
    "try:\n    runpy.run_module('memagent', run_name='__main__')\n"
    "except SystemExit:\n    pass\n"
    "heavy = [m for m in ('anthropic', 'chromadb') if m in sys.modules]\n"
    "sys.stderr.write('HEAVY:' + ','.join(heavy) + '\\n')\n"
)


def time_command(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def heavy_imports(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    out = subprocess.run(
        [sys.executable, "-c", HEAVY_CHECK, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    for line in out.stderr.splitlines():
        if line.startswith("HEAVY:"):
            return line[6:] or "none"
    return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "bare_typer.py").write_text(BARE_TYPER_APP)
        env = {**os.environ, "MEMAGENT_HOME": str(work / "home")}
        memagent = [sys.executable, "-m", "memagent"]
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "bare typer app tasks list": [sys.executable, str(work / "bare_typer.py"), "tasks", "list"],
            "bare typer app --help": [sys.executable, str(work / "bare_typer.py"), "--help"],
            "bare typer app tasks --help": [sys.executable, str(work / "bare_typer.py"), "tasks", "--help"],
            "memagent --help": memagent + ["--help"],
            "memagent tasks --help": memagent + ["tasks", "--help"],
            "memagent tasks list": memagent + ["tasks", "list"],
        }
        samples: dict[str, list[float]] = {name: [] for name in commands}
        for argv in commands.values():  # warm the file cache once
            time_command(argv, work, env)
        for _ in range(args.runs):
            for name, argv in commands.items():
                samples[name].append(time_command(argv, work, env))
        med = {name: statistics.median(values) for name, values in samples.items()}
        floor = med["python -c pass"]
        print(f"runs per command: {args.runs} (interleaved); python {sys.version.split()[0]}")
        print(f"{'command':32} {'median ms':>10} {'vs python':>10} {'vs bare typer':>14}")
        for name in commands:
            if "tasks --help" in name:
                bare = med["bare typer app tasks --help"]
            elif "help" in name:
                bare = med["bare typer app --help"]
            else:
                bare = med["bare typer app tasks list"]
            print(f"{name:32} {med[name] * 1000:10.0f} {med[name] / floor:9.1f}x {med[name] / bare:13.2f}x")
        for label, argv in (
            ("--help", ["--help"]),
            ("tasks --help", ["tasks", "--help"]),
            ("tasks list", ["tasks", "list"]),
        ):
            print(f"heavy modules imported by `memagent {label}`: {heavy_imports(argv, work, env)}")


if __name__ == "__main__":
    main()
