"""Does configuring MCP servers delay the REPL's prompt? Time to prompt with none vs two.

Usage::

    python bench/bench_mcp_startup.py [--runs 7]

Each run spawns ``python -m memagent --no-memory`` in a pty twice, alternating: once with no
``mcp.json``, once with two stdio servers (the SDK toy server of ``tests/mcp_bridge``) in
``$MEMAGENT_HOME/mcp.json``, and records when the prompt character appears. The servers are
started only while the session is composed, after the prompt is shown, so the two medians should
match. No request is sent to any server (a fake key and an unused base URL).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pexpect

TOY = Path(__file__).resolve().parents[1] / "tests" / "mcp_bridge" / "toy_server.py"


def home_with(servers: int) -> str:
    home = tempfile.mkdtemp(prefix="memagent-bench-home-")
    if servers:
        entries = {f"toy{n}": {"command": sys.executable, "args": [str(TOY), "stdio"]} for n in range(servers)}
        Path(home, "mcp.json").write_text(json.dumps({"mcpServers": entries}))
    return home


def time_to_prompt(home: str, project: str) -> float:
    env = {
        **os.environ,
        "MEMAGENT_HOME": home,
        "ANTHROPIC_API_KEY": "bench-key",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        "TERM": "xterm-256color",
        "PROMPT_TOOLKIT_NO_CPR": "1",
    }
    started = time.perf_counter()
    child = pexpect.spawn(
        sys.executable,
        ["-m", "memagent", "-C", project, "--no-memory"],
        env=env,
        encoding="utf-8",
        timeout=120,
        dimensions=(40, 120),
    )
    child.expect("❯")
    elapsed = time.perf_counter() - started
    child.terminate(force=True)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    project = tempfile.mkdtemp(prefix="memagent-bench-project-")
    homes = {"no servers": home_with(0), "2 servers": home_with(2)}
    times: dict[str, list[float]] = {name: [] for name in homes}
    for _ in range(runs):
        for name, home in homes.items():
            times[name].append(time_to_prompt(home, project))
    for name, values in times.items():
        print(f"{name:11s} time to prompt: median {statistics.median(values) * 1000:.0f} ms over {runs} runs")
    ratio = statistics.median(times["2 servers"]) / statistics.median(times["no servers"])
    print(f"ratio (2 servers / none): {ratio:.3f}")


if __name__ == "__main__":
    main()
