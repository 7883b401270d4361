"""The bound that lets a session decide "below the threshold" without loading cl100k."""

from __future__ import annotations

import math
import random
import subprocess
import sys

import pytest

from memagent.llm import tokens
from memagent.llm.tokens import (
    PENDING_OBSERVATIONS,
    TokenCounter,
    text_counter,
    upper_bound_counter,
    utf8_bytes,
)
from memagent.llm.types import Usage, text_block, tool_result_block

SAMPLES = {
    "prose": "The quick brown fox jumps over the lazy dog. " * 20,
    "code": "def add(a: int, b: int) -> int:\n    return a + b  # sum\n\n" * 30,
    "json": '{"id": 12345, "tags": ["x", "y"], "nested": {"k": null, "v": 3.14e-10}}' * 10,
    "chinese": "我们今天在代码库中修复了一个严重的内存泄漏问题。" * 20,
    "japanese": "これはテストです。ひらがなとカタカナと漢字が混ざっています。" * 20,
    "korean": "안녕하세요. 이것은 토큰 수를 세는 시험입니다." * 20,
    "emoji": "👍🏽🎉🔥👨‍👩‍👧‍👦🏳️‍🌈🇯🇵🧑🏿‍💻" * 30,
    "combining": "e\u0301a\u0300o\u0308n\u0303" * 50 + "Z\u0351\u0352\u0353\u0354\u0355" * 30,
    "arabic and devanagari": "مرحبا بالعالم नमस्ते दुनिया " * 30,
    "whitespace": " " * 500 + "\t" * 200 + "\n" * 300 + "\r\n" * 100,
    "digits": "0123456789" * 100 + "3.141592653589793" * 20,
    "punctuation": "!@#$%^&*()[]{};:'\",.<>/?\\|`~-_=+" * 40,
    "base64": "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM0NTY3ODk=" * 20,
    "special tokens as text": "<|endoftext|><|fim_prefix|><|im_start|>" * 30,
    "lone surrogate": "before \ud800 after \udfff end",
    "control characters": "".join(chr(c) for c in range(32)) * 10,
}


def random_text(rng: random.Random) -> str:
    ranges = [(0x20, 0x7E), (0xA0, 0x24F), (0x370, 0x3FF), (0x400, 0x4FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3),
              (0x1F300, 0x1FAFF), (0x10000, 0x1000F), (0xE000, 0xE0FF)]  # fmt: skip
    parts = []
    for _ in range(rng.randint(1, 40)):
        low, high = rng.choice(ranges)
        parts.append("".join(chr(rng.randint(low, high)) for _ in range(rng.randint(1, 30))))
    return rng.choice(["", " ", "\n"]).join(parts)


@pytest.mark.parametrize("name", list(SAMPLES))
def test_no_text_has_more_cl100k_tokens_than_utf8_bytes(name):
    count = text_counter("tiktoken")
    assert count is not tokens.ratio_count  # the real encoding, not its fallback
    text = SAMPLES[name]
    assert 0 < count(text) <= utf8_bytes(text)
    assert tokens.ratio_count(text) <= utf8_bytes(text)
    for cut in (1, 2, 3, 7):  # pieces cut anywhere, even inside a character's bytes
        piece = text[:cut]
        assert count(piece) <= utf8_bytes(piece)


def test_the_bound_holds_on_random_text_of_every_script():
    count = text_counter("tiktoken")
    rng = random.Random(20261125)
    for _ in range(300):
        text = random_text(rng)
        assert count(text) <= utf8_bytes(text), repr(text[:80])


def test_which_settings_have_a_bound():
    assert upper_bound_counter("tiktoken") is utf8_bytes
    assert upper_bound_counter("bytes") is tokens.ratio_count  # the ratio is cheap: its own bound
    assert upper_bound_counter("tiktoken", "/some/tokenizer.json") is None  # may split finer than bytes
    assert utf8_bytes("") == 0 and utf8_bytes("é") == 2 and utf8_bytes("\ud800") == 3


def _message(rng: random.Random, role: str) -> dict:
    if role == "user" and rng.random() < 0.3:
        return {"role": "user", "content": [tool_result_block("t1", random_text(rng) * rng.randint(1, 5))]}
    return {"role": role, "content": [text_block(random_text(rng))]}


@pytest.mark.parametrize("seed", range(6))
def test_the_bound_is_never_below_the_count_through_a_conversation(seed):
    """Appends, rewrites, usage that is wild in both directions, calibration pending or done."""
    rng = random.Random(seed)
    counter = TokenCounter(text_counter("tiktoken"), utf8_bytes)
    system, tools_ = [text_block(random_text(rng))], [{"name": "read_file", "description": random_text(rng)}]
    messages: list[dict] = []
    for step in range(30):
        messages = messages + [_message(rng, "user" if step % 2 == 0 else "assistant")]
        if rng.random() < 0.2 and len(messages) > 2:  # a compaction or an elision rewrote the start
            messages = [_message(rng, "user")] + messages[2:]
        bound = counter.at_most(system, tools_, messages)
        if rng.random() < 0.5:  # sometimes the exact figure calibrates before the next bound
            assert bound >= counter.context_tokens(system, tools_, messages)
        if rng.random() < 0.7:
            usage = Usage(input_tokens=max(1, int(counter.at_most(system, tools_, messages) * rng.uniform(0.1, 3))))
            counter.observe(usage, messages, system, tools_)
        assert counter.at_most(system, tools_, messages) >= counter.context_tokens(system, tools_, messages)


def test_calibration_that_waits_learns_what_calibrating_at_once_learns():
    rng = random.Random(7)
    eager, lazy = TokenCounter(tokens.ratio_count), TokenCounter(tokens.ratio_count)
    for _ in range(PENDING_OBSERVATIONS + 10):  # more than are kept waiting
        sent = [_message(rng, "user")]
        usage = Usage(input_tokens=rng.randint(1, 5_000))
        for counter in (eager, lazy):
            counter.observe(usage, sent, [], [])
        eager.correction  # noqa: B018 - calibrate now
    assert lazy.correction == pytest.approx(eager.correction, abs=1e-6)
    assert 0.5 <= lazy.correction <= 2.0


def test_observing_usage_and_bounding_load_no_encoding():
    """In a fresh process: a counter that observed usage and bounded the next request has not
    imported tiktoken; the first exact figure loads it and agrees with the bound."""
    code = (
        "import sys\n"
        "from memagent.llm.tokens import TokenCounter, lazy_counter, upper_bound_counter\n"
        "from memagent.llm.types import Usage, text_block\n"
        "counter = TokenCounter(lazy_counter(), upper_bound_counter())\n"
        "sent = [{'role': 'user', 'content': [text_block('hi there')]}]\n"
        "first = counter.at_most([text_block('system prompt')], [], sent)\n"
        "counter.observe(Usage(input_tokens=5000), sent, [text_block('system prompt')], [])\n"
        "later = sent + [{'role': 'assistant', 'content': [text_block('hello')]}]\n"
        "bound = counter.at_most([text_block('system prompt')], [], later)\n"
        "assert 'tiktoken' not in sys.modules, 'loaded before any exact count was needed'\n"
        "exact = counter.context_tokens([text_block('system prompt')], [], later)\n"
        "assert 'tiktoken' in sys.modules\n"
        "print(first, bound, exact)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    first, bound, exact = map(int, result.stdout.split())
    assert 5_000 < exact <= bound and first >= 5  # "hi there" and its framing: at least a few tokens
    assert bound == 5_000 + math.ceil(2.0 * (4 + len("hello")))  # factor not calibrated yet: its upper clamp
