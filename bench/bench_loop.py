"""Loop overhead per turn outside the model call, at 10 and 200 messages of history.

Usage: python bench/bench_loop.py [--turns 200]

The model answers instantly (a FunctionModel returning a canned reply), so what is timed is the
loop's own work per turn: building the request (including the context policy's view), appending
and recording messages to a real transcript on disk, running hooks, and one cheap tool call.
Two context policies side by side: pass-through (the bare loop) and memagent's real
``CompactingContext`` (micro-compaction view + token accounting; threshold high enough that no
summary is triggered). Everything runs in one process, interleaved; medians and p95 are reported.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from memagent.agent.loop import Agent
from memagent.config import Settings
from memagent.context.compaction import CompactingContext
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


def make_agent(directory: Path, history_messages: int, compacting: bool) -> Agent:
    state = {"calls": 0}

    def answer(request):
        state["calls"] += 1
        if state["calls"] % 2:
            return reply(tool_call("note", {"text": "x" * 200}))
        return reply("done " * 40)

    writer = TranscriptWriter.open(directory, f"bench-{history_messages}-{compacting}")
    conversation = Conversation(recorder=writer, session_id="bench")
    for i in range(history_messages // 2):
        conversation.append("user", [text_block(f"question {i} " + "lorem ipsum " * 40)])
        conversation.append("assistant", [text_block(f"answer {i} " + "dolor sit amet " * 60)])
    model = FunctionModel(answer)
    tools = ToolRegistry.of([note])
    system = [text_block("You are a benchmark.")]
    agent = Agent(
        model=model, tools=tools, tool_context=ToolContext(root=directory), system=system, conversation=conversation
    )
    if compacting:
        agent.context = CompactingContext(
            model=model,
            settings=Settings(compact_tokens=10**9),
            session_id="bench",
            transcript_name="bench.jsonl",
            system=system,
            tools=tools.schemas(),
        )
    return agent


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sizes = [(n, c) for n in (10, 200) for c in (False, True)]
        agents = {key: make_agent(Path(tmp), *key) for key in sizes}
        samples: dict[tuple[int, bool], list[float]] = {key: [] for key in sizes}
        for _ in range(args.turns):
            for key in sizes:
                n = key[0]
                agent = agents[key]
                # keep the history at the target size: drop the turn added last time
                del agent.conversation.messages[n:]
                del agent.conversation.ids[n:]
                start = time.perf_counter()
                for _event in agent.run_turn("next step please"):
                    pass
                samples[key].append((time.perf_counter() - start) * 1000)
        print(f"turns timed per size: {args.turns} (interleaved); each turn = 2 model calls + 1 tool call")
        for n, compacting in sizes:
            values = samples[(n, compacting)]
            policy = "CompactingContext" if compacting else "pass-through     "
            print(
                f"history {n:4d} messages, {policy}: median {statistics.median(values):.2f} ms, "
                f"p95 {percentile(values, 0.95):.2f} ms per turn"
            )


if __name__ == "__main__":
    main()
