"""Cost of the bash tool's sandbox: the same commands through the real ``bash`` tool with the
bubblewrap sandbox and without it, interleaved in one process run.

Usage: python bench/bench_sandbox.py [--runs 30] [--json out.json]

Reported per command: median wall time (ms) sandboxed and unconfined, and their ratio; plus the
one-time probe (``bwrap … true`` with the real mounts) paid on a session's first command.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from memagent.config import Settings
from memagent.tools.base import ToolContext, ToolRegistry
from memagent.tools.sandbox import Sandbox, SandboxConfig
from memagent.tools.shell import ShellConfig, bash_tool

COMMANDS = {
    "true": "true",
    "echo+ls": "echo hi && ls -la > /dev/null",
    "python -c pass": "python3 -c pass",
    "seq 100k (capped output)": "seq 1 100000",
}


def timed(registry: ToolRegistry, ctx: ToolContext, command: str) -> float:
    started = time.perf_counter()
    outcome = registry.run("bash", {"command": command}, ctx)
    elapsed = time.perf_counter() - started
    assert not outcome.is_error, outcome.content
    return elapsed * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))
    ctx = ToolContext(root=root)
    sandboxed_config = ShellConfig.from_settings(Settings())
    started = time.perf_counter()
    status = sandboxed_config.sandbox.status(root)
    probe_ms = (time.perf_counter() - started) * 1000
    assert status.active, status.reason
    sandboxed = ToolRegistry.of([bash_tool(sandboxed_config)])
    plain = ToolRegistry.of([bash_tool(ShellConfig(sandbox=Sandbox(SandboxConfig(enabled=False))))])
    results = {"probe_ms": round(probe_ms, 1), "commands": {}}
    for label, command in COMMANDS.items():
        times: dict[str, list[float]] = {"sandbox": [], "plain": []}
        for _ in range(args.runs):  # interleaved, so load changes hit both alike
            times["sandbox"].append(timed(sandboxed, ctx, command))
            times["plain"].append(timed(plain, ctx, command))
        medians = {kind: statistics.median(values) for kind, values in times.items()}
        results["commands"][label] = {
            "sandbox_ms": round(medians["sandbox"], 1),
            "plain_ms": round(medians["plain"], 1),
            "ratio": round(medians["sandbox"] / medians["plain"], 2),
        }
    print(f"probe (once per session): {results['probe_ms']} ms")
    print(f"{'command':28} {'sandbox ms':>10} {'plain ms':>9} {'ratio':>6}")
    for label, row in results["commands"].items():
        print(f"{label:28} {row['sandbox_ms']:>10} {row['plain_ms']:>9} {row['ratio']:>6}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
