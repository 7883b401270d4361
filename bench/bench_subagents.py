"""Two subagents side by side against one after the other, through the real SDK and the fake
Messages API answering every request after a fixed delay.

Run by hand from the repository root: ``python bench/bench_subagents.py [--delay 1.0] [--rounds 5]``.
The parent's first answer asks for two ``task`` calls in one response; each subagent makes two
model calls (a ``read_file`` call, then its answer); the parent then answers. Every response
waits ``--delay`` seconds, so the floor is 4 delays when the subagents run at once (parent,
2 × child in parallel, parent) and 6 one after the other. "In sequence" is the same session with
the ``task`` tool's ``concurrent`` flag off. Cases interleaved; medians and the ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fakeapi import FakeAnthropic, delay, text, tool, turn  # noqa: E402
from memagent.runtime import SessionOptions, open_session  # noqa: E402


def responder(seconds: float):
    def respond(body: dict):
        system = body.get("system") or ""
        system = system if isinstance(system, str) else "".join(b.get("text", "") for b in system)
        last = body["messages"][-1]
        answered = isinstance(last["content"], list) and any(b.get("type") == "tool_result" for b in last["content"])
        if "a subagent of memagent" in system:
            step = text("the value is 1") if answered else tool("read_file", {"path": "a.py"})
        elif answered:
            step = text("both answered")
        else:
            step = turn(
                tool("task", {"description": "one", "prompt": "Read a.py.", "subagent_type": "Explore"}),
                tool("task", {"description": "two", "prompt": "Read a.py too.", "subagent_type": "Explore"}),
            )
        return delay(seconds, step)

    return respond


def one_run(concurrent: bool, seconds: float) -> float:
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic(responder=responder(seconds)) as fake:
        root = Path(tmp) / "project"
        root.mkdir()
        (root / "a.py").write_text("A = 1\n")
        env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": fake.url,
            "ANTHROPIC_API_KEY": "bench",
            "MEMAGENT_HOME": str(Path(tmp) / "home"),
        }
        session = open_session(SessionOptions(root=root, memory=False), env=env)
        session.agent.tools.get("task").concurrent = concurrent
        started = time.perf_counter()
        events = list(session.agent.run_turn("ask two subagents"))
        wall = time.perf_counter() - started
        session.close()
        assert events[-1].final_text == "both answered", events[-1]
        assert fake.errors == [], fake.errors
        return wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"parallel": [], "sequence": []}
    one_run(True, 0.0)  # warm-up: the SDK's import and first client are not what is measured
    for _ in range(args.rounds):
        times["parallel"].append(one_run(True, args.delay))
        times["sequence"].append(one_run(False, args.delay))
    print(f"fake API delay {args.delay:g} s per response, {args.rounds} rounds, load average {os.getloadavg()[0]:.1f}")
    for case, values in times.items():
        print(f"{case:<9} median {statistics.median(values):6.2f} s  (min {min(values):.2f}, max {max(values):.2f})")
    ratio = statistics.median(times["sequence"]) / statistics.median(times["parallel"])
    print(f"sequence / parallel: {ratio:.2f}x (floor: {6 * args.delay:g} s vs {4 * args.delay:g} s, 1.5x)")


if __name__ == "__main__":
    main()
