"""Loop overhead per turn outside the model call, at 10 and 200 messages of history.

Usage: python bench/bench_loop.py [--turns 200]

The model answers instantly (a FunctionModel returning a canned reply), so what is timed is the
loop's own work per turn: building the request (including the context policy's view), appending
and recording messages to a real transcript on disk, running hooks, and one cheap tool call.
Both history sizes run in the same process, interleaved; medians and p95 are reported.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from memagent.agent.loop import Agent
from memagent.context.conversation import Conversation
from memagent.context.transcript import TranscriptWriter
from memagent.llm.scripted import FunctionModel, reply, tool_call
from memagent.llm.types import text_block
from memagent.tools.base import ToolContext, ToolInput, ToolRegistry, tool


class NoteIn(ToolInput):
    text: str


@tool("note", NoteIn, key_argument="text")
def note(inp: NoteIn, ctx: ToolContext) -> str:
    """Return the text."""
    return inp.text


def make_agent(directory: Path, history_messages: int) -> Agent:
    state = {"calls": 0}

    def answer(request):
        state["calls"] += 1
        if state["calls"] % 2:
            return reply(tool_call("note", {"text": "x" * 200}))
        return reply("done " * 40)

    writer = TranscriptWriter.open(directory, f"bench-{history_messages}")
    conversation = Conversation(recorder=writer, session_id="bench")
    for i in range(history_messages // 2):
        conversation.append("user", [text_block(f"question {i} " + "lorem ipsum " * 40)])
        conversation.append("assistant", [text_block(f"answer {i} " + "dolor sit amet " * 60)])
    return Agent(
        model=FunctionModel(answer),
        tools=ToolRegistry.of([note]),
        tool_context=ToolContext(root=directory),
        system=[text_block("You are a benchmark.")],
        conversation=conversation,
    )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sizes = (10, 200)
        agents = {n: make_agent(Path(tmp), n) for n in sizes}
        samples: dict[int, list[float]] = {n: [] for n in sizes}
        for _ in range(args.turns):
            for n in sizes:
                agent = agents[n]
                # keep the history at the target size: drop the turn added last time
                del agent.conversation.messages[n:]
                del agent.conversation.ids[n:]
                start = time.perf_counter()
                for _event in agent.run_turn("next step please"):
                    pass
                samples[n].append((time.perf_counter() - start) * 1000)
        print(f"turns timed per size: {args.turns} (interleaved); each turn = 2 model calls + 1 tool call")
        for n in sizes:
            values = samples[n]
            print(f"history {n:4d} messages: median {statistics.median(values):.2f} ms, p95 {percentile(values, 0.95):.2f} ms per turn")


if __name__ == "__main__":
    main()
