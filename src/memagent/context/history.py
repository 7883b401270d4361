"""Pure history processors: ``list[Message] -> list[Message]``.

They restore the Messages-API invariants (DESIGN §3) after anything that can break them: a
cancelled turn, a crash mid tool call, a resumed transcript, a compaction cut. None of them
mutates its input.
"""

from __future__ import annotations

import copy
from typing import Iterable

from memagent.llm.types import Block, Message, text_block, tool_result_block

INTERRUPTED_TOOL = "Tool call interrupted before it finished (cancelled by the user or the session stopped)."
INTERRUPTED_REQUEST = "[The previous request got no answer: it was interrupted or failed.]"


def tool_use_ids(message: Message) -> list[str]:
    return [b["id"] for b in message.get("content", []) if b.get("type") == "tool_use"]


def tool_result_ids(message: Message) -> list[str]:
    return [b["tool_use_id"] for b in message.get("content", []) if b.get("type") == "tool_result"]


def _drop_empty_text(blocks: Iterable[Block]) -> list[Block]:
    return [b for b in blocks if not (b.get("type") == "text" and not str(b.get("text", "")).strip())]


def _results_first(blocks: list[Block]) -> list[Block]:
    results = [b for b in blocks if b.get("type") == "tool_result"]
    others = [b for b in blocks if b.get("type") != "tool_result"]
    return results + others


def merge_consecutive_roles(messages: list[Message]) -> list[Message]:
    """Join neighbours with the same role, keeping tool_results at the front of user messages."""
    merged: list[Message] = []
    for message in messages:
        if merged and merged[-1]["role"] == message["role"]:
            blocks = merged[-1]["content"] + copy.deepcopy(message["content"])
            merged[-1] = {"role": message["role"], "content": blocks}
        else:
            merged.append({"role": message["role"], "content": copy.deepcopy(message["content"])})
    for message in merged:
        if message["role"] == "user":
            message["content"] = _results_first(message["content"])
    return merged


def repair_tool_pairs(messages: list[Message]) -> list[Message]:
    """Give every tool_use a result in the next user message; drop results with no tool_use.

    A missing result (the turn was interrupted, the process was killed) becomes an error result
    so the model learns what happened instead of the API rejecting the request.
    """
    repaired: list[Message] = []
    pending: list[str] = []
    for message in messages:
        message = {"role": message["role"], "content": copy.deepcopy(message["content"])}
        if message["role"] == "assistant":
            if pending:
                repaired.append({"role": "user", "content": _error_results(pending)})
            pending = tool_use_ids(message)
            repaired.append(message)
            continue
        present = set(tool_result_ids(message))
        kept = [
            b for b in message["content"]
            if b.get("type") != "tool_result" or b["tool_use_id"] in pending
        ]
        missing = [tid for tid in pending if tid not in present]
        message["content"] = _results_first(kept + _error_results(missing))
        pending = []
        if message["content"]:  # a message of only orphan results disappears
            repaired.append(message)
    if pending:
        repaired.append({"role": "user", "content": _error_results(pending)})
    return repaired


def _error_results(ids: list[str]) -> list[Block]:
    return [tool_result_block(tid, INTERRUPTED_TOOL, is_error=True) for tid in ids]


_MISPLACED = {"user": {"tool_use"}, "assistant": {"tool_result"}}


def drop_empty_messages(messages: list[Message]) -> list[Message]:
    """Drop empty text, blocks in the wrong role (a hand-edited transcript), and empty messages."""
    cleaned = []
    for message in messages:
        wrong = _MISPLACED.get(message.get("role", ""), set())
        content = [b for b in _drop_empty_text(message.get("content", [])) if b.get("type") not in wrong]
        if content:
            cleaned.append({"role": message["role"], "content": content})
    return cleaned


def ensure_starts_with_user(messages: list[Message]) -> list[Message]:
    if messages and messages[0]["role"] != "user":
        return [{"role": "user", "content": [text_block("(conversation resumed)")]}] + messages
    return messages


def repair_history(messages: list[Message]) -> list[Message]:
    """Everything at once, in an order where each step's output is valid input for the next."""
    messages = drop_empty_messages(messages)
    messages = merge_consecutive_roles(messages)
    messages = repair_tool_pairs(messages)
    messages = merge_consecutive_roles(messages)
    return ensure_starts_with_user(messages)
