"""Run by test_kill.py in a subprocess: a session that works until it is killed with SIGKILL.

Usage: python kill_target.py ROOT — prints "ready" once the first turn is done.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from context.ctx_harness import PlannedBrain, new_harness
from memagent.llm.scripted import reply, tool_call
from memagent.tools.base import ToolContext, ToolInput, tool


class SleepInput(ToolInput):
    seconds: float


@tool("sleep", SleepInput)
def sleep(args: SleepInput, ctx: ToolContext) -> str:
    """Wait a little (so the kill lands inside tool calls too)."""
    time.sleep(args.seconds)
    return "slept " + "z" * 1_500


def main(root: Path) -> None:
    brain = PlannedBrain()
    harness = new_harness(root, brain, threshold=3_000)
    harness.agent.tools.add(sleep)
    for turn in range(10_000):
        brain.add(
            reply(
                "Working.", tool_call("read_file", {"path": f"src/m{turn}.py"}), tool_call("sleep", {"seconds": 0.005})
            ),
            reply(f"turn {turn} done"),
        )
        harness.turn(f"work on m{turn}")
        if turn == 0:
            print("ready", flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
