"""Time to the first answer token, memory on vs off, against the loopback fake Messages API.

Usage::

    python bench/bench_ttft.py [--runs 7] [--typing 1.5] [--store /work/bench-stores/store-10k]

The fake API (``tests/fakeapi``) runs as a separate process and answers every request at once
with a short text, so the figures are memagent's own overhead: process start, imports, opening
the session (the SDK client, the memory store and its embedder), per-turn memory retrieval.

Measured per run, interleaved so that machine noise hits both sides alike:

- REPL, message typed ahead: ``memagent`` in a real pty; the message is sent the moment the
  prompt appears (the worst case: the session has not started loading yet). Time from Enter to
  the first answer token on screen.
- REPL, user types for ``--typing`` seconds: the same, with the message sent that long after
  the prompt appeared (a person typing while the session opens in the background).
- REPL, launch to first token: from starting the process to the first token (typed ahead).
- ``-p``: from starting ``memagent -p`` to the answer on stdout (plain subprocess, no pty).

Prints medians in milliseconds and the memory-on / memory-off ratio of each row (target ≤ 1.3×
for the REPL rows a user feels). The embedding graph is built once in a warm-up run first.

``--store`` runs against a store of real cards built by ``bench_stores.py`` (its ``project`` and
``home``) instead of an empty project: an empty store flatters memory-on (nothing to search).
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

import pexpect

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from fakeapi import text  # noqa: E402
from fakeapi.process import FakeAnthropicProcess  # noqa: E402

ANSWER = "Hello from the fake model"
MESSAGE = "what does this project do?"


def repl_run(project: str, env: dict[str, str], memory: bool, typing: float) -> tuple[float, float]:
    """(Enter → first token, launch → first token) for one REPL run."""
    flags = [] if memory else ["--no-memory"]
    launched = time.perf_counter()
    child = pexpect.spawn(
        sys.executable,
        ["-m", "memagent", "-C", project, *flags],
        env=env,
        encoding="utf-8",
        dimensions=(40, 160),
        timeout=120,
    )
    try:
        child.expect("❯")
        if typing:
            time.sleep(typing)
        child.send(MESSAGE + "\r")
        entered = time.perf_counter()
        child.expect("Hello from")
        first = time.perf_counter()
        child.expect("❯")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    return first - entered, first - launched


def print_run(project: str, env: dict[str, str], memory: bool) -> float:
    """Launch → answer on stdout for one ``-p`` run."""
    flags = [] if memory else ["--no-memory"]
    launched = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "memagent", "-C", project, "-p", MESSAGE, *flags],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    proc.stdout.read(1)
    first = time.perf_counter()
    proc.stdout.read()
    proc.wait()
    return first - launched


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--typing", type=float, default=1.5, help="seconds the simulated user types")
    parser.add_argument("--store", type=Path, help="a store built by bench_stores.py (default: an empty project)")
    args = parser.parse_args()
    rows = {
        f"{name} [{mode}]": []
        for name in (
            "REPL typed ahead: Enter→token",
            f"REPL typing {args.typing:g}s: Enter→token",
            "REPL launch→token",
            "-p launch→answer",
        )
        for mode in ("off", "on")
    }
    with tempfile.TemporaryDirectory() as tmp:
        project = str(args.store / "project") if args.store else os.path.join(tmp, "project")
        home = str(args.store / "home") if args.store else os.path.join(tmp, "home")
        os.makedirs(project, exist_ok=True)
        with FakeAnthropicProcess([text(ANSWER)] * 2000, tmp) as fake:
            env = dict(
                os.environ,
                MEMAGENT_HOME=home,
                HOME=os.path.join(tmp, "home"),
                ANTHROPIC_API_KEY="bench-key",
                ANTHROPIC_BASE_URL=fake.url,
                TERM="xterm-256color",
                PROMPT_TOOLKIT_NO_CPR="1",
                ORT_DISABLE_TELEMETRY="1",
            )
            repl_run(project, env, memory=True, typing=0)  # warm-up: the embedding graph cache
            for _ in range(args.runs):
                for memory, mode in ((False, "off"), (True, "on")):
                    enter, launch = repl_run(project, env, memory, typing=0)
                    rows[f"REPL typed ahead: Enter→token [{mode}]"].append(enter)
                    rows[f"REPL launch→token [{mode}]"].append(launch)
                    enter, _ = repl_run(project, env, memory, typing=args.typing)
                    rows[f"REPL typing {args.typing:g}s: Enter→token [{mode}]"].append(enter)
                    rows[f"-p launch→answer [{mode}]"].append(print_run(project, env, memory))
            errors = fake.errors
    print(f"runs: {args.runs} (interleaved, memory off/on alternating); fake API errors: {len(errors)}")
    print(f"{'what':42} {'off ms':>8} {'on ms':>8} {'on/off':>7}")
    names = dict.fromkeys(key.rsplit(" [", 1)[0] for key in rows)
    for name in names:
        off = statistics.median(rows[f"{name} [off]"]) * 1000
        on = statistics.median(rows[f"{name} [on]"]) * 1000
        print(f"{name:42} {off:8.0f} {on:8.0f} {on / off:6.2f}×")


if __name__ == "__main__":
    main()
