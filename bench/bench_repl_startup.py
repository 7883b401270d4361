"""Time to the REPL prompt, and to the session being ready, in a real pseudo-terminal.

Usage::

    /work/venv/bin/python bench/bench_repl_startup.py [--runs 10]

For each run, spawns ``python -m memagent --no-memory`` (and once more with memory on) in a pty
with a fake key, and records when the prompt character appears and when the
``session … · memory …`` line (printed once the background thread has opened the session and
imported the SDK) appears. ``python -c pass`` and ``python -c "import anthropic"`` are timed in
the same run for scale. Prints medians in milliseconds. No request is sent to any server.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import pexpect


def time_command(args: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def time_repl(project: str, env: dict[str, str], memory: bool) -> tuple[float, float]:
    flags = [] if memory else ["--no-memory"]
    started = time.perf_counter()
    child = pexpect.spawn(
        sys.executable,
        ["-m", "memagent", "-C", project, *flags],
        env=env,
        encoding="utf-8",
        dimensions=(40, 120),
        timeout=60,
    )
    child.expect("❯")
    prompt = time.perf_counter() - started
    child.expect("session ")
    ready = time.perf_counter() - started
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    return prompt, ready


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = os.path.join(tmp, "project")
        os.mkdir(project)
        env = dict(
            os.environ,
            MEMAGENT_HOME=os.path.join(tmp, "home"),
            ANTHROPIC_API_KEY="bench-key",
            ANTHROPIC_BASE_URL="http://127.0.0.1:9",
            TERM="xterm-256color",
            PROMPT_TOOLKIT_NO_CPR="1",
        )
        rows: dict[str, list[float]] = {
            k: []
            for k in (
                "python -c pass",
                "python -c 'import anthropic'",
                "memagent --help",
                "REPL prompt (--no-memory)",
                "REPL session ready (--no-memory)",
                "REPL prompt (memory on)",
                "REPL session ready (memory on)",
            )
        }
        time_repl(project, env, memory=True)  # warm-up: builds the embedding graph cache once
        for _ in range(args.runs):
            rows["python -c pass"].append(time_command([sys.executable, "-c", "pass"]))
            rows["python -c 'import anthropic'"].append(time_command([sys.executable, "-c", "import anthropic"]))
            rows["memagent --help"].append(time_command([sys.executable, "-m", "memagent", "--help"]))
            prompt, ready = time_repl(project, env, memory=False)
            rows["REPL prompt (--no-memory)"].append(prompt)
            rows["REPL session ready (--no-memory)"].append(ready)
            prompt, ready = time_repl(project, env, memory=True)
            rows["REPL prompt (memory on)"].append(prompt)
            rows["REPL session ready (memory on)"].append(ready)
    base = statistics.median(rows["python -c pass"])
    print(f"runs: {args.runs} (interleaved)")
    print(f"{'what':40} {'median ms':>10} {'min ms':>8} {'x python':>9}")
    for name, values in rows.items():
        median = statistics.median(values)
        print(f"{name:40} {median * 1000:10.0f} {min(values) * 1000:8.0f} {median / base:9.1f}")


if __name__ == "__main__":
    main()
