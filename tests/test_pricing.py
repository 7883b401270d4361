"""The price table and the usage meter behind the REPL's status line and /cost."""

from __future__ import annotations

import pytest

from memagent.llm.types import Usage
from memagent.pricing import UsageMeter, cost_usd, format_cost, price_for


def test_longest_prefix_wins_and_unknown_models_have_no_price():
    assert price_for("claude-opus-4-5-20251101").input == 5.0
    assert price_for("claude-opus-4-1").input == 15.0
    assert price_for("claude-sonnet-4-5").output == 15.0
    assert price_for("qwen3-coder") is None


def test_cost_counts_cache_reads_and_writes_at_their_rates():
    usage = Usage(
        input_tokens=1_000_000,
        output_tokens=100_000,
        cache_read_input_tokens=1_000_000,
        cache_creation_input_tokens=1_000_000,
    )
    # sonnet: 3 in + 1.5 out + 0.3 cache read + 3.75 cache write
    assert cost_usd("claude-sonnet-4-5", usage) == pytest.approx(8.55)
    assert cost_usd("claude-sonnet-4-5", usage.to_dict()) == pytest.approx(8.55)
    assert cost_usd("llama3", usage) is None


def test_meter_adds_up_and_turns_unknown_when_a_model_has_no_price():
    meter = UsageMeter()
    meter.add("claude-haiku-4-5", {"input_tokens": 2000, "output_tokens": 100, "cache_read_input_tokens": 8000})
    meter.add("claude-haiku-4-5", {"input_tokens": 500, "output_tokens": 50})
    assert meter.calls == 2 and meter.output_tokens == 150
    assert meter.context_tokens == 500  # the newest request, not a sum
    assert meter.cost == pytest.approx((2500 * 1 + 150 * 5 + 8000 * 0.1) / 1e6)
    meter.add("local-model", {"input_tokens": 10})
    assert meter.cost is None and meter.unpriced_models == {"local-model"}
    assert format_cost(meter.cost) == "cost n/a"


def test_format_cost():
    assert format_cost(0.0421) == "$0.042"
    assert format_cost(12.345) == "$12.35"
