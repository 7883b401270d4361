"""What compaction costs the user in turn latency: summary written while the turn waits, or in the
background (``compaction_background``), side by side on one scripted session.

Usage: python bench/bench_compaction_latency.py [--turns 40] [--repeats 3] [--summary-seconds 2.0]
       [--round-seconds 0.05] [--threshold 8000] [--keep-results 40] [--json out.json]

The real ``Agent`` and :class:`CompactingContext` run a coding session (two file reads and an
answer per turn; the newest ``--keep-results`` tool outputs stay whole, so the context grows) against a ``FunctionModel`` that takes ``--round-seconds`` per main-model answer
and ``--summary-seconds`` per summary (a slow summary model). The two modes run interleaved
(waiting, background, waiting, …) ``--repeats`` times. Reported per mode, medians over repeats:
the median turn, the slowest turn, the median of the turns during which a compaction landed,
the whole session, the number of compactions, the largest request and the main model's input tokens in all
(estimated tokens, no caching).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from memagent.agent.loop import Agent
from memagent.config import Settings
from memagent.context.compaction import CompactingContext
from memagent.context.conversation import Conversation
from memagent.context.summary import SUMMARY_SYSTEM
from memagent.context.transcript import TranscriptWriter
from memagent.events import TurnEnded
from memagent.llm.scripted import FunctionModel, reply, tool_call
from memagent.llm.tokens import TokenCounter
from memagent.llm.types import ModelRequest, ModelResponse, text_block
from memagent.tools.base import ToolContext, ToolRegistry, tool

SYSTEM = [text_block("You are a coding agent.")]


class ReadInput(BaseModel):
    path: str


@tool("read_file", ReadInput, key_argument="path")
def read_file(args: ReadInput, ctx: ToolContext) -> str:
    """Read a file."""
    line = f"def handler_{args.path}(request): return request.json()  # {args.path}\n"
    return (line * 40)[:2_400]


class SessionModel:
    """Main answers: two reads then a sentence per turn, ``round_seconds`` each; summaries take
    ``summary_seconds``."""

    def __init__(self, round_seconds: float, summary_seconds: float) -> None:
        self.round_seconds, self.summary_seconds = round_seconds, summary_seconds
        self.step = 0

    def __call__(self, request: ModelRequest) -> ModelResponse:
        if request.system and request.system[0].get("text") == SUMMARY_SYSTEM:
            time.sleep(self.summary_seconds)
            return reply("## Goal\nReview every module.\n## Next step\ncontinue")
        time.sleep(self.round_seconds)
        self.step += 1
        if self.step % 3:
            return reply("Reading.", tool_call("read_file", {"path": f"mod{self.step}.py"}))
        return reply("This module looks fine.")


def run_session(background: bool, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        settings = Settings(
            compact_tokens=args.threshold,
            small_model="small",
            compaction_background=background,
            keep_tool_results=args.keep_results,
        )
        model = FunctionModel(SessionModel(args.round_seconds, args.summary_seconds))
        writer = TranscriptWriter.open(root / ".transcripts", "bench")
        conversation = Conversation(recorder=writer, session_id="bench")
        registry = ToolRegistry.of([read_file])
        policy = CompactingContext(
            model=model,
            settings=settings,
            session_id="bench",
            transcript_name=".transcripts/bench.jsonl",
            system=SYSTEM,
            tools=registry.schemas(),
        )
        agent = Agent(
            model=model,
            tools=registry,
            tool_context=ToolContext(root=root),
            system=SYSTEM,
            conversation=conversation,
            context=policy,
            auto_approve=True,
        )
        turns, compacting = [], []
        for number in range(args.turns):
            before, compactions = time.perf_counter(), policy.compactions
            events = list(agent.run_turn(f"Check module {number}"))
            assert any(isinstance(e, TurnEnded) for e in events)
            turns.append(time.perf_counter() - before)
            if policy.compactions > compactions:
                compacting.append(turns[-1])
        writer.close()
        counter = TokenCounter()
        sizes = [
            counter.context_tokens(r.system, r.tools, r.messages)
            for r in model.requests
            if not (r.system and r.system[0].get("text") == SUMMARY_SYSTEM)
        ]
        return {
            "peak_context": max(sizes),
            "input_tokens": sum(sizes),
            "median_turn": statistics.median(turns),
            "slowest_turn": max(turns),
            "compacting_turn": statistics.median(compacting) if compacting else None,
            "session": sum(turns),
            "compactions": policy.compactions,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--summary-seconds", type=float, default=2.0)
    parser.add_argument("--round-seconds", type=float, default=0.05)
    parser.add_argument("--threshold", type=int, default=8_000)
    parser.add_argument("--keep-results", type=int, default=40, help="tool results kept whole (keep_tool_results)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, Any]]] = {"waiting": [], "background": []}
    for _ in range(args.repeats):
        for name, results in runs.items():
            results.append(run_session(name == "background", args))
    table = {}
    for name, results in runs.items():
        table[name] = {
            key: statistics.median(r[key] for r in results if r[key] is not None)
            for key in (
                "median_turn",
                "slowest_turn",
                "compacting_turn",
                "session",
                "compactions",
                "peak_context",
                "input_tokens",
            )
        }
    print(
        f"{args.turns} turns, summary {args.summary_seconds}s, model round {args.round_seconds}s, "
        f"threshold {args.threshold:,}, medians of {args.repeats} interleaved runs"
    )
    print(
        f"{'mode':<12}{'median turn':>13}{'slowest turn':>14}{'compacting turn':>17}{'session':>10}{'compactions':>13}{'peak context':>14}{'input tokens':>14}"
    )
    for name, row in table.items():
        print(
            f"{name:<12}{row['median_turn']:>12.3f}s{row['slowest_turn']:>13.3f}s{row['compacting_turn']:>16.3f}s"
            f"{row['session']:>9.2f}s{row['compactions']:>13.0f}{row['peak_context']:>14,.0f}{row['input_tokens']:>14,.0f}"
        )
    ratio = table["background"]["compacting_turn"] / table["waiting"]["compacting_turn"]
    print(f"compacting turn, background / waiting: {ratio:.2f}")
    if args.json:
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "table": table}, indent=2))


if __name__ == "__main__":
    main()
