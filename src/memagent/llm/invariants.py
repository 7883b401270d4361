"""The Messages API's conversation invariants, checked before a request goes out.

The API refuses (HTTP 400) a conversation that breaks them: it starts with a user message and
roles alternate; ``tool_use`` blocks appear only in assistant messages and ``tool_result`` blocks
only in user ones; every ``tool_use`` id is unique and is answered exactly once, in the very next
user message, results before any other block; no result answers an unknown call; no message and
no text block is empty.

``request_problems(messages)`` returns human-readable problems, ``[]`` when the list is valid.
Compaction, resume and cancellation use it to prove they left a sendable conversation.
"""

from __future__ import annotations

from collections.abc import Sequence


def request_problems(messages: Sequence[object]) -> list[str]:
    """Everything in ``messages`` that the API would refuse with a 400."""
    if not messages:
        return ["the conversation has no messages"]
    problems: list[str] = []
    seen_tool_ids: set[str] = set()
    previous_calls: list[str] = []  # tool_use ids of the previous assistant message
    calls_at = 0  # that message's position
    for position, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        expected = "user" if position % 2 == 0 else "assistant"
        if role != expected:
            problems.append(f"message {position}: role is {role!r}, expected {expected!r} (roles alternate from user)")
        blocks = _content_blocks(message, position, problems)
        problems.extend(_block_problems(position, role, blocks))
        if role == "assistant":
            problems.extend(_unanswered(calls_at, previous_calls))
            previous_calls = _tool_use_ids(position, blocks, seen_tool_ids, problems)
            calls_at = position
        else:
            problems.extend(_result_problems(position, blocks, previous_calls, calls_at))
            previous_calls = []
    problems.extend(_unanswered(calls_at, previous_calls))
    return problems


def _content_blocks(message: object, position: int, problems: list[str]) -> list[object]:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        if not content.strip():
            problems.append(f"message {position}: empty content")
        return [{"type": "text", "text": content}] if content.strip() else []
    if not isinstance(content, list) or not content:
        problems.append(f"message {position}: empty content")
        return []
    return list(content)


WRONG_SIDE = {"user": "tool_use", "assistant": "tool_result"}


def _block_problems(position: int, role: object, blocks: list[object]) -> list[str]:
    problems = []
    for index, block in enumerate(blocks):
        if not isinstance(block, dict):
            problems.append(f"message {position} block {index}: not a block object")
        elif block.get("type") == "text" and not str(block.get("text") or "").strip():
            problems.append(f"message {position} block {index}: empty text block")
        elif isinstance(role, str) and block.get("type") == WRONG_SIDE.get(role):
            problems.append(f"message {position} block {index}: {block['type']} block in a {role} message")
    return problems


def _tool_use_ids(position: int, blocks: list[object], seen: set[str], problems: list[str]) -> list[str]:
    ids = []
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "tool_use":
            tool_id = str(block.get("id", ""))
            if tool_id in seen:
                problems.append(f"message {position}: duplicate tool_use id {tool_id}")
            seen.add(tool_id)
            ids.append(tool_id)
    return ids


def _unanswered(position: int, ids: list[str]) -> list[str]:
    return [f"message {position}: tool_use {tool_id} has no tool_result in the next user message" for tool_id in ids]


def _result_problems(position: int, blocks: list[object], expected_ids: list[str], calls_at: int) -> list[str]:
    problems = []
    answered: set[str] = set()
    text_seen = False
    for index, block in enumerate(blocks):
        if not isinstance(block, dict) or block.get("type") != "tool_result":
            text_seen = True
            continue
        tool_id = str(block.get("tool_use_id"))
        if tool_id not in expected_ids:
            problems.append(
                f"message {position} block {index}: tool_result {tool_id} has no tool_use in the previous assistant message"
            )
        elif tool_id in answered:
            problems.append(f"message {position} block {index}: second tool_result for {tool_id}")
        answered.add(tool_id)
        if text_seen:
            problems.append(
                f"message {position} block {index}: tool_result after other content (results must come first)"
            )
    missing = [tool_id for tool_id in expected_ids if tool_id not in answered]
    return problems + _unanswered(calls_at, missing)
