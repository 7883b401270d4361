"""Compaction decides on a bound that loads no encoding while the context is far below the
threshold, and compacts at the very request it would compact at with exact counts."""

from __future__ import annotations

import dataclasses

import pytest

from context.ctx_harness import PlannedBrain
from context.test_compaction import coding_turns
from memagent.llm.scripted import reply
from memagent.llm.tokens import TokenCounter, text_counter, utf8_bytes
from memagent.llm.types import ModelRequest, ModelResponse, Usage


class MeasuringBrain(PlannedBrain):
    """A planned brain whose answers report usage: the request's cl100k estimate times ``ratio``
    (a model whose tokenizer splits finer or coarser than cl100k); ratio 0 reports none."""

    def __init__(self, ratio: float) -> None:
        super().__init__()
        self.ratio = ratio

    def __call__(self, request: ModelRequest) -> ModelResponse:
        answer = super().__call__(request)
        if not self.ratio:
            return answer
        estimate = TokenCounter(text_counter()).context_tokens(request.system, request.tools, request.messages)
        return dataclasses.replace(answer, usage=Usage(input_tokens=int(estimate * self.ratio)))


def run_session(make_session, ratio: float, exact_only: bool) -> tuple[list, list[int], int]:
    """The same scripted session; ``exact_only``: the policy's counter has no bound."""
    brain = MeasuringBrain(ratio)
    harness = make_session(brain, threshold=4_000, session_id="20261121-100000-" + ("eeee" if exact_only else "bbbb"))
    exact_calls = 0

    def counting(text: str) -> int:
        nonlocal exact_calls
        exact_calls += 1
        return text_counter()(text)

    harness.policy.counter = TokenCounter(counting, None if exact_only else utf8_bytes)
    for batch in range(4):
        coding_turns(brain, harness, 3, start=batch * 3)
    compactions = [(r["tokens_before"], r["tokens_after"]) for r in harness.records() if r["type"] == "compaction"]
    return compactions, [len(r.messages) for r in harness.main_requests()], exact_calls


@pytest.mark.parametrize("ratio", [0, 1.3, 0.7, 3.0], ids=["no usage", "finer", "coarser", "wild"])
def test_compaction_happens_at_the_same_request_as_with_exact_counts(make_session, ratio):
    bounded = run_session(make_session, ratio, exact_only=False)
    exact = run_session(make_session, ratio, exact_only=True)
    assert bounded[0], "the scenario never reached the threshold"
    assert bounded[:2] == exact[:2]  # same compactions, same figures, same requests
    assert bounded[2] < exact[2]  # and the early requests were decided without counting


def test_a_short_session_never_counts_exactly(make_session):
    brain = MeasuringBrain(1.3)
    harness = make_session(brain, threshold=100_000)
    calls = []
    harness.policy.counter = TokenCounter(lambda text: calls.append(text) or 1, utf8_bytes)
    brain.add(reply("hello"))
    harness.turn("hi")
    harness.turn("and again")
    assert len(harness.main_requests()) == 2 and calls == []
