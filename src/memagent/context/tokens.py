"""Token accounting that never calls the network (DESIGN §5, §11).

The last response's ``usage`` (input + cache read + cache creation tokens) is the exact size of
the request it answered. :class:`TokenCounter` anchors on that figure and estimates only what
changed since: the messages appended after it, and any message that was rewritten (an elided
tool result, a compaction).

Estimates come from :func:`estimate_text`, a fallback chain that stays offline:

1. a Hugging Face ``tokenizer.json`` named by ``MEMAGENT_TOKENIZER_JSON`` (loaded with the
   installed ``tokenizers`` package from a local file — there is no code path that downloads);
2. a chars-per-token ratio: UTF-8 bytes / 4, which was within 1% of cl100k on 1 MB of mixed code
   and text (DESIGN §11).

Why no tokenizer by default: nothing installed here ships Claude's tokenizer. ``tiktoken`` is not
installed, and its ``get_encoding`` downloads the encoding files on first use (and cl100k is not
Claude's vocabulary anyway); the only ``tokenizer.json`` on disk is all-MiniLM's uncased
WordPiece vocabulary, which splits code into far more pieces than a BPE model and would be a worse
estimate than the ratio. Instead, :class:`TokenCounter` calibrates the ratio to the real model as
it goes: each observed ``usage`` is compared with the estimate of the same request, and the
correction factor (clamped to 0.5–2.0, smoothed) is applied to every later estimate.
"""

from __future__ import annotations

import functools
import json
import math
import os
from typing import Any, Callable, Sequence

from memagent.llm.types import Block, Message, Usage

BYTES_PER_TOKEN = 4.0
MESSAGE_OVERHEAD = 4  # role and framing tokens per message
BLOCK_OVERHEAD = 3  # per tool_use / tool_result block (ids, type tags)
IMAGE_TOKENS = 1_600  # the API's typical cost of one image block
TOKENIZER_ENV = "MEMAGENT_TOKENIZER_JSON"
CALIBRATION_BOUNDS = (0.5, 2.0)
CALIBRATION_WEIGHT = 0.5  # how much each new observation moves the correction factor


def ratio_count(text: str) -> int:
    """The calibrated ratio: UTF-8 bytes / 4, rounded up."""
    if not text:
        return 0
    return math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN)


def load_tokenizer_file(path: str) -> Callable[[str], int] | None:
    """A counter from a local ``tokenizer.json``; None when it cannot be loaded offline."""
    if not path or not os.path.isfile(path):
        return None
    try:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(path)
        tokenizer.no_padding()  # a file may pad or truncate to a fixed length: count the real pieces
        tokenizer.no_truncation()
    except Exception:  # a broken or foreign file: fall back to the ratio
        return None

    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids) if text else 0

    return count


@functools.lru_cache(maxsize=4)
def _counter_for(path: str) -> Callable[[str], int]:
    return load_tokenizer_file(path) or ratio_count


def estimator_name() -> str:
    """Which link of the chain is in use (shown by ``/context`` and ``memagent doctor``)."""
    path = os.environ.get(TOKENIZER_ENV, "")
    if path and _counter_for(path) is not ratio_count:
        return f"tokenizer.json ({path})"
    return "bytes/4 ratio, calibrated from usage"


def estimate_text(text: str) -> int:
    """Tokens in ``text`` by the first working link of the offline chain. Never a network call."""
    return _counter_for(os.environ.get(TOKENIZER_ENV, ""))(text)


def _tool_result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def estimate_block(block: Block) -> int:
    kind = block.get("type")
    if kind == "text":
        return estimate_text(str(block.get("text", "")))
    if kind == "tool_use":
        raw = json.dumps(block.get("input") or {}, ensure_ascii=False, separators=(",", ":"))
        return BLOCK_OVERHEAD + estimate_text(str(block.get("name", ""))) + estimate_text(raw)
    if kind == "tool_result":
        content = block.get("content")
        images = sum(1 for b in content if isinstance(b, dict) and b.get("type") == "image") if isinstance(content, list) else 0
        return BLOCK_OVERHEAD + estimate_text(_tool_result_text(content)) + images * IMAGE_TOKENS
    if kind == "image":
        return IMAGE_TOKENS
    return estimate_text(json.dumps(block, ensure_ascii=False, separators=(",", ":")))


