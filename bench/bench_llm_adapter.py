"""Cost of memagent's Anthropic adapter over the bare SDK, against the loopback fake API.

Usage: PYTHONPATH=tests python bench/bench_llm_adapter.py [--calls 200] [--history 10,200]

Both sides send the same streamed request to the same in-process fake server and read the whole
answer (a text block and a tool call). "sdk" is ``client.messages.create(stream=True)`` iterated
raw; "adapter" is ``AnthropicModel.stream`` (cache breakpoints, event accumulation, final
ModelResponse). Calls alternate between the two, per history size; medians and p95 in ms.
The difference is the adapter's own per-call overhead; the absolute time is mostly the fake
server and the SDK's HTTP stack on loopback.
"""

from __future__ import annotations

import argparse
import statistics
import time

import anthropic

from fakeapi import FakeAnthropic, tool, turn
from memagent.llm.anthropic import AnthropicModel, build_params
from memagent.llm.types import ModelRequest, tool_result_block, user_message

MODEL = "claude-sonnet-4-6"
TOOLS = [
    {
        "name": name,
        "description": f"The {name} tool. " * 20,
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
    for name in ("bash", "read_file", "write_file", "edit_file", "glob", "grep")
]


def history(messages: int) -> list[dict]:
    convo = [user_message("Start the task.")]
    for i in range((messages - 1) // 2):
        convo.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Step {i}: reading a file."},
                    {"type": "tool_use", "id": f"toolu_h{i}", "name": "read_file", "input": {"path": f"src/f{i}.py"}},
                ],
            }
        )
        convo.append({"role": "user", "content": [tool_result_block(f"toolu_h{i}", "x = 1\n" * 40)]})
    return convo


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--history", default="10,200")
    args = parser.parse_args()

    answer = turn("Reading the next file.", tool("read_file", {"path": "src/next.py"}, id="toolu_next"))
    with FakeAnthropic(responder=lambda body: answer) as fake:
        model = AnthropicModel(MODEL, api_key="bench", base_url=fake.url, max_retries=0)
        client = anthropic.Anthropic(api_key="bench", base_url=fake.url, max_retries=0)
        print(f"{'history':>8} {'side':>8} {'median ms':>10} {'p95 ms':>8}")
        for size in (int(s) for s in args.history.split(",")):
            request = ModelRequest(
                system=[{"type": "text", "text": "You are memagent. " * 50}],
                messages=history(size),
                tools=TOOLS,
                max_tokens=4096,
            )
            params = build_params(request, MODEL)
            timings: dict[str, list[float]] = {"sdk": [], "adapter": []}
            for _ in range(5):  # warm up both paths
                list(model.stream(request))
                list(client.messages.create(**params, stream=True))
            for _ in range(args.calls):
                start = time.perf_counter()
                for _event in client.messages.create(**params, stream=True):
                    pass
                timings["sdk"].append((time.perf_counter() - start) * 1000)
                start = time.perf_counter()
                for _event in model.stream(request):
                    pass
                timings["adapter"].append((time.perf_counter() - start) * 1000)
            for side, values in timings.items():
                print(f"{size:>8} {side:>8} {statistics.median(values):>10.2f} {percentile(values, 0.95):>8.2f}")
            ratio = statistics.median(timings["adapter"]) / statistics.median(timings["sdk"])
            print(f"{size:>8} {'ratio':>8} {ratio:>10.2f}")
        assert fake.errors == [], fake.errors


if __name__ == "__main__":
    main()
