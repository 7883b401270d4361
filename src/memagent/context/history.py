"""Pure history processors: they restore the Messages-API invariants.

The invariants are listed in :mod:`memagent.llm.invariants`: in short, the history starts with a
user message, roles alternate, every ``tool_use`` is answered once in the very next user message
(results first), no result answers an unknown call, and no text block is empty.

Anything can break them: a cancelled turn, a crash mid tool call, a hand-edited or truncated
transcript, a compaction cut. :func:`repair_history_with_ids` repairs a history while keeping
each message's transcript id attached to it (resume needs that to know which messages were
already mined for memories); :func:`repair_history` is the same without ids. None of them
mutates its input.

Ids: a merged message keeps the id of its first part; a message added by a repair gets
``"repair"`` (missing tool results) or ``"resume"`` (an opening user message).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from memagent.jsontypes import JsonMapping
from memagent.llm.items import Item, ToolResult, ToolUse, is_blank_text, item, tool_results, tool_uses
from memagent.llm.types import Block, Message, text_block, tool_result_block
from memagent.markers import INTERRUPTED_TOOL, Marker

# Re-exported for the loop: the texts themselves are owned by :mod:`memagent.markers`.
INTERRUPTED_REQUEST = Marker.INTERRUPTED_REQUEST.value
REPAIR_ID = "repair"
RESUME_ID = "resume"

# blocks a role may not carry (only a damaged transcript has them)
_MISPLACED: dict[str, tuple[type[Item], ...]] = {"user": (ToolUse,), "assistant": (ToolResult,)}

Entry = tuple[Message, str]


def tool_use_ids(message: Message) -> list[str]:
    return [call.id for call in tool_uses(message.get("content"))]


def tool_result_ids(message: Message) -> list[str]:
    return [result.tool_use_id for result in tool_results(message.get("content"))]


def has_tool_results(message: JsonMapping) -> bool:
    return bool(tool_results(message.get("content")))


def is_turn_start(message: Message) -> bool:
    """A user message that opens a turn: it answers no tool call, so a cut before it is safe."""
    return message.get("role") == "user" and not has_tool_results(message)


def tool_names_by_id(messages: Sequence[Message]) -> dict[str, str]:
    """The tool name of every ``tool_use`` id in the assistant messages."""
    return {
        call.id: call.name for m in messages if m.get("role") == "assistant" for call in tool_uses(m.get("content"))
    }


def _is_result(block: Block) -> bool:
    return isinstance(item(block), ToolResult)


def _results_first(blocks: list[Block]) -> list[Block]:
    return [b for b in blocks if _is_result(b)] + [b for b in blocks if not _is_result(b)]


def _error_results(ids: list[str]) -> list[Block]:
    return [tool_result_block(tid, INTERRUPTED_TOOL, is_error=True) for tid in ids]


def _drop_empty(entries: list[Entry]) -> list[Entry]:
    """Drop blank text, blocks in the wrong role, and messages left with nothing."""
    kept: list[Entry] = []
    for message, message_id in entries:
        wrong = _MISPLACED.get(message.get("role", ""), ())
        content = [b for b in message.get("content", []) if not is_blank_text(b) and not isinstance(item(b), wrong)]
        if content:
            kept.append(({"role": message["role"], "content": content}, message_id))
    return kept


def _merge_roles(entries: list[Entry]) -> list[Entry]:
    """Join neighbours with the same role (the first id stays); tool results first for users."""
    merged: list[Entry] = []
    for message, message_id in entries:
        if merged and merged[-1][0]["role"] == message["role"]:
            previous, first_id = merged[-1]
            merged[-1] = ({"role": message["role"], "content": previous["content"] + message["content"]}, first_id)
        else:
            merged.append(({"role": message["role"], "content": list(message["content"])}, message_id))
    return [
        ({"role": m["role"], "content": _results_first(m["content"]) if m["role"] == "user" else m["content"]}, i)
        for m, i in merged
    ]


def _pair_tools(entries: list[Entry]) -> list[Entry]:
    """Give every tool_use a result in the next user message; drop results with no tool_use.

    A missing result (the turn was interrupted, the process was killed) becomes an error result
    so the model learns what happened instead of the API rejecting the request.
    """
    repaired: list[Entry] = []
    pending: list[str] = []
    for message, message_id in entries:
        if message["role"] == "assistant":
            if pending:
                repaired.append(({"role": "user", "content": _error_results(pending)}, REPAIR_ID))
            pending = tool_use_ids(message)
            repaired.append((message, message_id))
            continue
        present = set(tool_result_ids(message))
        kept = [b for b in message["content"] if not _is_result(b) or item(b).tool_use_id in pending]  # type: ignore[union-attr]
        content = _results_first(kept + _error_results([t for t in pending if t not in present]))
        pending = []
        if content:  # a message of only orphan results disappears, with its id
            repaired.append(({"role": "user", "content": content}, message_id))
    if pending:
        repaired.append(({"role": "user", "content": _error_results(pending)}, REPAIR_ID))
    return repaired


def _start_with_user(entries: list[Entry]) -> list[Entry]:
    if entries and entries[0][0]["role"] != "user":
        resumed: Message = {"role": "user", "content": [text_block("(conversation resumed)")]}
        return [(resumed, RESUME_ID), *entries]
    return entries


def repair_history_with_ids(messages: Sequence[Message], ids: Sequence[str]) -> tuple[list[Message], list[str]]:
    """Repair ``messages`` keeping ``ids`` aligned with them (see the module docstring)."""
    if len(messages) != len(ids):
        raise ValueError(f"{len(messages)} messages but {len(ids)} ids")
    entries: list[Entry] = [(copy.deepcopy(m), i) for m, i in zip(messages, ids)]
    # each step's output is valid input for the next; merging twice joins what pairing split
    for step in (_drop_empty, _merge_roles, _pair_tools, _merge_roles, _start_with_user):
        entries = step(entries)
    return [m for m, _ in entries], [i for _, i in entries]


def repair_history(messages: Sequence[Message]) -> list[Message]:
    """:func:`repair_history_with_ids` for a history without ids."""
    return repair_history_with_ids(messages, [""] * len(messages))[0]


__all__ = [
    "INTERRUPTED_REQUEST",
    "INTERRUPTED_TOOL",
    "has_tool_results",
    "is_turn_start",
    "repair_history",
    "repair_history_with_ids",
    "tool_names_by_id",
    "tool_result_ids",
    "tool_use_ids",
]