def estimate_message(message: Message) -> int:
    content = message.get("content")
    if isinstance(content, str):
        return MESSAGE_OVERHEAD + estimate_text(content)
    return MESSAGE_OVERHEAD + sum(estimate_block(b) for b in content or [] if isinstance(b, dict))


def estimate_system(system: Sequence[Block] | str | None) -> int:
    if not system:
        return 0
    if isinstance(system, str):
        return estimate_text(system)
    return sum(estimate_block(b) for b in system)


def estimate_tools(tools: Sequence[dict[str, Any]] | None) -> int:
    return sum(estimate_text(json.dumps(t, ensure_ascii=False, separators=(",", ":"))) for t in tools or [])


def common_prefix_length(old: Sequence[Message], new: Sequence[Message]) -> int:
    """How many leading messages the two lists share unchanged."""
    length = 0
    for a, b in zip(old, new):
        if a is not b and a != b:
            break
        length += 1
    return length


class TokenCounter:
    """Usage-anchored context size: exact where the API told us, estimated only for the rest.

    ``observe(usage, sent)`` records the exact size of a request and the messages it carried.
    ``context_tokens(system, tools, messages)`` then takes that figure, subtracts the estimate of
    the sent messages that are no longer there unchanged, and adds the estimate of what replaced
    them or was appended since. Before any usage arrives (or when the model reports none) it is
    a pure estimate.

    Messages are treated as immutable values (the conversation replaces messages, it never edits
    one in place), which lets estimates be memoised by identity between observations.
    """

    def __init__(self) -> None:
        self._anchor_tokens = 0
        self._anchor_messages: list[Message] = []
        self._correction = 1.0
        # raw estimates by message identity: a view shares unchanged message objects between
        # requests, so each message is estimated once, not once per request
        self._memo: dict[int, tuple[Message, int]] = {}

    @property
    def anchored(self) -> bool:
        return self._anchor_tokens > 0

    @property
    def correction(self) -> float:
        """Observed / estimated tokens, learned from usage; multiplies every estimate."""
        return self._correction

    def observe(
        self,
        usage: Usage,
        sent: list[Message],
        system: Sequence[Block] | str | None = None,
        tools: Sequence[dict[str, Any]] | None = None,
    ) -> None:
        keep = {id(m) for m in sent}
        self._memo = {key: value for key, value in self._memo.items() if key in keep}
        exact = usage.context_tokens
        if exact <= 0:
            return  # the model reported nothing (scripted models): keep estimating
        if system is not None or tools is not None:
            raw = estimate_system(system) + estimate_tools(tools) + self._raw(sent)
            if raw > 0:
                low, high = CALIBRATION_BOUNDS
                factor = min(high, max(low, exact / raw))
                self._correction += CALIBRATION_WEIGHT * (factor - self._correction)
        self._anchor_tokens = exact
        self._anchor_messages = list(sent)

    def estimate_messages(self, messages: Sequence[Message]) -> int:
        return self._scaled(self._raw(messages))

    def _raw(self, messages: Sequence[Message]) -> int:
        total = 0
        for message in messages:
            hit = self._memo.get(id(message))
            if hit is None or hit[0] is not message:
                hit = (message, estimate_message(message))
                self._memo[id(message)] = hit
            total += hit[1]
        return total

    def estimate_fixed(self, system: Sequence[Block] | str | None, tools: Sequence[dict[str, Any]] | None) -> int:
        return self._scaled(estimate_system(system) + estimate_tools(tools))

    def context_tokens(self, system: Sequence[Block] | str | None, tools: Sequence[dict[str, Any]] | None,
                       messages: Sequence[Message]) -> int:
        """The size of a request with these parts, anchored on the last observed usage."""
        if not self.anchored:
            return self.estimate_fixed(system, tools) + self.estimate_messages(messages)
        shared = common_prefix_length(self._anchor_messages, messages)
        gone = self.estimate_messages(self._anchor_messages[shared:])
        added = self.estimate_messages(messages[shared:])
        return max(0, self._anchor_tokens - gone + added)

    def _scaled(self, tokens: int) -> int:
        return math.ceil(tokens * self._correction) if tokens else 0


__all__ = [
    "BYTES_PER_TOKEN",
    "TokenCounter",
    "common_prefix_length",
    "estimate_block",
    "estimate_message",
    "estimate_system",
    "estimate_text",
    "estimate_tools",
    "estimator_name",
    "load_tokenizer_file",
    "ratio_count",
]
